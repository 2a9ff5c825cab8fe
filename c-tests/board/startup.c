/*
 * Bare-metal start for the emulated Cortex-M boards (QEMU mps2-an385,
 * mps2-an386, microbit) with newlib semihosting (--specs=rdimon.specs).
 *
 * Link with -nostartfiles and one of the linker scripts beside this file
 * (mps2.ld, microbit.ld), which provide the symbols used below.
 *
 * Reset: enable the FPU (hard-float builds only), copy .data from flash,
 * zero .bss, open the semihosting handles, run the C++ static constructors,
 * then exit(main()), so that QEMU exits with main's status.
 * Any other exception ends the program through semihosting: "HardFault"
 * (or "Unexpected exception") on the host's stderr and exit status 99.
 *
 * ISO C (-std=c99 -pedantic) has no way to place an object in a section;
 * __attribute__ is a GNU extension that -pedantic accepts (the keyword is
 * reserved to the implementation), so no __extension__ is needed here.
 * The vector table is a struct, not an array of function pointers, so that
 * the initial stack pointer needs no object-to-function pointer cast, which
 * -pedantic rejects.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* From the linker script. */
extern uint32_t __stack_top;
extern uint32_t __data_load__;
extern uint32_t __data_start__;
extern uint32_t __data_end__;
extern uint32_t __bss_start__;
extern uint32_t __bss_end__;

/* From newlib: librdimon and libc. */
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);

extern int main(void);

void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);

/* __libc_init_array and __libc_fini_array call these; crti.o/crtn.o, which
 * would define them, are not linked with -nostartfiles. */
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}

/* Semihosting (ARM "Angel" interface): BKPT 0xAB with the operation in r0
 * and its argument in r1; the result comes back in r0. Used directly by the
 * fault handler, which must not depend on newlib's state. */
static uint32_t semihost(uint32_t op, const void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

#define SEMIHOST_SYS_WRITE0 0x04u
#define SEMIHOST_SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static void fault_exit(const char *message) {
  uint32_t block[2];
  semihost(SEMIHOST_SYS_WRITE0, message);
  block[0] = ADP_STOPPED_APPLICATION_EXIT;
  block[1] = 99; /* QEMU's exit status */
  semihost(SEMIHOST_SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}

void HardFault_Handler(void) { fault_exit("HardFault\n"); }

void Default_Handler(void) { fault_exit("Unexpected exception\n"); }

/* Cortex-M core exceptions (the first 16 words). No interrupt is enabled by
 * these programs, so the device interrupt vectors are left out. */
struct vector_table {
  uint32_t *initial_sp;
  void (*handlers[15])(void);
};

__attribute__((section(".isr_vector"), used)) const struct vector_table nnm_board_vectors = {
    &__stack_top,
    {
        Reset_Handler,     /* 1 Reset */
        Default_Handler,   /* 2 NMI */
        HardFault_Handler, /* 3 HardFault */
        HardFault_Handler, /* 4 MemManage (v7-M) */
        HardFault_Handler, /* 5 BusFault (v7-M) */
        HardFault_Handler, /* 6 UsageFault (v7-M) */
        0, 0, 0, 0,        /* 7-10 reserved */
        Default_Handler,   /* 11 SVCall */
        Default_Handler,   /* 12 DebugMonitor (v7-M) */
        0,                 /* 13 reserved */
        Default_Handler,   /* 14 PendSV */
        Default_Handler,   /* 15 SysTick */
    },
};

void Reset_Handler(void) {
#if defined(__ARM_FP)
  /* CPACR: full access to CP10 and CP11 (bits 20-23), i.e. the FPU. */
  *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  memcpy(&__data_start__, &__data_load__, (size_t)((char *)&__data_end__ - (char *)&__data_start__));
  memset(&__bss_start__, 0, (size_t)((char *)&__bss_end__ - (char *)&__bss_start__));
  initialise_monitor_handles();
  __libc_init_array();
  exit(main());
}
