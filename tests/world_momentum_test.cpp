// Momentum through impacts between every pair of body kinds (rigid, FEM, cable) at zero gravity
// and mu = 0, with the inelastic stage on (models/world/inelastic.h). Reference: conservation of
// the total linear momentum (sum of m v over rigid bodies, FEM nodes with their lumped masses and
// cable segment centres): the contact impulses of the solve (eq. 9) and of the inelastic
// correction are equal and opposite on the two sides, so it holds to the solver's tolerance
// (theta_th 1e-10); tolerance 1e-6 relative over the whole impact. Angular momentum about the
// origin: to 1e-9 between rigid bodies; with an FEM body to kFemAngularTol.
#include <gtest/gtest.h>

#include <cmath>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

// with an FEM body the angular momentum is kept only to the FEM step's accuracy: its deformation
// rates are linearized at x_k (docs/fem.md), and a node and the point it touches on a triangle
// are apart (measured 1.0-2.4 %)
constexpr double kFemAngularTol = 0.03;
constexpr int kSteps = 40;  // 0.4 s at dt = 10 ms: approach, impact and separation

WorldParams Params() {
  WorldParams p;
  p.dt = 0.01;
  p.gravity = Vec3(0, 0, 0);
  p.cond.theta_threshold = 1e-10;
  p.cond.max_iterations = 20000;
  return p;
}

// the bodies of a test world and their momenta
struct Bodies {
  std::vector<Index> rigid;  // body ids
  std::vector<Index> fem, rods;

  // total linear momentum [kg m/s]
  Vec3 Linear(World& w) const {
    Vec3 p;
    for (Index b : rigid) p += w.rigid_body(b).mass * w.rigid_body(b).v;
    for (Index b : fem) {
      const std::vector<Scalar> v = w.FemVelocities(b);
      const std::vector<Scalar>& m = w.fem_model(b).lumped_mass();
      for (std::size_t i = 0; i < m.size(); ++i) p += m[i] * LoadVec3(v.data(), Index(i));
    }
    for (Index b : rods) {
      const std::vector<Scalar> v = w.RodVelocities(b);
      const Scalar m = w.rod_model(b).segment_mass();
      for (std::size_t i = 0; i < v.size() / 3; ++i) p += m * LoadVec3(v.data(), Index(i));
    }
    return p;
  }

  // angular momentum about the origin [kg m^2/s]: x × m v + I_w omega per rigid body, x × m v
  // per FEM node (cables left out: their segments' spin is not a centre velocity)
  Vec3 Angular(World& w) const {
    Vec3 l;
    for (Index k : rigid) {
      const RigidBody& b = w.rigid_body(k);
      const Mat3 r = ToMatrix(b.q);
      l += Cross(b.x, b.mass * b.v) + r * (Mat3::Diagonal(b.inertia) * (Transpose(r) * b.omega));
    }
    for (Index b : fem) {
      const std::vector<Scalar> x = w.FemPositions(b), v = w.FemVelocities(b);
      const std::vector<Scalar>& m = w.fem_model(b).lumped_mass();
      for (std::size_t i = 0; i < m.size(); ++i) l += Cross(LoadVec3(x.data(), Index(i)), m[i] * LoadVec3(v.data(), Index(i)));
    }
    return l;
  }
};

// a 0.2 kg sphere (r = 5 cm) at x, moving at v, frictionless
RigidBody Sphere(const Vec3& x, const Vec3& v) {
  RigidBody s = MakeRigidSphere(0.05, 0.2);
  s.mu1 = s.mu2 = 0;
  s.x = x;
  s.v = v;
  return s;
}

// a 10 cm FEM cube (1 kg, 3^3 cells) with its lowest corner at `origin`
Index AddCube(World* w, const Vec3& origin) {
  FemMaterial mat;
  mat.young = 1e6;
  mat.poisson = 0.3;
  mat.density = 1000;
  return w->AddFem(MakeBoxMesh(origin, Vec3(0.1, 0.1, 0.1), 3, 3, 3), mat, "cube", 0.0);
}

// a straight 0.3 m cable (15 segments, r = 5 mm) from `start` along `dir`, frictionless
Index AddCable(World* w, const Vec3& start, const Vec3& dir) {
  RodMaterial mat;
  mat.radius = 0.005;
  mat.young = 1e7;
  // with the rod's E (eq. 9, the default): on the rotation DOFs only, it keeps the momentum
  return w->AddRod(MakeStraightRod(start, dir, 0.3, 15), mat, RodEnd(), RodEnd(), "cable", 0.0);
}

void SetRodVelocity(World* w, Index rod, const Vec3& v) {
  std::vector<Scalar> vw(6 * std::size_t(w->rod_model(rod).num_segments()), 0);
  for (std::size_t s = 0; s < vw.size(); s += 6) StoreVec3(vw.data() + s, 0, v);
  w->SetRodVelocities(rod, vw);
}

void SetFemVelocity(World* w, Index fem, const Vec3& v) {
  std::vector<Scalar> vv(w->FemVelocities(fem).size());
  for (std::size_t i = 0; i < vv.size(); i += 3) StoreVec3(vv.data() + i, 0, v);
  w->SetFemVelocities(fem, vv);
}

struct Drift {
  Scalar linear = 0, angular = 0;  // largest |P - P0| / |P0| and |L - L0| / |L0| over the run
  Index contact_steps = 0;         // steps with contacts (the impact happened)
};

Drift RunImpact(World* w, const Bodies& b) {
  const Vec3 p0 = b.Linear(*w), l0 = b.Angular(*w);
  Drift d;
  for (int s = 0; s < kSteps; ++s) {
    const StepStats st = w->Step();
    if (st.contacts > 0) ++d.contact_steps;
    d.linear = std::max(d.linear, Norm(b.Linear(*w) - p0) / Norm(p0));
    if (Norm(l0) > 0) d.angular = std::max(d.angular, Norm(b.Angular(*w) - l0) / Norm(l0));
  }
  return d;
}

constexpr Scalar kLinearTol = 1e-6;

TEST(WorldMomentum, RigidRigid) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.rigid.push_back(w.AddRigid(Sphere(Vec3(-0.11, 0.02, 0), Vec3(1, 0, 0))));
  RigidBody box = MakeRigidBox(Vec3(0.05, 0.05, 0.05), 1.0);
  box.mu1 = box.mu2 = 0;
  box.x = Vec3(0.05, 0, 0);
  b.rigid.push_back(w.AddRigid(box));
  const Drift d = RunImpact(&w, b);
  std::printf("rigid-rigid: linear %.3g angular %.3g contact steps %d\n", d.linear, d.angular, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
  // frictionless rigid bodies: the normal impulses pass through the contact point on both sides,
  // so the angular momentum about the origin is kept too (measured 3e-15)
  EXPECT_LT(d.angular, 1e-9);
}

TEST(WorldMomentum, RigidFem) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.rigid.push_back(w.AddRigid(Sphere(Vec3(-0.06, 0.02, 0.01), Vec3(1, 0, 0))));
  b.fem.push_back(AddCube(&w, Vec3(0, -0.05, -0.05)));
  const Drift d = RunImpact(&w, b);
  std::printf("rigid-fem: linear %.3g angular %.3g contact steps %d\n", d.linear, d.angular, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
  EXPECT_LT(d.angular, kFemAngularTol);
}

// a rigid group (a sphere hinged to a box behind it, both at 1 m/s) into the FEM cube: the joint's
// rows join the correction with target 0
TEST(WorldMomentum, HingedRigidPairFem) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.rigid.push_back(w.AddRigid(Sphere(Vec3(-0.06, 0.02, 0.01), Vec3(1, 0, 0))));
  RigidBody box = MakeRigidBox(Vec3(0.03, 0.03, 0.03), 0.3);
  box.mu1 = box.mu2 = 0;
  box.x = Vec3(-0.145, 0.02, 0.01);
  box.v = Vec3(1, 0, 0);
  b.rigid.push_back(w.AddRigid(box));
  Joint hinge;
  hinge.type = JointType::kRevolute;
  hinge.body_i = b.rigid[0];
  hinge.body_j = b.rigid[1];
  hinge.anchor = Vec3(-0.1125, 0.02, 0.01);
  hinge.axis = Vec3(0, 0, 1);
  w.AddJoint(hinge);
  b.fem.push_back(AddCube(&w, Vec3(0, -0.05, -0.05)));
  const Drift d = RunImpact(&w, b);
  std::printf("hinged rigid pair-fem: linear %.3g angular %.3g contact steps %d\n", d.linear, d.angular, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
  EXPECT_LT(d.angular, kFemAngularTol);
}

TEST(WorldMomentum, RigidCable) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.rigid.push_back(w.AddRigid(Sphere(Vec3(-0.065, 0.02, 0), Vec3(1, 0, 0))));
  b.rods.push_back(AddCable(&w, Vec3(0, -0.15, 0), Vec3(0, 1, 0)));
  const Drift d = RunImpact(&w, b);
  std::printf("rigid-cable: linear %.3g contact steps %d\n", d.linear, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
}

TEST(WorldMomentum, FemFem) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.fem.push_back(AddCube(&w, Vec3(0, -0.05, -0.05)));
  b.fem.push_back(AddCube(&w, Vec3(-0.11, -0.03, -0.05)));
  SetFemVelocity(&w, b.fem[1], Vec3(1, 0, 0));
  const Drift d = RunImpact(&w, b);
  std::printf("fem-fem: linear %.3g angular %.3g contact steps %d\n", d.linear, d.angular, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
  EXPECT_LT(d.angular, kFemAngularTol);
}

TEST(WorldMomentum, FemCable) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.fem.push_back(AddCube(&w, Vec3(0, -0.05, -0.05)));
  b.rods.push_back(AddCable(&w, Vec3(-0.015, -0.15, 0.01), Vec3(0, 1, 0)));
  SetRodVelocity(&w, b.rods[0], Vec3(1, 0, 0));
  const Drift d = RunImpact(&w, b);
  std::printf("fem-cable: linear %.3g contact steps %d\n", d.linear, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
}

TEST(WorldMomentum, CableCable) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), Params());
  Bodies b;
  b.rods.push_back(AddCable(&w, Vec3(0, -0.15, 0), Vec3(0, 1, 0)));
  b.rods.push_back(AddCable(&w, Vec3(-0.02, 0.02, -0.15), Vec3(0, 0, 1)));
  SetRodVelocity(&w, b.rods[1], Vec3(1, 0, 0));
  const Drift d = RunImpact(&w, b);
  std::printf("cable-cable: linear %.3g contact steps %d\n", d.linear, int(d.contact_steps));
  EXPECT_GT(d.contact_steps, 0);
  EXPECT_LT(d.linear, kLinearTol);
}

}  // namespace
}  // namespace condsim
