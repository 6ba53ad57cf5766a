// The COND kernels on the GPU: CondKernelsImpl over cuda::ParallelFor on the backend's stream.
#include "cuda/parallel.cuh"
#include "models/cond/cond_kernels_impl.h"

namespace condsim {
namespace {
struct CudaExec {
  cudaStream_t stream;
  template <class F>
  void For(Index n, const F& f) const {
    cuda::ParallelFor(n, f, stream);
  }
};
}  // namespace

std::unique_ptr<CondKernels> MakeCudaCondKernels(void* stream) {
  return std::make_unique<CondKernelsImpl<CudaExec>>(CudaExec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
