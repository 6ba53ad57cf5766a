// The global-system kernels on the GPU.
#include "cuda/parallel.cuh"
#include "models/system/system_kernels.h"

namespace condsim {

std::unique_ptr<SystemKernels> MakeCudaSystemKernels(void* stream) {
  return std::make_unique<KernelSetImpl<cuda::Exec, SystemKernels>>(cuda::Exec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
