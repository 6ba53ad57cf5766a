// The sparse coarse solve (docs/solver.md "Sparse coarse solve"): A_c factorized on the host by 6x6
// blocks in AMD patch order (FactorCoarseBlocks, models/cond/body_mode_internal.h), solved on the
// backend by level (BodyModeSparseSolveOp, models/cond/body_mode_sparse_ops.h).
// - Three bodies in one launch: a 9 x 6 grid of patches and a 3 x 3 one (random block-sparse SPD
//   coarse matrices with 9-point patch coupling, ill-scaled diagonals, a skew part the
//   symmetrization removes) and a body with a non-positive diagonal entry. Reference: Eigen's
//   dense LLT of D^-1/2 sym(A_c) D^-1/2 + 1e-10 I, dv = -D^-1/2 (.)^-1 D^-1/2 g, to 1e-12 relative
//   (the scaled matrices are diagonally dominant, condition numbers below 10^2); the failed body's
//   dv exactly 0; 1 and 2 threads.
// - The level schedule: every block a row reads belongs to an earlier level (forward and backward),
//   and the lanes of each phase in reversed and shuffled order give the serial result bitwise.
// - CUDA: the CPU's dv to 1e-13 relative (skipped without a usable device).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/parallel.h"
#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "test_util.h"

namespace condsim {
namespace {

using MatX = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

// a body's coarse matrix by blocks: the block pattern of a w x h grid of patches with 9-point
// coupling, and the dense matrix the blocks come from
struct Coarse {
  Index m = 0;
  std::vector<Index> ptr{0}, col;
  std::vector<Scalar> values;
  MatX dense;
};

Coarse GridCoarse(int w, int h, std::mt19937_64* rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  Coarse c;
  c.m = w * h;
  const int n = 6 * c.m;
  MatX sym = MatX::Zero(n, n), skew = MatX::Zero(n, n);
  const auto coupled = [w](int p, int q) { return std::abs(p % w - q % w) <= 1 && std::abs(p / w - q / w) <= 1; };
  for (int p = 0; p < c.m; ++p)
    for (int q = 0; q < p; ++q)
      if (coupled(p, q))
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) {
            sym(6 * p + i, 6 * q + j) = sym(6 * q + j, 6 * p + i) = u(*rng);
            const double s = 0.3 * u(*rng);
            skew(6 * p + i, 6 * q + j) = s;
            skew(6 * q + j, 6 * p + i) = -s;
          }
  // diagonally dominant: SPD with a unit-diagonal condition number below 10^2
  for (int i = 0; i < n; ++i) sym(i, i) = sym.row(i).cwiseAbs().sum() + 0.5 + u(*rng) * 0.25;
  Eigen::VectorXd d(n);
  for (int i = 0; i < n; ++i) d(i) = std::pow(10.0, 3 * u(*rng));
  c.dense = d.cwiseSqrt().asDiagonal() * (sym + skew) * d.cwiseSqrt().asDiagonal();
  for (int p = 0; p < c.m; ++p) {
    for (int q = 0; q < c.m; ++q) {
      if (!coupled(p, q)) continue;
      c.col.push_back(q);
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) c.values.push_back(c.dense(6 * p + i, 6 * q + j));
    }
    c.ptr.push_back(Index(c.col.size()));
  }
  return c;
}

// dv = -D^-1/2 (D^-1/2 sym(A_c) D^-1/2 + 1e-10 I)^-1 D^-1/2 g by a dense LLT
Eigen::VectorXd DenseSolve(const MatX& a, const Eigen::VectorXd& g) {
  const MatX sym = 0.5 * (a + a.transpose());
  const Eigen::VectorXd s = sym.diagonal().cwiseSqrt().cwiseInverse();
  const MatX scaled = s.asDiagonal() * sym * s.asDiagonal() + 1e-10 * MatX::Identity(a.rows(), a.cols());
  return -(s.asDiagonal() * Eigen::LLT<MatX>(scaled).solve(s.asDiagonal() * g)).eval();
}

// the three bodies: factors, the record, g, and the reference dv (the failed body's rows 0)
struct Problem {
  std::vector<Coarse> bodies;
  std::vector<std::unique_ptr<SparseCoarseFactor>> factors;
  BodyModeFactorHost host;
  std::vector<Scalar> g, dv_ref;
  Index patches = 0;
};

Problem MakeProblem() {
  auto rng = test::Rng();
  Problem pr;
  pr.bodies.push_back(GridCoarse(9, 6, &rng));
  pr.bodies.push_back(GridCoarse(2, 2, &rng));
  pr.bodies.back().values[36 * 0 + 7 * 3] = -1;  // patch 0's fourth diagonal entry (block (0, 0))
  pr.bodies.push_back(GridCoarse(3, 3, &rng));
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t k = 0; k < pr.bodies.size(); ++k) {
    const Coarse& c = pr.bodies[k];
    pr.factors.push_back(std::make_unique<SparseCoarseFactor>());
    FactorCoarseBlocks(c.m, c.ptr, c.col, c.values, pr.factors.back().get());
    AppendCoarseFactor(pr.factors.back().get(), pr.patches, c.m, &pr.host);
    Eigen::VectorXd g(6 * c.m);
    for (int i = 0; i < g.size(); ++i) g(i) = u(rng);
    pr.g.insert(pr.g.end(), g.data(), g.data() + g.size());
    const Eigen::VectorXd dv = k == 1 ? Eigen::VectorXd::Zero(g.size()) : DenseSolve(c.dense, g);
    pr.dv_ref.insert(pr.dv_ref.end(), dv.data(), dv.data() + dv.size());
    pr.patches += c.m;
  }
  return pr;
}

// the op on the host's record (plain memory), items run by `run`
template <class Run>
std::vector<Scalar> SolveOnHost(const Problem& pr, Run run) {
  BodyModeFactorView view;
#define CONDSIM_TEST_VIEW(T, name) view.name = pr.host.name.data();
  CONDSIM_BODY_MODE_FACTOR_FIELDS(CONDSIM_TEST_VIEW)
#undef CONDSIM_TEST_VIEW
  std::vector<Scalar> y(6 * pr.host.patch.size(), std::numeric_limits<Scalar>::quiet_NaN());
  std::vector<Scalar> dv(pr.g.size(), std::numeric_limits<Scalar>::quiet_NaN());
  const BodyModeSparseSolveOp op{view, pr.g.data(), y.data(), dv.data()};
  for (Index b = 0; b < Index(pr.bodies.size()); ++b) run(op, b);
  return dv;
}

std::vector<Scalar> SolveOnBackend(BackendChoice choice, int threads, const Problem& pr) {
  BackendOptions o;
  o.cpu_threads = threads;
  auto backend = MakeBackend(choice, o).backend;
  auto kernels = MakeKernels<CondKernels>(*backend);
  BodyModeFactorArrays f;
  f.Upload(backend.get(), pr.host);
  Array<Scalar> g(backend.get(), pr.g), y(backend.get(), 6 * Index(pr.host.patch.size()));
  Array<Scalar> dv(backend.get(), std::vector<Scalar>(pr.g.size(), std::numeric_limits<Scalar>::quiet_NaN()));
  kernels->BodyModeSparseSolve(Index(pr.bodies.size()), BodyModeSparseSolveOp{f.view(), g.data(), y.data(), dv.data()});
  return dv.ToHost();
}

double RelativeError(const std::vector<Scalar>& a, const std::vector<Scalar>& ref) {
  double diff = 0, scale = 0;
  for (std::size_t k = 0; k < ref.size(); ++k) {
    diff = std::max(diff, std::fabs(double(a[k]) - double(ref[k])));
    scale = std::max(scale, std::fabs(double(ref[k])));
  }
  return std::isfinite(diff) ? diff / scale : std::numeric_limits<double>::infinity();
}

TEST(CondSparseCoarse, SolveEqualsTheDenseFactorization) {
  const Problem pr = MakeProblem();
  EXPECT_TRUE(pr.factors[0]->ok);
  EXPECT_FALSE(pr.factors[1]->ok);
  EXPECT_TRUE(pr.factors[2]->ok);
  for (const int threads : {1, 2}) {
    const std::vector<Scalar> dv = SolveOnBackend(BackendChoice::kCpu, threads, pr);
    const double err = RelativeError(dv, pr.dv_ref);
    std::cout << "[ info     ] " << threads << " threads: dv against the dense LLT, relative " << err << ", levels forward "
              << pr.factors[0]->fwd_ptr.size() - 1 << " and backward " << pr.factors[0]->bwd_ptr.size() - 1 << " for 54 patches\n";
    EXPECT_LT(err, 1e-12);
    // the failed body: exactly 0
    for (Index k = 6 * 54; k < 6 * 58; ++k) EXPECT_EQ(dv[std::size_t(k)], 0) << k;
  }
}

TEST(CondSparseCoarse, LevelsReadOnlyEarlierLevelsAndAnyLaneOrderGivesTheSameBits) {
  const Problem pr = MakeProblem();
  for (const auto& factor : pr.factors) {
    const SparseCoarseFactor& f = *factor;
    if (!f.ok) continue;
    const Index m = Index(f.order.size());
    std::vector<Index> fwd(std::size_t(m), -1), bwd(std::size_t(m), -1);
    for (Index l = 0; l + 1 < Index(f.fwd_ptr.size()); ++l)
      for (Index t = f.fwd_ptr[std::size_t(l)]; t < f.fwd_ptr[std::size_t(l) + 1]; ++t) fwd[std::size_t(f.fwd_row[std::size_t(t)])] = l;
    for (Index l = 0; l + 1 < Index(f.bwd_ptr.size()); ++l)
      for (Index t = f.bwd_ptr[std::size_t(l)]; t < f.bwd_ptr[std::size_t(l) + 1]; ++t) bwd[std::size_t(f.bwd_row[std::size_t(t)])] = l;
    for (Index k = 0; k < m; ++k) {
      ASSERT_GE(fwd[std::size_t(k)], 0) << "row " << k << " in no forward level";
      ASSERT_GE(bwd[std::size_t(k)], 0) << "row " << k << " in no backward level";
      for (Index e = f.row_ptr[std::size_t(k)]; e < f.row_ptr[std::size_t(k) + 1]; ++e)
        EXPECT_LT(fwd[std::size_t(f.row_col[std::size_t(e)])], fwd[std::size_t(k)]);
      for (Index e = f.col_ptr[std::size_t(k)]; e < f.col_ptr[std::size_t(k) + 1]; ++e)
        EXPECT_LT(bwd[std::size_t(f.col_row[std::size_t(e)])], bwd[std::size_t(k)]);
    }
  }
  const std::vector<Scalar> serial = SolveOnHost(pr, [](const BodyModeSparseSolveOp& op, Index b) { op(b); });
  EXPECT_LT(RelativeError(serial, pr.dv_ref), 1e-12);
  std::vector<Index> reversed(BodyModeSparseSolveOp::kLanes), shuffled;
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  shuffled = reversed;
  auto rng = test::Rng();
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (const std::vector<Index>* lanes : {&reversed, &shuffled}) {
    const std::vector<Scalar> dv =
        SolveOnHost(pr, [lanes](const BodyModeSparseSolveOp& op, Index b) { cpu::RunLanes(op, b, lanes->data()); });
    for (std::size_t k = 0; k < dv.size(); ++k) ASSERT_EQ(dv[k], serial[k]) << k << (lanes == &reversed ? " reversed" : " shuffled");
  }
}

TEST(CondSparseCoarse, CudaMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  const Problem pr = MakeProblem();
  const std::vector<Scalar> cpu = SolveOnBackend(BackendChoice::kCpu, 1, pr), gpu = SolveOnBackend(BackendChoice::kCuda, 1, pr);
  EXPECT_LT(RelativeError(gpu, cpu), 1e-13);
}

}  // namespace
}  // namespace condsim
