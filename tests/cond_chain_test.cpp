// COND chains (exact W on banded sub-systems, docs/solver.md): on a stiff cable (r = 1 mm,
// E = 5 MPa, 40 segments, t = 10 ms) the chain W solves the contact-free system in 1-2
// iterations, matching a sparse direct solve (Eigen LDLT); with contacts on some of its nodes
// (contact nodes keep the scalar Frobenius w, Prop. 3) it converges to the same solution as the
// plain Frobenius W, consistent with eq. 1 and the Signorini condition.
#include <gtest/gtest.h>

#include <Eigen/SparseCholesky>

#include "cond_fixtures.h"
#include "sparse_reference.h"

#include "condsim/error.h"
#include "models/cond/cond_solver.h"
#include "fixtures/mass_spring.h"
#include "models/rod/rod_model.h"
#include "test_util.h"

namespace condsim {
namespace {

struct CableSystem {
  std::unique_ptr<Backend> backend = MakeBackend(BackendChoice::kCpu).backend;
  std::unique_ptr<RodModel> rod;
  std::unique_ptr<DeviceBlockMatrix> a;
  std::unique_ptr<Array<Scalar>> b;
  explicit CableSystem(double young) {
    RodMaterial m;
    m.radius = 0.001;
    m.young = young;
    RodEnd start;
    start.attached = true;
    rod = std::make_unique<RodModel>(backend.get(), MakeStraightRod(Vec3(0, 0, 0.001), Vec3(1, 0, 0), 0.1, 40), m, start);
    a = backend->CreateMatrix(rod->pattern());
    b = std::make_unique<Array<Scalar>>(backend.get(), rod->num_dofs());
    Array<Scalar> v(backend.get(), std::vector<Scalar>(rod->num_dofs(), 0));
    rod->Assemble(v, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), b.get());
  }
  struct Out {
    std::vector<Scalar> v, lambda;
    CondStats stats;
    double consistency;
  };
  Out Solve(bool chains, const ContactSet& contacts, double theta, int max_iterations = 20000) {
    CondParams p;
    p.theta_threshold = theta;
    p.max_iterations = max_iterations;
    CondSolver solver(backend.get(), p);
    if (chains) solver.SetChains({0, 2 * rod->num_segments()}, rod->ChainNodes(), RodModel::kChainBand);
    solver.SetContacts(contacts);
    Array<Scalar> v(backend.get(), std::vector<Scalar>(rod->num_dofs(), 0));
    Out out;
    out.stats = solver.Solve(*a, *b, &v);
    out.v = v.ToHost();
    out.lambda = solver.Impulses();
    out.consistency = solver.ConsistencyResidual(*a, *b, v);
    return out;
  }
};

TEST(CondChains, StiffCableWithoutContactsSolvesInOneOrTwoIterations) {
  CableSystem s(5e6);
  const CableSystem::Out out = s.Solve(true, ContactSet(), 1e-9);
  ASSERT_TRUE(out.stats.converged);
  EXPECT_LE(out.stats.iterations, 3);
  // reference: sparse direct solve of the same A v = b
  const std::vector<Scalar> ref = test::SparseSolve(*s.a, *s.b);
  EXPECT_LT(test::RelativeError(out.v, ref), 1e-8);
  // the plain Frobenius W does not get there in 20000 iterations on this system
  const CableSystem::Out plain = s.Solve(false, ContactSet(), 1e-9);
  std::cout << "[ info     ] stiff cable, 40 segments: chain W " << out.stats.iterations
            << " iterations; Frobenius W after 20000 iterations: residual " << plain.stats.residual << "\n";
  EXPECT_FALSE(plain.stats.converged);
}

TEST(CondChains, ContactNodesInsideAChainStayExact) {
  // reference: the same contact problem in impulse space, J A^-1 J^T, by dense projected
  // Gauss-Seidel (tests/cond_fixtures.h), whose fixed points satisfy eq. 11
  CableSystem s(5e6);
  ContactSet c;
  for (Index seg : {10, 20, 30, 39}) c.Add(2 * seg, -1, ContactFrame(Vec3(0, 0, 1)), 0.001 / 0.01, 0.5, 0.5);
  const CableSystem::Out chain = s.Solve(true, c, 1e-10, 200000);
  ASSERT_TRUE(chain.stats.converged) << chain.stats.residual;
  EXPECT_LT(chain.consistency, 1e-6);
  BlockMatrix host(s.a->pattern());
  host.values = s.a->values().ToHost();
  const Eigen::MatrixXd a = test::DenseA(host), jc = test::DenseJc(c, 2 * s.rod->num_segments());
  const std::vector<Scalar> hb = s.b->ToHost();
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
  Eigen::VectorXd free = jc * ldlt.solve(Eigen::Map<const Eigen::VectorXd>(hb.data(), hb.size()));
  for (Index m = 0; m < c.size(); ++m) free[3 * m] += c.phi[m];
  const std::vector<Scalar> ref = test::ReferencePgs(jc * ldlt.solve(jc.transpose()), free, c);
  std::cout << "[ info     ] cable with 4 contacts: chain W " << chain.stats.iterations << " iterations\n";
  EXPECT_LT(test::RelativeError(chain.lambda, ref), 1e-5);
  // no penetration at the contacts: v_z >= -gap / t
  for (Index seg : {10, 20, 30, 39}) EXPECT_GE(chain.v[6 * seg + 2], -0.1 - 1e-6);
}

TEST(CondChains, RejectsOverlappingChains) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  CondSolver solver(backend.get(), CondParams());
  EXPECT_THROW(solver.SetChains({0, 2, 4}, {0, 1, 1, 2}, 3), Error);
  EXPECT_THROW(solver.SetChains({0, 3}, {0, 1}, 3), Error);
  EXPECT_THROW(solver.SetChains({0, 2}, {0, 1}, 0), Error);
}

}  // namespace
}  // namespace condsim
