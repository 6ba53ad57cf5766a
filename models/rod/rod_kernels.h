// The rod launches (models/kernel_set.h).
#pragma once

#include "models/kernel_set.h"
#include "models/rod/rod_ops.h"

namespace condsim {

class RodKernels : public KernelSet<RodJointOp, RodGeoColumnOp, RodGeoDiagOp, RodRhsOp, RodBlockOp, RodAdvanceOp, RodNewtonRhsOp> {};

}  // namespace condsim
