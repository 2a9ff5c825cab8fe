/* Instruction counting through a board timer under -icount shift=0; see icount.h. */
#include "icount.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

/* System control block: CPUID, part number in bits 4-15. */
#define SCB_CPUID REG(0xE000ED00u)
#define PART_CORTEX_M0 0xC20u

/* CMSDK APB timer 0 (mps2): a 32-bit down counter at PCLK, 25 MHz. */
#define CMSDK_TIMER0 0x40000000u
#define CMSDK_CTRL REG(CMSDK_TIMER0 + 0x0u)
#define CMSDK_VALUE REG(CMSDK_TIMER0 + 0x4u)
#define CMSDK_RELOAD REG(CMSDK_TIMER0 + 0x8u)

/* nRF51 TIMER0 (microbit): an up counter at 16 MHz >> PRESCALER, read by
 * triggering a capture into CC[0]. */
#define NRF_TIMER0 0x40008000u
#define NRF_TASKS_START REG(NRF_TIMER0 + 0x000u)
#define NRF_TASKS_STOP REG(NRF_TIMER0 + 0x004u)
#define NRF_TASKS_CLEAR REG(NRF_TIMER0 + 0x00Cu)
#define NRF_TASKS_CAPTURE0 REG(NRF_TIMER0 + 0x040u)
#define NRF_MODE REG(NRF_TIMER0 + 0x504u)
#define NRF_BITMODE REG(NRF_TIMER0 + 0x508u)
#define NRF_PRESCALER REG(NRF_TIMER0 + 0x510u)
#define NRF_CC0 REG(NRF_TIMER0 + 0x540u)

enum board { BOARD_UNKNOWN, BOARD_MPS2, BOARD_MICROBIT };

static enum board g_board = BOARD_UNKNOWN;
static uint32_t g_start;

static void init(void) {
  if (((SCB_CPUID >> 4) & 0xFFFu) == PART_CORTEX_M0) {
    g_board = BOARD_MICROBIT;
    NRF_TASKS_STOP = 1;
    NRF_MODE = 0;      /* timer */
    NRF_BITMODE = 3;   /* 32 bits */
    NRF_PRESCALER = 0; /* 16 MHz */
    NRF_TASKS_CLEAR = 1;
    NRF_TASKS_START = 1;
  } else {
    g_board = BOARD_MPS2;
    CMSDK_CTRL = 0;
    CMSDK_RELOAD = 0xFFFFFFFFu;
    CMSDK_VALUE = 0xFFFFFFFFu;
    CMSDK_CTRL = 1; /* enable, no interrupt */
  }
}

uint32_t nnm_board_count_resolution(void) {
  if (g_board == BOARD_UNKNOWN) {
    init();
  }
  return g_board == BOARD_MICROBIT ? 63u : 40u;
}

void nnm_board_count_start(void) {
  if (g_board == BOARD_UNKNOWN) {
    init();
  }
  if (g_board == BOARD_MICROBIT) {
    NRF_TASKS_CAPTURE0 = 1;
    g_start = NRF_CC0;
  } else {
    g_start = CMSDK_VALUE;
  }
}

uint32_t nnm_board_count_stop(void) {
  uint32_t ticks;
  if (g_board == BOARD_MICROBIT) {
    NRF_TASKS_CAPTURE0 = 1;
    ticks = NRF_CC0 - g_start; /* counts up */
    /* 62.5 instructions per tick */
    if (ticks > 0xFFFFFFFFu / 63u) {
      return 0xFFFFFFFFu;
    }
    return ticks * 62u + ticks / 2u;
  }
  ticks = g_start - CMSDK_VALUE; /* counts down */
  if (ticks > 0xFFFFFFFFu / 40u) {
    return 0xFFFFFFFFu;
  }
  return ticks * 40u;
}
