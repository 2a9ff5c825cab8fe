// What glow::MemoryAllocator::allocateAll from
// <nnmem/compat/glow/MemoryAllocator.h> costs beside Glow's own, on random
// ALLOC/FREE lists. A timing program, not a test: scripts/compat-cost.sh
// builds it and writes its table into BENCHMARKS.md.
//
// Glow's own allocateAll (its three orders) is inside the compat class, so
// it is timed as the class with nnmem given 1 work unit less nnmem's
// planner alone at 1 unit (its heuristics run at any limit); "compat" is
// allocateAll as shipped (nnmem's work limit scaled to the list). Each
// figure is the least of `rounds` runs, taking turns.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <list>
#include <vector>

#include <nnmem/compat/glow/MemoryAllocator.h>

static double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0;
static uint32_t next_below(uint32_t bound) {
    rng_state = rng_state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return static_cast<uint32_t>((rng_state >> 33) % bound);
}

struct Event {
    uint64_t time;
    size_t id;
    bool alloc;
    uint64_t size;
};

// n buffers allocated at a random one of n steps and freed 1 to `longest`
// steps later, sizes multiples of 64 up to 4 KiB, as an ALLOC/FREE list.
static std::vector<Event> random_events(int n, int longest, uint64_t seed) {
    rng_state = seed;
    std::vector<Event> events;
    for (int i = 0; i < n; ++i) {
        const uint64_t start = next_below(static_cast<uint32_t>(n));
        const uint64_t life = 1 + next_below(static_cast<uint32_t>(longest));
        const uint64_t size = 64 * (1 + static_cast<uint64_t>(next_below(64)));
        const Event alloc = {2 * start + 1, static_cast<size_t>(i) + 1, true, size};
        const Event release = {2 * (start + life), static_cast<size_t>(i) + 1, false, size};
        events.push_back(alloc);
        events.push_back(release);
    }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
    return events;
}

// nnmem's planner alone at 1 work unit on the list's buffers (what the
// compat class adds to Glow's orders at that limit).
static void nnmem_alone(const std::vector<Event>& events, size_t n) {
    nnm_planner* planner = nullptr;
    if (nnm_planner_new(&planner) != NNM_OK || nnm_planner_set_work_limit(planner, 1) != NNM_OK)
        exit(1);
    std::vector<int64_t> start(n + 1, -1);
    int64_t step = 0;
    for (const Event& e : events) {
        if (e.alloc)
            start[e.id] = step;
        else if (nnm_planner_add_buffer(planner, e.size / 64, start[e.id], step - 1, nullptr) != NNM_OK)
            exit(1);
        ++step;
    }
    if (nnm_planner_plan(planner) != NNM_OK)
        exit(1);
    nnm_planner_free(planner);
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const int sizes[] = {1000, 3000, 10000};
    const int longest[] = {64, 1000};
    printf("| buffers | live for up to | Glow (ms) | compat (ms) | ratio | Glow's orders + nnmem at 1 unit (B) | compat (B) |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n : sizes)
        for (int l : longest) {
            const std::vector<Event> events = random_events(n, l, 3 + static_cast<uint64_t>(n) * 5 + static_cast<uint64_t>(l));
            std::list<glow::Allocation> list;
            for (const Event& e : events)
                list.emplace_back(e.id, e.alloc, e.size);
            double shipped = 1e300, at_one = 1e300, alone = 1e300;
            uint64_t shipped_used = 0, at_one_used = 0;
            for (int r = 0; r < rounds; ++r) {
                glow::MemoryAllocator a("shipped", 0, 64);
                double t = now_s();
                shipped_used = a.allocateAll(list, true);
                shipped = std::min(shipped, now_s() - t);
                glow::MemoryAllocator b("one unit", 0, 64);
                b.setPlannerWorkLimit(1);
                t = now_s();
                at_one_used = b.allocateAll(list, true);
                at_one = std::min(at_one, now_s() - t);
                t = now_s();
                nnmem_alone(events, static_cast<size_t>(n));
                alone = std::min(alone, now_s() - t);
            }
            const double glow = std::max(at_one - alone, 1e-9);
            printf("| %d | %d steps | %.1f | %.1f | %.2fx | %llu | %llu |\n", n, l, glow * 1e3, shipped * 1e3,
                   shipped / glow, static_cast<unsigned long long>(at_one_used),
                   static_cast<unsigned long long>(shipped_used));
            fflush(stdout);
        }
    return 0;
}
