#!/usr/bin/env bash
# Checks on gpu_check's output where its exit status alone says too little.
#
#   gpu_check_test.sh expect REGEX -- COMMAND...
#       COMMAND exits 0, prints a line matching REGEX (grep -E) and ends
#       with "N passed, 0 failed".
#   gpu_check_test.sh script SCRIPT BINARY MOCK_CUDART_DIR
#       scripts/gpu-check.sh as a GPU machine without Rust runs it (the
#       prebuilt BINARY): here, with no GPU, it prints its header and the
#       program's "no GPU" line and exits 0 (on a machine with a GPU, it
#       passes every check instead); with the stand-in runtime found
#       through NNMEM_CUDA_LIB_DIR (no libcudart in the linker cache), it
#       puts that folder on LD_LIBRARY_PATH and every check runs on it; a
#       binary that is not there is refused.
set -u

fail() {
    echo "gpu_check_test: FAILED: $*"
    exit 1
}

# has REGEX: the output so far has a line matching REGEX.
has() { grep -Eq -- "$1" <<<"$out"; }

case ${1:-} in
    expect)
        regex=$2
        shift 3
        errors=$(mktemp)
        trap 'rm -f "$errors"' EXIT
        out=$("$@" 2>"$errors") # stdout alone: valgrind writes to stderr
        rc=$?
        printf '%s\n' "$out"
        cat "$errors"
        [ "$rc" = 0 ] || fail "$* exited with $rc"
        has "$regex" || fail "no line matches: $regex"
        tail -n 1 <<<"$out" | grep -Eq '^[0-9]+ passed, 0 failed$' || fail "the last line is not \"N passed, 0 failed\""
        ;;
    script)
        script=$2 binary=$3 mock=$4
        out=$(NNMEM_GPU_CHECK_BINARY=$binary bash "$script" 2>&1)
        rc=$?
        printf '%s\n' "$out"
        [ "$rc" = 0 ] || fail "scripts/gpu-check.sh exited with $rc"
        has '^(nvidia-smi -L:|nvidia-smi: not found)$' || fail "no nvidia-smi line"
        has '^libcudart: ' && has '^libcuda: ' || fail "no libcudart or libcuda line"
        has '^== gpu-check: exit status 0$' || fail "no exit status line"
        if has '^gpu-check: no GPU: '; then
            has '^1 passed, 0 failed$' || fail "no GPU, but not \"1 passed, 0 failed\""
            has '^== pools' && fail "checks ran without a GPU"
        else
            has "^gpu-check: checks on .* through nnmem's allocator 'cuda:0'$" \
                || fail "neither \"no GPU\" nor a run on cuda:0"
            has '^[0-9]+ passed, 0 failed$' || fail "a run on the GPU failed"
        fi

        ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
        if "$ldconfig" -p 2>/dev/null | grep -q 'libcudart\.so'; then
            echo "gpu_check_test: the linker cache has a libcudart: the stand-in is not searched for"
        else
            out=$(NNMEM_GPU_CHECK_BINARY=$binary NNMEM_CUDA_LIB_DIR=$mock LD_LIBRARY_PATH= bash "$script" --quick 2>&1)
            rc=$?
            printf '%s\n' "$out"
            [ "$rc" = 0 ] || fail "scripts/gpu-check.sh on the stand-in runtime exited with $rc"
            has "^libcudart: $mock/libcudart\\.so.* \\(not in the linker cache: its folder is put on LD_LIBRARY_PATH\\)$" \
                || fail "the stand-in runtime in $mock was not found"
            has "^gpu-check: checks on libcudart.so through nnmem's allocator 'cuda:0'$" || fail "no run on cuda:0"
            has '^[0-9]+ passed, 0 failed$' || fail "the run on the stand-in runtime failed"
        fi

        out=$(NNMEM_GPU_CHECK_BINARY=/nonexistent/gpu_check bash "$script" 2>&1) && fail "a missing binary was run"
        printf '%s\n' "$out"
        has '^gpu-check: no binary at /nonexistent/gpu_check to run' || fail "a missing binary, but no message"
        ;;
    *)
        fail "usage: gpu_check_test.sh expect REGEX -- COMMAND... | script SCRIPT BINARY MOCK_CUDART_DIR"
        ;;
esac
echo "gpu_check_test: passed"
