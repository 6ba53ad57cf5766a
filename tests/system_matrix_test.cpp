// The global system with virtual nodes (eq. 15) against a dense Eigen construction from the
// paper's block formula; Prop. 1 (A stays SPD); the warm start v_v = Jv v_o (Sec. V-A5).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "models/system/system_matrix.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::RandomVector;
using test::Rng;
using Dense = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;

// a random SPD part: block tridiagonal over n nodes
BlockMatrix RandomPart(std::mt19937_64& rng, Index n) {
  std::vector<std::pair<Index, Index>> coords;
  for (Index i = 0; i < n; ++i)
    for (Index j = std::max<Index>(0, i - 1); j <= std::min(n - 1, i + 1); ++j) coords.push_back({i, j});
  BlockMatrix m(BlockPattern::FromCoordinates(3, n, n, coords));
  Dense g = Dense::Zero(3 * n, 3 * n);
  for (Index i = 0; i < n; ++i)
    for (Index j = std::max<Index>(0, i - 1); j <= std::min(n - 1, i + 1); ++j) {
      const auto r = RandomVector(rng, 9);
      for (int a = 0; a < 9; ++a) g(3 * i + a / 3, 3 * j + a % 3) = r[a];
    }
  Dense s = g + g.transpose();
  s += Dense::Identity(3 * n, 3 * n) * (3 * n * 2.0);  // diagonally dominant: SPD
  for (Index i = 0; i < n; ++i)
    for (Index k = m.pattern.row_ptr[i]; k < m.pattern.row_ptr[i + 1]; ++k) {
      const Index j = m.pattern.col_idx[k];
      for (int a = 0; a < 9; ++a) m.Block(k)[a] = s(3 * i + a / 3, 3 * j + a % 3);
    }
  return m;
}

Dense ToDense(const BlockPattern& p, const std::vector<Scalar>& values) {
  Dense d = Dense::Zero(p.rows(), p.cols());
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
      for (int a = 0; a < 9; ++a) d(3 * r + a / 3, 3 * p.col_idx[k] + a % 3) += values[9 * std::size_t(k) + a];
  return d;
}

TEST(SystemMatrix, VirtualNodesFollowEq15) {
  auto rng = Rng();
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SystemMatrix sys(backend.get());
  const BlockMatrix p0 = RandomPart(rng, 5), p1 = RandomPart(rng, 4);
  EXPECT_EQ(sys.AddPart(p0.pattern), 0);
  EXPECT_EQ(sys.AddPart(p1.pattern), 5);
  // a rigid-point node on nodes (5, 6), a barycentric node on (0, 1, 2) and one on (3, 8)
  // (hosts in two parts: a block the base pattern lacks)
  VirtualNodeSet vn;
  vn.AddRigidPoint(5, 6, Vec3(0.1, -0.2, 0.3), 1e3);
  const Index tri[3] = {0, 1, 2};
  const Scalar w3[3] = {0.2, 0.3, 0.5};
  vn.AddBarycentric(3, tri, w3, 2e3);
  const Index seg[2] = {3, 8};
  const Scalar w2[2] = {0.6, 0.4};
  vn.AddBarycentric(2, seg, w2, 5e2);
  sys.SetVirtualNodes(vn);
  ASSERT_EQ(sys.num_nodes(), 12);

  Array<Scalar> a0(backend.get(), p0.values), a1(backend.get(), p1.values);
  auto m0 = backend->CreateMatrix(p0.pattern), m1 = backend->CreateMatrix(p1.pattern);
  m0->SetValues(p0.values);
  m1->SetValues(p1.values);
  const auto b0h = RandomVector(rng, 15), b1h = RandomVector(rng, 12);
  Array<Scalar> b0(backend.get(), b0h), b1(backend.get(), b1h);
  sys.Assemble({m0.get(), m1.get()}, {&b0, &b1});

  // reference: eq. 15 from dense blocks
  Dense ao = Dense::Zero(27, 27);
  ao.topLeftCorner(15, 15) = ToDense(p0.pattern, p0.values);
  ao.bottomRightCorner(12, 12) = ToDense(p1.pattern, p1.values);
  Dense jv = Dense::Zero(9, 27), kv = Dense::Zero(9, 9);
  for (Index k = 0; k < vn.size(); ++k) {
    for (Index e = vn.ptr[k]; e < vn.ptr[k + 1]; ++e)
      for (int a = 0; a < 9; ++a) jv(3 * k + a / 3, 3 * vn.host[e] + a % 3) = vn.jac[9 * std::size_t(e) + a];
    for (int d = 0; d < 3; ++d) kv(3 * k + d, 3 * k + d) = vn.kv[k];
  }
  Dense ref(36, 36);
  ref << ao + jv.transpose() * kv * jv, -jv.transpose() * kv, -kv * jv, kv;
  const Dense got = ToDense(sys.matrix().pattern(), sys.matrix().values().ToHost());
  EXPECT_LT((got - ref).cwiseAbs().maxCoeff(), 1e-12 * ref.cwiseAbs().maxCoeff());
  // Prop. 1: still SPD
  EXPECT_EQ(Eigen::LLT<Dense>(got).info(), Eigen::Success);
  // b = [b_o; 0]
  const auto b = sys.rhs().ToHost();
  for (int i = 0; i < 36; ++i) EXPECT_EQ(b[i], i < 15 ? b0h[i] : i < 27 ? b1h[i - 15] : 0.0);
  // warm start: v_v = Jv v_o
  const auto v0h = RandomVector(rng, 15), v1h = RandomVector(rng, 12);
  Array<Scalar> v0(backend.get(), v0h), v1(backend.get(), v1h), v;
  sys.GatherVelocity({&v0, &v1}, &v);
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> vo(27);
  for (int i = 0; i < 27; ++i) vo[i] = i < 15 ? v0h[i] : v1h[i - 15];
  const Eigen::Matrix<Scalar, Eigen::Dynamic, 1> vv = jv * vo;
  const auto vh = v.ToHost();
  for (int i = 0; i < 27; ++i) EXPECT_EQ(vh[i], vo[i]);
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(vh[27 + i], vv[i], 1e-14);
  // the parts get their segments back
  Array<Scalar> back(backend.get(), Index(12));
  sys.ScatterVelocity(1, v, &back);
  EXPECT_EQ(back.ToHost(), v1h);
}

// the merged pattern and eq. 15 term lists made on the backend from the virtual nodes' hosts
// (SystemMatrix::MakeOnBackend, the Jacobian blocks from their compact form) against the host's
// merge uploaded (set_make_on_backend(false)), over a sequence of virtual node sets: segments on
// neighbouring nodes and rigid points (every host-host term on a base block: made on the
// backend), the same set again, a set with a triangle across non-neighbours and one across two
// parts (off the base pattern: uploaded), no virtual node, then segments again. Reference: the
// uploaded system, bitwise (pattern on host and backend, values, rhs, warm-started v); and on the
// steps made on the backend no more bytes up than the hosts, the compact blocks and the gains
TEST(SystemMatrix, BackendMadeMergeEqualsTheUploadedOne) {
  auto rng = Rng();
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  Backend* be = backend.get();
  const BlockMatrix p0 = RandomPart(rng, 40), p1 = RandomPart(rng, 30);
  // a rigid-like part: 6 bodies of two nodes (v, omega) coupled to each other only
  std::vector<std::pair<Index, Index>> rc;
  for (Index k = 0; k < 12; ++k)
    for (Index j = 2 * (k / 2); j < 2 * (k / 2) + 2; ++j) rc.push_back({k, j});
  BlockMatrix p2(BlockPattern::FromCoordinates(3, 12, 12, rc));
  for (Scalar& x : p2.values) x = 0;
  for (Index k = 0; k < 12; ++k)
    for (Index q = p2.pattern.row_ptr[k]; q < p2.pattern.row_ptr[k + 1]; ++q)
      if (p2.pattern.col_idx[q] == k)
        for (int d = 0; d < 3; ++d) p2.Block(q)[4 * d] = 2 + k;
  const BlockMatrix* all[3] = {&p0, &p1, &p2};
  SystemMatrix made(be), uploaded(be);
  uploaded.set_make_on_backend(false);
  for (SystemMatrix* sys : {&made, &uploaded})
    for (const BlockMatrix* p : all) sys->AddPart(p->pattern);
  std::vector<std::unique_ptr<DeviceBlockMatrix>> parts;
  std::vector<Array<Scalar>> rhs;
  for (const BlockMatrix* p : all) {
    parts.push_back(be->CreateMatrix(p->pattern));
    parts.back()->SetValues(p->values);
    rhs.emplace_back(be, RandomVector(rng, p->pattern.rows()));
  }
  std::uniform_int_distribution<Index> node0(0, 38), node1(40, 68), body(0, 5);
  std::uniform_real_distribution<Scalar> unit(0, 1);
  const auto segments = [&](int count) {
    VirtualNodeSet vn;
    for (int c = 0; c < count; ++c) {
      const Index i = c % 2 ? node0(rng) : node1(rng), h[2] = {i, i + 1};
      const Scalar s = unit(rng), w[2] = {1 - s, s};
      vn.AddBarycentric(2, h, w, 1e3 + c);
    }
    for (int c = 0; c < 3; ++c) {
      const Index b = 70 + 2 * body(rng);
      vn.AddRigidPoint(b, b + 1, Vec3(unit(rng), -unit(rng), unit(rng) - 0.5), 2e3);
    }
    return vn;
  };
  std::vector<VirtualNodeSet> sets = {segments(6), segments(9)};
  sets.push_back(sets.back());
  VirtualNodeSet off = segments(4);
  const Index tri[3] = {2, 3, 5}, across[2] = {39, 40};
  const Scalar w3[3] = {0.2, 0.3, 0.5}, w2[2] = {0.5, 0.5};
  off.AddBarycentric(3, tri, w3, 7e2);
  off.AddBarycentric(2, across, w2, 7e2);
  sets.push_back(off);
  sets.push_back(VirtualNodeSet());
  sets.push_back(segments(12));
  sets.push_back(segments(5));
  const std::vector<bool> appended = {true, true, true, false, true, true, true};
  for (std::size_t step = 0; step < sets.size(); ++step) {
    SCOPED_TRACE("set " + std::to_string(step));
    const VirtualNodeSet& vn = sets[step];
    const BackendCounters c0 = be->counters();
    made.SetVirtualNodes(vn);
    const std::int64_t made_up = (be->counters() - c0).upload_bytes;
    uploaded.SetVirtualNodes(vn);
    std::vector<const DeviceBlockMatrix*> a;
    std::vector<const Array<Scalar>*> b;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      a.push_back(parts[p].get());
      b.push_back(&rhs[p]);
    }
    made.Assemble(a, b);
    uploaded.Assemble(a, b);
    if (step == 0) {
      // capacity after the first set, as the World reserves it (World::ReserveForContacts)
      ContactBounds bounds;
      bounds.virtual_nodes = 20;
      bounds.virtual_entries = 60;
      bounds.terms = 200;
      Array<Scalar> v_made, v_uploaded;
      made.Reserve(bounds, &v_made);
      uploaded.Reserve(bounds, &v_uploaded);
    }
    const BlockPattern& pm = made.matrix().pattern();
    const BlockPattern& pu = uploaded.matrix().pattern();
    EXPECT_EQ(pm.row_ptr, pu.row_ptr);
    EXPECT_EQ(pm.col_idx, pu.col_idx);
    EXPECT_EQ(made.matrix().row_ptr().ToHost(), pm.row_ptr);
    EXPECT_EQ(made.matrix().col_idx().ToHost(), pm.col_idx);
    EXPECT_EQ(made.matrix().values().ToHost(), uploaded.matrix().values().ToHost());
    EXPECT_EQ(made.rhs().ToHost(), uploaded.rhs().ToHost());
    std::vector<const Array<Scalar>*> pv;
    std::vector<Array<Scalar>> vel;
    for (const BlockMatrix* p : all) vel.emplace_back(be, RandomVector(rng, p->pattern.rows()));
    for (const Array<Scalar>& x : vel) pv.push_back(&x);
    Array<Scalar> vm, vu;
    made.GatherVelocity(pv, &vm);
    uploaded.GatherVelocity(pv, &vu);
    EXPECT_EQ(vm.ToHost(), vu.ToHost());
    // the hosts (ptr, host: 4 bytes each), a block's kind byte and w (8 bytes) or r (24: a block
    // -[r]x, whose off-diagonal entries are not all 0), 8 bytes a gain
    std::int64_t params = 0;
    for (Index e = 0; e < vn.num_entries(); ++e) {
      const Scalar* j = vn.jac.data() + 9 * e;
      params += j[1] != 0 || j[2] != 0 || j[5] != 0 ? 24 : 8;
    }
    const std::int64_t bound = 4 * std::int64_t(vn.ptr.size() + vn.host.size()) + std::int64_t(vn.host.size()) + params + 8 * vn.size();
    std::printf("set %d: %d virtual nodes, %lld bytes up (bound %lld)\n", int(step), int(vn.size()), static_cast<long long>(made_up),
                static_cast<long long>(bound));
    if (appended[step] && step > 0) {
      EXPECT_LE(made_up, bound);
    }
  }
}

TEST(SystemMatrix, RejectsBadInput) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SystemMatrix sys(backend.get());
  BlockPattern p = BlockPattern::FromCoordinates(3, 2, 2, {{0, 0}, {1, 1}});
  sys.AddPart(p);
  VirtualNodeSet vn;
  vn.AddRigidPoint(0, 2, Vec3(), 1e3);  // node 2 does not exist
  EXPECT_THROW(sys.SetVirtualNodes(vn), Error);
  VirtualNodeSet bad_gain;
  EXPECT_THROW(bad_gain.AddRigidPoint(0, 1, Vec3(), -1), Error);
}

}  // namespace
}  // namespace condsim
