// Block-sparse pattern construction and validation, and the reference BSR product against a
// dense Eigen matrix assembled from the blocks.
#include "condsim/block_sparse.h"
#include "dense_util.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <Eigen/Dense>

#include "condsim/error.h"
#include "test_util.h"

namespace condsim {
namespace {

TEST(BlockPattern, FromCoordinatesSortsAndMerges) {
  const BlockPattern p = BlockPattern::FromCoordinates(3, 3, 4, {{2, 1}, {0, 3}, {0, 0}, {2, 1}, {1, 2}});
  EXPECT_EQ(p.row_ptr, (std::vector<Index>{0, 2, 3, 4}));
  EXPECT_EQ(p.col_idx, (std::vector<Index>{0, 3, 2, 1}));
  EXPECT_EQ(p.rows(), 9);
  EXPECT_EQ(p.cols(), 12);
  EXPECT_EQ(p.nnz(), 36);
  EXPECT_EQ(p.Find(0, 3), 1);
  EXPECT_EQ(p.Find(2, 1), 3);
  EXPECT_EQ(p.Find(1, 1), -1);
  EXPECT_EQ(p.Find(5, 0), -1);
}

TEST(BlockPattern, RejectsInvalidInputWithClearMessages) {
  auto expect_error = [](auto&& f, const std::string& fragment) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one mentioning '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error([] { BlockPattern::FromCoordinates(3, 2, 2, {{0, 2}}); }, "outside the 2 x 2 block grid");
  expect_error([] { BlockPattern::FromCoordinates(9, 2, 2, {{0, 0}}); }, "block_dim must be in [1, 8]");
  BlockPattern p = BlockPattern::FromCoordinates(2, 2, 2, {{0, 0}, {0, 1}, {1, 1}});
  p.col_idx = {1, 0, 1};
  expect_error([&] { p.Validate(); }, "not strictly increasing");
  p.col_idx = {0, 1};
  expect_error([&] { p.Validate(); }, "row_ptr ends at 3 but col_idx has 2 entries");
  BlockMatrix m(BlockPattern::FromCoordinates(2, 2, 2, {{0, 0}}));
  const Scalar block[4] = {1, 2, 3, 4};
  expect_error([&] { m.AddToBlock(1, 0, block); }, "block (1, 0) is not in the matrix pattern");
}

TEST(BlockMatrix, MultiplyMatchesDenseProduct) {
  auto rng = test::Rng();
  for (Index bd : {1, 2, 3, 6}) {
    BlockMatrix a(test::RandomPattern(rng, bd, 40, 4.0));
    a.values = test::RandomVector(rng, Index(a.pattern.nnz()));
    const auto x = test::RandomVector(rng, a.pattern.cols());
    auto y = test::RandomVector(rng, a.pattern.rows());
    const Eigen::VectorXd ref = 0.7 * DenseOf(a) * Eigen::Map<const Eigen::VectorXd>(x.data(), x.size()) +
                                -0.3 * Eigen::Map<const Eigen::VectorXd>(y.data(), y.size());
    a.Multiply(0.7, x.data(), -0.3, y.data());
    // tolerance: rounding of <= 6*40 products of magnitude <= 1
    for (Index i = 0; i < a.pattern.rows(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-13) << "block_dim " << bd;
    // AddToBlock accumulates into the right entries
    const Scalar one[36] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const Eigen::MatrixXd before = DenseOf(a);
    a.AddToBlock(3, 3, one);
    const Eigen::MatrixXd diff = DenseOf(a) - before;
    EXPECT_DOUBLE_EQ(diff.sum(), double(bd * bd));
    EXPECT_DOUBLE_EQ(diff.block(3 * bd, 3 * bd, bd, bd).sum(), double(bd * bd));
  }
}

// the CUDA backend's scalar CSR expansion (ExpandToCsr, host code) against the dense form of the
// block matrix: every stored scalar entry exactly once, at its dense position (tolerance 0), with
// strictly ascending columns per row (cuSPARSE's CSR convention)
TEST(BlockMatrix, CsrExpansionMatchesTheDenseMatrix) {
  auto rng = test::Rng();
  for (Index bd : {1, 2, 3, 6}) {
    BlockMatrix a(test::RandomPattern(rng, bd, 30, 4.0));
    a.values = test::RandomVector(rng, Index(a.pattern.nnz()));
    const CsrExpansion csr = ExpandToCsr(a.pattern);
    ASSERT_EQ(csr.row_ptr.size(), std::size_t(a.pattern.rows()) + 1) << "block_dim " << bd;
    ASSERT_EQ(std::int64_t(csr.col.size()), a.pattern.nnz());
    ASSERT_EQ(csr.map.size(), csr.col.size());
    EXPECT_EQ(csr.row_ptr.back(), Index(a.pattern.nnz()));
    const Eigen::MatrixXd dense = DenseOf(a);
    Eigen::MatrixXd rebuilt = Eigen::MatrixXd::Zero(dense.rows(), dense.cols());
    std::vector<int> used(a.values.size(), 0);
    for (Index r = 0; r < a.pattern.rows(); ++r) {
      for (Index e = csr.row_ptr[r]; e < csr.row_ptr[r + 1]; ++e) {
        if (e > csr.row_ptr[r]) {
          EXPECT_LT(csr.col[e - 1], csr.col[e]) << "row " << r;
        }
        rebuilt(r, csr.col[e]) = a.values[std::size_t(csr.map[e])];
        ++used[std::size_t(csr.map[e])];
      }
    }
    EXPECT_EQ(rebuilt, dense) << "block_dim " << bd;
    EXPECT_EQ(std::count(used.begin(), used.end(), 1), std::int64_t(used.size())) << "block_dim " << bd;
  }
}

TEST(BlockMatrix, ZeroBetaDoesNotReadStaleOutput) {
  BlockMatrix a(BlockPattern::FromCoordinates(3, 1, 1, {{0, 0}}));
  for (Index i = 0; i < 9; ++i) a.values[i] = Scalar(i);
  const std::vector<Scalar> x = {1, 1, 1};
  std::vector<Scalar> y(3, std::nan(""));
  a.Multiply(1, x.data(), 0, y.data());
  EXPECT_EQ(y, (std::vector<Scalar>{3, 12, 21}));  // row sums of [0..8]
}

}  // namespace
}  // namespace condsim
