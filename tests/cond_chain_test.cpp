// COND chains (exact W on banded sub-systems, docs/solver.md): on a stiff cable (r = 1 mm,
// E = 5 MPa, 40 segments, t = 10 ms) the chain W solves the contact-free system in 1-2
// iterations, matching a sparse direct solve (Eigen LDLT); with contacts on some of its nodes
// (contact nodes keep the scalar Frobenius w, Prop. 3) it converges to the same solution as the
// plain Frobenius W, consistent with eq. 1 and the Signorini condition.
#include <gtest/gtest.h>

#include <algorithm>

#include <Eigen/SparseCholesky>

#include "cond_fixtures.h"
#include "sparse_reference.h"

#include "condsim/error.h"
#include "cpu/parallel.h"
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
  Out Solve(bool chains, const ContactSet& contacts, double theta, int max_iterations = 20000, bool gauss_seidel = true) {
    CondParams p;
    p.theta_threshold = theta;
    p.max_iterations = max_iterations;
    p.chain_gauss_seidel = gauss_seidel;
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
  // Gauss-Seidel (tests/cond_fixtures.h), whose fixed points satisfy eq. 11; both forms of the
  // chain step (Gauss-Seidel, the default, and both halves from v^l) have that fixed point. At
  // the fixed point u_N = start_N, so the coupling only shows in the rate: the Gauss-Seidel form
  // must take fewer iterations (measured 91 394 against 111 777; without the coupling term the
  // two forms are the same iteration)
  CableSystem s(5e6);
  ContactSet c;
  for (Index seg : {10, 20, 30, 39}) c.Add(2 * seg, -1, ContactFrame(Vec3(0, 0, 1)), 0.001 / 0.01, 0.5, 0.5);
  BlockMatrix host(s.a->pattern());
  host.values = s.a->values().ToHost();
  const Eigen::MatrixXd a = test::DenseA(host), jc = test::DenseJc(c, 2 * s.rod->num_segments());
  const std::vector<Scalar> hb = s.b->ToHost();
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
  Eigen::VectorXd free = jc * ldlt.solve(Eigen::Map<const Eigen::VectorXd>(hb.data(), hb.size()));
  for (Index m = 0; m < c.size(); ++m) free[3 * m] += c.phi[m];
  const std::vector<Scalar> ref = test::ReferencePgs(jc * ldlt.solve(jc.transpose()), free, c);
  int iterations[2] = {0, 0};
  for (bool gauss_seidel : {true, false}) {
    SCOPED_TRACE(gauss_seidel ? "Gauss-Seidel" : "Jacobi");
    const CableSystem::Out chain = s.Solve(true, c, 1e-10, 200000, gauss_seidel);
    ASSERT_TRUE(chain.stats.converged) << chain.stats.residual;
    EXPECT_LT(chain.consistency, 1e-6);
    std::cout << "[ info     ] cable with 4 contacts, " << (gauss_seidel ? "Gauss-Seidel" : "Jacobi") << " chain step: "
              << chain.stats.iterations << " iterations\n";
    iterations[gauss_seidel ? 0 : 1] = chain.stats.iterations;
    EXPECT_LT(test::RelativeError(chain.lambda, ref), 1e-5);
    // no penetration at the contacts: v_z >= -gap / t
    for (Index seg : {10, 20, 30, 39}) EXPECT_GE(chain.v[6 * seg + 2], -0.1 - 1e-6);
  }
  EXPECT_LT(iterations[0], iterations[1]);
}

// a cable's nodes as one chain (or two, cut at chain position `split` > 0) with contact nodes at
// the given chain positions, factored (ChainFactorOp, ChainSpikeOp), for the op tests below
struct ChainRig {
  CableSystem s;
  Backend* be;
  std::vector<Index> nodes;
  Index band = RodModel::kChainBand, bw = ChainBandwidth(RodModel::kChainBand), nn, n, rows, chains;
  std::vector<Index> ptr;
  ChainArrays arrays;
  std::vector<unsigned char> in_contact;
  Array<unsigned char> contact_d, ok, env_active;
  Array<Scalar> factor, spike, edge, work;
  Array<Index> node_env;
  std::unique_ptr<CondKernels> kernels;
  ChainRig(Index segments, const std::vector<Index>& contact_positions, Index split = 0)
      : s(5e6, segments), be(s.backend.get()), nodes(s.rod->ChainNodes()) {
    nn = static_cast<Index>(nodes.size());
    n = 3 * nn;
    const BlockPattern& pat = s.a->pattern();
    rows = 3 * pat.block_rows;
    ptr = split > 0 ? std::vector<Index>{0, split, nn} : std::vector<Index>{0, nn};
    chains = Index(ptr.size()) - 1;
    arrays.Upload(be, MakeChainHost(ptr, nodes, band, pat));
    in_contact.assign(std::size_t(pat.block_rows), 0);
    for (Index k : contact_positions) in_contact[std::size_t(nodes[k])] = 1;
    contact_d.Assign(be, in_contact);
    ok.Resize(be, chains);
    env_active.Assign(be, std::vector<unsigned char>{1});
    node_env.Assign(be, std::vector<Index>(std::size_t(pat.block_rows), 0));
    factor.Resize(be, n * (bw + 1));
    spike.Resize(be, chains * ChainSpikeStride(bw));
    edge.Resize(be, chains * ChainEdgeStride(bw));
    work.Resize(be, n);
    kernels = MakeKernels<CondKernels>(*be);
    kernels->ChainFactor(chains, ChainFactorOp{view(), s.a->values().data(), factor.data(), ok.data()});
    kernels->ChainSpike(chains, ChainSpikeOp{view(), factor.data(), ok.data(), spike.data(), work.data()});
  }
  ChainView view() const { return ChainView{arrays.view(), contact_d.data(), band}; }
  // the chain's unknown i (local) as a DOF of A, and whether its node is free (no contact)
  Index Dof(Index i) const { return 3 * nodes[i / 3] + i % 3; }
  bool Free(Index i) const { return !in_contact[std::size_t(nodes[i / 3])]; }
  Eigen::MatrixXd DenseFull() const {
    BlockMatrix ha(s.a->pattern());
    ha.values = s.a->values().ToHost();
    return test::DenseA(ha);
  }
};

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
      const Index nn = 2 * segments;
      ChainRig rig(segments, contacts ? std::vector<Index>{7, nn / 2, nn - 1} : std::vector<Index>{});
      Backend* be = rig.be;
      const Index n = rig.n;
      ASSERT_EQ(rig.ok.ToHost()[0], 1);
      auto rng = test::Rng();
      const std::vector<Scalar> r_host = test::RandomVector(rng, rig.rows), w_host(std::size_t(rig.rows), Scalar(0.5));
      Array<Scalar> r(be, r_host), w(be, w_host), d_serial(be, rig.rows), d_lane(be, rig.rows);
      be->Fill(0, &d_serial);
      be->Fill(0, &d_lane);
      rig.kernels->ChainApply(1, ChainApplyOp{rig.view(), rig.factor.data(), rig.ok.data(), w.data(), r.data(), rig.node_env.data(),
                                              rig.env_active.data(), d_serial.data()});
      rig.kernels->ChainLaneApply(1, ChainLaneApplyOp{rig.view(), rig.factor.data(), rig.ok.data(), rig.spike.data(), rig.edge.data(),
                                                      rig.work.data(), w.data(), r.data(), rig.node_env.data(), rig.env_active.data(),
                                                      d_lane.data()});
      // the chain's system, dense: A restricted to the chain (contact rows/columns identity)
      const Eigen::MatrixXd full = rig.DenseFull();
      Eigen::MatrixXd a(n, n);
      Eigen::VectorXd rhs(n);
      for (Index i = 0; i < n; ++i) {
        rhs[i] = rig.Free(i) ? r_host[rig.Dof(i)] : 0;
        for (Index j = 0; j < n; ++j) a(i, j) = rig.Free(i) && rig.Free(j) ? full(rig.Dof(i), rig.Dof(j)) : (i == j ? 1.0 : 0.0);
      }
      const Eigen::VectorXd x = a.ldlt().solve(rhs);
      const std::vector<Scalar> ds = d_serial.ToHost(), dl = d_lane.ToHost();
      Eigen::VectorXd vs(n), vl(n), ve(n);
      for (Index i = 0; i < n; ++i) {
        vs[i] = ds[rig.Dof(i)];
        vl[i] = dl[rig.Dof(i)];
        ve[i] = rig.Free(i) ? x[i] : w_host[rig.Dof(i)] * r_host[rig.Dof(i)];
        if (!rig.Free(i)) rhs[i] = ve[i];  // the identity row's answer is w r
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

// ChainLaneApplyOp as a warp runs it: its phases lane by lane (cpu::RunLanes), the lanes of each
// phase in a given order
struct WarpPathOp {
  ChainLaneApplyOp op;
  Index lanes[kChainLanes];
  CONDSIM_HD_INLINE void operator()(Index c) const { cpu::RunLanes(op, c, lanes); }
};

// The lane path of ChainLaneApplyOp (what the CUDA launcher and CONDSIM_CPU_ORDER run: the reduced
// systems a block per phase, one row per lane) against its item loop (operator(), the CPU's path,
// the reduced systems as serial loops): bitwise equal, as each row is summed in the same order,
// with the lanes in order, reversed and scrambled (a warp promises no order within a phase), for
// one chain of 160 segments (32 blocks), two chains cut at node 50 (18 and 32 blocks) and one of
// 40 segments (21 blocks), with contact nodes
TEST(CondChains, LanePathGivesTheItemLoopsBits) {
  for (Index segments : {160, 40}) {
    for (Index split : {Index(0), Index(50)}) {
      if (segments == 40 && split > 0) continue;
      SCOPED_TRACE(std::to_string(segments) + " segments, split " + std::to_string(split));
      ChainRig rig(segments, {7, segments, 2 * segments - 1}, split);
      // every chain factored (a failed one would return early on both paths)
      ASSERT_EQ(rig.ok.ToHost(), std::vector<unsigned char>(std::size_t(rig.chains), 1));
      Backend* be = rig.be;
      auto rng = test::Rng();
      Array<Scalar> r(be, test::RandomVector(rng, rig.rows)), w(be, test::RandomVector(rng, rig.rows, 0.1, 1)), d_item(be, rig.rows),
          d_lanes(be, rig.rows);
      be->Fill(0, &d_item);
      const auto op = [&](Array<Scalar>* d) {
        return ChainLaneApplyOp{rig.view(), rig.factor.data(), rig.ok.data(), rig.spike.data(), rig.edge.data(), rig.work.data(),
                                w.data(), r.data(), rig.node_env.data(), rig.env_active.data(), d->data()};
      };
      rig.kernels->ChainLaneApply(rig.chains, op(&d_item));
      const std::vector<Scalar> item = d_item.ToHost();
      for (int order = 0; order < 3; ++order) {
        WarpPathOp warp{op(&d_lanes), {}};
        // in order, reversed, scrambled (13 k mod 32)
        for (int k = 0; k < kChainLanes; ++k) warp.lanes[k] = order == 0 ? k : order == 1 ? kChainLanes - 1 - k : (13 * k) % kChainLanes;
        be->Fill(0, &d_lanes);
        cpu::Launch(1, rig.chains, warp);
        EXPECT_EQ(d_lanes.ToHost(), item) << "lane order " << order;
      }
    }
  }
}

// The Gauss-Seidel chain step (ChainCouplingOp, ChainLaneApplyOp on its y, ChainFinishOp) against
// a dense solve per chain: u_C = start_C - A_CC^-1 (r_C + A_CN (u_N - start_N)) on the free nodes
// C, with A_CC and A_CN taken within the chain (a chain's band never reaches into the next one);
// u unchanged on the contact nodes N. Contact nodes next to each other and at both ends of the
// cable (couplings to the left and to the right), on one chain, on two chains cut between two
// free nodes next to a contact node (the cut must not couple), and on two chains of which the second's factorization is
// marked failed (its free nodes take u_C = start_C - w y). Random r, start, u and w. Reference:
// Eigen LDLT of each chain's dense A_CC; tolerance 1e-10 relative (the lane solve's own distance
// to Eigen above is 1.3e-13, the coupling sums at most 2 band x 3 products per row); contact
// DOFs bitwise unchanged.
TEST(CondChains, GaussSeidelStepMatchesDenseSolve) {
  const Index segments = 40, nn = 2 * segments;
  const std::vector<Index> contact_positions = {0, 7, 8, 40, 51, 60, nn - 1};
  struct Case {
    const char* name;
    Index split;
    bool second_failed;
  };
  for (const Case& k : {Case{"one chain", 0, false}, Case{"two chains", 50, false}, Case{"second chain failed", 50, true}}) {
    SCOPED_TRACE(k.name);
    ChainRig rig(segments, contact_positions, k.split);
    Backend* be = rig.be;
    std::vector<unsigned char> ok = rig.ok.ToHost();
    for (unsigned char o : ok) ASSERT_EQ(o, 1);
    if (k.second_failed) {
      ok[1] = 0;
      rig.ok.CopyFromHost(ok);
    }
    auto rng = test::Rng();
    const std::vector<Scalar> r_host = test::RandomVector(rng, rig.rows), start_host = test::RandomVector(rng, rig.rows),
                              u_host = test::RandomVector(rng, rig.rows);
    std::vector<Scalar> w_host = test::RandomVector(rng, rig.rows);
    for (Scalar& x : w_host) x = 0.5 + 0.25 * x;
    Array<Scalar> r(be, r_host), start(be, start_host), u(be, u_host), w(be, w_host), y(be, rig.rows), d(be, rig.rows);
    be->Fill(0, &y);
    be->Fill(0, &d);
    rig.kernels->ChainCoupling(rig.nn, ChainCouplingOp{rig.view(), rig.nn, rig.s.a->values().data(), start.data(), u.data(), r.data(),
                                                       w.data(), y.data(), d.data()});
    rig.kernels->ChainLaneApply(rig.chains, ChainLaneApplyOp{rig.view(), rig.factor.data(), rig.ok.data(), rig.spike.data(),
                                                             rig.edge.data(), rig.work.data(), w.data(), y.data(), rig.node_env.data(),
                                                             rig.env_active.data(), d.data()});
    rig.kernels->ChainFinish(rig.nn, ChainFinishOp{rig.view(), start.data(), d.data(), u.data()});
    const std::vector<Scalar> got = u.ToHost();
    const Eigen::MatrixXd full = rig.DenseFull();
    for (Index c = 0; c < rig.chains; ++c) {
      // dense reference over chain c's local unknowns
      std::vector<Index> c_dofs, n_dofs;
      for (Index i = 3 * rig.ptr[c]; i < 3 * rig.ptr[c + 1]; ++i) (rig.Free(i) ? c_dofs : n_dofs).push_back(rig.Dof(i));
      const Index nc = Index(c_dofs.size()), nk = Index(n_dofs.size());
      Eigen::MatrixXd acc(nc, nc), acn(nc, nk);
      Eigen::VectorXd rc(nc), dn(nk), wc(nc);
      for (Index i = 0; i < nc; ++i) {
        rc[i] = r_host[c_dofs[i]];
        wc[i] = w_host[c_dofs[i]];
        for (Index j = 0; j < nc; ++j) acc(i, j) = full(c_dofs[i], c_dofs[j]);
        for (Index j = 0; j < nk; ++j) acn(i, j) = full(c_dofs[i], n_dofs[j]);
      }
      for (Index j = 0; j < nk; ++j) dn[j] = u_host[n_dofs[j]] - start_host[n_dofs[j]];
      ASSERT_GT(acn.norm(), 0);  // the contact nodes are coupled to free ones
      const bool failed = k.second_failed && c == 1;
      const Eigen::VectorXd yc = rc + acn * dn;
      const Eigen::VectorXd x = failed ? Eigen::VectorXd(wc.cwiseProduct(yc)) : Eigen::VectorXd(acc.ldlt().solve(yc));
      Eigen::VectorXd uc(nc), ref(nc);
      for (Index i = 0; i < nc; ++i) {
        uc[i] = got[c_dofs[i]];
        ref[i] = start_host[c_dofs[i]] - x[i];
      }
      std::cout << "[ info     ] " << k.name << ", chain " << c << ": Gauss-Seidel chain step vs dense " << (uc - ref).norm() / ref.norm()
                << "\n";
      EXPECT_LT((uc - ref).norm() / ref.norm(), 1e-10) << "chain " << c;
      for (Index j = 0; j < nk; ++j) EXPECT_EQ(got[n_dofs[j]], u_host[n_dofs[j]]) << "contact DOF " << n_dofs[j];
    }
  }
}

// the band blocks made on the backend from A's pattern when only the pattern changed
// (ChainBandBlockOp, CondChains::Prepare) against the host's record (MakeChainHost): a cable of 40
// segments as two chains, its pattern with virtual columns appended to some rows and virtual rows
// added (what the system's merge makes), and with some band blocks removed (-1 there). Reference:
// the host's band_block, exact
TEST(CondChains, BandBlocksOnTheBackendEqualTheHostRecord) {
  CableSystem s(5e6, 40);
  Backend* be = s.backend.get();
  const BlockPattern& pat = s.a->pattern();
  const std::vector<Index> nodes = s.rod->ChainNodes();
  const Index nn = Index(nodes.size()), band = RodModel::kChainBand;
  const std::vector<Index> ptr = {0, nn / 3, nn};
  for (int variant = 0; variant < 2; ++variant) {
    std::vector<std::pair<Index, Index>> coords;
    const Index rows = pat.block_rows, extra = 7;
    for (Index r = 0; r < rows; ++r)
      for (Index k = pat.row_ptr[r]; k < pat.row_ptr[r + 1]; ++k) {
        const Index c = pat.col_idx[k];
        // variant 1: every third row loses its blocks two and three nodes to the left
        if (variant == 1 && r % 3 == 0 && (c == r - 2 || c == r - 3)) continue;
        coords.push_back({r, c});
      }
    for (Index v = 0; v < extra; ++v) {
      const Index host = (11 * v + 5) % rows, vn = rows + v;
      for (auto [r, c] : {std::pair<Index, Index>{host, vn}, {vn, host}, {vn, vn}}) coords.push_back({r, c});
    }
    const BlockPattern merged = BlockPattern::FromCoordinates(3, rows + extra, rows + extra, coords);
    auto a = be->CreateMatrix(merged);
    const ChainHost host = MakeChainHost(ptr, nodes, band, merged);
    Array<Index> ptr_d(be, ptr), nodes_d(be, nodes), band_block(be, Index(host.band_block.size()));
    auto kernels = MakeKernels<CondKernels>(*be);
    kernels->ChainBandBlock(band_block.size(), ChainBandBlockOp{ptr_d.data(), Index(ptr.size()) - 1, nodes_d.data(), band,
                                                               a->row_ptr().data(), a->col_idx().data(), band_block.data()});
    EXPECT_EQ(band_block.ToHost(), host.band_block) << "variant " << variant;
    const Index missing = Index(std::count(host.band_block.begin(), host.band_block.end(), -1));
    std::cout << "[ info     ] variant " << variant << ": " << host.band_block.size() << " band entries, " << missing << " absent\n";
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
