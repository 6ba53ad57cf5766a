// Inelastic contact velocities for the midpoint state update.
#include "models/integrate/midpoint.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

bool IsSticking(const ContactSet& contacts, const std::vector<Scalar>& lambda, Index m) {
  return ImpulseSticks(lambda.data() + 3 * std::size_t(m), contacts.mu1[m], contacts.mu2[m]);
}

void ApplyInelasticContacts(const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                            const std::vector<Scalar>& mass, const VirtualNodeSet* vn, std::vector<Scalar>* v_next) {
  const Index base = static_cast<Index>(mass.size());
  CONDSIM_CHECK(lambda.size() == 3 * std::size_t(contacts.size()) && v_next->size() == 3 * mass.size() &&
                    vhat.size() >= v_next->size(),
                "ApplyInelasticContacts: sizes do not match the contacts / velocities / masses");
  // a side node a with coefficient c_a
  struct Term {
    Index node;
    Scalar c;
  };
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Mat3 r = contacts.Frame(m);
    const int axes = IsSticking(contacts, lambda, m) ? 3 : 1;
    Term terms[8];
    int count = 0;
    auto add = [&](Index node, Scalar c) {
      if (mass[node] > 0 && count < 8) terms[count++] = {node, c};
    };
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      if (node < 0) continue;
      const Scalar sign = side == 0 ? 1 : -1;
      if (node < base) {
        add(node, sign);
      } else {
        CONDSIM_CHECK(vn != nullptr && node - base < vn->size(), "ApplyInelasticContacts: contact " << m << " names node " << node
                                                                     << " beyond the base nodes and the virtual nodes");
        const Index k = node - base;
        for (Index q = vn->ptr[k]; q < vn->ptr[k + 1]; ++q) add(vn->host[q], sign * vn->jac[9 * std::size_t(q)]);
      }
    }
    // the relative velocity along each corrected axis back to v-hat's (least kinetic energy)
    for (int a = 0; a < axes; ++a) {
      const Vec3 d = r.Row(a);
      Scalar delta = 0, den = 0;
      for (int q = 0; q < count; ++q) {
        const Term& t = terms[q];
        delta += t.c * Dot(d, LoadVec3(vhat.data(), t.node) - LoadVec3(v_next->data(), t.node));
        den += t.c * t.c / mass[t.node];
      }
      if (!(den > 0)) continue;
      const Scalar y = delta / den;
      for (int q = 0; q < count; ++q) AddVec3(v_next->data(), terms[q].node, (terms[q].c * y / mass[terms[q].node]) * d);
    }
  }
}

}  // namespace condsim
