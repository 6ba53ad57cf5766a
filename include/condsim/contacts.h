// Nodal contacts (paper Sec. III-A, eq. 13), structure of arrays. Contact m acts on node i
// (S-contact: node vs the static world) or on nodes i and j (D-contact: Jc,m = [.. R .. -R ..]).
// Jc is never formed: Jc v and Jc^T lambda are per-contact gathers.
#pragma once

#include <string>
#include <vector>

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"

namespace condsim {

// the contact record, one flat array per field (condsim/record.h): ContactSet on the host,
// ContactView in the COND functors, ContactArrays on a backend
#define CONDSIM_CONTACT_FIELDS(X)                                                                 \
  X(Index, node_i)                                                                                \
  X(Index, node_j)  /* -1 for an S-contact */                                                     \
  X(Scalar, frame)  /* 9 per contact: R_c,m row-major, world -> contact frame; row 0 is the */    \
                    /* normal (pointing from j, or the world, into i) */                          \
  X(Scalar, phi)    /* phi_n,m [m/s]: J_n v + phi >= 0 (gap / step, restitution) */              \
  X(Scalar, mu1)    /* friction along frame row 1 */                                              \
  X(Scalar, mu2)    /* friction along frame row 2 (isotropic when mu1 == mu2) */                  \
  X(Index, env)     /* environment of the contact */

CONDSIM_RECORD_VIEW(ContactView, CONDSIM_CONTACT_FIELDS)
CONDSIM_RECORD_OUT_VIEW(ContactOutView, CONDSIM_CONTACT_FIELDS)

struct ContactSet {
  CONDSIM_CONTACT_FIELDS(CONDSIM_RECORD_HOST_MEMBER)

  Index size() const { return static_cast<Index>(node_i.size()); }
  // appends a contact; j = -1 for an S-contact
  void Add(Index i, Index j, const Mat3& r, Scalar phi_n, Scalar mu_1, Scalar mu_2, Index env_id = 0);
  Mat3 Frame(Index m) const;
  // throws condsim::Error naming the contact and field: node range, i != j, both nodes in the
  // contact's environment (node_env gives each node's environment), frame a rotation (to 1e-9),
  // finite phi, 0 <= mu finite, and mu1 == mu2 when `isotropic_only`; frame and phi not where
  // backend_only[m] is 1 (made on the backend, ContactRecordWriter::Deferred)
  void Validate(const std::vector<Index>& node_env, bool isotropic_only, const std::vector<unsigned char>* backend_only = nullptr) const;
};

// writes a contact set's backend record in place of the solver's upload (CondSolver::SetContacts):
// its maker remakes fields on the backend from a shorter plan (DetectStage); `out` has every
// field sized as the set's, and must end up equal to it
class ContactRecordWriter {
 public:
  virtual ~ContactRecordWriter() = default;
  virtual void Write(const ContactSet& contacts, const ContactOutView& out) = 0;
  // whether contact m's frame and phi are only on the backend (the set holds NaN there), and
  // bringing them to the set
  virtual bool Deferred(Index /*m*/) const { return false; }
  virtual void Complete() {}
};

// the frame of a contact with normal n: rows (n, t1, t2), a rotation (t1 along the world axis
// least aligned with n; isotropic friction does not depend on the choice); throws
// condsim::Error on a zero or non-finite normal
Mat3 ContactFrame(const Vec3& normal);
// throws condsim::Error on a zero or non-finite contact normal (degenerate geometry upstream)
void CheckContactNormal(const Vec3& normal);
// the frame without the check (host and device; the caller knows n is finite and non-zero)
CONDSIM_HD_INLINE Mat3 UncheckedContactFrame(const Vec3& normal) {
  // rows (n, t1, t2): the frame around n, its z axis first
  const Mat3 f = Transpose(FrameAround(Normalized(normal)));
  return Mat3::FromRows(f.Row(2), f.Row(0), f.Row(1));
}
// a frame's tangent rows rotated about its normal by the angle whose cosine and sine are c, s
CONDSIM_HD_INLINE Mat3 RotateTangents(const Mat3& r, Scalar c, Scalar s) {
  return Mat3::FromRows(r.Row(0), c * r.Row(1) + s * r.Row(2), -s * r.Row(1) + c * r.Row(2));
}

// contacts grouped so that no two contacts of one color share a node: the contacts of a color
// are independent (Prop. 3 holds within it) and are solved in parallel. With one contact per
// node there is one color and the solve is exactly the paper's Alg. 2.
struct ContactColoring {
  std::vector<Index> color_ptr{0};  // color c holds order[color_ptr[c] .. color_ptr[c+1])
  std::vector<Index> order;         // contact indices, ascending within a color
  Index num_colors() const { return static_cast<Index>(color_ptr.size()) - 1; }
};
// greedy coloring in contact order (deterministic)
ContactColoring ColorContacts(const ContactSet& contacts, Index num_nodes);

}  // namespace condsim
