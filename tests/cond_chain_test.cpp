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
#include "models/cond/cond_kernels.h"
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
  explicit CableSystem(double young, Index segments = 40) {
    RodMaterial m;
    m.radius = 0.001;
    m.young = young;
    RodEnd start;
    start.attached = true;
    rod = std::make_unique<RodModel>(backend.get(), MakeStraightRod(Vec3(0, 0, 0.001), Vec3(1, 0, 0), 0.1 * segments / 40, segments), m, start);
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

// The partitioned (lane-parallel) substitution ChainSpikeOp + ChainLaneApplyOp against the
// serial ChainApplyOp and a dense Eigen solve of the chain's system (contact nodes: identity rows,
// d = w r), on a stiff cable of 160 segments (960 unknowns, 32 blocks) and of 40 (240, 21 blocks),
// with and without contact nodes. References and tolerances: the three solve the same SPD system
// (cond(A) 3e9 to 8e10 for these cables, printed), so the forward bound is cond eps ~ 2e-5;
// measured: lane vs serial (the same factor, other summation order) 1.3e-15, lane vs Eigen 1.3e-13
// (the serial solve's own distance to Eigen), backward error |A d - r| / (|A| |d|) < 1e-20.
// Tolerances: backward error 1e-12, 1e-12 to the serial substitution, 1e-10 to Eigen.
TEST(CondChains, LaneSolveMatchesSerialAndDenseSolves) {
  for (Index segments : {160, 40}) {
    for (bool contacts : {false, true}) {
      SCOPED_TRACE(std::to_string(segments) + " segments, contacts " + std::to_string(contacts));
      CableSystem s(5e6, segments);
      Backend* be = s.backend.get();
      const std::vector<Index> nodes = s.rod->ChainNodes();
      const Index band = RodModel::kChainBand, bw = ChainBandwidth(band), nn = static_cast<Index>(nodes.size()), n = 3 * nn;
      const BlockPattern& pat = s.a->pattern();
      ChainHost host;
      host.ptr = {0, nn};
      host.nodes = nodes;
      host.band_block.assign(std::size_t(nn) * (band + 1), -1);
      for (Index g = 0; g < nn; ++g)
        for (Index d = 0; d <= band && g - d >= 0; ++d) host.band_block[std::size_t(g) * (band + 1) + d] = pat.Find(nodes[g], nodes[g - d]);
      host.factor_offset = {0, n * (bw + 1)};
      ChainArrays arrays;
      arrays.Upload(be, host);
      std::vector<unsigned char> in_contact(std::size_t(pat.block_rows), 0);
      if (contacts)
        for (Index k : {Index(7), nn / 2, nn - 1}) in_contact[std::size_t(nodes[k])] = 1;
      Array<unsigned char> contact_d(be, in_contact);
      const ChainView view{arrays.view(), contact_d.data(), band};
      auto rng = test::Rng();
      const std::vector<Scalar> r_host = test::RandomVector(rng, 3 * pat.block_rows), w_host(3 * pat.block_rows, Scalar(0.5));
      Array<Scalar> r(be, r_host), w(be, w_host), factor(be, n * (bw + 1)), spike(be, ChainSpikeStride(bw)), edge(be, ChainEdgeStride(bw)),
          work(be, n), d_serial(be, 3 * pat.block_rows), d_lane(be, 3 * pat.block_rows);
      Array<unsigned char> ok(be, 1), env_active(be, std::vector<unsigned char>{1});
      Array<Index> node_env(be, std::vector<Index>(std::size_t(pat.block_rows), 0));
      be->Fill(0, &d_serial);
      be->Fill(0, &d_lane);
      auto kernels = MakeKernels<CondKernels>(*be);
      kernels->ChainFactor(1, ChainFactorOp{view, s.a->values().data(), factor.data(), ok.data()});
      ASSERT_EQ(ok.ToHost()[0], 1);
      kernels->ChainApply(1, ChainApplyOp{view, factor.data(), ok.data(), w.data(), r.data(), node_env.data(), env_active.data(), d_serial.data()});
      kernels->ChainSpike(1, ChainSpikeOp{view, factor.data(), ok.data(), spike.data(), work.data()});
      kernels->ChainLaneApply(1, ChainLaneApplyOp{view, factor.data(), ok.data(), spike.data(), edge.data(), work.data(), w.data(), r.data(),
                                                  node_env.data(), env_active.data(), d_lane.data()});
      // the chain's system, dense: A restricted to the chain (contact rows/columns identity)
      BlockMatrix ha(pat);
      ha.values = s.a->values().ToHost();
      const Eigen::MatrixXd full = test::DenseA(ha);
      Eigen::MatrixXd a(n, n);
      Eigen::VectorXd rhs(n);
      auto dof = [&](Index i) { return 3 * nodes[i / 3] + i % 3; };
      auto free_node = [&](Index i) { return !in_contact[std::size_t(nodes[i / 3])]; };
      for (Index i = 0; i < n; ++i) {
        rhs[i] = free_node(i) ? r_host[dof(i)] : 0;
        for (Index j = 0; j < n; ++j) a(i, j) = free_node(i) && free_node(j) ? full(dof(i), dof(j)) : (i == j ? 1.0 : 0.0);
      }
      const Eigen::VectorXd x = a.ldlt().solve(rhs);
      const std::vector<Scalar> ds = d_serial.ToHost(), dl = d_lane.ToHost();
      Eigen::VectorXd vs(n), vl(n), ve(n);
      for (Index i = 0; i < n; ++i) {
        vs[i] = ds[dof(i)];
        vl[i] = dl[dof(i)];
        ve[i] = free_node(i) ? x[i] : w_host[dof(i)] * r_host[dof(i)];
        if (!free_node(i)) rhs[i] = ve[i];  // the identity row's answer is w r
      }
      const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a, Eigen::EigenvaluesOnly);
      const double cond = eig.eigenvalues().cwiseAbs().maxCoeff() / eig.eigenvalues().cwiseAbs().minCoeff();
      const double backward = (a * vl - rhs).norm() / (a.norm() * vl.norm());
      const double to_serial = (vl - vs).norm() / vs.norm(), to_eigen = (vl - ve).norm() / ve.norm();
      std::cout << "[ info     ] " << n << " unknowns, cond(A) " << cond << ": lane vs serial " << to_serial << ", vs Eigen " << to_eigen
                << ", serial vs Eigen " << (vs - ve).norm() / ve.norm() << ", backward error " << backward << "\n";
      EXPECT_LT(backward, 1e-12);
      EXPECT_LT(to_serial, 1e-12);
      EXPECT_LT(to_eigen, 1e-10);
    }
  }
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
