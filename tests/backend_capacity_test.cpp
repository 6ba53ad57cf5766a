// Capacity-managed backend storage (issue 23 item 2, docs/architecture.md "Device-resident
// step"): arrays that keep their memory (Array::Resize/Assign/Reserve/AssignSuffix), offsets that
// upload only changes, and matrices that change pattern in place (DeviceBlockMatrix::SetPattern).
// References: the counts the code must give (exact), and a dense product y = A x computed on the
// host (exact: each entry is the same sum in the same order).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "condsim/backend.h"
#include "condsim/block_sparse.h"
#include "condsim/error.h"
#include "test_util.h"

namespace condsim {
namespace {

std::unique_ptr<Backend> Cpu() { return MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend; }

TEST(ArrayCapacity, ResizeKeepsTheAllocationAndGrowsByAFactor) {
  auto be = Cpu();
  Array<Scalar> a;
  a.Assign(be.get(), std::vector<Scalar>{1, 2, 3});
  EXPECT_EQ(a.size(), 3);
  const Index cap = a.capacity();
  EXPECT_GE(cap, 3);
  const BackendCounters c0 = be->counters();
  // shrinking and growing within the capacity: no allocation, the entries as uploaded
  a.Assign(be.get(), std::vector<Scalar>{4});
  a.Resize(cap);
  a.Assign(be.get(), std::vector<Scalar>(std::size_t(cap), 7));
  EXPECT_EQ(a.ToHost(), std::vector<Scalar>(std::size_t(cap), 7));
  EXPECT_EQ((be->counters() - c0).allocations, 0);
  EXPECT_EQ((be->counters() - c0).frees, 0);
  // beyond the capacity: one allocation of at least twice the capacity, the old one freed
  a.Resize(cap + 1);
  EXPECT_EQ(a.size(), cap + 1);
  EXPECT_GE(a.capacity(), 2 * cap);
  EXPECT_EQ((be->counters() - c0).allocations, 1);
  EXPECT_EQ((be->counters() - c0).frees, 1);
  // an empty array keeps its memory; a move carries the capacity
  a.Resize(0);
  EXPECT_EQ(a.size(), 0);
  Array<Scalar> b = std::move(a);
  EXPECT_GE(b.capacity(), 2 * cap);
  EXPECT_EQ(a.capacity(), 0);
  EXPECT_EQ((be->counters() - c0).allocations, 1);
}

// Reserve: one allocation of exactly the bound, size and entries kept; within it no Resize or
// Assign allocates (reference: the counts the code must give, exact)
TEST(ArrayCapacity, ReserveKeepsTheEntriesAndLaterResizesAllocateNothing) {
  auto be = Cpu();
  Array<Scalar> a;
  a.Assign(be.get(), std::vector<Scalar>{1, 2, 3});
  const BackendCounters c0 = be->counters();
  a.Reserve(nullptr, 100);
  EXPECT_EQ(a.capacity(), 100);
  EXPECT_EQ(a.size(), 3);
  EXPECT_EQ(a.ToHost(), (std::vector<Scalar>{1, 2, 3}));
  EXPECT_EQ((be->counters() - c0).allocations, 1);
  EXPECT_EQ((be->counters() - c0).frees, 1);
  // within the capacity: a smaller Reserve, growth to the bound, an upload of the bound
  const BackendCounters c1 = be->counters();
  a.Reserve(nullptr, 50);
  a.Resize(100);
  a.Assign(be.get(), std::vector<Scalar>(100, 7));
  EXPECT_EQ(a.ToHost(), std::vector<Scalar>(100, 7));
  EXPECT_EQ((be->counters() - c1).allocations, 0);
  EXPECT_EQ(a.capacity(), 100);
  // an empty array gets its backend and memory from Reserve
  Array<Index> e;
  e.Reserve(be.get(), 8);
  EXPECT_EQ(e.size(), 0);
  EXPECT_EQ(e.capacity(), 8);
  e.Assign(nullptr, std::vector<Index>{1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ((be->counters() - c1).allocations, 1);
}

// AssignSuffix: the entries before the first change kept, the rest uploaded in one upload (bytes:
// exactly the suffix), none when equal; growth beyond the capacity keeps the prefix through the
// new allocation; a held copy of the wrong size is an error. Reference: the host vectors and the
// counts the code must give, exact
TEST(ArrayCapacity, AssignSuffixUploadsFromTheFirstChange) {
  auto be = Cpu();
  Array<Index> a;
  std::vector<Index> held;
  const auto assign = [&](const std::vector<Index>& host) {
    const BackendCounters c = be->counters();
    a.AssignSuffix(be.get(), host, held);
    held = host;
    EXPECT_EQ(a.ToHost(), host);
    return be->counters() - c;
  };
  BackendCounters d = assign({0, 0, 0, 0, 1, 1});
  EXPECT_EQ(d.upload_bytes, 6 * 4);
  d = assign({0, 0, 0, 0, 1, 1});
  EXPECT_EQ(d.uploads, 0);
  d = assign({0, 0, 0, 0, 1, 1, 2, 2});  // a longer tail: two entries up
  EXPECT_EQ(d.upload_bytes, 2 * 4);
  d = assign({0, 0, 0, 0, 1});  // a shorter one: nothing up
  EXPECT_EQ(d.uploads, 0);
  d = assign({0, 0, 5, 0, 1});
  EXPECT_EQ(d.upload_bytes, 3 * 4);
  const Index cap = a.capacity();
  std::vector<Index> longer(std::size_t(cap) + 3, 9);
  longer[0] = 0;
  d = assign(longer);  // beyond the capacity: one allocation, the kept entry copied on the backend
  EXPECT_EQ(d.allocations, 1);
  EXPECT_EQ(d.upload_bytes, 4 * (std::int64_t(cap) + 2));
  EXPECT_THROW(a.AssignSuffix(be.get(), longer, std::vector<Index>{1}), Error);
}

TEST(ArrayCapacity, SegmentOffsetsAssignUploadsOnlyChanges) {
  auto be = Cpu();
  SegmentOffsets s(be.get(), {0, 3, 6});
  const BackendCounters c0 = be->counters();
  s.Assign(be.get(), {0, 3, 6});
  EXPECT_EQ((be->counters() - c0).uploads, 0);
  s.Assign(be.get(), {0, 6});
  EXPECT_EQ((be->counters() - c0).uploads, 1);
  EXPECT_EQ((be->counters() - c0).allocations, 0);
  EXPECT_EQ(s.array().ToHost(), (std::vector<Index>{0, 6}));
  EXPECT_THROW(s.Assign(be.get(), {0, 6, 3}), Error);
}

// y = A x on the host, block by block in pattern order (the CPU backend's order)
std::vector<Scalar> DenseProduct(const BlockPattern& p, const std::vector<Scalar>& values, const std::vector<Scalar>& x) {
  std::vector<Scalar> y(std::size_t(p.rows()), 0);
  const Index bd = p.block_dim;
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index i = 0; i < bd; ++i) {
      Scalar s = 0;
      for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
        for (Index j = 0; j < bd; ++j) s += values[std::size_t(k * bd * bd + i * bd + j)] * x[std::size_t(p.col_idx[k] * bd + j)];
      y[std::size_t(r * bd + i)] = s;
    }
  return y;
}

TEST(MatrixPattern, SetPatternReusesTheMatrix) {
  auto be = Cpu();
  auto rng = test::Rng();
  const BlockPattern big = BlockPattern::FromCoordinates(3, 4, 4, {{0, 0}, {0, 3}, {1, 1}, {2, 2}, {2, 0}, {3, 3}, {3, 1}});
  const BlockPattern small = BlockPattern::FromCoordinates(3, 3, 3, {{0, 0}, {1, 1}, {2, 2}, {1, 0}});
  auto m = be->CreateMatrix(big);
  const std::uint64_t version = m->pattern_version(), generation = m->generation();
  const BackendCounters c0 = be->counters();
  // the same pattern: nothing moves, the generation counts the call
  m->SetPattern(big);
  EXPECT_EQ(m->pattern_version(), version);
  EXPECT_EQ(m->generation(), generation + 1);
  EXPECT_EQ((be->counters() - c0).uploads, 0);
  // a smaller one: no allocation; the product as a dense reference's (exact)
  m->SetPattern(small);
  EXPECT_EQ(m->pattern_version(), version + 1);
  EXPECT_EQ((be->counters() - c0).allocations, 0);
  for (const BlockPattern* p : {&small, &big}) {
    if (p == &big) m->SetPattern(big);
    const std::vector<Scalar> values = test::RandomVector(rng, Index(p->nnz()));
    const std::vector<Scalar> x = test::RandomVector(rng, p->cols());
    m->SetValues(values);
    Array<Scalar> xd(be.get(), x), y(be.get(), p->rows());
    m->Multiply(1, xd, 0, &y);
    EXPECT_EQ(y.ToHost(), DenseProduct(*p, values, x));
    EXPECT_EQ(m->row_ptr().ToHost(), p->row_ptr);
    EXPECT_EQ(m->col_idx().ToHost(), p->col_idx);
  }
  BlockPattern other_block = small;
  other_block.block_dim = 2;
  EXPECT_THROW(m->SetPattern(other_block), Error);
}

// Reserve: a pattern within the reserved rows and blocks allocates nothing, and the product is the
// dense reference's (exact)
TEST(MatrixPattern, ReserveMakesLargerPatternsFree) {
  auto be = Cpu();
  auto rng = test::Rng();
  const BlockPattern small = BlockPattern::FromCoordinates(3, 2, 2, {{0, 0}, {1, 1}});
  const BlockPattern big = BlockPattern::FromCoordinates(3, 4, 4, {{0, 0}, {0, 3}, {1, 1}, {2, 2}, {2, 0}, {3, 3}, {3, 1}});
  auto m = be->CreateMatrix(small);
  m->Reserve(4, 7);
  const BackendCounters c0 = be->counters();
  m->SetPattern(big);
  EXPECT_EQ((be->counters() - c0).allocations, 0);
  const std::vector<Scalar> values = test::RandomVector(rng, Index(big.nnz()));
  const std::vector<Scalar> x = test::RandomVector(rng, big.cols());
  m->SetValues(values);
  Array<Scalar> xd(be.get(), x), y(be.get(), big.rows());
  m->Multiply(1, xd, 0, &y);
  EXPECT_EQ(y.ToHost(), DenseProduct(big, values, x));
}

}  // namespace
}  // namespace condsim
