#!/usr/bin/env bash
# Every test of nnmem, the way CI runs them (.ci/run calls this script):
#
#   0. scripts/install-deps.sh             apt-get installs what is missing
#                                          (cmake, clang, libclang-dev,
#                                          valgrind, pkg-config, a C/C++
#                                          toolchain); nothing when all are
#                                          there; sudo when not root
#   1. cargo test --release --locked --workspace
#                                          all Rust tests: library, CLI
#                                          (cli/), header (the bindgen layout
#                                          test needs libclang)
#   2. CMake build + ctest                 C/C++ tests against libnnmem.a and
#                                          libnnmem.so, header checks, the
#                                          installed package (find_package,
#                                          add_subdirectory, pkg-config) and
#                                          the valgrind leg
#   3. CMake build with NNMEM_SANITIZE=ON  the C tests under ASan + UBSan
#   4. header check and lean library      include/nnmem.h matches the Rust
#                                          sources (tests/header.rs), and the
#                                          library's graph is nnmem, libc and
#                                          the TOML reader (serde, toml)
#   5. lint gates                          cargo fmt --check (rustfmt.toml) and
#                                          cargo clippy --all-targets with
#                                          -D warnings (src/ffi also denies
#                                          unsafe_op_in_unsafe_fn and
#                                          undocumented unsafe blocks)
#
# Rust is compiled once: both CMake builds point their cargo at the same
# CARGO_TARGET_DIR as step 1 (default: target/). CMake build trees go to
# build/test-all and build/test-all-sanitize (NNMEM_BUILD_ROOT overrides
# build/). JOBS sets the parallelism (default: nproc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
./scripts/install-deps.sh # exits non-zero unless everything, valgrind included, is there
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
build_root=${NNMEM_BUILD_ROOT:-$root/build}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# The header is checked here, never rewritten.
unset NNMEM_UPDATE_HEADER

started=$SECONDS
summary=()
failed=0 # every leg runs even when an earlier one failed; the exit status says
log=$(mktemp)
trap 'rm -f "$log"' EXIT

banner() { printf '\n==> %s\n' "$*"; }

# --- 1. Rust -------------------------------------------------------------------
banner "cargo test --release --locked --workspace"
t=$SECONDS
if cargo test --release --locked --workspace 2>&1 | tee "$log"; then
    rust_passed=$(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$log" | awk '{n += $1} END {print n + 0}')
    summary+=("cargo test: $rust_passed passed ($((SECONDS - t)) s)")
else
    summary+=("cargo test: FAILED")
    failed=1
fi

# --- 2 and 3. CMake + ctest -------------------------------------------------------
# cmake_leg NAME BUILD_DIR [cmake args...]
cmake_leg() {
    local name=$1 dir=$2
    shift 2
    banner "CMake ($name): configure, build, ctest in ${dir#"$root"/}"
    local t=$SECONDS
    if ! cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNMEM_BUILD_TESTS=ON \
        -DNNMEM_CARGO_TARGET_DIR="$CARGO_TARGET_DIR" "$@" \
        || ! cmake --build "$dir" --parallel "$jobs"; then
        summary+=("ctest ($name): FAILED to configure or build")
        failed=1
        return
    fi
    local verdict=""
    ctest --test-dir "$dir" --output-on-failure --parallel "$jobs" 2>&1 | tee "$log" \
        || { verdict="FAILED: "; failed=1; }
    local result
    result=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
    summary+=("ctest ($name): $verdict${result:-no tests ran} ($((SECONDS - t)) s)")
}
cmake_leg default "$build_root/test-all" -DNNMEM_SANITIZE=OFF
cmake_leg "ASan+UBSan" "$build_root/test-all-sanitize" -DNNMEM_SANITIZE=ON

# --- 4. header, lean library ------------------------------------------------------
# tests/header.rs (also run in step 1; here for its own summary line) compares
# a fresh cbindgen header with include/nnmem.h and fails with "Regenerate it
# with: NNMEM_UPDATE_HEADER=1 cargo test --release --test header".
banner "include/nnmem.h up to date"
if cargo test --release --locked --test header; then
    summary+=("include/nnmem.h: up to date")
else
    summary+=("include/nnmem.h: FAILED (out of date, or the test failed to build)")
    failed=1
fi
# What CMake builds (-p nnmem --lib) must need nothing but libc and the
# region configuration file's TOML reader (toml with parsing only, serde
# with its derive: proc-macro2, quote, syn, unicode-ident at build time) at
# build and run time: no binding generator, no CLI or benchmark dependency.
# Exactly these crates, so that a new one is a choice.
banner "library dependencies: nnmem, libc, serde, toml"
lib_deps=$(cargo tree --locked -e normal,build -p nnmem --prefix none --format '{p}' | awk '{print $1}' | sort -u | tr '\n' ' ')
lib_expected="libc nnmem serde_spanned toml toml_datetime toml_parser winnow "
if [ "$lib_deps" = "$lib_expected" ]; then
    summary+=("library dependencies: nnmem, libc, serde, toml")
else
    echo "the library's graph holds: $lib_deps(expected: $lib_expected)"
    summary+=("library dependencies: FAILED ($lib_deps)")
    failed=1
fi

# --- 5. lint gates ---------------------------------------------------------------
banner "cargo fmt --check"
if cargo fmt --all --check; then
    summary+=("cargo fmt --check: clean")
else
    summary+=("cargo fmt --check: FAILED (run cargo fmt --all)")
    failed=1
fi
banner "cargo clippy --all-targets -- -D warnings"
if cargo clippy --release --locked --workspace --all-targets -- -D warnings; then
    summary+=("cargo clippy: clean")
else
    summary+=("cargo clippy: FAILED")
    failed=1
fi

banner "summary"
printf '  %s\n' "${summary[@]}"
if [ $failed -ne 0 ]; then
    echo "test-all: FAILED after $((SECONDS - started)) s"
    exit 1
fi
echo "test-all: ALL PASSED in $((SECONDS - started)) s"
