// The uniform-grid broad phase against brute force: a query returns exactly the boxes that
// contain the point, in ascending order, for any cell size.
#include <gtest/gtest.h>

#include "models/collision/broad_phase.h"
#include "test_util.h"

namespace condsim {
namespace {

TEST(BroadPhase, QueryMatchesBruteForce) {
  auto rng = test::Rng();
  std::vector<Aabb> boxes(300);
  for (Aabb& b : boxes) {
    const auto c = test::RandomVector(rng, 3, -1, 1), e = test::RandomVector(rng, 3, 0.01, 0.3);
    b.Grow(Vec3(c[0] - e[0], c[1] - e[1], c[2] - e[2]));
    b.Grow(Vec3(c[0] + e[0], c[1] + e[1], c[2] + e[2]));
  }
  for (Scalar cell : {0.0, 0.05, 0.7}) {
    AabbGrid grid;
    grid.Build(boxes, cell);
    std::vector<Index> got;
    for (int q = 0; q < 2000; ++q) {
      const auto p = test::RandomVector(rng, 3, -1.4, 1.4);
      const Vec3 x(p[0], p[1], p[2]);
      grid.Query(x, &got);
      std::vector<Index> want;
      for (std::size_t k = 0; k < boxes.size(); ++k)
        if (boxes[k].Contains(x)) want.push_back(Index(k));
      ASSERT_EQ(got, want) << "cell " << cell << " query " << q;
    }
  }
}

}  // namespace
}  // namespace condsim
