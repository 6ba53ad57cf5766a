// CUDA execution: error checks and ParallelFor, the generic kernel launcher that runs the same
// CONDSIM_HD functors as cpu::ParallelFor. Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "condsim/backend.h"
#include "condsim/core.h"
#include "condsim/error.h"
#include "condsim/lanes.h"

// throws condsim::Error naming the CUDA call, its error and the source location
#define CONDSIM_CUDA_CHECK(expr)                                                              \
  do {                                                                                       \
    const cudaError_t condsim_cuda_err_ = (expr);                                            \
    if (condsim_cuda_err_ != cudaSuccess) {                                                  \
      throw ::condsim::Error(std::string("CUDA error in ") + #expr + " at " + __FILE__ + ":" + \
                             std::to_string(__LINE__) + ": " +                               \
                             cudaGetErrorName(condsim_cuda_err_) + " (" +                    \
                             cudaGetErrorString(condsim_cuda_err_) + ")");                   \
    }                                                                                        \
  } while (0)

namespace condsim::cuda {

constexpr int kThreadsPerBlock = 256;

// __launch_bounds__: ParallelFor launches exactly kThreadsPerBlock threads per block, so ptxas may
// budget registers for that block size (65536 / 256 = 255 per thread on sm_90, the cap anyway:
// no stack or spill changed, registers by -8 to +12, docs/performance.md) and a launch can never
// fail for too many registers per block
template <class F>
__global__ void __launch_bounds__(kThreadsPerBlock) ParallelForKernel(Index n, F f) {
  // 64-bit: blockIdx.x * blockDim.x passes 2^31 in the last blocks of n near Index's range
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(static_cast<Index>(i));
}

// runs f(i) for i in [0, n) on the GPU, one thread per index, queued on `stream`
template <class F>
void ParallelFor(Index n, const F& f, cudaStream_t stream = nullptr) {
  if (n <= 0) return;
  const unsigned blocks = static_cast<unsigned>((std::int64_t(n) + kThreadsPerBlock - 1) / kThreadsPerBlock);
  ParallelForKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(n, f);
  CONDSIM_CUDA_CHECK(cudaGetLastError());
}

// lane functors (F::kLanes, F::kPhases, f.Lane(item, lane, phase); models/cond/chain_ops.h): one
// warp per item, the phases in order with __syncwarp (which also orders the lanes' memory
// accesses) between them
template <class F>
__global__ void __launch_bounds__(kThreadsPerBlock) LaneKernel(Index n, F f) {
  static_assert(F::kLanes == 32, "a lane functor runs on one warp");
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t item = t / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  // (one item per warp, so one count for its lanes; a warp past the items runs item 0's phases
  // idle: a compile-time F::kPhases stays one, LanePhases)
  const int phases = LanePhases(f, static_cast<Index>(item < n ? item : 0));
  for (int phase = 0; phase < phases; ++phase) {
    if (item < n) f.Lane(static_cast<Index>(item), lane, phase);
    __syncwarp();
  }
}

template <class F, class = void>
struct IsLaneFunctor {
  static constexpr bool value = false;
};
template <class F>
struct IsLaneFunctor<F, decltype(void(F::kLanes))> {
  static constexpr bool value = true;
};

// lane functors of several warps (F::kLanes a multiple of 32 up to kThreadsPerBlock): one block
// per item, the phases in order with __syncthreads (which also orders the block's memory
// accesses) between them
template <class F>
__global__ void __launch_bounds__(kThreadsPerBlock) BlockLaneKernel(F f) {
  static_assert(F::kLanes % 32 == 0 && F::kLanes <= kThreadsPerBlock, "a block lane functor runs on whole warps of one block");
  const Index item = static_cast<Index>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x);
  // (one item per block, so one count for its threads)
  const int phases = LanePhases(f, item);
  for (int phase = 0; phase < phases; ++phase) {
    f.Lane(item, lane, phase);
    __syncthreads();
  }
}

// runs a lane functor on n items, a warp each (kLanes 32) or a block each (more lanes)
template <class F>
void ParallelForLanes(Index n, const F& f, cudaStream_t stream = nullptr) {
  if (n <= 0) return;
  if constexpr (F::kLanes == 32) {
    const unsigned blocks = static_cast<unsigned>((std::int64_t(n) * 32 + kThreadsPerBlock - 1) / kThreadsPerBlock);
    LaneKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(n, f);
  } else {
    BlockLaneKernel<<<static_cast<unsigned>(n), F::kLanes, 0, stream>>>(f);
  }
  CONDSIM_CUDA_CHECK(cudaGetLastError());
}

// the executor that model kernel sets are instantiated with (models/kernel_set.h)
struct Exec {
  cudaStream_t stream;
  BackendCounters* counters;  // launches counted here
  template <class F>
  void For(Index n, const F& f) const {
    ++counters->launches;
    if constexpr (IsLaneFunctor<F>::value) {
      ParallelForLanes(n, f, stream);
    } else {
      ParallelFor(n, f, stream);
    }
  }
};

// a device buffer for tests and scratch space, freed on destruction
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) CONDSIM_CUDA_CHECK(cudaMalloc(&ptr_, n_ * sizeof(T)));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace condsim::cuda
