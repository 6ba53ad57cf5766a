// The FEM kernels on the GPU.
#include "cuda/parallel.cuh"
#include "models/fem/fem_kernels.h"

namespace condsim {

std::unique_ptr<FemKernels> MakeCudaFemKernels(void* stream) {
  return std::make_unique<KernelSetImpl<cuda::Exec, FemKernels>>(cuda::Exec{static_cast<cudaStream_t>(stream)});
}

}  // namespace condsim
