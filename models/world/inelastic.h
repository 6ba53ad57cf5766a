// The inelastic stage (restitution 0, models/integrate/midpoint.h): after the midpoint update,
// every pressed contact gets back its mid-step relative velocity along the normal (and, when it
// sticks, along the tangents). Deformable sides through ApplyInelasticContacts; the rigid bodies
// of each rigid group by the smallest kinetic-energy change that meets their contacts' targets
// (least squares when the targets are dependent, e.g. four corners of a box on a plane) and keeps
// the joints' relative velocities.
#pragma once

#include <vector>

#include "condsim/contacts.h"
#include "models/world/bodies.h"
#include "models/world/contact_rule.h"

namespace condsim {

class InelasticStage {
 public:
  // the node masses of the deformable parts (once, at the first step)
  void Build(const WorldBodies& w);
  // vhat: the step's solution (global, host); lambda: its impulses
  void Run(WorldBodies* w, const ContactSet& contacts, const std::vector<ContactMeta>& meta, const std::vector<Scalar>& lambda,
           const std::vector<Scalar>& vhat);

 private:
  std::vector<Scalar> mass_;  // per base node: lumped mass [kg]; 0 on rigid and rotation nodes
};

}  // namespace condsim
