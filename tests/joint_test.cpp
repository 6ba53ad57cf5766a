// Joints and joint drives (models/rigid/joint.h, eq. 7-9) stepped by the world. References: the
// exact large-amplitude period of a compound pendulum (complete elliptic integral by the AGM),
// the constant-acceleration law on an incline, a welded pair against the single box it makes
// (conserved angular momentum, same motion), the analytic damped oscillator of a PD drive, the
// constant-torque law of a feed-forward drive, and the analytic sliding law (cond-paper Sec.
// V-B) for a welded pair on the floor (multi-body rigid groups with contacts).
#include <gtest/gtest.h>

#include <cmath>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kPi = 3.14159265358979323846;
constexpr Scalar kG = 9.81;

WorldParams Params(Scalar dt) {
  WorldParams p;
  p.dt = dt;
  p.cond.theta_threshold = 1e-10;
  p.cond.max_iterations = 5000;
  return p;
}

// complete elliptic integral of the first kind K(k) = pi / (2 AGM(1, sqrt(1 - k^2)))
Scalar EllipticK(Scalar k) {
  Scalar a = 1, b = std::sqrt(1 - k * k);
  for (int i = 0; i < 40; ++i) {
    const Scalar m = (a + b) / 2;
    b = std::sqrt(a * b);
    a = m;
  }
  return kPi / (2 * a);
}

// a bar hinged at its top end about the world y axis, released at 1 rad: period vs the exact
// T = 4 sqrt(I_p / (m g l)) K(sin(theta_0 / 2)); the hinge stays closed
TEST(Joint, RevolutePendulumMatchesEllipticPeriod) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.002));
  const Scalar l = 0.2, theta0 = 1.0;
  RigidBody bar = MakeRigidBox(Vec3(0.01, 0.01, l), 1.0);
  // rotated by theta0 about y around the hinge at the origin
  bar.q = FromRotationVector(Vec3(0, theta0, 0));
  bar.x = ToMatrix(bar.q) * Vec3(0, 0, -l);
  const Index id = world.AddRigid(bar);
  Joint hinge;
  hinge.type = JointType::kRevolute;
  hinge.body_i = id;
  hinge.anchor = Vec3();
  hinge.axis = Vec3(0, 1, 0);
  const Index j = world.AddJoint(hinge);
  const Scalar ip = bar.inertia[1] + bar.mass * l * l;
  const Scalar period = 4 * std::sqrt(ip / (bar.mass * kG * l)) * EllipticK(std::sin(theta0 / 2));
  // downward zero crossings of the swing angle (linear interpolation); the joint angle is 0 at
  // the release pose, so the swing angle from the vertical is theta0 + angle
  std::vector<Scalar> crossings;
  Scalar prev = theta0 + world.JointPosition(j), worst_gap = 0, peak_last = 0;
  while (world.time() < 5.2) {
    world.Step();
    const Scalar a = theta0 + world.JointPosition(j);
    if (prev > 0 && a <= 0) crossings.push_back(world.time() - world.params().dt * a / (a - prev));
    if (world.time() > 4.0) peak_last = std::max(peak_last, a);
    prev = a;
    worst_gap = std::max(worst_gap, world.JointConstraintError(j).position);
  }
  ASSERT_GE(crossings.size(), 4u);
  const Scalar measured = (crossings.back() - crossings.front()) / Scalar(crossings.size() - 1);
  std::printf("pendulum period %.6f s (exact %.6f), hinge gap %.3g m, amplitude after 4 s %.5f rad\n", measured, period,
              worst_gap, peak_last);
  // midpoint phase error ~ (omega t)^2 / 12 ~ 1e-5 at t = 2 ms
  EXPECT_NEAR(measured / period, 1, 2e-4);
  // the hinge opens by the remainder of the mid-step linearization, (omega_max t)^2 l / 8
  // = 3.4e-6 m here (omega_max = 5.8 rad/s)
  EXPECT_LT(worst_gap, 5e-6);
  // the joint's damping acts on the constraint rows only: the swing keeps its amplitude
  EXPECT_NEAR(peak_last, theta0, 2e-3);
}

// a tilted body on a frictionless prismatic joint to the world along an incline: s = g_a t^2 / 2
// (the midpoint rule integrates constant acceleration exactly); its orientation does not change
TEST(Joint, PrismaticSliderOnInclineFollowsConstantAcceleration) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.01));
  RigidBody body = MakeRigidBox(Vec3(0.05, 0.02, 0.03), 0.7);
  body.q = FromRotationVector(Vec3(0.3, -0.2, 0.5));
  body.x = Vec3(0.1, 0.2, 0.3);
  const Quat q0 = body.q;
  const Index id = world.AddRigid(body);
  Joint slide;
  slide.type = JointType::kPrismatic;
  slide.body_i = id;
  slide.anchor = body.x + Vec3(0.01, 0, 0);
  const Scalar alpha = 0.4;
  slide.axis = Vec3(std::cos(alpha), 0, -std::sin(alpha));
  const Index j = world.AddJoint(slide);
  const Scalar ga = kG * std::sin(alpha);
  Scalar worst = 0;
  for (int k = 0; k < 100; ++k) {
    world.Step();
    const Scalar t = world.time();
    worst = std::max(worst, std::fabs(world.JointPosition(j) - ga * t * t / 2));
  }
  const Vec3 expect = Vec3(0.1, 0.2, 0.3) + (ga / 2) * Normalized(slide.axis);  // t = 1 s
  std::printf("incline slide: worst |s - g_a t^2/2| %.3g m, final position error %.3g m\n", worst,
              Norm(world.rigid_body(id).x - expect));
  EXPECT_LT(worst, 1e-6);
  EXPECT_LT(Norm(world.rigid_body(id).x - expect), 1e-6);
  EXPECT_LT(Norm(LogRotation(ToMatrix(world.rigid_body(id).q) * Transpose(ToMatrix(q0)))), 1e-6);
}

// two cubes welded face to face tumble in free flight like the single 2:1:1 box they form
TEST(Joint, WeldedPairMovesLikeTheBoxItForms) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams p = Params(0.001);
  p.gravity = Vec3();
  const Vec3 v0(0.3, -0.1, 0.2), w0(1, 2, 3);
  World pair(backend.get(), p), single(backend.get(), p);
  Index ids[2];
  for (int s = 0; s < 2; ++s) {
    RigidBody cube = MakeRigidBox(Vec3(0.05, 0.05, 0.05), 0.25);
    cube.x = Vec3(s == 0 ? -0.05 : 0.05, 0, 0);
    cube.omega = w0;
    cube.v = v0 + Cross(w0, cube.x);
    ids[s] = pair.AddRigid(cube);
  }
  Joint weld;
  weld.body_i = ids[0];
  weld.body_j = ids[1];
  const Index j = pair.AddJoint(weld);
  RigidBody box = MakeRigidBox(Vec3(0.1, 0.05, 0.05), 0.5);
  box.v = v0;
  box.omega = w0;
  const Index one = single.AddRigid(box);
  Scalar worst_weld = 0;
  for (int k = 0; k < 1000; ++k) {
    pair.Step();
    single.Step();
    worst_weld = std::max(worst_weld, pair.JointConstraintError(j).position);
  }
  const RigidBody &a = pair.rigid_body(ids[0]), &b = pair.rigid_body(ids[1]), &ref = single.rigid_body(one);
  const Vec3 com = Scalar(0.5) * (a.x + b.x);
  const Scalar turn = Norm(LogRotation(ToMatrix(a.q) * Transpose(ToMatrix(ref.q))));
  // angular momentum of the pair about its centre of mass vs the single box's (both conserved)
  const Vec3 l_pair = pair.rigid().AngularMomentum(0) + pair.rigid().AngularMomentum(1) + a.mass * Cross(a.x - com, a.v) +
                      b.mass * Cross(b.x - com, b.v);
  const Vec3 l_ref = single.rigid().AngularMomentum(0);
  std::printf("welded pair after 1 s: com %.3g m, orientation %.3g rad, |L - L_ref| %.3g, weld gap %.3g m\n",
              Norm(com - ref.x), turn, Norm(l_pair - l_ref), worst_weld);
  EXPECT_LT(Norm(com - ref.x), 1e-9);
  EXPECT_LT(turn, 1e-4);
  EXPECT_LT(Norm(l_pair - l_ref), 1e-5 * Norm(l_ref));
  EXPECT_LT(worst_weld, 1e-6);
}

// a PD drive on a prismatic joint: m s'' = -k (s - s*) - d s' from rest (analytic damped
// oscillator, zeta = 0.1, omega_0 = 10 rad/s)
TEST(Joint, PrismaticPdDriveMatchesDampedOscillator) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams p = Params(0.001);
  p.gravity = Vec3();
  World world(backend.get(), p);
  RigidBody body = MakeRigidBox(Vec3(0.05, 0.05, 0.05), 1.0);
  const Index id = world.AddRigid(body);
  Joint slide;
  slide.type = JointType::kPrismatic;
  slide.body_i = id;
  slide.axis = Vec3(1, 0, 0);
  const Index j = world.AddJoint(slide);
  JointDrive drive;
  drive.k = 100;
  drive.d = 2;
  drive.target = 0.1;  // the body's slide along +x [m]
  world.SetJointDrive(j, drive);
  const Scalar w0 = 10, zeta = 0.1, wd = w0 * std::sqrt(1 - zeta * zeta);
  Scalar worst = 0;
  for (int k = 0; k < 2000; ++k) {
    world.Step();
    const Scalar t = world.time();
    const Scalar x = 0.1 - 0.1 * std::exp(-zeta * w0 * t) * (std::cos(wd * t) + zeta / std::sqrt(1 - zeta * zeta) * std::sin(wd * t));
    worst = std::max(worst, std::fabs(world.rigid_body(id).x[0] - x));
  }
  std::printf("PD drive: worst |x - x_analytic| %.3g m over 2 s (step 0.1 m)\n", worst);
  // midpoint phase error ~ omega t_end (omega t)^2 / 12 of the 0.1 m step
  EXPECT_LT(worst, 5e-5);
}

// a feed-forward torque on a revolute joint between two bodies spins them apart at
// theta'' = tau (1/I_a + 1/I_b), through several turns (the angle unwraps)
TEST(Joint, RevoluteFeedForwardTorqueUnwrapsAngle) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams p = Params(0.001);
  p.gravity = Vec3();
  World world(backend.get(), p);
  RigidBody a = MakeRigidBox(Vec3(0.1, 0.02, 0.02), 1.0), b = MakeRigidBox(Vec3(0.05, 0.05, 0.02), 2.0);
  b.x = Vec3(0, 0, 0.05);
  a.x = Vec3(0, 0, -0.05);
  const Index ia = world.AddRigid(a), ib = world.AddRigid(b);
  Joint hinge;
  hinge.type = JointType::kRevolute;
  hinge.body_i = ia;
  hinge.body_j = ib;
  hinge.axis = Vec3(0, 0, 1);
  const Index j = world.AddJoint(hinge);
  JointDrive drive;
  drive.force = 0.02;  // [N m], on a about +z and -z on b
  world.SetJointDrive(j, drive);
  const Scalar alpha = drive.force * (1 / a.inertia[2] + 1 / b.inertia[2]);
  for (int k = 0; k < 2000; ++k) world.Step();
  const Scalar t = world.time(), expect = alpha * t * t / 2;
  std::printf("revolute feed-forward: angle %.6f rad (analytic %.6f), rate %.6f (%.6f)\n", world.JointPosition(j), expect,
              world.JointRate(j), alpha * t);
  EXPECT_GT(expect, 4 * kPi);  // two turns at least
  EXPECT_NEAR(world.JointPosition(j), expect, 1e-6 * expect);
  EXPECT_NEAR(world.JointRate(j), alpha * t, 1e-6 * alpha * t);
}

// a welded pair of 0.25 kg cubes pushed along the floor (2 N on one cube, mu 0.2): the analytic
// sliding law of the 0.5 kg pair, x = (F / m - mu g) t^2 / 2 (as Table I's box, within 0.01 mm)
TEST(Joint, WeldedPairSlidesByTheAnalyticLaw) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.01));
  StaticShape floor;
  floor.type = ShapeType::kPlane;
  floor.mu1 = floor.mu2 = 0.2;
  world.AddStatic(floor);
  Index ids[2];
  for (int s = 0; s < 2; ++s) {
    RigidBody cube = MakeRigidBox(Vec3(0.05, 0.05, 0.05), 0.25);
    cube.mu1 = cube.mu2 = 0.2;
    cube.x = Vec3(0, s == 0 ? -0.05 : 0.05, 0.05);
    ids[s] = world.AddRigid(cube);
  }
  Joint weld;
  weld.body_i = ids[0];
  weld.body_j = ids[1];
  weld.anchor = Vec3(0, 0, 0.05);
  world.AddJoint(weld);
  world.SetRigidWrench(ids[0], Vec3(0, 2.0, 0), Vec3());
  const Scalar acc = 2.0 / 0.5 - 0.2 * kG;
  Scalar mean = 0;
  int max_iter = 0;
  for (int k = 0; k < 100; ++k) {
    const StepStats s = world.Step();
    EXPECT_TRUE(s.cond.converged) << "step " << k;
    max_iter = std::max(max_iter, s.cond.iterations);
    const Scalar t = world.time();
    const Vec3 com = Scalar(0.5) * (world.rigid_body(ids[0]).x + world.rigid_body(ids[1]).x);
    mean += Norm(com - Vec3(0, 0.5 * acc * t * t, 0.05)) / 100;
  }
  std::printf("welded pair sliding: mean error %.4g mm, most iterations %d\n", mean * 1e3, max_iter);
  EXPECT_LT(mean, 1e-5);
}

TEST(Joint, BadInputIsRejected) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), Params(0.01));
  const Index a = world.AddRigid(MakeRigidBox(Vec3(0.1, 0.1, 0.1), 1));
  Joint j;
  j.body_i = a;
  j.body_j = a;
  EXPECT_THROW(world.AddJoint(j), Error);  // a body with itself
  j.body_j = 7;
  EXPECT_THROW(world.AddJoint(j), Error);  // no such body
  j.body_j = -1;
  j.axis = Vec3();
  EXPECT_THROW(world.AddJoint(j), Error);  // zero axis
  j.axis = Vec3(0, 0, 1);
  j.k_lin = -1;
  EXPECT_THROW(world.AddJoint(j), Error);
  j.k_lin = 0;
  const Index fixed = world.AddJoint(j);
  j.type = JointType::kPrismatic;
  const Index slide = world.AddJoint(j);
  EXPECT_THROW(world.SetJointDrive(fixed, JointDrive()), Error);  // nothing to drive
  EXPECT_THROW(world.SetJointDrive(slide + 1, JointDrive()), Error);
  JointDrive bad;
  bad.k = std::nan("");
  EXPECT_THROW(world.SetJointDrive(slide, bad), Error);
}

}  // namespace
}  // namespace condsim
