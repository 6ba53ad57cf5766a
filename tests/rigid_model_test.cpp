// Rigid bodies: inertia of the shapes against numerical integration over a voxel grid; free
// flight against the analytic parabola; torque-free tumbling (world-frame momentum form):
// |L| conserved to rounding and no energy growth; validation errors.
#include <gtest/gtest.h>

#include <cmath>

#include "models/fem/tet_mesh.h"
#include "models/rigid/rigid_model.h"
#include "test_util.h"

namespace condsim {
namespace {

// principal inertia by midpoint-rule integration of a uniform density over the shape's voxels
Vec3 NumericInertia(const RigidBody& body, int cells) {
  StaticShape s;
  s.type = body.shape;
  s.size = body.size;
  // the domain [-ext, ext]^3 (a box: its largest half extent, so cells align with its faces)
  const Scalar ext = body.shape == ShapeType::kBox ? std::max(body.size[0], std::max(body.size[1], body.size[2]))
                                                   : body.size[0] + body.size[1];
  const Scalar h = 2 * ext / cells;
  Scalar volume = 0;
  Vec3 second;  // integral of x^2, y^2, z^2
  for (int i = 0; i < cells; ++i)
    for (int j = 0; j < cells; ++j)
      for (int k = 0; k < cells; ++k) {
        const Vec3 p(-ext + (i + 0.5) * h, -ext + (j + 0.5) * h, -ext + (k + 0.5) * h);
        if (ShapeProximity(s, p).distance > 0) continue;
        volume += h * h * h;
        for (int a = 0; a < 3; ++a) second[a] += p[a] * p[a] * h * h * h;
      }
  const Scalar rho = body.mass / volume;
  return rho * Vec3(second[1] + second[2], second[0] + second[2], second[0] + second[1]);
}

TEST(RigidModel, ShapeInertiaMatchesNumericalIntegration) {
  for (const RigidBody& b : {MakeRigidBox(Vec3(0.1, 0.2, 0.3), 2.0), MakeRigidSphere(0.2, 3.0), MakeRigidCapsule(0.05, 0.1, 1.5)}) {
    const Vec3 ref = NumericInertia(b, 240);
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(b.inertia[a], ref[a], 1e-2 * ref[a]) << "shape " << int(b.shape) << " axis " << a;
  }
}

// a closed mesh's mass properties by the divergence theorem: a triangulated box (moved and
// turned) gives the solid box's inertia (exact), its centre and its axes
TEST(RigidModel, MeshShapeInertiaMatchesTheSolid) {
  const Vec3 h(0.1, 0.2, 0.3);
  std::vector<Scalar> x;
  std::vector<Index> tri;
  test::BoxSurface(h, 3, &x, &tri);
  const Quat q = FromRotationVector(Vec3(0.3, -0.5, 0.2));
  const Vec3 c(0.4, -0.1, 0.7);
  for (std::size_t i = 0; i < x.size(); i += 3) {
    const Vec3 p = c + Rotate(q, Vec3(x[i], x[i + 1], x[i + 2]));
    for (int a = 0; a < 3; ++a) x[i + a] = p[a];
  }
  const RigidBody mesh = MakeRigidMesh(x, tri, 2.0);
  const RigidBody box = MakeRigidBox(h, 2.0);
  EXPECT_EQ(mesh.shape, ShapeType::kMesh);
  EXPECT_LT(Norm(mesh.x - c), 1e-12);
  // principal moments ascending: the box's z, y, x axes (distinct moments); the mesh's axes are
  // the turned box's, and its bounding half extents the box's along them
  const Mat3 r = ToMatrix(mesh.q), r0 = ToMatrix(q);
  for (int a = 0; a < 3; ++a) {
    const int b = 2 - a;
    EXPECT_NEAR(mesh.inertia[a], box.inertia[b], 1e-12) << "axis " << a;
    EXPECT_NEAR(std::fabs(Dot(r.Col(a), r0.Col(b))), 1, 1e-9) << "axis " << a;
    EXPECT_NEAR(mesh.size[a], h[b], 1e-12) << "axis " << a;
  }
  EXPECT_EQ(ContactSamples(mesh).size(), x.size() / 3);
  RigidModel model({mesh});  // validates
  EXPECT_EQ(model.num_bodies(), 1);
}

TEST(RigidModel, RejectsBadMeshes) {
  std::vector<Scalar> x;
  std::vector<Index> tri;
  test::BoxSurface(Vec3(0.1, 0.1, 0.1), 1, &x, &tri);
  EXPECT_NO_THROW(MakeRigidMesh(x, tri, 1));
  std::vector<Index> open(tri.begin(), tri.end() - 3);
  EXPECT_THROW(MakeRigidMesh(x, open, 1), Error);  // a hole
  std::vector<Index> inverted = tri;
  for (std::size_t t = 0; t < inverted.size(); t += 3) std::swap(inverted[t + 1], inverted[t + 2]);
  EXPECT_THROW(MakeRigidMesh(x, inverted, 1), Error);  // inside out: negative volume
  std::vector<Index> flipped = tri;
  std::swap(flipped[1], flipped[2]);
  EXPECT_THROW(MakeRigidMesh(x, flipped, 1), Error);  // one triangle against its neighbours
  EXPECT_THROW(MakeRigidMesh(x, tri, -1), Error);
  StaticShape s;
  s.type = ShapeType::kMesh;
  EXPECT_THROW(s.Validate("shape"), Error);  // static meshes go through World::AddStaticMesh
  RigidBody no_mesh = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1);
  no_mesh.shape = ShapeType::kMesh;
  EXPECT_THROW(no_mesh.Validate("body"), Error);
}

// one body, no contacts: A v-hat = b solved exactly per body (2x2 blocks)
std::vector<Scalar> SolveFree(const RigidModel& m, Scalar dt, const Vec3& g) {
  std::vector<Scalar> values, b;
  m.Assemble(dt, g, {}, &values, &b);
  std::vector<Scalar> v(b.size());
  for (Index k = 0; k < m.num_bodies(); ++k) {
    StoreVec3(v.data(), 2 * k, Inverse(LoadMat3(values.data(), 4 * k)) * LoadVec3(b.data(), 2 * k));
    StoreVec3(v.data(), 2 * k + 1, Inverse(LoadMat3(values.data(), 4 * k + 3)) * LoadVec3(b.data(), 2 * k + 1));
  }
  return v;
}

TEST(RigidModel, FreeFlightFollowsTheParabola) {
  RigidBody b = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1);
  b.v = Vec3(1, 2, 3);
  RigidModel m({b});
  const Vec3 g(0, 0, -9.81);
  const Scalar dt = 0.01;
  for (int k = 0; k < 100; ++k) m.Advance(dt, SolveFree(m, dt, g));
  const Scalar t = 1.0;
  const Vec3 ref = Vec3(1, 2, 3) * t + Scalar(0.5) * t * t * g;  // the midpoint rule is exact here
  EXPECT_LT(Norm(m.body(0).x - ref), 1e-12);
  EXPECT_LT(Norm(m.body(0).v - (Vec3(1, 2, 3) + t * g)), 1e-12);
}

// spinning near the intermediate axis (the unstable one): the world angular momentum is
// constant to rounding, and the kinetic energy never grows (stable gyroscopic handling)
TEST(RigidModel, TorqueFreeTumblingConservesMomentum) {
  RigidBody b = MakeRigidBox(Vec3(0.05, 0.1, 0.2), 1);
  b.omega = Vec3(0.01, 10, 0.01);
  RigidModel m({b});
  const Vec3 l0 = m.AngularMomentum(0);
  const Scalar e0 = m.KineticEnergy();
  Scalar e_max = e0, e_min = e0, flip = 0;
  for (int k = 0; k < 2000; ++k) {
    m.Advance(0.005, SolveFree(m, 0.005, Vec3()));
    EXPECT_LT(Norm(m.AngularMomentum(0) - l0), 1e-12 * Norm(l0)) << "step " << k;
    e_max = std::max(e_max, m.KineticEnergy());
    e_min = std::min(e_min, m.KineticEnergy());
    flip = std::max(flip, Norm(m.body(0).omega - b.omega));
  }
  std::printf("energy range [%.6f, %.6f] J (start %.6f), largest |omega - omega_0| %.3f rad/s\n", e_min, e_max, e0, flip);
  EXPECT_LT(e_max, e0 * (1 + 1e-2));
  EXPECT_GT(e_min, e0 * (1 - 1e-2));
  // and it does tumble (the intermediate axis is unstable): omega turns over
  EXPECT_GT(flip, 5);
}

TEST(RigidModel, RejectsBadBodies) {
  RigidBody b = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1);
  b.mass = -1;
  EXPECT_THROW(RigidModel({b}), Error);
  b = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1);
  b.inertia = Vec3(1, 1, 5);  // violates I_z <= I_x + I_y
  EXPECT_THROW(RigidModel({b}), Error);
  b = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1);
  b.v = Vec3(NAN, 0, 0);
  EXPECT_THROW(RigidModel({b}), Error);
}

}  // namespace
}  // namespace condsim

namespace condsim {
namespace {

// the pose drive is the implicit PD of eq. 7: tracking p = A sin(w t) with velocity feed-forward,
// the error obeys m e'' + d e' + k e = m A w^2 sin(w t), whose steady amplitude is
// m A w^2 / sqrt((k - m w^2)^2 + (d w)^2) (2% with t = 1 ms); a constant-rate yaw target is
// reached exactly (error below 1e-6 rad after 2 s)
TEST(RigidModel, PoseDriveTracksItsTarget) {
  const Scalar m = 0.5, k = 2000, d = 2 * std::sqrt(k * m), amp = 0.1, w = 2 * 3.14159265358979323846, dt = 1e-3;
  RigidModel model({MakeRigidBox(Vec3(0.1, 0.1, 0.1), m)});
  const Scalar iz = model.body(0).inertia[2], ka = 10, da = 2 * std::sqrt(ka * iz), rate = 1;
  Scalar worst = 0, yaw_error = 0;
  for (int step = 0; step < 2000; ++step) {
    const Scalar t = (step + 0.5) * dt;  // the target at mid-step
    PoseDrive drive;
    drive.k_lin = k;
    drive.d_lin = d;
    drive.k_ang = ka;
    drive.d_ang = da;
    drive.p = Vec3(amp * std::sin(w * t), 0, 0);
    drive.v = Vec3(amp * w * std::cos(w * t), 0, 0);
    drive.q = FromRotationVector(Vec3(0, 0, rate * t));
    drive.omega = Vec3(0, 0, rate);
    model.SetPoseDrive(0, drive);
    model.Advance(dt, SolveFree(model, dt, Vec3()));
    const Scalar t1 = (step + 1) * dt;
    if (t1 > 1) worst = std::max(worst, std::fabs(model.body(0).x[0] - amp * std::sin(w * t1)));
    yaw_error = Norm(LogRotation(ToMatrix(model.body(0).q) * Transpose(ToMatrix(FromRotationVector(Vec3(0, 0, rate * t1))))));
  }
  const Scalar ref = m * amp * w * w / std::sqrt((k - m * w * w) * (k - m * w * w) + d * d * w * w);
  std::printf("tracking error amplitude %.4e m (analytic %.4e), final yaw error %.2e rad\n", worst, ref, yaw_error);
  EXPECT_NEAR(worst, ref, 0.02 * ref);
  EXPECT_LT(yaw_error, 1e-6);
  PoseDrive bad;
  bad.k_lin = -1;
  EXPECT_THROW(model.SetPoseDrive(0, bad), Error);
}

}  // namespace
}  // namespace condsim
