#!/usr/bin/env bash
# Flash and planning time of the embedded build on the emulated boards:
# writes the section "The embedded build on Cortex-M boards" at the end of
# BENCHMARKS.md (replacing it), beside TensorFlow Lite Micro's
# GreedyMemoryPlanner measured the same way (benches/board/tflm-greedy*.txt,
# from c-tests/board/measure-tflm-greedy.sh on a TFLite Micro checkout: its
# source cannot be part of this repository).
#
#   scripts/board-bench.sh [BUILD_DIR]     (default: build/board-bench)
#
# For Cortex-M4F (thumbv7em-none-eabihf, mps2-an386) and Cortex-M0+
# (thumbv6m-none-eabi, mps2-an385), with and without the strip-messages
# feature (profile embedded: opt-level s, fat LTO, one codegen unit, panic
# abort; C side -Os, --gc-sections):
#   - code a C program takes from libnnmem.a to plan with tflm
#     (c-tests/board/size_tflm.c: init, add, plan, offsets), the arena's
#     calls (size_arena.c: nnm_arena_init and every call on it; also in guard
#     mode and recording, with the features that hold them), and the TFLite
#     Micro class with the library under it (size_class.cpp), counted by
#     c-tests/board/code_size.py from the link map;
#   - instructions to plan TFLite Micro's person_detect tensors and 100
#     random buffers (plan_count.cpp, under QEMU with -icount shift=0).
# Instruction counts are deterministic; nothing here depends on the host's
# speed. Needs what scripts/install-deps.sh installs. About a minute.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
out=${1:-$root/build/board-bench}
mkdir -p "$out"
target_dir=${CARGO_TARGET_DIR:-$root/target}
board=c-tests/board
M4="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
M0="-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft"
CFLAGS="-std=c99 -pedantic -Wall -Wextra -Werror -Os -ffunction-sections -fdata-sections -Iinclude -I$board"
CXXFLAGS="-std=c++11 -Wall -Wextra -Werror -Os -fno-exceptions -fno-rtti -ffunction-sections -fdata-sections \
-DNNMEM_NO_HEAP -Iinclude -Ic-tests/compat/tflm -I$board"
LDFLAGS="--specs=nano.specs --specs=rdimon.specs -nostartfiles -Wl,--gc-sections -T $board/mps2.ld"

# lib TARGET VARIANT [PARTS] -> path of a copy of that build's libnnmem.a;
# PARTS "whole": with the arena's guard mode and recording
lib() {
    local features=() name="$1-$2${3:+-$3}"
    [ "$2" = stripped ] && features=(strip-messages)
    [ "${3:-}" = whole ] && features+=(arena-guard arena-recording)
    cargo build --locked -q -p nnmem --lib --no-default-features --features "${features[*]}" --target "$1" \
        --profile embedded 2>&1 | { grep -v 'dropping unsupported crate type\|generated 1 warning' >&2 || true; }
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "board-bench: the embedded build for $1 failed" >&2; exit 1; }
    cp "$target_dir/$1/embedded/libnnmem.a" "$out/libnnmem-$name.a"
    echo "$out/libnnmem-$name.a"
}

# link NAME FLAGS LIB SOURCE -> ELF with a map, linked against LIB
link() {
    local name=$1 flags=$2 library=$3 src=$4 compiler
    case $src in *.cpp) compiler="arm-none-eabi-g++ $CXXFLAGS" ;; *) compiler="arm-none-eabi-gcc $CFLAGS" ;; esac
    # shellcheck disable=SC2086
    arm-none-eabi-gcc $flags $CFLAGS -c $board/startup.c -o "$out/$name.startup.o"
    # shellcheck disable=SC2086
    arm-none-eabi-gcc $flags $CFLAGS -c $board/icount.c -o "$out/$name.icount.o"
    # shellcheck disable=SC2086
    $compiler $flags -c "$src" -o "$out/$name.o"
    # shellcheck disable=SC2086
    rm -f "$out/$name.elf"
    arm-none-eabi-g++ $flags $LDFLAGS "$out/$name.startup.o" "$out/$name.icount.o" "$out/$name.o" "$library" \
        -o "$out/$name.elf" -Wl,-Map,"$out/$name.map" 2>&1 | { grep -v 'ld: warning\|ld: NOTE' >&2 || true; }
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "board-bench: linking $name failed" >&2; exit 1; }
}

# field "nnmem 1234 B (own 1000, ...)" NAME -> the number after NAME
field() { sed -n "s/.*$2 \([0-9]*\).*/\1/p" <<<"$1"; }

sizes=()
for pair in "m4 thumbv7em-none-eabihf" "m0 thumbv6m-none-eabi"; do
    read -r core target <<<"$pair"
    if [ "$core" = m4 ]; then flags=$M4; else flags=$M0; fi
    for variant in messages stripped; do
        library=$(lib "$target" "$variant")
        link "size_tflm-$core-$variant" "$flags" "$library" $board/size_tflm.c
        # Stripped as TFLite Micro's figure is: its error strings too.
        strip=""
        [ "$variant" = stripped ] && strip=-DTF_LITE_STRIP_ERROR_STRINGS
        link "size_class-$core-$variant" "$flags $strip" "$library" $board/size_class.cpp
        link "size_arena-$core-$variant" "$flags" "$library" $board/size_arena.c
        # The arena's guard mode and recording, in the build that has them.
        link "size_arena_whole-$core-$variant" "$flags -DSIZE_ARENA_GUARD_AND_RECORDING" \
            "$(lib "$target" "$variant" whole)" $board/size_arena.c
        tflm=$(python3 $board/code_size.py "$out/size_tflm-$core-$variant.map")
        klass=$(python3 $board/code_size.py "$out/size_class-$core-$variant.map" --class "$out/size_class-$core-$variant.elf")
        arena=$(python3 $board/code_size.py "$out/size_arena-$core-$variant.map")
        whole=$(python3 $board/code_size.py "$out/size_arena_whole-$core-$variant.map")
        sizes+=("$core $variant $(field "$tflm" own) $(field "$tflm" helpers) $(field "$klass" own) $(field "$klass" helpers) $(field "$klass" class) $(field "$arena" own) $(field "$arena" helpers) $(field "$whole" own) $(field "$whole" helpers)")
        echo "$core $variant: tflm path: $tflm; class: $klass; arena: $arena; arena with guard and recording: $whole" >&2
    done
    link "plan_count-$core" "$flags" "$out/libnnmem-$target-messages.a" $board/plan_count.cpp
done
# The counts: M4 code on mps2-an386, M0+ code on mps2-an385.
$board/run.sh --icount mps2-an386 "$out/plan_count-m4.elf" >"$out/count-m4.log"
$board/run.sh --icount mps2-an385 "$out/plan_count-m0.elf" >"$out/count-m0.log"
cat "$out/count-m4.log" "$out/count-m0.log" >&2

# count LOG LIST INTERFACE -> instructions (the class's less its harness)
count() {
    awk -v list="$2:" -v what="$3:" '$1 == list && $2 == what {
        n = $6; if ($7 == "(harness") { h = $8; sub(/\)/, "", h); n -= h } print n }' "$1"
}
# tflm REFERENCE-FILE CORE-HEADER LIST -> GreedyMemoryPlanner's instructions less its harness
tflm() {
    awk -v hdr="$2" -v list="$3:" 'index($0, hdr) == 1 { on = 1; next } /^== / { on = 0 }
        on && $1 == list { n = $5; if ($6 == "(harness") { h = $7; sub(/\)/, "", h); n -= h } print n; exit }' "$1"
}
# tflm_size REFERENCE-FILE "linked symbols, m4" -> code + vtable bytes
tflm_size() { awk -v hdr="$2" 'index($0, hdr) { on = 1 } on && /together/ { sub(/.*together /, ""); print $1; exit }' "$1"; }
ref=benches/board/tflm-greedy.txt
ref_stripped=benches/board/tflm-greedy-stripped.txt
verdict() { if [ "$1" -le "$2" ]; then echo "**met**"; else echo "**MISSED** ($(awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'))"; fi; }

section=$(mktemp)
{
    printf '## The embedded build on Cortex-M boards\n\n'
    printf 'Written by `scripts/board-bench.sh` (%s, commit %s): the embedded build (`--no-default-features`, profile `embedded`: opt-level s, fat LTO, panic abort) linked with arm-none-eabi-gcc %s (`-Os`, `--gc-sections`) and run under %s with `-icount shift=0` (an instruction count, not a time: the same on any host). TensorFlow Lite Micro'"'"'s GreedyMemoryPlanner (commit 90b983c2) was measured the same way with `c-tests/board/measure-tflm-greedy.sh` on a TFLite Micro checkout; its output is kept in `benches/board/` (its source cannot be part of this repository).\n\n' \
        "$(date -u +%Y-%m-%d)" "$(git rev-parse --short HEAD)" "$(arm-none-eabi-gcc -dumpversion)" "$(qemu-system-arm --version | head -n 1 | sed 's/ (.*//')"
    printf '### Flash\n\n'
    printf 'Bytes of code and read-only data taken from `libnnmem.a` (`c-tests/board/code_size.py` over the link map; the mem* functions, which the firmware has anyway, apart). "tflm path": a C program that makes a planner in a scratch buffer, adds buffers, plans and reads the offsets (`c-tests/board/size_tflm.c`). "class": `tflite::NnmemMemoryPlanner` driven through the base class, its own code and vtable plus the library under it (`size_class.cpp`). "arena calls": `nnm_arena_init` and every call the embedded build holds on an arena (`size_arena.c`), in the build without the `arena-guard` and `arena-recording` features; "with guard and recording": the same program making its arena in guard mode and recording, in the build with both (a firmware that does not use them carries none of their code). "stripped": with the `strip-messages` feature (`nnm_last_error()` gives the status name), as TFLite Micro'"'"'s figure is with `TF_LITE_STRIP_ERROR_STRINGS` (with which the class is compiled too: it then prints nothing, as TFLite Micro'"'"'s planners do).\n\n'
    printf '| core | messages | tflm path | goal | class + library | goal | arena calls | goal | arena calls with guard and recording | TFLite Micro GreedyMemoryPlanner (code + vtable) |\n|---|---|---:|---|---:|---|---:|---|---:|---:|\n'
    for row in "${sizes[@]}"; do
        read -r core variant own helpers kown khelpers kclass aown ahelpers wown whelpers <<<"$row"
        path=$((own + helpers))
        whole=$((kown + khelpers + kclass))
        calls=$((aown + ahelpers))
        guarded=$((wown + whelpers))
        if [ "$core" = m4 ]; then header="m4"; name="Cortex-M4"; else header="m0"; name="Cortex-M0+"; fi
        if [ "$variant" = stripped ]; then ref_file=$ref_stripped; else ref_file=$ref; fi
        printf '| %s | %s | %s B | %s | %s B (class %s B) | %s | %s B | %s | %s B | %s B |\n' "$name" "$variant" "$path" \
            "$(verdict "$path" 2048)" "$whole" "$kclass" "$(verdict "$whole" 3072)" "$calls" "$(verdict "$calls" 2048)" \
            "$guarded" "$(tflm_size "$ref_file" "linked symbols, $header")"
    done
    printf '\nGoals (issue 32): the tflm path and the arena calls at most 2 KB each and the class with the library at most 3 KB on Cortex-M4; the same limits are shown for Cortex-M0+. Scratch: 24 B per buffer and 12 B per planner (GreedyMemoryPlanner: 40 B per buffer). The arena'"'"'s state on a 32-bit target (`NNM_ARENA_STATE_BYTES`): 456 B for the arena, 24 B per temp allocation held at once (48 B in guard mode) and 20 B per persistent allocation.\n\n'
    printf '### Instructions to plan\n\n'
    printf 'Init + AddBuffer for every buffer + GetMaximumMemorySize + GetOffsetForBuffer for every buffer, through the `MicroMemoryPlanner` base class (the harness'"'"'s own share, measured on a planner that does nothing, taken off); "C API": the same work through `nnm_scratch_planner_*` directly. Lists: `c-tests/board/plan_lists.h` (person_detect'"'"'s 30 activations read from TFLite Micro'"'"'s model; 100 buffers from xorshift32). Both give TFLite Micro'"'"'s offsets and arena sizes byte for byte (the program checks).\n\n'
    printf '| core (board) | list | nnmem class | nnmem C API | GreedyMemoryPlanner | class / TFLite Micro | goal: no more than TFLite Micro |\n|---|---|---:|---:|---:|---:|---|\n'
    for pair in "m4 mps2-an386 Cortex-M4" "m0 mps2-an385 Cortex-M0+"; do
        read -r core boardname name <<<"$pair"
        for list in person_detect list_100; do
            ours=$(count "$out/count-$core.log" "$list" class)
            capi=$(count "$out/count-$core.log" "$list" c-api)
            theirs=$(tflm "$ref" "== $boardname" "$list")
            printf '| %s (%s) | %s | %s | %s | %s | %s | %s |\n' "$name" "$boardname" "$list" "$ours" "$capi" "$theirs" \
                "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')" "$(verdict "$ours" "$theirs")"
        done
    done
    printf '\nThe planning itself is O(n^2) like TFLite Micro'"'"'s (the same walk over the placed buffers); its order is sorted by insertion where TFLite Micro bubble-sorts, and each call checks its planner'"'"'s header (a tag, the count) before it reads the scratch.\n'
} >"$section"

# Replace the section (it runs to the end of the file), or append it.
bench=BENCHMARKS.md
tmp=$(mktemp)
sed '/^## The embedded build on Cortex-M boards/,$d' "$bench" >"$tmp"
cat "$section" >>"$tmp"
chmod 0644 "$tmp"
mv "$tmp" "$bench"
rm -f "$section"
echo "board-bench: BENCHMARKS.md, \"The embedded build on Cortex-M boards\", rewritten" >&2
