#!/usr/bin/env bash
# nnmem as ggml's graph allocator, checked against ggml itself.
#
#   scripts/ggml-check.sh <nnmem CMake build dir> [work dir]
#
# Installs nnmem from the build dir into <work>/prefix, fetches the
# llama-cpp-python source distribution from PyPI (scripts/fetch-llama-cpp.sh:
# it vendors llama.cpp with ggml and ggml's tests; checked against its
# sha256, kept in <work>), builds
# ggml with nnmem's ggml-alloc.c (c-tests/ggml/CMakeLists.txt:
# find_package(nnmem) and nnmem_ggml_alloc(ggml-base)), then runs ggml's own
# test-alloc, c-tests/ggml/llama_graphs (outputs bitwise identical to
# ggml's allocator, buffers at most ggml's, no overlaps) and
# examples/ggml_shared_buffer and c-tests/ggml/alloc_edges, all but the
# graphs also under valgrind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/ggml-check.sh <nnmem build dir> [work dir]}" && pwd)
work=${2:-$build/ggml-check}
mkdir -p "$work"
work=$(cd "$work" && pwd)

src=$("$root/scripts/fetch-llama-cpp.sh" "$work" ggml)

echo "==> installing nnmem into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"

echo "==> building ggml with nnmem's ggml-alloc.c"
cmake -S "$root/c-tests/ggml" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DLLAMA_CPP_DIR="$src" > "$work/configure.log"
cmake --build "$work/build" -j "$(nproc)" > "$work/build.log"

echo "==> ggml's own test-alloc"
"$work/build/test-alloc"
echo "==> llama-style graphs against ggml's allocator"
"$work/build/llama_graphs" 5
echo "==> examples/ggml_shared_buffer"
"$work/build/ggml_shared_buffer"
echo "==> c-tests/ggml/alloc_edges"
"$work/build/alloc_edges"
# Nothing lost and no bad access through nnmem's allocator (test-all installs
# valgrind; the real-dimension graphs are left out: slow under it).
echo "==> test-alloc, examples/ggml_shared_buffer and alloc_edges under valgrind"
for program in test-alloc ggml_shared_buffer alloc_edges; do
  valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9 -q \
    "$work/build/$program" > "$work/valgrind-$program.log" 2>&1 ||
    { cat "$work/valgrind-$program.log" >&2; echo "valgrind: $program failed" >&2; exit 1; }
done
echo "ggml-check: valgrind clean"
