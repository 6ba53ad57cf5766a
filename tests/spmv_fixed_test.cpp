// The fixed-block-size SpMV (BsrRowSpmvFixedOp, dispatched by DispatchBsrRowSpmv in the CPU
// backend) against the runtime-block-size loop (BsrRowSpmvOp: bitwise, the same summation order
// per row) and against a dense Eigen product (1e-14 relative to max_r sum_c |A_rc x_c|, the
// rounding bound of a length <= 6 * 7 dot product in double is ~42 * 1.1e-16 = 4.7e-15), for
// block sizes 1, 2, 3, 6 on random patterns with empty block rows.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "condsim/backend.h"
#include "condsim/block_sparse.h"
#include "dense_util.h"
#include "condsim/vector_ops.h"
#include "cpu/cpu_backend.h"
#include "test_util.h"

namespace condsim {
namespace {

// a random pattern of rows x rows blocks: up to 7 blocks per row, every 5th row empty
BlockMatrix RandomMatrix(Index block_dim, Index rows, std::mt19937_64& rng) {
  BlockPattern p;
  p.block_dim = block_dim;
  p.block_rows = p.block_cols = rows;
  p.row_ptr.assign(std::size_t(rows) + 1, 0);
  std::uniform_int_distribution<Index> col(0, rows - 1), count(1, 7);
  for (Index r = 0; r < rows; ++r) {
    std::vector<Index> cols;
    if (r % 5 != 2) {
      const Index c = count(rng);
      for (Index k = 0; k < c; ++k) cols.push_back(col(rng));
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    }
    p.col_idx.insert(p.col_idx.end(), cols.begin(), cols.end());
    p.row_ptr[std::size_t(r) + 1] = Index(p.col_idx.size());
  }
  BlockMatrix m(std::move(p));
  std::uniform_real_distribution<Scalar> u(-1, 1);
  for (Scalar& v : m.values) v = u(rng);
  return m;
}

// y from the runtime loop, row by row
std::vector<Scalar> RuntimeLoop(const BlockMatrix& a, Scalar alpha, const std::vector<Scalar>& x, Scalar beta,
                                std::vector<Scalar> y, const unsigned char* active) {
  const BsrRowSpmvOp op{a.pattern.block_dim, a.pattern.row_ptr.data(), a.pattern.col_idx.data(), a.values.data(),
                        alpha, x.data(), beta, y.data(), active};
  for (Index r = 0; r < a.pattern.block_rows; ++r) op(r);
  return y;
}

template <int B>
std::vector<Scalar> FixedLoop(const BlockMatrix& a, Scalar alpha, const std::vector<Scalar>& x, Scalar beta,
                              std::vector<Scalar> y, const unsigned char* active) {
  const BsrRowSpmvFixedOp<B> op{{a.pattern.block_dim, a.pattern.row_ptr.data(), a.pattern.col_idx.data(),
                                 a.values.data(), alpha, x.data(), beta, y.data(), active}};
  for (Index r = 0; r < a.pattern.block_rows; ++r) op(r);
  return y;
}

bool Bitwise(const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Scalar)) == 0;
}

template <int B>
void CheckBlockSize() {
  std::mt19937_64 rng(test::TestSeed() + B);
  const Index rows = 300;
  const BlockMatrix a = RandomMatrix(B, rows, rng);
  const Index n = a.pattern.rows();
  std::uniform_real_distribution<Scalar> u(-1, 1);
  std::vector<Scalar> x(static_cast<std::size_t>(n)), y0(static_cast<std::size_t>(n));
  for (Scalar& v : x) v = u(rng);
  for (Scalar& v : y0) v = u(rng);
  std::vector<unsigned char> active(static_cast<std::size_t>(rows));
  for (Index r = 0; r < rows; ++r) active[std::size_t(r)] = r % 3 != 1;

  // bitwise vs the runtime loop: beta 0 (y not read: NaN must not leak), beta != 0, row flags
  std::vector<Scalar> nan_y(static_cast<std::size_t>(n), std::nan(""));
  EXPECT_TRUE(Bitwise(FixedLoop<B>(a, 1, x, 0, nan_y, nullptr), RuntimeLoop(a, 1, x, 0, nan_y, nullptr))) << "B=" << B;
  EXPECT_TRUE(Bitwise(FixedLoop<B>(a, 0.7, x, -1.3, y0, nullptr), RuntimeLoop(a, 0.7, x, -1.3, y0, nullptr))) << "B=" << B;
  EXPECT_TRUE(Bitwise(FixedLoop<B>(a, -2, x, 0.5, y0, active.data()), RuntimeLoop(a, -2, x, 0.5, y0, active.data())))
      << "B=" << B;

  // the CPU backend's dispatched Multiply (the runtime loop for B = 1, 2), 1 and 2 threads
  for (int threads : {1, 2}) {
    BackendOptions o;
    o.cpu_threads = threads;
    auto backend = MakeCpuBackend(o);
    auto m = backend->CreateMatrix(a.pattern);
    m->SetValues(a.values);
    Array<Scalar> bx(backend.get(), x), by(backend.get(), y0);
    m->Multiply(0.7, bx, -1.3, &by);
    EXPECT_TRUE(Bitwise(by.ToHost(), RuntimeLoop(a, 0.7, x, -1.3, y0, nullptr))) << "B=" << B << " threads " << threads;
  }

  // vs dense Eigen: y = A x
  const Eigen::MatrixXd d = DenseOf(a);
  const Eigen::VectorXd ex = Eigen::Map<const Eigen::VectorXd>(x.data(), n);
  const Eigen::VectorXd ref = d * ex;
  const double scale = (d.cwiseAbs() * ex.cwiseAbs()).maxCoeff();
  const std::vector<Scalar> y = FixedLoop<B>(a, 1, x, 0, nan_y, nullptr);
  double err = 0;
  for (Index i = 0; i < n; ++i) err = std::max(err, std::abs(y[std::size_t(i)] - ref(i)));
  EXPECT_LE(err, 1e-14 * scale) << "B=" << B;
  // the empty rows are exactly 0
  for (Index r = 2; r < rows; r += 5)
    for (Index i = 0; i < B; ++i) EXPECT_EQ(y[std::size_t(r * B + i)], 0.0);
}

TEST(FixedBlockSpmv, MatchesRuntimeLoopBitwiseAndEigen) {
  CheckBlockSize<1>();
  CheckBlockSize<2>();
  CheckBlockSize<3>();
  CheckBlockSize<6>();
}

}  // namespace
}  // namespace condsim
