// Backend parity (DESIGN §7): every primitive on the CUDA backend, for each SpMV path, against
// the CPU reference backend on the same random inputs; relative error <= 1e-12 in double
// (both compute the same sums in different orders: ~1e-15 expected). Outputs are poisoned
// with NaN before each op. Skipped with the reason when no usable CUDA device is present;
// fails instead under CONDSIM_REQUIRE_CUDA=1.
#include <gtest/gtest.h>

#include "condsim/backend.h"
#include "condsim/chunk_reduce.h"
#include "condsim/vector_ops.h"
#include "primitive_cases.h"
#include "test_util.h"

namespace condsim {
namespace {

#if defined(CONDSIM_FLOAT) && CONDSIM_FLOAT
constexpr double kParityTol = 1e-5;
#else
constexpr double kParityTol = 1e-12;
#endif

void ExpectClose(const std::vector<Scalar>& cuda, const std::vector<Scalar>& cpu, const char* what) {
  ASSERT_EQ(cuda.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cuda.size(); ++i) ASSERT_FALSE(std::isnan(cuda[i])) << what << ": entry " << i << " not written";
  EXPECT_LE(test::RelativeError(cuda, cpu), kParityTol) << what;
}

// scalar results: relative to `scale`, the sum of |terms| for dot products (a sum's natural
// error scale: the result itself may be near zero by cancellation)
void ExpectClose(Scalar cuda, Scalar cpu, double scale, const char* what) {
  EXPECT_LE(std::fabs(cuda - cpu), kParityTol * std::max(scale, 1e-300)) << what;
}

double SumAbsProducts(const test::PrimitiveInputs& in, Index begin, Index end) {
  double s = 0;
  for (Index i = begin; i < end; ++i) s += std::fabs(double(in.x[i]) * double(in.y[i]));
  return s;
}

}  // namespace

// readable parameter names in test listings
void PrintTo(SpmvFormat format, std::ostream* out) { *out << ToString(format); }

namespace {

class BackendParity : public ::testing::TestWithParam<SpmvFormat> {};

TEST_P(BackendParity, CudaMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  BackendOptions opt;
  opt.spmv_format = GetParam();
  auto cpu = MakeBackend(BackendChoice::kCpu).backend;
  auto cuda = MakeBackend(BackendChoice::kCuda, opt).backend;
  ASSERT_EQ(cuda->kind(), BackendKind::kCuda);
  // cuSPARSE's BSR SpMV may reject 1x1 blocks (the cusparseCreateBsr documentation asks for
  // block dimensions > 1): block size 1 runs on the scalar paths (CSR, the row loop) only
  const std::vector<Index> block_dims = GetParam() == SpmvFormat::kBsr ? std::vector<Index>{2, 3, 6} : std::vector<Index>{1, 3, 6};
  for (Index bd : block_dims) {
    // sizes spanning many CUDA blocks and several CPU reduction chunks
    const test::PrimitiveInputs in = test::MakePrimitiveInputs(rng, bd, 60000 / bd);
    SCOPED_TRACE("block_dim " + std::to_string(bd));
    const test::PrimitiveResults g = test::RunPrimitives(*cuda, in);
    const test::PrimitiveResults c = test::RunPrimitives(*cpu, in);
    ExpectClose(g.fill, c.fill, "fill");
    ExpectClose(g.copy, c.copy, "copy");
    ExpectClose(g.axpby, c.axpby, "axpby");
    ExpectClose(g.axpby_beta0, c.axpby_beta0, "axpby beta=0");
    ExpectClose(g.multiply, c.multiply, "multiply");
    ExpectClose(g.spmv, c.spmv, "spmv");
    ExpectClose(g.spmv_beta0, c.spmv_beta0, "spmv beta=0");
    ExpectClose(g.seg_max, c.seg_max, "segmented max");
    ExpectClose(g.max_abs, c.max_abs, std::fabs(c.max_abs), "max abs");
    ExpectClose(g.dot, c.dot, SumAbsProducts(in, 0, Index(in.x.size())), "dot");
    ExpectClose(g.norm, c.norm, c.norm, "norm");
    for (std::size_t s = 0; s < c.seg_dot.size(); ++s) {
      ExpectClose(g.seg_dot[s], c.seg_dot[s], SumAbsProducts(in, in.offsets[s], in.offsets[s + 1]),
                  "segmented dot");
    }
    // run-to-run determinism on the device: a second run is bitwise identical
    const test::PrimitiveResults g2 = test::RunPrimitives(*cuda, in);
    EXPECT_EQ(g.spmv, g2.spmv);
    EXPECT_EQ(g.seg_dot, g2.seg_dot);
    EXPECT_EQ(g.dot, g2.dot);
  }
}

INSTANTIATE_TEST_SUITE_P(SpmvFormats, BackendParity,
                         ::testing::Values(SpmvFormat::kCsr, SpmvFormat::kBsr, SpmvFormat::kRowLoop),
                         [](const auto& info) { return std::string(ToString(info.param)); });

// the CUDA segmented reductions in chunk_reduce.h's order: bitwise SegmentedReduceHost, and a
// segment's value the same in a batch of segments and alone (one segment, shifted to offset 0);
// 7 segments (the chunk layout by one thread) and 77 (a count and cub's scan)
TEST(BackendParity, CudaSegmentedReductionsFollowTheChunkOrder) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  auto cuda = MakeBackend(BackendChoice::kCuda).backend;
  for (bool many : {false, true}) {
    std::vector<Index> lengths = {5, 0, 1, kReduceThreads + 3, kReduceChunk - 1, kReduceChunk + 1, 3 * kReduceChunk + 77};
    if (many)
      for (Index k = 0; k < 70; ++k) lengths.push_back((37 * k) % 300 + (k % 5 == 0 ? kReduceChunk : 0));
    SCOPED_TRACE(many ? "77 segments" : "7 segments");
    ASSERT_EQ(Index(lengths.size()) > kSerialChunkLayout, many);
    std::vector<Index> offsets = {0};
    for (Index n : lengths) offsets.push_back(offsets.back() + n);
    const std::vector<Scalar> hx = test::RandomVector(rng, offsets.back()), hy = test::RandomVector(rng, offsets.back());
    const Index ns = Index(lengths.size());
    Array<Scalar> x(cuda.get(), hx), y(cuda.get(), hy), dot(cuda.get(), ns), max(cuda.get(), ns);
    const SegmentOffsets segments(cuda.get(), offsets);
    cuda->SegmentedDot(x, y, segments, &dot);
    cuda->SegmentedMaxAbs(y, segments, &max);
    const auto sum_op = [](Scalar a, Scalar b) { return a + b; };
    const auto max_op = [](Scalar a, Scalar b) { return NanMax(a, b); };
    const auto dot_term = [&](Index i) { return hx[std::size_t(i)] * hy[std::size_t(i)]; };
    EXPECT_EQ(dot.ToHost(), SegmentedReduceHost(dot_term, offsets, sum_op, Scalar(0)));
    EXPECT_EQ(max.ToHost(), SegmentedReduceHost([&](Index i) { return std::fabs(hy[std::size_t(i)]); }, offsets, max_op, Scalar(0)));
    const std::vector<Scalar> batch = dot.ToHost();
    for (Index s = 0; s < ns; ++s) {
      const std::vector<Scalar> px(hx.begin() + offsets[s], hx.begin() + offsets[s + 1]), py(hy.begin() + offsets[s], hy.begin() + offsets[s + 1]);
      if (px.empty()) continue;
      Array<Scalar> ax(cuda.get(), px), ay(cuda.get(), py), one(cuda.get(), 1);
      cuda->SegmentedDot(ax, ay, SegmentOffsets(cuda.get(), {0, lengths[s]}), &one);
      EXPECT_EQ(one.ToHost()[0], batch[s]) << "segment " << s;
    }
  }
}

TEST(BackendParity, CudaMatrixPicksUpRefreshedValues) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  for (SpmvFormat f : {SpmvFormat::kCsr, SpmvFormat::kBsr, SpmvFormat::kRowLoop}) {
    BackendOptions opt;
    opt.spmv_format = f;
    auto cuda = MakeBackend(BackendChoice::kCuda, opt).backend;
    // two diagonal blocks a I and b I (2x2 for BSR, which may reject 1x1 blocks; 1x1 otherwise)
    const Index bd = f == SpmvFormat::kBsr ? 2 : 1;
    auto per_block = [bd](Scalar a, Scalar b, bool diagonal_only) {
      std::vector<Scalar> v;
      for (Scalar s : {a, b})
        for (Index i = 0; i < bd; ++i)
          for (Index j = 0; j < (diagonal_only ? bd : 1); ++j) v.push_back(!diagonal_only || i == j ? s : Scalar(0));
      return v;
    };
    auto m = cuda->CreateMatrix(BlockPattern::FromCoordinates(bd, 2, 2, {{0, 0}, {1, 1}}));
    Array<Scalar> x(cuda.get(), per_block(1, 2, false)), y(cuda.get(), 2 * bd);
    m->SetValues(per_block(2, 3, true));
    m->Multiply(1, x, 0, &y);
    EXPECT_EQ(y.ToHost(), per_block(2, 6, false)) << ToString(f);
    m->SetValues(per_block(-1, 5, true));
    m->Multiply(1, x, 0, &y);
    EXPECT_EQ(y.ToHost(), per_block(-1, 10, false)) << ToString(f);
  }
}

}  // namespace
}  // namespace condsim
