// The launches of the world's stages (models/kernel_set.h).
#pragma once

#include "models/kernel_set.h"
#include "models/world/world_ops.h"

namespace condsim {

class WorldKernels : public KernelSet<VhatTermsOp, BodyMomentumTermsOp, GatherVec3Op, ScatterVec3Op, InelasticNodeOp, PressedFlagOp,
                                             InelasticHostCountOp, InelasticHostKeyOp, InelasticLoneKeyOp> {};

}  // namespace condsim
