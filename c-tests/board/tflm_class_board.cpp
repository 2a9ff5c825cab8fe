// tflite::NnmemMemoryPlanner on the board, over the embedded build
// (-DNNMEM_NO_HEAP, -fno-exceptions -fno-rtti, as TFLite Micro builds), on
// the stand-in TFLite Micro base class of c-tests/compat/tflm: TFLite
// Micro's planner test figures through the base class, its own plans of the
// two lists of plan_lists.h, the scratch limits, linear's offline refusal,
// the heap algorithms refused, and a planner placed in a buffer and never
// destroyed. Exits 0 when every check passes.
#include <nnmem/compat/tflm/nnmem_memory_planner.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>

#include "plan_lists.h"
#include "tflm_offsets.h"

static int failures = 0;
static char g_log[512];

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
      failures++;                                                     \
    }                                                                 \
  } while (0)

// TFLite Micro's logging function: keeps the last line printed.
void MicroPrintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_log, sizeof g_log, format, args);
  va_end(args);
}

// Built with TF_LITE_STRIP_ERROR_STRINGS the class prints nothing: a
// message it would print must then be absent, and the log stays empty.
#if defined(TF_LITE_STRIP_ERROR_STRINGS)
static bool logged(const char*) { return g_log[0] == '\0'; }
#else
static bool logged(const char* text) { return std::strstr(g_log, text) != nullptr; }
#endif

// The arena's free part, as MicroAllocator hands it to Init().
alignas(16) static unsigned char g_scratch[4096];

struct Buffer {
  int size, first, last, offline;
};

static void add_all(tflite::MicroMemoryPlanner& p, const Buffer* b, int n) {
  for (int i = 0; i < n; ++i) {
    CHECK((b[i].offline < 0 ? p.AddBuffer(b[i].size, b[i].first, b[i].last)
                            : p.AddBuffer(b[i].size, b[i].first, b[i].last, b[i].offline)) == kTfLiteOk);
  }
}

static int offset_of(tflite::MicroMemoryPlanner& p, int i) {
  int offset = -1;
  CHECK(p.GetOffsetForBuffer(i, &offset) == kTfLiteOk);
  return offset;
}

static void greedy_planner_tests() {
  tflite::NnmemMemoryPlanner planner;
  tflite::MicroMemoryPlanner& base = planner;
  static const Buffer medium[] = {{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}, {40, 3, 4, -1}, {50, 0, 1, -1}};
  static const int want[] = {50, 70, 40, 0, 0};
  CHECK(base.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  add_all(base, medium, 5);
  for (int i = 0; i < 5; ++i) CHECK(offset_of(base, i) == want[i]);
  CHECK(base.GetMaximumMemorySize() == 90u);
  CHECK(!planner.DoAnyBuffersOverlap());
  base.PrintMemoryPlan();
  CHECK(logged("5 buffers, peak 90 B"));

  // TestSmallScratch: 40 B holds one buffer.
  alignas(4) unsigned char small[40];
  CHECK(base.Init(small, sizeof small) == kTfLiteOk);
  CHECK(base.AddBuffer(100, 0, 1) == kTfLiteOk);
  CHECK(base.AddBuffer(50, 2, 3) == kTfLiteError);
  CHECK(logged("20 B missing"));
  CHECK(base.GetBufferCount() == 1 && base.GetMaximumMemorySize() == 100u);
}

static void lists_as_tflite_micro_plans_them() {
  tflite::NnmemMemoryPlanner planner;
  tflite::MicroMemoryPlanner& base = planner;
  CHECK(base.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  for (int i = 0; i < NNM_BOARD_LIST_100_COUNT; ++i) {
    const nnm_board_buffer& b = nnm_board_list_100[i];
    CHECK(base.AddBuffer(b.size, b.first_use, b.last_use) == kTfLiteOk);
  }
  for (int i = 0; i < NNM_BOARD_LIST_100_COUNT; ++i) CHECK(offset_of(base, i) == static_cast<int>(tflm_offsets_100[i]));
  CHECK(base.GetMaximumMemorySize() == TFLM_ARENA_100);
  CHECK(base.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  for (int i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; ++i) {
    const nnm_board_buffer& b = nnm_board_list_person_detect[i];
    CHECK(base.AddBuffer(b.size, b.first_use, b.last_use) == kTfLiteOk);
  }
  CHECK(base.GetMaximumMemorySize() == TFLM_ARENA_PERSON_DETECT);
  for (int i = 0; i < NNM_BOARD_LIST_PERSON_DETECT_COUNT; ++i) {
    CHECK(offset_of(base, i) == static_cast<int>(tflm_offsets_person_detect[i]));
  }
}

static void offline_and_linear() {
  // micro_allocator_test.cc, OfflinePlannerOfflineOnline: t2 at 96, t4 at 48.
  static const Buffer b[] = {{48, 0, 1, 0}, {48, -1, 1, 48}, {48, 1, 2, -1}, {48, 2, 2, 0}, {48, 2, 2, -1}};
  tflite::NnmemMemoryPlanner planner;
  CHECK(planner.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  add_all(planner, b, 5);
  CHECK(offset_of(planner, 2) == 96 && offset_of(planner, 4) == 48);
  CHECK(planner.GetMaximumMemorySize() == 144u);

  tflite::NnmemMemoryPlanner linear(NNM_ALGORITHM_LINEAR);
  CHECK(linear.preserves_all_tensors());
  CHECK(linear.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  CHECK(linear.AddBuffer(16, 0, 1, 0) == kTfLiteOk);
  CHECK(linear.AddBuffer(16, 0, 1, 0) == kTfLiteError);
  CHECK(logged("shares bytes with offline buffer 0"));
  CHECK(linear.AddBuffer(8, 0, 1) == kTfLiteOk && offset_of(linear, 1) == 16);

  tflite::NnmemMemoryPlanner by_size(NNM_ALGORITHM_SIZE_FIRST_FIT);
  CHECK(by_size.Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  add_all(by_size, b, 5);
  CHECK(!by_size.DoAnyBuffersOverlap());
}

static void heap_algorithms_are_refused() {
  tflite::NnmemMemoryPlanner exact(NNM_ALGORITHM_EXACT);
  CHECK(logged("NNMEM_NO_HEAP leaves out"));
  CHECK(exact.Init(g_scratch, sizeof g_scratch) == kTfLiteError);
  CHECK(exact.AddBuffer(8, 0, 1) == kTfLiteError && exact.GetMaximumMemorySize() == 0);
}

static void placed_and_never_destroyed() {
  // As MicroAllocator does: placement new in the arena, never destroyed.
  alignas(tflite::NnmemMemoryPlanner) static unsigned char place[sizeof(tflite::NnmemMemoryPlanner)];
  tflite::MicroMemoryPlanner* planner = new (place) tflite::NnmemMemoryPlanner();
  CHECK(planner->Init(g_scratch, sizeof g_scratch) == kTfLiteOk);
  CHECK(planner->AddBuffer(32, 0, 0) == kTfLiteOk && planner->GetMaximumMemorySize() == 32u);
}

int main() {
  greedy_planner_tests();
  lists_as_tflite_micro_plans_them();
  offline_and_linear();
  heap_algorithms_are_refused();
  placed_and_never_destroyed();
  std::printf("tflm_class_board: %s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
