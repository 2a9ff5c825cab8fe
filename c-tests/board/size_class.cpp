// The TFLite Micro class with the library under it, as TFLite Micro's
// allocator uses it: placed in memory, driven through the base class.
// Linked with --gc-sections for scripts/board-bench.sh (code_size.py counts
// the class's code and vtable and what comes from libnnmem.a); run, it
// exits with 0 when the plan is TFLite Micro's.
#include <nnmem/compat/tflm/nnmem_memory_planner.h>

#include <new>

#include "plan_lists.h"

void MicroPrintf(const char*, ...) {}

alignas(16) static unsigned char g_scratch[2048];
alignas(tflite::NnmemMemoryPlanner) static unsigned char g_place[sizeof(tflite::NnmemMemoryPlanner)];

int main() {
  tflite::MicroMemoryPlanner* planner = new (g_place) tflite::NnmemMemoryPlanner();
  if (planner->Init(g_scratch, sizeof g_scratch) != kTfLiteOk) return 1;
  for (int i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; ++i) {
    const nnm_board_buffer& b = nnm_board_list_person_detect[i];
    if (planner->AddBuffer(b.size, b.first_use, b.last_use) != kTfLiteOk) return 2;
  }
  int sum = 0;
  for (int i = 0; i < planner->GetBufferCount(); ++i) {
    int offset = 0;
    if (planner->GetOffsetForBuffer(i, &offset) != kTfLiteOk) return 3;
    sum += offset;
  }
  return planner->GetMaximumMemorySize() == 55296u && sum > 0 ? 0 : 4;
}
