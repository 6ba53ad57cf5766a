// chunk_reduce.h, the order of the CUDA backend's segmented reductions (independent of the number
// of segments), on the host: ChunkFirstOp against the exclusive sum of the chunk counts;
// ChunkSegment against a linear search; SegmentedReduceHost's sums
// against long-double sums (relative to the sum of |terms|, 1e-15 per 4096-term chunk level,
// bound 1e-13) and its maxima exactly (with NaN propagated); a segment reduced inside a batch and
// alone (shifted to offset 0) bitwise equal. The CUDA results against this order:
// tests/backend_parity_test.cpp CudaSegmentedReductionsFollowTheChunkOrder.
#include "condsim/chunk_reduce.h"

#include <gtest/gtest.h>

#include <cmath>

#include "condsim/vector_ops.h"
#include "test_util.h"

namespace condsim {
namespace {

struct Sum {
  Scalar operator()(Scalar a, Scalar b) const { return a + b; }
};
struct Max {
  Scalar operator()(Scalar a, Scalar b) const { return NanMax(a, b); }
};

// the one-thread chunk layout of a few segments (ChunkFirstOp, the CUDA backend's path up to
// kSerialChunkLayout segments) against the exclusive sum of ReduceChunks per segment, with empty
// segments first, inside and last and segments of exactly one and just over one chunk
TEST(ChunkReduce, SerialChunkLayoutIsTheExclusiveSumOfTheChunkCounts) {
  const std::vector<Index> lengths = {0, 5000, kReduceChunk, 1, 0, 0, 3 * kReduceChunk + 1, kReduceChunk + 1, 0};
  std::vector<Index> offsets = {0};
  for (Index n : lengths) offsets.push_back(offsets.back() + n);
  std::vector<Index> expected = {0};
  for (Index n : lengths) expected.push_back(expected.back() + ReduceChunks(n));
  std::vector<Index> first(offsets.size(), -7);
  ChunkFirstOp{offsets.data(), Index(lengths.size()), first.data()}(0);
  EXPECT_EQ(first, expected);
  EXPECT_EQ(expected.back(), 0 + 2 + 1 + 1 + 0 + 0 + 4 + 2 + 0);
}

TEST(ChunkReduce, ChunkSegmentFindsTheSegmentOfEveryChunk) {
  // chunk counts with empty segments first, inside and last
  const std::vector<Index> counts = {0, 3, 0, 0, 1, 5, 0};
  std::vector<Index> first = {0};
  for (Index c : counts) first.push_back(first.back() + c);
  for (Index c = 0; c < first.back(); ++c) {
    Index expected = -1;
    for (Index s = 0; s < Index(counts.size()); ++s)
      if (first[s] <= c && c < first[s + 1]) expected = s;
    EXPECT_EQ(ChunkSegment(first.data(), Index(counts.size()), c), expected) << "chunk " << c;
  }
  EXPECT_EQ(ReduceChunks(0), 0);
  EXPECT_EQ(ReduceChunks(1), 1);
  EXPECT_EQ(ReduceChunks(kReduceChunk), 1);
  EXPECT_EQ(ReduceChunks(kReduceChunk + 1), 2);
}

TEST(ChunkReduce, SegmentsReduceAsAloneAndMatchTheReference) {
  auto rng = test::Rng();
  // lengths around the chunk and thread counts, an empty segment, several chunks
  const std::vector<Index> lengths = {5, 0, 1, kReduceThreads + 3, kReduceChunk - 1, kReduceChunk, kReduceChunk + 1, 3 * kReduceChunk + 77};
  std::vector<Index> offsets = {0};
  for (Index n : lengths) offsets.push_back(offsets.back() + n);
  const std::vector<Scalar> x = test::RandomVector(rng, offsets.back()), y = test::RandomVector(rng, offsets.back());
  const auto dot = [&](Index i) { return x[std::size_t(i)] * y[std::size_t(i)]; };
  const auto abs = [&](Index i) { return std::fabs(y[std::size_t(i)]); };
  const std::vector<Scalar> sums = SegmentedReduceHost(dot, offsets, Sum{}, Scalar(0));
  const std::vector<Scalar> maxima = SegmentedReduceHost(abs, offsets, Max{}, Scalar(0));
  ASSERT_EQ(sums.size(), lengths.size());
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    long double ref = 0, scale = 0;
    Scalar top = 0;
    for (Index i = offsets[s]; i < offsets[s + 1]; ++i) {
      ref += static_cast<long double>(x[std::size_t(i)]) * y[std::size_t(i)];
      scale += std::fabs(static_cast<long double>(x[std::size_t(i)]) * y[std::size_t(i)]);
      top = std::max(top, std::fabs(y[std::size_t(i)]));
    }
    EXPECT_LE(std::fabs(static_cast<long double>(sums[s]) - ref), 1e-13L * std::max(scale, 1e-300L)) << "segment " << s;
    EXPECT_EQ(maxima[s], top) << "segment " << s;
    // alone: the same terms from offset 0
    const Index begin = offsets[s];
    const auto alone_dot = [&](Index i) { return dot(begin + i); };
    const std::vector<Scalar> alone = SegmentedReduceHost(alone_dot, {0, lengths[s]}, Sum{}, Scalar(0));
    EXPECT_EQ(alone[0], sums[s]) << "segment " << s;
  }
  // a NaN term makes its segment's maximum NaN and leaves the others
  std::vector<Scalar> z = y;
  z[std::size_t(offsets[5] + 17)] = std::nan("");
  const std::vector<Scalar> with_nan = SegmentedReduceHost([&](Index i) { return std::fabs(z[std::size_t(i)]); }, offsets, Max{}, Scalar(0));
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    if (s == 5) {
      EXPECT_TRUE(std::isnan(with_nan[s]));
    } else {
      EXPECT_EQ(with_nan[s], maxima[s]) << "segment " << s;
    }
  }
}

}  // namespace
}  // namespace condsim
