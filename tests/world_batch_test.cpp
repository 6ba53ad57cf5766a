// Batched worlds (World::AddEnvironment, BuildBatch): environments packed into one system must
// step exactly as each does alone. Reference: the same scene with the same seed built as a world
// of its own; every body state, the per-environment solver statistics and the contact records
// must agree bitwise (tolerance 0: the environments share no arithmetic, and each environment's
// reductions run over its own DOFs in their own order). A failing environment is frozen and
// reported while the others go on exactly as in a batch without it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "condsim/error.h"
#include "io/scene.h"
#include "test_util.h"

namespace condsim {
namespace {

std::string ScenePath(const std::string& name) { return std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name; }

// bitwise equality of two arrays of doubles
bool Same(const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Scalar)) == 0);
}

std::vector<Scalar> Pose(const RigidBody& b) {
  return {b.x[0], b.x[1], b.x[2], b.q.w, b.q.x, b.q.y, b.q.z, b.v[0], b.v[1], b.v[2], b.omega[0], b.omega[1], b.omega[2]};
}

// every body's state of environment `sw` (bodies in scene order), as one vector
std::vector<Scalar> State(const SceneWorld& sw) {
  World& w = *sw.world;
  std::vector<Scalar> out;
  auto add = [&](const std::vector<Scalar>& v) { out.insert(out.end(), v.begin(), v.end()); };
  for (Index id : sw.fem_ids) {
    add(w.FemPositions(id));
    add(w.FemVelocities(id));
  }
  for (Index id : sw.rod_ids) {
    add(w.RodPositions(id));
    add(w.RodVelocities(id));
    add(w.RodAngularVelocities(id));
    add(w.rod_model(id).orientations().ToHost());
  }
  for (Index id : sw.rigid_ids) add(Pose(w.rigid_body(id)));
  for (const Gripper& g : sw.grippers)
    for (Index id : {g.palm, g.finger[0], g.finger[1]}) add(Pose(w.rigid_body(id)));
  return out;
}

// environment env's contact records with scene-local body, shape and mesh ids (every
// environment of the batch has the scene's `shapes` static shapes and `meshes` static meshes)
std::vector<Scalar> Contacts(const World& w, Index env, Index first_body, Index shapes, Index meshes) {
  std::vector<Scalar> out;
  for (const ContactRecord& c : w.contacts()) {
    if (c.env != env) continue;
    const Index bi = c.body_i >= 0 ? c.body_i - first_body : -1, bj = c.body_j >= 0 ? c.body_j - first_body : -1;
    const Index shape = c.shape >= 0 ? c.shape - env * shapes : -1, mesh = c.mesh >= 0 ? c.mesh - env * meshes : -1;
    out.insert(out.end(), {c.position[0], c.position[1], c.position[2], c.lambda[0], c.lambda[1], c.lambda[2], Scalar(bi), Scalar(bj),
                           Scalar(shape), Scalar(mesh)});
  }
  return out;
}

struct BatchCase {
  const char* scene;
  int steps;
  bool truncated = false;      // truncated modes (docs/solver.md "Truncated modes")
  bool sparse_coarse = false;  // and every body's coarse matrix factorized on the host (docs/solver.md
                               // "Sparse coarse solve")
};
// the test's printed parameter (and so its ctest name) without the bytes of a pointer
void PrintTo(const BatchCase& c, std::ostream* os) {
  *os << c.scene << ", " << c.steps << " steps" << (c.truncated ? ", truncated modes" : "") << (c.sparse_coarse ? ", sparse coarse solve" : "");
}

class WorldBatch : public ::testing::TestWithParam<BatchCase> {};

// three seeds of a shipped scene in one world against each alone, step by step
TEST_P(WorldBatch, EnvironmentsStepAsAlone) {
  const BatchCase& c = GetParam();
  const std::uint64_t seeds[] = {3, 11, 29};
  std::vector<Scene> scenes;
  for (std::uint64_t s : seeds) {
    scenes.push_back(LoadScene(ScenePath(c.scene), &s));
    scenes.back().world.cond.truncated_modes = c.truncated;
    if (c.sparse_coarse) scenes.back().world.cond.body_mode_dense_patches = 0;
  }
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  std::vector<SceneWorld> batch = BuildBatch(scenes, backend.get());
  ASSERT_EQ(batch[0].world->num_envs(), 3);
  std::vector<std::unique_ptr<Backend>> own;
  std::vector<SceneWorld> alone;
  for (const Scene& s : scenes) {
    own.push_back(MakeBackend(BackendChoice::kCpu).backend);
    alone.push_back(BuildWorld(s, own.back().get()));
  }
  std::vector<Index> contacts(3, 0);
  for (int step = 0; step < c.steps; ++step) {
    for (std::size_t e = 0; e < 3; ++e) ApplyControls(scenes[e], &batch[e]);
    const StepStats st = batch[0].world->Step();
    for (std::size_t e = 0; e < 3; ++e) {
      ApplyControls(scenes[e], &alone[e]);
      const StepStats ref = alone[e].world->Step();
      const StepStats mine = EnvironmentStats(st, Index(e));
      SCOPED_TRACE(std::string(c.scene) + " seed " + std::to_string(seeds[e]) + " step " + std::to_string(step));
      ASSERT_EQ(mine.cond.iterations, ref.cond.iterations);
      ASSERT_EQ(mine.cond.residual, ref.cond.residual);
      ASSERT_EQ(mine.cond.momentum_error, ref.cond.momentum_error);
      ASSERT_EQ(mine.cond.converged, ref.cond.converged);
      ASSERT_EQ(mine.contacts, ref.contacts);
      ASSERT_EQ(mine.max_penetration, ref.max_penetration);
      ASSERT_EQ(mine.health.kinetic_energy, ref.health.kinetic_energy);
      ASSERT_EQ(mine.health.max_speed, ref.health.max_speed);
      ASSERT_TRUE(Same(State(batch[e]), State(alone[e])));
      const Index shapes = Index(scenes[e].statics.size()), meshes = Index(scenes[e].meshes.size());
      ASSERT_TRUE(Same(Contacts(*batch[e].world, Index(e), batch[e].first_body, shapes, meshes), Contacts(*alone[e].world, 0, 0, 0, 0)));
      contacts[e] += mine.contacts;
    }
  }
  // the comparison covered contacts in every environment
  for (std::size_t e = 0; e < 3; ++e) EXPECT_GT(contacts[e], 0) << "environment " << e << " never touched anything";
}

INSTANTIATE_TEST_SUITE_P(Scenes, WorldBatch,
                         ::testing::Values(BatchCase{"box_sliding.json", 40}, BatchCase{"anisotropic_box.json", 30},
                                           BatchCase{"soft_ball_gripping.json", 60}, BatchCase{"cable_winding.json", 30},
                                           BatchCase{"soft_mat_folding.json", 8}, BatchCase{"soft_gripper.json", 8},
                                           BatchCase{"soft_mat_folding.json", 8, true}, BatchCase{"soft_mat_folding.json", 8, true, true}),
                         [](const ::testing::TestParamInfo<BatchCase>& i) {
                           std::string n = i.param.scene;
                           n = n.substr(0, n.find('.'));
                           if (i.param.truncated) n += "_truncated";
                           if (i.param.sparse_coarse) n += "_sparse_coarse";
                           for (char& ch : n)
                             if (ch == '_') ch = 'X';
                           return n;
                         });

// the box of scenes/box_sliding.json thrown at 2 km/s: beyond world.health.max_speed (1 km/s)
Scene Thrown(Scene s) {
  s.rigid[0].body.v = Vec3{2000, 0, 0};
  return s;
}

// isolating failures: the thrown environment is frozen and reported at step 0; the others step
// bitwise as in a batch without it
TEST(WorldBatchFailure, FailedEnvironmentIsFrozenAndOthersUnchanged) {
  const std::uint64_t seeds[] = {5, 6, 7};
  std::vector<Scene> s;
  for (std::uint64_t seed : seeds) s.push_back(LoadScene(ScenePath("box_sliding.json"), &seed));
  auto b1 = MakeBackend(BackendChoice::kCpu).backend, b2 = MakeBackend(BackendChoice::kCpu).backend;
  std::vector<SceneWorld> with = BuildBatch({s[0], Thrown(s[1]), s[2]}, b1.get());
  std::vector<SceneWorld> without = BuildBatch({s[0], s[2]}, b2.get());
  with[0].world->set_isolate_failures(true);
  const std::vector<Scalar> frozen = State(with[1]);
  for (int step = 0; step < 40; ++step) {
    for (std::size_t e = 0; e < 3; ++e) ApplyControls(s[e], &with[e]);
    ApplyControls(s[0], &without[0]);
    ApplyControls(s[2], &without[1]);
    const StepStats st = with[0].world->Step();
    const StepStats ref = without[0].world->Step();
    SCOPED_TRACE("step " + std::to_string(step));
    // reported once, at the step it happened, naming the environment, body and step
    ASSERT_EQ(st.envs[1].failed, step == 0);
    if (step == 0) {
      EXPECT_EQ(st.envs[1].failed_body, with[1].rigid_ids[0]);
      EXPECT_NE(st.envs[1].failure.find("environment 1, body " + std::to_string(with[1].rigid_ids[0])), std::string::npos) << st.envs[1].failure;
      EXPECT_NE(st.envs[1].failure.find("max_speed"), std::string::npos) << st.envs[1].failure;
      EXPECT_NE(st.envs[1].failure.find("at step 0"), std::string::npos) << st.envs[1].failure;
    }
    EXPECT_TRUE(with[0].world->env_failed(1));
    // after the failing step it is out of the solve and the detection
    if (step > 0) {
      EXPECT_EQ(st.envs[1].iterations, 0);
      EXPECT_EQ(st.envs[1].contacts, 0);
    }
    // frozen where it started, at rest
    std::vector<Scalar> now = State(with[1]), start = frozen;
    for (int k : {7, 8, 9, 10, 11, 12}) now[k] = start[k] = 0;  // velocities: 2000 m/s then 0
    ASSERT_TRUE(Same(now, start));
    const std::vector<Scalar> v = State(with[1]);
    for (int k = 7; k < 13; ++k) ASSERT_EQ(v[std::size_t(k)], 0);
    // the others as without it
    for (auto [e, r] : {std::pair<int, int>{0, 0}, {2, 1}}) {
      ASSERT_EQ(st.envs[e].iterations, ref.envs[r].iterations);
      ASSERT_EQ(st.envs[e].residual, ref.envs[r].residual);
      ASSERT_EQ(st.envs[e].contacts, ref.envs[r].contacts);
      ASSERT_TRUE(Same(State(with[e]), State(without[r])));
    }
  }
}

// an FEM body thrown beyond max_speed (soft_ball_gripping's ball 10 m up, clear of the gripper
// and the floor, at 2 km/s): its environment is frozen at its start (positions as loaded,
// velocities 0) and the other steps as alone
TEST(WorldBatchFailure, FailedFemEnvironmentIsFrozen) {
  const std::uint64_t seeds[] = {1, 2};
  std::vector<Scene> s;
  for (std::uint64_t seed : seeds) s.push_back(LoadScene(ScenePath("soft_ball_gripping.json"), &seed));
  Scene thrown = s[1];
  thrown.fem[0].velocity = Vec3{2000, 0, 0};
  for (std::size_t i = 2; i < thrown.fem[0].mesh.x.size(); i += 3) thrown.fem[0].mesh.x[i] += 10;
  auto b1 = MakeBackend(BackendChoice::kCpu).backend, b2 = MakeBackend(BackendChoice::kCpu).backend;
  std::vector<SceneWorld> with = BuildBatch({s[0], thrown}, b1.get());
  SceneWorld alone = BuildWorld(s[0], b2.get());
  with[0].world->set_isolate_failures(true);
  const Index ball = with[1].fem_ids[0];
  const std::vector<Scalar> x0 = with[0].world->FemPositions(ball);
  for (int step = 0; step < 8; ++step) {
    for (std::size_t e = 0; e < 2; ++e) ApplyControls(e == 0 ? s[0] : thrown, &with[e]);
    ApplyControls(s[0], &alone);
    const StepStats st = with[0].world->Step();
    const StepStats ref = alone.world->Step();
    SCOPED_TRACE("step " + std::to_string(step));
    ASSERT_EQ(st.envs[1].failed, step == 0);
    if (step == 0) {
      EXPECT_EQ(st.envs[1].failed_body, ball);
    }
    ASSERT_TRUE(Same(with[0].world->FemPositions(ball), x0));
    for (Scalar v : with[0].world->FemVelocities(ball)) ASSERT_EQ(v, 0);
    ASSERT_EQ(st.envs[0].iterations, ref.cond.iterations);
    ASSERT_TRUE(Same(State(with[0]), State(alone)));
  }
}

// not isolating (the default): the failure is a DivergenceError naming the environment, and the
// world's state is as before the step
TEST(WorldBatchFailure, WithoutIsolationFailureThrows) {
  const std::uint64_t seeds[] = {5, 6};
  std::vector<Scene> s;
  for (std::uint64_t seed : seeds) s.push_back(LoadScene(ScenePath("box_sliding.json"), &seed));
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  std::vector<SceneWorld> w = BuildBatch({s[0], Thrown(s[1])}, backend.get());
  for (std::size_t e = 0; e < 2; ++e) ApplyControls(s[e], &w[e]);
  const std::vector<Scalar> before = State(w[0]);
  try {
    w[0].world->Step();
    FAIL() << "no DivergenceError";
  } catch (const DivergenceError& e) {
    EXPECT_EQ(e.env(), 1);
    EXPECT_EQ(e.body(), w[1].rigid_ids[0]);
    EXPECT_EQ(e.step(), 0);
  }
  EXPECT_TRUE(Same(State(w[0]), before));
  EXPECT_FALSE(w[0].world->env_failed(1));
}

// an environment without bodies is an error naming it, at the first step
TEST(WorldBatchFailure, EmptyEnvironmentIsAnError) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  World w(backend.get(), WorldParams());
  w.AddRigid(RigidBody());
  w.AddEnvironment();
  w.AddStatic(StaticShape());
  try {
    w.Step();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("environment 1 has no"), std::string::npos) << e.what();
  }
}

// the environments of a batch share /world: another dt is an error naming the scene and field
TEST(WorldBatchFailure, DifferentWorldParametersAreAnError) {
  Scene a = LoadScene(ScenePath("box_sliding.json")), b = a;
  b.world.dt = a.world.dt / 2;
  b.source = "other.json";
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  try {
    BuildBatch({a, b}, backend.get());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("other.json"), std::string::npos) << m;
    EXPECT_NE(m.find("/world/dt"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace condsim
