// The Gershgorin safeguard of the Frobenius W and the body-mode correction (docs/solver.md):
// - on a stiff FEM ball (216 nodes, E 1 MPa, t = 10 ms) the paper's Frobenius w gives
//   lambda_max(W A) = 2.05 > 2: the plain iteration grows; the safeguarded w converges to the
//   sparse direct solve (Eigen SimplicialLDLT) of A v = b;
// - the body modes leave the fixed point unchanged (same v-hat as the direct solve, and the
//   same v-hat and impulses with a resting contact patch as without them) and cut the
//   iterations several-fold (rigid modes: 2M/t against the stiffness);
// - in a World, a stiff ball falling from rest takes v-hat = g t / 2 on every node (eq. 9 with
//   no elastic force) within a few iterations;
// - CUDA: the same 60 iterations with contacts give the CPU's v-hat and impulses to 1e-12
//   (relative), run-to-run bitwise (skipped without a usable device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"
#include "models/world/world.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kDt = 0.01;

// the eq. 9 system of a free FEM ball of radius 4 cm under gravity, moving with a spin, a
// breathing (radial) velocity and a shear, so that v-hat has rigid and elastic parts
struct BallSystem {
  std::unique_ptr<Backend> backend;
  TetMesh mesh = MakeSphereMesh(Vec3(0, 0, 0.04), 0.04, 0.016);
  FemMaterial material = [] {
    FemMaterial m;
    m.young = 1e6;
    m.poisson = 0.35;
    m.density = 1000;
    return m;
  }();
  FemModel model{backend.get(), mesh, material, "ball"};
  std::unique_ptr<DeviceBlockMatrix> a = backend->CreateMatrix(model.pattern());
  Array<Scalar> b{backend.get(), Index(mesh.x.size())};

  explicit BallSystem(BackendChoice choice = BackendChoice::kCpu) : backend(MakeBackend(choice).backend) {
    std::vector<Scalar> v0(mesh.x.size());
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      const Vec3 r = mesh.Node(i) - Vec3(0, 0, 0.04);
      const Vec3 vi = Cross(Vec3(0, 0, 3), r) + 2.0 * r + Vec3(5 * r[2], 0, 0);
      for (int d = 0; d < 3; ++d) v0[3 * std::size_t(i) + d] = vi[d];
    }
    Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), v0);
    model.Assemble(x, v, kDt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
  }
  BodyModes Modes() const {
    BodyModes m;
    Vec3 c;
    for (Index i = 0; i < mesh.num_nodes(); ++i) c += mesh.Node(i);
    c = c / Scalar(mesh.num_nodes());
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      m.node.push_back(i);
      const Vec3 r = mesh.Node(i) - c;
      for (int d = 0; d < 3; ++d) m.arm.push_back(r[d]);
    }
    m.ptr.push_back(mesh.num_nodes());
    return m;
  }
  // the nodes within 4 mm of the floor, in S-contact with it as if touching (phi = 0)
  ContactSet FloorContacts() const {
    ContactSet c;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[2] < 0.004) c.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
    return c;
  }
  CondStats Solve(const CondParams& p, bool modes, const ContactSet& contacts, std::vector<Scalar>* v,
                  std::vector<Scalar>* lambda = nullptr) {
    CondSolver solver(backend.get(), p);
    if (modes) solver.SetBodyModes(Modes());
    solver.SetContacts(contacts);
    Array<Scalar> vd(backend.get(), std::vector<Scalar>(mesh.x.size(), 0));
    const CondStats st = solver.Solve(*a, b, &vd);
    *v = vd.ToHost();
    if (lambda != nullptr) *lambda = solver.Impulses();
    return st;
  }
};

TEST(CondSafeguard, FrobeniusGrowsOnStiffBallSafeguardConverges) {
  BallSystem sys;
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.chebyshev = false;
  p.theta_threshold = 1e-12;
  p.max_iterations = 3000;
  std::vector<Scalar> v;
  // the paper's w as is: the mode at lambda = 2.05 grows by 1.05 per iteration
  p.w_safeguard = 0;
  const CondStats grow = sys.Solve(p, true, ContactSet(), &v);
  EXPECT_FALSE(grow.converged);
  EXPECT_GT(test::MaxDiff(v, exact), 1.0) << "m/s";
  // safeguarded (lambda_max(W A) <= 1.9): the direct solve's answer (|v-hat| ~ 0.1 m/s)
  p.w_safeguard = 1.9;
  p.max_iterations = 20000;
  const CondStats ok = sys.Solve(p, true, ContactSet(), &v);
  EXPECT_TRUE(ok.converged);
  EXPECT_LT(test::MaxDiff(v, exact), 1e-9) << "m/s";
  EXPECT_THROW(
      [] {
        CondParams bad;
        bad.w_safeguard = 2.0;
        bad.Validate();
      }(),
      Error);
}

TEST(CondBodyModes, SameFixedPointInFewerIterations) {
  BallSystem sys;
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.theta_threshold = 1e-11;
  p.max_iterations = 50000;
  std::vector<Scalar> v_off, v_on, l_off, l_on;
  p.body_modes = false;
  const CondStats off = sys.Solve(p, true, ContactSet(), &v_off);
  p.body_modes = true;
  const CondStats on = sys.Solve(p, true, ContactSet(), &v_on);
  std::cout << "[ info     ] free ball to theta 1e-11: " << off.iterations << " iterations without body modes, "
            << on.iterations << " with\n";
  ASSERT_TRUE(on.converged);
  // theta stops the slow rigid modes early without the correction (error ~ theta / lambda_min)
  std::cout << "[ info     ] |v - direct solve|: " << test::MaxDiff(v_off, exact) << " m/s without, " << test::MaxDiff(v_on, exact)
            << " with\n";
  EXPECT_LT(test::MaxDiff(v_on, exact), 1e-9) << "m/s";
  EXPECT_LT(4 * on.iterations, off.iterations);

  // resting on a contact patch: the same v-hat and impulses (eq. 11 at the same fixed point)
  const ContactSet floor = sys.FloorContacts();
  ASSERT_GE(floor.size(), 3);
  p.body_modes = false;
  const CondStats c_off = sys.Solve(p, true, floor, &v_off, &l_off);
  p.body_modes = true;
  const CondStats c_on = sys.Solve(p, true, floor, &v_on, &l_on);
  std::cout << "[ info     ] ball on " << floor.size() << " floor contacts: " << c_off.iterations
            << " iterations without body modes, " << c_on.iterations << " with\n";
  std::cout << "[ info     ] |v_on - v_off| " << test::MaxDiff(v_on, v_off) << " m/s, |l_on - l_off| " << test::MaxDiff(l_on, l_off) << " N\n";
  ASSERT_TRUE(c_on.converged);
  // the run without the correction stops at l_max short of theta (its error ~ 1e-8 m/s, as in
  // the free case), so the two agree to that
  EXPECT_LT(test::MaxDiff(v_on, v_off), 1e-7) << "m/s";
  double total = 0;
  for (Scalar x : l_on) total = std::max(total, std::fabs(double(x)));
  EXPECT_LT(test::MaxDiff(l_on, l_off), 1e-6 * total) << "N";
  EXPECT_LT(c_on.iterations, c_off.iterations);
}

TEST(CondBodyModes, StiffBallFallsExactlyInAFewIterations) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams wp;
  wp.dt = kDt;
  wp.cond.theta_threshold = 1e-10;
  wp.cond.max_iterations = 20000;
  World world(backend.get(), wp);
  FemMaterial m;
  m.young = 1e7;
  m.poisson = 0.35;
  const Index ball = world.AddFem(MakeSphereMesh(Vec3(0, 0, 1), 0.04, 0.016), m, "ball", 0.5, false);
  const StepStats st = world.Step();
  // from rest with no elastic force, eq. 9 gives v-hat = g t / 2 and v_1 = g t on every node
  const std::vector<Scalar> v = world.FemVelocities(ball);
  double err = 0;
  for (std::size_t k = 0; k < v.size(); ++k) err = std::max(err, std::fabs(double(v[k]) - (k % 3 == 2 ? -9.81 * kDt : 0.0)));
  EXPECT_LT(err, 1e-9) << "m/s";
  EXPECT_LE(st.cond.iterations, 5);
}

TEST(CondBodyModes, CudaMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  CondParams p;
  p.theta_threshold = 1e-300;  // never stops early: exactly max_iterations
  p.max_iterations = 60;
  std::vector<Scalar> v_cpu, v_gpu, v_gpu2, l_cpu, l_gpu, l_gpu2;
  BallSystem cpu, gpu(BackendChoice::kCuda);
  cpu.Solve(p, true, cpu.FloorContacts(), &v_cpu, &l_cpu);
  const CondStats st = gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu, &l_gpu);
  gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu2, &l_gpu2);
  ASSERT_EQ(st.iterations, 60);
  EXPECT_LE(test::RelativeError(v_gpu, v_cpu), 1e-12);
  EXPECT_LE(test::RelativeError(l_gpu, l_cpu), 1e-12);
  EXPECT_EQ(v_gpu, v_gpu2);
  EXPECT_EQ(l_gpu, l_gpu2);
}

}  // namespace
}  // namespace condsim
