// Per-contact and per-node functors of the COND velocity fixed-point iteration (paper Alg. 1-3).
// Both backends run exactly these. Vectors are per DOF, 3 DOFs per node (node k owns 3k..3k+2);
// the step matrix W is a per-DOF diagonal, equal on the 3 DOFs of a node (Prop. 3).
#pragma once

#include "condsim/contacts.h"
#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/vector_ops.h"
#include "models/cond/projection.h"

namespace condsim {

// v* = v - W (A v - b) (eq. 20), given r = A v - b
struct FpiStepOp {
  const Scalar* v;
  const Scalar* w;
  const Scalar* r;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const { u[k] = v[k] - w[k] * r[k]; }
};

// The fused passes of one iteration (CondSolver, the CPU): each reads its vectors once, one
// parallel region per pass, with the same arithmetic and summation order as the separate
// kernels they replace (bitwise their result).

// one node (a 3-row block row of A): r = A v - b (the fixed-size SpMV's sums, BsrBlockRowSums,
// then - b: bitwise the product followed by Axpby(-1, b, 1, r)) and, with w != nullptr, the W
// step u = v - W r (eq. 20, FpiStepOp) of the same rows. Nodes of stopped environments
// (row_active 0) are left as they are
struct CondResidualOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  const Scalar* v;
  const Scalar* b;
  const unsigned char* row_active;  // null: every node
  Scalar* r;
  const Scalar* w;  // null: r only
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index node) const {
    if (row_active != nullptr && row_active[node] == 0) return;
    Scalar sum[3];
    BsrBlockRowSums<3>(row_ptr, col_idx, values, v, node, sum);
    const std::int64_t k0 = 3 * std::int64_t(node);
    for (int d = 0; d < 3; ++d) {
      const std::int64_t k = k0 + d;
      r[k] = sum[d] - b[k];
      if (w != nullptr) u[k] = v[k] - w[k] * r[k];
    }
  }
};

// the Chebyshev update of one DOF (eq. 38): u <- nu (relax (u - v) + v - v_prev) + v_prev
CONDSIM_HD_INLINE Scalar ChebyshevUpdate(Scalar nu, Scalar relax, Scalar u, Scalar v, Scalar v_prev) {
  return nu * (relax * (u - v) + v - v_prev) + v_prev;
}

// what both end-of-iteration passes read and write; At(k), one DOF: the Chebyshev update when
// asked (nu != 1), d = u - v for theta, and the commit v_prev <- v, v <- u when its environment
// runs; returns d
struct CondIterationEnd {
  const Index* node_env;
  bool accelerate;       // the Chebyshev update first (eq. 38), with
  const Scalar* nu_env;  // nu per environment (CondChebyshevStepOp's)
  Scalar relax;
  const unsigned char* env_active;
  Scalar* u;
  Scalar* v;
  Scalar* v_prev;
  CONDSIM_HD_INLINE Scalar At(Index k) const {
    const Index e = node_env[k / 3];
    if (accelerate) {
      const Scalar nu = nu_env[e];
      if (nu != Scalar(1)) u[k] = ChebyshevUpdate(nu, relax, u[k], v[k], v_prev[k]);
    }
    const Scalar d = u[k] - v[k];
    if (env_active[e]) {
      v_prev[k] = v[k];
      v[k] = u[k];
    }
    return d;
  }
};

// one reduction chunk [chunk_begin[c], chunk_end[c]) of DOFs (the fixed chunks of
// cpu::SegmentedReduce over the environments' DOF ranges, kChunk each): per DOF the Chebyshev
// update of u (ChebyshevOp, when `accelerate`), d = u - v, partial[c] = sum of d^2 left
// to right from 0 (theta^2's chunk, Alg. 1 line 12), and for running environments the commit
// v_prev <- v, v <- u (CommitOp). The chunk sums folded in chunk order per environment give
// bitwise SegmentedDot(u - v, u - v); an environment whose theta is not finite is restored
// afterwards from v_prev (CondRestoreOp)
struct CondChebyshevThetaCommitOp {
  static constexpr Index kChunk = 4096;  // = cpu::kReductionChunk (checked in cpu/kernels_cpu.cpp)
  static constexpr Index kGrain = 32;    // chunks per CPU thread at least: cpu::kDefaultGrain / kChunk
  const Index* chunk_begin;
  const Index* chunk_end;
  CondIterationEnd end;
  Scalar* partial;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    Scalar acc = 0;
    for (Index k = chunk_begin[c]; k < chunk_end[c]; ++k) {
      const Scalar d = end.At(k);
      acc = acc + d * d;
    }
    partial[c] = acc;
  }
};

// v <- v_prev on the DOFs of the flagged environments (undoes CondChebyshevThetaCommitOp's
// commit where theta was not finite: the environment keeps its last finite iterate)
struct CondRestoreOp {
  const Index* node_env;
  const unsigned char* env_flag;
  const Scalar* v_prev;
  Scalar* v;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (env_flag[node_env[k / 3]]) v[k] = v_prev[k];
  }
};

// per DOF, where the chunked pass is not available (CUDA, interleaved environments): the
// Chebyshev update (eq. 38), diff = u - v for theta's segmented dot and the commit v_prev <- v,
// v <- u for the running environments in one pass, where ChebyshevOp, a copy, an axpby and
// CommitOp take four (the same arithmetic, so bitwise their result; a failed environment takes
// back v^l by CondRestoreOp, as after CondChebyshevThetaCommitOp)
struct CondChebyshevDiffCommitOp {
  CondIterationEnd end;
  Scalar* diff;
  CONDSIM_HD_INLINE void operator()(Index k) const { diff[k] = end.At(k); }
};

// u += W Jc^T lambda for the contacts order[begin .. begin+n) of one color (no two share a node,
// so the writes never collide): node i gets +w_i R^T lambda, node j gets -w_j R^T lambda
// (eq. 13, 24). With w == nullptr it adds Jc^T lambda itself (the contact forces of eq. 1).
struct ApplyImpulseOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
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
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
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
//   u <- nu (relax (u - v) + v - v_prev) + v_prev,  nu = nu_env[env of the node] (computed on
//   the backend by CondChebyshevStepOp: nothing uploaded)
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
    u[k] = ChebyshevUpdate(nu, relax, u[k], v[k], v_prev[k]);
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
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
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
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* group_ptr;    // null: every node its own group, group g = node g
  const Index* group_nodes;
  const Scalar* diag_sum;
  const Scalar* row_norm2;
  const Scalar* row_abs;
  Scalar safeguard;
  Scalar* w;
  CONDSIM_HD_INLINE Index Node(Index k) const { return group_ptr != nullptr ? group_nodes[k] : k; }
  CONDSIM_HD_INLINE void operator()(Index g) const {
    const Index begin = group_ptr != nullptr ? group_ptr[g] : g, end = group_ptr != nullptr ? group_ptr[g + 1] : g + 1;
    Scalar d = 0, s = 0, a = 0;
    for (Index k = begin; k < end; ++k) {
      d += diag_sum[Node(k)];
      s += row_norm2[Node(k)];
      a = row_abs[Node(k)] > a ? row_abs[Node(k)] : a;
    }
    Scalar value = d / s;
    if (safeguard > 0 && value * a > safeguard) value = safeguard / a;
    for (Index k = begin; k < end; ++k) {
      Scalar* p = w + 3 * std::int64_t(Node(k));
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

// the momentum check's masks (CondSolver::PrepareMomentum) per DOF k, for bodies whose DOFs all
// have mass or none has: mask_d[k] = 1 where k is an x (d = 0), y or z DOF of a body with mass,
// else 0; the body is the last one whose first DOF offsets[b] <= k (offsets[0] = 0, bodies + 1
// entries)
struct MomentumMaskOp {
  const Index* offsets;
  Index bodies;
  const unsigned char* massive;  // per body
  Scalar* mask0;
  Scalar* mask1;
  Scalar* mask2;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Index lo = 0, hi = bodies;
    while (hi - lo > 1) {
      const Index mid = lo + (hi - lo) / 2;
      if (offsets[mid] <= k) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const Scalar on = massive[lo] ? Scalar(1) : Scalar(0);
    mask0[k] = k % 3 == 0 ? on : Scalar(0);
    mask1[k] = k % 3 == 1 ? on : Scalar(0);
    mask2[k] = k % 3 == 2 ? on : Scalar(0);
  }
};

// per node: whether its environment still iterates (the SpMV's row flags)
struct EnvRowMaskOp {
  const Index* node_env;
  const unsigned char* env_active;
  unsigned char* row_active;
  CONDSIM_HD_INLINE void operator()(Index k) const { row_active[k] = env_active[node_env[k]]; }
};

// y = x[perm]: a vector's DOFs grouped by environment (interleaved environments' segmented
// reductions)
struct PermuteOp {
  const Index* perm;
  const Scalar* x;
  Scalar* y;
  CONDSIM_HD_INLINE void operator()(Index k) const { y[k] = x[perm[k]]; }
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

}  // namespace condsim
