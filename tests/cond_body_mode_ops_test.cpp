// The body-mode ops on their own (models/cond/body_mode_ops.h, and the coarse solve), against host
// references; the set-up ops that make the record on the backend: cond_body_mode_setup_ops_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "body_mode_ops_fixture.h"
#include "cpu/parallel.h"
#include "models/cond/cond_body_modes.h"
#include "models/cond/cond_context.h"
#include "models/cond/cond_kernels.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::OpsOnThreads;

// the chunk length of a patch of n entries: the power of two at or above sqrt(n), 32 .. 1024
// (exact values of the rule)
TEST(CondBodyModes, ChunkLengthIsThePowerOfTwoAboveTheRootOfThePatchSize) {
  const std::vector<std::pair<Index, Index>> cases = {{0, 32},     {1, 32},      {1024, 32},   {1025, 64},   {4096, 64},
                                                      {4097, 128}, {100000, 512}, {1048576, 1024}, {4000000, 1024}};
  for (const auto& [n, length] : cases) EXPECT_EQ(BodyModeChunkLength(n), length) << "n = " << n;
}

// g = Z^T r per patch from chunks summed in parallel (BodyModeResidualChunkOp,
// BodyModeResidualOp): against the long-double sum over each patch's nodes within 1e-11 of the
// largest term (about 2000 terms), the same on 1 and 2 threads, a patch of one chunk bitwise its
// nodes' sum in order, and a stopped environment's patch 0; the chunks cut by CutBodyModeChunks,
// as CondBodyModes::Prepare cuts them
TEST(CondBodyModes, ChunkedPatchSumsMatchTheSumOverTheNodes) {
  auto rng = test::Rng();
  const std::vector<Index> sizes = {1100, 32, 5, 2048};
  BodyModeHost h;
  h.ptr.assign(1, 0);
  for (Index n : sizes) h.ptr.push_back(h.ptr.back() + n);
  CutBodyModeChunks(h.ptr, &h.chunk_ptr, &h.chunk_begin);
  const Index listed = h.ptr.back(), nodes = listed + 10, patches = Index(sizes.size());
  // the cut: 18 chunks of 64 (the last of 12), 1 of 32, 1 of 5, 32 of 64, each from its patch's
  // start
  EXPECT_EQ(h.chunk_ptr, (std::vector<Index>{0, 18, 19, 20, 52}));
  ASSERT_EQ(h.chunk_begin.size(), 53u);
  EXPECT_EQ(h.chunk_begin[1], 64);
  EXPECT_EQ(h.chunk_begin[17], 1088);
  EXPECT_EQ(h.chunk_begin[18], 1100);
  EXPECT_EQ(h.chunk_begin[19], 1132);
  EXPECT_EQ(h.chunk_begin[20], 1137);
  EXPECT_EQ(h.chunk_begin[21], 1201);
  EXPECT_EQ(h.chunk_begin[52], 3185);
  std::vector<Index> perm(static_cast<std::size_t>(nodes));
  for (Index i = 0; i < nodes; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  h.node.assign(perm.begin(), perm.begin() + listed);
  h.arm = test::RandomVector(rng, 3 * listed);
  const std::vector<Scalar> r = test::RandomVector(rng, 3 * nodes, -1e3, 1e3);
  // the last patch's nodes in a stopped environment
  std::vector<Index> node_env(static_cast<std::size_t>(nodes), 0);
  for (Index q = h.ptr[patches - 1]; q < listed; ++q) node_env[h.node[q]] = 1;
  const std::vector<unsigned char> env_active = {1, 0};
  std::vector<std::vector<Scalar>> results;
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, h);
    Backend* b = ops.backend.get();
    CondKernels* kernels = ops.kernels.get();
    const BodyModeArrays& arrays = ops.arrays;
    Array<Scalar> r_d(b, r), partial(b, std::vector<Scalar>(6 * h.chunk_begin.size(), 0)), g(b, std::vector<Scalar>(6 * patches, 7));
    Array<Index> env_d(b, node_env);
    Array<unsigned char> active_d(b, env_active);
    kernels->BodyModeResidualChunk(Index(h.chunk_begin.size()) - 1,
                                   BodyModeResidualChunkOp{arrays.view(), r_d.data(), env_d.data(), active_d.data(), nullptr, partial.data()});
    kernels->BodyModeResidual(patches, BodyModeResidualOp{arrays.view(), partial.data(), env_d.data(), active_d.data(), nullptr, g.data()});
    results.push_back(g.ToHost());
  }
  EXPECT_EQ(results[0], results[1]);
  const std::vector<Scalar>& g = results[0];
  for (Index p = 0; p < patches; ++p) {
    long double ref[6] = {0, 0, 0, 0, 0, 0}, scale = 0;
    Vec3 lin, rot;  // the sum in node order, as one thread
    for (Index q = h.ptr[p]; q < h.ptr[p + 1]; ++q) {
      const Vec3 arm(h.arm[3 * q], h.arm[3 * q + 1], h.arm[3 * q + 2]);
      const Index i = h.node[q];
      const Vec3 x(r[3 * i], r[3 * i + 1], r[3 * i + 2]);
      ModeTranspose(arm, x, &lin, &rot);
      const Vec3 c = Cross(arm, x);
      for (int d = 0; d < 3; ++d) {
        ref[d] += x[d];
        ref[3 + d] += c[d];
        scale = std::max(scale, std::fabs(static_cast<long double>(x[d])) * 1000);
      }
    }
    for (int d = 0; d < 6; ++d) {
      if (p == patches - 1) {
        EXPECT_EQ(g[6 * p + d], 0) << "stopped environment, patch " << p;
      } else {
        EXPECT_LE(std::fabs(static_cast<long double>(g[6 * p + d]) - ref[d]), 1e-14 * scale) << "patch " << p << " component " << d;
      }
    }
    // one chunk: the nodes' sum in order, bitwise
    if (h.ptr[p + 1] - h.ptr[p] <= BodyModeChunkLength(h.ptr[p + 1] - h.ptr[p]) && p != patches - 1)
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(g[6 * p + d], lin[d]);
        EXPECT_EQ(g[6 * p + 3 + d], rot[d]);
      }
  }
}

// a loaded free body's patch (BodyModeResidualChunkOp, BodyModeResidualOp with `loaded`): g = 0
// and its chunks are not summed (their parts keep a sentinel); the other patches' g bitwise as
// without the flags
TEST(CondBodyModes, LoadedPatchesAreNotSummed) {
  auto rng = test::Rng();
  const std::vector<Index> sizes = {300, 40, 1500};
  BodyModeHost h;
  h.ptr.assign(1, 0);
  for (Index n : sizes) h.ptr.push_back(h.ptr.back() + n);
  CutBodyModeChunks(h.ptr, &h.chunk_ptr, &h.chunk_begin);
  const Index listed = h.ptr.back(), patches = Index(sizes.size()), chunks = Index(h.chunk_begin.size()) - 1;
  for (Index q = 0; q < listed; ++q) h.node.push_back(q);
  h.node_patch.assign(std::size_t(listed), 0);
  for (Index p = 0; p < patches; ++p)
    for (Index q = h.ptr[p]; q < h.ptr[p + 1]; ++q) h.node_patch[std::size_t(q)] = p;
  h.arm = test::RandomVector(rng, 3 * listed);
  OpsOnThreads ops(2, h);
  Backend* b = ops.backend.get();
  Array<Scalar> r(b, test::RandomVector(rng, 3 * listed));
  Array<Index> env(b, std::vector<Index>(std::size_t(listed), 0));
  Array<unsigned char> active(b, std::vector<unsigned char>{1});
  Array<unsigned char> loaded(b, std::vector<unsigned char>{0, 1, 0});
  std::vector<std::vector<Scalar>> g;
  Array<Scalar> partial(b, std::vector<Scalar>(6 * std::size_t(chunks), 7));
  const unsigned char* no_flags = nullptr;
  for (const unsigned char* flags : {no_flags, static_cast<const unsigned char*>(loaded.data())}) {
    Array<Scalar> out(b, std::vector<Scalar>(6 * std::size_t(patches), 5));
    if (flags != nullptr) partial.Assign(b, std::vector<Scalar>(6 * std::size_t(chunks), 7));
    ops.kernels->BodyModeResidualChunk(chunks, BodyModeResidualChunkOp{ops.arrays.view(), r.data(), env.data(), active.data(), flags, partial.data()});
    ops.kernels->BodyModeResidual(patches, BodyModeResidualOp{ops.arrays.view(), partial.data(), env.data(), active.data(), flags, out.data()});
    g.push_back(out.ToHost());
  }
  const std::vector<Scalar> parts = partial.ToHost();
  for (Index p = 0; p < patches; ++p)
    for (int d = 0; d < 6; ++d) EXPECT_EQ(g[1][6 * p + d], p == 1 ? 0 : g[0][6 * p + d]) << "patch " << p;
  for (Index c = h.chunk_ptr[1]; c < h.chunk_ptr[2]; ++c)
    for (int d = 0; d < 6; ++d) EXPECT_EQ(parts[6 * std::size_t(c) + d], 7) << "chunk " << c << " of the loaded patch was summed";
  EXPECT_NE(g[0][6], 0);
}

// the correction's pass over the nodes with patches whose dv is 0 (BodyModeApplyStepOp, with the W
// step and without: the corrected copy of v): v + Z dv and r + T dv equal a host loop over every
// row of T (bitwise: the same order, a still patch adds exact zeros), while the T blocks of the
// still patches, NaN here, are never read and the rows no moving patch reaches are not written
TEST(CondBodyModes, StillPatchesAreSkippedByTheCorrection) {
  auto rng = test::Rng();
  const Index patches = 4, per = 50, listed = patches * per, halo = 20, nodes = listed + halo + 5;
  BodyModeHost h;
  h.ptr.assign(1, 0);
  for (Index p = 0; p < patches; ++p) h.ptr.push_back(h.ptr.back() + per);
  h.node_patch.assign(std::size_t(nodes), -1);
  h.node_slot.assign(std::size_t(nodes), -1);
  for (Index q = 0; q < listed; ++q) {
    h.node.push_back(q);
    h.node_patch[std::size_t(q)] = q / per;
    h.node_slot[std::size_t(q)] = q;
  }
  for (Index k = 0; k < halo; ++k) h.halo.push_back(listed + k);
  h.arm = test::RandomVector(rng, 3 * listed);
  // rows of T: a listed node reaches its own patch and the next; a halo node patches 1 and 2
  // (k even) or patch 3 alone (k odd: a row reached by still patches only)
  h.t_ptr.assign(1, 0);
  for (Index q = 0; q < listed + halo; ++q) {
    if (q < listed) {
      h.t_patch.push_back(q / per);
      h.t_patch.push_back((q / per + 1) % patches);
    } else if ((q - listed) % 2 == 0) {
      h.t_patch.push_back(1);
      h.t_patch.push_back(2);
    } else {
      h.t_patch.push_back(3);
    }
    h.t_ptr.push_back(Index(h.t_patch.size()));
  }
  // (row q's entries end where row q + 1's begin: the rows in their nodes' order, as MakeRowsOfT
  // stores them)
  h.t_end.assign(h.t_ptr.begin() + 1, h.t_ptr.end());
  h.t_ptr.pop_back();
  const Index entries = Index(h.t_patch.size());
  std::vector<Scalar> dv = test::RandomVector(rng, 6 * patches);
  for (Index p : {0, 3})
    for (int d = 0; d < 6; ++d) dv[6 * std::size_t(p) + d] = 0;
  std::vector<Scalar> t = test::RandomVector(rng, 18 * entries);
  for (Index e = 0; e < entries; ++e)
    if (dv[6 * std::size_t(h.t_patch[std::size_t(e)])] == 0 && dv[6 * std::size_t(h.t_patch[std::size_t(e)]) + 3] == 0)
      for (int k = 0; k < 18; ++k) t[18 * std::size_t(e) + k] = std::numeric_limits<Scalar>::quiet_NaN();
  const std::vector<Scalar> v = test::RandomVector(rng, 3 * nodes), r = test::RandomVector(rng, 3 * nodes);
  const std::vector<Scalar> w = test::RandomVector(rng, 3 * nodes, 0.1, 1);
  // the host loop: every entry, still ones as exact zeros
  std::vector<Scalar> v_ref = v, r_ref = r;
  for (Index q = 0; q < listed + halo; ++q) {
    const Index i = q < listed ? h.node[std::size_t(q)] : h.halo[std::size_t(q - listed)];
    if (q < listed) {
      const Index p = h.node_patch[std::size_t(i)];
      const Vec3 lin(dv[6 * p], dv[6 * p + 1], dv[6 * p + 2]), rot(dv[6 * p + 3], dv[6 * p + 4], dv[6 * p + 5]);
      const Vec3 dz = lin + Cross(rot, Vec3(h.arm[3 * q], h.arm[3 * q + 1], h.arm[3 * q + 2]));
      for (int d = 0; d < 3; ++d) v_ref[3 * i + d] += dz[d];
    }
    Vec3 dr;
    for (Index e = h.t_ptr[std::size_t(q)]; e < h.t_end[std::size_t(q)]; ++e) {
      const Index p = h.t_patch[std::size_t(e)];
      if (dv[6 * p] == 0 && dv[6 * p + 3] == 0) continue;
      dr += LoadMat3(t.data(), 2 * e) * LoadVec3(dv.data(), 2 * p) + LoadMat3(t.data(), 2 * e + 1) * LoadVec3(dv.data(), 2 * p + 1);
    }
    for (int d = 0; d < 3; ++d) r_ref[3 * i + d] += dr[d];
  }
  OpsOnThreads ops(2, h);
  Backend* b = ops.backend.get();
  Array<Scalar> t_d(b, t), dv_d(b, dv), v_d(b, v), r_d(b, r), w_d(b, w), u_d(b, std::vector<Scalar>(3 * std::size_t(nodes), 0));
  Array<Index> env(b, std::vector<Index>(std::size_t(nodes), 0)), row(b, std::vector<Index>(std::size_t(nodes), -1));
  Array<unsigned char> active(b, std::vector<unsigned char>{1});
  const BodyModeCorrection apply{ops.arrays.view(), listed, t_d.data(), dv_d.data(), env.data(), active.data(), v_d.data(), r_d.data()};
  // the fused pass first (it reads v and r, writes u and r), then the separate op on v and a copy of r
  Array<Scalar> r_step(b, r);
  ops.kernels->BodyModeRow(nodes, BodyModeRowOp{ops.arrays.view(), listed, false, row.data()});
  ops.kernels->BodyModeRow(halo, BodyModeRowOp{ops.arrays.view(), listed, true, row.data()});
  BodyModeCorrection step_apply = apply;
  step_apply.r = r_step.data();
  // per node its first entry of T and its arm (the rows are in node order: row q is node q's)
  std::vector<Index> offset(std::size_t(nodes) + 1, entries);
  std::vector<Scalar> node_arm(3 * std::size_t(nodes), std::numeric_limits<Scalar>::quiet_NaN());
  for (Index q = 0; q < listed + halo; ++q) offset[std::size_t(q)] = h.t_ptr[std::size_t(q)];
  for (Index q = 0; q < listed; ++q)
    for (int d = 0; d < 3; ++d) node_arm[3 * std::size_t(h.node[std::size_t(q)]) + std::size_t(d)] = h.arm[3 * std::size_t(q) + std::size_t(d)];
  Array<Index> offset_d(b, offset);
  Array<Scalar> arm_d(b, node_arm), v_copy(b, 3 * nodes);
  ops.kernels->BodyModeApplyStep(nodes, BodyModeApplyStepOp{step_apply, row.data(), offset_d.data(), arm_d.data(), w_d.data(), r_step.data(),
                                                            u_d.data()});
  ops.kernels->BodyModeApplyStep(nodes, BodyModeApplyStepOp{apply, row.data(), offset_d.data(), arm_d.data(), nullptr, r_d.data(), v_copy.data()});
  const std::vector<Scalar> v_out = v_copy.ToHost(), r_out = r_d.ToHost(), r_step_out = r_step.ToHost(), u = u_d.ToHost();
  for (Index k = 0; k < 3 * nodes; ++k) {
    EXPECT_EQ(v_out[k], v_ref[k]) << "v, dof " << k;
    EXPECT_EQ(r_out[k], r_ref[k]) << "r, dof " << k;
    EXPECT_EQ(r_step_out[k], r_ref[k]) << "r of the fused pass, dof " << k;
    EXPECT_EQ(u[k], v_ref[k] - w[k] * r_ref[k]) << "u, dof " << k;
  }
  // the still patches' rows: v untouched; the odd halo rows (patch 3 only): r untouched
  EXPECT_EQ(v_out[0], v[0]);
  EXPECT_EQ(r_out[3 * (listed + 1)], r[3 * (listed + 1)]);
}

// the free-body gate and the truncated modes' contact force and step limit over each patch's
// contacts cut into chunks (BodyModeGateChunkOp + BodyModeGateOp,
// BodyModeContactForceChunkOp + BodyModeContactForceOp, BodyModeLimitChunkOp + BodyModeLimitOp)
// against host loops over the contacts: the gate flags, the blocked contacts and the step limits
// exactly (an "any" and a minimum do not depend on the order), Z^T Jc^T lambda against the
// long-double sum within 1e-11 of its largest term (about 1100 terms); the same on 1 and 2 threads
TEST(CondBodyModes, ChunkedGateForceAndLimitMatchTheLoopOverContacts) {
  auto rng = test::Rng();
  // gate contacts per patch: 18 chunks of 64 (the last of 12), none, one short, exactly one of 32
  const std::vector<Index> counts = {1100, 0, 5, 32};
  const Index patches = Index(counts.size()), per_patch = 40, nodes = patches * per_patch;
  BodyModeHost h;
  h.ptr.assign(1, 0);
  h.node_slot.assign(std::size_t(nodes), -1);
  for (Index p = 0; p < patches; ++p) {
    for (Index k = 0; k < per_patch; ++k) {
      h.node_slot[std::size_t(p * per_patch + k)] = Index(h.node.size());
      h.node.push_back(p * per_patch + k);
    }
    h.ptr.push_back(Index(h.node.size()));
  }
  h.arm = test::RandomVector(rng, 3 * nodes);
  // S-contacts on random nodes of each patch, listed in contact order. The gate's impulses are 0
  // except on one contact of patch 0's last chunk and every contact of patch 3; the force's are
  // random
  ContactSet c;
  h.gate_ptr.assign(1, 0);
  std::uniform_int_distribution<Index> pick(0, per_patch - 1);
  std::vector<Scalar> gate_lambda, lambda;
  for (Index p = 0; p < patches; ++p) {
    for (Index k = 0; k < counts[p]; ++k) {
      const std::vector<Scalar> n = test::RandomVector(rng, 3), slack = test::RandomVector(rng, 1, -0.5, 1);
      h.gate_contact.push_back(c.size());
      c.Add(p * per_patch + pick(rng), -1, ContactFrame(Normalized(Vec3(n[0], n[1], n[2] + 2))), slack[0], 0.5, 0.5);
      const std::vector<Scalar> l = test::RandomVector(rng, 3);
      const bool carries = (p == 0 && k == counts[p] - 3) || p == 3;
      for (int d = 0; d < 3; ++d) {
        gate_lambda.push_back(carries ? l[d] : Scalar(0));
        lambda.push_back(l[d]);
      }
    }
    h.gate_ptr.push_back(Index(h.gate_contact.size()));
  }
  CutBodyModeChunks(h.gate_ptr, &h.gate_chunk_ptr, &h.gate_chunk_begin, &h.gate_chunk_patch);
  EXPECT_EQ(h.gate_chunk_ptr, (std::vector<Index>{0, 18, 18, 19, 20}));
  std::vector<Index> chunk_patch(18, 0);
  chunk_patch.push_back(2);
  chunk_patch.push_back(3);
  EXPECT_EQ(h.gate_chunk_patch, chunk_patch);
  const Index chunks = h.gate_chunk_ptr.back();
  const std::vector<Scalar> v = test::RandomVector(rng, 3 * nodes), dv = test::RandomVector(rng, 6 * patches);
  const std::vector<Scalar> g0 = test::RandomVector(rng, 6 * patches);
  struct Out {
    std::vector<Scalar> g_gate, g_force, alpha;
    std::vector<unsigned char> loaded, blocked;
  };
  std::vector<Out> outs;
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, h);
    Backend* b = ops.backend.get();
    CondKernels* kernels = ops.kernels.get();
    const BodyModeArrays& arrays = ops.arrays;
    ContactArrays contacts;
    contacts.Upload(b, c);
    Array<Scalar> gate_lambda_d(b, gate_lambda), lambda_d(b, lambda), v_d(b, v), dv_d(b, dv), g(b, g0), partial(b, 6 * chunks), chunk_alpha(b, chunks), alpha(b, patches);
    Array<unsigned char> hit(b, chunks), loaded(b, std::vector<unsigned char>(std::size_t(patches), 0));
    Array<unsigned char> blocked(b, std::vector<unsigned char>(std::size_t(c.size()), 0));
    Array<Index> env_d(b, std::vector<Index>(std::size_t(nodes), 0));
    Array<unsigned char> active_d(b, std::vector<unsigned char>{1});
    Out out;
    kernels->BodyModeGateChunk(chunks, BodyModeGateChunkOp{arrays.view(), gate_lambda_d.data(), loaded.data(), hit.data()});
    kernels->BodyModeGate(patches, BodyModeGateOp{arrays.view(), hit.data(), loaded.data(), g.data()});
    out.g_gate = g.ToHost();
    out.loaded = loaded.ToHost();
    g.CopyFromHost(g0);
    kernels->BodyModeContactForceChunk(chunks, BodyModeContactForceChunkOp{arrays.view(), contacts.view(), lambda_d.data(), partial.data()});
    kernels->BodyModeContactForce(patches, BodyModeContactForceOp{arrays.view(), partial.data(), env_d.data(), active_d.data(), g.data()});
    out.g_force = g.ToHost();
    kernels->BodyModeLimitChunk(chunks, BodyModeLimitChunkOp{arrays.view(), contacts.view(), v_d.data(), dv_d.data(), chunk_alpha.data(), blocked.data()});
    kernels->BodyModeLimit(patches, BodyModeLimitOp{arrays.view(), chunk_alpha.data(), alpha.data()});
    out.alpha = alpha.ToHost();
    out.blocked = blocked.ToHost();
    outs.push_back(out);
  }
  EXPECT_EQ(outs[0].g_force, outs[1].g_force);
  EXPECT_EQ(outs[0].alpha, outs[1].alpha);
  EXPECT_EQ(outs[0].blocked, outs[1].blocked);
  const Out& out = outs[0];
  // the gate: patches 0 and 3 carry an impulse (g zeroed, loaded), 1 and 2 keep g
  EXPECT_EQ(out.loaded, (std::vector<unsigned char>{1, 0, 0, 1}));
  for (Index p = 0; p < patches; ++p)
    for (int d = 0; d < 6; ++d) EXPECT_EQ(out.g_gate[6 * p + d], out.loaded[p] ? Scalar(0) : g0[6 * p + d]) << "patch " << p;
  for (Index p = 0; p < patches; ++p) {
    // host loops over the patch's contacts in order
    long double force[6] = {0, 0, 0, 0, 0, 0}, scale = 0;
    Scalar a = 1;
    const Vec3 lin(dv[6 * p], dv[6 * p + 1], dv[6 * p + 2]), ang(dv[6 * p + 3], dv[6 * p + 4], dv[6 * p + 5]);
    for (Index k = h.gate_ptr[p]; k < h.gate_ptr[p + 1]; ++k) {
      const Index m = h.gate_contact[k], i = c.node_i[m], q = h.node_slot[i];
      const Vec3 arm(h.arm[3 * q], h.arm[3 * q + 1], h.arm[3 * q + 2]);
      const Vec3 f = Transpose(c.Frame(m)) * Vec3(lambda[3 * m], lambda[3 * m + 1], lambda[3 * m + 2]);
      const Vec3 t = Cross(arm, f);
      for (int d = 0; d < 3; ++d) {
        force[d] += f[d];
        force[3 + d] += t[d];
        scale = std::max(scale, std::fabs(static_cast<long double>(f[d])));
      }
      const Vec3 n = c.Frame(m).Row(0);
      const Scalar dn = Dot(n, lin + Cross(ang, arm));
      const Scalar s = Dot(n, Vec3(v[3 * i], v[3 * i + 1], v[3 * i + 2])) + c.phi[m];
      const Scalar ac = dn >= 0 ? Scalar(1) : (s > 0 ? s / -dn : Scalar(0));
      EXPECT_EQ(out.blocked[m], ac < 1 ? 1 : 0) << "contact " << m;
      a = std::min(a, ac);
    }
    EXPECT_EQ(out.alpha[p], a) << "patch " << p;
    for (int d = 0; d < 6; ++d)
      EXPECT_LE(std::fabs(static_cast<long double>(out.g_force[6 * p + d]) - (g0[6 * p + d] - force[d])), 1e-11 * (scale + 1))
          << "patch " << p << " component " << d;
  }
}

// BodyModeSolveOp as a warp runs it: its phases lane by lane (cpu::RunLanes), the lanes of each
// phase in a given order
struct SolveWarpOp {
  BodyModeSolveOp op;
  Index lanes[BodyModeSolveOp::kLanes];
  CONDSIM_HD_INLINE void operator()(Index k) const { cpu::RunLanes(op, k, lanes); }
};

// dv = -A_c^-1 g per body (BodyModeSolveOp, a warp per coarse row: lane sums, then a tree) for
// bodies of 3, 40 and 2 patches (rows of 18, 240 and 12 terms; the last body's environment
// stopped): against the long-double product within 1e-14 of the sum of the terms' magnitudes, the
// stopped body's rows untouched, and the lane path (in order, reversed, scrambled) bitwise the item
// loop (the CPU's path)
TEST(CondBodyModes, CoarseSolveOverLanesMatchesTheDenseProduct) {
  auto rng = test::Rng();
  const std::vector<Index> patches_per_body = {3, 40, 2};
  BodyModeHost h;
  h.ptr.assign(1, 0);
  h.body_ptr.assign(1, 0);
  std::vector<Index> node_env;
  Index coarse = 0;
  for (std::size_t b = 0; b < patches_per_body.size(); ++b) {
    h.c_off.push_back(coarse);
    const Index m = patches_per_body[b];
    coarse += 36 * m * m;
    for (Index p = 0; p < m; ++p) {
      // two listed nodes per patch
      for (int q = 0; q < 2; ++q) {
        h.node.push_back(Index(node_env.size()));
        node_env.push_back(b == 2 ? 1 : 0);
      }
      h.ptr.push_back(Index(h.node.size()));
      h.patch_body.push_back(Index(b));
    }
    h.body_ptr.push_back(h.body_ptr.back() + m);
  }
  const Index patches = h.body_ptr.back(), rows = 6 * patches;
  const std::vector<Scalar> ac = test::RandomVector(rng, coarse, -1e3, 1e3), g = test::RandomVector(rng, rows);
  const std::vector<unsigned char> env_active = {1, 0};
  OpsOnThreads ops(1, h);
  Backend* be = ops.backend.get();
  Array<Scalar> ac_d(be, ac), g_d(be, g), lanes(be, std::size_t(BodyModeSolveOp::kLanes) * rows), dv_item(be, std::vector<Scalar>(rows, 7)),
      dv_lanes(be, rows);
  Array<Index> env_d(be, node_env);
  Array<unsigned char> active_d(be, env_active);
  const auto op = [&](Array<Scalar>* dv) {
    return BodyModeSolveOp{ops.arrays.view(), ac_d.data(), g_d.data(), env_d.data(), active_d.data(), lanes.data(), dv->data()};
  };
  ops.kernels->BodyModeSolve(rows, op(&dv_item));
  const std::vector<Scalar> item = dv_item.ToHost();
  for (Index k = 0; k < rows; ++k) {
    const Index p = k / 6, b = h.patch_body[p], first = h.body_ptr[b], ld = 6 * (h.body_ptr[b + 1] - first);
    if (b == 2) {
      EXPECT_EQ(item[k], 7) << "stopped environment, row " << k;
      continue;
    }
    long double ref = 0, scale = 0;
    for (Index c = 0; c < ld; ++c) {
      const long double term = static_cast<long double>(ac[h.c_off[b] + (6 * (p - first) + k % 6) * ld + c]) * g[6 * first + c];
      ref -= term;
      scale += std::fabs(term);
    }
    EXPECT_LE(std::fabs(static_cast<long double>(item[k]) - ref), 1e-14 * scale) << "row " << k;
  }
  for (int order = 0; order < 3; ++order) {
    SolveWarpOp warp{op(&dv_lanes), {}};
    // in order, reversed, scrambled (13 t mod 32)
    for (int t = 0; t < BodyModeSolveOp::kLanes; ++t)
      warp.lanes[t] = order == 0 ? t : order == 1 ? BodyModeSolveOp::kLanes - 1 - t : (13 * t) % BodyModeSolveOp::kLanes;
    be->Fill(7, &dv_lanes);
    cpu::Launch(1, rows, warp);
    EXPECT_EQ(dv_lanes.ToHost(), item) << "lane order " << order;
  }
}

// truncated modes' refresh on the backend (CondBodyModes::Refresh, docs/solver.md "Truncated
// modes"): the per-contact idle test (BodyModeIdleOp) against the host's rule evaluated here
// (lambda = 0 in all three rows, not blocked, n . v_i + phi > slack_min), bitwise the same
// decisions on 1 and 2 threads, with and without the blocked flags; the refresh flags
// (BodyModeRefreshFlagOp) set per environment by any of its patches' alpha below the threshold,
// kept when none is, and cleared; BodyModeUnblockOp zeroes the flags of the environments asked
// (every flag without a mask)
TEST(CondBodyModes, RefreshTestsOnTheBackendMatchTheHostRule) {
  auto rng = test::Rng();
  const Index nodes = 300, count = 2000;
  const double slack_min = 0.05;
  std::uniform_int_distribution<Index> pick(0, nodes - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  ContactSet c;
  std::vector<Scalar> lambda;
  std::vector<unsigned char> blocked;
  for (Index m = 0; m < count; ++m) {
    const std::vector<Scalar> n = test::RandomVector(rng, 3), phi = test::RandomVector(rng, 1, -0.5, 0.5);
    c.Add(pick(rng), -1, ContactFrame(Normalized(Vec3(n[0], n[1], n[2] + 2))), phi[0], 0.5, 0.5);
    // a quarter with an impulse in one row, the rest idle
    const int row = coin(rng) == 0 ? int(m % 3) : 3;
    for (int d = 0; d < 3; ++d) lambda.push_back(row == d ? Scalar(0.1) : Scalar(0));
    blocked.push_back(coin(rng) == 0 ? 1 : 0);
  }
  const std::vector<Scalar> v = test::RandomVector(rng, 3 * nodes, -0.5, 0.5);
  for (bool use_blocked : {false, true}) {
    std::vector<unsigned char> expect(static_cast<std::size_t>(count), 0);
    Index idle = 0;
    for (Index m = 0; m < count; ++m) {
      bool on = lambda[3 * m] == 0 && lambda[3 * m + 1] == 0 && lambda[3 * m + 2] == 0 && !(use_blocked && blocked[m]);
      const Index i = c.node_i[m];
      if (on) on = Dot(c.Frame(m).Row(0), Vec3(v[3 * i], v[3 * i + 1], v[3 * i + 2])) + c.phi[m] > slack_min;
      expect[m] = on ? 1 : 0;
      idle += on;
    }
    // both outcomes occur
    EXPECT_GT(idle, count / 10);
    EXPECT_LT(idle, count - count / 10);
    for (int threads : {1, 2}) {
      OpsOnThreads ops(threads, BodyModeHost());
      Backend* b = ops.backend.get();
      ContactArrays contacts;
      contacts.Upload(b, c);
      Array<Scalar> lambda_d(b, lambda), v_d(b, v);
      Array<unsigned char> blocked_d(b, blocked), idle_d(b, count);
      ops.kernels->BodyModeIdle(count, BodyModeIdleOp{contacts.view(), lambda_d.data(), use_blocked ? blocked_d.data() : nullptr, v_d.data(),
                                                      slack_min, idle_d.data()});
      EXPECT_EQ(idle_d.ToHost(), expect) << threads << " threads, blocked " << use_blocked;
      // contacts of environments 0 and 1 alternating: unblock environment 1's only, then all
      std::vector<Index> contact_env(static_cast<std::size_t>(count));
      for (Index m = 0; m < count; ++m) contact_env[std::size_t(m)] = m % 2;
      Array<Index> env_d(b, contact_env);
      Array<unsigned char> changed_d(b, std::vector<unsigned char>{0, 1});
      ops.kernels->BodyModeUnblock(count, BodyModeUnblockOp{env_d.data(), changed_d.data(), blocked_d.data()});
      std::vector<unsigned char> half = blocked;
      for (Index m = 1; m < count; m += 2) half[std::size_t(m)] = 0;
      EXPECT_EQ(blocked_d.ToHost(), half);
      ops.kernels->BodyModeUnblock(count, BodyModeUnblockOp{nullptr, nullptr, blocked_d.data()});
      EXPECT_EQ(blocked_d.ToHost(), std::vector<unsigned char>(std::size_t(count), 0));
    }
  }
  // three patches of one listed node each: nodes 0, 1, 2 in environments 0, 1, 1
  BodyModeHost h;
  h.ptr = {0, 1, 2, 3};
  h.node = {0, 1, 2};
  OpsOnThreads ops(1, h);
  Backend* b = ops.backend.get();
  Array<Scalar> alpha(b, std::vector<Scalar>{1, 0.7, 0.5}), flag(b, std::vector<Scalar>{0, 0});
  Array<Index> node_env(b, std::vector<Index>{0, 1, 1});
  const auto set = [&](bool clear) {
    ops.kernels->BodyModeRefreshFlag(BodyModeRefreshFlagOp{ops.arrays.view(), alpha.data(), node_env.data(), 3, Scalar(0.5), 2, clear, flag.data()});
    return flag.ToHost();
  };
  EXPECT_EQ(set(false), (std::vector<Scalar>{0, 0}));  // 0.5 is not below 0.5
  alpha.CopyFromHost(std::vector<Scalar>{1, 0.49, 0.5});
  EXPECT_EQ(set(false), (std::vector<Scalar>{0, 1}));
  alpha.CopyFromHost(std::vector<Scalar>{0.2, 1, 1});
  EXPECT_EQ(set(false), (std::vector<Scalar>{1, 1}));  // environment 1's kept until cleared
  EXPECT_EQ(set(true), (std::vector<Scalar>{0, 0}));
}

}  // namespace
}  // namespace condsim
