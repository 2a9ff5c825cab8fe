#!/usr/bin/env bash
# nnmem as ggml's graph allocator, checked against ggml itself.
#
#   scripts/ggml-check.sh <nnmem CMake build dir> [work dir]
#
# Installs nnmem from the build dir into <work>/prefix, fetches the
# llama-cpp-python source distribution from PyPI (it vendors llama.cpp with
# ggml and ggml's tests; checked against its sha256, kept in <work>), builds
# ggml with nnmem's ggml-alloc.c (c-tests/ggml/CMakeLists.txt:
# find_package(nnmem) and nnmem_ggml_alloc(ggml-base)), then runs ggml's own
# test-alloc and c-tests/ggml/llama_graphs (outputs bitwise identical to
# ggml's allocator, buffers at most ggml's, no overlaps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/ggml-check.sh <nnmem build dir> [work dir]}" && pwd)
work=${2:-$build/ggml-check}
mkdir -p "$work"
work=$(cd "$work" && pwd)

version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
sdist="$work/llama_cpp_python-$version.tar.gz"
if ! echo "$sha256  $sdist" | sha256sum --check --status 2>/dev/null; then
  echo "==> fetching llama-cpp-python $version (sdist) from PyPI"
  python3 - "$version" "$sdist.part" <<'PY'
import re, sys, urllib.request
version, out = sys.argv[1], sys.argv[2]
index = urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/", timeout=120).read().decode()
urls = [u for u in re.findall(r'href="([^"#]+)', index) if u.endswith(f"llama_cpp_python-{version}.tar.gz")]
if not urls:
    sys.exit(f"llama-cpp-python {version}: no source distribution on PyPI's index")
with urllib.request.urlopen(urls[0], timeout=600) as r, open(out, "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PY
  mv "$sdist.part" "$sdist"
  echo "$sha256  $sdist" | sha256sum --check --quiet
fi
src="$work/src"
top="llama_cpp_python-$version/vendor/llama.cpp"
if [ ! -f "$src/$top/tests/test-alloc.cpp" ]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$sdist" -C "$src" "$top/ggml" "$top/tests/test-alloc.cpp"
fi

echo "==> installing nnmem into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"

echo "==> building ggml with nnmem's ggml-alloc.c"
cmake -S "$root/c-tests/ggml" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DLLAMA_CPP_DIR="$src/$top" > "$work/configure.log"
cmake --build "$work/build" -j "$(nproc)" > "$work/build.log"

echo "==> ggml's own test-alloc"
"$work/build/test-alloc"
echo "==> llama-style graphs against ggml's allocator"
"$work/build/llama_graphs" 5
