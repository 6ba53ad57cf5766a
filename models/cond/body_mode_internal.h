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

// a sparse body's A_c = D^1/2 (S + shift I) D^1/2 with S = D^-1/2 sym(A_c) D^-1/2 as BodyModeInvertOp
// scales it: S + shift I = L L^T (Eigen's simplicial Cholesky, AMD ordering), its symbolic analysis
// kept while the body's block pattern stays
struct CondBodyModes::SparseCoarse {
  Eigen::SimplicialLLT<Eigen::SparseMatrix<Scalar>, Eigen::Lower, Eigen::AMDOrdering<int>> llt;
  std::vector<Index> ptr, col;  // the block pattern analyzed (patches of the body from 0)
  std::vector<Scalar> scale;    // D^-1/2 per coarse row
  bool ok = false;              // A_c positive definite: otherwise no correction
};
}  // namespace condsim
