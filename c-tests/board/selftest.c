/*
 * Checks startup.c and the linker scripts: .data copied from flash, .bss
 * zeroed, constructors (.init_array) run before main, the heap (malloc),
 * stdout through semihosting and, in hard-float builds, the FPU enabled.
 * Exits 0 when all hold. Built with -DSELFTEST_EXIT=N it returns N instead
 * (a check that QEMU passes main's status on); with -DSELFTEST_FAULT it
 * executes an undefined instruction (startup.c's handler: "HardFault", 99).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint32_t g_data = 0x12345678u;
static volatile uint32_t g_data_array[3] = {1, 2, 3};
static volatile uint32_t g_bss;
static volatile uint32_t g_bss_array[64];
static volatile int g_constructed;

static __attribute__((constructor)) void construct(void) { g_constructed = 1; }

static int check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  return ok ? 0 : 1;
}

int main(void) {
  int failures = 0;
  size_t i;
  int bss_zero = g_bss == 0;
  char *heap;
  for (i = 0; i < sizeof g_bss_array / sizeof g_bss_array[0]; ++i) {
    bss_zero = bss_zero && g_bss_array[i] == 0;
  }
  failures += check(g_data == 0x12345678u && g_data_array[0] == 1 && g_data_array[2] == 3, ".data copied");
  failures += check(bss_zero, ".bss zeroed");
  failures += check(g_constructed == 1, "constructor ran");
  heap = malloc(1000);
  failures += check(heap != NULL, "malloc(1000)");
  if (heap != NULL) {
    memset(heap, 0xA5, 1000);
    free(heap);
  }
#if defined(__ARM_FP)
  {
    volatile float x = 1.5f;
    volatile float y = x * x + 0.25f; /* VMUL/VADD: fault if the FPU is off */
    failures += check(y == 2.5f, "FPU enabled");
  }
#endif
#if defined(SELFTEST_FAULT)
  __asm__ volatile("udf #0");
#endif
#if defined(SELFTEST_EXIT)
  return SELFTEST_EXIT;
#else
  return failures;
#endif
}
