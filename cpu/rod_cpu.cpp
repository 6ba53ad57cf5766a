// The rod kernels on the CPU.
#include "cpu/parallel.h"
#include "models/rod/rod_kernels.h"

namespace condsim {

std::unique_ptr<RodKernels> MakeCpuRodKernels(int threads) {
  return std::make_unique<KernelSetImpl<cpu::Exec, RodKernels>>(cpu::Exec{threads});
}

}  // namespace condsim
