// The bodies of a World: lookups shared by the step stages.
#include "models/world/bodies.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"

namespace condsim {

void WorldParams::Validate() const {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "world: dt must be > 0 [s], got " << dt);
  CONDSIM_CHECK(std::isfinite(gravity[0]) && std::isfinite(gravity[1]) && std::isfinite(gravity[2]), "world: gravity must be finite");
  CONDSIM_CHECK(std::isfinite(kv) && kv > 0, "world: kv must be > 0 [N s/m], got " << kv);
  CONDSIM_CHECK(std::isfinite(contact_margin) && contact_margin >= 0, "world: contact_margin must be >= 0 [m], got " << contact_margin);
  CONDSIM_CHECK(contact_reserve >= 0 && contact_reserve <= 64, "world: contact_reserve must be in [0, 64] (contacts per potential contact point), got " << contact_reserve);
  cond.Validate();
  health.Validate();
}

Scalar DepthLimit(const Scalar* x, const std::vector<Index>& tri) {
  if (tri.empty()) return 0;
  Scalar sum = 0;
  for (std::size_t t = 0; t < tri.size(); t += 3)
    for (int k = 0; k < 3; ++k) sum += Norm(LoadVec3(x, tri[t + k]) - LoadVec3(x, tri[t + (k + 1) % 3]));
  return Scalar(0.25) * sum / Scalar(tri.size());
}

Index WorldBodies::BodyId(BodyKind kind, Index k) const {
  if (kind == BodyKind::kStatic) return -1;
  const std::vector<Index>& l = kind_ids[int(kind)];
  return k >= 0 && std::size_t(k) < l.size() ? l[std::size_t(k)] : -1;
}

void WorldBodies::CheckBody(Index body, BodyKind kind) const {
  static const char* const kNames[3] = {"a rigid", "an FEM", "a rod"};
  CONDSIM_CHECK(body >= 0 && std::size_t(body) < ids.size() && ids[body].first == kind,
                "world: body " << body << " is not " << kNames[int(kind)] << " body");
}

bool WorldBodies::Jointed(Index a, Index b) const {
  return std::binary_search(jointed.begin(), jointed.end(), std::make_pair(std::min(a, b), std::max(a, b)));
}

Index WorldBodies::DeformablePart(std::size_t d) const { return d < fem.size() ? fem[d]->part : rods[d - fem.size()]->part; }

Index WorldBodies::DeformableNodes(std::size_t d) const {
  return d < fem.size() ? fem[d]->model->num_nodes() : 2 * rods[d - fem.size()]->model->num_segments();
}

Scalar WorldBodies::DeformableMass(std::size_t d, Index local) const {
  if (d < fem.size()) return fem[d]->mass[local];
  return local % 2 == 0 ? Scalar(rods[d - fem.size()]->model->segment_mass()) : Scalar(0);
}

std::vector<Scalar> WorldBodies::BaseNodeMasses() const {
  std::vector<Scalar> mass(std::size_t(system->num_base_nodes()), 0);
  for (std::size_t d = 0; d < num_deformable(); ++d) {
    const Index off = system->part_offset(DeformablePart(d));
    for (Index k = 0; k < DeformableNodes(d); ++k) mass[off + k] = DeformableMass(d, k);
  }
  return mass;
}

Array<Scalar>& WorldBodies::DeformableVelocity(std::size_t d) { return d < fem.size() ? fem[d]->v : rods[d - fem.size()]->v; }

BodyMomentum WorldBodies::RigidMomentum(Index k, const Vec3& v, const Vec3& omega) const {
  const RigidBody& b = rigid.body(k);
  BodyMomentum m;
  m.kinetic_energy = rigid.KineticEnergy(k, v, omega);
  m.linear = b.mass * v;
  m.angular = rigid.WorldInertia(k) * omega + Cross(b.x, m.linear);
  return m;
}

}  // namespace condsim
