// Stand-ins for a build without the CUDA backend (CONDSIM_CUDA=OFF or no nvcc found).
#include "cuda/cuda_backend.h"
#include "models/collision/detect_kernels.h"
#include "models/cond/cond_kernels.h"
#include "models/fem/fem_kernels.h"
#include "models/rod/rod_kernels.h"
#include "models/system/system_kernels.h"

namespace condsim {

CudaProbe ProbeCuda(int /*device*/) {
  CudaProbe probe;
  probe.reason = "this binary was built without the CUDA backend (CONDSIM_CUDA=OFF or nvcc not found)";
  return probe;
}

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& /*options*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

std::unique_ptr<CondKernels> MakeCudaCondKernels(void* /*stream*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

std::unique_ptr<FemKernels> MakeCudaFemKernels(void* /*stream*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

std::unique_ptr<RodKernels> MakeCudaRodKernels(void* /*stream*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

std::unique_ptr<SystemKernels> MakeCudaSystemKernels(void* /*stream*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

std::unique_ptr<DetectKernels> MakeCudaDetectKernels(void* /*stream*/) {
  throw Error("the cuda backend is not usable: " + ProbeCuda(0).reason);
}

}  // namespace condsim
