// The FEM kernels on the CPU.
#include "cpu/parallel.h"
#include "models/fem/fem_kernels.h"

namespace condsim {

std::unique_ptr<FemKernels> MakeCpuFemKernels(int threads) {
  return std::make_unique<KernelSetImpl<cpu::Exec, FemKernels>>(cpu::Exec{threads});
}

}  // namespace condsim
