// Reference linear algebra for tests: a backend block matrix as an Eigen sparse matrix, and a
// sparse direct solve (Eigen SimplicialLDLT) of A x = b.
#pragma once

#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <vector>

#include "condsim/backend.h"

namespace condsim::test {

inline Eigen::SparseMatrix<double> ToEigenSparse(const DeviceBlockMatrix& a) {
  const BlockPattern& p = a.pattern();
  const std::vector<Scalar> vals = a.values().ToHost();
  const Index bd = p.block_dim;
  std::vector<Eigen::Triplet<double>> t;
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
      for (Index i = 0; i < bd; ++i)
        for (Index j = 0; j < bd; ++j)
          t.emplace_back(bd * r + i, bd * p.col_idx[k] + j, vals[std::size_t(k) * bd * bd + std::size_t(i) * bd + j]);
  Eigen::SparseMatrix<double> s(p.rows(), p.cols());
  s.setFromTriplets(t.begin(), t.end());
  return s;
}

inline std::vector<Scalar> SparseSolve(const DeviceBlockMatrix& a, const Array<Scalar>& b) {
  const std::vector<Scalar> hb = b.ToHost();
  const Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(ToEigenSparse(a));
  const Eigen::VectorXd x = ldlt.solve(Eigen::Map<const Eigen::VectorXd>(hb.data(), hb.size()));
  return std::vector<Scalar>(x.data(), x.data() + x.size());
}

}  // namespace condsim::test
