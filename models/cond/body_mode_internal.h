// What the body-mode sources share (cond_body_modes.cpp, body_mode_sparse.cpp,
// body_mode_truncated.cpp): the constants of the patches and truncated modes, and a sparse body's
// factor (docs/solver.md "Sparse coarse solve").
#pragma once

#include <vector>

#include "models/cond/cond_body_modes.h"

namespace condsim {
// a patch needs 4 listed nodes (fewer: its rotations are degenerate)
inline constexpr Index kMinPatchNodes = 4;
inline constexpr double kPatchRegularization = 1e-10;
// truncated modes (measured on the refined soft mats, docs/notes/solver-experiments.md): the
// first refresh, the period of the later ones, the fewest iterations between two, the step cut
// (alpha) below which the next iteration refreshes, and the least slack of an admitted contact
// in units of theta_th
inline constexpr int kFirstRefresh = 8;
inline constexpr int kRefreshEvery = 32;
inline constexpr int kRefreshGap = 4;
inline constexpr Scalar kRefreshAlpha = 0.5;
inline constexpr double kSlackFactor = 30;
// whether iteration l re-chooses the listed nodes on schedule: l = 8, 40, 72, ... (every 32), or
// with gaps doubling, l = 8, 40, 104, 232, ... (ChebyshevSafeguard::kRate: a refresh that changes
// the set restarts the semi-iteration, whose transient that rule lets run longer than 32)
inline bool PeriodicRefresh(int l, bool doubling) {
  if (l < kFirstRefresh || (l - kFirstRefresh) % kRefreshEvery != 0) return false;
  const int k = (l - kFirstRefresh) / kRefreshEvery + 1;
  return !doubling || (k & (k - 1)) == 0;
}

// a sparse body's coarse factor: the patch order (AMD on A_c's block pattern) and L's block
// structure with its level schedules (BodyModeFactorView's fields of one body, rows from 0), made
// on the host once per block pattern; A_c's blocks of the body's last refresh and that pattern on
// the backend (the factor is made from them there: BodyModeSparseFactorOp)
struct SparseCoarseFactor {
  std::vector<Index> ptr, col;  // A_c's block pattern analyzed (patches of the body from 0)
  std::vector<Index> order;     // factor row k solves the body's patch order[k]
  std::vector<Index> row_ptr, row_col, col_ptr, col_row, col_blk, fwd_ptr, fwd_row, bwd_ptr, bwd_row, fac_ptr, fac_ent, col_of,
      a_blk, a_blk_t, a_diag;
  Array<Index> c_ptr, c_col;  // ptr and col on the backend (BodyModeSparseMatrixOp)
  Array<Scalar> blocks;       // A_c's blocks (36 per block of col)
};

// the order and L's structure for the A_c of m patches with block pattern (ptr, col: sorted
// columns, the diagonal present) into f (its host fields)
void AnalyzeCoarseBlocks(Index m, const std::vector<Index>& ptr, const std::vector<Index>& col, SparseCoarseFactor* f);
// appends f's structure, the patches p0 .. p0 + m of a solve, to the concatenated record
void AppendCoarseFactor(const SparseCoarseFactor& f, Index p0, BodyModeFactorHost* host);
}  // namespace condsim
