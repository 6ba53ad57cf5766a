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

// how far ahead of the block being read the fixed-size SpMV prefetches A's values [Scalars]
constexpr std::int64_t kSpmvPrefetchScalars = 1024;

// sum[i] += (block k of a BSR matrix with compile-time block size B) times x's block, row i's
// entries left to right into its own accumulator
template <int B>
CONDSIM_HD_INLINE void BsrBlockAccumulate(const Index* col_idx, const Scalar* values, const Scalar* x, Index k,
                                          Scalar* sum) {
  const Scalar* a = values + std::int64_t(k) * (B * B);
  const Scalar* xb = x + std::int64_t(col_idx[k]) * B;
  Scalar xv[B];
  for (int j = 0; j < B; ++j) xv[j] = xb[j];
  for (int i = 0; i < B; ++i)
    for (int j = 0; j < B; ++j) sum[i] += a[i * B + j] * xv[j];
}

// the sums of one block row of A x for a BSR matrix with a compile-time block size B: per row
// i, sum_i = sum over the row's blocks in pattern order, each block's entries left to right,
// folded into one accumulator from 0 (the same order as BsrRowSpmvOp's runtime loop, so the
// result is bitwise identical); the B rows run side by side, x's block loaded once per block
template <int B>
CONDSIM_HD_INLINE void BsrBlockRowSums(const Index* row_ptr, const Index* col_idx, const Scalar* values,
                                       const Scalar* x, Index block_row, Scalar* sum) {
  for (int i = 0; i < B; ++i) sum[i] = 0;
  for (Index k = row_ptr[block_row]; k < row_ptr[block_row + 1]; ++k) {
#ifndef __CUDA_ARCH__
    // the CPU: the values stream fetched 8 KiB ahead by software (one core's hardware
    // prefetchers alone reach ~0.6 of the copy bandwidth here, this ~0.8: docs/performance.md);
    // a prefetch past the end is harmless
    __builtin_prefetch(values + std::int64_t(k) * (B * B) + kSpmvPrefetchScalars);
#endif
    BsrBlockAccumulate<B>(col_idx, values, x, k, sum);
  }
}

// one block row of y = alpha A x + beta y for a BSR matrix: blocks in pattern order, each
// block's entries left to right; y is not read when beta == 0. The runtime block size is the
// fallback of BsrRowSpmvFixedOp (DispatchBsrRowSpmv)
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

// BsrRowSpmvOp for block_dim == B known at compile time (the loops unroll, x and the indices
// are read once per block instead of once per row); bitwise the runtime loop's result
template <int B>
struct BsrRowSpmvFixedOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BsrRowSpmvOp op;
  CONDSIM_HD_INLINE void operator()(Index block_row) const {
    if (op.row_active != nullptr && op.row_active[block_row] == 0) return;
    Scalar sum[B];
    BsrBlockRowSums<B>(op.row_ptr, op.col_idx, op.values, op.x, block_row, sum);
    Scalar* y = op.y + std::int64_t(block_row) * B;
    for (int i = 0; i < B; ++i) y[i] = op.beta == Scalar(0) ? op.alpha * sum[i] : op.alpha * sum[i] + op.beta * y[i];
  }
};

// launches op over block_rows block rows once with the functor for its block size: fixed sizes 3
// (the system matrix's node blocks) and 6, the runtime loop otherwise; launch(f) runs f(row) for
// every block row on the backend. Every variant gives the runtime loop's bits
template <class Launch>
void DispatchBsrRowSpmv(const BsrRowSpmvOp& op, const Launch& launch) {
  switch (op.block_dim) {
    case 3:
      launch(BsrRowSpmvFixedOp<3>{op});
      return;
    case 6:
      launch(BsrRowSpmvFixedOp<6>{op});
      return;
    default:
      launch(op);
  }
}

}  // namespace condsim
