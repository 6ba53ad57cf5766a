// The world (global system with virtual nodes, rigid groups and their contact sweeps, FEM parts)
// on CUDA against the CPU backend: the same scene stepped 30 times with the same contact count at
// every step, and every state within what rounding alone makes of it. The reference for the latter
// is the CPU run with the box moved by 1e-16 m: the pushed box's stick-slip contacts amplify a
// rounding-level difference (measured, H200, 2026-11-27: the CUDA run and the nudged CPU run both
// reach 1e-3 m at step 15, from 1e-14 at step 0), so at each step the CUDA state must lie within
// 10 times the larger of two such nudges' deviations, plus 1e-12 m. The bound is tight over the
// first steps (1e-12 – 1e-9 m to step 6), where a kernel error would show; from step 12 on it is
// centimetres and only the contact counts hold the run.
#include <gtest/gtest.h>

#include "models/world/world.h"
#include "test_util.h"

namespace condsim {
namespace {

struct State {
  Index fem_contacts = 0, cable_contacts = 0, weight_contacts = 0;  // over the run
  std::vector<Vec3> rigid;
  // per step: the contact count and every state (rigid x and omega, FEM and cable nodes)
  std::vector<Index> step_contacts;
  std::vector<std::vector<Scalar>> step_q;
};

State RunScene(BackendChoice choice, const Vec3& nudge = Vec3()) {
  auto backend = MakeBackend(choice).backend;
  WorldParams p;
  p.cond.max_iterations = 60;  // a fixed count: no stopping-rule branch can differ
  p.cond.theta_threshold = 1e-300;
  World world(backend.get(), p);
  StaticShape floor;
  floor.type = ShapeType::kPlane;
  world.AddStatic(floor);
  RigidBody box = MakeRigidBox(Vec3(0.1, 0.1, 0.1), 0.5);
  box.x = Vec3(0, 0, 0.1005) + nudge;
  box.q = FromRotationVector(Vec3(0.01, 0.02, 0.3));
  const Index id = world.AddRigid(box);
  world.SetRigidWrench(id, Vec3(5.0, 0.5, 0), Vec3());
  RigidBody lid = MakeRigidBox(Vec3(0.05, 0.05, 0.02), 0.2);
  lid.x = Vec3(0.01, 0, 0.225);
  world.AddRigid(lid);
  FemMaterial mat;
  mat.young = 2e5;
  world.AddFem(MakeBoxMesh(Vec3(0.3, 0, 0.001), Vec3(0.1, 0.1, 0.1), 2, 2, 2), mat, "cube");
  // FEM-FEM contacts (barycentric virtual nodes on triangles) and a cable crossing itself
  world.AddFem(MakeBoxMesh(Vec3(0.32, 0.01, 0.104), Vec3(0.05, 0.05, 0.05), 2, 2, 2), mat, "small cube");
  RodMaterial rod;
  rod.radius = 0.004;
  const Scalar r = rod.radius;
  world.AddRod(MakePolylineRod({Vec3(-0.3, 0, r), Vec3(-0.1, 0, r), Vec3(-0.1, 0.1, 3 * r + 0.002), Vec3(-0.2, 0.0, 3 * r + 0.002),
                                Vec3(-0.2, -0.1, 3 * r + 0.002)},
                               30),
               rod);
  // a rigid weight on the FEM cube beside the small cube: FEM-node and corner-on-triangle contacts,
  // solved by the rigid-group sweeps (RigidContactSweepOp)
  RigidBody weight = MakeRigidBox(Vec3(0.015, 0.015, 0.01), 0.1);
  weight.x = Vec3(0.35, 0.085, 0.1115);
  const Index weight_id = world.AddRigid(weight);
  State s;
  for (int k = 0; k < 30; ++k) {
    world.Step();
    for (const ContactRecord& c : world.contacts()) {
      s.fem_contacts += (c.body_i == 3 && c.body_j == 2) || (c.body_i == 2 && c.body_j == 3);
      s.cable_contacts += c.body_i == 4 && c.body_j == 4;
      s.weight_contacts += (c.body_i == weight_id && c.body_j == 2) || (c.body_i == 2 && c.body_j == weight_id);
    }
    s.step_contacts.push_back(Index(world.contacts().size()));
    std::vector<Scalar> q;
    for (Index b : {Index(0), Index(1), weight_id}) {
      const RigidBody& body = world.rigid_body(b);
      q.insert(q.end(), {body.x[0], body.x[1], body.x[2], body.omega[0], body.omega[1], body.omega[2]});
    }
    for (const std::vector<Scalar>& part : {world.FemPositions(2), world.FemPositions(3), world.RodPositions(4)})
      q.insert(q.end(), part.begin(), part.end());
    s.step_q.push_back(std::move(q));
  }
  s.rigid = {world.rigid_body(0).x, world.rigid_body(1).x, world.rigid_body(0).omega, world.rigid_body(weight_id).x};
  return s;
}

TEST(WorldParity, CudaStepsMatchCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  const State cpu = RunScene(BackendChoice::kCpu), gpu = RunScene(BackendChoice::kCuda);
  const State nudged_x = RunScene(BackendChoice::kCpu, Vec3(1e-16, 0, 0)), nudged_y = RunScene(BackendChoice::kCpu, Vec3(0, 1e-16, 0));
  ASSERT_EQ(gpu.step_q.size(), cpu.step_q.size());
  for (std::size_t k = 0; k < cpu.step_q.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    EXPECT_EQ(gpu.step_contacts[k], cpu.step_contacts[k]);
    ASSERT_EQ(gpu.step_q[k].size(), cpu.step_q[k].size());
    const double rounding = std::max(test::MaxDiff(nudged_x.step_q[k], cpu.step_q[k]), test::MaxDiff(nudged_y.step_q[k], cpu.step_q[k]));
    EXPECT_LE(test::MaxDiff(gpu.step_q[k], cpu.step_q[k]), 10 * rounding + 1e-12);
  }
}

}  // namespace
}  // namespace condsim

namespace condsim {
namespace {

// determinism: two CPU runs of the same scene agree bitwise
TEST(WorldParity, CpuRunsRepeatBitwise) {
  const State a = RunScene(BackendChoice::kCpu), b = RunScene(BackendChoice::kCpu);
  // every state at every step: the rigid bodies' x and omega, the FEM and cable nodes
  EXPECT_EQ(a.step_q, b.step_q);
  // and the scene did something: the pushed box moved, the lid stayed on it
  EXPECT_GT(a.rigid[0][0], 0.01);
  EXPECT_GT(a.rigid[1][2], 0.2);
  // the barycentric paths ran: FEM-FEM and cable self-contacts
  EXPECT_GT(a.fem_contacts, 0);
  EXPECT_GT(a.cable_contacts, 0);
  // and the weight rests on the cube: it neither falls through nor leaves (the coarse soft cube
  // gives about 2 mm under it)
  EXPECT_GT(a.weight_contacts, 0);
  EXPECT_NEAR(a.rigid[3][2], 0.1115, 5e-3);
}

}  // namespace
}  // namespace condsim
