// TFLite Micro's memory planner interface over nnmem.
//
// In a TFLite Micro application the planner goes to the allocator, and the
// interpreter calls it (AddBuffer per tensor, then GetOffsetForBuffer and
// GetMaximumMemorySize):
//
//     #include <nnmem/compat/tflm/nnmem_memory_planner.h>
//
//     static tflite::NnmemMemoryPlanner planner(NNM_ALGORITHM_EXACT);
//     tflite::MicroAllocator *allocator =
//         tflite::MicroAllocator::Create(arena, sizeof arena, &planner);
//     tflite::MicroInterpreter interpreter(model, resolver, allocator);
//
// This program makes those calls itself, for the tensors of a small branching
// model, so that it runs without TFLite Micro: with TFLite Micro's greedy
// algorithm (the default, byte-identical to GreedyMemoryPlanner) and with
// nnmem's exact search. Like TFLite Micro's allocator, it first hands each
// planner the scratch memory it plans in (Init): the planner keeps nothing
// anywhere else.
#include <nnmem/compat/tflm/nnmem_memory_planner.h>

#include <cstdio>

namespace {

struct Tensor {
  const char* name;
  int bytes;
  int first_used;  // -1: live before the first operator (read, never produced)
  int last_used;
  int offline_offset;  // -1: planned online
};

// A chain input -> conv1 -> conv2 -> output beside a large tensor used by the
// first operator only; a bias read by every operator but produced by none
// (TFLite Micro's first use -1); the last operator's scratch buffer placed
// at offset 0 by the model's offline plan.
const Tensor kTensors[] = {
    {"input", 1000, 0, 1, -1},  {"conv1", 2000, 1, 2, -1},  {"conv2", 3000, 2, 3, -1}, {"output", 4000, 3, 4, -1},
    {"features", 5000, 0, 1, -1}, {"bias", 64, -1, 4, -1}, {"scratch", 256, 4, 4, 0},
};

int Plan(tflite::MicroMemoryPlanner& planner, const char* what) {
  // MicroAllocator gives its planner the free part of the arena; 24 B per
  // tensor and 12 B more are enough for nnmem.
  alignas(16) static unsigned char scratch[2][512];
  static int next = 0;
  if (planner.Init(scratch[next++ % 2], sizeof scratch[0]) != kTfLiteOk) return 1;
  for (const Tensor& t : kTensors) {
    if (planner.AddBuffer(t.bytes, t.first_used, t.last_used, t.offline_offset) != kTfLiteOk) return 1;
  }
  std::printf("%s: arena of %zu bytes\n", what, planner.GetMaximumMemorySize());
  for (int i = 0; i < planner.GetBufferCount(); ++i) {
    int offset = 0;
    if (planner.GetOffsetForBuffer(i, &offset) != kTfLiteOk) return 1;
    std::printf("  %-8s %5d B at %5d\n", kTensors[i].name, kTensors[i].bytes, offset);
  }
  return 0;
}

}  // namespace

int main() {
  tflite::NnmemMemoryPlanner greedy;  // NNM_ALGORITHM_TFLM
  tflite::NnmemMemoryPlanner exact(NNM_ALGORITHM_EXACT);
  if (Plan(greedy, "TFLite Micro's greedy plan") != 0 || Plan(exact, "nnmem's exact plan") != 0) return 1;
  // The exact plan is never larger, and nothing live at once shares a byte.
  if (exact.GetMaximumMemorySize() > greedy.GetMaximumMemorySize()) return 1;
  if (greedy.DoAnyBuffersOverlap() || exact.DoAnyBuffersOverlap()) return 1;
  return 0;
}
