// Every model's launch set, listed once: each backend defines MakeKernels<Set> for all of them
// (cpu/kernels_cpu.cpp, cuda/kernels_cuda.cu, cuda/cuda_unavailable.cpp). Included only there.
#pragma once

#include "models/collision/detect_kernels.h"
#include "models/cond/cond_kernels.h"
#include "models/fem/fem_kernels.h"
#include "models/rod/rod_kernels.h"
#include "models/system/system_kernels.h"
#include "models/world/world_kernels.h"

#define CONDSIM_KERNEL_SETS(X) X(CondKernels) X(FemKernels) X(RodKernels) X(SystemKernels) X(DetectKernels) X(WorldKernels)
