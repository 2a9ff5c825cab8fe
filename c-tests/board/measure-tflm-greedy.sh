#!/bin/sh
# Measures TensorFlow Lite Micro's GreedyMemoryPlanner on the emulated boards:
# instructions for Init + AddBuffer (each buffer) + GetMaximumMemorySize +
# GetOffsetForBuffer (each buffer) on the two lists of plan_lists.h, on
# mps2-an386 (Cortex-M4F code) and mps2-an385 (Cortex-M0+ code; also run on
# microbit, a Cortex-M0, as a v6-M check), with the arena size and every
# offset, and the planner's linked code size.
#
#   c-tests/board/measure-tflm-greedy.sh TFLM_CHECKOUT [BUILD_DIR]
#
# TFLM_CHECKOUT: a tensorflow/tflite-micro source tree (only
# tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc and the
# headers it includes are used; nothing is copied). BUILD_DIR: where the
# objects, ELFs, maps and logs go (default: a temporary directory).
# EXTRA_CXXFLAGS is added to the C++ compiles (e.g. -DTF_LITE_STRIP_ERROR_STRINGS).
# Exits non-zero when a build, run or plan check fails.
set -eu
if [ $# -lt 1 ] || [ ! -f "$1/tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc" ]; then
  echo "usage: $0 TFLM_CHECKOUT [BUILD_DIR]" >&2
  exit 2
fi
tflm=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"

M4="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
M0="-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft"
COMMON="-Os -fno-exceptions -fno-rtti -ffunction-sections -fdata-sections"
CXXFLAGS="-std=c++17 $COMMON -DTF_LITE_STATIC_MEMORY -isystem $tflm -I$here ${EXTRA_CXXFLAGS:-}"
CFLAGS="-std=c99 -pedantic -Wall -Wextra -Werror -Os -ffunction-sections -fdata-sections"
LDFLAGS="--specs=nano.specs --specs=rdimon.specs -nostartfiles -Wl,--gc-sections"

if commit=$(git -C "$tflm" rev-parse HEAD 2>/dev/null); then
  echo "TFLite Micro: $tflm at $commit"
else
  echo "TFLite Micro: $tflm (not a git checkout)"
fi
echo "arm-none-eabi-g++: $(arm-none-eabi-g++ -dumpversion); $(qemu-system-arm --version | head -1)"

for core in m4 m0; do
  if [ $core = m4 ]; then flags=$M4; else flags=$M0; fi
  # TFLite Micro's own file: its warnings are shown, not fatal.
  # shellcheck disable=SC2086
  arm-none-eabi-g++ $flags $CXXFLAGS -Wall -Wextra \
    -c "$tflm/tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc" -o "$out/greedy-$core.o"
  # shellcheck disable=SC2086
  arm-none-eabi-g++ $flags $CXXFLAGS -Wall -Wextra -Werror -c "$here/tflm_greedy.cc" -o "$out/driver-$core.o"
  for c in startup icount; do
    # shellcheck disable=SC2086
    arm-none-eabi-gcc $flags $CFLAGS -c "$here/$c.c" -o "$out/$c-$core.o"
  done
done

link() { # CORE LDSCRIPT ELF
  if [ "$1" = m4 ]; then flags=$M4; else flags=$M0; fi
  # shellcheck disable=SC2086
  arm-none-eabi-g++ $flags $LDFLAGS -T "$here/$2" "$out/startup-$1.o" "$out/icount-$1.o" \
    "$out/driver-$1.o" "$out/greedy-$1.o" -o "$out/$3" -Wl,-Map,"$out/${3%.elf}.map"
}
link m4 mps2.ld greedy-m4.elf
link m0 mps2.ld greedy-m0.elf
link m0 microbit.ld greedy-m0-microbit.elf

# The planner's linked code: the symbols greedy_memory_planner.o defines, as
# they are in the ELF after --gc-sections (aliases at one address once).
code_size() { # CORE
  arm-none-eabi-nm --defined-only "$out/greedy-$1.o" | awk '{print $NF}' | sort -u >"$out/greedy-$1.syms"
  arm-none-eabi-nm -S --size-sort "$out/greedy-$1.elf" |
    awk -v syms="$out/greedy-$1.syms" 'BEGIN { while ((getline s < syms) > 0) keep[s] = 1 }
      NF == 4 && ($4 in keep) { print }' >"$out/greedy-$1.linked"
  arm-none-eabi-nm -S --size-sort -C "$out/greedy-$1.elf" |
    awk -v mangled="$out/greedy-$1.linked" 'BEGIN { while ((getline l < mangled) > 0) { split(l, f); want[f[1]] = 1 } }
      NF >= 4 && ($1 in want) { print }' >"$out/greedy-$1.nm"
  echo "GreedyMemoryPlanner linked symbols, $1 (arm-none-eabi-nm -S --size-sort -C):"
  sed 's/^/  /' "$out/greedy-$1.nm"
  text=0 ro=0 seen=" "
  while read -r addr size type _; do
    case $seen in *" $addr "*) continue ;; esac
    seen="$seen$addr "
    case $type in
    [tTwW]) text=$((text + 0x$size)) ;;
    [rRvV]) ro=$((ro + 0x$size)) ;;
    esac
  done <"$out/greedy-$1.nm"
  echo "  code (text, each address once) $text B; vtable (read-only data) $ro B; together $((text + ro)) B"
}
code_size m4
code_size m0

status=0
run() { # BOARD ELF
  echo "== $1: $2 (-icount shift=0)"
  if "$here/run.sh" --icount "$1" "$out/$2" >"$out/${2%.elf}.$1.log" 2>&1; then
    cat "$out/${2%.elf}.$1.log"
  else
    cat "$out/${2%.elf}.$1.log"
    echo "FAILED: $2 on $1"
    status=1
  fi
}
run mps2-an386 greedy-m4.elf
run mps2-an385 greedy-m0.elf
run microbit greedy-m0-microbit.elf

# The plans must not depend on the core.
grep offsets "$out/greedy-m4.mps2-an386.log" >"$out/offsets-m4.txt" || true
for f in greedy-m0.mps2-an385.log greedy-m0-microbit.microbit.log; do
  grep offsets "$out/$f" >"$out/offsets-other.txt" || true
  if [ ! -s "$out/offsets-m4.txt" ] || ! cmp -s "$out/offsets-m4.txt" "$out/offsets-other.txt"; then
    echo "FAILED: the offsets in $f differ from the Cortex-M4 run's"
    status=1
  fi
done
echo "build directory: $out"
exit $status
