// The launches of the point-vs-triangle detection (models/kernel_set.h).
#pragma once

#include "models/collision/detect_ops.h"
#include "models/collision/link_ops.h"
#include "models/kernel_set.h"

namespace condsim {

class DetectKernels
    : public KernelSet<TriangleBoxOp, CellCountOp, CellFillOp, PointQueryOp, SlotCompactOp, GatherVerticesOp, SpeedOp,
                       NodeShapeFlagOp, NodeShapeCompactOp, StaticReachCountOp, ContactRunOp, ContactRowScatterOp,
                       ContactPlanFillOp, LinkSpeedOp, LinkBoxOp, LinkPairOp, LinkGatherOp> {};

}  // namespace condsim
