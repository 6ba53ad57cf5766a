// The state update of the paper's midpoint scheme (eq. 4): x_{k+1} = x_k + t v-hat,
// v_{k+1} = 2 v-hat - v_k, with inelastic contacts: the midpoint rule alone reflects the normal
// velocity of a node stopped by a contact (v-hat_n = 0 gives v_{k+1,n} = -v_{k,n}) and flips the
// tangential velocity of a sticking one; neither mode is damped. For every pressed contact
// (lambda_n > 0) the contact-frame normal component of v_{k+1} is taken from v-hat, and for a
// sticking one (|lambda_t| < mu lambda_n) the tangential components too (restitution 0).
// Host-side for now (node arrays of 3 per node); a backend version comes with the world stepper.
#pragma once

#include <vector>

#include "condsim/contacts.h"

namespace condsim {

// a pressed contact m sticks: its tangential force is inside the cone (below min(mu1, mu2)
// lambda_n, 1e-9 relative); the rule both the node and the rigid-body updates use
bool IsSticking(const ContactSet& contacts, const std::vector<Scalar>& lambda, Index m);

// v_next: on entry 2 v-hat - v_k, on return with the inelastic contact correction. D-contacts
// correct the relative velocity of their two nodes symmetrically (equal mass weights).
void ApplyInelasticContacts(const ContactSet& contacts, const std::vector<Scalar>& lambda,
                            const std::vector<Scalar>& vhat, std::vector<Scalar>* v_next);

}  // namespace condsim
