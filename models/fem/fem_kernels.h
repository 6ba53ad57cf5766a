// The FEM launches (models/kernel_set.h).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/fem/fem_ops.h"
#include "models/kernel_set.h"

namespace condsim {

class FemKernels : public KernelSet<FemElementOp, FemNodeRhsOp, FemBlockOp, MidpointOp, NewtonRhsOp,
                                    DirichletRowOp, AttachOp, LinkBlockOp, LinkRhsOp> {};

std::unique_ptr<FemKernels> MakeCpuFemKernels(int threads);   // cpu/fem_cpu.cpp
std::unique_ptr<FemKernels> MakeCudaFemKernels(void* stream);  // cuda/fem_cuda.cu

inline std::unique_ptr<FemKernels> MakeFemKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuFemKernels(backend.cpu_threads())
                                             : MakeCudaFemKernels(backend.cuda_stream());
}

}  // namespace condsim
