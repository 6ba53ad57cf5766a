// The inelastic stage (restitution 0, models/integrate/midpoint.h): after the midpoint update,
// every pressed contact gets back its mid-step relative velocity along the normal (and, when it
// sticks, along the tangents). One correction for every pair of body kinds: the contact rows
// (relative velocity of the two sides on the base nodes they move with: deformable nodes and the
// hosts of barycentric nodes with their weights, a rigid body's v and omega through the arm)
// join the units they touch (a deformable node; a rigid group's bodies) into components. A
// component with a rigid body takes the least kinetic-energy change dv = M^-1 C^T y meeting all
// its rows at once, the joints' rows with target 0 (least squares when rows are dependent, e.g.
// four corners of a box on a plane); a component of deformable nodes only, the per-contact closed
// form of ApplyInelasticContacts. Equal and opposite impulses on the two sides of every contact:
// the total linear momentum is kept (tests/world_momentum_test.cpp).
#pragma once

#include <vector>

#include "condsim/contacts.h"
#include "models/world/bodies.h"

namespace condsim {

class InelasticStage {
 public:
  // the node masses of the deformable parts (once, at the first step)
  void Build(const WorldBodies& w);
  // vhat: the step's solution (global, host); lambda: its impulses
  void Run(WorldBodies* w, const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat);

 private:
  std::vector<Scalar> mass_;  // per base node: lumped mass [kg]; 0 on rigid and rotation nodes
};

}  // namespace condsim
