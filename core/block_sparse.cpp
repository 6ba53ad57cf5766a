// Host-side block-sparse pattern and matrix.
#include "condsim/block_sparse.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "condsim/error.h"
#include "condsim/vector_ops.h"

namespace condsim {

Index BlockPattern::Find(Index r, Index c) const {
  if (r < 0 || r >= block_rows) return -1;
  return FindBlock(row_ptr.data(), col_idx.data(), r, c);
}

void BlockPattern::Validate() const {
  CONDSIM_CHECK(block_dim >= 1 && block_dim <= 8,
                "block pattern: block_dim must be in [1, 8], got " << block_dim);
  CONDSIM_CHECK(block_rows >= 0 && block_cols >= 0,
                "block pattern: negative size " << block_rows << " x " << block_cols);
  CheckedIndex(std::size_t(block_rows) * block_dim, "block pattern: scalar rows");
  CheckedIndex(std::size_t(block_cols) * block_dim, "block pattern: scalar columns");
  CONDSIM_CHECK(row_ptr.size() == std::size_t(block_rows) + 1,
                "block pattern: row_ptr has " << row_ptr.size() << " entries, expected "
                                              << block_rows + 1);
  CONDSIM_CHECK(row_ptr[0] == 0, "block pattern: row_ptr[0] must be 0, got " << row_ptr[0]);
  CONDSIM_CHECK(std::size_t(row_ptr.back()) == col_idx.size(),
                "block pattern: row_ptr ends at " << row_ptr.back() << " but col_idx has "
                                                  << col_idx.size() << " entries");
  for (Index r = 0; r < block_rows; ++r) {
    CONDSIM_CHECK(row_ptr[r] <= row_ptr[r + 1],
                  "block pattern: row_ptr decreases at block row " << r);
    for (Index k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
      CONDSIM_CHECK(col_idx[k] >= 0 && col_idx[k] < block_cols,
                    "block pattern: block (" << r << ", " << col_idx[k]
                                             << ") is outside the " << block_rows << " x "
                                             << block_cols << " block grid");
      CONDSIM_CHECK(k == row_ptr[r] || col_idx[k - 1] < col_idx[k],
                    "block pattern: block columns of block row "
                        << r << " are not strictly increasing at position " << k);
    }
  }
}

BlockPattern BlockPattern::FromCoordinates(Index block_dim, Index block_rows, Index block_cols,
                                           std::vector<std::pair<Index, Index>> coords) {
  BlockPattern p;
  p.block_dim = block_dim;
  p.block_rows = block_rows;
  p.block_cols = block_cols;
  for (const auto& [r, c] : coords) {
    CONDSIM_CHECK(r >= 0 && r < block_rows && c >= 0 && c < block_cols,
                  "block pattern: coordinate (" << r << ", " << c << ") is outside the "
                                                << block_rows << " x " << block_cols
                                                << " block grid");
  }
  std::sort(coords.begin(), coords.end());
  coords.erase(std::unique(coords.begin(), coords.end()), coords.end());
  CheckedIndex(coords.size(), "block pattern: number of blocks");
  CheckedIndex(coords.size() * std::size_t(block_dim) * block_dim,
               "block pattern: number of scalar entries");
  p.row_ptr.assign(std::size_t(block_rows) + 1, 0);
  p.col_idx.reserve(coords.size());
  for (const auto& [r, c] : coords) {
    ++p.row_ptr[r + 1];
    p.col_idx.push_back(c);
  }
  for (Index r = 0; r < block_rows; ++r) p.row_ptr[r + 1] += p.row_ptr[r];
  p.Validate();
  return p;
}

BlockMatrix::BlockMatrix(BlockPattern p) : pattern(std::move(p)) {
  pattern.Validate();
  values.assign(static_cast<std::size_t>(pattern.nnz()), Scalar(0));
}

void BlockMatrix::AddToBlock(Index r, Index c, const Scalar* block) {
  const Index k = pattern.Find(r, c);
  CONDSIM_CHECK(k >= 0, "block (" << r << ", " << c << ") is not in the matrix pattern");
  Scalar* dst = Block(k);
  for (Index i = 0; i < pattern.block_size(); ++i) dst[i] += block[i];
}

void BlockMatrix::Multiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y) const {
  const BsrRowSpmvOp op{pattern.block_dim, pattern.row_ptr.data(), pattern.col_idx.data(),
                        values.data(), alpha, x, beta, y};
  for (Index r = 0; r < pattern.block_rows; ++r) op(r);
}

CsrExpansion ExpandToCsr(const BlockPattern& pattern) {
  const std::int64_t nnz = pattern.nnz();
  CONDSIM_CHECK(nnz <= INT32_MAX, "SpMV format csr: " << nnz << " scalar entries exceed the 32-bit index range; use bsr");
  const Index bd = pattern.block_dim;
  CsrExpansion out;
  out.row_ptr.assign(std::size_t(pattern.rows()) + 1, 0);
  out.col.reserve(std::size_t(nnz));
  out.map.reserve(std::size_t(nnz));
  for (Index r = 0; r < pattern.block_rows; ++r) {
    for (Index i = 0; i < bd; ++i) {
      for (Index k = pattern.row_ptr[r]; k < pattern.row_ptr[r + 1]; ++k) {
        for (Index j = 0; j < bd; ++j) {
          out.col.push_back(pattern.col_idx[k] * bd + j);
          out.map.push_back(k * bd * bd + i * bd + j);
        }
      }
      out.row_ptr[std::size_t(r) * bd + i + 1] = static_cast<Index>(out.col.size());
    }
  }
  return out;
}

}  // namespace condsim
