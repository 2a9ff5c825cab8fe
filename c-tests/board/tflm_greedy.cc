// Drives TensorFlow Lite Micro's GreedyMemoryPlanner over the two lists of
// plan_lists.h on an emulated board and counts the instructions of
//   Init(scratch) + AddBuffer for every buffer + GetMaximumMemorySize
//   + GetOffsetForBuffer for every buffer
// (through the MicroMemoryPlanner base class, virtual calls that the compiler
// cannot resolve, as in TFLite Micro's allocator; the planner is constructed
// before the count starts). Prints the count, the arena size and every
// offset, and exits non-zero when a call fails or two buffers live at the
// same time in overlapping bytes. The same calls on a planner that does
// nothing give the harness's own share of the count (loops, calls, checks),
// printed as "harness".
//
// Built by measure-tflm-greedy.sh against a TFLite Micro checkout; no TFLite
// Micro code is in this repository. Run with -icount shift=0 for the counts.
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "icount.h"
#include "planner_driver.h"
#include "plan_lists.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"

// TFLite Micro's logging, which the planner calls on errors (and in
// PrintMemoryPlan); micro_log.cc is not linked.
void MicroPrintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::putchar('\n');
}

namespace {

constexpr int kMaxBuffers = 100;

// GreedyMemoryPlanner::per_buffer_size() is 40 bytes on these targets.
alignas(16) unsigned char g_scratch[kMaxBuffers * 64];
int g_offsets[kMaxBuffers];

bool measure(const char* name, const nnm_board_buffer* list, int count) {
  const int scratch_size = count * static_cast<int>(tflite::GreedyMemoryPlanner::per_buffer_size());
  if (count > kMaxBuffers || scratch_size > static_cast<int>(sizeof g_scratch)) {
    std::printf("%s: too many buffers\n", name);
    return false;
  }
  NnmBoardNullPlanner null_planner;
  size_t ignored_arena = 0;
  bool ignored_ok = false;
  const uint32_t harness =
      nnm_board_plan(null_planner, g_scratch, scratch_size, list, count, g_offsets, &ignored_arena, &ignored_ok);

  tflite::GreedyMemoryPlanner greedy;
  size_t arena = 0;
  bool ok = false;
  const uint32_t instructions = nnm_board_plan(greedy, g_scratch, scratch_size, list, count, g_offsets, &arena, &ok);

  std::printf("%s: buffers %d instructions %lu (harness %lu) arena %lu scratch %d\n", name, count,
              static_cast<unsigned long>(instructions), static_cast<unsigned long>(harness),
              static_cast<unsigned long>(arena), scratch_size);
  std::printf("%s offsets:", name);
  for (int i = 0; i < count; ++i) {
    std::printf(" %d", g_offsets[i]);
  }
  std::printf("\n");
  if (!ok) {
    std::printf("%s: a planner call failed\n", name);
    return false;
  }
  // The plan itself: in the arena, and no two buffers live at the same step
  // share a byte.
  for (int i = 0; i < count; ++i) {
    if (g_offsets[i] < 0 || static_cast<size_t>(g_offsets[i] + list[i].size) > arena) {
      std::printf("%s: buffer %d outside the arena\n", name, i);
      return false;
    }
    for (int j = 0; j < i; ++j) {
      const bool same_time = list[i].first_use <= list[j].last_use && list[j].first_use <= list[i].last_use;
      const bool same_bytes =
          g_offsets[i] < g_offsets[j] + list[j].size && g_offsets[j] < g_offsets[i] + list[i].size;
      if (same_time && same_bytes) {
        std::printf("%s: buffers %d and %d overlap\n", name, j, i);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main() {
  std::printf("GreedyMemoryPlanner::per_buffer_size() %lu\n",
              static_cast<unsigned long>(tflite::GreedyMemoryPlanner::per_buffer_size()));
  bool ok = measure("person_detect", nnm_board_list_person_detect, NNM_BOARD_LIST_PERSON_DETECT_COUNT);
  ok = measure("list_100", nnm_board_list_100, NNM_BOARD_LIST_100_COUNT) && ok;
  return ok ? 0 : 1;
}
