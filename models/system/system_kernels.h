// The launches of the global system (models/kernel_set.h).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/kernel_set.h"
#include "models/system/system_ops.h"

namespace condsim {

class SystemKernels : public KernelSet<ScatterBlocksOp, VirtualBlocksOp, VirtualWarmStartOp> {};

std::unique_ptr<SystemKernels> MakeCpuSystemKernels(int threads);   // cpu/system_cpu.cpp
std::unique_ptr<SystemKernels> MakeCudaSystemKernels(void* stream);  // cuda/system_cuda.cu

inline std::unique_ptr<SystemKernels> MakeSystemKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuSystemKernels(backend.cpu_threads())
                                             : MakeCudaSystemKernels(backend.cuda_stream());
}

}  // namespace condsim
