// Test helper: a block-sparse matrix as a dense Eigen matrix (the reference products and solves).
#pragma once

#include <Eigen/Dense>

#include "condsim/block_sparse.h"

namespace condsim {

inline Eigen::MatrixXd DenseOf(const BlockMatrix& a) {
  const BlockPattern& p = a.pattern;
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(p.rows(), p.cols());
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
      for (Index i = 0; i < p.block_dim; ++i)
        for (Index j = 0; j < p.block_dim; ++j)
          d(r * p.block_dim + i, p.col_idx[k] * p.block_dim + j) = a.Block(k)[i * p.block_dim + j];
  return d;
}

}  // namespace condsim
