// The detection kernels on the CPU.
#include "cpu/parallel.h"
#include "models/collision/detect_kernels.h"

namespace condsim {

std::unique_ptr<DetectKernels> MakeCpuDetectKernels(int threads) {
  return std::make_unique<KernelSetImpl<cpu::Exec, DetectKernels>>(cpu::Exec{threads});
}

}  // namespace condsim
