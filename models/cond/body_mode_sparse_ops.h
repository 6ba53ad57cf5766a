// COND body modes, the sparse coarse solve on the backend (docs/solver.md "Sparse coarse solve"):
// a body of many patches has S + shift I = L L^T, S = D^-1/2 sym(A_c) D^-1/2, in a patch order
// that keeps fill low. The host orders the patches and finds L's 6x6 block pattern and level
// schedule once per block pattern of A_c; the backend factorizes from A_c's blocks
// (BodyModeSparseFactorOp, when the body's coarse matrix is due) and solves each iteration
// (BodyModeSparseSolveOp). Shared by both backends.
#pragma once

#include <cmath>

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"

namespace condsim {

// the factors' structure for a solve's sparse bodies, concatenated; "row" is a factor row (one
// patch, six scalar rows) in factor order within its body, a "block" a 6x6 block of L left of
// the diagonal, numbered row by row (within a row by column)
#define CONDSIM_BODY_MODE_FACTOR_FIELDS(X)                                                          \
  X(Index, body)    /* 6 per sparse body: first and end row, first and end forward level, first */  \
                    /* and end backward level */                                                    \
  X(Index, patch)   /* per row: the patch of this solve it solves (rows 6 patch .. of g and dv) */  \
  X(Index, row_ptr) /* per row + 1: its blocks e = row_ptr[k] .. row_ptr[k+1), L_kc with */         \
  X(Index, row_col) /*   c = row_col[e], ascending */                                               \
  X(Index, col_ptr) /* per row + 1: the blocks below the diagonal in its column, entries t: */      \
  X(Index, col_row) /*   L_rk with r = col_row[t], block col_blk[t] */                              \
  X(Index, col_blk)                                                                                 \
  X(Index, fwd_ptr) /* per forward level + 1: its rows fwd_row[fwd_ptr[l] .. fwd_ptr[l+1]), */      \
  X(Index, fwd_row) /*   each reading rows of earlier levels only (its row of L's columns) */       \
  X(Index, bwd_ptr) /* the same for the backward solve (L^T: the rows below in its column) */       \
  X(Index, bwd_row)                                                                                 \
  X(Index, fac_ptr) /* per forward level + 1: the column entries t of its rows (the blocks */       \
  X(Index, fac_ent) /*   the factorization makes at that level), with their column col_of[t] */    \
  X(Index, col_of)                                                                                  \
  X(Index, a_blk)   /* per block of L at (r, c): A_c's block at (r, c) in the body's original */    \
  X(Index, a_blk_t) /*   patch order, and the one at (c, r); -1: none (fill) */                     \
  X(Index, a_diag)  /* per row: A_c's diagonal block of its patch */
CONDSIM_RECORD_VIEW(BodyModeFactorView, CONDSIM_BODY_MODE_FACTOR_FIELDS)

// the factors' numbers, made on the backend
struct BodyModeFactorValues {
  Scalar* scale;       // 6 per row: D^-1/2
  Scalar* diag;        // 36 per row: L_kk^-1 (row-major, lower triangular)
  Scalar* val;         // 36 per block (row-major)
  unsigned char* ok;   // per sparse body: A_c's diagonal positive and L L^T made (0: no correction)
};

// one sparse body (`body`, its position in the record) factorized from A_c's blocks `a` (36 per
// block of its block pattern, row-major), left-looking by the forward levels on kLanes lanes:
// phase 0 sets ok, phase 1 D^-1/2 from A_c's diagonal; per level, phase A: per row k of the
// level L_kk = chol(S_kk + shift I - sum_c L_kc L_kc^T) and its inverse; phase B: per block
// (r, k) below those rows L_rk = (S_rk - sum_c L_rc L_kc^T) L_kk^-T (c over the columns of both
// rows). Every block's sums run in one lane in a fixed order: any lane order gives the same bits.
// A non-positive or non-finite pivot clears ok
struct BodyModeSparseFactorOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = 256;
  static constexpr bool kItemPhases = true;  // ItemPhases (condsim/lanes.h)
  BodyModeFactorView f;
  BodyModeFactorValues out;
  const Scalar* a;  // this body's A_c blocks
  Index body;       // the body (the launch has one item)
  Scalar shift;     // 1e-10 (kPatchRegularization)
  CONDSIM_HD_INLINE int ItemPhases(Index) const {
    const Index* rec = f.body + 6 * std::int64_t(body);
    return int(2 + 2 * (rec[3] - rec[2]));
  }
  CONDSIM_HD_INLINE void Lane(Index, int lane, int phase) const { Rows(lane, kLanes, phase); }
  // S's entry (i, j) of the block at (r, c) (factor rows; A_c blocks ab at (r, c), abt at (c, r))
  CONDSIM_HD_INLINE Scalar S(Index r, Index c, Index ab, Index abt, int i, int j) const {
    const Scalar x = ab >= 0 ? a[36 * std::int64_t(ab) + 6 * i + j] : Scalar(0);
    const Scalar xt = abt >= 0 ? a[36 * std::int64_t(abt) + 6 * j + i] : Scalar(0);
    return out.scale[6 * std::int64_t(r) + i] * (Scalar(0.5) * (x + xt)) * out.scale[6 * std::int64_t(c) + j];
  }
  // one phase for its entries lane0, lane0 + stride, ... (the host: all in one call)
  CONDSIM_HD_INLINE void Rows(Index lane0, Index stride, int phase) const {
    const Index* rec = f.body + 6 * std::int64_t(body);
    if (phase == 0) {
      if (lane0 == 0) out.ok[body] = 1;
      return;
    }
    if (phase == 1) {
      for (Index k = rec[0] + lane0; k < rec[1]; k += stride)
        for (int d = 0; d < 6; ++d) {
          const Scalar x = a[36 * std::int64_t(f.a_diag[k]) + 7 * d];
          if (!(x > 0) || !IsFinite(x)) {
            out.ok[body] = 0;
            out.scale[6 * std::int64_t(k) + d] = 0;
          } else {
            out.scale[6 * std::int64_t(k) + d] = 1 / std::sqrt(x);
          }
        }
      return;
    }
    const Index level = rec[2] + (phase - 2) / 2;
    if ((phase - 2) % 2 == 0) {
      for (Index t = f.fwd_ptr[level] + lane0; t < f.fwd_ptr[level + 1]; t += stride) Pivot(f.fwd_row[t], body);
    } else {
      for (Index t = f.fac_ptr[level] + lane0; t < f.fac_ptr[level + 1]; t += stride) Below(f.fac_ent[t]);
    }
  }
  // L_kk and its inverse
  CONDSIM_HD_INLINE void Pivot(Index k, Index b) const {
    Scalar l[36];
    const Index ad = f.a_diag[k];
    CONDSIM_UNROLL
    for (int i = 0; i < 6; ++i) {
      CONDSIM_UNROLL
      for (int j = 0; j <= i; ++j) l[6 * i + j] = S(k, k, ad, ad, i, j) + (i == j ? shift : Scalar(0));
    }
    for (Index e = f.row_ptr[k]; e < f.row_ptr[k + 1]; ++e) {
      const Scalar* x = out.val + 36 * std::int64_t(e);
      CONDSIM_UNROLL
      for (int i = 0; i < 6; ++i) {
        CONDSIM_UNROLL
        for (int j = 0; j <= i; ++j) {
          CONDSIM_UNROLL
          for (int t = 0; t < 6; ++t) l[6 * i + j] -= x[6 * i + t] * x[6 * j + t];
        }
      }
    }
    // the 6x6 Cholesky in place (lower), then its inverse by columns
    bool good = true;
    CONDSIM_UNROLL
    for (int j = 0; j < 6; ++j) {
      Scalar p = l[6 * j + j];
      CONDSIM_UNROLL
      for (int t = 0; t < j; ++t) p -= l[6 * j + t] * l[6 * j + t];
      if (!(p > 0) || !IsFinite(p)) {
        good = false;
        p = 1;
      }
      const Scalar d = std::sqrt(p);
      l[6 * j + j] = d;
      CONDSIM_UNROLL
      for (int i = j + 1; i < 6; ++i) {
        Scalar s = l[6 * i + j];
        CONDSIM_UNROLL
        for (int t = 0; t < j; ++t) s -= l[6 * i + t] * l[6 * j + t];
        l[6 * i + j] = s / d;
      }
    }
    if (!good) out.ok[b] = 0;
    Scalar* x = out.diag + 36 * std::int64_t(k);
    CONDSIM_UNROLL
    for (int i = 0; i < 6; ++i) {
      CONDSIM_UNROLL
      for (int j = 0; j < 6; ++j) x[6 * i + j] = 0;
    }
    CONDSIM_UNROLL
    for (int j = 0; j < 6; ++j) {
      x[6 * j + j] = 1 / l[6 * j + j];
      CONDSIM_UNROLL
      for (int i = j + 1; i < 6; ++i) {
        Scalar s = 0;
        CONDSIM_UNROLL
        for (int t = j; t < i; ++t) s += l[6 * i + t] * x[6 * t + j];
        x[6 * i + j] = -s / l[6 * i + i];
      }
    }
  }
  // L_rk for column entry t (r = col_row[t], k = col_of[t])
  CONDSIM_HD_INLINE void Below(Index t) const {
    const Index r = f.col_row[t], k = f.col_of[t], e = f.col_blk[t];
    Scalar s[36];
    CONDSIM_UNROLL
    for (int i = 0; i < 6; ++i) {
      CONDSIM_UNROLL
      for (int j = 0; j < 6; ++j) s[6 * i + j] = S(r, k, f.a_blk[e], f.a_blk_t[e], i, j);
    }
    // c over the columns of both rows (each row's blocks ascend by column; row k's are all < k)
    Index er = f.row_ptr[r], ek = f.row_ptr[k];
    const Index er1 = f.row_ptr[r + 1], ek1 = f.row_ptr[k + 1];
    while (er < er1 && ek < ek1) {
      const Index cr = f.row_col[er], ck = f.row_col[ek];
      if (cr < ck) {
        ++er;
      } else if (ck < cr) {
        ++ek;
      } else {
        const Scalar* lr = out.val + 36 * std::int64_t(er);
        const Scalar* lk = out.val + 36 * std::int64_t(ek);
        CONDSIM_UNROLL
        for (int i = 0; i < 6; ++i) {
          CONDSIM_UNROLL
          for (int j = 0; j < 6; ++j) {
            CONDSIM_UNROLL
            for (int c = 0; c < 6; ++c) s[6 * i + j] -= lr[6 * i + c] * lk[6 * j + c];
          }
        }
        ++er;
        ++ek;
      }
    }
    // L_rk = s L_kk^-T: (L_kk^-1 lower) entry (i, j) = sum_{c <= j} s_ic inv_jc
    const Scalar* inv = out.diag + 36 * std::int64_t(k);
    Scalar* l = out.val + 36 * std::int64_t(e);
    CONDSIM_UNROLL
    for (int i = 0; i < 6; ++i) {
      CONDSIM_UNROLL
      for (int j = 0; j < 6; ++j) {
        Scalar x = 0;
        CONDSIM_UNROLL
        for (int c = 0; c <= j; ++c) x += s[6 * i + c] * inv[6 * j + c];
        l[6 * i + j] = x;
      }
    }
  }
  CONDSIM_HD_INLINE void operator()(Index) const {
    const int phases = ItemPhases(0);
    for (int phase = 0; phase < phases; ++phase) Rows(0, 1, phase);
  }
};

// per sparse body: dv = -D^-1/2 L^-T L^-1 D^-1/2 g over its patches, on kLanes lanes: phase 0
// gathers y = D^-1/2 g in factor order, one phase per forward level (y_k = L_kk^-1 (y_k - sum_c
// L_kc y_c)), one per backward level (y_k = L_kk^-T (y_k - sum_c L_ck^T y_c)), the last scatters
// dv. A row's sums run in one lane in a fixed order, so any lane order gives the same bits. A body
// whose factorization failed gets dv = 0; a stopped environment's g is 0, so its dv too
struct BodyModeSparseSolveOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = 256;
  static constexpr bool kItemPhases = true;  // ItemPhases (condsim/lanes.h)
  BodyModeFactorView f;
  BodyModeFactorValues v;  // read only
  const Scalar* g;  // 6 per patch of the solve
  Scalar* y;        // 6 per row
  Scalar* dv;       // 6 per patch of the solve
  CONDSIM_HD_INLINE int ItemPhases(Index b) const {
    const Index* rec = f.body + 6 * std::int64_t(b);
    return int(2 + (rec[3] - rec[2]) + (rec[5] - rec[4]));
  }
  CONDSIM_HD_INLINE void Lane(Index b, int lane, int phase) const { Rows(b, lane, kLanes, phase); }
  // one phase for the phase's entries lane0, lane0 + stride, ... (the host: all in one call)
  CONDSIM_HD_INLINE void Rows(Index b, Index lane0, Index stride, int phase) const {
    const Index* rec = f.body + 6 * std::int64_t(b);
    const Index forward = rec[3] - rec[2], backward = rec[5] - rec[4];
    if (phase == 0) {
      if (!v.ok[b]) return;
      for (Index k = rec[0] + lane0; k < rec[1]; k += stride)
        for (int d = 0; d < 6; ++d) y[6 * std::int64_t(k) + d] = v.scale[6 * std::int64_t(k) + d] * g[6 * std::int64_t(f.patch[k]) + d];
    } else if (phase <= forward + backward) {
      if (!v.ok[b]) return;
      const bool back = phase > forward;
      const Index level = back ? rec[4] + phase - 1 - forward : rec[2] + phase - 1;
      const Index* ptr = back ? f.bwd_ptr : f.fwd_ptr;
      const Index* rows = back ? f.bwd_row : f.fwd_row;
      for (Index t = ptr[level] + lane0; t < ptr[level + 1]; t += stride) SolveRow(rows[t], back);
    } else {
      for (Index k = rec[0] + lane0; k < rec[1]; k += stride)
        for (int d = 0; d < 6; ++d)
          dv[6 * std::int64_t(f.patch[k]) + d] = v.ok[b] ? -v.scale[6 * std::int64_t(k) + d] * y[6 * std::int64_t(k) + d] : Scalar(0);
    }
  }
  // row k of the forward solve (y_k = L_kk^-1 (y_k - sum_c L_kc y_c)) or of the backward one
  // (y_k = L_kk^-T (y_k - sum_c L_ck^T y_c))
  CONDSIM_HD_INLINE void SolveRow(Index k, bool back) const {
    Scalar acc[6];
    CONDSIM_UNROLL
    for (int d = 0; d < 6; ++d) acc[d] = y[6 * std::int64_t(k) + d];
    const Index e0 = back ? f.col_ptr[k] : f.row_ptr[k], e1 = back ? f.col_ptr[k + 1] : f.row_ptr[k + 1];
    for (Index e = e0; e < e1; ++e) {
      const Scalar* l = v.val + 36 * std::int64_t(back ? f.col_blk[e] : e);
      const Scalar* yc = y + 6 * std::int64_t(back ? f.col_row[e] : f.row_col[e]);
      CONDSIM_UNROLL
      for (int i = 0; i < 6; ++i) {
        CONDSIM_UNROLL
        for (int j = 0; j < 6; ++j) {
          if (back) acc[j] -= l[6 * i + j] * yc[i];
          else acc[i] -= l[6 * i + j] * yc[j];
        }
      }
    }
    // L_kk^-1 is lower triangular: its transpose upper
    const Scalar* inv = v.diag + 36 * std::int64_t(k);
    CONDSIM_UNROLL
    for (int i = 0; i < 6; ++i) {
      Scalar s = 0;
      CONDSIM_UNROLL
      for (int j = 0; j < 6; ++j)
        if (back ? j >= i : j <= i) s += (back ? inv[6 * j + i] : inv[6 * i + j]) * acc[j];
      y[6 * std::int64_t(k) + i] = s;
    }
  }
  CONDSIM_HD_INLINE void operator()(Index b) const {
    const int phases = ItemPhases(b);
    for (int phase = 0; phase < phases; ++phase) Rows(b, 0, 1, phase);
  }
};

}  // namespace condsim
