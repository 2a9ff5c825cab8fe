/*
 * nnmem's planner as a TensorFlow Lite Micro memory planner.
 *
 * tflite::NnmemMemoryPlanner implements the whole of
 * tflite::MicroMemoryPlanner over nnmem's scratch planner
 * (<nnmem/scratch_planner.h>). With NNM_ALGORITHM_TFLM (the default) it
 * gives the offsets and arena size of TFLite Micro's own GreedyMemoryPlanner,
 * byte for byte; NNM_ALGORITHM_LINEAR stacks the buffers like
 * LinearMemoryPlanner; NNM_ALGORITHM_SIZE_FIRST_FIT is greedy by size
 * without TFLite Micro's quirks. Any other nnmem algorithm
 * (NNM_ALGORITHM_EXACT: the smallest arena its search proves or finds within
 * its work budget, which is where a smaller arena comes from) runs on the
 * heap planner, on hosts only: see "Heap" below.
 *
 * Compile it inside a TFLite Micro build (where the base class is declared)
 * and hand it to the allocator:
 *
 *     #include <nnmem/compat/tflm/nnmem_memory_planner.h>
 *
 *     tflite::NnmemMemoryPlanner planner;            // or (NNM_ALGORITHM_EXACT)
 *     tflite::MicroAllocator *allocator =
 *         tflite::MicroAllocator::Create(arena, arena_size, &planner);
 *     tflite::MicroInterpreter interpreter(model, resolver, allocator);
 *
 * and link nnmem (CMake: nnmem::nnmem; pkg-config: nnmem; on a
 * microcontroller, the embedded build's libnnmem.a and -DNNMEM_NO_HEAP:
 * README.md, "The embedded build").
 *
 * Memory: like GreedyMemoryPlanner, it plans inside the scratch buffer that
 * MicroAllocator hands Init() and keeps nothing anywhere else: no heap, no
 * destructor needed (TFLite Micro places planners in its arena and never
 * destroys them). The scratch holds NNM_SCRATCH_PLANNER_HEADER_BYTES plus
 * per_buffer_size() bytes per buffer (24, against GreedyMemoryPlanner's 40),
 * so a scratch too small for one more buffer makes AddBuffer fail, with
 * the bytes missing in the message, as GreedyMemoryPlanner's does. Init()
 * starts over. Buffers may be added after a query: the next query plans
 * again, as GreedyMemoryPlanner does. The class caches the arena size, so
 * GetMaximumMemorySize() answers after MicroAllocator has released the
 * scratch (as it asks once the plan is committed).
 *
 * Heap: with an algorithm the scratch planner does not run, planning makes a
 * heap planner (nnm_planner), plans, copies the offsets into the scratch
 * (nnm_scratch_planner_set_plan) and frees it before returning, so nothing
 * stays on the heap either. Define NNMEM_NO_HEAP (the embedded build has no
 * heap planner) to compile without that path; such algorithms are then
 * refused at construction.
 *
 * What it refuses that GreedyMemoryPlanner accepts (AddBuffer returns
 * kTfLiteError and MicroPrintf says why): a negative size, a step below -1,
 * a last use before the first use (or -1 after a first use of 0 or more),
 * and an offline offset below -1; with NNM_ALGORITHM_LINEAR, an offline
 * offset that shares bytes with another offline buffer (LinearMemoryPlanner
 * refuses offline offsets, and preserves_all_tensors() promises that no two
 * tensors share memory). The interpreter never passes the others.
 *
 * Errors are printed with MicroPrintf, as TFLite Micro's planners do, and
 * returned as kTfLiteError; GetMaximumMemorySize() returns 0 when planning
 * failed. Built with TF_LITE_STRIP_ERROR_STRINGS, the class prints nothing
 * (PrintMemoryPlan() included) and never reads nnm_last_error(), as TFLite
 * Micro's planners print nothing then. No exceptions are thrown (TFLite Micro builds without them).
 * Not thread-safe, like the planners of TFLite Micro.
 */
#ifndef NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H
#define NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H

#include <climits>
#include <cstddef>
#include <cstdint>

#include <nnmem/scratch_planner.h>
#ifndef NNMEM_NO_HEAP
#include <vector>

#include <nnmem/planner.h>
#endif

#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"
#include "tensorflow/lite/micro/micro_log.h"

// The class's messages follow TFLite Micro's rule: built with
// TF_LITE_STRIP_ERROR_STRINGS (where TFLite Micro's MicroPrintf prints
// nothing), the class prints nothing and does not fetch nnmem's message
// (nnm_last_error), so neither it nor its arguments are linked.
#if defined(TF_LITE_STRIP_ERROR_STRINGS)
#define NNMEM_TFLM_PRINTF(...) ((void)0)
#else
#define NNMEM_TFLM_PRINTF(...) MicroPrintf(__VA_ARGS__)
#endif

namespace tflite {

class NnmemMemoryPlanner : public MicroMemoryPlanner {
 public:
  // `algorithm`: an nnm_algorithm value. An unknown one (or, with
  // NNMEM_NO_HEAP, one that needs the heap) is printed and every later call
  // fails.
  explicit NnmemMemoryPlanner(uint32_t algorithm = NNM_ALGORITHM_TFLM)
      : planner_(nullptr),
        algorithm_(algorithm),
        required_(0),
        count_(0),
        scratch_size_(-1),
        planned_(false),
        usable_(true) {
#ifdef NNMEM_NO_HEAP
    if (!NNM_SCRATCH_PLANNER_RUNS(algorithm)) {
      NNMEM_TFLM_PRINTF("nnmem: algorithm value %u is not one the scratch planner runs (tflm, linear, size-first-fit); "
                  "the others need the heap planner, which NNMEM_NO_HEAP leaves out",
                  static_cast<unsigned>(algorithm));
      usable_ = false;
    }
#else
    if (nnm_algorithm_name(algorithm) == nullptr) {
      NNMEM_TFLM_PRINTF("nnmem: unknown algorithm value %u", static_cast<unsigned>(algorithm));
      usable_ = false;
    }
#endif
  }

  ~NnmemMemoryPlanner() override {}

  NnmemMemoryPlanner(const NnmemMemoryPlanner&) = delete;
  NnmemMemoryPlanner& operator=(const NnmemMemoryPlanner&) = delete;

  // Scratch bytes per buffer (besides NNM_SCRATCH_PLANNER_HEADER_BYTES and
  // up to 3 bytes for aligning the scratch).
  static size_t per_buffer_size() { return NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER; }

  // Starts over inside `scratch_buffer`: every buffer added later lives
  // there until the next Init().
  // A scratch too small for the planner's header (NULL and 0 included) is
  // accepted, as GreedyMemoryPlanner accepts it: no buffer can then be
  // added, and AddBuffer says so.
  TfLiteStatus Init(unsigned char* scratch_buffer, int scratch_buffer_size) override {
    if (!usable_) return Unusable();
    planner_ = nullptr;
    planned_ = false;
    required_ = 0;
    count_ = 0;
    scratch_size_ = scratch_buffer == nullptr || scratch_buffer_size < 0 ? 0 : scratch_buffer_size;
    if (scratch_buffer_size < 0) {
      NNMEM_TFLM_PRINTF("nnmem: scratch buffer size %d is negative", scratch_buffer_size);
      return kTfLiteError;
    }
    if (scratch_buffer == nullptr) return kTfLiteOk;
    const uint32_t runs =
        NNM_SCRATCH_PLANNER_RUNS(algorithm_) ? algorithm_ : static_cast<uint32_t>(NNM_ALGORITHM_SIZE_FIRST_FIT);
    nnm_scratch_planner* planner = nullptr;
    // Too small for the planner's header: accepted, as GreedyMemoryPlanner
    // accepts any size (AddBuffer then says what is missing).
    if (nnm_scratch_planner_init(scratch_buffer, static_cast<size_t>(scratch_buffer_size), runs, &planner) != NNM_OK) {
      return kTfLiteOk;
    }
    planner_ = planner;
    return kTfLiteOk;
  }

  // A buffer of `size` bytes live from step `first_time_used` to
  // `last_time_used`, inclusive (-1 first: live before the first step; -1
  // both: never used, which NNM_ALGORITHM_TFLM plans at step -1 as TFLite
  // Micro does and other algorithms let occupy nothing).
  TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used) override {
    return Add(size, first_time_used, last_time_used, -1);
  }

  // An offline-planned buffer that keeps `offline_offset`; -1 (TFLite
  // Micro's kOnlinePlannedBuffer) plans it online.
  TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used, int offline_offset) override {
    return Add(size, first_time_used, last_time_used, offline_offset);
  }

  // The arena bytes the plan needs (planning first if buffers were added);
  // 0 when planning fails.
  size_t GetMaximumMemorySize() override {
    if (planner_ == nullptr || Plan() != kTfLiteOk) return 0;
    return required_;
  }

  int GetBufferCount() override { return planner_ == nullptr ? 0 : count_; }

  // The offset of the buffer added `buffer_index`-th (planning first if
  // buffers were added).
  TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) override {
    if (Plan() != kTfLiteOk) return kTfLiteError;
    const int count = GetBufferCount();
    if (buffer_index < 0 || buffer_index >= count) {
      NNMEM_TFLM_PRINTF("buffer index %d is outside range 0 to %d", buffer_index, count);
      return kTfLiteError;
    }
    if (offset == nullptr) {
      NNMEM_TFLM_PRINTF("nnmem: GetOffsetForBuffer: offset is NULL");
      return kTfLiteError;
    }
    uint32_t at = 0;
    if (!Check(nnm_scratch_planner_get_offset(planner_, static_cast<size_t>(buffer_index), &at))) return kTfLiteError;
    if (at > static_cast<uint32_t>(INT_MAX)) {
      NNMEM_TFLM_PRINTF("nnmem: offset %lu of buffer %d does not fit an int", static_cast<unsigned long>(at), buffer_index);
      return kTfLiteError;
    }
    *offset = static_cast<int>(at);
    return kTfLiteOk;
  }

  // Whether tensors keep their data after invocation: only when nothing
  // shares memory (NNM_ALGORITHM_LINEAR, like TFLite Micro's
  // LinearMemoryPlanner, which refuses offline buffers that share bytes).
  bool preserves_all_tensors() const override { return algorithm_ == NNM_ALGORITHM_LINEAR; }

  // The plan, a line per buffer (index, size, inclusive steps, offsets) and
  // the arena size, through MicroPrintf.
  void PrintMemoryPlan() override {
#if !defined(TF_LITE_STRIP_ERROR_STRINGS)
    if (Plan() != kTfLiteOk) return;
    const int count = GetBufferCount();
    for (int i = 0; i < count; ++i) {
      nnm_scratch_buffer b;
      if (!Check(nnm_scratch_planner_get_buffer(planner_, static_cast<size_t>(i), &b))) return;
      NNMEM_TFLM_PRINTF("%d: %lu B, steps %d..%d, at %lu..%lu%s", i, static_cast<unsigned long>(b.size),
                  static_cast<int>(b.first_use), static_cast<int>(b.last_use), static_cast<unsigned long>(b.offset),
                  static_cast<unsigned long>(b.offset + b.size), b.fixed ? " (offline)" : "");
    }
    NNMEM_TFLM_PRINTF("%d buffers, peak %lu B", count, static_cast<unsigned long>(required_));
#endif
  }

  // TFLite Micro's check: whether two buffers live at a common step
  // (inclusive steps, as added) share a byte, where a buffer ends at
  // offset + size, so a zero-size buffer strictly inside a live buffer
  // overlaps it. Each overlapping pair is printed (both ways round) as
  // GreedyMemoryPlanner prints it. O(n^2): for tests.
  bool DoAnyBuffersOverlap() {
    if (Plan() != kTfLiteOk) return false;
    const int count = GetBufferCount();
    bool found = false;
    for (int i = 0; i < count; ++i) {
      for (int j = 0; j < count; ++j) {
        nnm_scratch_buffer a, b;
        if (i == j || !Check(nnm_scratch_planner_get_buffer(planner_, static_cast<size_t>(i), &a)) ||
            !Check(nnm_scratch_planner_get_buffer(planner_, static_cast<size_t>(j), &b))) {
          continue;
        }
        if (a.first_use > b.last_use || b.first_use > a.last_use) continue;
        const uint32_t a_end = a.offset + a.size, b_end = b.offset + b.size;
        if (a.offset >= b_end || b.offset >= a_end) continue;
        found = true;
        NNMEM_TFLM_PRINTF("Overlap: %d (%d=>%d, %d->%d) vs %d (%d=>%d, %d->%d)", i, static_cast<int>(a.first_use),
                    static_cast<int>(a.last_use), static_cast<int>(a.offset), static_cast<int>(a_end), j,
                    static_cast<int>(b.first_use), static_cast<int>(b.last_use), static_cast<int>(b.offset),
                    static_cast<int>(b_end));
      }
    }
    return found;
  }

  // The scratch planner underneath, for nnmem's own queries
  // (nnm_scratch_planner_lower_bound, ...); NULL before Init() and when the
  // constructor failed. Calls that change it (other than through this class)
  // are not supported.
  nnm_scratch_planner* planner() const { return planner_; }

 private:
  // Prints nnmem's message for a failed call.
  static bool Check(nnm_status status) {
    if (status == NNM_OK) return true;
    NNMEM_TFLM_PRINTF("nnmem: %s", nnm_last_error());
    return false;
  }

  TfLiteStatus Unusable() const {
    NNMEM_TFLM_PRINTF("nnmem: this NnmemMemoryPlanner has no planner (its construction failed)");
    return kTfLiteError;
  }

  TfLiteStatus Ready() const {
    if (!usable_) return Unusable();
    if (planner_ == nullptr && scratch_size_ < 0) {
      NNMEM_TFLM_PRINTF("nnmem: Init() first: the planner lives in the scratch buffer Init() is given");
      return kTfLiteError;
    }
    if (planner_ == nullptr) {
      NNMEM_TFLM_PRINTF("nnmem: no scratch: Init() gave %d B, the planner needs %lu B and %lu B per buffer at any address",
                  scratch_size_, static_cast<unsigned long>(NNM_SCRATCH_PLANNER_BYTES(0)),
                  static_cast<unsigned long>(NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER));
      return kTfLiteError;
    }
    return kTfLiteOk;
  }

  TfLiteStatus Add(int size, int first_time_used, int last_time_used, int offline_offset) {
    if (Ready() != kTfLiteOk) return kTfLiteError;
    if (size < 0 || offline_offset < -1) {
      NNMEM_TFLM_PRINTF("nnmem: buffer size %d or offline offset %d is negative", size, offline_offset);
      return kTfLiteError;
    }
    if (offline_offset != -1 && algorithm_ == NNM_ALGORITHM_LINEAR && SharesOfflineBytes(size, offline_offset)) {
      return kTfLiteError;
    }
    const nnm_status status =
        offline_offset == -1
            ? nnm_scratch_planner_add_buffer(planner_, static_cast<uint32_t>(size), first_time_used, last_time_used,
                                             nullptr)
            : nnm_scratch_planner_add_fixed_buffer(planner_, static_cast<uint32_t>(size), first_time_used,
                                                   last_time_used, static_cast<uint32_t>(offline_offset), nullptr);
    if (!Check(status)) return kTfLiteError;
    ++count_;
    planned_ = false;
    return kTfLiteOk;
  }

  // Under NNM_ALGORITHM_LINEAR: whether an offline buffer of `size` bytes at
  // `offset` shares a byte with one added before (printed when it does).
  bool SharesOfflineBytes(int size, int offset) {
    const int count = GetBufferCount();
    const uint32_t lo = static_cast<uint32_t>(offset), hi = lo + static_cast<uint32_t>(size);
    for (int i = 0; i < count; ++i) {
      nnm_scratch_buffer b;
      if (!Check(nnm_scratch_planner_get_buffer(planner_, static_cast<size_t>(i), &b))) return true;
      if (b.fixed && b.size > 0 && size > 0 && lo < b.offset + b.size && b.offset < hi) {
        NNMEM_TFLM_PRINTF(
            "nnmem: offline buffer at %d..%lu shares bytes with offline buffer %d at %lu..%lu; "
            "NNM_ALGORITHM_LINEAR preserves all tensors, so no two may share memory",
            offset, static_cast<unsigned long>(hi), i, static_cast<unsigned long>(b.offset),
            static_cast<unsigned long>(b.offset + b.size));
        return true;
      }
    }
    return false;
  }

  // Plans if buffers were added since the last plan.
  TfLiteStatus Plan() {
    if (Ready() != kTfLiteOk) return kTfLiteError;
    if (planned_) return kTfLiteOk;
    uint32_t bytes = 0;
    if (NNM_SCRATCH_PLANNER_RUNS(algorithm_)) {
      if (!Check(nnm_scratch_planner_plan(planner_, &bytes))) return kTfLiteError;
    } else if (PlanOnTheHeap(&bytes) != kTfLiteOk) {
      return kTfLiteError;
    }
    required_ = bytes;
    planned_ = true;
    return kTfLiteOk;
  }

#ifdef NNMEM_NO_HEAP
  TfLiteStatus PlanOnTheHeap(uint32_t*) { return Unusable(); }
#else
  // Plans the buffers with the heap planner and the chosen algorithm, and
  // hands the offsets to the scratch planner; the heap planner and the
  // offsets' copy are freed before returning, so nothing stays on the heap.
  TfLiteStatus PlanOnTheHeap(uint32_t* bytes) {
    const int count = GetBufferCount();
    nnm_planner* heap = nullptr;
    if (!Check(nnm_planner_new(&heap))) return kTfLiteError;
    bool ok = Check(nnm_planner_set_algorithm(heap, algorithm_)) && Check(nnm_planner_set_trust_fixed(heap, 1));
    for (int i = 0; ok && i < count; ++i) {
      nnm_scratch_buffer b;
      ok = Check(nnm_scratch_planner_get_buffer(planner_, static_cast<size_t>(i), &b)) &&
           Check(b.fixed ? nnm_planner_add_fixed_buffer(heap, b.size, b.first_use, b.last_use, b.offset, nullptr)
                         : nnm_planner_add_buffer(heap, b.size, b.first_use, b.last_use, nullptr));
    }
    ok = ok && Check(nnm_planner_plan(heap));
    std::vector<uint64_t> wide(ok ? static_cast<size_t>(count) : 0);
    ok = ok && Check(nnm_planner_get_offsets(heap, wide.data(), wide.size()));
    nnm_planner_free(heap);
    if (!ok) return kTfLiteError;
    std::vector<uint32_t> offsets(wide.size());
    for (size_t i = 0; i < wide.size(); ++i) {
      if (wide[i] > UINT32_MAX) {
        NNMEM_TFLM_PRINTF("nnmem: buffer %d is planned at offset %llu, past the 32-bit offsets TFLite Micro takes",
                    static_cast<int>(i), static_cast<unsigned long long>(wide[i]));
        return kTfLiteError;
      }
      offsets[i] = static_cast<uint32_t>(wide[i]);
    }
    return Check(nnm_scratch_planner_set_plan(planner_, offsets.data(), offsets.size(), bytes)) ? kTfLiteOk
                                                                                               : kTfLiteError;
  }
#endif

  nnm_scratch_planner* planner_;  // inside the scratch Init() was given
  uint32_t algorithm_;
  size_t required_;    // the arena size, once planned
  int count_;          // buffers added since Init()
  int scratch_size_;   // what Init() gave; -1 before Init()
  bool planned_;
  bool usable_;
};

}  // namespace tflite

#endif  // NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H
