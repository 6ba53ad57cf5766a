// COND rigid groups: exact answers of rigid bodies to contact forces (docs/solver.md, "Rigid groups"), shared by both backends.
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"
#include "models/cond/cond_ops.h"

namespace condsim {

// rigid groups (CondSolver::SetRigidGroups): group g holds bodies body_ptr[g] .. body_ptr[g+1)
// (bodies coupled by joints; one body when it has none) and the inverse of their dense block of A
// (6 n_g x 6 n_g, row-major, at ao_inv + inv_off[g]); body k has velocity nodes trans[k] (v) and
// rot[k] (omega) and virtual nodes node[ptr[k] .. ptr[k+1]) at arms r (J = [I, -[r]x], eq. 15)
// with gains kv
constexpr int kMaxRigidGroupBodies = 8;
#define CONDSIM_RIGID_GROUP_FIELDS(X) \
  X(Index, body_ptr)                   \
  X(Index, inv_off)                    \
  X(Index, trans)                      \
  X(Index, rot)                        \
  X(Scalar, ao_inv)                    \
  X(Index, ptr)                        \
  X(Index, node)                       \
  X(Scalar, arm)                       \
  X(Scalar, kv)
CONDSIM_RECORD_VIEW(RigidGroupView, CONDSIM_RIGID_GROUP_FIELDS)

// body k's load of eq. 15: b_k + sum_v J_v^T f_v (force, torque r x f), 6 values
CONDSIM_HD_INLINE void RigidBodyLoad(const RigidGroupView& g, Index k, const Scalar* b, const Scalar* f, Scalar* s) {
  Vec3 st = LoadVec3(b, g.trans[k]), sr = LoadVec3(b, g.rot[k]);
  for (Index e = g.ptr[k]; e < g.ptr[k + 1]; ++e) {
    const Vec3 fv = LoadVec3(f, g.node[e]);
    st += fv;
    sr += Cross(LoadVec3(g.arm, e), fv);  // J^T f: force and torque r x f
  }
  for (int i = 0; i < 3; ++i) {
    s[i] = st[i];
    s[3 + i] = sr[i];
  }
}

// body q's 6 rows of the group's velocities v_o = A_o^-1 (b_o + sum_v J_v^T f_v) for the contact
// forces f (Jc^T lambda per DOF) (eq. 15 solved for the group). The loads are made body by body
// (6 values at a time, not the group's 6 n_g: a small stack frame on the GPU); the products add
// in the column order of the whole row.
CONDSIM_HD_INLINE void RigidBodyVelocity(const RigidGroupView& g, Index grp, int q, const Scalar* b, const Scalar* f, Scalar* vq) {
  const Index first = g.body_ptr[grp];
  const int nb = static_cast<int>(g.body_ptr[grp + 1] - first), n = 6 * nb;
  const Scalar* m = g.ao_inv + g.inv_off[grp] + std::int64_t(n) * 6 * q;
  for (int i = 0; i < 6; ++i) vq[i] = 0;
  for (int qq = 0; qq < nb; ++qq) {
    Scalar s[6];
    RigidBodyLoad(g, first + qq, b, f, s);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) vq[i] += m[n * i + 6 * qq + j] * s[j];
  }
}

// the group's exact answer to the contact forces f: v_o (RigidBodyVelocity), and each virtual
// node v_v = J_v v_o + f_v / kv (eq. 15). Writes u_v = v_v - w_v f_v before the sweeps (the sweep
// adds w_v f_v back), or u_o and u_v = v_v after them.
struct RigidResponseOp {
  static constexpr Index kGrain = 32;  // items per CPU thread at least (cpu/parallel.h)
  RigidGroupView g;
  const Scalar* b;
  const Scalar* f;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD void operator()(Index grp) const {
    const Index first = g.body_ptr[grp];
    const int nb = static_cast<int>(g.body_ptr[grp + 1] - first);
    for (int q = 0; q < nb; ++q) {
      const Index k = first + q;
      Scalar vo[6];
      RigidBodyVelocity(g, grp, q, b, f, vo);
      const Vec3 vt(vo[0], vo[1], vo[2]), vr(vo[3], vo[4], vo[5]);
      if (!before_sweep) {
        StoreVec3(u, g.trans[k], vt);
        StoreVec3(u, g.rot[k], vr);
      }
      for (Index e = g.ptr[k]; e < g.ptr[k + 1]; ++e) {
        const Index nd = g.node[e];
        const Vec3 fv = LoadVec3(f, nd);
        Vec3 vv = vt + Cross(vr, LoadVec3(g.arm, e)) + (Scalar(1) / g.kv[e]) * fv;
        if (before_sweep) vv -= w[3 * std::int64_t(nd)] * fv;
        StoreVec3(u, nd, vv);
      }
    }
  }
};

// a rigid group's own contacts (docs/solver.md, "Rigid groups"): contacts between one of its
// virtual nodes that carries no other contact and a node p of a deformable body (FEM or cable
// node, or a barycentric virtual node) that no other group's own contact touches. Group g owns
// entries ptr[g] .. ptr[g+1): the contact, its virtual node's slot in RigidGroupView (arm, kv)
// and that node's body within the group.
#define CONDSIM_RIGID_CONTACT_FIELDS(X) X(Index, ptr) X(Index, contact) X(Index, slot) X(Index, body)
CONDSIM_RECORD_VIEW(RigidContactView, CONDSIM_RIGID_CONTACT_FIELDS)

// Gauss-Seidel over a group's own contacts, one thread per group, in place of their diagonal
// solve: contact by contact the same closed-form step (Alg. 2 with gamma = w_p + d_v, eq. 25-26,
// eta form of ContactSweepOp), but the virtual node's velocity J_v v_o + f_v / kv comes from a
// v_o kept exact (v_o += A_o^-1 J_v^T of the force change) and node p moves by w_p of the change
// (eq. 24; a barycentric node's w_p is its Gamma, its hosts follow after the sweeps as in the
// diagonal solve). Sweeps repeat until no relative velocity changes by more than `settled`, at
// most `passes` times. d_v bounds the group's whole Delassus row, so every update contracts; the
// fixed point is that of the diagonal solve (eq. 11 per contact).
struct RigidContactSweepOp {
  static constexpr Index kGrain = 4;  // items per CPU thread at least (cpu/parallel.h)
  RigidGroupView g;
  RigidContactView own;
  ContactView c;
  const Scalar* b;
  const Scalar* f;  // Jc^T lambda of the current impulses
  const Scalar* w;  // W; d_v on the virtual nodes
  const unsigned char* env_active;
  Scalar omega;
  Projection projection;
  int passes;      // at most this many sweeps
  Scalar settled;  // stop after a sweep whose largest change of a relative velocity
                   // (gamma |lambda - lambda_m|) is below this [m/s]
  Scalar* lambda;
  Scalar* u;
  Scalar* v_o;  // 6 per body (v, omega): the group's velocities, kept here in memory rather than
                // in a 6 n_g stack array (GPU stack frame <= 256 B)
  CONDSIM_HD void operator()(Index grp) const {
    const Index begin = own.ptr[grp], end = own.ptr[grp + 1];
    if (begin == end || !env_active[c.env[own.contact[begin]]]) return;
    const int nb = static_cast<int>(g.body_ptr[grp + 1] - g.body_ptr[grp]), n = 6 * nb;
    const Scalar* minv = g.ao_inv + g.inv_off[grp];
    Scalar* vo = v_o + 6 * std::int64_t(g.body_ptr[grp]);
    for (int q = 0; q < nb; ++q) RigidBodyVelocity(g, grp, q, b, f, vo + 6 * q);
    Scalar change = settled + 1;
    for (int pass = 0; pass < passes && change > settled; ++pass) {
      change = 0;
      for (Index q = begin; q < end; ++q) {
        const Index m = own.contact[q], e = own.slot[q], qb = own.body[q];
        const Index vnode = g.node[e];
        const bool vn_is_i = c.node_i[m] == vnode;
        const Index p = vn_is_i ? c.node_j[m] : c.node_i[m];
        const Mat3 r = LoadMat3(c.frame, m);
        const Vec3 old = LoadVec3(lambda, m);
        // the virtual node's force and velocity (eq. 15)
        const Vec3 fv = (vn_is_i ? Scalar(1) : Scalar(-1)) * (Transpose(r) * old);
        const Vec3 arm = LoadVec3(g.arm, e);
        const Vec3 vt(vo[6 * qb], vo[6 * qb + 1], vo[6 * qb + 2]), vr(vo[6 * qb + 3], vo[6 * qb + 4], vo[6 * qb + 5]);
        const Vec3 uv = vt + Cross(vr, arm) + (Scalar(1) / g.kv[e]) * fv;
        const Vec3 up = LoadVec3(u, p);
        const Scalar wp = w[3 * std::int64_t(p)];
        const Scalar gamma = wp + w[3 * std::int64_t(vnode)];
        // Alg. 2 on the contact (eta form, eq. 25-26)
        const Vec3 eta = r * (vn_is_i ? uv - up : up - uv) - gamma * old;
        const Vec3 lstar = (Scalar(-1) / (gamma + omega)) * (eta + Vec3(c.phi[m], 0, 0));
        const Vec3 lnew = ProjectFrictionCone(projection, lstar, c.mu1[m], c.mu2[m]);
        const Vec3 df = Transpose(r) * (lnew - old);
        StoreVec3(lambda, m, lnew);
        const Scalar moved = gamma * Norm(lnew - old);
        change = moved > change ? moved : change;
        // node p by W, the group by A_o^-1 J_v^T of the virtual node's force change
        AddVec3(u, p, (vn_is_i ? -wp : wp) * df);
        const Vec3 dfv = vn_is_i ? df : Scalar(-1) * df;
        const Vec3 dtq = Cross(arm, dfv);
        const Scalar wrench[6] = {dfv[0], dfv[1], dfv[2], dtq[0], dtq[1], dtq[2]};
        // one body's 6 rows at a time: their loads come before any store, so a GPU thread waits
        // once per body rather than once per row (vo may alias minv as far as the compiler knows)
        for (int i0 = 0; i0 < n; i0 += 6) {
          Scalar dv[6];
          for (int k = 0; k < 6; ++k) {
            const Scalar* col = minv + n * (i0 + k) + 6 * qb;
            dv[k] = col[0] * wrench[0] + col[1] * wrench[1] + col[2] * wrench[2] + col[3] * wrench[3] + col[4] * wrench[4] +
                    col[5] * wrench[5];
          }
          for (int k = 0; k < 6; ++k) vo[i0 + k] += dv[k];
        }
      }
    }
  }
};

// The groups' virtual nodes made on the backend from the system's (VirtualNodesOnBackend;
// CondRigidGroups::Set when its host check passes), bitwise Nodalizer::BuildRigidGroups: per
// virtual node k its sort key slot << 32 | k when it is a rigid point (two blocks, w I then
// -[r]x) whose first host is the v node of the groups' body `slot`, else the largest key; sorted,
// the first entries are the groups' virtual nodes, body by body, each body's in node order
struct RigidPointKeyOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* vn_ptr;
  const Index* vn_host;
  const unsigned char* kind;
  const Index* slot_of;  // per node first + i: the body slot whose v node it is, or -1
  Index first, span;
  std::uint64_t* key;
  Index* order;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index e = vn_ptr[k];
    Index slot = -1;
    if (vn_ptr[k + 1] - e == 2 && kind[e] == 0 && kind[e + 1] == 1) {
      const Index h = vn_host[e] - first;
      slot = h >= 0 && h < span ? slot_of[h] : -1;
    }
    key[k] = slot >= 0 ? std::uint64_t(slot) << 32 | std::uint64_t(k) : ~std::uint64_t(0);
    order[k] = k;
  }
};

// per entry e of the groups' virtual nodes (keys sorted): its node, arm (the r of its -[r]x
// block) and kv
struct RigidPointFillOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const std::uint64_t* key;
  const Index* vn_ptr;
  const Index* offset;  // per Jacobian entry its first parameter
  const Scalar* param;
  const Scalar* vn_kv;
  Index base_nodes;
  Index* node;
  Scalar* arm;
  Scalar* kv;
  CONDSIM_HD_INLINE void operator()(Index e) const {
    const Index k = static_cast<Index>(key[e] & 0xffffffffu);
    node[e] = base_nodes + k;
    const Scalar* r = param + offset[vn_ptr[k] + 1];
    for (int d = 0; d < 3; ++d) arm[3 * std::int64_t(e) + d] = r[d];
    kv[e] = vn_kv[k];
  }
};
}  // namespace condsim
