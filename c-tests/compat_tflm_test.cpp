// tflite::NnmemMemoryPlanner (<nnmem/compat/tflm/nnmem_memory_planner.h>)
// as TFLite Micro drives a MicroMemoryPlanner: through the base class, with
// the figures of TFLite Micro's own tests (tensorflow/tflite-micro, HEAD of
// 2026-08): tensorflow/lite/micro/memory_planner/greedy_memory_planner_test.cc
// and the offline-planning cases of tensorflow/lite/micro/micro_allocator_test.cc,
// whose buffers are those TFLite Micro's allocator hands its planner (tensors
// as AllocationInfoBuilder marks their lifetimes: subgraph inputs from step 0,
// operator k at step k + 1, tensors only read from step -1).
//
// Built as C++11, 14, 17 and 20 against compat/tflm/, a stand-in for the
// TFLite Micro headers the compat header includes.
#include <nnmem/compat/tflm/nnmem_memory_planner.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "nnm_check.h"

// What the planner printed since the last take_log().
static std::string g_log;

void MicroPrintf(const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  g_log += line;
  g_log += '\n';
}

static std::string take_log() {
  std::string log;
  log.swap(g_log);
  return log;
}

static bool logged(const std::string& log, const char* text) { return log.find(text) != std::string::npos; }

struct Buffer {
  int size;
  int first;
  int last;
  int offline;  // -1: planned online (TFLite Micro's kOnlinePlannedBuffer)
};

// Scratch buffers for planners, as MicroAllocator hands its planner the
// free part of the arena: a ring of 16 KB blocks, aligned as the arena's.
static unsigned char* fresh_scratch() {
  alignas(16) static unsigned char ring[8][16384];
  static size_t next = 0;
  return ring[next++ % 8];
}

// Inits a planner that has no scratch yet, then adds the buffers through the
// base class, as TFLite Micro's CreatePlan does.
static void add_all(tflite::NnmemMemoryPlanner& planner, const std::vector<Buffer>& buffers) {
  if (planner.planner() == nullptr) CHECK(planner.Init(fresh_scratch(), 16384) == kTfLiteOk);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    if (b.offline == -1) {
      CHECK(planner.AddBuffer(b.size, b.first, b.last) == kTfLiteOk);
    } else {
      CHECK(planner.AddBuffer(b.size, b.first, b.last, b.offline) == kTfLiteOk);
    }
  }
  CHECK(planner.GetBufferCount() == static_cast<int>(buffers.size()));
}

static std::vector<int> offsets_of(tflite::MicroMemoryPlanner& planner) {
  std::vector<int> offsets;
  for (int i = 0; i < planner.GetBufferCount(); ++i) {
    int offset = -1;
    CHECK(planner.GetOffsetForBuffer(i, &offset) == kTfLiteOk);
    offsets.push_back(offset);
  }
  return offsets;
}

// Plans `buffers` with TFLite Micro's greedy algorithm (the default) and
// checks the offsets and the arena size against TFLite Micro's.
static void expect_greedy(const std::vector<Buffer>& buffers, const std::vector<int>& offsets, size_t arena) {
  static unsigned char scratch[4096];  // the tests' kScratchBufferSize
  tflite::NnmemMemoryPlanner planner;
  CHECK(planner.Init(scratch, sizeof scratch) == kTfLiteOk);
  add_all(planner, buffers);
  CHECK(offsets_of(planner) == offsets);
  CHECK(planner.GetMaximumMemorySize() == arena);
  CHECK(!planner.DoAnyBuffersOverlap());
  CHECK(take_log().empty());
}

// greedy_memory_planner_test.cc
static void test_greedy_planner_tests() {
  // TestGreedyBasics
  expect_greedy({{10, 0, 1, -1}, {20, 2, 3, -1}}, {0, 0}, 20);
  // TestGreedyMedium
  expect_greedy({{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}, {40, 3, 4, -1}, {50, 0, 1, -1}}, {50, 70, 40, 0, 0},
                90);
  // EXACT: the same buffers in 80 B, their lower bound (60 B live at steps 0
  // and 1 plus 20 B at step 1).
  tflite::NnmemMemoryPlanner medium(NNM_ALGORITHM_EXACT);
  add_all(medium, {{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}, {40, 3, 4, -1}, {50, 0, 1, -1}});
  CHECK(medium.GetMaximumMemorySize() == 80u);
  CHECK(!medium.DoAnyBuffersOverlap());
  // TestOverlapCase: an arena of 120 B (its offsets are not stated; these are
  // the greedy walk's: 100 B at 0, 50 B at 0, 20 B above the 100 B one).
  expect_greedy({{100, 0, 1, -1}, {50, 2, 3, -1}, {20, 1, 2, -1}}, {0, 0, 100}, 120);

  // TestPersonDetectionModel: the 250 KB MobileNet of the person detection
  // example; TFLite Micro only requires less than the sum of the sizes
  // (241,027 B) and no overlap. EXACT needs no more than TFLM.
  const std::vector<Buffer> person = {
      {9216, 0, 29, -1},  {3, 28, 29, -1},    {256, 27, 28, -1},  {2304, 26, 27, -1}, {2304, 25, 26, -1},
      {2304, 24, 25, -1}, {1152, 23, 24, -1}, {4608, 22, 23, -1}, {4608, 21, 22, -1}, {4608, 20, 21, -1},
      {4608, 19, 20, -1}, {4608, 18, 19, -1}, {4608, 17, 18, -1}, {4608, 16, 17, -1}, {4608, 15, 16, -1},
      {4608, 14, 15, -1}, {4608, 13, 14, -1}, {4608, 12, 13, -1}, {2304, 11, 12, -1}, {9216, 10, 11, -1},
      {9216, 9, 10, -1},  {9216, 8, 9, -1},   {4608, 7, 8, -1},   {18432, 6, 7, -1},  {18432, 5, 6, -1},
      {18432, 4, 5, -1},  {9216, 3, 4, -1},   {36864, 2, 3, -1},  {18432, 1, 2, -1},  {18432, 0, 1, -1}};
  tflite::NnmemMemoryPlanner greedy;
  add_all(greedy, person);
  greedy.PrintMemoryPlan();
  CHECK(logged(take_log(), "30 buffers, peak "));
  CHECK(!greedy.DoAnyBuffersOverlap());
  CHECK(greedy.GetMaximumMemorySize() < 241027u);
  tflite::NnmemMemoryPlanner exact(NNM_ALGORITHM_EXACT);
  add_all(exact, person);
  CHECK(!exact.DoAnyBuffersOverlap());
  CHECK(exact.GetMaximumMemorySize() <= greedy.GetMaximumMemorySize());
  // The lower bound: 9,216 B live throughout plus 36,864 + 18,432 B at step 2.
  uint32_t bound = 0;
  CHECK_OK(nnm_scratch_planner_lower_bound(exact.planner(), &bound));
  CHECK(bound == 9216 + 36864 + 18432);
  CHECK(exact.GetMaximumMemorySize() == bound);
  CHECK(take_log().empty());

  // TestSmallScratch: 40 B of scratch holds one buffer (12 B of header and
  // 24 B per buffer, at any address; TFLite Micro: 40 B per buffer); the
  // message gives the bytes missing.
  alignas(4) unsigned char small[40];
  tflite::NnmemMemoryPlanner planner;
  CHECK(planner.Init(small, sizeof small) == kTfLiteOk);
  CHECK(planner.AddBuffer(100, 0, 1) == kTfLiteOk);
  CHECK(planner.AddBuffer(50, 2, 3) == kTfLiteError);
  CHECK(logged(take_log(), "scratch of 40 B holds 1 buffers; one more needs 60 B (20 B missing)"));
  CHECK(planner.GetBufferCount() == 1);
  CHECK(planner.GetMaximumMemorySize() == 100u);
  // Every algorithm keeps its buffers in the scratch, the heap ones too.
  tflite::NnmemMemoryPlanner any(NNM_ALGORITHM_EXACT);
  CHECK(any.Init(small, sizeof small) == kTfLiteOk);
  CHECK(any.AddBuffer(100, 0, 1) == kTfLiteOk && any.AddBuffer(50, 2, 3) == kTfLiteError);
  CHECK(logged(take_log(), "20 B missing"));
  // Init without a scratch, as GreedyMemoryPlanner allows: no buffer fits.
  CHECK(any.Init(nullptr, 0) == kTfLiteOk);
  CHECK(any.GetBufferCount() == 0 && any.GetMaximumMemorySize() == 0);
  CHECK(any.AddBuffer(8, 0, 1) == kTfLiteError);
  CHECK(logged(take_log(), "no scratch: Init() gave 0 B"));
  // A negative size is refused; a scratch too small for the header is
  // accepted, and then holds nothing.
  CHECK(any.Init(small, -4) == kTfLiteError);
  CHECK(logged(take_log(), "scratch buffer size -4 is negative"));
  CHECK(any.AddBuffer(8, 0, 1) == kTfLiteError);
  CHECK(logged(take_log(), "no scratch: Init() gave 0 B"));
  CHECK(any.Init(small, 8) == kTfLiteOk && any.AddBuffer(8, 0, 1) == kTfLiteError);
  CHECK(logged(take_log(), "no scratch: Init() gave 8 B"));
  // The arena size stays known once the scratch is taken back, as
  // MicroAllocator asks for it after reusing the scratch.
  tflite::NnmemMemoryPlanner kept;
  unsigned char* lent = fresh_scratch();
  CHECK(kept.Init(lent, 16384) == kTfLiteOk && kept.AddBuffer(64, 0, 1) == kTfLiteOk);
  CHECK(kept.GetMaximumMemorySize() == 64u);
  std::memset(lent, 0xA5, 16384);
  CHECK(kept.GetMaximumMemorySize() == 64u);
}

// micro_allocator_test.cc, the offline-planning cases: 48 B tensors, offline
// offsets from the model's metadata (-1: online). The arena sizes are the
// highest offset + 48.
static void test_offline_planning_allocator_tests() {
  // OfflinePlannerBranchesAllOnline: t0 -> op0 -> t1, t0 -> op1 -> t2,
  // (t1, t2) -> op2 -> t3; every offset -1.
  expect_greedy({{48, 0, 2, -1}, {48, 1, 3, -1}, {48, 2, 3, -1}, {48, 3, 3, -1}}, {0, 96, 48, 0}, 144);
  // OfflinePlannerBasic: a chain t0 -> t1 -> t2 -> t3 at 0, 48, 0, 48.
  expect_greedy({{48, 0, 1, 0}, {48, 1, 2, 48}, {48, 2, 3, 0}, {48, 3, 3, 48}}, {0, 48, 0, 48}, 96);
  // OfflinePlannerOverlappingAllocation: (t0, t1 read only) -> op0 -> t2 ->
  // op1 -> t3; t0 and t1 both at 0 while both live (trusted, as TFLite Micro
  // trusts an offline plan), t2 at 48, t3 online.
  const std::vector<Buffer> overlapping = {{48, 0, 1, 0}, {48, -1, 1, 0}, {48, 1, 2, 48}, {48, 2, 2, -1}};
  tflite::NnmemMemoryPlanner planner;
  add_all(planner, overlapping);
  CHECK(offsets_of(planner) == std::vector<int>({0, 0, 48, 0}));
  CHECK(planner.GetMaximumMemorySize() == 96u);
  // TFLite Micro's check reports the shared bytes, both ways round.
  CHECK(planner.DoAnyBuffersOverlap());
  const std::string log = take_log();
  CHECK(logged(log, "Overlap: 0 (0=>1, 0->48) vs 1 (-1=>1, 0->48)"));
  CHECK(logged(log, "Overlap: 1 (-1=>1, 0->48) vs 0 (0=>1, 0->48)"));
  // OfflinePlannerOfflineOnline: (t0, t1 read only) -> op0 -> t2 -> op1 ->
  // (t3, t4); t0, t1, t3 at 0, 48, 0; t2 and t4 online.
  expect_greedy({{48, 0, 1, 0}, {48, -1, 1, 48}, {48, 1, 2, -1}, {48, 2, 2, 0}, {48, 2, 2, -1}}, {0, 48, 96, 0, 48},
                144);
  // Other algorithms keep the offline offsets and plan around them.
  tflite::NnmemMemoryPlanner exact(NNM_ALGORITHM_EXACT);
  add_all(exact, {{48, 0, 1, 0}, {48, -1, 1, 48}, {48, 1, 2, -1}, {48, 2, 2, 0}, {48, 2, 2, -1}});
  const std::vector<int> o = offsets_of(exact);
  CHECK(o[0] == 0 && o[1] == 48 && o[3] == 0);
  CHECK(!exact.DoAnyBuffersOverlap());
  CHECK(exact.GetMaximumMemorySize() == 144u);
}

// TFLite Micro's lifetimes: never used (-1, -1) tensors live at step -1
// together, so 100 B and 50 B never used and 30 B at steps 0 and 1 take
// 0, 100 and 0 with an arena of 150 B in TFLite Micro; other algorithms let
// never-used buffers share memory with anything (they are planned at 0), and
// the arena still covers every tensor's bytes: 100 B, not 30.
static void test_tflite_micro_lifetimes() {
  const std::vector<Buffer> b = {{100, -1, -1, -1}, {50, -1, -1, -1}, {30, 0, 1, -1}};
  expect_greedy(b, {0, 100, 0}, 150);
  tflite::NnmemMemoryPlanner exact(NNM_ALGORITHM_EXACT);
  add_all(exact, b);
  CHECK(offsets_of(exact) == std::vector<int>({0, 0, 0}));
  CHECK(exact.GetMaximumMemorySize() == 100u);
  // Read but never produced (-1, k): live from before the first step.
  expect_greedy({{16, -1, 1, -1}, {8, -1, -1, -1}, {8, 0, 0, -1}}, {0, 16, 16}, 24);
}

// Buffers added after a query: the next query plans again, as
// GreedyMemoryPlanner does; the offsets are a fresh planner's.
static void test_add_after_a_query() {
  const uint32_t algorithms[] = {NNM_ALGORITHM_TFLM, NNM_ALGORITHM_EXACT, NNM_ALGORITHM_SIZE_BEST_FIT};
  for (uint32_t algorithm : algorithms) {
    tflite::NnmemMemoryPlanner planner(algorithm);
    add_all(planner, {{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}});
    const size_t before = planner.GetMaximumMemorySize();
    CHECK(before > 0);
    // Smaller than every buffer so far (TFLM walks only it), then larger.
    CHECK(planner.AddBuffer(5, 0, 3) == kTfLiteOk);
    CHECK(planner.GetMaximumMemorySize() >= before);
    CHECK(planner.AddBuffer(40, 3, 4) == kTfLiteOk);
    CHECK(planner.AddBuffer(8, 4, 4, 64) == kTfLiteOk);
    tflite::NnmemMemoryPlanner fresh(algorithm);
    add_all(fresh, {{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}, {5, 0, 3, -1}, {40, 3, 4, -1}, {8, 4, 4, 64}});
    CHECK(offsets_of(planner) == offsets_of(fresh));
    CHECK(planner.GetMaximumMemorySize() == fresh.GetMaximumMemorySize());
    CHECK(!planner.DoAnyBuffersOverlap());
  }
  // TestGreedyMedium's buffers, a query after each: TFLite Micro's figures.
  tflite::NnmemMemoryPlanner planner;
  CHECK(planner.Init(fresh_scratch(), 16384) == kTfLiteOk);
  const std::vector<Buffer> medium = {{10, 0, 1, -1}, {20, 1, 2, -1}, {30, 2, 3, -1}, {40, 3, 4, -1}, {50, 0, 1, -1}};
  for (const Buffer& b : medium) {
    CHECK(planner.AddBuffer(b.size, b.first, b.last) == kTfLiteOk);
    CHECK(planner.GetMaximumMemorySize() > 0);
  }
  CHECK(offsets_of(planner) == std::vector<int>({50, 70, 40, 0, 0}));
  CHECK(planner.GetMaximumMemorySize() == 90u);
  // Init starts over.
  CHECK(planner.Init(fresh_scratch(), 16384) == kTfLiteOk);
  CHECK(planner.GetBufferCount() == 0 && planner.GetMaximumMemorySize() == 0);
  CHECK(take_log().empty());
}

// DoAnyBuffersOverlap as TFLite Micro's: offsets and inclusive steps, a
// buffer ending at offset + size, so a zero-size buffer strictly inside a
// live buffer overlaps it, one at its start or end does not.
static void test_do_any_buffers_overlap() {
  struct Case {
    std::vector<Buffer> buffers;
    bool overlap;
  };
  const Case cases[] = {
      {{{100, 0, 1, 0}, {0, 0, 1, 50}}, true},    // zero size inside
      {{{100, 0, 1, 0}, {0, 1, 2, 99}}, true},    // inside, sharing step 1
      {{{100, 0, 1, 0}, {0, 0, 1, 0}}, false},    // at its start
      {{{100, 0, 1, 0}, {0, 0, 1, 100}}, false},  // at its end
      {{{100, 0, 1, 0}, {0, 2, 3, 50}}, false},   // not live together
      {{{0, 0, 1, 8}, {0, 0, 1, 8}}, false},      // two zero-size at one offset
      {{{64, 0, 3, 0}, {64, 2, 5, 32}}, true},    // an offline plan sharing bytes
      {{{64, -1, -1, 0}, {8, -1, -1, 60}}, true}, // never used: both at step -1
      {{{64, -1, -1, 0}, {8, 0, 3, 60}}, false},
  };
  for (const Case& c : cases) {
    const uint32_t algorithms[] = {NNM_ALGORITHM_TFLM, NNM_ALGORITHM_AUTO};
    for (uint32_t algorithm : algorithms) {
      tflite::NnmemMemoryPlanner planner(algorithm);
      add_all(planner, c.buffers);
      CHECK(planner.DoAnyBuffersOverlap() == c.overlap);
      const std::string log = take_log();
      CHECK(logged(log, "Overlap: 0 (") == c.overlap && logged(log, "Overlap: 1 (") == c.overlap);
    }
  }
  tflite::NnmemMemoryPlanner planner;
  add_all(planner, {{100, 0, 1, 0}, {0, 0, 1, 50}});
  CHECK(planner.DoAnyBuffersOverlap());
  const std::string log = take_log();
  CHECK(logged(log, "Overlap: 0 (0=>1, 0->100) vs 1 (0=>1, 50->50)\n"));
  CHECK(logged(log, "Overlap: 1 (0=>1, 50->50) vs 0 (0=>1, 0->100)\n"));
  // An empty planner has nothing to overlap.
  tflite::NnmemMemoryPlanner empty;
  CHECK(empty.Init(fresh_scratch(), 16384) == kTfLiteOk);
  CHECK(!empty.DoAnyBuffersOverlap() && empty.GetMaximumMemorySize() == 0 && empty.GetBufferCount() == 0);
}

// What GreedyMemoryPlanner accepts and nnmem refuses, and TFLite Micro's own
// errors: kTfLiteError, a message through MicroPrintf, nothing added.
static void test_errors() {
  tflite::NnmemMemoryPlanner planner;
  CHECK(planner.AddBuffer(16, 0, 1) == kTfLiteError);
  CHECK(logged(take_log(), "Init() first"));
  CHECK(planner.Init(fresh_scratch(), 16384) == kTfLiteOk);
  CHECK(planner.AddBuffer(16, 0, 1) == kTfLiteOk);
  CHECK(planner.AddBuffer(-1, 0, 1) == kTfLiteError);
  CHECK(logged(take_log(), "nnmem: buffer size -1"));
  CHECK(planner.AddBuffer(8, 3, 2) == kTfLiteError);
  CHECK(logged(take_log(), "lifetime first_use 3, last_use 2 is not allowed"));
  CHECK(planner.AddBuffer(8, -2, 2) == kTfLiteError);
  CHECK(logged(take_log(), "lifetime first_use -2, last_use 2 is not allowed"));
  CHECK(planner.AddBuffer(8, 0, 1, -2) == kTfLiteError);
  CHECK(logged(take_log(), "offline offset -2"));
  CHECK(planner.GetBufferCount() == 1);
  int offset = 77;
  CHECK(planner.GetOffsetForBuffer(1, &offset) == kTfLiteError);
  CHECK(logged(take_log(), "buffer index 1 is outside range 0 to 1"));
  CHECK(planner.GetOffsetForBuffer(-1, &offset) == kTfLiteError);
  CHECK(logged(take_log(), "buffer index -1 is outside range 0 to 1"));
  CHECK(planner.GetOffsetForBuffer(0, nullptr) == kTfLiteError);
  CHECK(offset == 77);
  CHECK(planner.GetOffsetForBuffer(0, &offset) == kTfLiteOk && offset == 0);
  take_log();

  // An unknown algorithm: said once, and every call fails.
  tflite::NnmemMemoryPlanner unknown(1000);
  CHECK(logged(take_log(), "unknown algorithm value 1000"));
  CHECK(unknown.planner() == nullptr);
  CHECK(unknown.AddBuffer(8, 0, 1) == kTfLiteError);
  CHECK(unknown.GetMaximumMemorySize() == 0 && unknown.GetBufferCount() == 0);
  CHECK(unknown.GetOffsetForBuffer(0, &offset) == kTfLiteError);
  CHECK(unknown.Init(fresh_scratch(), 16384) == kTfLiteError);
  CHECK(!unknown.DoAnyBuffersOverlap());
  unknown.PrintMemoryPlan();
  CHECK(logged(take_log(), "construction failed"));
}

static void test_the_interface() {
  tflite::NnmemMemoryPlanner tflm;
  tflite::NnmemMemoryPlanner linear(NNM_ALGORITHM_LINEAR);
  tflite::MicroMemoryPlanner* base = &tflm;
  CHECK(!base->preserves_all_tensors());
  base = &linear;
  CHECK(base->preserves_all_tensors());  // nothing shares memory
  CHECK(tflite::NnmemMemoryPlanner::per_buffer_size() == NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER);
  CHECK(tflite::NnmemMemoryPlanner::per_buffer_size() == 24);
  // So linear refuses offline buffers that share bytes (TFLite Micro's
  // LinearMemoryPlanner refuses every offline buffer).
  CHECK(linear.Init(fresh_scratch(), 16384) == kTfLiteOk);
  CHECK(linear.AddBuffer(16, 0, 1, 0) == kTfLiteOk);
  CHECK(linear.AddBuffer(16, 0, 1, 0) == kTfLiteError);
  CHECK(logged(take_log(), "offline buffer at 0..16 shares bytes with offline buffer 0 at 0..16"));
  CHECK(linear.AddBuffer(16, 0, 1, 8) == kTfLiteError);
  CHECK(linear.AddBuffer(16, 0, 1, 16) == kTfLiteOk && linear.AddBuffer(8, 0, 1) == kTfLiteOk);
  CHECK(offsets_of(linear) == std::vector<int>({0, 16, 32}));
  CHECK(base->preserves_all_tensors() && !linear.DoAnyBuffersOverlap());
  take_log();
}

// TFLite Micro places its planner in the arena and never destroys it: the
// planner holds no heap memory, whatever the algorithm (the heap planner
// of EXACT is freed before planning returns). glibc's count of bytes in use
// does not move, and ASan and valgrind find no leak.
static void test_never_destroyed() {
  const uint32_t algorithms[] = {NNM_ALGORITHM_TFLM, NNM_ALGORITHM_SIZE_FIRST_FIT, NNM_ALGORITHM_EXACT,
                                 NNM_ALGORITHM_AUTO};
  for (uint32_t algorithm : algorithms) {
    alignas(tflite::NnmemMemoryPlanner) static unsigned char place[sizeof(tflite::NnmemMemoryPlanner)];
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const size_t before = mallinfo2().uordblks;
#endif
    tflite::MicroMemoryPlanner* planner = new (place) tflite::NnmemMemoryPlanner(algorithm);
    CHECK(planner->Init(fresh_scratch(), 16384) == kTfLiteOk);
    CHECK(planner->AddBuffer(48, 0, 1) == kTfLiteOk && planner->AddBuffer(48, 1, 2) == kTfLiteOk &&
          planner->AddBuffer(16, 0, 2, 96) == kTfLiteOk);
    CHECK(planner->GetMaximumMemorySize() == 112u);
    int offset = -1;
    CHECK(planner->GetOffsetForBuffer(2, &offset) == kTfLiteOk && offset == 96);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    CHECK(mallinfo2().uordblks == before);
#endif
    // Never destroyed, as in TFLite Micro.
  }
}

int main() {
  test_greedy_planner_tests();
  test_offline_planning_allocator_tests();
  test_tflite_micro_lifetimes();
  test_add_after_a_query();
  test_do_any_buffers_overlap();
  test_errors();
  test_the_interface();
  test_never_destroyed();
  return nnm_check_report();
}
