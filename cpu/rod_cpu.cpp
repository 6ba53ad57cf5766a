// The rod kernels on the CPU.
#include "cpu/parallel.h"
#include "models/rod/rod_kernels.h"

namespace condsim {

std::unique_ptr<RodKernels> MakeCpuRodKernels(int threads) {
  return std::make_unique<RodKernelsImpl<cpu::Exec>>(cpu::Exec{threads});
}

}  // namespace condsim
