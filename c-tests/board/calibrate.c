/*
 * Calibration of icount.h: a loop whose instruction count is known exactly
 * (two instructions per iteration: SUBS and BNE) must read within one timer
 * tick plus the calls' few instructions. Run under `-icount shift=0`
 * (run.sh --icount); exits 0 when every reading is within tolerance, 1 when
 * one is off.
 */
#include <stdint.h>
#include <stdio.h>

#include "icount.h"

/* Exactly 2 * n instructions inside the asm (n >= 1), plus the call.
 * GCC hands Thumb-1 inline asm to the assembler in divided syntax, where
 * SUBS is unknown; hence the .syntax directive (GCC restores its own). */
static __attribute__((noinline)) void spin(uint32_t n) {
  __asm__ volatile(".syntax unified\n1:\n\tsubs %0, %0, #1\n\tbne 1b" : "+l"(n) : : "cc");
}

/* Instructions outside the loop the reading may include: the call to spin
 * and its return, the end of nnm_board_count_start and the start of
 * nnm_board_count_stop. */
#define OVERHEAD_ALLOWANCE 16

int main(void) {
  static const uint32_t iterations[] = {1, 20, 1000, 12345, 100000, 1000000};
  const long resolution = (long)nnm_board_count_resolution();
  const long low = -resolution;
  const long high = resolution + OVERHEAD_ALLOWANCE;
  int failures = 0;
  size_t i;
  long empty;

  nnm_board_count_start();
  empty = (long)nnm_board_count_stop();
  printf("resolution %ld instructions; empty interval reads %ld\n", resolution, empty);
  if (empty < 0 || empty > high) {
    printf("  off: an empty interval must read 0..%ld\n", high);
    ++failures;
  }
  for (i = 0; i < sizeof iterations / sizeof iterations[0]; ++i) {
    const long expected = 2L * (long)iterations[i];
    long measured;
    long diff;
    nnm_board_count_start();
    spin(iterations[i]);
    measured = (long)nnm_board_count_stop();
    diff = measured - expected;
    printf("loop of %8ld instructions reads %8ld (%+ld)%s\n", expected, measured, diff,
           diff < low || diff > high ? "  OFF" : "");
    if (diff < low || diff > high) {
      ++failures;
    }
  }
  if (failures) {
    printf("calibration: %d readings off (tolerance %ld..%+ld; is QEMU run with -icount shift=0?)\n",
           failures, low, high);
    return 1;
  }
  printf("calibration: ok (tolerance %ld..%+ld instructions)\n", low, high);
  return 0;
}
