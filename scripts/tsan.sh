#!/usr/bin/env bash
# The memory pools' Rust unit tests (src/pool, with the registry's stress
# test: 4 threads allocating while another switches the device's pool; and
# the C-ABI pool tests in src/ffi/pool) under ThreadSanitizer, which reports
# data races: two threads touching the same memory, one writing, with no
# lock or atomic ordering between them. Run it locally; it is not part of
# scripts/test-all.sh, because it needs a nightly toolchain that a fresh CI
# machine does not have.
#
#   rustup toolchain install nightly
#   rustup +nightly component add rust-src
#   scripts/tsan.sh              the tests whose names contain pool::
#   scripts/tsan.sh FILTER...    only tests whose names contain a FILTER
#                                (e.g. pool::registry_tests)
#
# -Zsanitizer=thread instruments the code rustc compiles; -Zbuild-std
# (which needs the rust-src component) compiles the standard library too,
# instrumented. Without it TSan would not see std's Mutex, Arc and thread
# joins synchronise, and would report races on memory they guard (false
# positives); rustc also refuses to link sanitized crates against an
# uninstrumented std. So the script refuses to run without rust-src.
#
# A race report names both accesses with their stacks; the run ends with
# "ThreadSanitizer: reported N warnings" and exit status 66. TSAN_OPTIONS
# defaults to allocator_may_return_null=1: tests that ask for impossible
# sizes to provoke OUT_OF_MEMORY expect NULL from malloc, where TSan's
# allocator would stop the run instead; a TSAN_OPTIONS set by the caller
# is added after it (e.g. TSAN_OPTIONS=halt_on_error=1 stops at the first).
#
# TSan builds into $CARGO_TARGET_DIR/tsan (default target/tsan), apart from
# the normal builds; the first build compiles std and takes a few minutes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "tsan.sh: no nightly toolchain; install it with" >&2
    echo "  rustup toolchain install nightly && rustup +nightly component add rust-src" >&2
    exit 2
fi
sysroot=$(rustc +nightly --print sysroot)
if [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
    echo "tsan.sh: the nightly toolchain has no rust-src (needed to build std with TSan); install it with" >&2
    echo "  rustup +nightly component add rust-src" >&2
    exit 2
fi
host=$(rustc +nightly -vV | sed -n 's/^host: //p')

export RUSTFLAGS="${RUSTFLAGS:-} -Zsanitizer=thread"
export RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -Zsanitizer=thread"
export TSAN_OPTIONS="allocator_may_return_null=1 ${TSAN_OPTIONS:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/tsan"
[ $# -gt 0 ] || set -- pool::

# --target: with -Zbuild-std, cargo builds std for an explicit target only
# (and keeps build scripts and proc macros, which run on the host,
# uninstrumented).
exec cargo +nightly test -Zbuild-std --target "$host" --release --locked -p nnmem --lib -- "$@"
