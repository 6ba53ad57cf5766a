// Batched worlds: block-diagonal packing of environments, the layout's index ranges, and the
// per-environment results of one packed product / segmented reduction (reference: each
// environment computed on its own, which must agree bitwise since rows and segments are
// processed identically).
#include "condsim/batch.h"

#include <gtest/gtest.h>

#include "condsim/backend.h"
#include "condsim/error.h"
#include "test_util.h"

namespace condsim {
namespace {

std::vector<BlockMatrix> RandomEnvironments(std::mt19937_64& rng, Index count) {
  std::vector<BlockMatrix> envs;
  std::uniform_int_distribution<Index> size(1, 30);
  for (Index e = 0; e < count; ++e) {
    BlockMatrix m(test::RandomPattern(rng, 3, size(rng), 3.0));
    m.values = test::RandomVector(rng, Index(m.pattern.nnz()));
    envs.push_back(std::move(m));
  }
  return envs;
}

TEST(Batch, LayoutOffsetsAndOwnership) {
  const BatchLayout layout = MakeBatchLayout(3, {4, 0, 2});
  EXPECT_EQ(layout.num_envs(), 3);
  EXPECT_EQ(layout.block_offsets, (std::vector<Index>{0, 4, 4, 6}));
  EXPECT_EQ(layout.DofOffsets(), (std::vector<Index>{0, 12, 12, 18}));
  EXPECT_EQ(layout.EnvOfBlockRow(0), 0);
  EXPECT_EQ(layout.EnvOfBlockRow(3), 0);
  EXPECT_EQ(layout.EnvOfBlockRow(4), 2);  // environment 1 is empty
  EXPECT_EQ(layout.EnvOfBlockRow(5), 2);
  EXPECT_THROW(layout.EnvOfBlockRow(6), Error);
}

TEST(Batch, PackedMatrixIsBlockDiagonal) {
  auto rng = test::Rng();
  const auto envs = RandomEnvironments(rng, 7);
  const PackedBatch packed = PackBlockDiagonal(envs);
  const BlockPattern& p = packed.matrix.pattern;
  for (Index e = 0; e < 7; ++e) {
    const Index off = packed.layout.block_offsets[e];
    const BlockPattern& q = envs[e].pattern;
    for (Index r = 0; r < q.block_rows; ++r) {
      // same blocks, shifted by the environment's offset, nothing outside the diagonal block
      ASSERT_EQ(p.row_ptr[off + r + 1] - p.row_ptr[off + r], q.row_ptr[r + 1] - q.row_ptr[r]);
      for (Index k = q.row_ptr[r]; k < q.row_ptr[r + 1]; ++k) {
        const Index pk = p.row_ptr[off + r] + (k - q.row_ptr[r]);
        EXPECT_EQ(p.col_idx[pk], q.col_idx[k] + off);
        for (Index i = 0; i < 9; ++i) EXPECT_EQ(packed.matrix.Block(pk)[i], envs[e].Block(k)[i]);
      }
    }
  }
}

TEST(Batch, PackRejectsMismatchedEnvironments) {
  std::vector<BlockMatrix> envs;
  envs.emplace_back(BlockPattern::FromCoordinates(3, 2, 2, {{0, 0}}));
  envs.emplace_back(BlockPattern::FromCoordinates(2, 2, 2, {{0, 0}}));
  EXPECT_THROW(PackBlockDiagonal(envs), Error);
  envs.pop_back();
  envs.emplace_back(BlockPattern::FromCoordinates(3, 2, 3, {{0, 0}}));
  EXPECT_THROW(PackBlockDiagonal(envs), Error);
  EXPECT_THROW(PackBlockDiagonal({}), Error);
}

TEST(Batch, OnePackedSolveStepEqualsPerEnvironmentSteps) {
  auto rng = test::Rng();
  const auto envs = RandomEnvironments(rng, 9);
  const PackedBatch packed = PackBlockDiagonal(envs);
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  Backend& b = *backend;
  const Index n = packed.matrix.pattern.rows();
  const auto hx = test::RandomVector(rng, n);
  auto a = b.CreateMatrix(packed.matrix.pattern);
  a->SetValues(packed.matrix.values);
  Array<Scalar> x(&b, hx), y(&b, n);
  b.Fill(std::nan(""), &y);
  a->Multiply(1, x, 0, &y);
  const auto hy = y.ToHost();
  Array<Index> offsets(&b, packed.layout.DofOffsets());
  Array<Scalar> seg_dot(&b, 9), seg_max(&b, 9);
  b.Fill(std::nan(""), &seg_dot);
  b.Fill(std::nan(""), &seg_max);
  b.SegmentedDot(x, y, offsets, &seg_dot);
  b.SegmentedMaxAbs(y, offsets, &seg_max);
  const auto hdot = seg_dot.ToHost(), hmax = seg_max.ToHost();
  for (Index e = 0; e < 9; ++e) {
    const Index begin = packed.layout.DofOffsets()[e], m = envs[e].pattern.rows();
    const std::vector<Scalar> xe(hx.begin() + begin, hx.begin() + begin + m);
    auto ae = b.CreateMatrix(envs[e].pattern);
    ae->SetValues(envs[e].values);
    Array<Scalar> xe_d(&b, xe), ye_d(&b, m);
    ae->Multiply(1, xe_d, 0, &ye_d);
    const auto ye = ye_d.ToHost();
    for (Index i = 0; i < m; ++i) EXPECT_EQ(hy[begin + i], ye[i]) << "env " << e << " row " << i;
    EXPECT_EQ(hdot[e], b.Dot(xe_d, ye_d)) << "env " << e;
    EXPECT_EQ(hmax[e], b.MaxAbs(ye_d)) << "env " << e;
  }
}

}  // namespace
}  // namespace condsim
