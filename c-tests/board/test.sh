#!/bin/sh
# Builds the board programs beside this script for the three emulated boards
# and runs them under QEMU (run.sh), checking each exit status:
#   selftest.c, selftest_cpp.cpp  0 (startup, .data/.bss, constructors, heap, FPU)
#   selftest.c -DSELFTEST_EXIT=3  3 (QEMU passes main's status on)
#   selftest.c -DSELFTEST_FAULT   99 and "HardFault" (the fault handler)
#   udiv.c                        0 on mps2, 99 on microbit (a v6-M check)
#   calibrate.c                   0 under -icount shift=0 (icount.h)
# and, with NNMEM_LIB_M4 and NNMEM_LIB_M0 set to the embedded build's
# libnnmem.a for thumbv7em-none-eabihf and thumbv6m-none-eabi (with the
# arena-guard and arena-recording features)
# (scripts/board-test.sh sets them), nnmem on the boards:
#   planner_board.c               0 (the scratch planner's C tests)
#   ../arena_init_test.c          0 (the arena's C tests in the caller's
#                                 memory, the host's ctest program)
#   tflm_class_board.cpp          0 (the TFLite Micro class, NNMEM_NO_HEAP)
#   plan_digest.c                 0, and output identical to the host's
#                                 ($NNMEM_DIGEST_HOST, when set)
#   planner_board.c, stripped     0 with NNMEM_LIB_M4_STRIPPED (the M4F
#                                 build with strip-messages)
#   tflm_class_board.cpp,         0 with the same library and
#     stripped                    -DTF_LITE_STRIP_ERROR_STRINGS
#   arena_parts.c, stripped       0 with the same library, built without the
#                                 arena-guard and arena-recording features
#   arena_parts.c, plain          0 with NNMEM_LIB_M0_PLAIN (the M0+ build
#                                 with messages, without those features) on
#                                 mps2-an385, the messages checked
#
#   c-tests/board/test.sh [BUILD_DIR]     (default: a temporary directory)
#
# Needs arm-none-eabi-gcc/g++ with newlib (nano.specs, rdimon.specs) and
# qemu-system-arm; exits 0 when every check passes, 1 when one fails, and 77
# (skipped) when the toolchain or QEMU is missing.
set -u
for tool in arm-none-eabi-gcc arm-none-eabi-g++ "${QEMU_SYSTEM_ARM:-qemu-system-arm}"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "board tests skipped: $tool not found"
    exit 77
  fi
done
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d)}
mkdir -p "$out"

M4="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
M0="-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft"
WARN="-Wall -Wextra -Werror"
CFLAGS="-std=c99 -pedantic $WARN -Os -g -ffunction-sections -fdata-sections"
CXXFLAGS="-std=c++17 $WARN -Os -g -ffunction-sections -fdata-sections -fno-exceptions -fno-rtti"
LDFLAGS="--specs=nano.specs --specs=rdimon.specs -nostartfiles -Wl,--gc-sections"

failures=0
passes=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# build NAME CORE(m4|m0) LDSCRIPT SOURCE [extra flags]
build() {
  name=$1 core=$2 ld=$3 src=$4
  shift 4
  if [ "$core" = m4 ]; then flags=$M4; else flags=$M0; fi
  objs=""
  for c in startup.c icount.c; do
    # shellcheck disable=SC2086
    arm-none-eabi-gcc $flags $CFLAGS -c "$here/$c" -o "$out/$name.${c%.c}.o" || return 1
    objs="$objs $out/$name.${c%.c}.o"
  done
  case $src in
  *.cpp) cc="arm-none-eabi-g++ $CXXFLAGS" ;;
  *) cc="arm-none-eabi-gcc $CFLAGS" ;;
  esac
  # shellcheck disable=SC2086
  $cc $flags "$@" -c "$here/$src" -o "$out/$name.o" || return 1
  # LIB: a library to link after the program (nnmem's embedded build).
  # shellcheck disable=SC2086
  arm-none-eabi-g++ $flags $LDFLAGS -T "$here/$ld" $objs "$out/$name.o" ${LIB:-} -o "$out/$name.elf" \
    -Wl,-Map,"$out/$name.map"
}

# check BOARD NAME EXPECTED_STATUS [--icount] [TEXT expected in the output]
check() {
  board=$1 name=$2 want=$3
  shift 3
  icount=""
  if [ "${1:-}" = --icount ]; then
    icount=--icount
    shift
  fi
  text=${1:-}
  if [ ! -f "$out/$name.elf" ]; then
    fail "$name was not built"
    return
  fi
  "$here/run.sh" $icount "$board" "$out/$name.elf" >"$out/$name.$board.log" 2>&1
  got=$?
  if [ "$got" != "$want" ]; then
    fail "$name on $board exited $got, expected $want"
    sed 's/^/    /' "$out/$name.$board.log"
  elif [ -n "$text" ] && ! grep -q "$text" "$out/$name.$board.log"; then
    fail "$name on $board did not print \"$text\""
    sed 's/^/    /' "$out/$name.$board.log"
  else
    echo "ok: $name on $board (exit $got)"
    passes=$((passes + 1))
  fi
}

for core in m4 m0; do
  build selftest-$core $core mps2.ld selftest.c || fail "build selftest-$core"
  build selftest_cpp-$core $core mps2.ld selftest_cpp.cpp || fail "build selftest_cpp-$core"
  build exit3-$core $core mps2.ld selftest.c -DSELFTEST_EXIT=3 || fail "build exit3-$core"
  build fault-$core $core mps2.ld selftest.c -DSELFTEST_FAULT || fail "build fault-$core"
  build udiv-$core $core mps2.ld udiv.c || fail "build udiv-$core"
  build calibrate-$core $core mps2.ld calibrate.c || fail "build calibrate-$core"
done
build selftest-microbit m0 microbit.ld selftest.c || fail "build selftest-microbit"
build selftest_cpp-microbit m0 microbit.ld selftest_cpp.cpp || fail "build selftest_cpp-microbit"
build exit3-microbit m0 microbit.ld selftest.c -DSELFTEST_EXIT=3 || fail "build exit3-microbit"
build fault-microbit m0 microbit.ld selftest.c -DSELFTEST_FAULT || fail "build fault-microbit"
build udiv-microbit m0 microbit.ld udiv.c || fail "build udiv-microbit"
build calibrate-microbit m0 microbit.ld calibrate.c || fail "build calibrate-microbit"

for pair in "mps2-an386 m4" "mps2-an385 m0"; do
  set -- $pair
  check "$1" selftest-$2 0
  check "$1" selftest_cpp-$2 0
  check "$1" exit3-$2 3
  check "$1" fault-$2 99 HardFault
  check "$1" udiv-$2 0
  check "$1" calibrate-$2 0 --icount
done
check microbit selftest-microbit 0
check microbit selftest_cpp-microbit 0
check microbit exit3-microbit 3
check microbit fault-microbit 99 HardFault
check microbit udiv-microbit 99 HardFault
check microbit calibrate-microbit 0 --icount

# nnmem's embedded build on the boards: the M4F build on mps2-an386, the
# M0+ build on mps2-an385 and on microbit (a true v6-M core).
if [ -n "${NNMEM_LIB_M4:-}" ] && [ -n "${NNMEM_LIB_M0:-}" ]; then
  inc="-I$here/../../include"
  tflm="-I$here/../compat/tflm -DNNMEM_NO_HEAP"
  for target in "m4 mps2 mps2-an386 $NNMEM_LIB_M4" "m0 mps2 mps2-an385 $NNMEM_LIB_M0" \
    "m0 microbit microbit $NNMEM_LIB_M0"; do
    # shellcheck disable=SC2086
    set -- $target
    # build() sets name, core, ld and src: keep ours apart.
    on_core=$1 script=$2.ld board=$3
    export LIB=$4
    build planner_board-$board "$on_core" "$script" planner_board.c "$inc" || fail "build planner_board-$board"
    # shellcheck disable=SC2086
    build tflm_class_board-$board "$on_core" "$script" tflm_class_board.cpp "$inc" $tflm \
      || fail "build tflm_class_board-$board"
    build plan_digest-$board "$on_core" "$script" plan_digest.c "$inc" || fail "build plan_digest-$board"
    build arena_init-$board "$on_core" "$script" ../arena_init_test.c "$inc" "-I$here/.." \
      || fail "build arena_init-$board"
    unset LIB
    check "$board" planner_board-$board 0 passed
    check "$board" tflm_class_board-$board 0 passed
    check "$board" plan_digest-$board 0 "all "
    check "$board" arena_init-$board 0 " 0 failed"
    if [ -n "${NNMEM_DIGEST_HOST:-}" ]; then
      # run.sh's output is the program's: the host's must be the same.
      if diff "$NNMEM_DIGEST_HOST" "$out/plan_digest-$board.$board.log" >"$out/digest-$board.diff"; then
        echo "ok: plan_digest on $board gives the host's plans, byte for byte"
        passes=$((passes + 1))
      else
        fail "plan_digest on $board differs from the host's ($out/digest-$board.diff)"
        head -n 5 "$out/digest-$board.diff" | sed 's/^/    /'
      fi
    fi
  done
fi

# The M4F build with strip-messages (NNMEM_LIB_M4_STRIPPED): the same
# tests, the last error being the status's name.
if [ -n "${NNMEM_LIB_M4_STRIPPED:-}" ]; then
  export LIB=$NNMEM_LIB_M4_STRIPPED
  build planner_board-stripped m4 mps2.ld planner_board.c "-I$here/../../include" -DNNM_BOARD_STRIPPED \
    || fail "build planner_board-stripped"
  unset LIB
  check mps2-an386 planner_board-stripped 0 passed
  # The class built as TFLite Micro is with its error strings stripped:
  # the same tests, nothing printed.
  export LIB=$NNMEM_LIB_M4_STRIPPED
  # shellcheck disable=SC2086
  build tflm_class_board-stripped m4 mps2.ld tflm_class_board.cpp "-I$here/../../include" \
    "-I$here/../compat/tflm" -DNNMEM_NO_HEAP -DTF_LITE_STRIP_ERROR_STRINGS || fail "build tflm_class_board-stripped"
  unset LIB
  check mps2-an386 tflm_class_board-stripped 0 passed
  # That library has neither of the arena's optional parts.
  export LIB=$NNMEM_LIB_M4_STRIPPED
  build arena_parts-stripped m4 mps2.ld arena_parts.c "-I$here/../../include" || fail "build arena_parts-stripped"
  unset LIB
  check mps2-an386 arena_parts-stripped 0 " 0 failed"
fi

# The M0+ build with messages and without the arena parts
# (NNMEM_LIB_M0_PLAIN): the refusals name the feature to build with.
if [ -n "${NNMEM_LIB_M0_PLAIN:-}" ]; then
  export LIB=$NNMEM_LIB_M0_PLAIN
  build arena_parts-plain m0 mps2.ld arena_parts.c "-I$here/../../include" -DARENA_PARTS_MESSAGES \
    || fail "build arena_parts-plain"
  unset LIB
  check mps2-an385 arena_parts-plain 0 " 0 failed"
fi

echo "outputs in $out"
echo "board: $passes passed, $failures failed"
[ "$failures" = 0 ]
