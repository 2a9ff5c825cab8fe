/*
 * Executes UDIV, an Armv7-M instruction. On microbit (Cortex-M0, Armv6-M)
 * it must HardFault (startup.c's handler exits 99); on the mps2 boards it
 * runs and the program exits 0. Shows whether a board checks v6-M.
 */
#include <stdint.h>
#include <stdio.h>

int main(void) {
  uint32_t q;
  volatile uint32_t a = 100;
  volatile uint32_t b = 7;
  register uint32_t r0 __asm__("r0") = a;
  register uint32_t r1 __asm__("r1") = b;
  /* udiv r0, r0, r1, as raw bits so that a v6-M build assembles it */
  __asm__ volatile(".inst.w 0xfbb0f0f1" : "+r"(r0) : "r"(r1));
  q = r0;
  printf("udiv: %u\n", (unsigned)q);
  return q == 100 / 7 ? 0 : 1;
}
