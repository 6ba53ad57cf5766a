// Mass-spring nets on a ground plane: the particle / mass-spring systems used by the COND tests
// and `condsim bench solver`. Dynamics in the impulse form of the paper's eq. 9 (multiplied by
// the step t): A = 2M + (t^2/2) K, b = 2M v_k - t K e + t f, so A v = b + Jc^T lambda gives the
// mid-step velocity v = (v_k + v_{k+1}) / 2 [m/s] and contact impulses lambda [N s].
#pragma once

#include <vector>

#include "condsim/block_sparse.h"
#include "condsim/contacts.h"
#include "condsim/math.h"

namespace condsim {

struct MassSpringSystem {
  BlockMatrix a;                 // 3x3 blocks, one block row per node
  std::vector<Scalar> b;         // 3 per node
  ContactSet contacts;           // one S-contact per node touching the ground
};

// an nx x ny grid of nodes at spacing h [m] on the plane z = 0, node mass m [kg], isotropic
// springs (K block k I between 4-neighbours, the rest state being the initial grid) of
// stiffness k [N/m], step t [s], gravity g [m/s^2] along -z, initial velocities v0 (3 per node,
// may be empty = 0). Every node carries a ground contact (normal +z, phi = 0) with friction mu.
MassSpringSystem MakeMassSpringGrid(Index nx, Index ny, Scalar h, Scalar m, Scalar k, Scalar t,
                                    Scalar g, Scalar mu, const std::vector<Scalar>& v0);

}  // namespace condsim
