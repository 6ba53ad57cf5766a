// The global-system kernels on the CPU.
#include "cpu/parallel.h"
#include "models/system/system_kernels.h"

namespace condsim {

std::unique_ptr<SystemKernels> MakeCpuSystemKernels(int threads) {
  return std::make_unique<KernelSetImpl<cpu::Exec, SystemKernels>>(cpu::Exec{threads});
}

}  // namespace condsim
