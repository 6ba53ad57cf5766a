// Closest-point primitives against brute force: the exact minimizer can be no farther than any
// sample of a dense parameter grid, and no more than the grid spacing beyond the best sample.
#include <gtest/gtest.h>

#include <random>

#include "models/collision/primitives.h"

namespace condsim {
namespace {

Vec3 RandomVec(std::mt19937& rng, Scalar scale) {
  std::uniform_real_distribution<Scalar> u(-scale, scale);
  return Vec3(u(rng), u(rng), u(rng));
}

TEST(Primitives, TriangleMatchesDenseSampling) {
  std::mt19937 rng(7);
  const int n = 400;  // samples per barycentric axis
  for (int trial = 0; trial < 60; ++trial) {
    const Vec3 a = RandomVec(rng, 1), b = RandomVec(rng, 1), c = RandomVec(rng, 1), p = RandomVec(rng, 2);
    const Vec3 w = ClosestOnTriangle(p, a, b, c);
    ASSERT_GE(w[0], 0);
    ASSERT_GE(w[1], 0);
    ASSERT_GE(w[2], 0);
    ASSERT_NEAR(w[0] + w[1] + w[2], 1, 1e-12);
    const Scalar d = Norm(p - (w[0] * a + w[1] * b + w[2] * c));
    Scalar best = 1e30;
    for (int i = 0; i <= n; ++i)
      for (int j = 0; i + j <= n; ++j) {
        const Scalar s = Scalar(i) / n, t = Scalar(j) / n;
        best = std::min(best, Norm(p - ((1 - s - t) * a + s * b + t * c)));
      }
    // the exact answer is below every sample, and within one grid cell (edge / n) of the best
    const Scalar h = std::max(Norm(b - a), std::max(Norm(c - a), Norm(c - b))) / n;
    EXPECT_LE(d, best + 1e-12) << "trial " << trial;
    EXPECT_GE(d, best - 2 * h) << "trial " << trial;
  }
}

TEST(Primitives, SegmentsMatchDenseSampling) {
  std::mt19937 rng(11);
  const int n = 2000;
  for (int trial = 0; trial < 60; ++trial) {
    const Vec3 p0 = RandomVec(rng, 1), q0 = RandomVec(rng, 1);
    Vec3 p1 = RandomVec(rng, 1), q1 = RandomVec(rng, 1);
    if (trial % 10 == 0) q1 = q0 + (p1 - p0) * Scalar(0.7);  // parallel
    if (trial % 10 == 1) p1 = p0;                             // a point
    const SegmentParams st = ClosestOnSegments(p0, p1, q0, q1);
    ASSERT_TRUE(st.s >= 0 && st.s <= 1 && st.t >= 0 && st.t <= 1);
    const Scalar d = Norm((p0 + st.s * (p1 - p0)) - (q0 + st.t * (q1 - q0)));
    // for each s on a fine grid the best t is the clamped projection (exact), so the brute
    // force is a 1-D scan
    Scalar best = 1e30;
    for (int i = 0; i <= n; ++i) {
      const Vec3 x = p0 + (Scalar(i) / n) * (p1 - p0);
      const Vec3 e = q1 - q0;
      const Scalar t = SquaredNorm(e) > 0 ? Clamp01(Dot(x - q0, e) / SquaredNorm(e)) : Scalar(0);
      best = std::min(best, Norm(x - (q0 + t * e)));
    }
    EXPECT_LE(d, best + 1e-12) << "trial " << trial;
    EXPECT_GE(d, best - 2 * Norm(p1 - p0) / n) << "trial " << trial;
  }
}

}  // namespace
}  // namespace condsim
