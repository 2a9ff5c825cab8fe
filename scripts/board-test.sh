#!/usr/bin/env bash
# nnmem on emulated Cortex-M boards (README.md, "The embedded build"):
#
#   1. the embedded build (no std, no heap) for thumbv7em-none-eabihf
#      (Cortex-M4F) and thumbv6m-none-eabi (Cortex-M0+), both with the
#      arena's guard mode and recording, also the M4F one with
#      strip-messages and the M0+ one with messages, both without the arena
#      parts, and the host build's static library;
#   2. what the embedded library's code calls out to: nothing but the mem*
#      functions compilers emit (compiler helpers such as v6-M's division,
#      which the archive carries, are listed);
#   3. c-tests/board/test.sh: the harness's own checks, then the scratch
#      planner's C tests, the TFLite Micro class's C++ test and the plan
#      digest on mps2-an386 (M4F), mps2-an385 and microbit (M0+ code; the
#      microbit's Cortex-M0 is a true v6-M core), under QEMU; the digest
#      must equal the host's, byte for byte;
#   4. no panic or formatting code (core::fmt) in the programs linked.
#
#   scripts/board-test.sh [BUILD_DIR]    (default: build/board)
#
# Needs what scripts/install-deps.sh installs (arm-none-eabi-gcc with
# newlib, qemu-system-arm, the two Rust targets). Uses CARGO_TARGET_DIR
# (default: target/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
out=${1:-$root/build/board}
mkdir -p "$out"
target_dir=${CARGO_TARGET_DIR:-$root/target}

echo "==> the embedded build, for Cortex-M4F and Cortex-M0+"
# With the arena's guard mode and recording, which the arena's tests use.
whole=(--features arena-guard,arena-recording)
for target in thumbv7em-none-eabihf thumbv6m-none-eabi; do
    cargo build --locked -p nnmem --lib --no-default-features "${whole[@]}" --target "$target" --profile embedded
done
lib_m4=$target_dir/thumbv7em-none-eabihf/embedded/libnnmem.a
lib_m0=$target_dir/thumbv6m-none-eabi/embedded/libnnmem.a
# The M4F build with strip-messages and neither arena part, the smallest,
# kept apart (the next build of the other features writes the same path).
cargo build --locked -p nnmem --lib --no-default-features --features strip-messages \
    --target thumbv7em-none-eabihf --profile embedded
cp "$lib_m4" "$out/libnnmem-m4-stripped.a"
cargo build --locked -p nnmem --lib --no-default-features "${whole[@]}" --target thumbv7em-none-eabihf --profile embedded
# The M0+ build as the README's plain line makes it: messages, neither
# arena part.
cargo build --locked -p nnmem --lib --no-default-features --target thumbv6m-none-eabi --profile embedded
cp "$lib_m0" "$out/libnnmem-m0-plain.a"
cargo build --locked -p nnmem --lib --no-default-features "${whole[@]}" --target thumbv6m-none-eabi --profile embedded
cargo build --locked --release -p nnmem --lib

echo "==> what the embedded library calls out to"
status=0
# The symbols an object file needs from outside it (readelf: the archive's
# nnmem object also holds LLVM bitcode, which binutils' nm hands to a plugin).
undefined_in() { arm-none-eabi-readelf -sW "$1" | awk '$7 == "UND" && $8 != "" { print $8 }' | sort -u; }
for lib in "$lib_m4" "$lib_m0"; do
    name=$(basename "$(dirname "$(dirname "$lib")")")
    work=$(mktemp -d)
    (cd "$work" && arm-none-eabi-ar x "$lib")
    # nnmem's own objects, core and compiler_builtins merged in by LTO; the
    # rest of the archive is compiler_builtins' helpers.
    calls=$(for o in "$work"/nnmem*.o; do undefined_in "$o"; done | sort -u)
    # Compiler helpers the archive carries (compiler_builtins: division on
    # v6-M, which has no divide instruction, and the like).
    carried=$(for o in "$work"/*.o; do
        arm-none-eabi-readelf -sW "$o" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" { print $8 }'
    done | sort -u)
    rm -rf "$work"
    mem=$(echo "$calls" | grep -E '^(__aeabi_mem(cpy|move|set|clr)[48]?|mem(cpy|move|set|cmp))$' || true)
    helpers=$(comm -12 <(echo "$calls" | grep -v '^$' | grep -vxF "$mem" || true) <(echo "$carried"))
    beyond=$(echo "$calls" | grep -v '^$' | grep -vxF "${mem:-@}" | grep -vxF "${helpers:-@}" || true)
    if [ -n "$beyond" ]; then
        echo "FAIL: $name calls out to more than the mem* functions: $(echo "$beyond" | tr '\n' ' ')"
        status=1
    else
        echo "ok: $name calls out to: ${mem:-nothing} (compiler helpers it carries: $(echo ${helpers:-none}))"
    fi
done

echo "==> the plan digest on the host"
cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$root/include" c-tests/board/plan_digest.c \
    "$target_dir/release/libnnmem.a" -lpthread -ldl -lm -o "$out/plan_digest-host"
"$out/plan_digest-host" >"$out/plan_digest-host.log"

echo "==> the boards"
NNMEM_LIB_M4=$lib_m4 NNMEM_LIB_M0=$lib_m0 NNMEM_LIB_M4_STRIPPED=$out/libnnmem-m4-stripped.a \
    NNMEM_LIB_M0_PLAIN=$out/libnnmem-m0-plain.a \
    NNMEM_DIGEST_HOST=$out/plan_digest-host.log \
    c-tests/board/test.sh "$out" || status=1

echo "==> no panic machinery in the firmware"
# No path through the C API panics, so none of core's panic or formatting
# code may be linked into a program that uses nnmem.
for elf in "$out"/planner_board-*.elf "$out"/tflm_class_board-*.elf "$out"/plan_digest-*.elf "$out"/arena_init-*.elf \
    "$out"/arena_parts-*.elf; do
    found=$(arm-none-eabi-nm "$elf" | awk '{ print $NF }' | grep -E 'core3fmt|core\.\.fmt|panic_fmt|panic_bounds_check|slice_index_fail|panic_const' || true)
    if [ -n "$found" ]; then
        echo "FAIL: $(basename "$elf") links: $(echo "$found" | head -n 3 | tr '\n' ' ')"
        status=1
    else
        echo "ok: $(basename "$elf"): no panic or formatting code"
    fi
done
exit $status
