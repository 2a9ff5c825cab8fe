// Instructions nnmem takes to plan on the board, counted as
// measure-tflm-greedy.sh counts TensorFlow Lite Micro's GreedyMemoryPlanner
// (tflm_greedy.cc), with the same driver (planner_driver.h) over the
// stand-in base class of c-tests/compat/tflm. Then the same work through
// the C API (nnm_scratch_planner_init, _add_buffer, _plan, _get_offset).
// Run with -icount shift=0 (c-tests/board/run.sh --icount); prints one line
// per list and interface, and exits non-zero when the plan is not TFLite
// Micro's (tflm_offsets.h).
#include <nnmem/compat/tflm/nnmem_memory_planner.h>

#include <cstdint>
#include <cstdio>

#include "icount.h"
#include "planner_driver.h"
#include "plan_lists.h"
#include "tflm_offsets.h"

void MicroPrintf(const char*, ...) {}

namespace {

constexpr int kMaxBuffers = 100;
alignas(16) unsigned char g_scratch[kMaxBuffers * 64];
int g_offsets[kMaxBuffers];

__attribute__((noipa)) uint32_t plan_c(const nnm_board_buffer* list, int count, size_t scratch_size, uint32_t* arena,
                                       bool* ok_out) {
  bool ok = true;
  nnm_scratch_planner* p = nullptr;
  nnm_board_count_start();
  ok = ok && nnm_scratch_planner_init(g_scratch, scratch_size, NNM_ALGORITHM_TFLM, &p) == NNM_OK;
  for (int i = 0; i < count; ++i) {
    ok = ok && nnm_scratch_planner_add_buffer(p, static_cast<uint32_t>(list[i].size), list[i].first_use,
                                              list[i].last_use, nullptr) == NNM_OK;
  }
  ok = ok && nnm_scratch_planner_plan(p, arena) == NNM_OK;
  for (int i = 0; i < count; ++i) {
    uint32_t at = 0;
    ok = ok && nnm_scratch_planner_get_offset(p, static_cast<size_t>(i), &at) == NNM_OK;
    g_offsets[i] = static_cast<int>(at);
  }
  const uint32_t instructions = nnm_board_count_stop();
  *ok_out = ok;
  return instructions;
}

bool same_as_tflm(const uint32_t* want, int count) {
  for (int i = 0; i < count; ++i) {
    if (static_cast<uint32_t>(g_offsets[i]) != want[i]) return false;
  }
  return true;
}

bool measure(const char* name, const nnm_board_buffer* list, int count, const uint32_t* want, uint32_t want_arena) {
  const int scratch_size = static_cast<int>(NNM_SCRATCH_PLANNER_BYTES(static_cast<size_t>(count)));
  NnmBoardNullPlanner null_planner;
  size_t arena = 0;
  bool ok = false;
  const uint32_t harness = nnm_board_plan(null_planner, g_scratch, scratch_size, list, count, g_offsets, &arena, &ok);
  tflite::NnmemMemoryPlanner nnmem;
  const uint32_t instructions = nnm_board_plan(nnmem, g_scratch, scratch_size, list, count, g_offsets, &arena, &ok);
  ok = ok && arena == want_arena && same_as_tflm(want, count);
  std::printf("%s: class: buffers %d instructions %lu (harness %lu) arena %lu scratch %d%s\n", name, count,
              static_cast<unsigned long>(instructions), static_cast<unsigned long>(harness),
              static_cast<unsigned long>(arena), scratch_size, ok ? "" : " FAILED");
  uint32_t c_arena = 0;
  bool c_ok = false;
  const uint32_t c_instructions = plan_c(list, count, static_cast<size_t>(scratch_size), &c_arena, &c_ok);
  c_ok = c_ok && c_arena == want_arena && same_as_tflm(want, count);
  std::printf("%s: c-api: buffers %d instructions %lu arena %lu%s\n", name, count,
              static_cast<unsigned long>(c_instructions), static_cast<unsigned long>(c_arena), c_ok ? "" : " FAILED");
  return ok && c_ok;
}

}  // namespace

int main() {
  bool ok = measure("person_detect", nnm_board_list_person_detect, NNM_BOARD_LIST_PERSON_DETECT_COUNT,
                    tflm_offsets_person_detect, TFLM_ARENA_PERSON_DETECT);
  ok = measure("list_100", nnm_board_list_100, NNM_BOARD_LIST_100_COUNT, tflm_offsets_100, TFLM_ARENA_100) && ok;
  return ok ? 0 : 1;
}
