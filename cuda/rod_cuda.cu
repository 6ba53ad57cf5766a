// The rod kernels on the GPU.
#include "cuda/parallel.cuh"
#include "models/rod/rod_kernels.h"

namespace condsim {

std::unique_ptr<RodKernels> MakeCudaRodKernels(void* stream) {
  return std::make_unique<KernelSetImpl<cuda::Exec, RodKernels>>(cuda::Exec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
