// The parallel two-finger gripper (models/world/gripper.h) lifting a soft FEM ball off the floor
// (cond-paper Sec. V-C4 style: rigid gripper with prismatic fingers, co-rotational FEM ball,
// E = 0.5 MPa, nu = 0.35, mu 0.5-0.8). References: kinematics (the ball's centre must follow the
// palm: slip relative to the palm <= 1 mm over a 2 s hold, the acceptance item), statics (while
// held, the fingers' contact forces carry the ball's weight), the commanded pad gap of an empty
// gripper, and input validation.
#include <gtest/gtest.h>

#include <cmath>

#include "models/world/gripper.h"
#include "test_util.h"

namespace condsim {
namespace {

// smoothstep from 0 to 1 over [t0, t1]: starts and ends at rest
Scalar Smooth(Scalar t, Scalar t0, Scalar t1) {
  const Scalar s = std::min(std::max((t - t0) / (t1 - t0), Scalar(0)), Scalar(1));
  return s * s * (3 - 2 * s);
}

// deepest ball vertex inside a rigid body's box [m]
Scalar Penetration(const RigidBody& body, const std::vector<Scalar>& x) {
  StaticShape box;
  box.type = body.shape;
  box.center = body.x;
  box.orientation = body.q;
  box.size = body.size;
  Scalar worst = 0;
  for (std::size_t i = 0; i < x.size() / 3; ++i) worst = std::max(worst, -ShapeProximity(box, LoadVec3(x.data(), Index(i))).distance);
  return worst;
}

Vec3 Centroid(const std::vector<Scalar>& x) {
  Vec3 c;
  const Index n = static_cast<Index>(x.size() / 3);
  for (Index i = 0; i < n; ++i) c += LoadVec3(x.data(), i);
  return (Scalar(1) / Scalar(n)) * c;
}

TEST(Gripper, LiftsSoftBallAndHoldsItWithoutSlip) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams wp;
  wp.dt = 0.01;
  wp.cond.theta_threshold = 1e-5;  // the paper's gripping threshold (Sec. V-C4)
  wp.cond.max_iterations = 5000;
  World world(backend.get(), wp);
  StaticShape floor;
  floor.type = ShapeType::kPlane;
  floor.mu1 = floor.mu2 = 0.5;
  world.AddStatic(floor);
  // the ball: R = 3 cm resting on the floor
  const Scalar radius = 0.03;
  FemMaterial mat;
  mat.young = 5e5;
  mat.poisson = 0.35;
  mat.density = 1000;
  mat.rayleigh_alpha = 5;
  const TetMesh mesh = MakeSphereMesh(Vec3(0, 0, radius), radius, 0.012);
  const Index ball = world.AddFem(mesh, mat, "ball", 0.5, false);
  // the gripper open around the ball, pads at its equator
  GripperParams gp;
  gp.opening = 0.09;
  gp.finger_half = Vec3(0.005, 0.015, 0.025);
  gp.position = Vec3(0, 0, radius + gp.palm_half[2] + 0.02);  // finger tips level with the floor
  gp.mu = 0.8;
  gp.drive_k = 400;
  gp.drive_d = 20;
  const Gripper g = AddParallelGripper(&world, gp);
  const Vec3 palm0 = gp.position;
  // closing to 2 cm under the ball's diameter presses each pad with ~4 N (weight 1.1 N)
  const Scalar squeeze_width = 2 * radius - 0.02, lift = 0.05;
  const Scalar t_close = 0.6, t_lift = 1.6, t_end = 3.6;
  PoseDrive palm;
  palm.k_lin = 2e4;
  palm.d_lin = 400;
  palm.k_ang = 50;
  palm.d_ang = 5;
  Vec3 rel_hold;
  Scalar slip = 0, lowest_held = 1, worst_pen = 0, worst_finger = 0;
  long sum_iterations = 0, steps = 0;
  Vec3 mean_finger_force;
  int hold_steps = 0, most_iterations = 0;
  while (world.time() < t_end - 1e-9) {
    const Scalar t = world.time(), tm = t + wp.dt / 2;
    // pads close over [0, t_close], the palm lifts over [t_close, t_lift], then holds
    const Scalar width = gp.opening + (squeeze_width - gp.opening) * Smooth(tm, 0, t_close);
    SetGripperWidth(&world, g, width);
    palm.p = palm0 + Vec3(0, 0, lift * Smooth(tm, t_close, t_lift));
    palm.v = Vec3();
    world.SetPoseDrive(g.palm, palm);
    const StepStats st = world.Step();
    ASSERT_TRUE(st.cond.converged) << "t = " << t << ": " << st.cond.iterations << " iterations, " << st.contacts << " contacts";
    most_iterations = std::max(most_iterations, st.cond.iterations);
    const std::vector<Scalar> x = world.FemPositions(ball);
    for (std::size_t i = 2; i < x.size(); i += 3) worst_pen = std::max(worst_pen, -x[i]);
    for (Index f : g.finger) worst_finger = std::max(worst_finger, Penetration(world.rigid_body(f), x));
    sum_iterations += st.cond.iterations;
    ++steps;
    const Vec3 rel = Centroid(x) - world.rigid_body(g.palm).x;
    if (world.time() >= t_lift + 1e-9) {
      if (hold_steps == 0) rel_hold = rel;
      slip = std::max(slip, Norm(rel - rel_hold));
      for (std::size_t i = 2; i < x.size(); i += 3) lowest_held = std::min(lowest_held, x[i]);
      mean_finger_force += world.BodyWrench(ball).force;
      ++hold_steps;
    }
  }
  mean_finger_force = (Scalar(1) / hold_steps) * mean_finger_force;
  Scalar mass = 0;
  for (Scalar m : world.fem_model(ball).lumped_mass()) mass += m;
  std::printf("gripper: slip over the 2 s hold %.4f mm, lowest ball point %.2f mm above the floor, mean contact force %.4f N "
              "(weight %.4f N), penetration floor %.3g mm / fingers %.4f mm, pad gap %.2f mm, iterations mean %.0f most %d\n",
              slip * 1e3, lowest_held * 1e3, mean_finger_force[2], mass * 9.81, worst_pen * 1e3, worst_finger * 1e3,
              GripperWidth(world, g) * 1e3, double(sum_iterations) / double(steps), most_iterations);
  EXPECT_LE(slip, 1e-3);
  EXPECT_GT(lowest_held, 0.03);  // lifted off the floor (by 5 cm, less its sag)
  // statics: the fingers' contact forces carry the ball (mean over the hold)
  EXPECT_NEAR(mean_finger_force[2], mass * 9.81, 0.01 * mass * 9.81);
  EXPECT_LT(worst_finger, 1e-4);
  EXPECT_LT(worst_pen, 1e-4);
}

// an empty gripper closes to the commanded pad gap (no load on the slides: the drive's static
// error is zero) and hangs still from its pose-driven palm
TEST(Gripper, EmptyGripperReachesCommandedWidth) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams wp;
  wp.dt = 0.01;
  wp.cond.theta_threshold = 1e-10;
  World world(backend.get(), wp);
  GripperParams gp;
  gp.position = Vec3(0.1, 0.2, 0.5);
  gp.orientation = FromRotationVector(Vec3(0, 0, 0.7));
  const Gripper g = AddParallelGripper(&world, gp);
  PoseDrive palm;
  palm.k_lin = 2e4;
  palm.d_lin = 400;
  palm.k_ang = 50;
  palm.d_ang = 5;
  palm.p = gp.position;
  palm.q = gp.orientation;
  world.SetPoseDrive(g.palm, palm);
  SetGripperWidth(&world, g, 0.04);
  for (int k = 0; k < 300; ++k) world.Step();
  Scalar worst_joint = 0;
  for (Index j : g.joint) worst_joint = std::max(worst_joint, world.JointConstraintError(j).position);
  std::printf("empty gripper: pad gap %.6f m (commanded 0.04), joint error %.3g m\n", GripperWidth(world, g), worst_joint);
  EXPECT_NEAR(GripperWidth(world, g), 0.04, 1e-6);
  EXPECT_LT(worst_joint, 1e-6);
  // the fingers stay symmetric about the palm along its x axis
  const Vec3 ax = ToMatrix(world.rigid_body(g.palm).q).Col(0);
  const Vec3 mid = Scalar(0.5) * (world.rigid_body(g.finger[0]).x + world.rigid_body(g.finger[1]).x);
  EXPECT_NEAR(Dot(mid - world.rigid_body(g.palm).x, ax), 0, 1e-6);
}

TEST(Gripper, BadParametersAreRejected) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), WorldParams());
  GripperParams gp;
  gp.opening = 0;
  EXPECT_THROW(AddParallelGripper(&world, gp), Error);
  gp.opening = 0.1;
  gp.finger_half = Vec3(0.01, -0.01, 0.03);
  EXPECT_THROW(AddParallelGripper(&world, gp), Error);
  gp.finger_half = Vec3(0.01, 0.01, 0.03);
  gp.drive_k = std::nan("");
  EXPECT_THROW(AddParallelGripper(&world, gp), Error);
  gp.drive_k = 100;
  const Gripper g = AddParallelGripper(&world, gp);
  EXPECT_THROW(SetGripperWidth(&world, g, -0.01), Error);
}

}  // namespace
}  // namespace condsim
