// The contact rule: friction mixing, contact frames, adding a contact.
#include "models/world/contact_rule.h"

#include <cmath>
#include <limits>

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

ShapeContact MakeShapeContact(const StaticShape& s, const Proximity& prox, const Vec3& p, Scalar radius) {
  return {ShapeFrame(s, prox.normal), prox.distance - radius, p - radius * prox.normal};
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

void ContactWriter::AddDeferred(Index node_i, const Friction& mu, const ContactMeta& meta, Index source, Index slot) {
  const Scalar nan = std::numeric_limits<Scalar>::quiet_NaN();
  ContactMeta unset = meta;
  unset.position = Vec3(nan, nan, nan);
  Add(node_i, -1, Mat3(nan, nan, nan, nan, nan, nan, nan, nan, nan), nan, mu, unset, source, slot);
}

void ContactWriter::Fill(Index m, const Mat3& frame, Scalar gap, const Vec3& position) {
  const Mat3 r = RotateTangents(frame, tangent_rotation_);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) contacts_->frame[9 * std::size_t(m) + std::size_t(3 * a + b)] = r(a, b);
  contacts_->phi[std::size_t(m)] = gap / dt_;
  (*meta_)[std::size_t(m)].position = position;
}

}  // namespace condsim
