// Per-element functors of the backend primitives. Both backends run exactly these with their
// ParallelFor, so CPU and CUDA perform the same arithmetic in the same order.
#pragma once

#include <cstdint>

#include "condsim/core.h"

namespace condsim {

// max of |values| that propagates NaN: any NaN operand gives NaN (divergence must be seen)
CONDSIM_HD_INLINE Scalar NanMax(Scalar a, Scalar b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

struct FillOp {
  Scalar value;
  Scalar* y;
  CONDSIM_HD_INLINE void operator()(Index i) const { y[i] = value; }
};

// y = a x + b y; y is not read when b == 0 (BLAS convention, so stale NaN never leaks in)
struct AxpbyOp {
  Scalar a;
  const Scalar* x;
  Scalar b;
  Scalar* y;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    y[i] = b == Scalar(0) ? a * x[i] : a * x[i] + b * y[i];
  }
};

// z = x .* y (element-wise), e.g. applying a diagonal step matrix W
struct MultiplyOp {
  const Scalar* x;
  const Scalar* y;
  Scalar* z;
  CONDSIM_HD_INLINE void operator()(Index i) const { z[i] = x[i] * y[i]; }
};

// one block row of y = alpha A x + beta y for a BSR matrix: blocks in pattern order, each
// block's entries left to right; y is not read when beta == 0
struct BsrRowSpmvOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  Index block_dim;
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar alpha;
  const Scalar* x;
  Scalar beta;
  Scalar* y;
  const unsigned char* row_active = nullptr;  // null: every block row; else rows flagged 0 are skipped

  CONDSIM_HD_INLINE void operator()(Index block_row) const {
    if (row_active != nullptr && row_active[block_row] == 0) return;
    const std::int64_t bs = std::int64_t(block_dim) * block_dim;
    for (Index i = 0; i < block_dim; ++i) {
      Scalar sum = 0;
      for (Index k = row_ptr[block_row]; k < row_ptr[block_row + 1]; ++k) {
        const Scalar* a = values + k * bs + std::int64_t(i) * block_dim;
        const Scalar* xb = x + std::int64_t(col_idx[k]) * block_dim;
        for (Index j = 0; j < block_dim; ++j) sum += a[j] * xb[j];
      }
      const std::int64_t r = std::int64_t(block_row) * block_dim + i;
      y[r] = beta == Scalar(0) ? alpha * sum : alpha * sum + beta * y[r];
    }
  }
};

}  // namespace condsim
