// What ov::MemorySolver::solve() from <nnmem/compat/openvino/memory_solver.hpp>
// costs beside OpenVINO's own greedy, on random boxes. A timing program,
// not a test: scripts/compat-cost.sh builds it (once as shipped, once with
// -DNNM_COMPAT_OPENVINO_WORK_LIMIT=NNM_DEFAULT_WORK_LIMIT, the longer
// search) and writes its table into BENCHMARKS.md.
//
// "OpenVINO" is OpenVINO's algorithm as the compat header computes it (its
// normalize_boxes, then boxes by size descending, each at the lowest offset
// clear of every placed box it shares a step with), copied here so that it
// is timed alone; "compat" is the constructor plus solve(). Each figure is
// the least of `rounds` runs, the two taking turns.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <nnmem/compat/openvino/memory_solver.hpp>

typedef ov::MemorySolver::Box Box;

static double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// OpenVINO's greedy over normalised boxes: the blob size.
static int64_t openvino_greedy(std::vector<Box> boxes) {
    ov::MemorySolver::normalize_boxes(boxes);
    std::vector<Box> by_size(boxes);
    std::sort(by_size.begin(), by_size.end(), [](const Box& l, const Box& r) { return l.size > r.size; });
    std::vector<Box> placed;  // id holds the offset
    std::vector<std::pair<int64_t, int64_t> > taken;
    int64_t total = 0;
    for (size_t k = 0; k < by_size.size(); ++k) {
        Box box = by_size[k];
        int64_t offset = 0;
        if (box.start <= box.finish) {
            taken.clear();
            for (size_t p = 0; p < placed.size(); ++p) {
                const Box& o = placed[p];
                if (box.start <= o.finish && o.start <= box.finish)
                    taken.push_back(std::make_pair(o.id, o.id + o.size));
            }
            std::sort(taken.begin(), taken.end());
            for (size_t t = 0; t < taken.size(); ++t) {
                if (taken[t].first >= offset + box.size)
                    break;
                if (taken[t].second > offset)
                    offset = taken[t].second;
            }
            box.id = offset;
            placed.push_back(box);
        }
        total = std::max(total, offset + box.size);
    }
    return total;
}

static uint64_t rng_state = 0;
static uint32_t next_below(uint32_t bound) {
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return static_cast<uint32_t>((rng_state >> 33) % bound);
}

// n boxes starting anywhere in [0, n), each live for up to `longest` steps.
static std::vector<Box> random_boxes(int n, int longest, uint64_t seed) {
    rng_state = seed;
    std::vector<Box> boxes(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        boxes[i].start = static_cast<int>(next_below(static_cast<uint32_t>(n)));
        boxes[i].finish = boxes[i].start + static_cast<int>(next_below(static_cast<uint32_t>(longest)));
        boxes[i].size = 1 + static_cast<int64_t>(next_below(4096));
        boxes[i].id = i;
    }
    return boxes;
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const int sizes[] = {300, 1000, 3000, 10000, 30000};
    const int longest[] = {64, 1000};
    printf("| boxes | live for up to | OpenVINO (ms) | compat (ms) | ratio | OpenVINO blob | compat blob |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n : sizes)
        for (int l : longest) {
            const std::vector<Box> boxes = random_boxes(n, l, 1 + static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(l));
            double original = 1e300, compat = 1e300;
            int64_t original_total = 0, compat_total = 0;
            for (int r = 0; r < rounds; ++r) {
                double t = now_s();
                original_total = openvino_greedy(boxes);
                original = std::min(original, now_s() - t);
                t = now_s();
                ov::MemorySolver solver(boxes);
                compat_total = solver.solve();
                compat = std::min(compat, now_s() - t);
            }
            if (compat_total > original_total) {
                fprintf(stderr, "compat's blob %lld is larger than OpenVINO's %lld\n",
                        static_cast<long long>(compat_total), static_cast<long long>(original_total));
                return 1;
            }
            printf("| %d | %d steps | %.1f | %.1f | %.2fx | %lld | %lld |\n", n, l, original * 1e3, compat * 1e3,
                   compat / original, static_cast<long long>(original_total), static_cast<long long>(compat_total));
            fflush(stdout);
        }
    return 0;
}
