// COND body modes: exact correction of deformable bodies' patch motions (docs/solver.md, "Body modes"), shared by both
// backends: the record and the ops of each iteration (the set-up's ops: body_mode_setup_ops.h).
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"
#include "models/cond/cond_ops.h"

namespace condsim {

// A body is split into patches; patch p lists nodes node[ptr[p] .. ptr[p+1]) with arms r
// (position - the patch's reference point) and six rigid modes Z_i = [I, -[r_i]x] (3x6 per
// listed node, 0 elsewhere): over a body's patches, piecewise-rigid velocity fields (one patch:
// the body's rigid motions). Each iteration, before the W step, the Galerkin correction
// v += Z dv, dv = -(Z^T A Z)^-1 Z^T (A v - b), removes the residual in those modes exactly (the
// slowest of W A: rigid motions at 2M/t against the stiffness, bending of thin parts). Contact
// nodes are not listed, so Z^T Jc^T = 0 and the contact step is untouched (the free-body level
// lists them and acts only while their impulses are 0, BodyModeGateOp). Z^T A Z couples the
// patches of one body (dense, (6 m_b)^2, inverted on the backend by BodyModeInvertOp; a body of
// many patches: block-sparse, factorized and solved on the backend,
// BodyModeSparseSolveOp); bodies are independent.
#define CONDSIM_BODY_MODE_FIELDS(X)                                                            \
  X(Index, ptr)        /* per patch: its listed nodes node[ptr[p] .. ptr[p+1]) */               \
  X(Index, node)                                                                                \
  X(Scalar, arm)       /* 3 per listed node */                                                  \
  X(Index, node_patch) /* per global node: its patch, or -1 */                                  \
  X(Index, node_slot)  /* per global node: its position in `node`, or -1 */                     \
  X(Index, patch_body) /* per patch: its body */                                                \
  X(Index, body_ptr)   /* per body: patches body_ptr[b] .. body_ptr[b+1) */                     \
  X(Index, c_off)      /* per body: offset of its (6 m_b)^2 coarse inverse (row-major); -1: */  \
                       /* a sparse body (BodyModeSparseSolveOp) */                              \
  X(Index, halo)       /* nodes left out whose row of A reaches a patch (contact nodes next */  \
                       /* to the patches): rows of T after the listed nodes, so r stays A v - b */ \
  X(Index, t_ptr)      /* per row q of T (listed nodes, then halo): the patches its row of A */ \
  X(Index, t_end)      /*   reaches, t_patch[t_ptr[q] .. t_end[q]) (a listed node: its body's); */ \
  X(Index, t_patch)    /*   the rows stored in their nodes' order (BodyModeRowOffsetOp) */       \
  X(Index, gate_ptr)   /* free bodies and truncated modes: per patch the contacts on its */     \
  X(Index, gate_contact) /* nodes, gate_contact[gate_ptr[p] .. gate_ptr[p+1]) */               \
  X(Index, chunk_ptr)  /* per patch: its chunks chunk_ptr[p] .. chunk_ptr[p+1) of listed nodes */ \
  X(Index, chunk_begin) /* per chunk c: listed nodes chunk_begin[c] .. chunk_begin[c+1) (one */ \
                       /* patch's, BodyModeChunkLength of its size, cut from its start) */         \
  X(Index, gate_chunk_ptr)   /* the same cut of each patch's gate contacts: per patch its */     \
  X(Index, gate_chunk_begin) /* chunks, per chunk its entries of gate_contact (and the end), */ \
  X(Index, gate_chunk_patch) /* per chunk its patch */
CONDSIM_RECORD_VIEW(BodyModeView, CONDSIM_BODY_MODE_FIELDS)

// a patch's sums over its n listed nodes (BodyModeResidualChunkOp; the gate, contact-force and
// limit chunk ops over its contacts) run in chunks of this length, folded per patch in chunk
// order: the power of two at or above sqrt(n), kBodyModeMinChunk .. kBodyModeMaxChunk, so that a
// GPU thread's serial work per chunk (the chunk) and per patch (the fold) stay near sqrt(n) — a
// patch of 10^5 nodes is 196 chunks of 512, one of 1433 nodes 23 chunks of 64
constexpr Index kBodyModeMinChunk = 32;
constexpr Index kBodyModeMaxChunk = 1024;
CONDSIM_HD_INLINE Index BodyModeChunkLength(Index n) {
  Index c = kBodyModeMinChunk;
  while (c < kBodyModeMaxChunk && std::int64_t(c) * c < n) c *= 2;
  return c;
}

// Z_i^T x for one node: translation rows x, rotation rows (-[r]x)^T x = r x x
CONDSIM_HD_INLINE void ModeTranspose(const Vec3& r, const Vec3& x, Vec3* lin, Vec3* rot) {
  *lin += x;
  *rot += Cross(r, x);
}

// per chunk of a patch's listed nodes: its part of g = Z^T r (r = A v - b), summed in node order
// from 0 (6 per chunk; nothing when its environment stopped or its patch is loaded)
struct BodyModeResidualChunkOp {
  static constexpr Index kGrain = 8;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* r;
  const Index* node_env;
  const unsigned char* env_active;
  const unsigned char* loaded;  // free bodies: per patch, g is 0 for the rest of the solve (null: none)
  Scalar* partial;  // 6 per chunk
  CONDSIM_HD_INLINE void operator()(Index c) const {
    const Index q0 = m.chunk_begin[c], q1 = m.chunk_begin[c + 1];
    if (!env_active[node_env[m.node[q0]]] || (loaded != nullptr && loaded[m.node_patch[m.node[q0]]])) return;
    Vec3 g_lin, g_rot;
    for (Index q = q0; q < q1; ++q) ModeTranspose(LoadVec3(m.arm, q), LoadVec3(r, m.node[q]), &g_lin, &g_rot);
    StoreVec3(partial, 2 * c, g_lin);
    StoreVec3(partial, 2 * c + 1, g_rot);
  }
};

// the chunk parts (2 Vec3 per chunk) of chunks begin .. end) added to lin and rot in chunk order
CONDSIM_HD_INLINE void FoldChunks(const Scalar* partial, Index begin, Index end, Vec3* lin, Vec3* rot) {
  for (Index c = begin; c < end; ++c) {
    *lin += LoadVec3(partial, 2 * c);
    *rot += LoadVec3(partial, 2 * c + 1);
  }
}

// per patch: g = Z^T r, its chunks' parts summed in chunk order from 0 (0 when its environment
// stopped or it is loaded; one chunk: the chunk's sum itself, the patch's nodes in order)
struct BodyModeResidualOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* partial;  // BodyModeResidualChunkOp's
  const Index* node_env;
  const unsigned char* env_active;
  const unsigned char* loaded;  // as BodyModeResidualChunkOp's
  Scalar* g;  // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    Vec3 g_lin, g_rot;
    const bool active = m.ptr[p + 1] > m.ptr[p] && env_active[node_env[m.node[m.ptr[p]]]] && (loaded == nullptr || !loaded[p]);
    if (active) FoldChunks(partial, m.chunk_ptr[p], m.chunk_ptr[p + 1], &g_lin, &g_rot);
    StoreVec3(g, 2 * p, g_lin);
    StoreVec3(g, 2 * p + 1, g_rot);
  }
};

// free bodies (CondBodyModes::SetFreeBodies): once any contact of a patch has carried an impulse in
// this solve, the patch takes no correction (g = 0) for the rest of it; so the correction of a
// patch that lists contact nodes acts only while its contacts are idle (Jc^T lambda = 0 on its
// nodes: Z^T r is then the full residual's), and never alternates with the contact step.
// Per chunk of a patch's gate contacts: whether one of them carries an impulse (not looked at
// once the patch is loaded)
struct BodyModeGateChunkOp {
  static constexpr Index kGrain = 8;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* lambda;        // 3 per contact
  const unsigned char* loaded;  // per patch
  unsigned char* hit;          // per gate chunk
  CONDSIM_HD_INLINE void operator()(Index c) const {
    bool on = false;
    if (!loaded[m.gate_chunk_patch[c]])
      for (Index k = m.gate_chunk_begin[c]; k < m.gate_chunk_begin[c + 1] && !on; ++k) {
        const Index cc = m.gate_contact[k];
        on = lambda[3 * cc] != 0 || lambda[3 * cc + 1] != 0 || lambda[3 * cc + 2] != 0;
      }
    hit[c] = on ? 1 : 0;
  }
};

// per patch: loaded once a chunk of its contacts was hit, its g then 0
struct BodyModeGateOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const unsigned char* hit;  // per gate chunk (BodyModeGateChunkOp)
  unsigned char* loaded;     // per patch, sticky within a solve
  Scalar* g;                 // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    bool on = loaded[p] != 0;
    for (Index c = m.gate_chunk_ptr[p]; c < m.gate_chunk_ptr[p + 1] && !on; ++c) on = hit[c] != 0;
    if (!on) return;
    loaded[p] = 1;
    for (int d = 0; d < 6; ++d) g[6 * p + d] = 0;
  }
};

// free bodies: *still = 1 when every patch is loaded (then the level's correction is 0 for the rest
// of the solve: the host may leave it out), else 0; loaded null: 0 (one item)
struct BodyModeAllLoadedOp {
  const unsigned char* loaded;  // per patch (BodyModeGateOp)
  Index patches;
  Scalar* still;
  CONDSIM_HD_INLINE void operator()(Index) const {
    bool all = loaded != nullptr;
    for (Index p = 0; p < patches && all; ++p) all = loaded[p] != 0;
    *still = all ? Scalar(1) : Scalar(0);
  }
};

// truncated modes (CondParams::truncated_modes): the patches also list the contact nodes whose
// contacts were idle at the last refresh; per patch g -= Z^T Jc^T lambda over its contacts, so
// the correction is the Galerkin step on the force-balanced residual A v - b - Jc^T lambda and
// the fixed point is unchanged (0 there). The patch's contacts are S-contacts on listed nodes.
// Per chunk of a patch's gate contacts: its part of Z^T Jc^T lambda, in contact order (6 per chunk)
struct BodyModeContactForceChunkOp {
  static constexpr Index kGrain = 8;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  ContactView c;
  const Scalar* lambda;  // 3 per contact
  Scalar* partial;       // 6 per gate chunk
  CONDSIM_HD_INLINE void operator()(Index ch) const {
    Vec3 f_lin, f_rot;
    for (Index k = m.gate_chunk_begin[ch]; k < m.gate_chunk_begin[ch + 1]; ++k) {
      const Index cc = m.gate_contact[k];
      // Jc^T lambda on node i (eq. 13, S-contact: R^T lambda)
      const Vec3 f = Transpose(LoadMat3(c.frame, cc)) * LoadVec3(lambda, cc);
      ModeTranspose(LoadVec3(m.arm, m.node_slot[c.node_i[cc]]), f, &f_lin, &f_rot);
    }
    StoreVec3(partial, 2 * ch, f_lin);
    StoreVec3(partial, 2 * ch + 1, f_rot);
  }
};

// per patch: g -= Z^T Jc^T lambda, its chunks' parts summed in chunk order from 0
struct BodyModeContactForceOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* partial;  // BodyModeContactForceChunkOp's
  const Index* node_env;
  const unsigned char* env_active;
  Scalar* g;  // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    if (m.gate_ptr[p] == m.gate_ptr[p + 1] || !env_active[node_env[m.node[m.ptr[p]]]]) return;
    Vec3 f_lin, f_rot;
    FoldChunks(partial, m.gate_chunk_ptr[p], m.gate_chunk_ptr[p + 1], &f_lin, &f_rot);
    StoreVec3(g, 2 * p, LoadVec3(g, 2 * p) - f_lin);
    StoreVec3(g, 2 * p + 1, LoadVec3(g, 2 * p + 1) - f_rot);
  }
};

// truncated modes, per patch: the largest step alpha in [0, 1] along its dv that keeps each of
// its contacts feasible, J_n (v + alpha Z dv) + phi >= 0 (eq. 11 at velocity level): alpha =
// min over contacts with J_n Z dv < 0 of max(s, 0) / (-J_n Z dv), s = J_n v + phi (the
// feasibility-limited coarse step of monotone multigrid for obstacle problems, Kornhuber 1994).
// Per chunk of a patch's gate contacts: the smallest alpha over its contacts
struct BodyModeLimitChunkOp {
  static constexpr Index kGrain = 8;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  ContactView c;
  const Scalar* v;   // the iterate the correction starts from
  const Scalar* dv;  // 6 per patch
  Scalar* alpha;     // per gate chunk
  unsigned char* blocked;  // per contact: it limited a step since the last refresh (sticky)
  CONDSIM_HD_INLINE void operator()(Index ch) const {
    Scalar a = 1;
    const Index p = m.gate_chunk_patch[ch];
    const Vec3 lin = LoadVec3(dv, 2 * p), ang = LoadVec3(dv, 2 * p + 1);
    for (Index k = m.gate_chunk_begin[ch]; k < m.gate_chunk_begin[ch + 1]; ++k) {
      const Index cc = m.gate_contact[k], i = c.node_i[cc];
      const Vec3 n = LoadMat3(c.frame, cc).Row(0);
      const Scalar dn = Dot(n, lin + Cross(ang, LoadVec3(m.arm, m.node_slot[i])));
      if (dn >= 0) continue;
      const Scalar s = Dot(n, LoadVec3(v, i)) + c.phi[cc];
      const Scalar ac = s > 0 ? s / -dn : Scalar(0);
      if (ac >= 1) continue;
      blocked[cc] = 1;
      if (ac < a) a = ac;
    }
    alpha[ch] = a;
  }
};

// per patch: the smallest alpha of its chunks (BodyModeLimitChunkOp), 1 without contacts
struct BodyModeLimitOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* chunk_alpha;  // per gate chunk
  Scalar* alpha;              // per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    Scalar a = 1;
    for (Index ch = m.gate_chunk_ptr[p]; ch < m.gate_chunk_ptr[p + 1]; ++ch)
      if (chunk_alpha[ch] < a) a = chunk_alpha[ch];
    alpha[p] = a;
  }
};

// truncated modes, one item: the refresh request read by the host at its next convergence
// check (a slot of the solver's check buffer, so no read of its own): set once a patch's step was
// cut below `threshold` (it stays set until cleared), or cleared (`clear`)
struct BodyModeRefreshFlagOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* alpha;  // per patch (BodyModeLimitOp's)
  const Index* node_env;
  Index patches;
  Scalar threshold;
  Index envs;  // clear: the flags to clear (else unused)
  bool clear;
  Scalar* flag;  // per environment: 1 requested, 0 not
  CONDSIM_HD_INLINE void operator()(Index) const {
    if (clear) {
      for (Index e = 0; e < envs; ++e) flag[e] = 0;
      return;
    }
    // (a patch's environment: its first listed node's)
    for (Index p = 0; p < patches; ++p)
      if (alpha[p] < threshold && m.ptr[p + 1] > m.ptr[p]) flag[node_env[m.node[m.ptr[p]]]] = 1;
  }
};

// truncated modes, per contact: whether it is idle for a refresh (CondBodyModes::Refresh): no
// impulse (lambda = 0), no step limited by it since the last refresh (blocked; null: none) and a
// slack J_n v + phi above slack_min (the host adds the contact's kind: an S-contact on a node
// without its own Gamma). One byte per contact goes to the host instead of v and lambda
struct BodyModeIdleOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  ContactView c;
  const Scalar* lambda;          // 3 per contact
  const unsigned char* blocked;  // per contact, or null
  const Scalar* v;               // the iterate
  double slack_min;              // [m/s]
  unsigned char* idle;           // per contact
  CONDSIM_HD_INLINE void operator()(Index m) const {
    bool on = lambda[3 * m] == 0 && lambda[3 * m + 1] == 0 && lambda[3 * m + 2] == 0 && (blocked == nullptr || !blocked[m]);
    if (on) {
      const Vec3 n = LoadMat3(c.frame, m).Row(0);
      on = Dot(n, LoadVec3(v, c.node_i[m])) + c.phi[m] > slack_min;
    }
    idle[m] = on ? 1 : 0;
  }
};

// truncated modes, per contact: blocked = 0 (a refresh that changed the listed nodes)
struct BodyModeUnblockOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* contact_env;           // per contact its environment
  const unsigned char* env_changed;  // per environment: its listed contact nodes changed (null: all)
  unsigned char* blocked;
  CONDSIM_HD_INLINE void operator()(Index m) const {
    if (env_changed == nullptr || env_changed[contact_env[m]]) blocked[m] = 0;
  }
};

// truncated modes, per patch: dv_p *= the smallest alpha over its body's patches (one factor
// per body: a scaled Galerkin step alpha Z dv, alpha in [0, 1], still lowers the energy of
// eq. 1's linear part, which a per-patch factor would not guarantee)
struct BodyModeScaleOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* alpha;  // per patch
  Scalar* dv;           // 6 per patch
  CONDSIM_HD_INLINE void operator()(Index p) const {
    const Index b = m.patch_body[p];
    Scalar a = 1;
    for (Index q = m.body_ptr[b]; q < m.body_ptr[b + 1]; ++q)
      if (alpha[q] < a) a = alpha[q];
    if (a == 1) return;
    for (int d = 0; d < 6; ++d) dv[6 * p + d] *= a;
  }
};

// per coarse row k (6 per patch): dv_k = -(A_c^-1 g)_k within the patch's body, a warp per row:
// lane t sums the row's terms t, t + 32, ... from 0, then a fixed tree folds the lanes' sums
// (stride 16 down to 1; one short serial dot per lane instead of a 6 m_b-term one per thread).
// The CPU runs the same order item by item (operator()). Patches of stopped environments are
// skipped (their dv is not used)
struct BodyModeSolveOp {
  static constexpr Index kGrain = 64;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = 32;
  static constexpr int kPhases = 6;  // the lanes' sums, then the tree's five levels
  BodyModeView m;
  const Scalar* ac_inv;
  const Scalar* g;
  const Index* node_env;
  const unsigned char* env_active;
  Scalar* lanes;  // kLanes per coarse row (the warp's partial sums)
  Scalar* dv;     // 6 per patch
  CONDSIM_HD_INLINE bool Skipped(Index k) const {
    const Index p = k / 6;
    // a sparse body's rows come from BodyModeSparseSolveOp (CondBodyModes::Correction)
    if (m.c_off[m.patch_body[p]] < 0) return true;
    return m.ptr[p + 1] > m.ptr[p] && !env_active[node_env[m.node[m.ptr[p]]]];
  }
  // row k of its body's A_c^-1, the body's g and the row's length
  CONDSIM_HD_INLINE Index Row(Index k, const Scalar** row, const Scalar** gb) const {
    const Index p = k / 6, b = m.patch_body[p], first = m.body_ptr[b];
    const Index ld = 6 * (m.body_ptr[b + 1] - first);
    *row = ac_inv + m.c_off[b] + std::int64_t(6 * (p - first) + k % 6) * ld;
    *gb = g + 6 * std::int64_t(first);
    return ld;
  }
  // lane t's part of row k: its terms t, t + kLanes, ... in order from 0
  CONDSIM_HD_INLINE Scalar LaneSum(Index k, int t) const {
    const Scalar *row, *gb;
    const Index ld = Row(k, &row, &gb);
    Scalar s = 0;
    for (Index c = t; c < ld; c += kLanes) s += row[c] * gb[c];
    return s;
  }
  CONDSIM_HD_INLINE void Lane(Index k, int lane, int phase) const {
    if (Skipped(k)) return;
    Scalar* sum = lanes + std::int64_t(k) * kLanes;
    if (phase == 0) {
      sum[lane] = LaneSum(k, lane);
      return;
    }
    const int stride = kLanes >> phase;  // 16, 8, 4, 2, 1
    if (lane < stride) sum[lane] += sum[lane + stride];
    if (phase == kPhases - 1 && lane == 0) dv[k] = -sum[0];
  }
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (Skipped(k)) return;
    // the lanes' sums taken front to back over the row (lane t's terms in the same order as
    // LaneSum: the same sums; contiguous reads with kLanes independent sums)
    const Scalar *row, *gb;
    const Index ld = Row(k, &row, &gb);
    Scalar sum[kLanes] = {};
    Index c = 0;
    for (; c + kLanes <= ld; c += kLanes)
      for (int t = 0; t < kLanes; ++t) sum[t] += row[c + t] * gb[c + t];
    for (int t = 0; c + t < ld; ++t) sum[t] += row[c + t] * gb[c + t];
    for (int stride = kLanes / 2; stride > 0; stride /= 2)
      for (int t = 0; t < stride; ++t) sum[t] += sum[t + stride];
    dv[k] = -sum[0];
  }
};

// a level's correction once its dv is known (BodyModeApplyStepOp applies it node by node): a
// listed node moves, v_i += Z_i dv_p = dv_lin + dv_ang x r; listed and halo nodes alike
// r_i += sum_P T_iP dv_P, so r stays A v - b on every row the correction reaches (a halo row left
// stale would hand the W step of a contact node the residual from before the correction); nodes
// of stopped environments skipped (their iterate is not committed). A patch whose dv is 0 (a
// loaded free body, a step limited to 0) is skipped: its T blocks are not read, and a row that no
// moving patch reaches is not written
struct BodyModeCorrection {
  BodyModeView m;
  Index listed;  // rows q < listed are listed nodes, the rest halo nodes
  const Scalar* t;
  const Scalar* dv;
  const Index* node_env;
  const unsigned char* env_active;
  Scalar* v;
  Scalar* r;
  // whether patch p moves: dv_p != 0
  CONDSIM_HD_INLINE bool Moves(Index p) const {
    for (int d = 0; d < 6; ++d)
      if (dv[6 * std::int64_t(p) + d] != 0) return true;
    return false;
  }
  // the velocity of patch p's mode dv at the arm: Z_i dv for a listed node of the patch
  CONDSIM_HD_INLINE Vec3 PatchVelocity(Index p, const Vec3& arm) const {
    return LoadVec3(dv, 2 * p) + Cross(LoadVec3(dv, 2 * p + 1), arm);
  }
  // a row's correction of r over its entries [begin, end) of T: (T dv) over the moving patches;
  // *moved: one was reached
  CONDSIM_HD_INLINE Vec3 EntriesChange(Index begin, Index end, bool* moved) const {
    Vec3 dr;
    *moved = false;
    for (Index e = begin; e < end; ++e) {
      const Index pe = m.t_patch[e];
      if (!Moves(pe)) continue;
      *moved = true;
      dr += LoadMat3(t, 2 * e) * LoadVec3(dv, 2 * pe) + LoadMat3(t, 2 * e + 1) * LoadVec3(dv, 2 * pe + 1);
    }
    return dr;
  }
};
// the correction of the last body-mode level and the W step in one pass over all nodes (CondParams::
// fused_passes, no chains): u = (v + Z dv) - W (r + T dv) (eq. 20), bitwise the correction on a
// copy of v followed by FpiStepOp, without the copy (nothing later in the iteration reads it) and
// with r + T dv stored only where r_out is given (barycentric hosts read r after the W step). A
// node's entries of T come from t_offset and its arm from node_arm, in node order like the pass
// (t_ptr, t_end and arm are in the rows' order, patch by patch: read per node they miss the cache).
// w null: no W step, u = v + Z dv and r + T dv to r_out (a level below the last: its corrected
// copy of v)
struct BodyModeApplyStepOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeCorrection apply;  // its v and r are read here, never written
  const Index* node_row;  // per node its row of T, or -1 (BodyModeRowOp)
  const Index* t_offset;  // per node + 1: its row's first entry of T (MakeRowsOfT)
  const Scalar* node_arm;  // 3 per node: a listed node's arm (BodyModeNodeArmOp)
  const Scalar* w;  // or null
  Scalar* r_out;  // apply.r, to store its corrected rows, or null
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    Vec3 vi = LoadVec3(apply.v, i), ri = LoadVec3(apply.r, i);
    const Index q = node_row[i];
    if (q >= 0 && apply.env_active[apply.node_env[i]]) {
      const Index p = apply.m.node_patch[i];
      if (q < apply.listed && apply.Moves(p)) vi += apply.PatchVelocity(p, LoadVec3(node_arm, i));
      bool moved;
      const Vec3 dr = apply.EntriesChange(t_offset[i], t_offset[i + 1], &moved);
      if (moved) {
        ri += dr;
        if (r_out != nullptr) StoreVec3(r_out, i, ri);
      }
    }
    if (w == nullptr) {
      StoreVec3(u, i, vi);
      return;
    }
    for (int d = 0; d < 3; ++d) u[3 * i + d] = vi[d] - w[3 * i + d] * ri[d];
  }
};
}  // namespace condsim
