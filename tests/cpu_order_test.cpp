// The GPU-semantics check modes of the CPU backend (cpu/parallel.h, scripts/gpu-semantics.sh):
// run with CONDSIM_CPU_ORDER=reverse / shuffle (ctest runs this file in each mode), ParallelFor
// visits every item once in the stated order, and a functor whose items depend on each other (a
// running sum) gives a different answer than in order: the check can fail.
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

}  // namespace
}  // namespace condsim::cpu
