// Scenes stepped by the world: rigid bodies on static shapes through virtual nodes (eq. 14-15)
// and the rigid groups of the solver. References: the analytic sliding law (cond-paper Sec.
// V-B, Table I), statics (weight), an independent RK4 integrator of maximal-dissipation
// anisotropic friction (Sec. V-G), tangent-basis invariance, and the plate a node must not cross.
#include <gtest/gtest.h>

#include <cmath>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kG = 9.81;

StaticShape Floor(Scalar mu1, Scalar mu2) {
  StaticShape s;
  s.type = ShapeType::kPlane;
  s.mu1 = mu1;
  s.mu2 = mu2;
  return s;
}

WorldParams Params(Scalar dt, Scalar kv) {
  WorldParams p;
  p.dt = dt;
  p.kv = kv;
  p.cond.theta_threshold = 1e-10;
  p.cond.max_iterations = 5000;
  return p;
}

// the paper's box: 0.2 m, 0.5 kg, mu 0.2, resting on the floor (its four bottom corners touch)
RigidBody PaperBox() {
  RigidBody box = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 0.5);
  box.mu1 = box.mu2 = 0.2;
  box.x = Vec3(0, 0, 0.1);
  return box;
}

// mean |x - x_analytic| over a 1 s push of F = 2 N along y, from rest: x_y = a t^2 / 2 with
// a = F / m - mu g (cond-paper Sec. V-B)
double SlidingError(Scalar kv) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.01, kv));
  world.AddStatic(Floor(0.2, 0.2));
  const Index id = world.AddRigid(PaperBox());
  world.SetRigidWrench(id, Vec3(0, 2.0, 0), Vec3());
  const Scalar a = 2.0 / 0.5 - 0.2 * kG;
  double mean = 0;
  for (int k = 0; k < 100; ++k) {
    const StepStats s = world.Step();
    EXPECT_TRUE(s.cond.converged) << "step " << k;
    EXPECT_EQ(s.contacts, 4);
    const Scalar t = world.time();
    mean += Norm(world.rigid_body(id).x - Vec3(0, 0.5 * a * t * t, 0.1)) / 100;
  }
  return mean;
}

// Table I: the error falls ~10x per decade of kv and is <= 0.01 mm at kv = 1e5 (the paper
// reports 0.1226 / 0.0122 / 0.0012 mm)
TEST(World, BoxSlidingMatchesAnalyticLawTableI) {
  const double e3 = SlidingError(1e3), e4 = SlidingError(1e4), e5 = SlidingError(1e5);
  std::printf("mean position error [mm]: kv 1e3 %.4g, 1e4 %.4g, 1e5 %.4g\n", e3 * 1e3, e4 * 1e3, e5 * 1e3);
  EXPECT_NEAR(e3 / e4, 10, 3);
  EXPECT_NEAR(e4 / e5, 10, 3);
  EXPECT_LT(e5, 1e-5);
}

// a box resting 10 s on the floor: no drift (< 0.01 mm) and the contact wrench carries the weight
TEST(World, RestingBoxDoesNotDriftAndCarriesItsWeight) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.01, 1e5));
  world.AddStatic(Floor(0.5, 0.5));
  RigidBody box = PaperBox();
  box.mu1 = box.mu2 = 0.5;
  box.q = FromRotationVector(Vec3(0, 0, 0.3));  // yawed: corners off the world axes
  box.x = Vec3(0.05, -0.02, 0.1);
  const Index id = world.AddRigid(box);
  for (int k = 0; k < 1000; ++k) {
    world.Step();
    ASSERT_LT(Norm(world.rigid_body(id).x - box.x), 1e-5) << "step " << k;
  }
  const Wrench w = world.BodyWrench(id);
  EXPECT_NEAR(w.force[2], 0.5 * kG, 1e-6 * 0.5 * kG);
  EXPECT_NEAR(w.force[0], 0, 1e-9);
  EXPECT_NEAR(w.force[1], 0, 1e-9);
  EXPECT_LT(Norm(w.torque), 1e-8);
  // the world's share is the opposite
  const Wrench ground = world.BodyWrench(-1);
  EXPECT_NEAR(ground.force[2], -0.5 * kG, 1e-6 * 0.5 * kG);
  EXPECT_EQ(world.contacts().size(), 4u);
}

// isotropic friction does not depend on the tangent basis: a box pushed diagonally, with every
// contact's tangents rotated about the normal by 0.7 rad, follows the same path within 1e-9 m
TEST(World, TangentBasisDoesNotChangeIsotropicResults) {
  std::vector<Vec3> path[2];
  for (int run = 0; run < 2; ++run) {
    auto backend = MakeBackend(BackendChoice::kCpu).backend;
    World world(backend.get(), Params(0.01, 1e5));
    world.AddStatic(Floor(0.3, 0.3));
    RigidBody box = PaperBox();
    box.mu1 = box.mu2 = 0.3;
    box.v = Vec3(0.4, -0.2, 0);
    const Index id = world.AddRigid(box);
    world.SetRigidWrench(id, Vec3(0.8, 1.1, 0), Vec3(0, 0, 0.05));
    if (run == 1) world.set_tangent_rotation(0.7);
    for (int k = 0; k < 60; ++k) {
      world.Step();
      path[run].push_back(world.rigid_body(id).x);
    }
  }
  for (std::size_t k = 0; k < path[0].size(); ++k) ASSERT_LT(Norm(path[0][k] - path[1][k]), 1e-9) << "step " << k;
}

// anisotropic (ellipsoidal) friction, cond-paper Sec. V-G: a box launched at (1, 1, 0) m/s on a
// region with mu_x != mu_y follows the maximal-dissipation law f = -N M^2 v / |M v|,
// M = diag(mu_x, mu_y), integrated here independently by RK4 (1e-5 s steps) until it stops
TEST(World, AnisotropicFrictionFollowsMaximalDissipation) {
  // effective coefficients by the documented rule sqrt(mu_shape,k mu_body), body mu = 1
  const Scalar mux = std::sqrt(0.1), muy = std::sqrt(0.4);
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.002, 1e5));
  world.AddStatic(Floor(0.1, 0.4));
  RigidBody box = PaperBox();
  box.mu1 = box.mu2 = 1;
  box.v = Vec3(1, 1, 0);
  const Index id = world.AddRigid(box);
  // reference: planar point mass, N = m g
  auto accel = [&](const Vec3& v) {
    const Scalar s = std::hypot(mux * v[0], muy * v[1]);
    return s < 1e-12 ? Vec3() : Scalar(-kG / s) * Vec3(mux * mux * v[0], muy * muy * v[1], 0);
  };
  Vec3 xr, vr(1, 1, 0);
  Scalar tr = 0;
  const Scalar h = 1e-5;
  double worst = 0;
  for (int k = 0; k < 300; ++k) {
    world.Step();
    while (tr < world.time() - h / 2) {
      if (Norm(vr) < 1e-6) {
        vr = Vec3();
      } else {
        const Vec3 k1 = accel(vr), k2 = accel(vr + (h / 2) * k1), k3 = accel(vr + (h / 2) * k2), k4 = accel(vr + h * k3);
        const Vec3 dv = (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4);
        // stopping: friction cannot reverse the velocity
        if (Dot(vr + dv, vr) <= 0) {
          xr += (h / 2) * vr;
          vr = Vec3();
        } else {
          xr += (h / 2) * (vr + (vr + dv));
          vr += dv;
        }
      }
      tr += h;
    }
    const Vec3 x = world.rigid_body(id).x;
    worst = std::max(worst, std::hypot(x[0] - xr[0], x[1] - xr[1]));
  }
  std::printf("final position %.5f %.5f (reference %.5f %.5f), worst deviation %.3g mm\n", world.rigid_body(id).x[0],
              world.rigid_body(id).x[1], xr[0], xr[1], worst * 1e3);
  EXPECT_LT(Norm(world.rigid_body(id).v), 1e-6);  // stopped
  EXPECT_GT(xr[0], 1.5 * xr[1]);                  // the path bends towards the low-friction axis
  EXPECT_LT(worst, 1e-3);
}

// no tunnelling: a sphere of radius 1 mm (a node with a radius) and an FEM cube moving at 5 m/s
// towards a 5 mm plate with t = 10 ms (25 cm per step) are stopped on its near side
TEST(World, FastNodesDoNotTunnelThroughAThinPlate) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams p = Params(0.01, 1e5);
  p.gravity = Vec3();
  World world(backend.get(), p);
  StaticShape plate;
  plate.type = ShapeType::kBox;
  plate.center = Vec3(0, 0, 0);
  plate.size = Vec3(0.5, 0.5, 0.0025);
  world.AddStatic(plate);
  RigidBody ball = MakeRigidSphere(0.001, 0.01);
  ball.x = Vec3(0, 0, 0.3);
  ball.v = Vec3(0, 0, -5);
  const Index sphere = world.AddRigid(ball);
  TetMesh cube = MakeBoxMesh(Vec3(0.1, 0.1, 0.27), Vec3(0.02, 0.02, 0.02), 1, 1, 1);
  FemMaterial mat;
  mat.young = 1e6;
  const Index fem = world.AddFem(cube, mat, "cube");
  std::vector<Scalar> v(cube.x.size(), 0);
  for (std::size_t i = 2; i < v.size(); i += 3) v[i] = -5;
  world.SetFemVelocities(fem, v);
  for (int k = 0; k < 20; ++k) {
    world.Step();
    ASSERT_GT(world.rigid_body(sphere).x[2], 0.0025 + 0.001 - 1e-5) << "step " << k;
    const std::vector<Scalar> x = world.FemPositions(fem);
    for (std::size_t i = 2; i < x.size(); i += 3) ASSERT_GT(x[i], 0.0025 - 1e-5) << "step " << k;
  }
}

// static friction creeps at f_t / kv per contact (docs/collision.md, "Static-friction creep"): a
// box resting on a 20 degree incline with mu = 1 (sticking) slides down at m g sin(20 deg) / (4 kv)
// on its four bottom corners; reference: that law, to 1 %
TEST(World, StaticFrictionCreepsAtForceOverKv) {
  const Scalar angle = Scalar(20 * M_PI / 180);
  for (Scalar kv : {Scalar(1e4), Scalar(1e5)}) {
    auto backend = MakeBackend(BackendChoice::kCpu).backend;
    World world(backend.get(), Params(0.01, kv));
    StaticShape slope = Floor(1, 1);
    slope.orientation = FromRotationVector(Vec3(angle, 0, 0));
    world.AddStatic(slope);
    RigidBody box = PaperBox();
    box.mu1 = box.mu2 = 1;
    box.q = slope.orientation;
    box.x = ToMatrix(box.q) * Vec3(0, 0, 0.1);
    const Index id = world.AddRigid(box);
    const Vec3 down_slope = ToMatrix(box.q) * Vec3(0, -1, 0);
    Scalar s0 = 0;
    for (int k = 0; k < 100; ++k) {
      world.Step();
      if (k == 49) s0 = Dot(world.rigid_body(id).x, down_slope);
    }
    const Scalar creep = (Dot(world.rigid_body(id).x, down_slope) - s0) / Scalar(0.5);
    const Scalar law = 0.5 * kG * std::sin(angle) / (4 * kv);
    EXPECT_NEAR(creep, law, 0.01 * law) << "kv " << kv;
  }
}

}  // namespace
}  // namespace condsim
