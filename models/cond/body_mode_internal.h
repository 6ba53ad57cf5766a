// What the body-mode sources share (cond_body_modes.cpp, body_mode_sparse.cpp,
// body_mode_truncated.cpp): the constants of the patches and truncated modes, and a sparse body's
// factor (docs/solver.md "Sparse coarse solve").
#pragma once

#include <vector>

#include <Eigen/SparseCholesky>

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

// a sparse body's factor: S + shift I = L L^T with S = D^-1/2 sym(A_c) D^-1/2 scaled and shifted as
// BodyModeInvertOp does it, its patches ordered by AMD on the block pattern (Eigen's simplicial
// Cholesky in that order), L by 6x6 blocks with its level schedule (BodyModeFactorView's fields of
// one body, rows from 0). The ordering and symbolic analysis are kept while the block pattern stays
struct SparseCoarseFactor {
  Eigen::SimplicialLLT<Eigen::SparseMatrix<Scalar>, Eigen::Lower, Eigen::NaturalOrdering<int>> llt;
  std::vector<Index> ptr, col;  // the block pattern analyzed (patches of the body from 0)
  std::vector<Index> order;     // factor row k solves the body's patch order[k]
  std::vector<Index> row_ptr, row_col, col_ptr, col_row, col_blk, fwd_ptr, fwd_row, bwd_ptr, bwd_row;
  std::vector<Scalar> scale, diag, val;  // scale: D^-1/2 in factor order
  bool ok = false;                       // A_c positive definite: otherwise no correction
};

// factorizes the A_c of m patches given by its blocks (ptr, col: the block pattern, sorted columns;
// values: 36 per block, row-major) into f (f->ok false when A_c is not positive definite)
void FactorCoarseBlocks(Index m, const std::vector<Index>& ptr, const std::vector<Index>& col, const std::vector<Scalar>& values,
                        SparseCoarseFactor* f);
// appends f, the factor of patches p0 .. p0 + m of a solve, to the concatenated record (a null or
// failed factor: rows that set dv = 0)
void AppendCoarseFactor(const SparseCoarseFactor* f, Index p0, Index m, BodyModeFactorHost* host);
}  // namespace condsim
