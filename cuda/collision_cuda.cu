// The detection kernels on the GPU.
#include "cuda/parallel.cuh"
#include "models/collision/detect_kernels.h"

namespace condsim {

std::unique_ptr<DetectKernels> MakeCudaDetectKernels(void* stream) {
  return std::make_unique<KernelSetImpl<cuda::Exec, DetectKernels>>(cuda::Exec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
