// The measured sequence of the planner instruction counts, shared by
// tflm_greedy.cc (TensorFlow Lite Micro's GreedyMemoryPlanner) and
// plan_count.cpp (nnmem's class), so that both count the same calls:
// Init(scratch) + AddBuffer for every buffer + GetMaximumMemorySize +
// GetOffsetForBuffer for every buffer, through the MicroMemoryPlanner base
// class, between nnm_board_count_start() and _stop(); and a planner that
// does nothing, whose count is the harness's own share.
#ifndef NNM_BOARD_PLANNER_DRIVER_H
#define NNM_BOARD_PLANNER_DRIVER_H

#include <cstddef>
#include <cstdint>

#include "icount.h"
#include "plan_lists.h"
#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"

// A planner that does nothing: the same calls cost only the harness.
class NnmBoardNullPlanner : public tflite::MicroMemoryPlanner {
 public:
  TfLiteStatus Init(unsigned char*, int) override { return kTfLiteOk; }
  TfLiteStatus AddBuffer(int, int, int) override { return kTfLiteOk; }
  size_t GetMaximumMemorySize() override { return 0; }
  int GetBufferCount() override { return 0; }
  TfLiteStatus GetOffsetForBuffer(int, int* offset) override {
    *offset = 0;
    return kTfLiteOk;
  }
  bool preserves_all_tensors() const override { return false; }
};

// The measured sequence over `scratch`. noipa: no inlining, cloning or
// devirtualization across this call, so the planner is called through its
// vtable, as in TFLite Micro's allocator.
__attribute__((noipa)) inline uint32_t nnm_board_plan(tflite::MicroMemoryPlanner& planner, unsigned char* scratch,
                                                      int scratch_size, const nnm_board_buffer* list, int count,
                                                      int* offsets, size_t* arena, bool* ok_out) {
  bool ok = true;
  nnm_board_count_start();
  ok = ok && planner.Init(scratch, scratch_size) == kTfLiteOk;
  for (int i = 0; i < count; ++i) {
    ok = ok && planner.AddBuffer(list[i].size, list[i].first_use, list[i].last_use) == kTfLiteOk;
  }
  *arena = planner.GetMaximumMemorySize();
  for (int i = 0; i < count; ++i) {
    ok = ok && planner.GetOffsetForBuffer(i, &offsets[i]) == kTfLiteOk;
  }
  const uint32_t instructions = nnm_board_count_stop();
  *ok_out = ok;
  return instructions;
}

#endif
