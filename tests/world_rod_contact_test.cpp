// Cables in the world: rod-rod D-contacts on link points (barycentric virtual nodes on two
// segment centres, eq. 14-15). A cable loop crossing over itself is released onto the floor;
// references: the exact distance between non-neighbouring links (segment-segment closest
// points, tested against brute force in primitives_test) may never fall below the two radii by
// more than 0.1 mm, the floor may not be entered by more than 0.1 mm, and at rest the crossing
// strands are 2r apart (statics).
#include <gtest/gtest.h>

#include <cmath>

#include "models/collision/primitives.h"
#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

// deepest overlap of non-neighbouring links (closer than `skip` along the cable) [m]
Scalar MaxOverlap(const std::vector<Scalar>& x, Scalar radius, Index skip) {
  const Index n = static_cast<Index>(x.size() / 3);
  Scalar worst = 0;
  for (Index s = 0; s + 1 < n; ++s)
    for (Index u = s + skip; u + 1 < n; ++u) {
      const Vec3 p0 = LoadVec3(x.data(), s), p1 = LoadVec3(x.data(), s + 1);
      const Vec3 q0 = LoadVec3(x.data(), u), q1 = LoadVec3(x.data(), u + 1);
      const SegmentParams st = ClosestOnSegments(p0, p1, q0, q1);
      const Scalar d = Norm((p0 + st.s * (p1 - p0)) - (q0 + st.t * (q1 - q0)));
      worst = std::max(worst, 2 * radius - d);
    }
  return worst;
}

// a cable laid in a loop whose end part crosses over its start part 1 cm above it: released, the
// upper strand falls onto the lower one and rests on it (statics: centre lines 2r apart at the
// crossing); the links may never overlap by more than 0.1 mm, and at rest they touch (gap 0)
TEST(WorldRodContact, CableLoopRestsOnItself) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams params;
  params.dt = 0.01;
  params.cond.theta_threshold = 1e-6;
  params.cond.max_iterations = 5000;
  World world(backend.get(), params);
  StaticShape floor;
  floor.mu1 = floor.mu2 = 0.5;
  world.AddStatic(floor);
  RodMaterial mat;
  mat.radius = 0.004;
  mat.rayleigh_alpha = 5;
  const Scalar r = mat.radius, top = 3 * r + 0.01;
  const std::vector<Vec3> loop = {Vec3(0, 0, r),         Vec3(0.3, 0, r),        Vec3(0.36, 0.06, r + 0.003),
                                  Vec3(0.3, 0.12, top), Vec3(0.2, 0.06, top),   Vec3(0.2, 0, top),
                                  Vec3(0.2, -0.06, top), Vec3(0.2, -0.12, top)};
  const RodGeometry geo = MakePolylineRod(loop, 80);
  const Index cable = world.AddRod(geo, mat, RodEnd(), RodEnd(), "cable", 0.5, getenv("CONDSIM_NO_SELF") == nullptr);
  const Index skip = 2 + static_cast<Index>(std::ceil(2 * r / geo.segment_length));
  Scalar worst = 0, floor_worst = 0;
  int self_contacts = 0;
  std::vector<Scalar> x;
  for (int k = 0; k < 150; ++k) {
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "step " << k << ": " << st.cond.iterations << " iterations, residual " << st.cond.residual;
    for (const ContactRecord& c : world.contacts()) self_contacts += c.body_i == cable && c.body_j == cable;
    x = world.RodPositions(cable);
    worst = std::max(worst, MaxOverlap(x, r, skip));
    for (std::size_t i = 2; i < x.size(); i += 3) floor_worst = std::max(floor_worst, r - x[i]);
  }
  // at rest the strands touch: their closest approach is 2r (MaxOverlap = 2r - closest distance)
  const Scalar gap = -MaxOverlap(x, r, skip);
  std::printf("[ cable    ] worst overlap %.4g mm, floor %.4g mm, %d self-contacts; final gap between the strands %.4f mm\n",
              worst * 1e3, floor_worst * 1e3, self_contacts, gap * 1e3);
  EXPECT_GT(self_contacts, 100);
  EXPECT_LE(worst, 1e-4);
  EXPECT_LE(floor_worst, 1e-4);
  EXPECT_NEAR(gap, 0, 1e-4);
}

}  // namespace
}  // namespace condsim
