// The FEM launches (models/kernel_set.h).
#pragma once

#include "models/fem/fem_ops.h"
#include "models/kernel_set.h"

namespace condsim {

class FemKernels : public KernelSet<FemElementOp, FemGeoDiagOp, FemNodeRhsOp, FemBlockOp, FemGeometricBlockOp, MidpointOp, NewtonRhsOp,
                                    DirichletRowOp, AttachOp, LinkBlockOp, LinkRhsOp, RigidMomentTermsOp, RigidInertiaTermsOp, RigidPredictorOp,
                                    CarryPrescribedOp> {};

}  // namespace condsim
