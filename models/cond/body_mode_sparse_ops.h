// COND body modes, the sparse coarse solve on the backend (docs/solver.md "Sparse coarse solve"):
// a body of many patches has S + shift I = L L^T factorized on the host in a patch order that
// keeps fill low; the factor's 6x6 blocks and its level schedule go up once per factorization,
// and each iteration solves dv = -D^-1/2 (L L^T)^-1 D^-1/2 g on the backend (BodyModeSparseSolveOp).
// Shared by both backends.
#pragma once

#include "condsim/core.h"
#include "condsim/record.h"

namespace condsim {

// the factors of a solve's sparse bodies, concatenated; "row" is a factor row (one patch, six
// scalar rows), in factor order within its body
#define CONDSIM_BODY_MODE_FACTOR_FIELDS(X)                                                          \
  X(Index, body)    /* 7 per sparse body: first and end row, first and end forward level, first */  \
                    /* and end backward level, and 1 when factorized (0: no correction) */          \
  X(Index, patch)   /* per row: the patch of this solve it solves (rows 6 patch .. of g and dv) */  \
  X(Index, row_ptr) /* per row + 1: its blocks left of the diagonal, L_kc = val[36 e], e from */    \
  X(Index, row_col) /*   row_ptr[k] to row_ptr[k+1), c = row_col[e] */                              \
  X(Index, col_ptr) /* per row + 1: the blocks below the diagonal in its column, L_ck = */          \
  X(Index, col_row) /*   val[36 col_blk[e]], c = col_row[e] */                                      \
  X(Index, col_blk)                                                                                 \
  X(Index, fwd_ptr) /* per forward level + 1: its rows fwd_row[fwd_ptr[l] .. fwd_ptr[l+1]), */      \
  X(Index, fwd_row) /*   each needing rows of earlier levels only */                                \
  X(Index, bwd_ptr) /* the same for the backward solve (L^T) */                                     \
  X(Index, bwd_row)                                                                                 \
  X(Scalar, scale)  /* 6 per row: D^-1/2 */                                                         \
  X(Scalar, diag)   /* 36 per row: L_kk^-1 (row-major, lower triangular) */                         \
  X(Scalar, val)    /* 36 per block left of the diagonal (row-major) */
CONDSIM_RECORD_VIEW(BodyModeFactorView, CONDSIM_BODY_MODE_FACTOR_FIELDS)

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
  const Scalar* g;  // 6 per patch of the solve
  Scalar* y;        // 6 per row
  Scalar* dv;       // 6 per patch of the solve
  CONDSIM_HD_INLINE int ItemPhases(Index b) const {
    const Index* rec = f.body + 7 * std::int64_t(b);
    return int(2 + (rec[3] - rec[2]) + (rec[5] - rec[4]));
  }
  CONDSIM_HD_INLINE void Lane(Index b, int lane, int phase) const { Rows(b, lane, kLanes, phase); }
  // one phase for the phase's entries lane0, lane0 + stride, ... (the host: all in one call)
  CONDSIM_HD_INLINE void Rows(Index b, Index lane0, Index stride, int phase) const {
    const Index* rec = f.body + 7 * std::int64_t(b);
    const Index forward = rec[3] - rec[2], backward = rec[5] - rec[4];
    if (phase == 0) {
      if (!rec[6]) return;
      for (Index k = rec[0] + lane0; k < rec[1]; k += stride)
        for (int d = 0; d < 6; ++d) y[6 * std::int64_t(k) + d] = f.scale[6 * std::int64_t(k) + d] * g[6 * std::int64_t(f.patch[k]) + d];
    } else if (phase <= forward + backward) {
      const bool back = phase > forward;
      const Index level = back ? rec[4] + phase - 1 - forward : rec[2] + phase - 1;
      const Index* ptr = back ? f.bwd_ptr : f.fwd_ptr;
      const Index* rows = back ? f.bwd_row : f.fwd_row;
      for (Index t = ptr[level] + lane0; t < ptr[level + 1]; t += stride) SolveRow(rows[t], back);
    } else {
      for (Index k = rec[0] + lane0; k < rec[1]; k += stride)
        for (int d = 0; d < 6; ++d)
          dv[6 * std::int64_t(f.patch[k]) + d] = rec[6] ? -f.scale[6 * std::int64_t(k) + d] * y[6 * std::int64_t(k) + d] : Scalar(0);
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
      const Scalar* l = f.val + 36 * std::int64_t(back ? f.col_blk[e] : e);
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
    const Scalar* inv = f.diag + 36 * std::int64_t(k);
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
