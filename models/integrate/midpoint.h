// The state update of the paper's midpoint scheme (eq. 4): x_{k+1} = x_k + t v-hat,
// v_{k+1} = 2 v-hat - v_k, with inelastic contacts: the midpoint rule alone reflects the normal
// velocity of a node stopped by a contact (v-hat_n = 0 gives v_{k+1,n} = -v_{k,n}) and flips the
// tangential velocity of a sticking one; neither mode is damped. For every pressed contact
// (lambda_n > 0) the contact-frame normal component of v_{k+1} is taken from v-hat, and for a
// sticking one (|lambda_t| < mu lambda_n) the tangential components too (restitution 0).
// Host-side (node arrays of 3 per node): the World and the solver tests use it.
#pragma once

#include <cmath>
#include <vector>

#include "condsim/contacts.h"
#include "models/system/virtual_nodes.h"

namespace condsim {

// a pressed contact m sticks: its tangential force is inside the cone (below min(mu1, mu2)
// lambda_n, 1e-9 relative); the rule both the node and the rigid-body updates use
bool IsSticking(const ContactSet& contacts, const std::vector<Scalar>& lambda, Index m);
// the same rule on one contact's impulse (l: 3, normal first) and friction (host and device)
CONDSIM_HD_INLINE bool ImpulseSticks(const Scalar* l, Scalar mu1, Scalar mu2) {
#if defined(__CUDA_ARCH__)
  const Scalar t = ::hypot(l[1], l[2]);
#else
  const Scalar t = std::hypot(l[1], l[2]);
#endif
  return t < (mu2 < mu1 ? mu2 : mu1) * l[0] * (1 - Scalar(1e-9));
}

// v_next (3 per base node): on entry 2 v-hat - v_k, on return with the inelastic correction:
// per pressed contact and corrected axis d, the relative velocity of its two sides along d is
// restored to v-hat's by the smallest kinetic-energy change, dv_a = (c_a y / m_a) d with
// y = sum c_a d.(v-hat_a - v_a) / sum c_a^2 / m_a over the side nodes a (c_a = +-1 on a node,
// +-w_a on a virtual node's barycentric hosts). vhat: 3 per node, virtual nodes after the
// mass.size() base nodes (their hosts and weights in vn). A node of mass 0 is left alone (a
// cable's rotation nodes; rigid-body nodes: the World passes here only the contacts of components
// without a rigid body and solves the others as a whole, models/world/inelastic.h). Each
// correction puts equal and opposite impulses on the two sides (weights summing to 1), so it
// keeps the linear momentum.
void ApplyInelasticContacts(const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                            const std::vector<Scalar>& mass, const VirtualNodeSet* vn, std::vector<Scalar>* v_next);

}  // namespace condsim
