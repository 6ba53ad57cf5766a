// Inelastic contact velocities for the midpoint state update.
#include "models/integrate/midpoint.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

bool IsSticking(const ContactSet& contacts, const std::vector<Scalar>& lambda, Index m) {
  return std::hypot(lambda[3 * std::size_t(m) + 1], lambda[3 * std::size_t(m) + 2]) <
         std::min(contacts.mu1[m], contacts.mu2[m]) * lambda[3 * std::size_t(m)] * (1 - 1e-9);
}

void ApplyInelasticContacts(const ContactSet& contacts, const std::vector<Scalar>& lambda,
                            const std::vector<Scalar>& vhat, std::vector<Scalar>* v_next) {
  CONDSIM_CHECK(lambda.size() == 3 * std::size_t(contacts.size()) && vhat.size() == v_next->size(),
                "ApplyInelasticContacts: sizes do not match the contacts / velocities");
  Scalar* v = v_next->data();
  const Scalar* vh = vhat.data();
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    const Mat3 r = contacts.Frame(m);
    const bool stick = IsSticking(contacts, lambda, m);
    // relative velocity in the contact frame, now and at mid-step
    const Vec3 rel = r * (j >= 0 ? LoadVec3(v, i) - LoadVec3(v, j) : LoadVec3(v, i));
    const Vec3 mid = r * (j >= 0 ? LoadVec3(vh, i) - LoadVec3(vh, j) : LoadVec3(vh, i));
    Vec3 target = rel;
    target[0] = mid[0];
    if (stick) {
      target[1] = mid[1];
      target[2] = mid[2];
    }
    const Vec3 delta = Transpose(r) * (target - rel);
    if (j >= 0) {
      AddVec3(v, i, 0.5 * delta);
      AddVec3(v, j, -0.5 * delta);
    } else {
      AddVec3(v, i, delta);
    }
  }
}

}  // namespace condsim
