// The host's convergence checks every CondParams::check_every iterations (docs/solver.md
// "Convergence checks"). Reference: the same solve checked every iteration. The iterates do not
// depend on k (the Chebyshev state machine runs on the backend every iteration), so a solve
// checked every k iterations stops at the first check whose theta is below theta_th, with that
// theta bitwise; it reads the backend once per check; an environment whose theta is not finite
// between two checks keeps its last finite iterate, and the others are bitwise as alone. And the
// node layout a World sets again before every solve is kept (no DOF-sized upload), and a new
// layout makes the momentum check's masks on the backend (MomentumMaskOp) as the host made them.
#include <gtest/gtest.h>

#include <cmath>

#include "cond_fixtures.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::MakeRandomProblem;
using test::RandomProblem;
using test::Result;
using test::Solve;

// the iteration count of a solve checked every k iterations (at most m): the first check l + 1
// (a multiple of k, or m) whose theta (history[l], checked every iteration) is below threshold
int ExpectedStop(const std::vector<double>& history, int k, int m, double threshold) {
  for (int l = 0; l < m; ++l)
    if (((l + 1) % k == 0 || l + 1 == m) && history[std::size_t(l)] < threshold) return l + 1;
  return m;
}

TEST(CondCheck, StopsAtTheFirstCheckBelowTheThreshold) {
  auto rng = test::Rng();
  const RandomProblem p = MakeRandomProblem(rng, 40, 8, 5, 0.3);
  for (bool chebyshev : {true, false}) {
    // theta of every iteration, never stopping (theta_th far below what double reaches)
    CondParams all = test::Tight(1e-300);
    all.chebyshev = chebyshev;
    all.max_iterations = 150;
    all.record_history = true;
    const Result every = Solve(p.a, p.b, p.contacts, all);
    ASSERT_EQ(every.stats.history.size(), 150u);
    // a threshold the sequence passes about a third of the way
    const double threshold = every.stats.history[50] * 1.000001;
    for (int k : {1, 2, 3, 4, 7, 200}) {
      CondParams params = all;
      params.record_history = false;
      params.theta_threshold = threshold;
      params.check_every = k;
      const Result r = Solve(p.a, p.b, p.contacts, params);
      const int stop = ExpectedStop(every.stats.history, k, 150, threshold);
      const std::string what = "k = " + std::to_string(k) + (chebyshev ? ", Chebyshev" : ", plain");
      EXPECT_EQ(r.stats.iterations, stop) << what;
      // the theta of the stopping iteration, exactly (the same iterates)
      EXPECT_EQ(r.stats.residual, every.stats.history[std::size_t(stop - 1)]) << what;
      EXPECT_EQ(r.stats.converged, every.stats.history[std::size_t(stop - 1)] < threshold) << what;
      // one download per check, nothing uploaded in the loop (one environment)
      EXPECT_EQ(r.stats.loop_counters.downloads, (stop + k - 1) / k) << what;
      EXPECT_EQ(r.stats.loop_counters.uploads, 0) << what;
      // plain iterations: v is the iterate of a solve run for exactly that many iterations
      if (!chebyshev) {
        CondParams fixed = all;
        fixed.record_history = false;
        fixed.max_iterations = stop;
        const Result ref = Solve(p.a, p.b, p.contacts, fixed);
        EXPECT_EQ(r.v, ref.v) << what;
        EXPECT_EQ(r.lambda, ref.lambda) << what;
      }
    }
  }
}

// a NaN between two checks (check_every 5) in a batch of 4: the failed environment keeps its
// last finite iterate and the others iterate as alone, with the fused passes (the chunked pass;
// with the environments numbered against the node order, the per-DOF pass of CUDA, which commits
// before the state machine and restores at the check) and the separate kernels
TEST(CondCheck, FailureBetweenChecksKeepsTheLastFiniteIterate) {
  auto rng = test::Rng();
  std::vector<RandomProblem> envs;
  for (int e = 0; e < 4; ++e) envs.push_back(MakeRandomProblem(rng, 12, 3, 1, 0.3));
  // environment 2 is poisoned with a NaN in b: theta is NaN at iteration 0, between the checks
  envs[2].b[5] = std::nan("");
  const test::PackedProblems all = test::PackProblems(envs);
  std::vector<Scalar> v0;
  for (int k = 0; k < 4 * 36; ++k) v0.push_back(Scalar(0.01) * Scalar(k % 36 % 7));
  // the same batch with environment e numbered 3 - e (a permuted layout)
  std::vector<Index> reversed(all.node_env.size());
  for (std::size_t k = 0; k < reversed.size(); ++k) reversed[k] = 3 - all.node_env[k];
  ContactSet contacts_reversed;
  for (Index m = 0; m < all.contacts.size(); ++m)
    contacts_reversed.Add(all.contacts.node_i[m], all.contacts.node_j[m], all.contacts.Frame(m), all.contacts.phi[m],
                          all.contacts.mu1[m], all.contacts.mu2[m], 3 - all.contacts.env[m]);
  for (int mode = 0; mode < 3; ++mode) {
    const bool fused = mode != 1, permuted = mode == 2;
    CondParams params = test::Tight(1e-11);
    params.check_every = 5;
    params.fused_passes = fused;
    const Result batch = Solve(all.packed.matrix, all.b, permuted ? contacts_reversed : all.contacts, params, v0,
                               permuted ? reversed : all.node_env);
    const std::string what = permuted ? "per-DOF fused pass" : fused ? "fused passes" : "separate kernels";
    EXPECT_EQ(batch.stats.failed_envs, std::vector<int>{permuted ? 1 : 2}) << what;
    // the failed environment keeps its initial iterate (its last finite one)
    const std::vector<Scalar> failed(batch.v.begin() + 72, batch.v.begin() + 108);
    EXPECT_EQ(failed, std::vector<Scalar>(v0.begin() + 72, v0.begin() + 108)) << what;
    for (int e : {0, 1, 3}) {
      const std::vector<Scalar> start(v0.begin() + 36 * e, v0.begin() + 36 * (e + 1));
      const Result alone = Solve(envs[e].a, envs[e].b, envs[e].contacts, params, start);
      ASSERT_TRUE(alone.stats.converged) << what;
      EXPECT_EQ(alone.stats.iterations % 5, 0) << what;
      EXPECT_EQ(batch.stats.env_iterations[permuted ? 3 - e : e], alone.stats.iterations) << what << ", env " << e;
      const std::vector<Scalar> part(batch.v.begin() + 36 * e, batch.v.begin() + 36 * (e + 1));
      EXPECT_EQ(part, alone.v) << what << ", env " << e;
    }
  }
}

}  // namespace
}  // namespace condsim

namespace condsim {
namespace {

// a World sets the same node environments before every solve: the solver keeps its prepared
// layout, so a second solve's setup uploads no DOF-sized array (before: the node layout was
// prepared again, and the momentum check's three masks, 3 x 3n x 8 B, went up every solve).
// Reference: the size of one such mask, 3n x 8 B, against the setup's upload bytes (exact counts)
TEST(CondLayout, TheSameNodeEnvironmentsKeepThePreparedLayout) {
  auto rng = test::Rng();
  const Index nodes = 300;
  const RandomProblem p = MakeRandomProblem(rng, nodes, 8, 5, 0.3);
  auto backend = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  auto a = backend->CreateMatrix(p.a.pattern);
  a->SetValues(p.a.values);
  Array<Scalar> b(backend.get(), p.b), v(backend.get(), std::vector<Scalar>(p.b.size(), 0));
  CondSolver solver(backend.get(), test::Tight(1e-9));
  // the momentum check on (one body of mass 2 per DOF)
  solver.SetMassDiagonal(std::vector<Scalar>(p.b.size(), 2), {0});
  const std::vector<Index> node_env(std::size_t(nodes), 0);
  std::int64_t setup_up[2] = {0, 0};
  std::vector<Scalar> vhat[2];
  for (int k = 0; k < 2; ++k) {
    backend->Fill(0, &v);
    const BackendCounters before = backend->counters();
    solver.SetNodeEnvironments(node_env);
    solver.SetContacts(p.contacts);
    const CondStats st = solver.Solve(*a, b, &v);
    ASSERT_TRUE(st.converged);
    setup_up[k] = (backend->counters() - before - st.loop_counters).upload_bytes;
    vhat[k] = v.ToHost();
  }
  std::printf("setup uploads: first solve %lld B, second %lld B; one mask %lld B\n", static_cast<long long>(setup_up[0]),
              static_cast<long long>(setup_up[1]), static_cast<long long>(3 * nodes * 8));
  EXPECT_LT(setup_up[1], 3 * nodes * std::int64_t(sizeof(Scalar)));
  // the first prepares the momentum masks on the backend: less than one DOF-sized array uploaded
  // (before, 7c00626: the three masks, 21600 B, and 5378 B now)
  EXPECT_LT(setup_up[0], 3 * nodes * std::int64_t(sizeof(Scalar)));
  EXPECT_EQ(vhat[0], vhat[1]);  // the same solve again (tolerance 0)
}

// MomentumMaskOp against the masks the host built (reference: per DOF k of a body with mass,
// mask_d[k] = 1 for k % 3 == d; tolerance 0): bodies of 1, 7 and 40 nodes and massless ones,
// the first and the last body without mass
TEST(CondLayout, MomentumMasksOnTheBackendEqualTheHostMasks) {
  const std::vector<Index> nodes_per_body = {3, 1, 7, 2, 40, 5};
  const std::vector<unsigned char> massive = {0, 1, 1, 0, 1, 0};
  std::vector<Index> offsets{0};
  for (Index n : nodes_per_body) offsets.push_back(offsets.back() + 3 * n);
  const Index n = offsets.back();
  std::vector<Scalar> expect[3];
  for (auto& m : expect) m.assign(std::size_t(n), 0);
  for (std::size_t b = 0; b < massive.size(); ++b)
    for (Index k = offsets[b]; k < offsets[b + 1]; ++k)
      if (massive[b]) expect[k % 3][std::size_t(k)] = 1;
  auto backend = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  auto kernels = MakeKernels<CondKernels>(*backend);
  Array<Index> off(backend.get(), offsets);
  Array<unsigned char> flags(backend.get(), massive);
  Array<Scalar> mask[3] = {Array<Scalar>(backend.get(), n), Array<Scalar>(backend.get(), n), Array<Scalar>(backend.get(), n)};
  kernels->MomentumMask(n, MomentumMaskOp{off.data(), Index(massive.size()), flags.data(), mask[0].data(), mask[1].data(),
                                          mask[2].data()});
  for (int d = 0; d < 3; ++d) EXPECT_EQ(mask[d].ToHost(), expect[d]) << "component " << d;
}

}  // namespace
}  // namespace condsim
