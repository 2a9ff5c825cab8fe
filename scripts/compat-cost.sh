#!/usr/bin/env bash
# What the compat classes cost beside their originals, on random input:
# builds benches/compat/{openvino,glow}_cost.cpp against the release
# library and prints BENCHMARKS.md's section "The compat classes beside
# their originals" (Markdown on stdout). Not run by scripts/bench.sh, which
# keeps the section; paste it in its place after a run. About 2 minutes on
# 2 cores. CARGO_TARGET_DIR is honoured (default: target/).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked --lib >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libs=("$target_dir/release/libnnmem.a" -lpthread -ldl -lm)
c++ -O2 -std=c++17 -Iinclude benches/compat/openvino_cost.cpp "${libs[@]}" -o "$work/openvino"
c++ -O2 -std=c++17 -Iinclude -DNNM_COMPAT_OPENVINO_WORK_LIMIT=NNM_DEFAULT_WORK_LIMIT \
    benches/compat/openvino_cost.cpp "${libs[@]}" -o "$work/openvino_longer"
c++ -O2 -std=c++17 -Iinclude benches/compat/glow_cost.cpp "${libs[@]}" -o "$work/glow"

printf '## The compat classes beside their originals\n\n'
printf 'Measured with `scripts/compat-cost.sh` (not by `scripts/bench.sh`, which keeps this section) on %s, load average %s; wall times, the least of 3 runs. Random input as described in `benches/compat/`.\n\n' \
    "$(date -u +%Y-%m-%d)" "$(cut -d' ' -f1 /proc/loadavg)"
printf '### `ov::MemorySolver::solve()` beside OpenVINO'"'"'s greedy\n\n'
"$work/openvino" 3
printf '\nWith `-DNNM_COMPAT_OPENVINO_WORK_LIMIT=NNM_DEFAULT_WORK_LIMIT` (the longer search):\n\n'
"$work/openvino_longer" 3
printf '\n### `glow::MemoryAllocator::allocateAll` beside Glow'"'"'s\n\n'
"$work/glow" 3
printf '\nThe TFLite Micro class runs TFLite Micro'"'"'s own algorithm (`NNM_ALGORITHM_TFLM`) unless told otherwise, so it costs what the original costs.\n\n'
