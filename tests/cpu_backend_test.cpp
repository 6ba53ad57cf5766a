// The CPU backend's primitives against references computed here in long double (vector ops,
// reductions) or by Eigen (SpMV); bitwise determinism across thread counts; NaN handling and
// argument checks.
#include "cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <chrono>

#include <Eigen/Sparse>

#include "condsim/error.h"
#include "primitive_cases.h"
#include "test_util.h"

namespace condsim {
namespace {

std::unique_ptr<Backend> Cpu(int threads) {
  BackendOptions o;
  o.cpu_threads = threads;
  return MakeCpuBackend(o);
}

TEST(CpuBackend, PrimitivesMatchReferences) {
  auto rng = test::Rng();
  for (Index bd : {3, 6}) {
    const test::PrimitiveInputs in = test::MakePrimitiveInputs(rng, bd, 25000 / bd);
    auto backend = Cpu(0);
    const test::PrimitiveResults r = test::RunPrimitives(*backend, in);
    const std::size_t n = in.x.size();
    long double dot = 0, sum_abs = 0, sq = 0, max_abs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(r.fill[i], 3.5);
      EXPECT_EQ(r.copy[i], in.x[i]);
      // same formula evaluated here: equal within 4 ulps (allows FMA contraction)
      EXPECT_DOUBLE_EQ(r.axpby[i], in.alpha * in.x[i] + in.beta * in.y[i]);
      EXPECT_EQ(r.axpby_beta0[i], in.alpha * in.x[i]);
      EXPECT_EQ(r.multiply[i], in.x[i] * in.w[i]);
      dot += (long double)in.x[i] * in.y[i];
      sum_abs += std::fabs((long double)in.x[i] * in.y[i]);
      sq += (long double)in.y[i] * in.y[i];
      max_abs = std::max<long double>(max_abs, std::fabs(in.y[i]));
    }
    // summation error bound gamma_k * sum |x_i y_i| with k = chunk length + chunk count < 5000
    EXPECT_LE(std::fabs(r.dot - dot), 5000 * 1.2e-16 * sum_abs);
    EXPECT_LE(std::fabs(r.norm - std::sqrt(sq)), 5000 * 1.2e-16 * std::sqrt(sq));
    EXPECT_EQ(r.max_abs, max_abs);
    for (std::size_t s = 0; s + 1 < in.offsets.size(); ++s) {
      long double sd = 0, sa = 0, sm = 0;
      for (Index i = in.offsets[s]; i < in.offsets[s + 1]; ++i) {
        sd += (long double)in.x[i] * in.y[i];
        sa += std::fabs((long double)in.x[i] * in.y[i]);
        sm = std::max<long double>(sm, std::fabs(in.y[i]));
      }
      EXPECT_LE(std::fabs(r.seg_dot[s] - sd), 5000 * 1.2e-16 * sa) << "segment " << s;
      EXPECT_EQ(r.seg_max[s], sm) << "segment " << s;
    }
    // SpMV against Eigen's sparse product
    std::vector<Eigen::Triplet<double>> t;
    const BlockPattern& p = in.a.pattern;
    for (Index row = 0; row < p.block_rows; ++row)
      for (Index k = p.row_ptr[row]; k < p.row_ptr[row + 1]; ++k)
        for (Index i = 0; i < bd; ++i)
          for (Index j = 0; j < bd; ++j) t.emplace_back(row * bd + i, p.col_idx[k] * bd + j, in.a.Block(k)[i * bd + j]);
    Eigen::SparseMatrix<double> a(p.rows(), p.cols());
    a.setFromTriplets(t.begin(), t.end());
    const Eigen::Map<const Eigen::VectorXd> x(in.x.data(), n), y(in.y.data(), n);
    const Eigen::VectorXd ref = in.alpha * (a * x) + in.beta * y;
    const Eigen::VectorXd ref0 = in.alpha * (a * x);
    // each row sums ~8 blocks * bd products of magnitude <= 1, plus beta*y of magnitude <= 12.5
    EXPECT_LT(test::RelativeError(r.spmv, std::vector<Scalar>(ref.data(), ref.data() + n)), 1e-14);
    EXPECT_LT(test::RelativeError(r.spmv_beta0, std::vector<Scalar>(ref0.data(), ref0.data() + n)), 1e-14);
  }
}

TEST(CpuBackend, ResultsAreBitwiseIdenticalForAnyThreadCount) {
  auto rng = test::Rng();
  const test::PrimitiveInputs in = test::MakePrimitiveInputs(rng, 3, 30000);
  auto one = Cpu(1), many = Cpu(3);
  const test::PrimitiveResults a = test::RunPrimitives(*one, in), b = test::RunPrimitives(*many, in);
  // memcmp-level equality (NaN-free by construction)
  EXPECT_EQ(a.axpby, b.axpby);
  EXPECT_EQ(a.spmv, b.spmv);
  EXPECT_EQ(a.spmv_beta0, b.spmv_beta0);
  EXPECT_EQ(a.seg_dot, b.seg_dot);
  EXPECT_EQ(a.seg_max, b.seg_max);
  EXPECT_EQ(a.dot, b.dot);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.max_abs, b.max_abs);
}

TEST(CpuBackend, MaxAbsReportsNaNAndInfinity) {
  auto backend = Cpu(2);
  std::vector<Scalar> v(10000, 1.0);
  v[7777] = std::nan("");
  Array<Scalar> x(backend.get(), v);
  EXPECT_TRUE(std::isnan(backend->MaxAbs(x)));
  v[7777] = -std::numeric_limits<Scalar>::infinity();
  x.CopyFromHost(v);
  EXPECT_EQ(backend->MaxAbs(x), std::numeric_limits<Scalar>::infinity());
  Array<Index> offsets(backend.get(), std::vector<Index>{0, 5000, 5000, 10000});
  Array<Scalar> out(backend.get(), 3);
  v[7777] = std::nan("");
  x.CopyFromHost(v);
  backend->SegmentedMaxAbs(x, offsets, &out);
  const auto h = out.ToHost();
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(h[1], 0.0);  // empty segment
  EXPECT_TRUE(std::isnan(h[2]));
}

TEST(CpuBackend, RejectsMismatchedArguments) {
  auto backend = Cpu(1), other = Cpu(1);
  Array<Scalar> a(backend.get(), 4), b(backend.get(), 5), c(other.get(), 4);
  EXPECT_THROW(backend->Axpby(1, a, 1, &b), Error);
  EXPECT_THROW(backend->Dot(a, c), Error);
  Array<Index> bad(backend.get(), std::vector<Index>{0, 3, 2});
  Array<Scalar> out(backend.get(), 2);
  EXPECT_THROW(backend->SegmentedDot(a, a, bad, &out), Error);
  Array<Index> beyond(backend.get(), std::vector<Index>{0, 2, 9});
  EXPECT_THROW(backend->SegmentedMaxAbs(a, beyond, &out), Error);
  auto m = backend->CreateMatrix(BlockPattern::FromCoordinates(2, 2, 2, {{0, 0}, {1, 1}}));
  EXPECT_THROW(m->SetValues(std::vector<Scalar>(3)), Error);
  EXPECT_THROW(m->Multiply(1, b, 0, &a), Error);
  EXPECT_THROW(m->Multiply(1, a, 0, &a), Error);  // y aliases x
  BackendOptions o;
  o.cpu_threads = -1;
  EXPECT_THROW(MakeCpuBackend(o), Error);
}

TEST(CpuBackend, RefreshedValuesAreUsed) {
  auto backend = Cpu(2);
  auto m = backend->CreateMatrix(BlockPattern::FromCoordinates(1, 2, 2, {{0, 0}, {1, 1}}));
  Array<Scalar> x(backend.get(), std::vector<Scalar>{1, 2}), y(backend.get(), 2);
  m->SetValues({2, 3});
  m->Multiply(1, x, 0, &y);
  EXPECT_EQ(y.ToHost(), (std::vector<Scalar>{2, 6}));
  m->SetValues({-1, 5});
  m->Multiply(1, x, 0, &y);
  EXPECT_EQ(y.ToHost(), (std::vector<Scalar>{-1, 10}));
}

// SegmentOffsets: the same sums as offsets in an Array (bitwise), bad offsets rejected once, and
// no download per reduction (the counters: one launch, nothing read back)
TEST(CpuBackend, SegmentOffsetsMatchArrayOffsetsWithoutDownloads) {
  std::mt19937_64 rng(3);
  auto backend = Cpu(2);
  const std::vector<Index> off{0, 7, 7, 5000, 9001};
  const std::vector<Scalar> xh = test::RandomVector(rng, 9001), yh = test::RandomVector(rng, 9001);
  Array<Scalar> x(backend.get(), xh), y(backend.get(), yh), a(backend.get(), 4), b(backend.get(), 4);
  Array<Index> offsets(backend.get(), off);
  const SegmentOffsets checked(backend.get(), off);
  backend->SegmentedDot(x, y, offsets, &a);
  const BackendCounters before = backend->counters();
  backend->SegmentedDot(x, y, checked, &b);
  const BackendCounters d = backend->counters() - before;
  EXPECT_EQ(a.ToHost(), b.ToHost());
  EXPECT_EQ(d.launches, 1);
  EXPECT_EQ(d.downloads, 0);
  EXPECT_EQ(d.allocations, 0);
  EXPECT_THROW(SegmentOffsets(backend.get(), {0, 5, 3}), Error);
  EXPECT_THROW(SegmentOffsets(backend.get(), {1, 5}), Error);
  Array<Scalar> wrong(backend.get(), 3);
  EXPECT_THROW(backend->SegmentedDot(x, y, checked, &wrong), Error);
}

// the counters count as the host sees it: an allocation with its bytes, an upload, a reduction's
// value read back as one download of 8 bytes, a vector op as one launch
TEST(CpuBackend, CountersCountAllocationsTransfersAndLaunches) {
  auto backend = Cpu(1);
  const BackendCounters c0 = backend->counters();
  Array<Scalar> x(backend.get(), std::vector<Scalar>(100, 1.0));
  BackendCounters d = backend->counters() - c0;
  EXPECT_EQ(d.allocations, 1);
  EXPECT_EQ(d.allocated_bytes, 800);
  EXPECT_EQ(d.uploads, 1);
  EXPECT_EQ(d.upload_bytes, 800);
  const BackendCounters c1 = backend->counters();
  EXPECT_EQ(backend->Dot(x, x), 100);
  backend->Fill(2, &x);
  d = backend->counters() - c1;
  EXPECT_EQ(d.launches, 2);
  EXPECT_EQ(d.downloads, 1);
  EXPECT_EQ(d.download_bytes, 8);
  EXPECT_EQ(d.allocations, 0);
}

// read_ns: the host's time inside reads, bracketed by the wall clock around them; uploads and
// launches add none
TEST(CpuBackend, ReadTimeIsTheTimeInsideReads) {
  auto backend = Cpu(1);
  Array<Scalar> x(backend.get(), std::vector<Scalar>(1 << 20, 1.0));
  std::vector<Scalar> host(std::size_t(x.size()), 1.0);
  BackendCounters c0 = backend->counters();
  backend->Fill(2, &x);
  x.CopyFromHost(host);
  EXPECT_EQ((backend->counters() - c0).read_ns, 0);
  c0 = backend->counters();
  const auto t0 = std::chrono::steady_clock::now();
  host = x.ToHost();
  EXPECT_EQ(backend->MaxAbs(x), 1.0);
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  const BackendCounters d = backend->counters() - c0;
  EXPECT_GT(d.read_ns, 0);
  EXPECT_LE(d.read_ns, wall);
  EXPECT_EQ(host[12345], 1.0);
  // the sum of two counts and the difference back
  EXPECT_EQ(((d + d) - d).read_ns, d.read_ns);
}

// Array::Reserve keeps the entries (one copy on the backend when the allocation moves); with keep
// false it copies nothing (compute-sanitizer initcheck flagged the copy of never-written scratch)
TEST(CpuBackend, ReserveKeepsEntriesOrCopiesNothing) {
  auto backend = Cpu(1);
  Array<Scalar> kept(backend.get(), std::vector<Scalar>{1, 2, 3}), scratch(backend.get(), std::vector<Scalar>{4, 5, 6});
  BackendCounters c0 = backend->counters();
  kept.Reserve(nullptr, 1000);
  BackendCounters d = backend->counters() - c0;
  EXPECT_EQ(d.allocations, 1);
  EXPECT_EQ(d.launches, 1);  // the copy
  EXPECT_EQ(kept.size(), 3);
  EXPECT_EQ(kept.ToHost(), (std::vector<Scalar>{1, 2, 3}));
  c0 = backend->counters();
  scratch.Reserve(nullptr, 1000, false);
  d = backend->counters() - c0;
  EXPECT_EQ(d.allocations, 1);
  EXPECT_EQ(d.launches, 0);
  EXPECT_EQ(scratch.size(), 3);
  EXPECT_EQ(scratch.capacity(), 1000);
}

// row flags (batched solves): flagged rows equal the full product bitwise, the others keep y
TEST(CpuBackend, RowFlagsSkipRows) {
  std::mt19937_64 rng(7);
  auto backend = Cpu(2);
  BlockMatrix a(test::RandomPattern(rng, 3, 30, 4.0));
  a.values = test::RandomVector(rng, Index(a.pattern.nnz()));
  auto m = backend->CreateMatrix(a.pattern);
  m->SetValues(a.values);
  const std::vector<Scalar> xh = test::RandomVector(rng, a.pattern.cols()), y0 = test::RandomVector(rng, a.pattern.rows());
  std::vector<unsigned char> flags(std::size_t(a.pattern.block_rows));
  for (auto& f : flags) f = rng() % 2;
  Array<Scalar> x(backend.get(), xh), full(backend.get(), y0), part(backend.get(), y0);
  Array<unsigned char> rows(backend.get(), flags);
  m->Multiply(0.5, x, 2, &full);
  m->Multiply(0.5, x, 2, &part, &rows);
  const std::vector<Scalar> f = full.ToHost(), p = part.ToHost();
  for (Index r = 0; r < a.pattern.rows(); ++r) EXPECT_EQ(p[std::size_t(r)], flags[std::size_t(r / 3)] ? f[std::size_t(r)] : y0[std::size_t(r)]) << r;
  Array<unsigned char> wrong(backend.get(), std::vector<unsigned char>(3, 1));
  EXPECT_THROW(m->Multiply(1, x, 0, &part, &wrong), Error);
}

}  // namespace
}  // namespace condsim
