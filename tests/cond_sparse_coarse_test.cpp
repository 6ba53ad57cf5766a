// The sparse coarse solve (docs/solver.md "Sparse coarse solve"): A_c's patch order and L's block
// structure made on the host (AnalyzeCoarseBlocks, models/cond/body_mode_internal.h), the factor
// and the solve on the backend by levels (BodyModeSparseFactorOp, BodyModeSparseSolveOp,
// models/cond/body_mode_sparse_ops.h).
// - Four bodies in one record: a 9 x 6 grid of patches and a 3 x 3 one (random block-sparse SPD
//   coarse matrices with 9-point patch coupling, ill-scaled diagonals, a skew part the
//   symmetrization removes), a body with a non-positive diagonal entry and an indefinite one with
//   a positive diagonal. Reference: Eigen's dense LLT of D^-1/2 sym(A_c) D^-1/2 + 1e-10 I,
//   dv = -D^-1/2 (.)^-1 D^-1/2 g, to 1e-12 relative (the scaled matrices are diagonally dominant,
//   condition numbers below 10^2); the failed bodies' dv exactly 0; 1 and 2 threads.
// - L's block pattern holds every nonzero of Eigen's simplicial factor in the same order (the
//   symbolic factorization covers the fill); the level schedules read only earlier levels; the
//   lanes of each phase in reversed and shuffled order give the serial factor and dv bitwise.
// - CUDA: the CPU's dv to 1e-13 relative (skipped without a usable device).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/SparseCholesky>
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

// S + 1e-10 I = D^-1/2 sym(A_c) D^-1/2 + 1e-10 I (dense) and D^-1/2
MatX Scaled(const MatX& a, Eigen::VectorXd* s) {
  const MatX sym = 0.5 * (a + a.transpose());
  *s = sym.diagonal().cwiseSqrt().cwiseInverse();
  return s->asDiagonal() * sym * s->asDiagonal() + 1e-10 * MatX::Identity(a.rows(), a.cols());
}

// dv = -D^-1/2 (S + 1e-10 I)^-1 D^-1/2 g by a dense LLT
Eigen::VectorXd DenseSolve(const MatX& a, const Eigen::VectorXd& g) {
  Eigen::VectorXd s;
  const MatX scaled = Scaled(a, &s);
  return -(s.asDiagonal() * Eigen::LLT<MatX>(scaled).solve(s.asDiagonal() * g)).eval();
}

// the bodies: their structure, the record, g, and the reference dv (the failed bodies' rows 0)
struct Problem {
  std::vector<Coarse> bodies;
  std::vector<std::unique_ptr<SparseCoarseFactor>> factors;
  std::vector<bool> good;
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
  // indefinite with a positive diagonal: patch 0's first two rows couple by 10 times their scale
  pr.bodies.push_back(GridCoarse(2, 1, &rng));
  {
    Coarse& c = pr.bodies.back();
    const double x = 10 * std::sqrt(c.values[0] * c.values[7]);
    c.values[1] = c.values[6] = x;
  }
  pr.good = {true, false, true, false};
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t k = 0; k < pr.bodies.size(); ++k) {
    const Coarse& c = pr.bodies[k];
    pr.factors.push_back(std::make_unique<SparseCoarseFactor>());
    AnalyzeCoarseBlocks(c.m, c.ptr, c.col, pr.factors.back().get());
    AppendCoarseFactor(*pr.factors.back(), pr.patches, &pr.host);
    Eigen::VectorXd g(6 * c.m);
    for (int i = 0; i < g.size(); ++i) g(i) = u(rng);
    pr.g.insert(pr.g.end(), g.data(), g.data() + g.size());
    const Eigen::VectorXd dv = pr.good[k] ? DenseSolve(c.dense, g) : Eigen::VectorXd::Zero(g.size());
    pr.dv_ref.insert(pr.dv_ref.end(), dv.data(), dv.data() + dv.size());
    pr.patches += c.m;
  }
  return pr;
}

// the factor's numbers on the host (plain memory)
struct HostValues {
  std::vector<Scalar> scale, diag, val, y, dv;
  std::vector<unsigned char> ok;
  BodyModeFactorValues view() { return BodyModeFactorValues{scale.data(), diag.data(), val.data(), ok.data()}; }
};

BodyModeFactorView HostView(const BodyModeFactorHost& host) {
  BodyModeFactorView view;
#define CONDSIM_TEST_VIEW(T, name) view.name = host.name.data();
  CONDSIM_BODY_MODE_FACTOR_FIELDS(CONDSIM_TEST_VIEW)
#undef CONDSIM_TEST_VIEW
  return view;
}

// both ops on the host's record, each item run by `run` (serial, or lanes in some order)
template <class Run>
HostValues SolveOnHost(const Problem& pr, Run run) {
  const BodyModeFactorView view = HostView(pr.host);
  const std::size_t rows = pr.host.patch.size(), blocks = pr.host.row_col.size();
  const Scalar nan = std::numeric_limits<Scalar>::quiet_NaN();
  HostValues h{std::vector<Scalar>(6 * rows, nan), std::vector<Scalar>(36 * rows, nan), std::vector<Scalar>(36 * blocks, nan),
               std::vector<Scalar>(6 * rows, nan), std::vector<Scalar>(pr.g.size(), nan), std::vector<unsigned char>(pr.bodies.size(), 7)};
  for (Index b = 0; b < Index(pr.bodies.size()); ++b) run(BodyModeSparseFactorOp{view, h.view(), pr.bodies[std::size_t(b)].values.data(), b, 1e-10}, 0);
  const BodyModeSparseSolveOp solve{view, h.view(), pr.g.data(), h.y.data(), h.dv.data()};
  for (Index b = 0; b < Index(pr.bodies.size()); ++b) run(solve, b);
  return h;
}

std::vector<Scalar> SolveOnBackend(BackendChoice choice, int threads, const Problem& pr) {
  BackendOptions o;
  o.cpu_threads = threads;
  auto backend = MakeBackend(choice, o).backend;
  Backend* b = backend.get();
  auto kernels = MakeKernels<CondKernels>(*backend);
  BodyModeFactorArrays f;
  f.Upload(b, pr.host);
  const Index rows = Index(pr.host.patch.size()), blocks = Index(pr.host.row_col.size());
  Array<Scalar> scale(b, 6 * rows), diag(b, 36 * rows), val(b, 36 * blocks), y(b, 6 * rows), g(b, pr.g);
  Array<unsigned char> ok(b, Index(pr.bodies.size()));
  Array<Scalar> dv(b, std::vector<Scalar>(pr.g.size(), std::numeric_limits<Scalar>::quiet_NaN()));
  const BodyModeFactorValues values{scale.data(), diag.data(), val.data(), ok.data()};
  for (Index k = 0; k < Index(pr.bodies.size()); ++k) {
    const Array<Scalar> a(b, pr.bodies[std::size_t(k)].values);
    kernels->BodyModeSparseFactor(1, BodyModeSparseFactorOp{f.view(), values, a.data(), k, 1e-10});
  }
  kernels->BodyModeSparseSolve(Index(pr.bodies.size()),
                               BodyModeSparseSolveOp{f.view(), values, g.data(), y.data(), dv.data()});
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
  for (const int threads : {1, 2}) {
    const std::vector<Scalar> dv = SolveOnBackend(BackendChoice::kCpu, threads, pr);
    const double err = RelativeError(dv, pr.dv_ref);
    std::cout << "[ info     ] " << threads << " threads: dv against the dense LLT, relative " << err << "; 54 patches: "
              << pr.factors[0]->row_col.size() << " blocks of L, levels forward " << pr.factors[0]->fwd_ptr.size() - 1 << " and backward "
              << pr.factors[0]->bwd_ptr.size() - 1 << "\n";
    EXPECT_LT(err, 1e-12);
    // the failed bodies: exactly 0
    Index first = 0;
    for (std::size_t k = 0; k < pr.bodies.size(); ++k) {
      if (!pr.good[k]) {
        for (Index i = 6 * first; i < 6 * (first + pr.bodies[k].m); ++i) EXPECT_EQ(dv[std::size_t(i)], 0) << "body " << k << " row " << i;
      }
      first += pr.bodies[k].m;
    }
  }
}

TEST(CondSparseCoarse, BlocksHoldEigensFactorAndAnyLaneOrderGivesTheSameBits) {
  const Problem pr = MakeProblem();
  const HostValues serial = SolveOnHost(pr, [](const auto& op, Index b) { op(b); });
  EXPECT_LT(RelativeError(serial.dv, pr.dv_ref), 1e-12);
  // L's blocks against Eigen's simplicial factor of the permuted S (the Cholesky factor is unique)
  Index blk0 = 0;
  for (std::size_t k = 0; k < pr.bodies.size(); ++k) {
    const SparseCoarseFactor& f = *pr.factors[k];
    const Index m = pr.bodies[k].m;
    if (pr.good[k]) {
      Eigen::VectorXd s;
      const MatX scaled = Scaled(pr.bodies[k].dense, &s);
      MatX permuted(6 * m, 6 * m);
      for (Index r = 0; r < m; ++r)
        for (Index c = 0; c < m; ++c)
          permuted.block(6 * r, 6 * c, 6, 6) = scaled.block(6 * f.order[std::size_t(r)], 6 * f.order[std::size_t(c)], 6, 6);
      const Eigen::SparseMatrix<double> sp = permuted.sparseView();
      Eigen::SimplicialLLT<Eigen::SparseMatrix<double>, Eigen::Lower, Eigen::NaturalOrdering<int>> llt(sp);
      ASSERT_EQ(llt.info(), Eigen::Success);
      const MatX l = MatX(llt.matrixL());
      double worst = 0;
      for (Index r = 0; r < m; ++r)
        for (Index c = 0; c < r; ++c) {
          const auto row = f.row_col.begin() + f.row_ptr[std::size_t(r)], end = f.row_col.begin() + f.row_ptr[std::size_t(r) + 1];
          const auto it = std::lower_bound(row, end, c);
          const bool held = it != end && *it == c;
          for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j) {
              const double ref = l(6 * r + i, 6 * c + j);
              const double got = held ? serial.val[36 * std::size_t(blk0 + Index(it - f.row_col.begin())) + 6 * std::size_t(i) + std::size_t(j)] : 0;
              if (!held) {
                EXPECT_EQ(ref, 0) << "body " << k << ": Eigen's L has (" << r << ", " << c << ") outside the block pattern";
              }
              worst = std::max(worst, std::fabs(got - ref));
            }
        }
      EXPECT_LT(worst, 1e-12) << "body " << k;
    }
    blk0 += Index(f.row_col.size());
  }
  for (std::size_t k = 0; k < pr.bodies.size(); ++k) EXPECT_EQ(serial.ok[k], pr.good[k] ? 1 : 0) << "body " << k;
  // the level schedules read only earlier levels
  for (const auto& factor : pr.factors) {
    const SparseCoarseFactor& f = *factor;
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
  // any lane order: the same factor and dv bit for bit
  std::vector<Index> reversed(BodyModeSparseSolveOp::kLanes), shuffled;
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  shuffled = reversed;
  auto rng = test::Rng();
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (const std::vector<Index>* lanes : {&reversed, &shuffled}) {
    const HostValues h = SolveOnHost(pr, [lanes](const auto& op, Index b) { cpu::RunLanes(op, b, lanes->data()); });
    const char* name = lanes == &reversed ? " reversed" : " shuffled";
    for (std::size_t k = 0; k < h.dv.size(); ++k) ASSERT_EQ(h.dv[k], serial.dv[k]) << k << name;
    for (std::size_t k = 0; k < h.val.size(); ++k) ASSERT_EQ(h.val[k], serial.val[k]) << k << name;
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
