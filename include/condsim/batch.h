// Batched worlds: N independent environments packed into one block-diagonal system, so one
// SpMV and one vector op advance all of them. Environment e owns the contiguous block rows
// [block_offsets[e], block_offsets[e+1]).
#pragma once

#include <vector>

#include "condsim/block_sparse.h"
#include "condsim/core.h"

namespace condsim {

struct BatchLayout {
  Index block_dim = 3;
  std::vector<Index> block_offsets{0};  // num_envs() + 1 entries

  Index num_envs() const { return static_cast<Index>(block_offsets.size()) - 1; }
  Index total_block_rows() const { return block_offsets.back(); }
  // DOF (scalar row) offsets: segments for per-environment reductions
  std::vector<Index> DofOffsets() const;
  // environment that owns a block row (binary search)
  Index EnvOfBlockRow(Index block_row) const;
};

// layout for environments with the given numbers of block rows
BatchLayout MakeBatchLayout(Index block_dim, const std::vector<Index>& env_block_rows);

// block-diagonal packing of square per-environment matrices (same block_dim): pattern, values
// and layout. Environment e's blocks keep their order and follow those of e-1.
struct PackedBatch {
  BatchLayout layout;
  BlockMatrix matrix;
};
PackedBatch PackBlockDiagonal(const std::vector<BlockMatrix>& envs);

}  // namespace condsim
