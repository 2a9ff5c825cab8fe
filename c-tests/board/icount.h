/*
 * Instruction counting on QEMU's emulated Cortex-M boards.
 *
 * With `qemu-system-arm -icount shift=0` QEMU's virtual clock advances 1 ns
 * per guest instruction, so a hardware timer read around a piece of code
 * counts the instructions it executed:
 *
 *   board                    timer                              resolution
 *   mps2-an385, mps2-an386   CMSDK APB TIMER0 (0x40000000), 25 MHz   40 instructions
 *   microbit                 nRF51 TIMER0 (0x40008000), 16 MHz       62.5 instructions
 *
 * The board is told apart at run time by the core's CPUID part number
 * (Cortex-M0: microbit; anything else: mps2).
 *
 *   nnm_board_count_start();
 *   code_to_measure();
 *   uint32_t n = nnm_board_count_stop();
 *
 * n is the number of instructions between the timer read at the end of
 * nnm_board_count_start() and the one at the start of nnm_board_count_stop(),
 * rounded down to the timer's resolution, so a reading is within one tick
 * (40 or 63 instructions) plus the few instructions of the two calls
 * (calibrate.c checks this). Intervals of 2^32 instructions or more read
 * UINT32_MAX. Without -icount the timers follow host time and the figures
 * mean nothing.
 */
#ifndef NNM_BOARD_ICOUNT_H
#define NNM_BOARD_ICOUNT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nnm_board_count_start(void);
uint32_t nnm_board_count_stop(void);

/* The timer's resolution in instructions, rounded up (40 or 63). */
uint32_t nnm_board_count_resolution(void);

#ifdef __cplusplus
}
#endif

#endif
