// The COND kernels on the CPU: CondKernelsImpl over OpenMP.
#include "cpu/parallel.h"
#include "models/cond/cond_kernels_impl.h"

namespace condsim {

std::unique_ptr<CondKernels> MakeCpuCondKernels(int threads) {
  return std::make_unique<CondKernelsImpl<cpu::Exec>>(cpu::Exec{threads});
}

}  // namespace condsim
