#!/usr/bin/env bash
# Regenerates BENCHMARKS.md: the one command for every number in it.
#
#   1. cargo build --release            library, CLI, benches, bench_table
#   2. cargo bench --bench ffi          cost of a C-ABI call (criterion)
#      cargo bench --bench arena        arena allocations via the C ABI
#      cargo bench --bench plan         plan time per instance (criterion)
#      cargo bench --bench pool         memory pools via the C ABI, beside
#                                       glibc malloc, mimalloc and jemalloc
#                                       (libjemalloc2, installed if
#                                       missing); threads; the random stream
#      cargo bench --bench region       region table building, 1k to 100k
#                                       tensors under 20 rules
#      cargo bench --bench workbuffer   a 10,000-operator network described
#                                       and built (planner apart)
#   3. bench_table                      every instance in benches/data x every
#                                       algorithm (peak / lower bound, ms), the
#                                       real traces through every pool strategy
#                                       (nnmem pool-replay), the region tables
#                                       (synthetic 100k tensors; the Glow
#                                       models beside Glow's own figures), the
#                                       workbuffer network and OpenVINO's
#                                       solver beside the mutable block, the
#                                       targets, and the criterion medians
#                                       from step 2
#                                       -> BENCHMARKS.md
#   4. objcopy --strip-unneeded         the installed libnnmem.so's size
#                                       -> BENCHMARKS.md, "Library size"
#   5. scripts/board-bench.sh           the embedded build's flash and
#                                       instruction counts on emulated
#                                       Cortex-M boards -> BENCHMARKS.md,
#                                       "The embedded build on Cortex-M
#                                       boards" (the last section)
#
# About 9 minutes on 2 cores. Nothing else should run meanwhile: the numbers
# are wall times. Extra arguments go to every `cargo bench` run (criterion's,
# e.g. `-- --quick`). CARGO_TARGET_DIR is honoured (default: target/).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
out=BENCHMARKS.md
started=$SECONDS
# Criterion results older than this run are not reported.
since=$(date +%s)

banner() { printf '\n==> %s\n' "$*" >&2; }

banner "cargo build --release (library, CLI, benches, bench_table)"
cargo build --release --locked --lib --bins --example bench_table
cargo bench --locked --bench ffi --bench arena --bench plan --bench pool --bench region --bench workbuffer --no-run

banner "cargo bench --bench ffi"
cargo bench --locked --bench ffi "$@"

banner "cargo bench --bench arena"
cargo bench --locked --bench arena "$@"

banner "cargo bench --bench plan"
cargo bench --locked --bench plan "$@"

banner "cargo bench --bench pool"
# jemalloc, beside glibc malloc and mimalloc: the system library, loaded by
# the benchmark at run time (the tests never need it). It uses initial-exec
# TLS, so glibc must keep static TLS room for a library loaded late.
if ! ldconfig -p 2>/dev/null | grep -q 'libjemalloc\.so\.2'; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y libjemalloc2 || echo "bench.sh: libjemalloc2 not installed: jemalloc is left out" >&2
fi
GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 cargo bench --locked --bench pool "$@"

banner "cargo bench --bench region"
cargo bench --locked --bench region "$@"

banner "cargo bench --bench workbuffer"
cargo bench --locked --bench workbuffer "$@"

banner "bench_table: every instance x every algorithm -> $out"
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$target_dir/release/examples/bench_table" --criterion "$target_dir/criterion" --since "$since" >"$tmp"
# The installed libnnmem.so is the cargo-built one less its debug info and
# symbol table (CMakeLists.txt: objcopy --strip-unneeded); the nnmem_install
# test checks it against its budget.
so_copy=$(mktemp)
objcopy --strip-unneeded "$target_dir/release/libnnmem.so" "$so_copy"
{
    printf '## Library size\n\n'
    printf 'The installed `libnnmem.so` (`cargo build --release -p nnmem --lib`, then `objcopy --strip-unneeded` as the CMake install does): **%s B**. Its largest sections:\n\n' "$(stat -c %s "$so_copy")"
    printf '| section | bytes |\n|---|---:|\n'
    size -A "$so_copy" | awk '$1 ~ /^\./ && $1 !~ /bss$/ && $2 > 0 { print $2, $1 }' | sort -rn | head -6 | awk '{ printf "| `%s` | %s |\n", $2, $1 }'
    printf '\n'
} >>"$tmp"
rm -f "$so_copy"
# "Downstream build" is measured by scripts/downstream-build.sh (against an
# older checkout too), "The compat classes beside their originals" by
# scripts/compat-cost.sh and "ggml's graph allocator" by
# scripts/ggml-bench.sh, not here: keep them, without the section after
# them, which step 5 writes anew.
sed -n '/^## Downstream build/,$p' "$out" | sed '/^## The embedded build on Cortex-M boards/,$d' >>"$tmp"
chmod 0644 "$tmp"
mv "$tmp" "$out"
trap - EXIT

banner "scripts/board-bench.sh: the embedded build on emulated boards -> $out"
scripts/board-bench.sh

banner "done in $((SECONDS - started)) s: $out"
sed -n '/^## Targets/,/^## How to read/p' "$out" | sed '$d' >&2
