// The launches of the point-vs-triangle detection (models/kernel_set.h).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/collision/detect_ops.h"
#include "models/kernel_set.h"

namespace condsim {

class DetectKernels
    : public KernelSet<TriangleBoxOp, CellCountOp, CellFillOp, PointQueryOp, SlotCompactOp, GatherVerticesOp, SpeedOp> {};

std::unique_ptr<DetectKernels> MakeCpuDetectKernels(int threads);   // cpu/collision_cpu.cpp
std::unique_ptr<DetectKernels> MakeCudaDetectKernels(void* stream);  // cuda/collision_cuda.cu

inline std::unique_ptr<DetectKernels> MakeDetectKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuDetectKernels(backend.cpu_threads())
                                             : MakeCudaDetectKernels(backend.cuda_stream());
}

}  // namespace condsim
