// The health stage (models/world/health.h): a body beyond world.health's speed, distance or
// kinetic-energy-growth bound stops the world with a DivergenceError naming the body and the
// step, and a healthy step reports the measured values. References: v-hat = v + F t / (2 m) of a
// free body under a constant force (midpoint rule, eq. 4) and its energy m v-hat^2 / 2. A step,
// also one that throws, leaves no profiler range open (condsim/profile.h).
#include <gtest/gtest.h>

#include <string>

#include "condsim/profile.h"
#include "models/world/world.h"

namespace condsim {
namespace {

WorldParams ZeroGravity() {
  WorldParams p;
  p.gravity = Vec3(0, 0, 0);
  return p;
}

// throws-or-not helper: the message of the DivergenceError of the first step, or ""
std::string FirstStepDivergence(World* world) {
  try {
    world->Step();
  } catch (const DivergenceError& e) {
    EXPECT_EQ(e.step(), 0);
    // the step's profiler ranges closed on the way out (condsim/profile.h)
    EXPECT_EQ(ProfileRange::Depth(), 0);
    return e.what();
  }
  EXPECT_EQ(ProfileRange::Depth(), 0);
  return "";
}

TEST(WorldHealth, HealthyStepReportsSpeedAndEnergy) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), ZeroGravity());
  RigidBody ball = MakeRigidSphere(0.1, 2.0);
  ball.v = Vec3(3, 0, 0);
  world.AddRigid(ball);
  const StepStats s = world.Step();
  EXPECT_EQ(ProfileRange::Depth(), 0);  // the step's profiler ranges all closed
  // a free body: v-hat = v, E = m v^2 / 2 = 9 J (to rounding)
  EXPECT_NEAR(s.health.max_speed, 3, 1e-12);
  EXPECT_NEAR(s.health.kinetic_energy, 9, 1e-10);
  EXPECT_EQ(s.health.fastest_body, 0);
  EXPECT_EQ(s.health.max_distance, 0);  // positions at the step's start
}

TEST(WorldHealth, SpeedBeyondTheLimitDiverges) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams p = ZeroGravity();
  p.health.max_speed = 100;
  World world(backend.get(), p);
  world.AddRigid(MakeRigidSphere(0.1, 1.0));  // body 0, at rest
  RigidBody fast = MakeRigidSphere(0.1, 1.0);
  fast.x = Vec3(5, 0, 0);
  fast.v = Vec3(0, 150, 0);
  world.AddRigid(fast);  // body 1
  const std::string msg = FirstStepDivergence(&world);
  EXPECT_NE(msg.find("body 1 diverged (speed 150 m/s above world.health.max_speed 100 m/s) at step 0"), std::string::npos) << msg;
}

TEST(WorldHealth, DistanceBeyondTheLimitDiverges) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), ZeroGravity());
  RigidBody far = MakeRigidSphere(0.1, 1.0);
  far.x = Vec3(2e4, 0, 0);  // default max_distance 1e4 m
  world.AddRigid(far);
  const std::string msg = FirstStepDivergence(&world);
  EXPECT_NE(msg.find("body 0 diverged (a coordinate of 20000 m, outside world.health.max_distance 10000 m)"), std::string::npos) << msg;
}

TEST(WorldHealth, EnergyJumpDiverges) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World world(backend.get(), ZeroGravity());
  const Index id = world.AddRigid(MakeRigidSphere(0.1, 1.0));
  // step 0 at rest: E = 0, the floor is 1 kg at 1 m/s: 0.5 J
  EXPECT_EQ(world.Step().health.kinetic_energy, 0);
  // then 1e4 N for one step: v-hat = F t / (2 m) = 50 m/s, E = 1250 J > 1e3 * 0.5 J
  world.SetRigidWrench(id, Vec3(1e4, 0, 0), Vec3());
  try {
    world.Step();
    ADD_FAILURE() << "no divergence";
  } catch (const DivergenceError& e) {
    EXPECT_EQ(e.step(), 1);
    EXPECT_NE(std::string(e.what()).find("kinetic energy 1250 J after 0 J"), std::string::npos) << e.what();
  }
  // an ordinary push stays healthy: 1e3 N from rest gives 5 m/s, 12.5 J under the same bound
  World calm(backend.get(), ZeroGravity());
  const Index c = calm.AddRigid(MakeRigidSphere(0.1, 1.0));
  calm.Step();
  calm.SetRigidWrench(c, Vec3(1e3, 0, 0), Vec3());
  EXPECT_NEAR(calm.Step().health.max_speed, 5, 1e-12);
}

TEST(WorldHealth, LimitsAreValidated) {
  WorldParams p;
  p.health.max_energy_growth = 1;
  EXPECT_THROW(p.Validate(), Error);
  p = WorldParams();
  p.health.max_speed = 0;
  EXPECT_THROW(p.Validate(), Error);
}

}  // namespace
}  // namespace condsim
