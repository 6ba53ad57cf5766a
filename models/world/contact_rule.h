// The contact rule (docs/collision.md), in one place, for every detection path:
// - reach: a pair is a contact when its gap is at most |v_rel| t + contact_margin; phi_n = gap / t;
// - friction: a body against itself keeps its mu; an FEM body against a rigid body takes the
//   rigid body's; a deformable body (FEM, cable) against static geometry takes the static's
//   (per tangent axis: an anisotropic shape keeps its axes); any other pair sqrt(mu_a mu_b) per
//   axis (a rigid body's mu on both axes).
// ContactWriter adds a contact with its frame and the metadata the records and the inelastic
// stage need.
#pragma once

#include <vector>

#include "condsim/contacts.h"
#include "condsim/math.h"
#include "models/collision/detect_ops.h"
#include "models/collision/static_world.h"
#include "models/world/bodies.h"

namespace condsim {

// one side of a contact: its kind, body id (-1 for static geometry) and friction per axis
struct ContactSide {
  BodyKind kind;
  Index body;
  Scalar mu1, mu2;
};

inline ContactSide StaticSide(Scalar mu1, Scalar mu2) { return {BodyKind::kStatic, -1, mu1, mu2}; }
inline ContactSide BodySide(BodyKind kind, Index body, Scalar mu) { return {kind, body, mu, mu}; }

struct Friction {
  Scalar mu1, mu2;
};

// the friction rule above
Friction MixFriction(const ContactSide& a, const ContactSide& b);

// the reach rule above: false when the pair is too far apart to touch within the step
inline bool InReach(Scalar gap, const Vec3& v_rel, Scalar dt, Scalar margin) { return !(gap > Norm(v_rel) * dt + margin); }

// per contact: owner info for the records
struct ContactMeta {
  Vec3 position;
  Index body_i, body_j, shape;
  Index mesh = -1;
  Index env = 0;  // body_i's environment (set by ContactWriter)
};

// contact frame against a shape: rows (n, t1, t2); an anisotropic shape (mu1 != mu2) puts t1
// along its local x axis projected on the tangent plane, so mu1 acts along that axis
Mat3 ShapeFrame(const StaticShape& s, const Vec3& n);

// an S-contact of a point p of radius r against a static shape at proximity prox: its frame,
// gap = distance - r [m] and contact point p - r n
struct ShapeContact {
  Mat3 frame;
  Scalar gap;
  Vec3 position;
};
ShapeContact MakeShapeContact(const StaticShape& s, const Proximity& prox, const Vec3& p, Scalar radius);

// per contact the flagged point the backend can remake it from (Detector::ShapeCandidates), or
// -1, and the analytic shape
struct ContactSources {
  std::vector<Index> source, slot;
};

// the contacts of one step and their metadata
class ContactWriter {
 public:
  // body_env: per body id its environment (the contact's is meta.body_i's)
  // sources (optional): per contact the flagged point the backend remakes it from, or -1, and the
  // shape
  ContactWriter(Scalar dt, Scalar tangent_rotation, const std::vector<Index>* body_env, ContactSet* contacts,
                std::vector<ContactMeta>* meta, ContactSources* sources = nullptr)
      : dt_(dt), tangent_rotation_(tangent_rotation), body_env_(body_env), contacts_(contacts), meta_(meta), sources_(sources) {}
  // node_j = -1: an S-contact; frame rows (n, t1, t2) with n into node i's side; source >= 0:
  // an S-contact of that flagged point (Detector::ShapeCandidates) against analytic shape `slot`,
  // which the backend can remake (Detector::WriteContacts)
  void Add(Index node_i, Index node_j, const Mat3& frame, Scalar gap, const Friction& mu, const ContactMeta& meta,
           Index source = -1, Index slot = -1);
  // the same S-contact with its frame, phi and contact point (meta.position) left NaN: the backend
  // makes them (Detector::WriteContacts), Fill brings them to the host when asked for
  void AddDeferred(Index node_i, const Friction& mu, const ContactMeta& meta, Index source, Index slot);
  // contact m's frame (rows n, t1, t2), gap [m] and contact point, as Add sets them
  void Fill(Index m, const Mat3& frame, Scalar gap, const Vec3& position);

 private:
  Scalar dt_, tangent_rotation_;
  const std::vector<Index>* body_env_;
  ContactSet* contacts_;
  std::vector<ContactMeta>* meta_;
  ContactSources* sources_;
};

}  // namespace condsim
