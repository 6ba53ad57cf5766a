// Static shapes: signed distances and S-contact generation.
#include "models/collision/static_world.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {

void StaticShape::Validate(const std::string& where) const {
  CONDSIM_CHECK(std::isfinite(center[0]) && std::isfinite(center[1]) && std::isfinite(center[2]),
                where << ": center is not finite");
  CONDSIM_CHECK(std::fabs(Norm(orientation) - 1) < 1e-6, where << ": orientation must be a unit quaternion");
  CONDSIM_CHECK(mu1 >= 0 && mu2 >= 0 && std::isfinite(mu1) && std::isfinite(mu2), where << ": friction must be finite and >= 0");
  switch (type) {
    case ShapeType::kPlane:
      break;
    case ShapeType::kSphere:
      CONDSIM_CHECK(size[0] > 0, where << ": sphere radius must be > 0 [m]");
      break;
    case ShapeType::kBox:
      CONDSIM_CHECK(size[0] > 0 && size[1] > 0 && size[2] > 0, where << ": box half extents must be > 0 [m]");
      break;
    case ShapeType::kCapsule:
      CONDSIM_CHECK(size[0] > 0 && size[1] >= 0, where << ": capsule radius must be > 0 and half length >= 0 [m]");
      break;
    case ShapeType::kMesh:
      throw Error(where + ": a static shape cannot be a mesh (use World::AddStaticMesh)");
  }
}

Proximity ShapeProximity(const StaticShape& s, const Vec3& p) {
  CONDSIM_CHECK(s.type != ShapeType::kMesh, "ShapeProximity: a mesh has no analytic distance (the detector handles it)");
  return AnalyticProximity(s, p);
}

void DetectStaticContacts(const std::vector<StaticShape>& shapes, const NodeView& nodes, Scalar dt,
                          Scalar extra_margin, ContactSet* contacts) {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "contact detection: time step must be > 0 [s]");
  CONDSIM_CHECK(nodes.x != nullptr && nodes.x->size() % 3 == 0, "contact detection: positions need 3 values per node");
  const Index n = static_cast<Index>(nodes.x->size() / 3);
  CONDSIM_CHECK(nodes.v == nullptr || nodes.v->size() == nodes.x->size(), "contact detection: velocities need 3 values per node");
  CONDSIM_CHECK(nodes.radius == nullptr || nodes.radius->size() == std::size_t(n), "contact detection: one radius per node");
  for (Index k = 0; k < n; ++k) {
    const Vec3 p = LoadVec3(nodes.x->data(), k);
    const Scalar radius = nodes.radius != nullptr ? (*nodes.radius)[k] : Scalar(0);
    const Scalar speed = nodes.v != nullptr ? Norm(LoadVec3(nodes.v->data(), k)) : Scalar(0);
    // margin: what the node can travel in one step, plus its radius and the caller's extra
    const Scalar margin = speed * dt + extra_margin;
    for (const StaticShape& s : shapes) {
      const Proximity prox = ShapeProximity(s, p);
      const Scalar gap = prox.distance - radius;
      if (gap > margin) continue;
      contacts->Add(nodes.node_offset + nodes.stride * k, -1, ContactFrame(prox.normal), gap / dt, s.mu1, s.mu2, nodes.env);
    }
  }
}

}  // namespace condsim
