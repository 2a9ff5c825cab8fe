#!/usr/bin/env bash
# llama.cpp with nnmem's allocator against llama.cpp with ggml's own, on a
# small Llama model with random weights. Not part of ./scripts/test-all.sh:
# building llama.cpp takes about 10 CPU-minutes.
#
#   scripts/llama-cpp-check.sh <nnmem CMake build dir> [work dir]
#
# Fetches the llama-cpp-python source distribution (as scripts/ggml-check.sh
# does), builds llama.cpp once (static, CPU), and links one driver
# (c-tests/ggml/llama_run.cpp) twice: against ggml's libraries as built,
# and with nnmem's ggml-alloc.c linked ahead of them (the linker then never
# takes ggml's ggml-alloc.o from libggml-base.a). Writes a random-weight
# model with PyPI's gguf (scripts/random-llama-gguf.py, in a venv), runs
# both on the same token ids with and without flash attention, and checks
# that the tokens and the logits (bitwise) are the same. Prints llama.cpp's
# own "compute buffer size" lines side by side.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/llama-cpp-check.sh <nnmem build dir> [work dir]}" && pwd)
work=${2:-$build/llama-cpp-check}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

src=$("$root/scripts/fetch-llama-cpp.sh" "$work" full)

echo "==> installing nnmem into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
prefix="$work/prefix"
libdir=$(dirname "$(find "$prefix" -name libnnmem.a | head -n 1)")

echo "==> building llama.cpp (static, CPU)"
cmake -S "$src" -B "$work/llama" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
  -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > "$work/configure.log"
cmake --build "$work/llama" --target llama -j "$jobs" > "$work/build.log"
libs=()
for name in libllama.a libggml.a libggml-cpu.a libggml-base.a; do
  libs+=("$(find "$work/llama" -name "$name" | head -n 1)")
done

echo "==> linking the driver twice"
c++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" -c "$root/c-tests/ggml/llama_run.cpp" -o "$work/llama_run.o"
cc -O2 -std=c11 -DNDEBUG -I"$src/ggml/include" -I"$src/ggml/src" -I"$prefix/include" \
  -c "$prefix/include/nnmem/compat/ggml/ggml-alloc.c" -o "$work/nnmem-ggml-alloc.o"
c++ -o "$work/llama_run_ggml" "$work/llama_run.o" "${libs[@]}" -lpthread -ldl -lm
c++ -o "$work/llama_run_nnmem" "$work/llama_run.o" "$work/nnmem-ggml-alloc.o" "${libs[@]}" \
  "$libdir/libnnmem.a" -lpthread -ldl -lm
# (grep without -q reads all of nm's output: no SIGPIPE under pipefail.)
if ! nm "$work/llama_run_nnmem" | grep ' nnm_planner_plan$' > /dev/null; then
  echo "llama_run_nnmem does not hold nnmem's planner" >&2; exit 1
fi

echo "==> a random-weight Llama model (PyPI gguf)"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet gguf numpy
fi
model="$work/random-llama.gguf"
"$work/venv/bin/python" "$root/scripts/random-llama-gguf.py" "$model"

status=0
table="$work/table.md"
{
  printf '### Inside llama.cpp (`scripts/llama-cpp-check.sh`)\n\n'
  printf 'llama.cpp from the same sdist, static, CPU; one driver (`c-tests/ggml/llama_run.cpp`) linked against ggml'"'"'s allocator and against nnmem'"'"'s, on a random-weight Llama model (`scripts/random-llama-gguf.py`: 512 wide, 4 layers, 8 heads, 4 KV heads, FFN 1376, vocabulary 4096, context 2048, F16). The buffer sizes are llama.cpp'"'"'s own "CPU compute buffer size" lines.\n\n'
  printf '| run | compute buffer, ggml | compute buffer, nnmem | tokens and logits |\n|---|---:|---:|---|\n'
} > "$table"
for flash in 0 1; do
  for shape in "512 16" "32 16"; do
    set -- $shape
    label="prompt $1, $2 tokens generated, flash attention $([ "$flash" = 1 ] && echo on || echo off)"
    "$work/llama_run_ggml" "$model" "$1" "$2" "$flash" > "$work/out-ggml.txt" 2> "$work/log-ggml.txt"
    "$work/llama_run_nnmem" "$model" "$1" "$2" "$flash" > "$work/out-nnmem.txt" 2> "$work/log-nnmem.txt"
    g=$(grep -m1 'compute buffer size' "$work/log-ggml.txt" | sed 's/.*= *//')
    n=$(grep -m1 'compute buffer size' "$work/log-nnmem.txt" | sed 's/.*= *//')
    if cmp -s "$work/out-ggml.txt" "$work/out-nnmem.txt"; then same="same tokens and logits"; else
      same="DIFFERENT tokens or logits"; status=1
      diff "$work/out-ggml.txt" "$work/out-nnmem.txt" | head -n 10 >&2
    fi
    printf '%-52s CPU compute buffer: ggml %12s  nnmem %12s  %s\n' "$label" "$g" "$n" "$same"
    printf '| %s | %s | %s | %s |\n' "$label" "$g" "$n" "$same" >> "$table"
  done
done
exit $status
