// Every kernel set (models/kernel_list.h) on the CUDA backend: KernelSetImpl over
// cuda::ParallelFor on the backend's stream.
#include "cuda/cuda_backend.h"
#include "cuda/parallel.cuh"
#include "models/kernel_list.h"

namespace condsim::cuda {

template <class Set>
std::unique_ptr<Set> MakeKernels(Backend& backend) {
  return std::make_unique<KernelSetImpl<Exec, Set>>(Exec{CudaStream(backend), backend.mutable_counters()});
}

#define CONDSIM_INSTANTIATE_KERNELS(Set) template std::unique_ptr<Set> MakeKernels<Set>(Backend&);
CONDSIM_KERNEL_SETS(CONDSIM_INSTANTIATE_KERNELS)
#undef CONDSIM_INSTANTIATE_KERNELS

}  // namespace condsim::cuda
