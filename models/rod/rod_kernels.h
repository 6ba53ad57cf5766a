// The rod launches (models/kernel_set.h).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/kernel_set.h"
#include "models/rod/rod_ops.h"

namespace condsim {

class RodKernels : public KernelSet<RodJointOp, RodRhsOp, RodBlockOp, RodAdvanceOp, RodNewtonRhsOp> {};

std::unique_ptr<RodKernels> MakeCpuRodKernels(int threads);   // cpu/rod_cpu.cpp
std::unique_ptr<RodKernels> MakeCudaRodKernels(void* stream);  // cuda/rod_cuda.cu

inline std::unique_ptr<RodKernels> MakeRodKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuRodKernels(backend.cpu_threads())
                                             : MakeCudaRodKernels(backend.cuda_stream());
}

}  // namespace condsim
