// Basic types shared by host and device code: the CONDSIM_HD macro, Scalar, Index.
#pragma once

#include <cstddef>
#include <cstdint>

// functions callable from host code and from CUDA kernels alike; inlined always, as nvcc's
// __forceinline__ does (a plain `inline` left GCC calling Mat3 * Vec3 out of line in the contact
// sweep: 9 % of a contact-heavy solve; docs/performance.md "Host inlining")
#if defined(__CUDACC__)
#define CONDSIM_HD __host__ __device__
#define CONDSIM_HD_INLINE __host__ __device__ __forceinline__
#else
#define CONDSIM_HD
#define CONDSIM_HD_INLINE inline __attribute__((always_inline))
#endif

// unroll the next loop fully in device code, where a loop index that stays a variable puts the
// arrays it indexes on the stack (local memory); no effect on the host compiler
#if defined(__CUDA_ARCH__)
#define CONDSIM_UNROLL _Pragma("unroll")
#else
#define CONDSIM_UNROLL
#endif

namespace condsim {

// floating-point type of all physics and solver arrays (SI units throughout)
#if defined(CONDSIM_FLOAT) && CONDSIM_FLOAT
using Scalar = float;
#else
using Scalar = double;
#endif

// 32-bit index of rows, blocks, nodes and contacts; sizes are checked where arrays are built
using Index = std::int32_t;

// the first position in [lo, hi) of the ascending keys whose key is not below `key` (hi if none)
template <class T>
CONDSIM_HD_INLINE Index LowerBound(const T* keys, Index lo, Index hi, T key) {
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// the position of block (r, c) in a block-CSR pattern (column indices ascending in each row), or
// -1 when the row holds no such block
CONDSIM_HD_INLINE Index FindBlock(const Index* row_ptr, const Index* col_idx, Index r, Index c) {
  const Index k = LowerBound(col_idx, row_ptr[r], row_ptr[r + 1], c);
  return k < row_ptr[r + 1] && col_idx[k] == c ? k : -1;
}

}  // namespace condsim
