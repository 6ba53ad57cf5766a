// Per-contact and per-node functors of the COND velocity fixed-point iteration (paper Alg. 1-3).
// Both backends run exactly these. Vectors are per DOF, 3 DOFs per node (node k owns 3k..3k+2);
// the step matrix W is a per-DOF diagonal, equal on the 3 DOFs of a node (Prop. 3).
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"
#include "models/cond/projection.h"

namespace condsim {

// the contact arrays on the backend
struct ContactView {
  const Index* node_i;
  const Index* node_j;
  const Scalar* frame;
  const Scalar* phi;
  const Scalar* mu1;
  const Scalar* mu2;
  const Index* env;
};

// v* = v - W (A v - b) (eq. 20), given r = A v - b
struct FpiStepOp {
  const Scalar* v;
  const Scalar* w;
  const Scalar* r;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const { u[k] = v[k] - w[k] * r[k]; }
};

// u += W Jc^T lambda for the contacts order[begin .. begin+n) of one color (no two share a node,
// so the writes never collide): node i gets +w_i R^T lambda, node j gets -w_j R^T lambda
// (eq. 13, 24). With w == nullptr it adds Jc^T lambda itself (the contact forces of eq. 1).
struct ApplyImpulseOp {
  ContactView c;
  const Index* order;
  Index begin;
  const Scalar* w;
  const Scalar* lambda;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index m = order[begin + k];
    const Vec3 f = Transpose(LoadMat3(c.frame, m)) * LoadVec3(lambda, m);
    const Index i = c.node_i[m], j = c.node_j[m];
    AddVec3(u, i, (w != nullptr ? w[3 * std::int64_t(i)] : Scalar(1)) * f);
    if (j >= 0) AddVec3(u, j, -(w != nullptr ? w[3 * std::int64_t(j)] : Scalar(1)) * f);
  }
};

// one contact of one color: the closed-form solve of Alg. 2 on the surrogate problem (eq. 23),
// written as a warm-started Gauss-Seidel update so that contacts sharing a node (different
// colors) stay exact at the fixed point (docs/solver.md):
//   eta = Jc,m u - gamma lambda_m      (Jc,m v* when the node carries only this contact)
//   gamma = w_i (+ w_j)                (eq. 25), plus omega for the invertible model (Sec. III-E1)
//   lambda* = -(eta + phi e_n) / (gamma + omega),  lambda = ProjectFC(lambda*)  (Alg. 2, eq. 26)
//   u += W Jc,m^T (lambda - lambda_m)  (eq. 24)
// Contacts of environments that already stopped keep their impulse.
struct ContactSweepOp {
  ContactView c;
  const Index* order;
  Index begin;
  const Scalar* w;
  const unsigned char* env_active;
  Scalar omega;
  Projection projection;
  Scalar* lambda;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index m = order[begin + k];
    if (!env_active[c.env[m]]) return;
    const Index i = c.node_i[m], j = c.node_j[m];
    const Mat3 r = LoadMat3(c.frame, m);
    const Scalar wi = w[3 * std::int64_t(i)];
    const Scalar wj = j >= 0 ? w[3 * std::int64_t(j)] : Scalar(0);
    const Scalar gamma = wi + wj;
    const Vec3 old = LoadVec3(lambda, m);
    const Vec3 rel = j >= 0 ? LoadVec3(u, i) - LoadVec3(u, j) : LoadVec3(u, i);
    const Vec3 eta = r * rel - gamma * old;
    const Vec3 lstar = (Scalar(-1) / (gamma + omega)) * (eta + Vec3(c.phi[m], 0, 0));
    const Vec3 lnew = ProjectFrictionCone(projection, lstar, c.mu1[m], c.mu2[m]);
    const Vec3 f = Transpose(r) * (lnew - old);
    AddVec3(u, i, wi * f);
    if (j >= 0) AddVec3(u, j, -wj * f);
    StoreVec3(lambda, m, lnew);
  }
};

// Chebyshev semi-iteration (Alg. 3 line 8, eq. 38) with under-relaxation: per DOF,
//   u <- nu (relax (u - v) + v - v_prev) + v_prev,  nu = nu_env[env of the node]
struct ChebyshevOp {
  const Index* node_env;
  const Scalar* nu_env;
  Scalar relax;
  const Scalar* v;
  const Scalar* v_prev;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Scalar nu = nu_env[node_env[k / 3]];
    if (nu == Scalar(1)) return;
    u[k] = nu * (relax * (u[k] - v[k]) + v[k] - v_prev[k]) + v_prev[k];
  }
};

// accepts the iterate for environments still running: v_prev <- v, v <- u
struct CommitOp {
  const Index* node_env;
  const unsigned char* env_active;
  const Scalar* u;
  Scalar* v;
  Scalar* v_prev;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (!env_active[node_env[k / 3]]) return;
    v_prev[k] = v[k];
    v[k] = u[k];
  }
};

// the largest of three values
CONDSIM_HD_INLINE Scalar LargestOf3(const Scalar* s) {
  return s[0] > s[1] ? (s[0] > s[2] ? s[0] : s[2]) : (s[1] > s[2] ? s[1] : s[2]);
}

// per node (one 3-row block row of A): sum of the 3 diagonal entries and of the 3 squared row
// norms, the ingredients of the Frobenius-norm step size (Sec. IV-C1), and the largest absolute
// row sum of the 3 rows (the Gershgorin safeguard)
struct FrobeniusNodeOp {
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar* diag_sum;
  Scalar* row_norm2;
  Scalar* row_abs;
  CONDSIM_HD_INLINE void operator()(Index node) const {
    Scalar d = 0, s = 0, abs_sum[3] = {0, 0, 0};
    for (Index k = row_ptr[node]; k < row_ptr[node + 1]; ++k) {
      const Scalar* a = values + 9 * std::int64_t(k);
      for (int e = 0; e < 9; ++e) {
        s += a[e] * a[e];
        abs_sum[e / 3] += a[e] < 0 ? -a[e] : a[e];
      }
      if (col_idx[k] == node) d += a[0] + a[4] + a[8];
    }
    diag_sum[node] = d;
    row_norm2[node] = s;
    row_abs[node] = LargestOf3(abs_sum);
  }
};

// W from the Frobenius-norm minimization (Sec. IV-C1): w = sum(diag) / sum(|row|^2) over the
// node, or over all nodes of its group (nodes linked by D-contacts share one w, as the paper's
// convergence proof requires); group g holds nodes group_nodes[group_ptr[g] .. group_ptr[g+1])
// Safeguard (safeguard > 0): w <= safeguard / (largest absolute row sum of the group's rows), so
// every Gershgorin disc of W A lies below `safeguard` < 2 and the unprojected iteration contracts
// (Prop. 3 needs |I - W A| < 1); the Frobenius w alone can give lambda_max(W A) > 2 on stiff FEM.
struct FrobeniusGroupOp {
  const Index* group_ptr;
  const Index* group_nodes;
  const Scalar* diag_sum;
  const Scalar* row_norm2;
  const Scalar* row_abs;
  Scalar safeguard;
  Scalar* w;
  CONDSIM_HD_INLINE void operator()(Index g) const {
    Scalar d = 0, s = 0, a = 0;
    for (Index k = group_ptr[g]; k < group_ptr[g + 1]; ++k) {
      d += diag_sum[group_nodes[k]];
      s += row_norm2[group_nodes[k]];
      a = row_abs[group_nodes[k]] > a ? row_abs[group_nodes[k]] : a;
    }
    Scalar value = d / s;
    if (safeguard > 0 && value * a > safeguard) value = safeguard / a;
    for (Index k = group_ptr[g]; k < group_ptr[g + 1]; ++k) {
      Scalar* p = w + 3 * std::int64_t(group_nodes[k]);
      p[0] = p[1] = p[2] = value;
    }
  }
};

// W = alpha_env I per environment (Barzilai-Borwein step, Sec. IV-C2); alpha <= 0 keeps W
struct EnvScalarToDofOp {
  const Index* node_env;
  const Scalar* alpha_env;
  Scalar* w;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Scalar alpha = alpha_env[node_env[k / 3]];
    if (alpha > Scalar(0)) w[k] = alpha;
  }
};

// ---- chains: exact W on banded sub-systems (docs/solver.md, "Chains") -------------------------
// A chain is an ordered list of nodes whose part of A is block-banded (a rod: t0 r0 t1 r1 ...,
// node k coupled to k +- band). Its W is the inverse of A restricted to the chain's nodes that
// carry no contact (banded Cholesky, one thread per chain); contact nodes keep the scalar
// Frobenius w, so Gamma stays diagonal (Prop. 3).
struct ChainView {
  const Index* ptr;          // chain c owns nodes[ptr[c] .. ptr[c+1])
  const Index* nodes;
  const Index* band_block;   // per chain node p and d = 0..band: block (node_p, node_{p-d}) or -1
  const Index* factor_offset;  // start of chain c's band factor (scalars)
  const unsigned char* in_contact;  // per node
  Index band;                // coupling reach in nodes
};

CONDSIM_HD_INLINE Index ChainBandwidth(Index band) { return 3 * band + 2; }

// A's entry (i, j), j <= i, of chain c's sub-system (scalar indices local to the chain)
CONDSIM_HD_INLINE Scalar ChainEntry(const ChainView& ch, const Scalar* values, Index c, Index i, Index j) {
  const Index p = i / 3, q = j / 3, d = p - q;
  if (d > ch.band) return 0;
  const Index base = ch.ptr[c];
  if (ch.in_contact[ch.nodes[base + p]] || ch.in_contact[ch.nodes[base + q]]) return i == j ? Scalar(1) : Scalar(0);
  const Index blk = ch.band_block[(base + p) * (ch.band + 1) + d];
  if (blk < 0) return 0;
  return values[9 * std::int64_t(blk) + 3 * (i % 3) + (j % 3)];
}

// banded Cholesky of each chain's sub-system into factor (row-band storage L(i, i-k) at
// i * (bw + 1) + k); ok[c] = 0 when a pivot is not positive (the chain then falls back to w)
struct ChainFactorOp {
  ChainView ch;
  const Scalar* values;
  Scalar* factor;
  unsigned char* ok;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    const Index n = 3 * (ch.ptr[c + 1] - ch.ptr[c]), bw = ChainBandwidth(ch.band);
    Scalar* l = factor + ch.factor_offset[c];
    ok[c] = 1;
    for (Index i = 0; i < n; ++i) {
      const Index j0 = i > bw ? i - bw : 0;
      for (Index j = j0; j <= i; ++j) {
        Scalar s = ChainEntry(ch, values, c, i, j);
        const Index k0 = (j > bw ? j - bw : 0) > j0 ? (j > bw ? j - bw : 0) : j0;
        for (Index k = k0; k < j; ++k) s -= l[i * (bw + 1) + (i - k)] * l[j * (bw + 1) + (j - k)];
        if (i == j) {
          if (!(s > 0)) {
            ok[c] = 0;
            return;
          }
          l[i * (bw + 1)] = std::sqrt(s);
        } else {
          l[i * (bw + 1) + (i - j)] = s / l[j * (bw + 1)];
        }
      }
    }
  }
};

// d = W r on the chains' contact-free nodes: solves L L^T d = r (forward, then backward); the
// entries of contact nodes (and of chains whose factorization failed) keep d = w r
struct ChainApplyOp {
  ChainView ch;
  const Scalar* factor;
  const unsigned char* ok;
  const Scalar* w;
  const Scalar* r;
  Scalar* d;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    if (!ok[c]) return;
    const Index n = 3 * (ch.ptr[c + 1] - ch.ptr[c]), bw = ChainBandwidth(ch.band), base = ch.ptr[c];
    const Scalar* l = factor + ch.factor_offset[c];
    auto dof = [&](Index i) { return 3 * std::int64_t(ch.nodes[base + i / 3]) + i % 3; };
    auto free_node = [&](Index i) { return !ch.in_contact[ch.nodes[base + i / 3]]; };
    // forward: L y = r (contact rows are identity rows with a zero right-hand side)
    for (Index i = 0; i < n; ++i) {
      Scalar s = free_node(i) ? r[dof(i)] : Scalar(0);
      for (Index k = (i > bw ? i - bw : 0); k < i; ++k) s -= l[i * (bw + 1) + (i - k)] * d[dof(k)];
      // y is kept in d for the chain's free entries; contact entries hold 0 during the solve
      const Scalar y = s / l[i * (bw + 1)];
      if (free_node(i)) d[dof(i)] = y; else d[dof(i)] = 0;
    }
    // backward: L^T x = y
    for (Index i = n - 1; i >= 0; --i) {
      Scalar s = d[dof(i)];
      const Index k1 = i + bw < n - 1 ? i + bw : n - 1;
      for (Index k = i + 1; k <= k1; ++k) s -= l[k * (bw + 1) + (k - i)] * d[dof(k)];
      d[dof(i)] = s / l[i * (bw + 1)];
    }
    for (Index i = 0; i < n; ++i)
      if (!free_node(i)) d[dof(i)] = w[dof(i)] * r[dof(i)];
  }
};

}  // namespace condsim

namespace condsim {

// rigid groups (CondSolver::SetRigidGroups): group g holds bodies body_ptr[g] .. body_ptr[g+1)
// (bodies coupled by joints; one body when it has none) and the inverse of their dense block of A
// (6 n_g x 6 n_g, row-major, at ao_inv + inv_off[g]); body k has velocity nodes trans[k] (v) and
// rot[k] (omega) and virtual nodes node[ptr[k] .. ptr[k+1]) at arms r (J = [I, -[r]x], eq. 15)
// with gains kv
constexpr int kMaxRigidGroupBodies = 8;
struct RigidGroupView {
  const Index* body_ptr;
  const Index* inv_off;
  const Index* trans;
  const Index* rot;
  const Scalar* ao_inv;
  const Index* ptr;
  const Index* node;
  const Scalar* arm;
  const Scalar* kv;
};

// the group's velocities v_o = A_o^-1 (b_o + sum_v J_v^T f_v) for the contact forces f (Jc^T
// lambda per DOF) (eq. 15 solved for the group); vo holds 6 per body (v, omega)
CONDSIM_HD_INLINE void RigidGroupVelocity(const RigidGroupView& g, Index grp, const Scalar* b, const Scalar* f, Scalar* vo) {
  const Index first = g.body_ptr[grp];
  const int nb = static_cast<int>(g.body_ptr[grp + 1] - first), n = 6 * nb;
  Scalar s[6 * kMaxRigidGroupBodies];
  for (int q = 0; q < nb; ++q) {
    const Index k = first + q;
    Vec3 st = LoadVec3(b, g.trans[k]), sr = LoadVec3(b, g.rot[k]);
    for (Index e = g.ptr[k]; e < g.ptr[k + 1]; ++e) {
      const Vec3 fv = LoadVec3(f, g.node[e]);
      st += fv;
      sr += Cross(LoadVec3(g.arm, e), fv);  // J^T f: force and torque r x f
    }
    for (int i = 0; i < 3; ++i) {
      s[6 * q + i] = st[i];
      s[6 * q + 3 + i] = sr[i];
    }
  }
  const Scalar* m = g.ao_inv + g.inv_off[grp];
  for (int i = 0; i < n; ++i) {
    vo[i] = 0;
    for (int j = 0; j < n; ++j) vo[i] += m[n * i + j] * s[j];
  }
}

// the group's exact answer to the contact forces f: v_o (RigidGroupVelocity), and each virtual
// node v_v = J_v v_o + f_v / kv (eq. 15). Writes u_v = v_v - w_v f_v before the sweeps (the sweep
// adds w_v f_v back), or u_o and u_v = v_v after them.
struct RigidResponseOp {
  RigidGroupView g;
  const Scalar* b;
  const Scalar* f;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD void operator()(Index grp) const {
    const Index first = g.body_ptr[grp];
    const int nb = static_cast<int>(g.body_ptr[grp + 1] - first);
    Scalar vo[6 * kMaxRigidGroupBodies];
    RigidGroupVelocity(g, grp, b, f, vo);
    for (int q = 0; q < nb; ++q) {
      const Index k = first + q;
      const Vec3 vt(vo[6 * q], vo[6 * q + 1], vo[6 * q + 2]), vr(vo[6 * q + 3], vo[6 * q + 4], vo[6 * q + 5]);
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
struct RigidContactView {
  const Index* ptr;
  const Index* contact;
  const Index* slot;
  const Index* body;
};

// Gauss-Seidel over a group's own contacts, one thread per group, in place of their diagonal
// solve: contact by contact the same closed-form step (Alg. 2 with gamma = w_p + d_v, eq. 25-26,
// eta form of ContactSweepOp), but the virtual node's velocity J_v v_o + f_v / kv comes from a
// v_o kept exact (v_o += A_o^-1 J_v^T of the force change) and node p moves by w_p of the change
// (eq. 24; a barycentric node's w_p is its Gamma, its hosts follow after the sweeps as in the
// diagonal solve). Sweeps repeat until no relative velocity changes by more than `settled`, at
// most `passes` times. d_v bounds the group's whole Delassus row, so every update contracts; the
// fixed point is that of the diagonal solve (eq. 11 per contact).
struct RigidContactSweepOp {
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
  CONDSIM_HD void operator()(Index grp) const {
    const Index begin = own.ptr[grp], end = own.ptr[grp + 1];
    if (begin == end || !env_active[c.env[own.contact[begin]]]) return;
    const int n = 6 * static_cast<int>(g.body_ptr[grp + 1] - g.body_ptr[grp]);
    const Scalar* minv = g.ao_inv + g.inv_off[grp];
    Scalar vo[6 * kMaxRigidGroupBodies];
    RigidGroupVelocity(g, grp, b, f, vo);
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
        for (int i = 0; i < n; ++i) {
          const Scalar* col = minv + n * i + 6 * qb;
          vo[i] += col[0] * wrench[0] + col[1] * wrench[1] + col[2] * wrench[2] + col[3] * wrench[3] + col[4] * wrench[4] +
                   col[5] * wrench[5];
        }
      }
    }
  }
};

// ---- barycentric virtual nodes (docs/solver.md, "Barycentric nodes") -------------------------
// A virtual node inside a triangle or on a segment of deformable hosts (J_a = w_a I, eq. 14).
// The step uses the exact inverse of A's restriction with the hosts' scalar W_o (Frobenius of
// A_o, the rows without the eq. 15 terms):
//   [[W_o^-1 + kv J^T J, -kv J^T], [-kv J, kv I]]^-1 = [[W_o, W_o J^T], [J W_o, J W_o J^T + I/kv]]
// so the hosts move with A_o and the virtual forces (v_o -= W_o (A_o v_o - b_o - J^T f)) and
// each virtual node takes J v_o + f / kv: convergence no longer depends on kv. The contact on a
// virtual node keeps a diagonal Gamma = 1/kv + sum_a w_a w_a-bar L_a (L_a: the sum of host a's
// weights over its virtual nodes plus its direct contacts), a row-sum majorant of the coupled
// J W_o J^T + I / kv.
struct BarycentricView {
  const Index* node;     // per virtual node k: its global node
  const Index* ptr;      // hosts of k: entries ptr[k] .. ptr[k+1)
  const Index* host;     // per entry: host node
  const Scalar* weight;  // per entry: w_a
  const Index* slot;     // per entry: the host's index h below
  const Scalar* kv;      // per virtual node [N s/m]
  const Index* hnode;    // per host h: its global node
  const Index* hptr;     // virtual nodes of host h: incidences hptr[h] .. hptr[h+1)
  const Index* hvn;      // per incidence: virtual node k
  const Scalar* hw;      // per incidence: host h's weight in k
  const Scalar* hload;   // per host h: L_h, its incidence weights plus its direct contacts
};

// per host: A_o's row sums for the Frobenius W (A's row less its eq. 15 terms: kv w_a w_c I in
// host blocks, -kv w_a I in virtual-node columns)
struct BarycentricFrobeniusOp {
  BarycentricView g;
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar* diag_sum;
  Scalar* row_norm2;
  Scalar* row_abs;
  CONDSIM_HD_INLINE void operator()(Index h) const {
    const Index a = g.hnode[h];
    Scalar d = 0, s = 0, abs_sum[3] = {0, 0, 0};
    for (Index k = row_ptr[a]; k < row_ptr[a + 1]; ++k) {
      const Index c = col_idx[k];
      Scalar extra = 0;
      bool virtual_column = false;
      for (Index e = g.hptr[h]; e < g.hptr[h + 1] && !virtual_column; ++e) {
        const Index vk = g.hvn[e];
        if (g.node[vk] == c) virtual_column = true;
        for (Index q = g.ptr[vk]; q < g.ptr[vk + 1]; ++q)
          if (g.host[q] == c) extra += g.kv[vk] * g.hw[e] * g.weight[q];
      }
      if (virtual_column) continue;
      const Scalar* blk = values + 9 * std::int64_t(k);
      for (int e = 0; e < 9; ++e) {
        const Scalar x = blk[e] - (e % 4 == 0 ? extra : Scalar(0));
        s += x * x;
        abs_sum[e / 3] += x < 0 ? -x : x;
        if (c == a && e % 4 == 0) d += x;
      }
    }
    diag_sum[a] = d;
    row_norm2[a] = s;
    row_abs[a] = LargestOf3(abs_sum);
  }
};

// per virtual node: Gamma = 1/kv + sum_a w_a w_a-bar L_a on its 3 DOFs of w
struct BarycentricGammaOp {
  BarycentricView g;
  Scalar* w;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Scalar d = 1 / g.kv[k];
    for (Index q = g.ptr[k]; q < g.ptr[k + 1]; ++q) d += g.weight[q] * w[3 * std::int64_t(g.host[q])] * g.hload[g.slot[q]];
    Scalar* p = w + 3 * std::int64_t(g.node[k]);
    p[0] = p[1] = p[2] = d;
  }
};

// per host. Before the sweeps (u = v - W r from the full A): u_a -= w_a-bar sum_k w_a (r_k - f_k),
// turning A's row into A_o's with the virtual forces f (the eq. 15 rows give r_k = kv (v_k -
// J v_o)); after them: u_a += w_a-bar sum_k w_a (f_new_k - f_k)
struct BarycentricHostOp {
  BarycentricView g;
  const Scalar* r;
  const Scalar* f;
  const Scalar* f_new;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index h) const {
    const Index a = g.hnode[h];
    Vec3 sum;
    for (Index e = g.hptr[h]; e < g.hptr[h + 1]; ++e) {
      const Index n = g.node[g.hvn[e]];
      const Vec3 d = before_sweep ? LoadVec3(f, n) - LoadVec3(r, n) : LoadVec3(f_new, n) - LoadVec3(f, n);
      sum += g.hw[e] * d;
    }
    AddVec3(u, a, w[3 * std::int64_t(a)] * sum);
  }
};

// per virtual node: u_k = J u_o + f_k / kv (before the sweeps less Gamma f_k, which the sweep
// setup adds back)
struct BarycentricNodeOp {
  BarycentricView g;
  const Scalar* f;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index n = g.node[k];
    const Vec3 fk = LoadVec3(f, n);
    Vec3 vk = (1 / g.kv[k]) * fk;
    for (Index q = g.ptr[k]; q < g.ptr[k + 1]; ++q) vk += g.weight[q] * LoadVec3(u, g.host[q]);
    if (before_sweep) vk -= w[3 * std::int64_t(n)] * fk;
    StoreVec3(u, n, vk);
  }
};

// w = value[k] on the 3 DOFs of node[k]
struct SetNodeScalarOp {
  const Index* node;
  const Scalar* value;
  Scalar* w;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    for (int d = 0; d < 3; ++d) w[3 * std::int64_t(node[k]) + d] = value[k];
  }
};

// ---- body modes: exact correction of deformable bodies' patch motions (docs/solver.md) ------
// A body is split into patches; patch p lists nodes node[ptr[p] .. ptr[p+1]) with arms r
// (position - the patch's reference point) and six rigid modes Z_i = [I, -[r_i]x] (3x6 per
// listed node, 0 elsewhere): over a body's patches, piecewise-rigid velocity fields (one patch:
// the body's rigid motions). Each iteration, before the W step, the Galerkin correction
// v += Z dv, dv = -(Z^T A Z)^-1 Z^T (A v - b), removes the residual in those modes exactly (the
// slowest of W A: rigid motions at 2M/t against the stiffness, bending of thin parts). Contact
// nodes are not listed, so Z^T Jc^T = 0 and the contact step is untouched. Z^T A Z couples the
// patches of one body (dense, (6 m_b)^2, inverted on the host); bodies are independent.
struct BodyModeView {
  const Index* ptr;         // per patch: its listed nodes node[ptr[p] .. ptr[p+1])
  const Index* node;
  const Scalar* arm;        // 3 per listed node
  const Index* node_patch;  // per global node: its patch, or -1
  const Index* node_slot;   // per global node: its position in `node`, or -1
  const Index* patch_body;  // per patch: its body
  const Index* body_ptr;    // per body: patches body_ptr[b] .. body_ptr[b+1)
  const Index* c_off;       // per body: offset of its (6 m_b)^2 coarse matrix (row-major)
  const Index* t_ptr;       // per listed node q: the patches its row of A reaches,
  const Index* t_patch;     //   t_patch[t_ptr[q] .. t_ptr[q+1]) (same body)
};

// Z_i^T x for one node: translation rows x, rotation rows (-[r]x)^T x = r x x
CONDSIM_HD_INLINE void ModeTranspose(const Vec3& r, const Vec3& x, Vec3* lin, Vec3* rot) {
  *lin += x;
  *rot += Cross(r, x);
}

// per listed node q and each patch P its row reaches: T_qP = sum_{j in P} A_ij Z_j as two 3x3
// blocks (translation: sum A_ij at 2e; rotation: sum A_ij (-[r_j]x) at 2e + 1; e the entry)
struct BodyModeProductOp {
  BodyModeView m;
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar* t;  // 18 per entry
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = m.node[q], first = m.t_ptr[q], last = m.t_ptr[q + 1];
    const Index body = m.patch_body[m.node_patch[i]];
    for (Index e = first; e < last; ++e) {
      StoreMat3(t, 2 * e, Mat3());
      StoreMat3(t, 2 * e + 1, Mat3());
    }
    for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const Index j = col_idx[k], p = m.node_patch[j];
      if (p < 0 || m.patch_body[p] != body) continue;
      Index e = first;
      while (e + 1 < last && m.t_patch[e] != p) ++e;
      const Mat3 a = LoadMat3(values, k);
      StoreMat3(t, 2 * e, LoadMat3(t, 2 * e) + a);
      StoreMat3(t, 2 * e + 1, LoadMat3(t, 2 * e + 1) - a * Skew(LoadVec3(m.arm, m.node_slot[j])));
    }
  }
};

// per patch p: its six rows of the body's A_c = Z^T A Z = sum_q Z_q^T T_qP (one thread per
// patch; it writes only its own rows)
struct BodyModeMatrixOp {
  BodyModeView m;
  const Scalar* t;
  Scalar* ac;
  CONDSIM_HD_INLINE void operator()(Index p) const {
    const Index b = m.patch_body[p], first = m.body_ptr[b];
    const Index ld = 6 * (m.body_ptr[b + 1] - first), row0 = 6 * (p - first);
    Scalar* out = ac + m.c_off[b] + std::int64_t(row0) * ld;
    for (std::int64_t k = 0; k < 6 * std::int64_t(ld); ++k) out[k] = 0;
    for (Index q = m.ptr[p]; q < m.ptr[p + 1]; ++q) {
      const Mat3 sk = Skew(LoadVec3(m.arm, q));
      for (Index e = m.t_ptr[q]; e < m.t_ptr[q + 1]; ++e) {
        // blocks [[T_lin, T_rot], [[r]x T_lin, [r]x T_rot]]
        const Mat3 t_lin = LoadMat3(t, 2 * e), t_rot = LoadMat3(t, 2 * e + 1);
        const Mat3 blk[4] = {t_lin, t_rot, sk * t_lin, sk * t_rot};
        const Index col0 = 6 * (m.t_patch[e] - first);
        for (int row = 0; row < 6; ++row)
          for (int c = 0; c < 6; ++c) out[std::int64_t(row) * ld + col0 + c] += blk[2 * (row / 3) + c / 3](row % 3, c % 3);
      }
    }
  }
};

// per patch: g = Z^T r with r = A v - b (0 when its environment stopped)
struct BodyModeResidualOp {
  BodyModeView m;
  const Scalar* r;
  const Index* node_env;
  const unsigned char* env_active;
  Scalar* g;  // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    Vec3 g_lin, g_rot;
    const bool active = m.ptr[p + 1] > m.ptr[p] && env_active[node_env[m.node[m.ptr[p]]]];
    if (active)
      for (Index q = m.ptr[p]; q < m.ptr[p + 1]; ++q) ModeTranspose(LoadVec3(m.arm, q), LoadVec3(r, m.node[q]), &g_lin, &g_rot);
    StoreVec3(g, 2 * p, g_lin);
    StoreVec3(g, 2 * p + 1, g_rot);
  }
};

// per coarse row k (6 per patch): dv_k = -(A_c^-1 g)_k within the patch's body
struct BodyModeSolveOp {
  BodyModeView m;
  const Scalar* ac_inv;
  const Scalar* g;
  Scalar* dv;  // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index p = k / 6, b = m.patch_body[p], first = m.body_ptr[b];
    const Index ld = 6 * (m.body_ptr[b + 1] - first);
    const Scalar* row = ac_inv + m.c_off[b] + std::int64_t(6 * (p - first) + k % 6) * ld;
    const Scalar* gb = g + 6 * std::int64_t(first);
    Scalar s = 0;
    for (Index c = 0; c < ld; ++c) s += row[c] * gb[c];
    dv[k] = -s;
  }
};

// per listed node: v_i += Z_i dv_p = dv_lin + dv_ang x r and r_i += sum_P T_iP dv_P (r stays
// A v - b)
struct BodyModeApplyOp {
  BodyModeView m;
  const Scalar* t;
  const Scalar* dv;
  Scalar* v;
  Scalar* r;
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = m.node[q], p = m.node_patch[i];
    AddVec3(v, i, LoadVec3(dv, 2 * p) + Cross(LoadVec3(dv, 2 * p + 1), LoadVec3(m.arm, q)));
    Vec3 dr;
    for (Index e = m.t_ptr[q]; e < m.t_ptr[q + 1]; ++e) {
      const Index pe = m.t_patch[e];
      dr += LoadMat3(t, 2 * e) * LoadVec3(dv, 2 * pe) + LoadMat3(t, 2 * e + 1) * LoadVec3(dv, 2 * pe + 1);
    }
    AddVec3(r, i, dr);
  }
};

}  // namespace condsim
