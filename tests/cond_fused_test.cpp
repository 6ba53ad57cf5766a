// The COND solver's Chebyshev acceleration (Alg. 3) and the CPU's fused vector passes
// (CondParams::fused_passes, cond_ops.h) on the CPU backend:
// - Chebyshev on a stiff mass-spring net on a plane: fewer iterations, same v (against the plain
//   iteration); the safeguard's restart with the fixed and the rate bounds on a scripted residual;
// - the fused passes against the separate kernels: bitwise the same iterates, alone and in a
//   batch with a failing environment, and the shipped FEM scenes (body modes, contacts, a
//   World's layout) bitwise the same motion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>

#include "condsim/batch.h"
#include "io/scene.h"
#include "fixtures/mass_spring.h"
#include "cond_fixtures.h"
#include "models/cond/chebyshev_state_ops.h"
#include "models/cond/cond_solver.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::Result;
using test::Solve;
using test::Tight;

// a net of nx x ny nodes with random in-plane velocities (sliding, stretching the springs)
// pressed onto the ground; node mass 0.01 kg, springs 1e3 N/m: t^2 k / (2m) = 5 (stiff relative
// to the mass)
MassSpringSystem PressedNet(Index nx, Index ny) {
  auto rng = test::Rng();
  std::vector<Scalar> v0 = test::RandomVector(rng, 3 * nx * ny, -0.5, 0.5);
  for (Index i = 0; i < nx * ny; ++i) v0[3 * i + 2] = -0.2;
  return MakeMassSpringGrid(nx, ny, 0.01, 0.01, 1e3, 0.01, 9.81, 0.5, v0);
}

// ---- mass-spring net: Chebyshev -------------------------------------------------------------

TEST(CondChebyshev, StiffNetOnAPlaneConvergesFasterToTheSameVelocity) {
  const MassSpringSystem s = PressedNet(16, 16);
  CondParams plain = Tight(1e-10), cheb = plain;
  plain.chebyshev = false;
  cheb.chebyshev = true;
  const Result a = Solve(s.a, s.b, s.contacts, plain);
  const Result b = Solve(s.a, s.b, s.contacts, cheb);
  ASSERT_TRUE(a.stats.converged);
  ASSERT_TRUE(b.stats.converged);
  std::cout << "[ info     ] iterations to theta 1e-10: plain " << a.stats.iterations << ", chebyshev "
            << b.stats.iterations << "\n";
  EXPECT_LT(b.stats.iterations, a.stats.iterations);
  // both within theta_th / (1 - rho) of the fixed point: compare at 1e-6 relative
  EXPECT_LT(test::RelativeError(b.v, a.v), 1e-6);
  EXPECT_LE(a.consistency, 1e-8);
  EXPECT_LE(b.consistency, 1e-8);
}

// the safeguard's restart on a scripted residual (CondChebyshevStepOp alone, l_s = 10): a plain
// stretch falling by rho = 0.9999 per iteration, then an accelerated residual growing by 1.2 per
// iteration from its smallest. Reference: the rule of ChebyshevBounds worked by hand. Fixed: the
// first l with 1.2^k > 10 (k = 13) restarts; rate: 1.2^k > 2 / (1 - 0.9999) = 2e4 (k = 55, before
// the window of 2 / sqrt(1e-4) = 200 iterations); and with no growth, at the window (20 and 200)
TEST(CondChebyshev, RateSafeguardLetsTheTransientOfASlowIterationRun) {
  auto first_restart = [](bool rate, double growth_per_iteration) {
    CondChebyshevEnv env;
    CondChebyshevResetOp{10, &env}(0);
    Scalar nu = 1, check[3] = {0, 0, 0};
    unsigned char active = 1;
    const Index dofs[2] = {0, 3};
    double theta = 1;
    for (int l = 0; l < 1000; ++l) {
      // iteration l ran: plain before l_s = 10, then the scripted growth
      theta = l <= 10 ? std::pow(0.9999, l) : theta * growth_per_iteration;
      const Scalar theta2 = Scalar(theta * theta);
      CondChebyshevStepOp{nullptr, nullptr, 0, dofs, &theta2, &active, 1, l, true, 10, 5000, rate, &env, &nu, check}(0);
      if (env.restarts > 0) return l;
    }
    return -1;
  };
  EXPECT_EQ(first_restart(false, 1.2), 10 + 13);
  EXPECT_EQ(first_restart(true, 1.2), 10 + 55);
  EXPECT_EQ(first_restart(false, 1.0), 10 + 20);
  EXPECT_EQ(first_restart(true, 1.0), 10 + 200);
  const ChebyshevBounds slow(true, 1.0, 10), fast(true, 0.5, 10);
  EXPECT_EQ(slow.growth, 2e4);  // capped at 1 - rho = 1e-4
  EXPECT_EQ(slow.window, 200);
  EXPECT_EQ(fast.growth, 10);  // 2 / (1 - rho) = 4 < the fixed 10
  EXPECT_EQ(fast.window, 20);
}

// ---- fused passes ----------------------------------------------------------------------------

// the fused residual / Chebyshev-theta-commit passes (CondParams::fused_passes, cond_ops.h) must
// perform the separate kernels' arithmetic in the same order: v, lambda, the iteration counts and
// every iteration's theta bitwise equal (reference: the separate kernels on the same backend;
// tolerance 0). A net of 60 x 60 nodes has 10800 DOFs, three reduction chunks (with two, any
// fold order gives the same sum). A batch with its environments out of node order runs the
// per-DOF pass of CUDA (CondChebyshevDiffCommitOp) against the same separate kernels
TEST(CondFused, FusedPassesGiveTheSeparateKernelsIterates) {
  const Index nx = 60, ny = 60;
  const MassSpringSystem s = PressedNet(nx, ny);
  auto expect_same = [](const Result& fused, const Result& plain, const std::string& what) {
    EXPECT_EQ(fused.stats.iterations, plain.stats.iterations) << what;
    EXPECT_EQ(fused.stats.history, plain.stats.history) << what;
    // bitwise (a failed environment's impulses may hold NaN, which == would reject)
    auto bitwise = [](const std::vector<Scalar>& x, const std::vector<Scalar>& y) {
      return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(Scalar) * x.size()) == 0;
    };
    EXPECT_TRUE(bitwise(fused.v, plain.v)) << what;
    EXPECT_TRUE(bitwise(fused.lambda, plain.lambda)) << what;
    EXPECT_EQ(fused.stats.failed_envs, plain.stats.failed_envs) << what;
  };
  for (StepSize step : {StepSize::kFrobenius, StepSize::kBB1}) {
    for (bool cheb : {true, false}) {
      CondParams params = Tight(1e-10);
      params.max_iterations = 400;
      params.step_size = step;
      params.chebyshev = cheb;
      params.record_history = true;
      CondParams separate = params;
      separate.fused_passes = false;
      const std::string what = std::string(ToString(step)) + (cheb ? " chebyshev" : " plain");
      for (int threads : {1, 2}) {
        const Result fused = Solve(s.a, s.b, s.contacts, params, {}, {}, threads);
        const Result plain = Solve(s.a, s.b, s.contacts, separate, {}, {}, 1);
        ASSERT_GT(fused.stats.iterations, 20) << what;
        expect_same(fused, plain, what + " threads " + std::to_string(threads));
      }
    }
  }
  // a batch of 3 nets, the middle one poisoned: it fails and keeps its last finite iterate
  std::vector<BlockMatrix> mats(3, s.a);
  std::vector<Scalar> b;
  std::vector<Index> node_env;
  ContactSet all;
  for (int e = 0; e < 3; ++e) {
    b.insert(b.end(), s.b.begin(), s.b.end());
    if (e == 1) b[b.size() - 7] = std::nan("");
    for (Index k = 0; k < nx * ny; ++k) node_env.push_back(e);
    for (Index m = 0; m < s.contacts.size(); ++m)
      all.Add(s.contacts.node_i[m] + nx * ny * e, -1, s.contacts.Frame(m), s.contacts.phi[m], s.contacts.mu1[m], s.contacts.mu2[m], e);
  }
  const PackedBatch packed = PackBlockDiagonal(mats);
  CondParams params = Tight(1e-10);
  params.max_iterations = 400;
  params.record_history = true;
  CondParams separate = params;
  separate.fused_passes = false;
  const Result fused = Solve(packed.matrix, b, all, params, {}, node_env);
  const Result plain = Solve(packed.matrix, b, all, separate, {}, node_env);
  EXPECT_EQ(fused.stats.failed_envs, std::vector<int>{1});
  expect_same(fused, plain, "batch");
  EXPECT_EQ(fused.stats.env_iterations, plain.stats.env_iterations);
  // the environments numbered against the node order (2, 1, 0): a permuted layout, where the
  // per-DOF pass (CondChebyshevDiffCommitOp, CUDA's path) replaces the chunked one
  std::vector<Index> reversed(node_env.size());
  for (std::size_t k = 0; k < node_env.size(); ++k) reversed[k] = 2 - node_env[k];
  ContactSet all_reversed;
  for (Index m = 0; m < all.size(); ++m)
    all_reversed.Add(all.node_i[m], -1, all.Frame(m), all.phi[m], all.mu1[m], all.mu2[m], 2 - all.env[m]);
  const Result fused_perm = Solve(packed.matrix, b, all_reversed, params, {}, reversed);
  const Result plain_perm = Solve(packed.matrix, b, all_reversed, separate, {}, reversed);
  EXPECT_EQ(fused_perm.stats.failed_envs, std::vector<int>{1});
  expect_same(fused_perm, plain_perm, "permuted batch");
  EXPECT_EQ(fused_perm.stats.env_iterations, plain_perm.stats.env_iterations);
  // and each environment iterates as in the contiguous layout
  for (int e = 0; e < 3; ++e) EXPECT_EQ(fused_perm.stats.env_iterations[std::size_t(e)], fused.stats.env_iterations[std::size_t(2 - e)]);
}

// the shipped FEM scenes (the patch level with its halo rows, the free-body level, barycentric
// hosts on the soft gripper, truncated modes on the mat, a World's node layout with contacts):
// the fused residual, body-mode W step (BodyModeApplyStepOp; r kept for the gripper's barycentric
// hosts) and Chebyshev-theta-commit passes must give the separate kernels' motion bitwise: every step's iterations, the FEM bodies' positions and velocities after 8 steps
// (reference: fused_passes = false; tolerance 0)
TEST(CondFused, ShippedFemScenesMoveAsWithTheSeparateKernels) {
  struct Case {
    const char* scene;
    bool truncated;
  };
  for (const Case& c : {Case{"soft_mat_folding", false}, Case{"soft_mat_folding", true}, Case{"soft_ball_gripping", false},
                        Case{"soft_gripper", false}}) {
    SCOPED_TRACE(std::string(c.scene) + (c.truncated ? " truncated_modes" : ""));
    std::vector<std::vector<Scalar>> state[2];
    std::vector<int> iterations[2];
    for (int fused = 0; fused < 2; ++fused) {
      Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + c.scene + ".json");
      scene.world.cond.fused_passes = fused == 1;
      scene.world.cond.truncated_modes = c.truncated;
      auto be = MakeBackend(BackendChoice::kCpu).backend;
      SceneWorld sw = BuildWorld(scene, be.get());
      for (int k = 0; k < 8; ++k) {
        ApplyControls(scene, &sw);
        iterations[fused].push_back(sw.world->Step().cond.iterations);
      }
      for (Index id : sw.fem_ids) {
        state[fused].push_back(sw.world->FemPositions(id));
        state[fused].push_back(sw.world->FemVelocities(id));
      }
    }
    ASSERT_FALSE(state[0].empty());
    EXPECT_EQ(iterations[1], iterations[0]);
    ASSERT_EQ(state[1].size(), state[0].size());
    for (std::size_t k = 0; k < state[0].size(); ++k) {
      ASSERT_EQ(state[1][k].size(), state[0][k].size());
      EXPECT_EQ(std::memcmp(state[1][k].data(), state[0][k].data(), sizeof(Scalar) * state[0][k].size()), 0) << "array " << k;
    }
  }
}

}  // namespace
}  // namespace condsim
