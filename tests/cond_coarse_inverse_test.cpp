// The body modes' coarse inverse on the backend (BodyModeInvertOp, models/cond/body_mode_setup_ops.h):
// - random SPD matrices of 6, 12 and 192 rows (ill-scaled diagonals, as A_c's translation and
//   rotation rows, and a skew part that the symmetrization removes), one body each in one launch:
//   the inverse equals Eigen's dense inverse of D^1/2 (S + 1e-10 I) D^1/2 (S the unit-diagonal
//   symmetric part; the host path before, CondBodyModes::InvertCoarse) to 1e-10 relative
//   (Frobenius norm; the scaled matrices have condition numbers below 1e3, so rounding is ~1e-13);
// - a matrix with a non-positive diagonal entry, an indefinite one with a positive diagonal and
//   one with a NaN entry give zeros (no correction), and leave the other bodies of the launch
//   exact;
// - with per-body refresh flags only the flagged bodies are written;
// - CUDA: the same inverses as the CPU's to 1e-13 relative (skipped without a usable device).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/parallel.h"
#include "models/cond/cond_kernels.h"
#include "test_util.h"

namespace condsim {
namespace {

using MatX = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// an SPD matrix of n rows (condition number of its unit-diagonal scaling ~10^2 .. 10^3) times a
// diagonal scale 10^[-3, 3], plus a skew-symmetric part of the same size
MatX RandomCoarse(int n, std::mt19937* rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  MatX b(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) b(i, j) = u(*rng);
  MatX spd = b * b.transpose() / n + 0.05 * MatX::Identity(n, n);
  Eigen::VectorXd d(n);
  for (int i = 0; i < n; ++i) d(i) = std::pow(10.0, 3 * u(*rng));
  MatX skew(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) skew(i, j) = i < j ? 0.1 * u(*rng) : 0;
  skew -= MatX(skew.transpose());
  return d.asDiagonal() * (spd + skew) * d.asDiagonal();
}

// the reference: Eigen's dense inverse of the symmetric part with the 1e-10 shift of the unit
// diagonal scaling, D^1/2 (D^-1/2 sym D^-1/2 + 1e-10 I) D^1/2
MatX Reference(const MatX& a) {
  const MatX sym = 0.5 * (a + a.transpose());
  const Eigen::VectorXd d = sym.diagonal();
  MatX shifted = sym;
  shifted.diagonal() += 1e-10 * d;
  return shifted.inverse();
}

// BodyModeInvertOp as a block runs it: its phases lane by lane (cpu::RunLanes), the lanes of each
// phase in order (reversed with `reverse`)
struct InvertBlockOp {
  BodyModeInvertOp op;
  bool reverse;
  CONDSIM_HD_INLINE void operator()(Index b) const {
    Index lanes[BodyModeInvertOp::kLanes];
    for (int t = 0; t < BodyModeInvertOp::kLanes; ++t) lanes[t] = reverse ? BodyModeInvertOp::kLanes - 1 - t : t;
    cpu::RunLanes(op, b, lanes);
  }
};

// one launch of BodyModeInvertOp over the given matrices (one body of n/6 patches each)
// (refresh: per matrix whether to invert it; the others keep the output's prior entries, 7;
// lanes: 0 the backend's launch, 1 / 2 the CPU's lane path in order / reversed)
std::vector<MatX> InvertOnBackend(BackendChoice choice, const std::vector<MatX>& mats, const std::vector<unsigned char>& refresh = {},
                                  int lanes = 0) {
  std::unique_ptr<Backend> backend = MakeBackend(choice).backend;
  std::vector<Index> body_ptr{0}, c_off{0};
  std::vector<Scalar> ac;
  for (const MatX& m : mats) {
    body_ptr.push_back(body_ptr.back() + Index(m.rows()) / 6);
    c_off.push_back(c_off.back() + Index(m.size()));
    const RowMat r = m;
    ac.insert(ac.end(), r.data(), r.data() + r.size());
  }
  Array<Index> body_ptr_d(backend.get(), body_ptr), c_off_d(backend.get(), c_off);
  Array<Scalar> ac_d(backend.get(), ac), inv_d(backend.get(), Index(ac.size())), scale(backend.get(), 6 * body_ptr.back());
  Array<unsigned char> ok(backend.get(), Index(mats.size()));
  Array<unsigned char> refresh_d(backend.get(), refresh);
  backend->Fill(7, &inv_d);
  BodyModeView view;
  view.body_ptr = body_ptr_d.data();
  view.c_off = c_off_d.data();
  auto kernels = MakeKernels<CondKernels>(*backend);
  const BodyModeInvertOp op{view, ac_d.data(), inv_d.data(), scale.data(), ok.data(), refresh.empty() ? nullptr : refresh_d.data(), 1e-10};
  if (lanes == 0)
    kernels->BodyModeInvert(Index(mats.size()), op);
  else
    cpu::Launch(1, Index(mats.size()), InvertBlockOp{op, lanes == 2});
  const std::vector<Scalar> out = inv_d.ToHost();
  std::vector<MatX> inv;
  for (std::size_t k = 0; k < mats.size(); ++k)
    inv.push_back(Eigen::Map<const RowMat>(out.data() + c_off[k], mats[k].rows(), mats[k].cols()));
  return inv;
}

// 6, 12, 192 rows (1, 2, 32 patches) and the three failures: a diagonal entry <= 0, an
// indefinite matrix with a positive diagonal (a 2x2 block [[1, 2], [2, 1]]), a NaN entry
std::vector<MatX> Inputs() {
  std::mt19937 rng(7);
  std::vector<MatX> m = {RandomCoarse(6, &rng), RandomCoarse(12, &rng), RandomCoarse(192, &rng)};
  MatX neg = RandomCoarse(6, &rng);
  neg(3, 3) = -1;
  MatX indefinite = MatX::Identity(12, 12);
  indefinite(4, 5) = indefinite(5, 4) = 2;
  MatX nan = RandomCoarse(12, &rng);
  nan(7, 2) = std::numeric_limits<double>::quiet_NaN();
  m.push_back(neg);
  m.push_back(indefinite);
  m.push_back(nan);
  return m;
}

TEST(CondCoarseInverse, MatchesEigenAndZeroesFailures) {
  const std::vector<MatX> in = Inputs();
  const std::vector<MatX> inv = InvertOnBackend(BackendChoice::kCpu, in);
  for (int k = 0; k < 3; ++k) {
    const MatX ref = Reference(in[k]);
    const double err = (inv[k] - ref).norm() / ref.norm();
    std::cout << "[ info     ] " << in[k].rows() << " rows: |inv - Eigen| / |Eigen| " << err << "\n";
    EXPECT_LT(err, 1e-10) << in[k].rows() << " rows";
    // symmetric by construction (each entry written to both halves)
    EXPECT_EQ(inv[k], MatX(inv[k].transpose()));
  }
  for (int k = 3; k < 6; ++k) EXPECT_EQ(inv[k].cwiseAbs().maxCoeff(), 0.0) << "failure " << k - 3 << ": zeros expected";
}

TEST(CondCoarseInverse, OnlyTheChosenBodiesAreInverted) {
  // CondBodyModes refreshes a body's inverse only when due: the others keep their slot as it was
  const std::vector<MatX> in = Inputs();
  const std::vector<unsigned char> refresh = {0, 1, 0, 1, 0, 0};
  const std::vector<MatX> inv = InvertOnBackend(BackendChoice::kCpu, in, refresh);
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (refresh[k]) continue;
    EXPECT_EQ(inv[k].minCoeff(), 7.0) << "matrix " << k;
    EXPECT_EQ(inv[k].maxCoeff(), 7.0) << "matrix " << k;
  }
  EXPECT_LT((inv[1] - Reference(in[1])).norm(), 1e-10 * Reference(in[1]).norm());
  EXPECT_EQ(inv[3].cwiseAbs().maxCoeff(), 0.0);
}

// the host's path (operator(): X = L^-1 four rows at a time) against the lane path a GPU block runs
// (one row per lane, in order and reversed): bitwise, on 18, 192 and 198 rows (row counts with 2
// and 0 left over after the fours) and the three failures
TEST(CondCoarseInverse, HostPathEqualsTheLanePathBitwise) {
  std::mt19937 rng(11);
  std::vector<MatX> in = Inputs();
  in.push_back(RandomCoarse(18, &rng));
  in.push_back(RandomCoarse(198, &rng));
  const std::vector<MatX> host = InvertOnBackend(BackendChoice::kCpu, in);
  for (int lanes : {1, 2}) {
    const std::vector<MatX> lane = InvertOnBackend(BackendChoice::kCpu, in, {}, lanes);
    for (std::size_t k = 0; k < in.size(); ++k) EXPECT_EQ(lane[k], host[k]) << in[k].rows() << " rows, lanes " << lanes;
  }
  EXPECT_LT((host.back() - Reference(in.back())).norm(), 1e-10 * Reference(in.back()).norm());
}

TEST(CondCoarseInverse, CudaMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  const std::vector<MatX> in = Inputs();
  const std::vector<MatX> cpu = InvertOnBackend(BackendChoice::kCpu, in), gpu = InvertOnBackend(BackendChoice::kCuda, in);
  for (std::size_t k = 0; k < in.size(); ++k) {
    const double scale = cpu[k].norm();
    EXPECT_LE((gpu[k] - cpu[k]).norm(), 1e-13 * scale) << in[k].rows() << " rows, matrix " << k;
  }
}

}  // namespace
}  // namespace condsim
