/*
 * Test stand-in for TensorFlow Lite Micro's
 * "tensorflow/lite/micro/memory_planner/micro_memory_planner.h", written
 * from the documented interface of tflite::MicroMemoryPlanner (TFLite
 * Micro at HEAD, 2026): the same virtual members with the same signatures
 * and defaults, so that a class deriving from it here derives from the real
 * one in a TFLite Micro build. Used by c-tests/compat_tflm_test.cpp and
 * examples/compat_tflm.cpp only.
 */
#ifndef NNMEM_TEST_TFLITE_MICRO_MEMORY_PLANNER_H
#define NNMEM_TEST_TFLITE_MICRO_MEMORY_PLANNER_H

#include <cstddef>

#include "tensorflow/lite/c/common.h"

namespace tflite {

class MicroMemoryPlanner {
 public:
  MicroMemoryPlanner() {}
  virtual ~MicroMemoryPlanner() {}

  // The N-th call gives the buffer index N.
  virtual TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used) = 0;

  // An offline-planned buffer at `offline_offset` from the arena's start;
  // planners without offline support refuse it.
  virtual TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used, int offline_offset) {
    (void)size;
    (void)first_time_used;
    (void)last_time_used;
    (void)offline_offset;
    return kTfLiteError;
  }

  virtual size_t GetMaximumMemorySize() = 0;
  virtual int GetBufferCount() = 0;
  virtual TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) = 0;

  // Scratch memory for the planner, valid until the plan is committed.
  virtual TfLiteStatus Init(unsigned char* scratch_buffer, int scratch_buffer_size) {
    (void)scratch_buffer;
    (void)scratch_buffer_size;
    return kTfLiteOk;
  }

  virtual bool preserves_all_tensors() const = 0;

  virtual void PrintMemoryPlan() {}
};

}  // namespace tflite

#endif
