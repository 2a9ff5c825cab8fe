// Test stand-in for TensorFlow Lite Micro's MicroPrintf (micro_log.cc): the
// formatted text and a newline on stdout.
#include "tensorflow/lite/micro/micro_log.h"

#include <cstdarg>
#include <cstdio>

void MicroPrintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::putchar('\n');
}
