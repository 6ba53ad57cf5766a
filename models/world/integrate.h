// The integration stage (paper eq. 4, midpoint rule): x_{k+1} = x_k + t v-hat and
// v_{k+1} = 2 v-hat - v_k for FEM bodies and cables (on the backend; a cable's rotations
// R <- exp(t w) R) and rigid bodies (on the host, RigidModel::Advance).
#pragma once

#include <vector>

#include "models/world/bodies.h"

namespace condsim {

// rigid_vhat: the rigid part of the step's solution on the host (3 per rigid node); the
// deformable parts' v-hat from w->v on the backend
void Integrate(WorldBodies* w, const std::vector<Scalar>& rigid_vhat);

}  // namespace condsim
