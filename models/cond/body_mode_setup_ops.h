// COND body modes, the set-up's ops (once per solve, or when the patches change): T = A Z, the
// coarse matrices and their inverses, the arms on the backend, the rows of T per node; the record
// and the per-iteration ops in body_mode_ops.h. Shared by both backends.
#pragma once

#include "models/cond/body_mode_ops.h"

namespace condsim {

// per row q of T (listed node or halo node) and each patch P its row reaches: T_qP = sum_{j in P} A_ij Z_j as two 3x3
// blocks (translation: sum A_ij at 2e; rotation: sum A_ij (-[r_j]x) at 2e + 1; e the entry)
struct BodyModeProductOp {
  static constexpr Index kGrain = 2048;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  Index listed;  // rows q < listed are listed nodes, the rest halo nodes
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar* t;  // 18 per entry
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = q < listed ? m.node[q] : m.halo[q - listed], first = m.t_ptr[q], last = m.t_end[q];
    // a listed node's row only to its own body's patches (they form A_c); a halo row to all
    const Index body = q < listed ? m.patch_body[m.node_patch[i]] : -1;
    for (Index e = first; e < last; ++e) {
      StoreMat3(t, 2 * e, Mat3());
      StoreMat3(t, 2 * e + 1, Mat3());
    }
    for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const Index j = col_idx[k], p = m.node_patch[j];
      if (p < 0 || (body >= 0 && m.patch_body[p] != body)) continue;
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
  static constexpr Index kGrain = 16;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* t;
  Scalar* ac;
  CONDSIM_HD_INLINE void operator()(Index p) const {
    const Index b = m.patch_body[p], first = m.body_ptr[b];
    if (m.c_off[b] < 0) return;  // a sparse body (BodyModeSparseMatrixOp)
    const Index ld = 6 * (m.body_ptr[b + 1] - first), row0 = 6 * (p - first);
    Scalar* out = ac + m.c_off[b] + std::int64_t(row0) * ld;
    for (std::int64_t k = 0; k < 6 * std::int64_t(ld); ++k) out[k] = 0;
    for (Index q = m.ptr[p]; q < m.ptr[p + 1]; ++q) {
      const Mat3 sk = Skew(LoadVec3(m.arm, q));
      for (Index e = m.t_ptr[q]; e < m.t_end[q]; ++e) {
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

// the same rows for a body whose A_c is sparse (more patches than CondParams::body_mode_dense_patches):
// item k is the body's patch first + k, its block row k of A_c in blocks c_ptr[k] .. c_ptr[k+1)
// (6x6, row-major, 36 scalars each), their columns c_col the body's patches from 0 in ascending
// order; every entry summed in BodyModeMatrixOp's order, so the blocks are bitwise its rows
struct BodyModeSparseMatrixOp {
  static constexpr Index kGrain = 16;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Scalar* t;
  Index first;          // the body's first patch
  const Index* c_ptr;   // per patch of the body, and the end
  const Index* c_col;   // per block
  Scalar* values;       // 36 per block
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index p = first + k, b0 = c_ptr[k], b1 = c_ptr[k + 1];
    for (std::int64_t s = 36 * std::int64_t(b0); s < 36 * std::int64_t(b1); ++s) values[s] = 0;
    for (Index q = m.ptr[p]; q < m.ptr[p + 1]; ++q) {
      const Mat3 sk = Skew(LoadVec3(m.arm, q));
      for (Index e = m.t_ptr[q]; e < m.t_end[q]; ++e) {
        // the block of patch t_patch[e] (a binary search of the row's sorted columns)
        const Index col = m.t_patch[e] - first;
        Index lo = b0, hi = b1;
        while (lo < hi) {
          const Index mid = lo + (hi - lo) / 2;
          if (c_col[mid] < col) lo = mid + 1;
          else hi = mid;
        }
        if (lo == b1 || c_col[lo] != col) continue;
        const Mat3 t_lin = LoadMat3(t, 2 * e), t_rot = LoadMat3(t, 2 * e + 1);
        const Mat3 blk[4] = {t_lin, t_rot, sk * t_lin, sk * t_rot};
        Scalar* out = values + 36 * std::int64_t(lo);
        for (int row = 0; row < 6; ++row)
          for (int c = 0; c < 6; ++c) out[6 * row + c] += blk[2 * (row / 3) + c / 3](row % 3, c % 3);
      }
    }
  }
};

// per listed node of a solve: its arm from the arms of every node of the BodyModes (device_arm,
// 3 per entry), so that no arm comes from the host
struct BodyModeGatherArmOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  const Index* source;  // per node of A: its entry in the BodyModes (uploaded when they change)
  const Scalar* from;   // 3 per entry of the BodyModes
  Scalar* arm;          // 3 per listed node (the record's arm)
  CONDSIM_HD_INLINE void operator()(Index q) const { StoreVec3(arm, q, LoadVec3(from, source[m.node[q]])); }
};

// the record's arms in node order (BodyModeApplyStepOp reads them in its pass over the nodes):
// node_arm[node[q]] = arm[q]
struct BodyModeNodeArmOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node;
  const Scalar* arm;
  Scalar* node_arm;  // 3 per node of A
  CONDSIM_HD_INLINE void operator()(Index q) const { StoreVec3(node_arm, node[q], LoadVec3(arm, q)); }
};

// AppendBodyPatches' reference points on the backend (BodyPatchArms), one body at a time from
// its positions x: item i < patches the mean position of patch first_patch + i (its entries
// summed in their order, then divided by their count), item `patches` the body's mean position
// (its nodes summed in node order); the host's sums in the host's order, so bitwise its values
struct BodyPatchCentreOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  const Scalar* x;      // the body's positions, 3 per node
  const Index* ptr;     // per patch: its entries ptr[p] .. ptr[p+1)
  const Index* local;   // per entry: its node of the body
  Index first_patch;
  Index patches;        // the body's patches
  Index count;          // the body's nodes
  Scalar* centre;       // 3 per patch
  Scalar* body_centre;  // the body's 3
  CONDSIM_HD_INLINE void operator()(Index i) const {
    Vec3 sum;
    if (i < patches) {
      const Index p = first_patch + i, n = ptr[p + 1] - ptr[p];
      for (Index k = ptr[p]; k < ptr[p + 1]; ++k) sum += LoadVec3(x, local[k]);
      StoreVec3(centre, p, sum / Scalar(n > 1 ? n : 1));
    } else {
      for (Index k = 0; k < count; ++k) sum += LoadVec3(x, k);
      StoreVec3(body_centre, 0, sum / Scalar(count > 1 ? count : 1));
    }
  }
};

// per entry of one body (BodyPatchArms): arm = x - its patch's mean, body_arm = x - the body's
// mean (BodyPatchCentreOp)
struct BodyPatchArmOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Scalar* x;            // the body's positions, 3 per node
  const Index* local;         // per entry: its node of the body
  const Index* entry_patch;   // per entry: its patch
  const Scalar* centre;       // 3 per patch
  const Scalar* body_centre;  // the body's 3
  Index first_entry;
  Scalar* arm;       // 3 per entry
  Scalar* body_arm;  // 3 per entry
  CONDSIM_HD_INLINE void operator()(Index i) const {
    const Index q = first_entry + i;
    const Vec3 xq = LoadVec3(x, local[q]);
    StoreVec3(arm, q, xq - LoadVec3(centre, entry_patch[q]));
    StoreVec3(body_arm, q, xq - LoadVec3(body_centre, 0));
  }
};

// rows of one body's dense coarse matrix at most (6 per patch, kMaxDenseBodyModePatches patches)
constexpr Index kBodyModeMaxCoarse = 6 * 128;

// per body: the inverse of its coarse matrix A_c (row-major, (6 m_b)^2 at c_off),
// A_c^-1 = D^-1/2 (S + 1e-10 I)^-1 D^-1/2 with S = D^-1/2 sym(A_c) D^-1/2 (unit diagonal; the
// shift bounds a patch's degenerate direction, e.g. the rotation about the line of collinear
// nodes); a body whose A_c is not positive definite (a pivot <= 0, a diagonal entry <= 0, a
// non-finite entry) gets zeros: no correction. S + 1e-10 I = U^T U by a right-looking Cholesky
// (Golub & Van Loan 2013, Alg. 4.2.2), X = U^-T by rows (X L = I), A_c^-1 = D^-1/2 X^T X D^-1/2.
// A lane functor (chain_ops.h) of 256 lanes, one block per body on CUDA (a warp per body took
// 3.4-4.4 ms per launch on an H200: docs/performance.md), 2 n + 6 phases for n = 6 m_b (a column
// of the factor takes two: its row of U, then the trailing update); lane l owns rows l, l + 256,
// ... within a phase. A_c comes in `work` (BodyModeMatrixOp), which then holds U (upper triangle,
// in place of S) and X (strict lower).
struct BodyModeInvertOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = 256;
  static constexpr int kPhases = 2 * kBodyModeMaxCoarse + 6;
  BodyModeView m;
  Scalar* work;                  // A_c in; U and X
  Scalar* ac_inv;                // A_c^-1 out
  Scalar* scale;                 // 6 per patch: D^-1/2
  unsigned char* ok;             // per body: A_c positive definite so far
  const unsigned char* refresh;  // per body: invert it (null: all); the others keep ac_inv
  Scalar shift;                  // 1e-10 (kPatchRegularization)
  CONDSIM_HD_INLINE static int Phases(Index n) { return int(2 * n + 6); }
  CONDSIM_HD_INLINE void Lane(Index b, int lane, int phase) const { Rows(b, lane, kLanes, phase); }
  // one phase for the rows r0, r0 + stride, ... (lane l: r0 = l, stride = kLanes; the host: all
  // rows in one call); row r0 = 0's lane also does the phase's single writes
  CONDSIM_HD_INLINE void Rows(Index b, Index r0, Index stride, int phase) const {
    if (m.c_off[b] < 0) return;  // a sparse body (BodyModeSparseFactorOp)
    const Index first = m.body_ptr[b], n = 6 * (m.body_ptr[b + 1] - first);
    if (phase >= Phases(n) || (refresh != nullptr && !refresh[b])) return;
    Scalar* a = ac_inv + m.c_off[b];
    Scalar* w = work + m.c_off[b];
    Scalar* s = scale + 6 * std::int64_t(first);
    const std::int64_t ld = n;
    if (phase == 0) {
      if (r0 == 0) ok[b] = 1;
      return;
    }
    if (phase == Phases(n) - 1) {
      // a failed body: no correction
      if (!ok[b])
        for (Index i = r0; i < n; i += stride)
          for (Index j = 0; j < n; ++j) a[i * ld + j] = 0;
      return;
    }
    // a lane may clear ok in the phase that others read it (a non-positive pivot): they then finish
    // that phase on a failed factor, which the last phase zeroes whatever the lanes' order
    if (!ok[b]) return;
    if (phase == 1) {
      // D^-1/2 from the diagonal of sym(A_c)
      for (Index i = r0; i < n; i += stride) {
        const Scalar d = Scalar(0.5) * (w[i * ld + i] + w[i * ld + i]);
        if (!(d > 0) || !IsFinite(d)) {
          ok[b] = 0;
          return;
        }
        s[i] = 1 / std::sqrt(d);
      }
    } else if (phase == 2) {
      // S + shift I into the upper triangle, in place (a lane reads its row's upper part and
      // the lower parts of the rows below, which no lane writes here)
      for (Index i = r0; i < n; i += stride)
        for (Index j = i; j < n; ++j) {
          const Scalar v = Scalar(0.5) * (w[i * ld + j] + w[j * ld + i]);
          const Scalar sv = s[i] * v * s[j] + (i == j ? shift : Scalar(0));
          if (!IsFinite(v) || !IsFinite(sv)) ok[b] = 0;
          w[i * ld + j] = sv;
        }
    } else if (phase < 3 + 2 * n) {
      const Index j = (phase - 3) / 2;
      const Scalar p = w[j * ld + j];
      if ((phase - 3) % 2 == 0) {
        // row j of U: U_jk = S_jk / sqrt(S_jj) (every lane reads the pivot; it is written next phase)
        if (!(p > 0)) {
          if (r0 == 0) ok[b] = 0;
          return;
        }
        const Scalar u = std::sqrt(p);
        for (Index k = j + 1 + r0; k < n; k += stride) w[j * ld + k] /= u;
      } else {
        // trailing update S_ik -= U_ji U_jk (i, k > j); lane 0 also stores U_jj
        if (r0 == 0) w[j * ld + j] = std::sqrt(p);
        for (Index i = j + 1 + r0; i < n; i += stride) {
          const Scalar uji = w[j * ld + i];
          for (Index k = i; k < n; ++k) w[i * ld + k] -= uji * w[j * ld + k];
        }
      }
    } else if (phase == 3 + 2 * n) {
      // X = L^-1 (L = U^T) by rows: X_ij = -(sum_{k=j+1..i} X_ik L_kj) / L_jj, j = i-1 .. 0
      if (stride == 1) {
        InverseRowsInFours(w, ld, r0, n);
        return;
      }
      for (Index i = r0; i < n; i += stride) {
        const Scalar xii = 1 / w[i * ld + i];
        for (Index j = i - 1; j >= 0; --j) {
          Scalar acc = xii * w[j * ld + i];
          for (Index k = j + 1; k < i; ++k) acc += w[i * ld + k] * w[j * ld + k];
          w[i * ld + j] = -acc / w[j * ld + j];
        }
      }
    } else {
      // A_c^-1_ij = s_i (sum_{k >= j} X_ki X_kj) s_j for j >= i, mirrored to (j, i)
      for (Index i = r0; i < n; i += stride) {
        Scalar* row = a + i * ld;
        for (Index j = i; j < n; ++j) row[j] = 0;
        for (Index k = i; k < n; ++k) {
          const Scalar xkk = 1 / w[k * ld + k];
          const Scalar xki = k == i ? xkk : w[k * ld + i];
          for (Index j = i; j < k; ++j) row[j] += xki * w[k * ld + j];
          row[k] += xki * xkk;
        }
        for (Index j = i; j < n; ++j) {
          const Scalar v = s[i] * row[j] * s[j];
          if (!IsFinite(v)) ok[b] = 0;
          row[j] = v;
          a[j * ld + i] = v;
        }
      }
    }
  }
  // the rows r0 .. n - 1 of X = L^-1 four at a time (the host's call): each row's X_ij in the
  // order above (j descending; its sum from xii L_ji, then k ascending), the four rows' sums side
  // by side so that their chains of additions overlap; the same values as row by row
  CONDSIM_HD_INLINE static void InverseRowsInFours(Scalar* w, std::int64_t ld, Index r0, Index n) {
    for (Index i0 = r0; i0 < n; i0 += 4) {
      const Index rows = n - i0 < 4 ? n - i0 : 4;
      Scalar xii[4];
      for (Index q = 0; q < rows; ++q) xii[q] = 1 / w[(i0 + q) * ld + i0 + q];
      // the columns j within the group, row by row
      for (Index j = i0 + rows - 2; j >= i0; --j)
        for (Index q = j - i0 + 1; q < rows; ++q) {
          const Index i = i0 + q;
          Scalar acc = xii[q] * w[j * ld + i];
          for (Index k = j + 1; k < i; ++k) acc += w[i * ld + k] * w[j * ld + k];
          w[i * ld + j] = -acc / w[j * ld + j];
        }
      // the columns before the group: the four sums over k < i0 together, then each row's tail
      for (Index j = i0 - 1; j >= 0; --j) {
        const Scalar* uj = w + j * ld;
        Scalar acc[4];
        for (Index q = 0; q < rows; ++q) acc[q] = xii[q] * uj[i0 + q];
        if (rows == 4) {
          const Scalar *x0 = w + i0 * ld, *x1 = x0 + ld, *x2 = x1 + ld, *x3 = x2 + ld;
          for (Index k = j + 1; k < i0; ++k) {
            const Scalar u = uj[k];
            acc[0] += x0[k] * u;
            acc[1] += x1[k] * u;
            acc[2] += x2[k] * u;
            acc[3] += x3[k] * u;
          }
        } else {
          for (Index k = j + 1; k < i0; ++k)
            for (Index q = 0; q < rows; ++q) acc[q] += w[(i0 + q) * ld + k] * uj[k];
        }
        for (Index q = 1; q < rows; ++q)
          for (Index k = i0; k < i0 + q; ++k) acc[q] += w[(i0 + q) * ld + k] * uj[k];
        for (Index q = 0; q < rows; ++q) w[(i0 + q) * ld + j] = -acc[q] / uj[j];
      }
    }
  }
  CONDSIM_HD_INLINE void operator()(Index b) const {
    const int phases = Phases(6 * (m.body_ptr[b + 1] - m.body_ptr[b]));
    for (int phase = 0; phase < phases; ++phase) Rows(b, 0, 1, phase);
  }
};

// the record's listed nodes made on the backend from the patches' nodes (CondBodyModes::Set's,
// uploaded once per set of patches) and the contact step's node flags, as SelectPatches lists them
// when no contact node is admitted and no node of the patches has its own Gamma: per patch its
// nodes not in contact, none when fewer than `min_nodes`. Per patch p of the set (item `patches`
// writes keep[entries] = 0, so that the scan of keep ends with the total): keep[q] per entry
struct BodyModeKeepOp {
  const Index* ptr;   // per patch of the set: its entries ptr[p] .. ptr[p+1)
  const Index* node;  // per entry
  const unsigned char* in_contact;
  Index patches, entries, min_nodes;
  Index* keep;
  CONDSIM_HD_INLINE void operator()(Index p) const {
    if (p == patches) {
      keep[entries] = 0;
      return;
    }
    Index free = 0;
    for (Index q = ptr[p]; q < ptr[p + 1]; ++q) free += in_contact[node[q]] ? 0 : 1;
    for (Index q = ptr[p]; q < ptr[p + 1]; ++q) keep[q] = free >= min_nodes && !in_contact[node[q]] ? 1 : 0;
  }
};

// per entry q of the set (keep scanned: its place among the kept): listed[keep[q]] = its node
struct BodyModeListOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node;
  const Index* keep;
  Index* listed;
  CONDSIM_HD_INLINE void operator()(Index q) const {
    if (keep[q + 1] != keep[q]) listed[keep[q]] = node[q];
  }
};

// the record's halo made on the backend (CondBodyModes::Coupling's rule when the contact step's
// node flags are exactly the nodes of contacts, none of them with its own Gamma): per node i (item
// `nodes` writes 0, so that the scan ends with the total) 1 when i is in no patch, in contact, and
// its row of A reaches a listed node
struct BodyModeHaloFlagOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node_patch;
  const unsigned char* in_contact;
  const Index* row_ptr;
  const Index* col_idx;
  Index nodes;
  Index* flag;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    bool halo = false;
    if (i < nodes && node_patch[i] < 0 && in_contact[i])
      for (Index k = row_ptr[i]; k < row_ptr[i + 1] && !halo; ++k) halo = node_patch[col_idx[k]] >= 0;
    flag[i] = halo ? 1 : 0;
  }
};

// per node i (flag scanned): halo[flag[i]] = i where i is a halo node (in node order)
struct BodyModeHaloListOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* flag;
  Index* halo;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    if (flag[i + 1] != flag[i]) halo[flag[i]] = i;
  }
};

// the record's gate contacts made on the backend (CondBodyModes::Prepare's lists: per patch the
// contacts on its nodes in contact order, a contact between two patches in both): per contact m
// two sort keys, patch << 32 | m for the patch of each side (a second side in the first's patch,
// or in none, sorts last); sorted, the first entries are gate_contact's in order
struct BodyModeGateKeyOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node_i;
  const Index* node_j;
  const Index* node_patch;
  std::uint64_t* key;
  Index* order;
  CONDSIM_HD_INLINE void operator()(Index m) const {
    const Index pi = node_patch[node_i[m]], pj = node_j[m] >= 0 ? node_patch[node_j[m]] : -1;
    const std::uint64_t none = ~std::uint64_t(0);
    key[2 * m] = pi >= 0 ? std::uint64_t(pi) << 32 | std::uint64_t(m) : none;
    key[2 * m + 1] = pj >= 0 && pj != pi ? std::uint64_t(pj) << 32 | std::uint64_t(m) : none;
    order[2 * m] = 2 * m;
    order[2 * m + 1] = 2 * m + 1;
  }
};

// per gate entry e (keys sorted): gate_contact[e] = its contact
struct BodyModeGateListOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const std::uint64_t* key;
  Index* gate_contact;
  CONDSIM_HD_INLINE void operator()(Index e) const { gate_contact[e] = static_cast<Index>(key[e] & 0xffffffffu); }
};

// the record's per-node maps made on the backend from node and ptr, so that no per-node field is
// uploaded: a launch over all nodes sets node_patch = node_slot = -1 (`clear`), then one over the
// listed entries q sets node_patch[node[q]] = the patch holding q (a binary search of ptr; the
// patches are not empty) and node_slot[node[q]] = q (a node is listed once: no entry is written
// twice). Bitwise the host's maps (CondBodyModes::SelectPatches)
struct BodyModeNodeMapOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;   // patches + 1
  Index patches;
  const Index* node;  // listed entries
  bool clear;         // items: all nodes (else the listed entries)
  Index* node_patch;
  Index* node_slot;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (clear) {
      node_patch[k] = -1;
      node_slot[k] = -1;
      return;
    }
    // the patch p with ptr[p] <= k < ptr[p + 1]
    Index lo = 0, hi = patches - 1;
    while (lo < hi) {
      const Index mid = lo + (hi - lo + 1) / 2;
      if (ptr[mid] <= k)
        lo = mid;
      else
        hi = mid - 1;
    }
    node_patch[node[k]] = lo;
    node_slot[node[k]] = k;
  }
};

// the record's rows of T (the listed nodes, then the halo) and the patches each reaches, made on
// the backend from the record and A's pattern (nothing of them uploaded): row q reaches the
// patches of the nodes its row of A reaches (a listed node's only within its own body), each
// once, in the order the row first reaches them. `fill` false: item q counts them into t_end[q]
// (BodyModeRowOffsetOp then places the rows); `fill` true: item q writes them to t_patch[t_ptr[q] ..)
struct BodyModeCouplingOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  Index listed, rows;
  const Index* row_ptr;  // A's block pattern
  const Index* col_idx;
  bool fill;
  Index* t_end;
  Index* t_patch;
  // the patch that entry k of A's row reaches for a row of `body` (-1: any body), or -1
  CONDSIM_HD_INLINE Index Reached(Index k, Index body) const {
    const Index p = m.node_patch[col_idx[k]];
    return p < 0 || (body >= 0 && m.patch_body[p] != body) ? -1 : p;
  }
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = q < listed ? m.node[q] : m.halo[q - listed];
    const Index body = q < listed ? m.patch_body[m.node_patch[i]] : -1;
    const Index out = fill ? m.t_ptr[q] : 0;
    Index n = 0;
    for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const Index p = Reached(k, body);
      if (p < 0) continue;
      bool seen = false;
      for (Index e = row_ptr[i]; e < k && !seen; ++e) seen = Reached(e, body) == p;
      if (seen) continue;
      if (fill) t_patch[out + n] = p;
      ++n;
    }
    if (!fill) t_end[q] = n;
  }
};

// T's rows placed in their nodes' order, so that a pass over the nodes (BodyModeApplyStepOp)
// reads T front to back: `gather`, item i of nodes + 1: offset[i] = the entry count of node i's
// row (t_end[node_row[i]] after the count; 0 for a node without a row and for item `nodes`), so an
// exclusive scan of offset gives each row its first entry; then item q of the rows: t_ptr[q] =
// offset[its node] and t_end[q] += t_ptr[q]
struct BodyModeRowOffsetOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  Index listed, nodes;
  const Index* node_row;  // BodyModeRowOp
  bool gather;
  Index* offset;  // nodes + 1
  Index* t_ptr;
  Index* t_end;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (gather) {
      const Index q = k < nodes ? node_row[k] : -1;
      offset[k] = q >= 0 ? t_end[q] : 0;
      return;
    }
    const Index i = k < listed ? m.node[k] : m.halo[k - listed];
    t_ptr[k] = offset[i];
    t_end[k] += offset[i];
  }
};

// per global node its row q of T, or -1 (BodyModeApplyStepOp), made on the backend from the
// record: a launch over the nodes (the listed ones' slots, node_slot), then one over the halo
// (row listed + h for halo node h)
struct BodyModeRowOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BodyModeView m;
  Index listed;
  bool halo;  // items: the halo nodes (else all nodes)
  Index* row;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (halo) {
      row[m.halo[k]] = listed + k;
    } else {
      row[k] = m.node_slot[k];
    }
  }
};

}  // namespace condsim
