// The GPU-semantics check modes of the CPU backend (cpu/parallel.h, scripts/gpu-semantics.sh):
// run with CONDSIM_CPU_ORDER=reverse / shuffle (ctest runs this file in each mode), ParallelFor
// visits every item once in the stated order, and a functor whose items depend on each other (a
// running sum) gives a different answer than in order: the check can fail. A lane functor's items
// run lane by lane, the lanes of each phase permuted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cpu/parallel.h"

namespace condsim::cpu {
namespace {

std::string Mode() {
  const char* m = std::getenv("CONDSIM_CPU_ORDER");
  return m != nullptr ? m : "forward";
}

TEST(CpuOrder, LaunchesVisitEveryItemInTheCheckedOrder) {
  constexpr Index n = 1000;
  std::vector<Index> visit;
  ParallelFor(1, n, [&](Index i) { visit.push_back(i); });
  std::vector<Index> sorted = visit;
  std::sort(sorted.begin(), sorted.end());
  std::vector<Index> all(n);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_EQ(sorted, all);  // every item once
  if (Mode() == "reverse") {
    for (Index k = 0; k < n; ++k) EXPECT_EQ(visit[k], n - 1 - k);
  } else if (Mode() == "shuffle") {
    EXPECT_NE(visit, all);
    std::vector<Index> again;
    ParallelFor(1, n, [&](Index i) { again.push_back(i); });
    EXPECT_NE(again, visit);  // a new permutation per launch
  } else {
    EXPECT_EQ(visit, all);
  }
}

TEST(CpuOrder, DependentItemsAreCaught) {
  // x[i] = x[i - 1] + 1 in item order: 0, 1, 2, ... only when the items run in order
  std::vector<int> x(100, 0);
  ParallelFor(1, 100, [&](Index i) { x[i] = i == 0 ? 0 : x[i - 1] + 1; });
  if (Mode() == "forward") {
    EXPECT_EQ(x[99], 99);
  } else {
    EXPECT_NE(x[99], 99);
  }
}

// a lane functor (kLanes, kPhases, Lane): in order its items run operator() (the CPU's path);
// reversed or shuffled they run phase by phase through Lane, every lane once per phase, the
// lanes of a phase out of order (what a warp may do)
struct RecordLanes {
  static constexpr int kLanes = 8;
  static constexpr int kPhases = 3;
  std::vector<int>* calls;  // per item: operator() -1, else phase * kLanes + lane, in call order
  Index* items;             // per call, its item
  void Lane(Index item, int lane, int phase) const {
    calls->push_back(phase * kLanes + lane);
    items[calls->size() - 1] = item;
  }
  void operator()(Index item) const {
    calls->push_back(-1);
    items[calls->size() - 1] = item;
  }
};

TEST(CpuOrder, LaneFunctorsRunLaneByLaneOutOfOrder) {
  constexpr Index n = 4;
  std::vector<int> calls;
  std::vector<Index> items(n * RecordLanes::kLanes * RecordLanes::kPhases, -7);
  ParallelFor(1, n, RecordLanes{&calls, items.data()});
  if (Mode() == "forward") {
    EXPECT_EQ(calls, std::vector<int>(n, -1));
    return;
  }
  ASSERT_EQ(calls.size(), items.size());
  const int per_item = RecordLanes::kLanes * RecordLanes::kPhases;
  bool permuted = false;
  for (Index k = 0; k < n; ++k) {
    // one item's calls together: its phases in order, each phase's lanes once
    for (int phase = 0; phase < RecordLanes::kPhases; ++phase) {
      std::vector<int> lanes;
      for (int j = 0; j < RecordLanes::kLanes; ++j) {
        const std::size_t c = std::size_t(k * per_item + phase * RecordLanes::kLanes + j);
        EXPECT_EQ(items[c], items[std::size_t(k * per_item)]);
        EXPECT_EQ(calls[c] / RecordLanes::kLanes, phase);
        lanes.push_back(calls[c] % RecordLanes::kLanes);
      }
      std::vector<int> sorted = lanes;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> all(RecordLanes::kLanes);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(sorted, all);
      if (lanes != all) permuted = true;
    }
  }
  EXPECT_TRUE(permuted);
}

}  // namespace
}  // namespace condsim::cpu
