// The shared host/device math inside a CUDA kernel against the same functor on the host.
// Tolerance 1e-12 relative: identical arithmetic except for FMA contraction by nvcc, on
// inputs whose polar factor is well conditioned (sigma_2 + sigma_3 > 1e-2).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "cuda_math_kernels.h"
#include "test_util.h"

namespace condsim {
namespace {

double MaxDiff(const Scalar* a, const Scalar* b, int n) {
  double d = 0;
  for (int i = 0; i < n; ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

TEST(CudaMath, KernelResultsMatchHost) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  std::vector<test::MathCase> cases;
  while (cases.size() < 20000) {
    const auto r = test::RandomVector(rng, 16);
    test::MathCase c{Mat3(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]),
                     Quat(r[9], r[10], r[11], r[12]), Vec3(r[13], r[14], r[15])};
    Eigen::Matrix3d f;
    for (int i = 0; i < 9; ++i) f(i / 3, i % 3) = r[i];
    const auto sv = Eigen::JacobiSVD<Eigen::Matrix3d>(f).singularValues();
    const double sign = f.determinant() < 0 ? -1 : 1;
    if (sv[1] + sign * sv[2] < 1e-2 || sv[2] < 1e-3) continue;  // keep the references well conditioned
    cases.push_back(c);
  }
  const std::vector<test::MathResult> device = test::RunMathOnDevice(cases);
  std::vector<test::MathResult> host(cases.size());
  for (Index i = 0; i < Index(cases.size()); ++i) test::MathOp{cases.data(), host.data()}(i);
  constexpr int kWords = sizeof(test::MathResult) / sizeof(Scalar);
  static_assert(sizeof(test::MathResult) % sizeof(Scalar) == 0, "MathResult must be all Scalars");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Scalar* d = reinterpret_cast<const Scalar*>(&device[i]);
    const Scalar* h = reinterpret_cast<const Scalar*>(&host[i]);
    for (int k = 0; k < kWords; ++k) ASSERT_FALSE(std::isnan(d[k])) << "case " << i << " word " << k << " not written";
    // inverse scales with 1/sigma_min: compare relative to its own size
    const double inv_scale = std::max(1.0, double(FrobeniusNorm(host[i].inverse)));
    ASSERT_LT(MaxDiff(d, h, kWords) / inv_scale, 1e-12) << "case " << i;
  }
}

}  // namespace
}  // namespace condsim
