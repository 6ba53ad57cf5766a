// The contact rule: friction mixing, contact frames, adding a contact.
#include "models/world/contact_rule.h"

#include <cmath>

namespace condsim {

namespace {

bool Deformable(BodyKind k) { return k == BodyKind::kFem || k == BodyKind::kRod; }

// rotates the tangent rows of a frame about its normal by angle
Mat3 RotateTangents(const Mat3& r, Scalar angle) {
  if (angle == 0) return r;
  return RotateTangents(r, std::cos(angle), std::sin(angle));
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
  CheckContactNormal(n);
  return UncheckedShapeFrame(s, n);
}

void ContactWriter::Add(Index node_i, Index node_j, const Mat3& frame, Scalar gap, const Friction& mu, const ContactMeta& meta,
                        Index source, Index slot) {
  const Index env = meta.body_i >= 0 ? (*body_env_)[std::size_t(meta.body_i)] : 0;
  contacts_->Add(node_i, node_j, RotateTangents(frame, tangent_rotation_), gap / dt_, mu.mu1, mu.mu2, env);
  meta_->push_back(meta);
  meta_->back().env = env;
  if (sources_ != nullptr) {
    sources_->source.push_back(source);
    sources_->slot.push_back(slot);
  }
}

}  // namespace condsim
