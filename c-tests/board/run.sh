#!/bin/sh
# Runs a bare-metal test program on an emulated Cortex-M board under QEMU,
# with semihosting (stdout, stderr, exit status), and exits with its status.
#
#   c-tests/board/run.sh [--icount] BOARD ELF [extra qemu-system-arm args...]
#
# BOARD: mps2-an386 (Cortex-M4F), mps2-an385 (Cortex-M3; runs v6-M code),
# microbit (Cortex-M0; a true v6-M check). --icount, or NNM_BOARD_ICOUNT=1
# in the environment, adds `-icount shift=0` (one instruction per virtual ns,
# for icount.h). The run is killed after NNM_BOARD_TIMEOUT seconds (default
# 60), and then exits 124 as timeout(1) does. QEMU is $QEMU_SYSTEM_ARM, or
# qemu-system-arm from PATH.
set -u

icount=${NNM_BOARD_ICOUNT:-0}
if [ "${1:-}" = "--icount" ]; then
  icount=1
  shift
fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--icount] BOARD ELF [qemu-system-arm args...]" >&2
  exit 2
fi
board=$1
elf=$2
shift 2
if [ ! -f "$elf" ]; then
  echo "$0: no such file: $elf" >&2
  exit 2
fi

if [ "$icount" != 0 ]; then
  set -- -icount shift=0 "$@"
fi

exec timeout "${NNM_BOARD_TIMEOUT:-60}" "${QEMU_SYSTEM_ARM:-qemu-system-arm}" \
  -M "$board" -nographic -semihosting-config enable=on,target=native \
  -kernel "$elf" "$@"
