// Co-rotational FEM boundary conditions through the assembled system and the COND solve:
// a clamped cantilever's tip deflection against Euler-Bernoulli beam theory, pinned and driven
// nodes landing on their trajectories, and a handle carried on the backend against the host's
// formula (each test states its reference and tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <vector>

#include "condsim/error.h"
#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

// static cantilever under its own weight through the assembled system: with t -> large,
// A = 2M/t + (t/2) K is (t/2) K to 1e-12, b = M g, so the displacement is u = (t/2) v-hat; the
// clamped end is a set of prescribed (pinned) nodes. Reference: Euler-Bernoulli tip deflection
// q L^4 / (8 E I) with q = rho g A, I = h^4 / 12 (nu = 0: the beam theory's uniaxial stress)
double CantileverTip(Index nx, Index nh, std::vector<double>* table) {
  const double length = 1.0, h = 0.1, young = 1e6, rho = 100, g = 9.81;
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(length, h, h), nx, nh, nh);
  FemMaterial mat;
  mat.young = young;
  mat.poisson = 0.0;
  mat.density = rho;
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  FemModel fem(backend.get(), mesh, mat, "cantilever");
  std::vector<Index> clamped;
  for (Index i = 0; i < mesh.num_nodes(); ++i)
    if (mesh.Node(i)[0] < 1e-12) clamped.push_back(i);
  fem.SetPrescribedNodes(clamped);
  fem.SetPrescribedVelocities(std::vector<Scalar>(3 * clamped.size(), 0));
  const Scalar dt = 1e6;
  auto a = backend->CreateMatrix(fem.pattern());
  Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), std::vector<Scalar>(mesh.x.size(), 0)), b(backend.get(), Index(mesh.x.size()));
  fem.Assemble(x, v, dt, Vec3(0, 0, -g), nullptr, a.get(), &b);
  // sparse direct solve (Eigen) as the reference linear solver
  const std::vector<Scalar> vhat = test::SparseSolve(*a, b);
  // mean vertical displacement of the tip face
  double tip = 0;
  int count = 0;
  for (Index i = 0; i < mesh.num_nodes(); ++i)
    if (mesh.Node(i)[0] > length - 1e-12) {
      tip += dt / 2 * vhat[3 * i + 2];
      ++count;
    }
  tip /= count;
  const double reference = rho * g * h * h * std::pow(length, 4) / (8 * young * std::pow(h, 4) / 12);
  if (table != nullptr) table->push_back(-tip / reference);
  return -tip / reference;
}

TEST(FemCantilever, TipDeflectionConvergesToEulerBernoulli) {
  std::vector<double> ratio;
  const Index res[3][2] = {{24, 3}, {48, 6}, {96, 12}};
  for (const auto& r : res) CantileverTip(r[0], r[1], &ratio);
  std::cout << "[ info     ] tip deflection / Euler-Bernoulli: 24x3x3 " << ratio[0] << ", 48x6x6 " << ratio[1]
            << ", 96x12x12 " << ratio[2] << "\n";
  // linear tetrahedra are too stiff in bending and converge from below
  EXPECT_LT(ratio[0], ratio[1]);
  EXPECT_LT(ratio[1], ratio[2]);
  EXPECT_NEAR(ratio[2], 1.0, 0.05);
}

TEST(FemBoundary, DrivenNodesFollowTheirTrajectoryAndBadInputIsRejected) {
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.1, 0.1, 0.1), 2, 2, 2);
  FemMaterial mat;
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  FemModel fem(backend.get(), mesh, mat, "driven");
  fem.SetPrescribedNodes({0, 5});
  EXPECT_THROW(fem.SetPrescribedNodes({0, 0}), Error);
  EXPECT_THROW(fem.SetPrescribedNodes({99}), Error);
  EXPECT_THROW(fem.SetPrescribedVelocities({1, 2, 3}), Error);
  EXPECT_THROW(fem.SetAttachments({1}, {-5}), Error);
  // node 0 pinned, node 5 driven on a circle: v-hat = (p(t_{k+1}) - x_k) / t lands on p exactly
  auto a = backend->CreateMatrix(fem.pattern());
  Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), std::vector<Scalar>(mesh.x.size(), 0)), b(backend.get(), Index(mesh.x.size()));
  Array<Scalar> vhat(backend.get(), Index(mesh.x.size()));
  CondParams params;
  params.theta_threshold = 1e-13;
  params.max_iterations = 100000;
  CondSolver solver(backend.get(), params);
  const Scalar dt = 0.01;
  const Vec3 x5 = mesh.Node(5);
  for (int step = 0; step < 20; ++step) {
    const std::vector<Scalar> xh = x.ToHost();
    const double ang = 0.5 * (step + 1) * dt;
    const Vec3 target = x5 + Vec3(0.02 * std::sin(ang * 10), 0.02 * (1 - std::cos(ang * 10)), 0);
    std::vector<Scalar> pv = {0, 0, 0};
    for (int c = 0; c < 3; ++c) pv.push_back((target[c] - xh[15 + c]) / dt);
    fem.SetPrescribedVelocities(pv);
    fem.Assemble(x, v, dt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
    backend->Copy(v, &vhat);
    ASSERT_TRUE(solver.Solve(*a, b, &vhat).converged);
    backend->Axpby(dt, vhat, 1, &x);
    backend->Axpby(2, vhat, -1, &v);
    const std::vector<Scalar> xn = x.ToHost();
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(xn[15 + c], target[c], 1e-12);
      EXPECT_NEAR(xn[c], mesh.x[c], 1e-15);
    }
  }
}

// a handle carried on the backend (CarryPrescribed) against the host's formula through
// SetPrescribedVelocities: v = (p + R (X - o) - x) / t per prescribed node, so the assembled A and
// b are identical (tolerance 0: the same operations in the same order); a handle node lands on
// p + R (X - o) after the step (1e-12 m, the solve's tolerance); bad input is an error
TEST(FemBoundary, CarriedHandleMatchesTheHostFormula) {
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.1, 0.04, 0.02), 5, 2, 1);
  FemMaterial mat;
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  FemModel host(backend.get(), mesh, mat, "host"), carried(backend.get(), mesh, mat, "carried");
  std::vector<Index> handle;
  std::vector<Scalar> reference;
  for (Index i = 0; i < mesh.num_nodes(); ++i)
    if (mesh.Node(i)[0] > 0.08 - 1e-12) {
      handle.push_back(i);
      for (int c = 0; c < 3; ++c) reference.push_back(mesh.Node(i)[c]);
    }
  host.SetPrescribedNodes(handle);
  carried.SetPrescribedNodes(handle);
  EXPECT_THROW(carried.CarryPrescribed(Array<Scalar>(backend.get(), mesh.x), Mat3::Identity(), Vec3(), Vec3(), 0.01), Error);
  EXPECT_THROW(carried.SetPrescribedReference({1, 2, 3}), Error);
  carried.SetPrescribedReference(reference);
  // a new node set forgets the reference positions
  FemModel renamed(backend.get(), mesh, mat, "renamed");
  renamed.SetPrescribedNodes(handle);
  renamed.SetPrescribedReference(reference);
  renamed.SetPrescribedNodes(handle);
  EXPECT_THROW(renamed.CarryPrescribed(Array<Scalar>(backend.get(), mesh.x), Mat3::Identity(), Vec3(), Vec3(), 0.01), Error);
  // the positions moved off the mesh; the handle turned about z and lifted
  std::vector<Scalar> xh = mesh.x;
  for (std::size_t k = 0; k < xh.size(); ++k) xh[k] += Scalar(1e-3) * std::sin(Scalar(k));
  const Scalar dt = 0.01, ang = 0.3;
  const Mat3 r(std::cos(ang), -std::sin(ang), 0, std::sin(ang), std::cos(ang), 0, 0, 0, 1);
  const Vec3 p(0.02, -0.01, 0.03), origin(0.09, 0.02, 0.01);
  std::vector<Scalar> pv;
  for (std::size_t q = 0; q < handle.size(); ++q) {
    const Vec3 target = p + r * (LoadVec3(reference.data(), Index(q)) - origin);
    const Vec3 u = (1 / dt) * (target - LoadVec3(xh.data(), handle[q]));
    pv.insert(pv.end(), {u[0], u[1], u[2]});
  }
  host.SetPrescribedVelocities(pv);
  Array<Scalar> x(backend.get(), xh), v(backend.get(), std::vector<Scalar>(xh.size(), 0));
  EXPECT_THROW(carried.CarryPrescribed(x, r, p, origin, 0), Error);
  carried.CarryPrescribed(x, r, p, origin, dt);
  auto a_host = backend->CreateMatrix(host.pattern());
  auto a_carried = backend->CreateMatrix(carried.pattern());
  Array<Scalar> b_host(backend.get(), Index(xh.size())), b_carried(backend.get(), Index(xh.size()));
  host.Assemble(x, v, dt, Vec3(0, 0, -9.81), nullptr, a_host.get(), &b_host);
  carried.Assemble(x, v, dt, Vec3(0, 0, -9.81), nullptr, a_carried.get(), &b_carried);
  EXPECT_EQ(b_carried.ToHost(), b_host.ToHost());
  EXPECT_EQ(a_carried->values().ToHost(), a_host->values().ToHost());
  // one step: the handle nodes land on their carried positions
  CondParams params;
  params.theta_threshold = 1e-13;
  params.max_iterations = 100000;
  CondSolver solver(backend.get(), params);
  Array<Scalar> vhat(backend.get(), Index(xh.size()));
  backend->Fill(0, &vhat);
  ASSERT_TRUE(solver.Solve(*a_carried, b_carried, &vhat).converged);
  backend->Axpby(dt, vhat, 1, &x);
  const std::vector<Scalar> xn = x.ToHost();
  for (std::size_t q = 0; q < handle.size(); ++q) {
    const Vec3 target = p + r * (LoadVec3(reference.data(), Index(q)) - origin);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(xn[3 * std::size_t(handle[q]) + c], target[c], 1e-12);
  }
}

}  // namespace
}  // namespace condsim
