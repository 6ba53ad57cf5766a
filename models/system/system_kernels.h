// The launches of the global system (models/kernel_set.h).
#pragma once

#include "models/kernel_set.h"
#include "models/system/system_ops.h"

namespace condsim {

class SystemKernels : public KernelSet<ScatterBlocksOp, VirtualBlocksOp, VirtualWarmStartOp, VirtualJacobianOp, VirtualParamCountOp, VirtualTermCountOp,
                                              VirtualTermFillOp, VirtualTermSortedOp, VirtualTargetOp, VirtualRowCountOp,
                                              VirtualRowFillOp, VirtualTargetBlockOp> {};

}  // namespace condsim
