#!/usr/bin/env bash
# ggml's graph allocator beside nnmem's: writes BENCHMARKS.md's section
# "ggml's graph allocator".
#
#   scripts/ggml-bench.sh <nnmem CMake build dir> [llama.cpp check work dir]
#
# Builds ggml with nnmem's allocator and the benchmark library
# (scripts/ggml-check.sh, which also runs the checks), runs the criterion
# benchmark benches/ggml.rs on it (reserve and alloc_graph, both
# allocators, every real-dimension graph of c-tests/ggml/llama_graphs.c),
# and writes the medians and the buffer sizes. With the work dir of a
# scripts/llama-cpp-check.sh run, its table (llama.cpp's own compute buffer
# lines, tokens and logits compared) goes in too. Nothing else should run
# meanwhile: the numbers are wall times. About 3 minutes on 2 cores, plus
# the build the first time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/ggml-bench.sh <nnmem build dir> [llama.cpp check work dir]}
llama_work=${2:-}
work="$build/ggml-check"
"$root/scripts/ggml-check.sh" "$build" "$work" > "$work.log" 2>&1 || { tail -n 30 "$work.log" >&2; exit 1; }
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
since=$(date +%s)
NNMEM_GGML_BENCH="$work/build/libnnmem_ggml_bench.so" cargo bench --locked --bench ggml
"$work/build/llama_graphs" 1 > "$work/sizes.txt" 2>/dev/null
section=$(mktemp)
python3 - "$target_dir/criterion" "$since" "$work/sizes.txt" "${llama_work:+$llama_work/table.md}" > "$section" <<'PY'
import json, os, re, sys
crit, since, sizes_path, llama_table = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sizes = {}
for line in open(sizes_path):
    m = re.match(r"real\s+(.*?)\s+(\d+) nodes\s+ggml\s+(\d+) B\s+nnmem\s+(\d+) B", line)
    if m:
        sizes[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
def median_us(group, function):
    path = os.path.join(crit, "ggml_" + group, function, "new", "estimates.json")
    if not os.path.exists(path) or os.path.getmtime(path) < since:
        return None
    return json.load(open(path))["median"]["point_estimate"] / 1000.0
print("## ggml's graph allocator\n")
print("Written by `scripts/ggml-bench.sh` (not by `scripts/bench.sh`): ggml 0.25.3 from the llama-cpp-python 0.3.36 "
      "sdist, ggml's own `ggml-alloc.c` beside nnmem's (`include/nnmem/compat/ggml/ggml-alloc.c`), on the "
      "Llama-style graphs of `c-tests/ggml/llama_graphs.c` at real dimensions (weights and KV cache outside the "
      "compute buffer, as llama.cpp keeps them; CPU buffer type, 32-byte alignment). Criterion medians of "
      "`benches/ggml.rs`: `ggml_gallocr_reserve_n_size` planning the graph again, and "
      "`ggml_gallocr_alloc_graph` placing a reserved graph's tensors.\n")
print("| graph | nodes | buffer, ggml | buffer, nnmem | reserve ggml µs | reserve nnmem µs | ratio | alloc_graph ggml µs | alloc_graph nnmem µs | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, (nodes, g, n) in sizes.items():
    r = [median_us(name, f) for f in ("reserve_ggml", "reserve_nnmem", "alloc_graph_ggml", "alloc_graph_nnmem")]
    fmt = lambda v: "n/a" if v is None else f"{v:.1f}"
    ratio = lambda a, b: "n/a" if a is None or b is None else f"{b / a:.2f}x"
    print(f"| {name} | {nodes} | {g:,} | {n:,} | {fmt(r[0])} | {fmt(r[1])} | {ratio(r[0], r[1])} | "
          f"{fmt(r[2])} | {fmt(r[3])} | {ratio(r[2], r[3])} |")
print()
if llama_table and os.path.exists(llama_table):
    print(open(llama_table).read().rstrip() + "\n")
PY
out="$root/BENCHMARKS.md"
tmp=$(mktemp "$out.XXXXXX")
# Replace the section (or add it before the embedded build's, the last).
python3 - "$out" "$section" > "$tmp" <<'PY'
import sys
text, section = open(sys.argv[1]).read(), open(sys.argv[2]).read()
head = "## ggml's graph allocator\n"
if head in text:
    start = text.index(head)
    end = text.find("\n## ", start + len(head))
    text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
else:
    anchor = "## The embedded build on Cortex-M boards"
    at = text.index(anchor)
    text = text[:at] + section + text[at:]
sys.stdout.write(text)
PY
chmod 0644 "$tmp"
mv "$tmp" "$out"
rm -f "$section"
echo "ggml-bench: BENCHMARKS.md, section \"ggml's graph allocator\""
