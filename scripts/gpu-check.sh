#!/usr/bin/env bash
# nnmem on a real GPU, in one command: builds nnmem and c-tests/gpu_check.c,
# then runs the check on CUDA device 0 (every pool strategy with a pattern
# written and read back with cudaMemcpy for every block, the stream-ordered
# path, the registry, a compiled workbuffer model, PyTorch's pluggable pair
# (nnm_torch_alloc/nnm_torch_free), and the timings table for
# BENCHMARKS.md). On a machine without a GPU the program says so and exits 0.
#
#   scripts/gpu-check.sh                build (when cargo is here), then run
#   scripts/gpu-check.sh --build-only   only build build/gpu-check/gpu_check
#                                       (no GPU needed): carry that folder
#                                       to a GPU machine without Rust
#   scripts/gpu-check.sh --host --quick other arguments go to the program
#                                       (--host: the same checks on host
#                                       memory; --quick: short loops;
#                                       --driver: the CUDA driver API even
#                                       where the runtime is installed)
#
# Without cargo (a GPU machine with no Rust toolchain), or with
# NNMEM_GPU_CHECK_PREBUILT=1, it runs the binary already in build/gpu-check/.
# NNMEM_GPU_CHECK_BINARY=path runs that binary instead (the ctest does).
# The binary is linked statically against libnnmem.a: it needs only glibc
# (libc, libpthread, libdl, libm, librt; BUILD_INFO says which version) and
# loads the CUDA runtime itself (libcudart.so, .so.12, .so.11.0, or else the
# driver, libcuda.so.1). Where this glibc is older than the build machine's,
# and a C compiler is there, the binary is linked again from the copy of
# libnnmem.a (without debug info) the build leaves beside it (also on
# NNMEM_GPU_CHECK_RELINK=1). When
# the linker cache has no libcudart, the usual CUDA and pip (nvidia-*)
# folders are searched (NNMEM_CUDA_LIB_DIR first) and the one found is put
# on LD_LIBRARY_PATH. The exit status is the program's.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
outdir=$root/build/gpu-check
binary=${NNMEM_GPU_CHECK_BINARY:-$outdir/gpu_check}
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

# The shared libraries the binary may need: glibc's (and the loader's).
allowed_libs='^(linux-vdso\.so\.1|linux-gate\.so\.1|/?.*ld-linux.*\.so\.[0-9]+|libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6|librt\.so\.1)$'

# link_binary ARCHIVE OUT: c-tests/gpu_check.c against libnnmem.a, with
# CMakeLists.txt's NNMEM_STATIC_DEPS after it and libgcc (Rust's unwinder)
# linked in, so that nothing but glibc is needed.
link_binary() {
    "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I "$root/include" -I "$root/c-tests" \
        "$root/c-tests/gpu_check.c" "$1" \
        -static-libgcc -Wl,--as-needed -lpthread -ldl -lm -lrt -lutil -o "$2.new"
    strip "$2.new" 2>/dev/null || echo "gpu-check: strip failed or missing: the binary keeps its symbols"
    mv -f "$2.new" "$2"
}

build() {
    if ! command -v cargo >/dev/null; then
        echo "gpu-check: cargo not found: build with --build-only on a machine with Rust, and carry build/gpu-check/ here" >&2
        exit 1
    fi
    local target=${CARGO_TARGET_DIR:-$root/target}
    echo "gpu-check: cargo build --release --locked -p nnmem --lib"
    cargo build --release --locked -p nnmem --lib
    mkdir -p "$outdir"
    strip --strip-debug -o "$outdir/libnnmem.a" "$target/release/libnnmem.a" \
        || cp "$target/release/libnnmem.a" "$outdir/libnnmem.a"
    link_binary "$outdir/libnnmem.a" "$outdir/gpu_check"

    local deps extra glibc
    deps=$(ldd "$outdir/gpu_check" | awk '{print $1}')
    extra=$(grep -Ev "$allowed_libs" <<<"$deps" || true)
    if [ -n "$extra" ]; then
        echo "gpu-check: FAILED: $outdir/gpu_check needs more than glibc: $(tr '\n' ' ' <<<"$extra")" >&2
        exit 1
    fi
    glibc=$(objdump -T "$outdir/gpu_check" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1 || true)
    {
        echo "nnmem $(git -C "$root" describe --always --dirty 2>/dev/null || echo '(no git)'), built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
        echo "needs: $(tr '\n' ' ' <<<"$deps")(newest symbol version: ${glibc:-unknown}); no CUDA at build time"
    } >"$outdir/BUILD_INFO"
    echo "gpu-check: built $outdir/gpu_check ($(du -h "$outdir/gpu_check" | cut -f1)):"
    sed 's/^/  /' "$outdir/BUILD_INFO"
}

# The first file matching libNAME.so* in the linker cache or LD_LIBRARY_PATH.
find_lib() {
    local name=$1 ldconfig dir f
    ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
    f=$("$ldconfig" -p 2>/dev/null | awk -v n="$name" '$1 ~ "^"n"\\.so" {print $NF; exit}' || true)
    if [ -n "$f" ]; then
        echo "$f"
        return
    fi
    local IFS=:
    for dir in ${LD_LIBRARY_PATH:-}; do
        for f in "$dir/$name".so*; do
            [ -e "$f" ] && { echo "$f"; return 0; }
        done
    done
    return 0
}

# libcudart outside the linker cache: CUDA toolkits, conda, and pip's
# nvidia-cuda-runtime wheels (libcudart.so.12 only).
search_cudart() {
    local dirs=() d f
    [ -n "${NNMEM_CUDA_LIB_DIR:-}" ] && dirs+=("$NNMEM_CUDA_LIB_DIR")
    dirs+=(/usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/local/cuda*/targets/*/lib /opt/conda/lib)
    if command -v python3 >/dev/null; then
        while IFS= read -r d; do
            dirs+=("$d/nvidia/cuda_runtime/lib")
        done < <(python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true)
    fi
    dirs+=(/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib /usr/lib/python3/dist-packages/nvidia/cuda_runtime/lib)
    for d in "${dirs[@]}"; do
        for f in "$d"/libcudart.so*; do
            [ -e "$f" ] && { echo "$f"; return 0; }
        done
    done
    return 0
}

run() {
    echo "== gpu-check on $(uname -n) ($(uname -m)), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    [ -f "$(dirname "$binary")/BUILD_INFO" ] && sed 's/^/binary: /' "$(dirname "$binary")/BUILD_INFO"
    if command -v nvidia-smi >/dev/null; then
        echo "nvidia-smi -L:"
        nvidia-smi -L 2>&1 | sed 's/^/  /' || true
        nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader 2>&1 \
            | sed 's/^/  /' || true
    else
        echo "nvidia-smi: not found"
    fi
    local cudart cuda
    cudart=$(find_lib libcudart)
    if [ -z "$cudart" ]; then
        cudart=$(search_cudart)
        if [ -n "$cudart" ]; then
            export LD_LIBRARY_PATH="$(dirname "$cudart")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            cudart="$cudart (not in the linker cache: its folder is put on LD_LIBRARY_PATH)"
        fi
    fi
    cuda=$(find_lib libcuda)
    echo "libcudart: ${cudart:-not found}"
    echo "libcuda: ${cuda:-not found}"
    echo "== $binary $*"
    local rc=0
    "$binary" "$@" 2>&1 || rc=$?
    echo "== gpu-check: exit status $rc"
    exit "$rc"
}

build_only=0
args=()
for a in "$@"; do
    case $a in
        --build-only) build_only=1 ;;
        *) args+=("$a") ;;
    esac
done
if [ "$build_only" = 1 ]; then
    build
    exit 0
fi
if [ -n "${NNMEM_GPU_CHECK_BINARY:-}" ] || [ "${NNMEM_GPU_CHECK_PREBUILT:-0}" = 1 ] || ! command -v cargo >/dev/null; then
    if [ ! -x "$binary" ]; then
        echo "gpu-check: no binary at $binary to run, and nothing to build with (no cargo, or a prebuilt binary asked for): run scripts/gpu-check.sh --build-only on a machine with Rust and carry build/gpu-check/ here" >&2
        exit 1
    fi
    missing=""
    if command -v ldd >/dev/null; then
        missing=$(ldd "$binary" 2>&1 | grep 'not found' || true)
    fi
    if [ -z "${NNMEM_GPU_CHECK_BINARY:-}" ] && { [ -n "$missing" ] || [ "${NNMEM_GPU_CHECK_RELINK:-0}" = 1 ]; }; then
        echo "gpu-check: linking $binary again here${missing:+ (the prebuilt one cannot run: $missing)}"
        [ -f "$outdir/libnnmem.a" ] || { echo "gpu-check: no $outdir/libnnmem.a to link with" >&2; exit 1; }
        link_binary "$outdir/libnnmem.a" "$binary"
    fi
    echo "gpu-check: running the prebuilt $binary"
else
    build
fi
run ${args[@]+"${args[@]}"}
