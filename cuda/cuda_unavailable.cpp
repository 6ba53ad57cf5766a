// Stand-ins for a build without the CUDA backend (CONDSIM_CUDA=OFF or no nvcc found).
#include "cuda/cuda_backend.h"
#include "models/kernel_list.h"

namespace condsim {

CudaProbe ProbeCuda(int /*device*/) {
  CudaProbe probe;
  probe.reason = "this binary was built without the CUDA backend (CONDSIM_CUDA=OFF or nvcc not found)";
  return probe;
}

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& /*options*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

// every kernel set (models/kernel_list.h) throws as the backend does
namespace cuda {

template <class Set>
std::unique_ptr<Set> MakeKernels(Backend& /*backend*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

#define CONDSIM_INSTANTIATE_KERNELS(Set) template std::unique_ptr<Set> MakeKernels<Set>(Backend&);
CONDSIM_KERNEL_SETS(CONDSIM_INSTANTIATE_KERNELS)
#undef CONDSIM_INSTANTIATE_KERNELS

}  // namespace cuda

}  // namespace condsim
