// Inelastic contact velocities for the midpoint state update.
#include "models/integrate/midpoint.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

void ApplyInelasticContacts(const ContactSet& contacts, const std::vector<Scalar>& lambda,
                            const std::vector<Scalar>& vhat, std::vector<Scalar>* v_next) {
  CONDSIM_CHECK(lambda.size() == 3 * std::size_t(contacts.size()) && vhat.size() == v_next->size(),
                "ApplyInelasticContacts: sizes do not match the contacts / velocities");
  std::vector<Scalar>& v = *v_next;
  auto load = [](const std::vector<Scalar>& a, Index i) { return Vec3(a[3 * std::size_t(i)], a[3 * std::size_t(i) + 1], a[3 * std::size_t(i) + 2]); };
  auto store = [&v](Index i, const Vec3& w) {
    for (int c = 0; c < 3; ++c) v[3 * std::size_t(i) + c] = w[c];
  };
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    const Mat3 r = contacts.Frame(m);
    const bool stick = std::hypot(lambda[3 * std::size_t(m) + 1], lambda[3 * std::size_t(m) + 2]) <
                       std::min(contacts.mu1[m], contacts.mu2[m]) * lambda[3 * std::size_t(m)] * (1 - 1e-9);
    // relative velocity in the contact frame, now and at mid-step
    const Vec3 rel = r * (j >= 0 ? load(v, i) - load(v, j) : load(v, i));
    const Vec3 mid = r * (j >= 0 ? load(vhat, i) - load(vhat, j) : load(vhat, i));
    Vec3 target = rel;
    target[0] = mid[0];
    if (stick) {
      target[1] = mid[1];
      target[2] = mid[2];
    }
    const Vec3 delta = Transpose(r) * (target - rel);
    if (j >= 0) {
      store(i, load(v, i) + 0.5 * delta);
      store(j, load(v, j) - 0.5 * delta);
    } else {
      store(i, load(v, i) + delta);
    }
  }
}

}  // namespace condsim
