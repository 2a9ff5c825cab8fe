/*
 * Test stand-in for TensorFlow Lite Micro's "tensorflow/lite/micro/micro_log.h":
 * the printf-like logging function its planners print with, declared as
 * TFLite Micro documents it. The test program defines it (and records what
 * is printed).
 */
#ifndef NNMEM_TEST_TFLITE_MICRO_LOG_H
#define NNMEM_TEST_TFLITE_MICRO_LOG_H

void MicroPrintf(const char* format, ...);

#endif
