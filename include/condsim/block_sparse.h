// Host-side block-sparse (BSR) matrices: a fixed sparsity pattern of square blocks, built once
// per topology, and a value array refreshed every step.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "condsim/core.h"

namespace condsim {

// block compressed sparse rows: block row r owns blocks row_ptr[r] .. row_ptr[r+1]-1, whose
// block columns col_idx[...] are strictly increasing. Blocks are block_dim x block_dim.
// Systems mixing 3-DOF nodes and 6-DOF bodies use block_dim 3 (a 6-DOF body is 2 block rows).
struct BlockPattern {
  Index block_dim = 3;
  Index block_rows = 0;
  Index block_cols = 0;
  std::vector<Index> row_ptr{0};
  std::vector<Index> col_idx;

  Index rows() const { return block_rows * block_dim; }
  Index cols() const { return block_cols * block_dim; }
  Index nnz_blocks() const { return static_cast<Index>(col_idx.size()); }
  Index block_size() const { return block_dim * block_dim; }
  // scalar entries stored (64-bit: can exceed the 32-bit index range)
  std::int64_t nnz() const { return std::int64_t(nnz_blocks()) * block_size(); }
  // position of block (r, c) in col_idx / the value array, or -1 when not in the pattern
  Index Find(Index r, Index c) const;
  // throws condsim::Error describing the first inconsistency
  void Validate() const;

  // pattern holding exactly the given (block row, block column) pairs; duplicates are merged
  static BlockPattern FromCoordinates(Index block_dim, Index block_rows, Index block_cols,
                                      std::vector<std::pair<Index, Index>> coords);
};

// a pattern with its values: block k occupies values[k * block_size() ...], row-major
struct BlockMatrix {
  BlockPattern pattern;
  std::vector<Scalar> values;

  BlockMatrix() = default;
  explicit BlockMatrix(BlockPattern p);

  Scalar* Block(Index k) { return values.data() + std::int64_t(k) * pattern.block_size(); }
  const Scalar* Block(Index k) const {
    return values.data() + std::int64_t(k) * pattern.block_size();
  }
  // adds a row-major block to block (r, c), which must be in the pattern
  void AddToBlock(Index r, Index c, const Scalar* block);
  // y = alpha * A x + beta * y, sequential reference (y not read when beta == 0)
  void Multiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y) const;
};

// the scalar CSR expansion of a block pattern (the CUDA backend's cuSPARSE CSR path): scalar row
// r * block_dim + i lists row i of each block of block row r, in block order; map[e] is scalar
// entry e's position in the block value array (block k's (i, j) at k * block_size() + i *
// block_dim + j). Throws condsim::Error when nnz() exceeds the 32-bit index range
struct CsrExpansion {
  std::vector<Index> row_ptr, col, map;
};
CsrExpansion ExpandToCsr(const BlockPattern& pattern);

}  // namespace condsim
