/*
 * Test stand-in for TensorFlow Lite Micro's "tensorflow/lite/c/common.h":
 * only TfLiteStatus, which tflite::MicroMemoryPlanner's interface uses,
 * declared as TFLite documents it (an enum with kTfLiteOk = 0 and
 * kTfLiteError = 1 among others). Used by c-tests/compat_tflm_test.cpp and
 * examples/compat_tflm.cpp only; a real build uses TFLite Micro's headers.
 */
#ifndef NNMEM_TEST_TFLITE_C_COMMON_H
#define NNMEM_TEST_TFLITE_C_COMMON_H

typedef enum TfLiteStatus {
  kTfLiteOk = 0,
  kTfLiteError = 1,
  kTfLiteDelegateError = 2,
  kTfLiteApplicationError = 3,
  kTfLiteDelegateDataNotFound = 4,
  kTfLiteDelegateDataWriteError = 5,
  kTfLiteDelegateDataReadError = 6,
  kTfLiteUnresolvedOps = 7,
  kTfLiteCancelled = 8,
  kTfLiteOutputShapeNotKnown = 9,
} TfLiteStatus;

#endif
