// FEM assembly backend parity (issue acceptance): A values and b of eq. 9 / 10 with boundary
// conditions on a random deformed irregular mesh, CUDA vs the CPU reference backend, relative
// difference <= 1e-12 (double), and bitwise identical on a repeat. Skipped without a GPU.
#include <gtest/gtest.h>

#include "models/fem/fem_model.h"
#include "test_util.h"

namespace condsim {
namespace {

struct Assembled {
  std::vector<Scalar> a, b, f;
  double energy;
};

Assembled AssembleOn(BackendChoice choice, const TetMesh& mesh, const std::vector<Scalar>& x,
                     const std::vector<Scalar>& v, const std::vector<Scalar>& guess) {
  auto backend = MakeBackend(choice).backend;
  FemMaterial mat;
  mat.young = 3e5;
  mat.poisson = 0.4;
  mat.rayleigh_alpha = 1;
  mat.rayleigh_beta = 0.002;
  FemModel fem(backend.get(), mesh, mat, "parity");
  fem.SetPrescribedNodes({0, 3});
  fem.SetPrescribedVelocities({0, 0, 0, 0.1, -0.2, 0.3});
  fem.SetAttachments({7, 9}, {50, 80});
  fem.SetAttachmentTargets({0, 0, 0.2, 0.1, 0, 0.2}, {0.1, 0, 0, 0, 0.2, 0});
  auto a = backend->CreateMatrix(fem.pattern());
  Array<Scalar> dx(backend.get(), x), dv(backend.get(), v), dg(backend.get(), guess), b(backend.get(), Index(x.size())),
      f(backend.get(), Index(x.size()));
  fem.Assemble(dx, dv, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), &b, &dg);
  Assembled out;
  out.a = a->values().ToHost();
  out.b = b.ToHost();
  out.energy = fem.ElasticForces(dx, &f);
  out.f = f.ToHost();
  return out;
}

TEST(FemParity, CudaAssemblyMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.2, 0.1, 0.1), 8, 4, 4);
  std::vector<Scalar> x = mesh.x;
  const auto d = test::RandomVector(rng, Index(x.size()), -0.004, 0.004);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] += d[k];
  const auto v = test::RandomVector(rng, Index(x.size()));
  const auto guess = test::RandomVector(rng, Index(x.size()));
  const Assembled cpu = AssembleOn(BackendChoice::kCpu, mesh, x, v, guess);
  const Assembled gpu = AssembleOn(BackendChoice::kCuda, mesh, x, v, guess);
  const Assembled gpu2 = AssembleOn(BackendChoice::kCuda, mesh, x, v, guess);
  EXPECT_LE(test::RelativeError(gpu.a, cpu.a), 1e-12);
  EXPECT_LE(test::RelativeError(gpu.b, cpu.b), 1e-12);
  EXPECT_LE(test::RelativeError(gpu.f, cpu.f), 1e-12);
  EXPECT_NEAR(gpu.energy, cpu.energy, 1e-12 * cpu.energy);
  EXPECT_EQ(gpu.a, gpu2.a);
  EXPECT_EQ(gpu.b, gpu2.b);
}

}  // namespace
}  // namespace condsim
