// Static world shapes and S-contact generation:
// - signed distances against closed forms and their normals against central finite differences
//   of the distance (1e-6), the reported closest point lying on the surface;
// - tangent-frame invariance: a particle sliding on a tilted plane gives the same v-hat (1e-9)
//   when every contact's tangent basis is rotated about its normal (isotropic friction);
// - no tunnelling: a node at 5 m/s towards a 5 mm plate at t = 10 ms is stopped at its surface.
#include "models/collision/static_world.h"

#include <gtest/gtest.h>

#include "condsim/error.h"
#include "models/cond/cond_solver.h"
#include "models/integrate/midpoint.h"
#include "test_util.h"

namespace condsim {
namespace {

StaticShape Shape(ShapeType type, const Vec3& c, const Quat& q, const Vec3& size) {
  StaticShape s;
  s.type = type;
  s.center = c;
  s.orientation = Normalized(q);
  s.size = size;
  return s;
}

TEST(StaticWorld, DistancesMatchClosedFormsAndNormalsAreGradients) {
  auto rng = test::Rng();
  const Quat q = Normalized(Quat(0.9, 0.2, -0.3, 0.1));
  const Mat3 r = ToMatrix(q);
  const std::vector<StaticShape> shapes = {Shape(ShapeType::kPlane, Vec3(0.1, 0.2, 0.3), q, Vec3()),
                                           Shape(ShapeType::kSphere, Vec3(0.1, 0.2, 0.3), q, Vec3(0.2, 0, 0)),
                                           Shape(ShapeType::kCapsule, Vec3(0.1, 0.2, 0.3), q, Vec3(0.05, 0.2, 0)),
                                           Shape(ShapeType::kBox, Vec3(0.1, 0.2, 0.3), q, Vec3(0.1, 0.2, 0.3))};
  for (int trial = 0; trial < 2000; ++trial) {
    const auto u = test::RandomVector(rng, 3, -0.6, 0.6);
    const Vec3 p = Vec3(0.1, 0.2, 0.3) + Vec3(u[0], u[1], u[2]);
    const Vec3 local = Transpose(r) * (p - Vec3(0.1, 0.2, 0.3));
    // closed forms in the shape frame
    const double closed[4] = {
        local[2], Norm(local) - 0.2,
        Norm(local - Vec3(0, 0, std::max(-0.2, std::min(0.2, double(local[2]))))) - 0.05,
        [&] {
          const Vec3 e(0.1, 0.2, 0.3);
          double out = 0, in = -1e300;
          for (int k = 0; k < 3; ++k) {
            const double d = std::fabs(local[k]) - e[k];
            out += std::max(d, 0.0) * std::max(d, 0.0);
            in = std::max(in, d);
          }
          return out > 0 ? std::sqrt(out) : in;
        }()};
    for (int k = 0; k < 4; ++k) {
      const Proximity pr = ShapeProximity(shapes[k], p);
      ASSERT_NEAR(pr.distance, closed[k], 1e-12) << "shape " << k;
      ASSERT_NEAR(Norm(pr.normal), 1.0, 1e-12);
      ASSERT_NEAR(ShapeProximity(shapes[k], pr.point).distance, 0.0, 1e-12) << "shape " << k;
      // normal = gradient of the distance (skip points near ridges of the box interior)
      const double h = 1e-7;
      Vec3 grad;
      for (int c = 0; c < 3; ++c) {
        Vec3 dp(0, 0, 0);
        dp[c] = h;
        grad[c] = (ShapeProximity(shapes[k], p + dp).distance - ShapeProximity(shapes[k], p - dp).distance) / (2 * h);
      }
      if (std::fabs(Norm(grad) - 1) < 1e-6) {
        ASSERT_LT(Norm(grad - pr.normal), 1e-6) << "shape " << k;
      }
    }
  }
}

TEST(StaticWorld, IsotropicFrictionDoesNotDependOnTheTangentBasis) {
  // a particle sliding down a plane tilted by 0.3 rad, mu = 0.2 (slides), impulse form (A = 2m)
  const Quat tilt = FromRotationVector(Vec3(0.3, 0, 0));
  const StaticShape plane = Shape(ShapeType::kPlane, Vec3(0, 0, 0), tilt, Vec3());
  const std::vector<Scalar> x = {0, 0, 0}, v = {0.2, 0.1, 0};
  ContactSet base;
  DetectStaticContacts({plane}, NodeView{&x, &v, nullptr}, 0.01, 0.001, &base);
  ASSERT_EQ(base.size(), 1);
  auto solve = [&](const ContactSet& c) {
    auto backend = MakeBackend(BackendChoice::kCpu).backend;
    BlockMatrix a(BlockPattern::FromCoordinates(3, 1, 1, {{0, 0}}));
    const Scalar m = 0.3, d = 2 * m, blk[9] = {d, 0, 0, 0, d, 0, 0, 0, d};
    a.AddToBlock(0, 0, blk);
    auto da = backend->CreateMatrix(a.pattern);
    da->SetValues(a.values);
    Array<Scalar> b(backend.get(), std::vector<Scalar>{2 * m * v[0], 2 * m * v[1], 2 * m * v[2] - 0.01 * m * 9.81});
    Array<Scalar> vh(backend.get(), v);
    CondParams p;
    p.theta_threshold = 1e-13;
    CondSolver solver(backend.get(), p);
    solver.SetContacts(c);
    EXPECT_TRUE(solver.Solve(*da, b, &vh).converged);
    return vh.ToHost();
  };
  const std::vector<Scalar> ref = solve(base);
  for (double angle : {0.3, 1.1, 2.5}) {
    ContactSet turned = base;
    const Mat3 f = base.Frame(0);
    const Mat3 spin = ToMatrix(FromRotationVector(angle * f.Row(0)));  // about the normal
    const Mat3 g = Mat3::FromRows(f.Row(0), spin * f.Row(1), spin * f.Row(2));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) turned.frame[3 * i + j] = g(i, j);
    const std::vector<Scalar> out = solve(turned);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(out[k], ref[k], 1e-9) << "angle " << angle;
  }
}

TEST(StaticWorld, FastNodeDoesNotTunnelThroughAThinPlate) {
  // a 5 mm plate (box, half thickness 2.5 mm) at z = 0; a node 3 cm above moving down at 5 m/s
  const StaticShape plate = Shape(ShapeType::kBox, Vec3(0, 0, 0), Quat(), Vec3(0.5, 0.5, 0.0025));
  const Scalar dt = 0.01, m = 0.01;
  std::vector<Scalar> x = {0, 0, 0.03}, v = {0, 0, -5};
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  BlockMatrix a(BlockPattern::FromCoordinates(3, 1, 1, {{0, 0}}));
  const Scalar blk[9] = {2 * m, 0, 0, 0, 2 * m, 0, 0, 0, 2 * m};
  a.AddToBlock(0, 0, blk);
  auto da = backend->CreateMatrix(a.pattern);
  da->SetValues(a.values);
  CondParams p;
  p.theta_threshold = 1e-12;
  CondSolver solver(backend.get(), p);
  for (int step = 0; step < 20; ++step) {
    ContactSet c;
    DetectStaticContacts({plate}, NodeView{&x, &v, nullptr}, dt, 0.001, &c);
    solver.SetContacts(c);
    Array<Scalar> b(backend.get(), std::vector<Scalar>{2 * m * v[0], 2 * m * v[1], 2 * m * v[2] - dt * m * 9.81});
    Array<Scalar> vh(backend.get(), v);
    ASSERT_TRUE(solver.Solve(*da, b, &vh).converged);
    const std::vector<Scalar> vhat = vh.ToHost();
    for (int k = 0; k < 3; ++k) {
      x[k] += dt * vhat[k];
      v[k] = 2 * vhat[k] - v[k];
    }
    if (c.size() > 0) ApplyInelasticContacts(c, solver.Impulses(), vhat, std::vector<Scalar>(v.size() / 3, 1), nullptr, &v);
    // never below the plate's top surface
    ASSERT_GE(x[2], 0.0025 - 1e-12) << "step " << step;
  }
  EXPECT_NEAR(x[2], 0.0025, 1e-9);  // resting on the plate
}

TEST(StaticWorld, ShapeValidationNamesTheProblem) {
  StaticShape s = Shape(ShapeType::kSphere, Vec3(0, 0, 0), Quat(), Vec3(-1, 0, 0));
  EXPECT_THROW(s.Validate("world/shapes/0"), Error);
  s = Shape(ShapeType::kBox, Vec3(0, 0, 0), Quat(), Vec3(1, 0, 1));
  EXPECT_THROW(s.Validate("world/shapes/1"), Error);
  s = Shape(ShapeType::kPlane, Vec3(0, 0, 0), Quat(), Vec3());
  s.mu1 = -0.1;
  EXPECT_THROW(s.Validate("world/shapes/2"), Error);
}

}  // namespace
}  // namespace condsim
