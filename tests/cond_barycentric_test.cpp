// Barycentric virtual nodes in the solver (eq. 14-15 with J_a = w_a I on deformable hosts):
// the solution against a dense Eigen reference built from the Schur complement of eq. 15
// (G = J A_o^-1 J^T + I / kv, the exact Delassus operator of the virtual-node formulation):
// sticking, frictionless and D-contact cases in closed form, two virtual nodes sharing hosts
// (a 2x2 frictionless LCP solved by enumeration), and the iteration count flat in kv. Also the
// solver's records made on the backend from the system's virtual nodes (the barycentric nodes',
// the rigid groups' points) against the same records uploaded from the host.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "models/cond/cond_solver.h"
#include "models/system/system_matrix.h"
#include "test_util.h"

namespace condsim {
namespace {

using Dense = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
using DVec = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

constexpr Index kBase = 5;

// a light, stiff-ish deformable part: 2m/t ~ 2 on the diagonal, block-tridiagonal coupling
struct Part {
  BlockMatrix m;
  Dense dense;
  std::vector<Scalar> b;
};

Part MakePart(std::mt19937_64& rng) {
  std::vector<std::pair<Index, Index>> coords;
  for (Index i = 0; i < kBase; ++i)
    for (Index j = 0; j < kBase; ++j) coords.push_back({i, j});
  Part p{BlockMatrix(BlockPattern::FromCoordinates(3, kBase, kBase, coords)), Dense::Zero(3 * kBase, 3 * kBase), {}};
  const auto g = test::RandomVector(rng, 9 * kBase * kBase, -0.2, 0.2);
  Dense r = Eigen::Map<const Dense>(g.data(), 3 * kBase, 3 * kBase);
  p.dense = r * r.transpose() + 2 * Dense::Identity(3 * kBase, 3 * kBase);
  for (Index i = 0; i < kBase; ++i)
    for (Index k = p.m.pattern.row_ptr[i]; k < p.m.pattern.row_ptr[i + 1]; ++k)
      for (int a = 0; a < 9; ++a) p.m.Block(k)[a] = p.dense(3 * i + a / 3, 3 * p.m.pattern.col_idx[k] + a % 3);
  p.b = test::RandomVector(rng, 3 * kBase);
  return p;
}

struct Virtual {
  std::vector<Index> hosts;
  std::vector<Scalar> w;
};

// the solver on eq. 15 with the given virtual nodes and contacts; returns v and lambda
struct Outcome {
  std::vector<Scalar> v, lambda;
  CondStats stats;
};
Outcome Solve(const Part& part, const std::vector<Virtual>& virt, const ContactSet& contacts, Scalar kv) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SystemMatrix sys(backend.get());
  sys.AddPart(part.m.pattern);
  VirtualNodeSet vn;
  BarycentricNodes bn;
  for (std::size_t k = 0; k < virt.size(); ++k) {
    vn.AddBarycentric(Index(virt[k].hosts.size()), virt[k].hosts.data(), virt[k].w.data(), kv);
    bn.node.push_back(kBase + Index(k));
    for (std::size_t a = 0; a < virt[k].hosts.size(); ++a) {
      bn.host.push_back(virt[k].hosts[a]);
      bn.weight.push_back(virt[k].w[a]);
    }
    bn.ptr.push_back(Index(bn.host.size()));
    bn.kv.push_back(kv);
  }
  sys.SetVirtualNodes(vn);
  auto a = backend->CreateMatrix(part.m.pattern);
  a->SetValues(part.m.values);
  Array<Scalar> b(backend.get(), part.b), v0(backend.get(), std::vector<Scalar>(part.b.size(), 0));
  sys.Assemble({a.get()}, {&b});
  Array<Scalar> v;
  sys.GatherVelocity({&v0}, &v);
  CondParams params;
  // eq. 15 holds A_o only to about kv eps in its host blocks: a floor near kv eps |v| (1e-9
  // at kv = 1e7) for theta, so the references are met to 1e-6 relative
  params.theta_threshold = 1e-8;
  params.max_iterations = 20000;
  CondSolver solver(backend.get(), params);
  solver.SetBarycentricNodes(bn);
  solver.SetContacts(contacts);
  Outcome run;
  run.stats = solver.Solve(sys.matrix(), sys.rhs(), &v);
  run.v = v.ToHost();
  run.lambda = solver.Impulses();
  return run;
}

// rows of J (3 x 3 kBase) for a virtual node, or a base node
Dense Jacobian(const Virtual& v) {
  Dense j = Dense::Zero(3, 3 * kBase);
  for (std::size_t a = 0; a < v.hosts.size(); ++a) j.block(0, 3 * v.hosts[a], 3, 3) = v.w[a] * Dense::Identity(3, 3);
  return j;
}
Dense NodeJacobian(Index i) {
  Dense j = Dense::Zero(3, 3 * kBase);
  j.block(0, 3 * i, 3, 3) = Dense::Identity(3, 3);
  return j;
}
Dense ToDense(const Mat3& r) {
  Dense d(3, 3);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) d(i, k) = r(i, k);
  return d;
}

Vec3 RandomUnit(std::mt19937_64& rng) {
  const auto x = test::RandomVector(rng, 3);
  return Normalized(Vec3(x[0], x[1], x[2]));
}

// checks v against v_o = A_o^-1 (b_o + J^T f) and each virtual node against J v_o + f / kv
void ExpectConsistent(const Part& part, const std::vector<Virtual>& virt, const std::vector<Dense>& force_rows,
                      const std::vector<DVec>& forces, const Outcome& run, Scalar kv) {
  DVec rhs = Eigen::Map<const DVec>(part.b.data(), 3 * kBase);
  for (std::size_t c = 0; c < forces.size(); ++c) rhs += force_rows[c].transpose() * forces[c];
  const DVec vo = part.dense.llt().solve(rhs);
  for (Index d = 0; d < 3 * kBase; ++d) EXPECT_NEAR(run.v[d], vo[d], 1e-6 * (1 + vo.cwiseAbs().maxCoeff())) << "dof " << d;
  (void)virt;
  (void)kv;
}

TEST(CondBarycentric, StickingContactMatchesSchurComplement) {
  auto rng = test::Rng();
  const Part part = MakePart(rng);
  const std::vector<Virtual> virt = {{{0, 1, 2}, {0.2, 0.3, 0.5}}};
  const Dense aoinv = part.dense.inverse();
  const DVec bo = Eigen::Map<const DVec>(part.b.data(), 3 * kBase);
  for (Scalar kv : {1e3, 1e5, 1e7}) {
    const Dense j = Jacobian(virt[0]);
    const Dense g = j * aoinv * j.transpose() + Dense::Identity(3, 3) / kv;
    const DVec vf = j * aoinv * bo;
    const Mat3 r = ContactFrame(RandomUnit(rng));
    const Dense rd = ToDense(r);
    DVec e_n = DVec::Zero(3);
    const Scalar phi = -(rd * vf)(0) - 0.5;  // pressed: the free motion closes the gap by 0.5 m/s
    e_n(0) = phi;
    // sticking: R (v_f + G R^T lambda) + (phi, 0, 0) = 0
    const DVec lambda_ref = -(rd * g * rd.transpose()).ldlt().solve(rd * vf + e_n);
    ASSERT_GT(lambda_ref(0), 0);
    ContactSet contacts;
    contacts.Add(kBase, -1, r, phi, 50, 50);  // mu large enough to stick
    const Outcome run = Solve(part, virt, contacts, kv);
    ASSERT_TRUE(run.stats.converged) << "kv " << kv;
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(run.lambda[d], lambda_ref(d), 1e-6 * lambda_ref.norm()) << "kv " << kv;
    ExpectConsistent(part, virt, {j}, {rd.transpose() * lambda_ref}, run, kv);
    // the virtual node: J v_o + f / kv
    const DVec vo = Eigen::Map<const DVec>(run.v.data(), 3 * kBase);
    const DVec vv = j * vo + rd.transpose() * lambda_ref / kv;
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(run.v[3 * kBase + d], vv(d), 1e-6 * (1 + vv.norm()));
  }
}

TEST(CondBarycentric, FrictionlessAndDContactMatchSchurComplement) {
  auto rng = test::Rng();
  const Part part = MakePart(rng);
  const std::vector<Virtual> virt = {{{1, 2, 4}, {0.6, 0.1, 0.3}}};
  const Dense aoinv = part.dense.inverse();
  const DVec bo = Eigen::Map<const DVec>(part.b.data(), 3 * kBase);
  const Scalar kv = 1e5;
  // frictionless S-contact: lambda_n = -(n . v_f + phi) / (n^T G n)
  {
    const Dense j = Jacobian(virt[0]);
    const Dense g = j * aoinv * j.transpose() + Dense::Identity(3, 3) / kv;
    const Mat3 r = ContactFrame(RandomUnit(rng));
    const Dense n = ToDense(r).row(0);
    const Scalar vn = (n * j * aoinv * bo)(0), phi = -vn - 0.3;
    const Scalar ln = -(vn + phi) / (n * g * n.transpose())(0);
    ContactSet contacts;
    contacts.Add(kBase, -1, r, phi, 0, 0);
    const Outcome run = Solve(part, virt, contacts, kv);
    ASSERT_TRUE(run.stats.converged);
    EXPECT_NEAR(run.lambda[0], ln, 1e-6 * std::fabs(ln));
    EXPECT_NEAR(run.lambda[1], 0, 1e-12);
    ExpectConsistent(part, virt, {j}, {n.transpose() * ln}, run, kv);
  }
  // a sticking D-contact between base node 0 and the virtual node: J_rel = e_0 - J_v
  {
    const Dense jrel = NodeJacobian(0) - Jacobian(virt[0]);
    const Dense g = jrel * aoinv * jrel.transpose() + Dense::Identity(3, 3) / kv;
    const DVec vf = jrel * aoinv * bo;
    const Mat3 r = ContactFrame(RandomUnit(rng));
    const Dense rd = ToDense(r);
    const Scalar phi = -(rd * vf)(0) - 0.4;
    DVec e_n = DVec::Zero(3);
    e_n(0) = phi;
    const DVec lambda_ref = -(rd * g * rd.transpose()).ldlt().solve(rd * vf + e_n);
    ASSERT_GT(lambda_ref(0), 0);
    ContactSet contacts;
    contacts.Add(0, kBase, r, phi, 50, 50);
    const Outcome run = Solve(part, virt, contacts, kv);
    ASSERT_TRUE(run.stats.converged);
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(run.lambda[d], lambda_ref(d), 1e-6 * lambda_ref.norm());
    // node 0 gets +f, the virtual node's hosts -f
    ExpectConsistent(part, virt, {jrel}, {rd.transpose() * lambda_ref}, run, kv);
  }
}

TEST(CondBarycentric, SharedHostsMatchEnumeratedLcp) {
  auto rng = test::Rng();
  const Part part = MakePart(rng);
  // two virtual nodes sharing hosts 1 and 2, frictionless S-contacts along one normal
  const std::vector<Virtual> virt = {{{0, 1, 2}, {0.2, 0.3, 0.5}}, {{1, 2, 3}, {0.5, 0.25, 0.25}}};
  const Dense aoinv = part.dense.inverse();
  const DVec bo = Eigen::Map<const DVec>(part.b.data(), 3 * kBase);
  const Scalar kv = 1e5;
  const Mat3 r = ContactFrame(RandomUnit(rng));
  const Dense n = ToDense(r).row(0);
  Dense jn(2, 3 * kBase);
  jn.row(0) = n * Jacobian(virt[0]);
  jn.row(1) = n * Jacobian(virt[1]);
  const Dense g = jn * aoinv * jn.transpose() + Dense::Identity(2, 2) / kv;
  const DVec vf = jn * aoinv * bo;
  const std::vector<Scalar> phi = {-vf(0) - 0.3, -vf(1) + 0.02};
  // LCP: c = g l + vf + phi >= 0, l >= 0, c l = 0, by enumerating the 4 active sets
  DVec best;
  for (int set = 0; set < 4; ++set) {
    DVec l = DVec::Zero(2);
    std::vector<int> act;
    for (int k = 0; k < 2; ++k)
      if (set & (1 << k)) act.push_back(k);
    if (!act.empty()) {
      Dense gs(act.size(), act.size());
      DVec q(act.size());
      for (std::size_t a = 0; a < act.size(); ++a) {
        q(a) = -(vf(act[a]) + phi[act[a]]);
        for (std::size_t c = 0; c < act.size(); ++c) gs(a, c) = g(act[a], act[c]);
      }
      const DVec ls = gs.ldlt().solve(q);
      for (std::size_t a = 0; a < act.size(); ++a) l(act[a]) = ls(a);
    }
    const DVec c = g * l + vf + Eigen::Map<const DVec>(phi.data(), 2);
    if (l.minCoeff() >= -1e-12 && c.minCoeff() >= -1e-12) best = l;
  }
  ASSERT_EQ(best.size(), 2);
  ContactSet contacts;
  contacts.Add(kBase, -1, r, phi[0], 0, 0);
  contacts.Add(kBase + 1, -1, r, phi[1], 0, 0);
  const Outcome run = Solve(part, virt, contacts, kv);
  ASSERT_TRUE(run.stats.converged);
  EXPECT_NEAR(run.lambda[0], best(0), 1e-6 * best.norm());
  EXPECT_NEAR(run.lambda[3], best(1), 1e-6 * best.norm());
  ExpectConsistent(part, virt, {jn.row(0), jn.row(1)}, {DVec::Constant(1, best(0)), DVec::Constant(1, best(1))}, run, kv);
}

// the point of the scheme: iterations do not grow with kv (a plain diagonal W needs ~kv / a_ii)
TEST(CondBarycentric, IterationsIndependentOfKv) {
  auto rng = test::Rng();
  const Part part = MakePart(rng);
  const std::vector<Virtual> virt = {{{0, 1, 2}, {0.2, 0.3, 0.5}}};
  const Mat3 r = ContactFrame(Vec3(0, 0, 1));
  ContactSet contacts;
  contacts.Add(kBase, -1, r, -1.0, 0.5, 0.5);
  std::vector<int> its;
  for (Scalar kv : {1e3, 1e5, 1e7}) {
    const Outcome run = Solve(part, virt, contacts, kv);
    ASSERT_TRUE(run.stats.converged) << "kv " << kv;
    its.push_back(run.stats.iterations);
  }
  std::printf("[ iters    ] kv 1e3 %d, 1e5 %d, 1e7 %d\n", its[0], its[1], its[2]);
  EXPECT_LE(its[2], 2 * its[0] + 10) << its[0] << " " << its[1] << " " << its[2];
}

// the record made on the backend from the system's virtual nodes (SystemMatrix::
// virtual_nodes_on_backend) against the one uploaded from the host: bitwise the same fields and
// solves, with a rigid point among the barycentric nodes, over three sets in a row (the arrays
// reused), and nothing uploaded; hload against the host's rule (its weights in virtual-node order,
// then 1 per contact node that is the host); a set that is not the system's goes up as before
TEST(CondBarycentric, BackendMadeRecordEqualsTheUploadedOne) {
  auto rng = test::Rng();
  const Part part = MakePart(rng);
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SystemMatrix sys(backend.get());
  sys.AddPart(part.m.pattern);
  auto a = backend->CreateMatrix(part.m.pattern);
  a->SetValues(part.m.values);
  Array<Scalar> b(backend.get(), part.b), v0(backend.get(), std::vector<Scalar>(part.b.size(), 0));
  CondParams params;
  params.theta_threshold = 1e-8;
  params.max_iterations = 2000;
  CondSolver uploaded(backend.get(), params), made(backend.get(), params);
  const Scalar kv = 1e5;
  const std::vector<std::vector<Virtual>> sets = {
      {{{0, 1, 2}, {0.2, 0.3, 0.5}}, {{1, 2, 3}, {0.5, 0.25, 0.25}}, {{4, 0}, {0.7, 0.3}}},
      {{{2, 4}, {0.4, 0.6}}, {{0, 1, 2}, {0.1, 0.6, 0.3}}},
      {{{1, 3, 4}, {0.3, 0.3, 0.4}}, {{3, 1}, {0.9, 0.1}}, {{0, 2, 4}, {0.25, 0.5, 0.25}}, {{2, 3}, {0.5, 0.5}}}};
  BarycentricNodes bn;
  for (std::size_t s = 0; s < sets.size(); ++s) {
    // the barycentric nodes, with a rigid point (hosts 3 and 4) after the first
    VirtualNodeSet vn;
    bn = BarycentricNodes();
    for (std::size_t k = 0; k < sets[s].size(); ++k) {
      const Virtual& x = sets[s][k];
      bn.node.push_back(kBase + vn.AddBarycentric(Index(x.hosts.size()), x.hosts.data(), x.w.data(), kv));
      bn.host.insert(bn.host.end(), x.hosts.begin(), x.hosts.end());
      bn.weight.insert(bn.weight.end(), x.w.begin(), x.w.end());
      bn.ptr.push_back(Index(bn.host.size()));
      bn.kv.push_back(kv);
      if (k == 0) vn.AddRigidPoint(3, 4, Vec3(0.01, -0.02, 0.03), kv);
    }
    sys.SetVirtualNodes(vn);
    sys.Assemble({a.get()}, {&b});
    ASSERT_NE(sys.virtual_nodes_on_backend().kind, nullptr);
    const Mat3 r = ContactFrame(Vec3(0, 0, 1));
    ContactSet contacts;
    contacts.Add(bn.node.front(), -1, r, -0.5, 0.3, 0.3);
    contacts.Add(bn.node.back(), -1, r, -0.2, 0.3, 0.3);
    contacts.Add(1, -1, r, -0.1, 0.3, 0.3);
    contacts.Add(4, 0, r, -0.1, 0.3, 0.3);
    const std::int64_t up0 = backend->counters().upload_bytes;
    uploaded.SetBarycentricNodes(bn);
    const std::int64_t up1 = backend->counters().upload_bytes;
    made.SetBarycentricNodes(bn, &sys.virtual_nodes_on_backend());
    EXPECT_GT(up1, up0) << "set " << s;
    EXPECT_EQ(backend->counters().upload_bytes, up1) << "set " << s;
    std::vector<Scalar> v[2], lambda[2];
    int iterations[2];
    for (int p = 0; p < 2; ++p) {
      CondSolver& solver = p == 0 ? uploaded : made;
      solver.SetNodeEnvironments(std::vector<Index>(std::size_t(sys.num_nodes()), 0));
      solver.SetContacts(contacts);
      Array<Scalar> x;
      sys.GatherVelocity({&v0}, &x);
      iterations[p] = solver.Solve(sys.matrix(), sys.rhs(), &x).iterations;
      v[p] = x.ToHost();
      lambda[p] = solver.Impulses();
    }
    EXPECT_EQ(iterations[0], iterations[1]) << "set " << s;
    EXPECT_EQ(v[0], v[1]) << "set " << s;
    EXPECT_EQ(lambda[0], lambda[1]) << "set " << s;
    const BarycentricHost hu = uploaded.BackendBarycentric(), hm = made.BackendBarycentric();
#define CONDSIM_EXPECT_FIELD(T, name) EXPECT_EQ(hu.name, hm.name) << #name << ", set " << s;
    CONDSIM_BARYCENTRIC_FIELDS(CONDSIM_EXPECT_FIELD)
#undef CONDSIM_EXPECT_FIELD
    ASSERT_EQ(hu.hload.size(), hu.hnode.size());
    for (std::size_t h = 0; h < hu.hnode.size(); ++h) {
      Scalar load = 0;
      for (Index e = hu.hptr[h]; e < hu.hptr[h + 1]; ++e) load += hu.hw[std::size_t(e)];
      for (Index m = 0; m < contacts.size(); ++m)
        for (Index node : {contacts.node_i[m], contacts.node_j[m]})
          if (node == hu.hnode[h]) load += 1;
      EXPECT_EQ(hu.hload[h], load) << "host " << hu.hnode[h] << ", set " << s;
    }
  }
  // weights that are not the system's: uploaded
  bn.weight[0] += 0.01;
  const std::int64_t up = backend->counters().upload_bytes;
  made.SetBarycentricNodes(bn, &sys.virtual_nodes_on_backend());
  EXPECT_GT(backend->counters().upload_bytes, up);
  EXPECT_EQ(made.BackendBarycentric().weight, bn.weight);
}

// the rigid groups' virtual nodes, arms and gains made on the backend from the system's rigid
// points (RigidPointKeyOp, RigidPointFillOp) against the record uploaded from the host: two bodies
// (v, omega nodes 0-1 and 2-3, groups of one), three points added out of body order and a
// barycentric node between them; the same record fields, solves and impulses, bitwise, and the
// points' 36 B each (node, arm, kv) not uploaded (reference: the host's record, exact)
TEST(CondBarycentric, RigidGroupPointsFromTheSystemEqualTheUploadedOnes) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  // the rigid part: per body m I on v, a diagonal inertia on omega
  const Scalar mass[2] = {0.5, 0.8}, inertia[2][3] = {{2e-3, 3e-3, 4e-3}, {1e-3, 1e-3, 2e-3}};
  BlockMatrix part(BlockPattern::FromCoordinates(3, 4, 4, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}));
  for (Index body = 0; body < 2; ++body)
    for (int d = 0; d < 3; ++d) {
      part.Block(2 * body)[4 * d] = mass[body];
      part.Block(2 * body + 1)[4 * d] = inertia[body][d];
    }
  SystemMatrix sys(backend.get());
  sys.AddPart(part.pattern);
  const Scalar kv = 1e4;
  VirtualNodeSet vn;
  const Index b1 = vn.AddRigidPoint(2, 3, Vec3(0.01, 0.02, -0.03), kv);
  const Index h[2] = {0, 2};
  const Scalar w[2] = {0.5, 0.5};
  vn.AddBarycentric(2, h, w, kv);
  const Index a1 = vn.AddRigidPoint(0, 1, Vec3(-0.02, 0.01, -0.02), kv), a2 = vn.AddRigidPoint(0, 1, Vec3(0.03, 0, -0.02), kv);
  sys.SetVirtualNodes(vn);
  auto a = backend->CreateMatrix(part.pattern);
  a->SetValues(part.values);
  std::vector<Scalar> rhs(12, 0);
  rhs[2] = -0.5 * 9.81 * 0.01;
  rhs[8] = -0.8 * 9.81 * 0.01;
  Array<Scalar> b(backend.get(), rhs), v0(backend.get(), std::vector<Scalar>(12, 0));
  sys.Assemble({a.get()}, {&b});
  ASSERT_NE(sys.virtual_nodes_on_backend().kind, nullptr);
  RigidGroups g;
  g.trans = {0, 2};
  g.rot = {1, 3};
  g.body_ptr = {0, 1, 2};
  for (Index body = 0; body < 2; ++body) {
    std::vector<Scalar> inv(36, 0);
    for (int d = 0; d < 3; ++d) {
      inv[std::size_t(7 * d)] = 1 / mass[body];
      inv[std::size_t(7 * (d + 3))] = 1 / inertia[body][d];
    }
    g.ao_inv.insert(g.ao_inv.end(), inv.begin(), inv.end());
  }
  const std::vector<std::pair<Index, Index>> points = {{0, a1}, {0, a2}, {1, b1}};  // (body, virtual node)
  for (const auto& [body, k] : points) {
    g.node.push_back(4 + k);
    const Scalar* j = vn.jac.data() + 9 * std::size_t(vn.ptr[k] + 1);
    g.arm.insert(g.arm.end(), {j[5], j[6], j[1]});
    g.kv.push_back(kv);
  }
  g.ptr = {0, 2, 3};
  ContactSet contacts;
  for (const auto& [body, k] : points) contacts.Add(4 + k, -1, ContactFrame(Vec3(0, 0, 1)), -0.05, 0.4, 0.4);
  CondParams params;
  params.theta_threshold = 1e-10;
  params.max_iterations = 5000;
  std::vector<Scalar> v[2], lambda[2];
  RigidGroupHost record[2];
  std::int64_t up[2];
  for (int p = 0; p < 2; ++p) {
    CondSolver solver(backend.get(), params);
    const std::int64_t before = backend->counters().upload_bytes;
    solver.SetRigidGroups(g, p == 0 ? nullptr : &sys.virtual_nodes_on_backend());
    up[p] = backend->counters().upload_bytes - before;
    solver.SetContacts(contacts);
    Array<Scalar> x;
    sys.GatherVelocity({&v0}, &x);
    EXPECT_TRUE(solver.Solve(sys.matrix(), sys.rhs(), &x).converged);
    v[p] = x.ToHost();
    lambda[p] = solver.Impulses();
    record[p] = solver.BackendRigidGroups();
  }
  EXPECT_EQ(v[0], v[1]);
  EXPECT_EQ(lambda[0], lambda[1]);
#define CONDSIM_EXPECT_FIELD(T, name) EXPECT_EQ(record[0].name, record[1].name) << #name;
  CONDSIM_RIGID_GROUP_FIELDS(CONDSIM_EXPECT_FIELD)
#undef CONDSIM_EXPECT_FIELD
  // (less the map of the bodies' v nodes to their slots, nodes 0 .. 2, 4 B each, up once)
  EXPECT_LE(up[1] + 36 * Index(points.size()) - 4 * 3, up[0]);
}

}  // namespace
}  // namespace condsim
