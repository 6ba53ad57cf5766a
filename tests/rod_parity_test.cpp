// Rod assembly backend parity (issue acceptance): A values and b of eq. 9 / 10 for a deformed
// polyline cable with a driven end, CUDA vs the CPU reference backend, <= 1e-12 relative, and
// bitwise identical on a repeat. Skipped without a usable GPU.
#include <gtest/gtest.h>

#include "models/rod/rod_model.h"
#include "test_util.h"

namespace condsim {
namespace {

struct Assembled {
  std::vector<Scalar> a, b, f;
};

Assembled AssembleOn(BackendChoice choice, const std::vector<Scalar>& dq, const std::vector<Scalar>& v,
                     const std::vector<Scalar>& guess) {
  auto backend = MakeBackend(choice).backend;
  RodMaterial m;
  m.rayleigh_alpha = 0.5;
  m.rayleigh_beta = 1e-3;
  RodEnd start, finish;
  start.attached = finish.attached = true;
  finish.stiffness_scale = 10;
  RodModel rod(backend.get(), MakePolylineRod({Vec3(0, 0, 0), Vec3(0.1, 0.05, 0), Vec3(0.2, 0.0, 0.05)}, 64), m, start, finish);
  rod.SetEndPose(1, Vec3(0.21, 0.01, 0.05), Normalized(Quat(1, 0.1, 0, 0.05)), Vec3(0.1, 0, 0), Vec3(0, 0.5, 0));
  // deform the state
  std::vector<Scalar> x = rod.positions().ToHost();
  for (std::size_t k = 0; k < x.size(); ++k) x[k] += dq[k];
  rod.positions().CopyFromHost(x);
  auto a = backend->CreateMatrix(rod.pattern());
  Array<Scalar> dv(backend.get(), v), dg(backend.get(), guess), b(backend.get(), rod.num_dofs()), f(backend.get(), rod.num_dofs());
  rod.Assemble(dv, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), &b, &dg);
  rod.JointForces(&f);
  return {a->values().ToHost(), b.ToHost(), f.ToHost()};
}

TEST(RodParity, CudaAssemblyMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  const auto dq = test::RandomVector(rng, 3 * 64, -1e-3, 1e-3);
  const auto v = test::RandomVector(rng, 6 * 64);
  const auto guess = test::RandomVector(rng, 6 * 64);
  const Assembled cpu = AssembleOn(BackendChoice::kCpu, dq, v, guess);
  const Assembled gpu = AssembleOn(BackendChoice::kCuda, dq, v, guess);
  const Assembled gpu2 = AssembleOn(BackendChoice::kCuda, dq, v, guess);
  EXPECT_LE(test::RelativeError(gpu.a, cpu.a), 1e-12);
  EXPECT_LE(test::RelativeError(gpu.b, cpu.b), 1e-12);
  EXPECT_LE(test::RelativeError(gpu.f, cpu.f), 1e-12);
  EXPECT_EQ(gpu.a, gpu2.a);
  EXPECT_EQ(gpu.b, gpu2.b);
}

}  // namespace
}  // namespace condsim
