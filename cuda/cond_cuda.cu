// The COND kernels on the GPU: CondKernelsImpl over cuda::ParallelFor on the backend's stream.
#include "cuda/parallel.cuh"
#include "models/cond/cond_kernels_impl.h"

namespace condsim {

std::unique_ptr<CondKernels> MakeCudaCondKernels(void* stream) {
  return std::make_unique<CondKernelsImpl<cuda::Exec>>(cuda::Exec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
