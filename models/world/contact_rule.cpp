// The contact rule: friction mixing, contact frames, adding a contact.
#include "models/world/contact_rule.h"

#include <cmath>

namespace condsim {

namespace {

bool Deformable(BodyKind k) { return k == BodyKind::kFem || k == BodyKind::kRod; }

// rotates the tangent rows of a frame about its normal by angle
Mat3 RotateTangents(const Mat3& r, Scalar angle) {
  if (angle == 0) return r;
  const Scalar c = std::cos(angle), s = std::sin(angle);
  return Mat3::FromRows(r.Row(0), c * r.Row(1) + s * r.Row(2), -s * r.Row(1) + c * r.Row(2));
}

}  // namespace

Friction MixFriction(const ContactSide& a, const ContactSide& b) {
  if (a.kind == b.kind && a.kind != BodyKind::kStatic && a.body == b.body) return {a.mu1, a.mu2};
  if (a.kind == BodyKind::kFem && b.kind == BodyKind::kRigid) return {b.mu1, b.mu2};
  if (b.kind == BodyKind::kFem && a.kind == BodyKind::kRigid) return {a.mu1, a.mu2};
  if (Deformable(a.kind) && b.kind == BodyKind::kStatic) return {b.mu1, b.mu2};
  if (Deformable(b.kind) && a.kind == BodyKind::kStatic) return {a.mu1, a.mu2};
  return {std::sqrt(a.mu1 * b.mu1), std::sqrt(a.mu2 * b.mu2)};
}

Mat3 ShapeFrame(const StaticShape& s, const Vec3& n) {
  const Mat3 frame = ContactFrame(n);  // also rejects a zero or non-finite normal
  if (s.mu1 == s.mu2) return frame;
  const Vec3 ax = ToMatrix(s.orientation).Col(0);
  Vec3 t1 = ax - Dot(ax, n) * n;
  if (Norm(t1) < 1e-9) return frame;
  t1 = Normalized(t1);
  return Mat3::FromRows(n, t1, Cross(n, t1));
}

void ContactWriter::Add(Index node_i, Index node_j, const Mat3& frame, Scalar gap, const Friction& mu, const ContactMeta& meta) {
  const Index env = meta.body_i >= 0 ? (*body_env_)[std::size_t(meta.body_i)] : 0;
  contacts_->Add(node_i, node_j, RotateTangents(frame, tangent_rotation_), gap / dt_, mu.mu1, mu.mu2, env);
  meta_->push_back(meta);
  meta_->back().env = env;
}

}  // namespace condsim
