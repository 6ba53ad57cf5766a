// Block-diagonal packing of independent environments.
#include "condsim/batch.h"

#include <algorithm>
#include <cstddef>

#include "condsim/error.h"

namespace condsim {

std::vector<Index> BatchLayout::DofOffsets() const {
  std::vector<Index> dof(block_offsets.size());
  for (std::size_t e = 0; e < block_offsets.size(); ++e) dof[e] = block_offsets[e] * block_dim;
  return dof;
}

Index BatchLayout::EnvOfBlockRow(Index block_row) const {
  CONDSIM_CHECK(block_row >= 0 && block_row < total_block_rows(),
                "block row " << block_row << " is outside the batch (" << total_block_rows()
                             << " block rows)");
  const auto it = std::upper_bound(block_offsets.begin(), block_offsets.end(), block_row);
  return static_cast<Index>(it - block_offsets.begin()) - 1;
}

BatchLayout MakeBatchLayout(Index block_dim, const std::vector<Index>& env_block_rows) {
  BatchLayout layout;
  layout.block_dim = block_dim;
  std::size_t total = 0;
  for (std::size_t e = 0; e < env_block_rows.size(); ++e) {
    CONDSIM_CHECK(env_block_rows[e] >= 0,
                  "environment " << e << " has a negative size " << env_block_rows[e]);
    total += std::size_t(env_block_rows[e]);
    layout.block_offsets.push_back(CheckedIndex(total, "batch: total block rows"));
  }
  CheckedIndex(total * std::size_t(block_dim), "batch: total DOFs");
  return layout;
}

PackedBatch PackBlockDiagonal(const std::vector<BlockMatrix>& envs) {
  CONDSIM_CHECK(!envs.empty(), "a batch needs at least one environment");
  const Index bd = envs[0].pattern.block_dim;
  std::vector<Index> sizes;
  std::size_t total_blocks = 0;
  for (std::size_t e = 0; e < envs.size(); ++e) {
    const BlockPattern& p = envs[e].pattern;
    CONDSIM_CHECK(p.block_dim == bd, "environment " << e << " has block_dim " << p.block_dim
                                                    << ", environment 0 has " << bd);
    CONDSIM_CHECK(p.block_rows == p.block_cols, "environment " << e << " matrix is not square ("
                                                               << p.block_rows << " x "
                                                               << p.block_cols << " blocks)");
    CONDSIM_CHECK(envs[e].values.size() == std::size_t(p.nnz()),
                  "environment " << e << " has " << envs[e].values.size() << " values, pattern needs "
                                 << p.nnz());
    sizes.push_back(p.block_rows);
    total_blocks += p.col_idx.size();
  }
  PackedBatch out;
  out.layout = MakeBatchLayout(bd, sizes);
  BlockPattern& packed = out.matrix.pattern;
  packed.block_dim = bd;
  packed.block_rows = packed.block_cols = out.layout.total_block_rows();
  packed.row_ptr.assign(1, 0);
  packed.row_ptr.reserve(std::size_t(packed.block_rows) + 1);
  packed.col_idx.reserve(total_blocks);
  out.matrix.values.reserve(total_blocks * std::size_t(bd) * bd);
  CheckedIndex(total_blocks * std::size_t(bd) * bd, "batch: total scalar entries");
  for (std::size_t e = 0; e < envs.size(); ++e) {
    const BlockPattern& p = envs[e].pattern;
    const Index col_shift = out.layout.block_offsets[e];
    const Index ptr_shift = packed.row_ptr.back();
    for (Index r = 0; r < p.block_rows; ++r) packed.row_ptr.push_back(p.row_ptr[r + 1] + ptr_shift);
    for (Index c : p.col_idx) packed.col_idx.push_back(c + col_shift);
    out.matrix.values.insert(out.matrix.values.end(), envs[e].values.begin(),
                             envs[e].values.end());
  }
  packed.Validate();
  return out;
}

}  // namespace condsim
