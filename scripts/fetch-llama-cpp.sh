#!/usr/bin/env bash
# Fetches the llama-cpp-python source distribution from PyPI's index (it
# vendors llama.cpp with ggml, ggml's tests and gguf-py), checks its sha256,
# keeps it in <work>, extracts what is asked, and prints the path of the
# extracted llama.cpp tree.
#
#   scripts/fetch-llama-cpp.sh <work dir> [ggml|full]
#     ggml: ggml/ and tests/test-alloc.cpp (scripts/ggml-check.sh)
#     full: all of llama.cpp (scripts/llama-cpp-check.sh)
set -euo pipefail
work=${1:?usage: scripts/fetch-llama-cpp.sh <work dir> [ggml|full]}
what=${2:-ggml}
version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
sdist="$work/llama_cpp_python-$version.tar.gz"
mkdir -p "$work"
if ! echo "$sha256  $sdist" | sha256sum --check --status 2>/dev/null; then
  echo "==> fetching llama-cpp-python $version (sdist) from PyPI" >&2
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
  echo "$sha256  $sdist" | sha256sum --check --quiet >&2
fi
top="llama_cpp_python-$version/vendor/llama.cpp"
src="$work/src-$what"
case "$what" in
  ggml) members=("$top/ggml" "$top/tests/test-alloc.cpp"); marker="$src/$top/tests/test-alloc.cpp" ;;
  full) members=("$top"); marker="$src/$top/src/llama.cpp" ;;
  *) echo "fetch-llama-cpp.sh: unknown part '$what' (ggml or full)" >&2; exit 2 ;;
esac
if [ ! -f "$marker" ]; then
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf "$sdist" -C "$src" "${members[@]}"
fi
echo "$src/$top"
