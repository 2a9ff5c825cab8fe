/*
 * nnmem's planner as a TensorFlow Lite Micro memory planner.
 *
 * tflite::NnmemMemoryPlanner implements the whole of
 * tflite::MicroMemoryPlanner over nnmem's static planner (<nnmem.h>). With
 * NNM_ALGORITHM_TFLM (the default) it gives the offsets and arena size of
 * TFLite Micro's own GreedyMemoryPlanner, byte for byte; any other nnmem
 * algorithm picked in the constructor plans the same buffers its own way
 * (NNM_ALGORITHM_EXACT: the smallest arena its search proves or finds
 * within its work budget, which is where a smaller arena comes from).
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
 * and link nnmem (CMake: nnmem::nnmem; pkg-config: nnmem).
 *
 * What it keeps: one nnm_planner (nnmem's heap, see nnm_planner_add_buffer
 * for the bytes per buffer); it keeps no copy of the buffers. Buffers may be
 * added after a query: the next query plans again, as GreedyMemoryPlanner
 * does. Init() starts over (it drops every buffer). nnmem never writes the
 * scratch buffer Init() is given; with NNM_ALGORITHM_TFLM its size bounds
 * the number of buffers as GreedyMemoryPlanner's does (per_buffer_size()
 * bytes each), so a model fails for lack of scratch exactly where TFLite
 * Micro's would; other algorithms take any number of buffers.
 *
 * What it refuses that GreedyMemoryPlanner accepts (AddBuffer returns
 * kTfLiteError and MicroPrintf says why): a negative size, a step below -1,
 * a last use before the first use (or -1 after a first use of 0 or more),
 * and an offline offset below -1. The interpreter never passes these.
 *
 * Errors are printed with MicroPrintf, as TFLite Micro's planners do, and
 * returned as kTfLiteError; GetMaximumMemorySize() returns 0 when planning
 * failed. No exceptions are thrown (TFLite Micro builds without them).
 * Not thread-safe, like the planners of TFLite Micro.
 */
#ifndef NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H
#define NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nnmem.h>

#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"
#include "tensorflow/lite/micro/micro_log.h"

namespace tflite {

class NnmemMemoryPlanner : public MicroMemoryPlanner {
 public:
  // `algorithm`: an nnm_algorithm value. An unknown one (or a planner nnmem
  // cannot make) is printed and every later call fails.
  explicit NnmemMemoryPlanner(uint32_t algorithm = NNM_ALGORITHM_TFLM)
      : planner_(nullptr), algorithm_(algorithm), max_buffer_count_(-1), planned_(false) {
    if (!Check(nnm_planner_new(&planner_))) {
      planner_ = nullptr;
      return;
    }
    // TFLite Micro trusts an offline plan whose tensors share memory; so
    // does every nnmem algorithm with this setting (TFLM always does).
    if (!Check(nnm_planner_set_algorithm(planner_, algorithm)) ||
        !Check(nnm_planner_set_trust_fixed(planner_, 1))) {
      nnm_planner_free(planner_);
      planner_ = nullptr;
    }
  }

  ~NnmemMemoryPlanner() override { nnm_planner_free(planner_); }

  NnmemMemoryPlanner(const NnmemMemoryPlanner&) = delete;
  NnmemMemoryPlanner& operator=(const NnmemMemoryPlanner&) = delete;

  // GreedyMemoryPlanner's scratch bytes per buffer (ten ints: its buffer
  // record of four, two sort keys, a list entry of three, the offset), by
  // which Init()'s scratch size bounds the buffer count under
  // NNM_ALGORITHM_TFLM.
  static size_t per_buffer_size() { return 10 * sizeof(int); }

  // Starts over: drops every buffer. nnmem plans in its own memory and never
  // touches `scratch_buffer`; under NNM_ALGORITHM_TFLM at most
  // scratch_buffer_size / per_buffer_size() buffers may then be added, as
  // with GreedyMemoryPlanner.
  TfLiteStatus Init(unsigned char* scratch_buffer, int scratch_buffer_size) override {
    (void)scratch_buffer;
    if (planner_ == nullptr) return Unusable();
    if (!Check(nnm_planner_reset(planner_))) return kTfLiteError;
    planned_ = false;
    if (algorithm_ == NNM_ALGORITHM_TFLM) {
      max_buffer_count_ =
          scratch_buffer_size > 0 ? static_cast<int>(static_cast<size_t>(scratch_buffer_size) / per_buffer_size()) : 0;
    } else {
      max_buffer_count_ = -1;
    }
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
    uint64_t bytes = 0;
    if (Plan() != kTfLiteOk || !Check(nnm_planner_required_bytes(planner_, &bytes))) return 0;
    return static_cast<size_t>(bytes);
  }

  int GetBufferCount() override {
    size_t count = 0;
    if (planner_ == nullptr || !Check(nnm_planner_buffer_count(planner_, &count))) return 0;
    return static_cast<int>(count);
  }

  // The offset of the buffer added `buffer_index`-th (planning first if
  // buffers were added).
  TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) override {
    if (Plan() != kTfLiteOk) return kTfLiteError;
    const int count = GetBufferCount();
    if (buffer_index < 0 || buffer_index >= count) {
      MicroPrintf("buffer index %d is outside range 0 to %d", buffer_index, count);
      return kTfLiteError;
    }
    uint64_t at = 0;
    if (offset == nullptr) {
      MicroPrintf("nnmem: GetOffsetForBuffer: offset is NULL");
      return kTfLiteError;
    }
    if (!Check(nnm_planner_get_offset(planner_, static_cast<size_t>(buffer_index), &at))) return kTfLiteError;
    if (at > static_cast<uint64_t>(INT_MAX)) {
      MicroPrintf("nnmem: offset %llu of buffer %d does not fit an int", static_cast<unsigned long long>(at),
                  buffer_index);
      return kTfLiteError;
    }
    *offset = static_cast<int>(at);
    return kTfLiteOk;
  }

  // Whether tensors keep their data after invocation: only when nothing
  // shares memory (NNM_ALGORITHM_LINEAR, like TFLite Micro's
  // LinearMemoryPlanner).
  bool preserves_all_tensors() const override { return algorithm_ == NNM_ALGORITHM_LINEAR; }

  // nnmem's picture of the plan (nnm_planner_draw), a line per MicroPrintf.
  void PrintMemoryPlan() override {
    size_t needed = 0;
    if (Plan() != kTfLiteOk || !Check(nnm_planner_draw(planner_, nullptr, 0, &needed))) return;
    std::vector<char> text(needed);
    if (!Check(nnm_planner_draw(planner_, text.data(), text.size(), &needed))) return;
    size_t line = 0;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] == '\n') {
        text[i] = '\0';
        MicroPrintf("%s", &text[line]);
        line = i + 1;
      }
    }
  }

  // TFLite Micro's check: whether two buffers live at a common step
  // (inclusive steps, as added) share a byte, where a buffer ends at
  // offset + size, so a zero-size buffer strictly inside a live buffer
  // overlaps it. Each overlapping pair is printed (both ways round) as
  // GreedyMemoryPlanner prints it. O(n^2): for tests.
  bool DoAnyBuffersOverlap() {
    const int count = GetBufferCount();
    if (Plan() != kTfLiteOk) return false;
    std::vector<nnm_plan_buffer> b(static_cast<size_t>(count));
    for (size_t i = 0; i < b.size(); ++i) {
      if (!Check(nnm_planner_get_buffer(planner_, i, &b[i]))) return false;
    }
    bool found = false;
    for (size_t i = 0; i < b.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) {
        if (i == j || b[i].first_use > b[j].last_use || b[j].first_use > b[i].last_use) continue;
        const uint64_t a_end = b[i].offset + b[i].size, b_end = b[j].offset + b[j].size;
        if (b[i].offset >= b_end || b[j].offset >= a_end) continue;
        found = true;
        MicroPrintf("Overlap: %d (%d=>%d, %d->%d) vs %d (%d=>%d, %d->%d)", static_cast<int>(i),
                    static_cast<int>(b[i].first_use), static_cast<int>(b[i].last_use), static_cast<int>(b[i].offset),
                    static_cast<int>(a_end), static_cast<int>(j), static_cast<int>(b[j].first_use),
                    static_cast<int>(b[j].last_use), static_cast<int>(b[j].offset), static_cast<int>(b_end));
      }
    }
    return found;
  }

  // The nnmem planner underneath, for nnmem's own queries (nnm_planner_get_result,
  // nnm_planner_lower_bound, ...); NULL when the constructor failed. Calls
  // that change it (other than through this class) are not supported.
  const nnm_planner* planner() const { return planner_; }

 private:
  // Prints nnmem's message for a failed call.
  static bool Check(nnm_status status) {
    if (status == NNM_OK) return true;
    MicroPrintf("nnmem: %s", nnm_last_error());
    return false;
  }

  static TfLiteStatus Unusable() {
    MicroPrintf("nnmem: this NnmemMemoryPlanner has no planner (its construction failed)");
    return kTfLiteError;
  }

  TfLiteStatus Add(int size, int first_time_used, int last_time_used, int offline_offset) {
    if (planner_ == nullptr) return Unusable();
    if (max_buffer_count_ >= 0 && GetBufferCount() >= max_buffer_count_) {
      MicroPrintf("Too many buffers (max is %d)", max_buffer_count_);
      return kTfLiteError;
    }
    if (size < 0 || offline_offset < -1) {
      MicroPrintf("nnmem: buffer size %d or offline offset %d is negative", size, offline_offset);
      return kTfLiteError;
    }
    const nnm_status status =
        offline_offset == -1
            ? nnm_planner_add_buffer(planner_, static_cast<uint64_t>(size), first_time_used, last_time_used, nullptr)
            : nnm_planner_add_fixed_buffer(planner_, static_cast<uint64_t>(size), first_time_used, last_time_used,
                                           static_cast<uint64_t>(offline_offset), nullptr);
    if (!Check(status)) return kTfLiteError;
    planned_ = false;
    return kTfLiteOk;
  }

  // Plans if buffers were added since the last plan.
  TfLiteStatus Plan() {
    if (planner_ == nullptr) return Unusable();
    if (planned_) return kTfLiteOk;
    if (!Check(nnm_planner_plan(planner_))) return kTfLiteError;
    planned_ = true;
    return kTfLiteOk;
  }

  nnm_planner* planner_;
  uint32_t algorithm_;
  int max_buffer_count_;  // -1: no bound
  bool planned_;
};

}  // namespace tflite

#endif  // NNMEM_COMPAT_TFLM_NNMEM_MEMORY_PLANNER_H
