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
  const Mat3 r = ToMatrix(s.orientation);
  const Vec3 local = Transpose(r) * (p - s.center);
  Proximity out;
  CONDSIM_CHECK(s.type != ShapeType::kMesh, "ShapeProximity: a mesh has no analytic distance (the detector handles it)");
  switch (s.type) {
    case ShapeType::kPlane: {
      out.distance = local[2];
      out.normal = r.Col(2);
      out.point = p - out.distance * out.normal;
      return out;
    }
    case ShapeType::kSphere: {
      const Scalar d = Norm(local);
      const Vec3 n = d > 0 ? local / d : Vec3(0, 0, 1);
      out.distance = d - s.size[0];
      out.normal = r * n;
      out.point = s.center + s.size[0] * out.normal;
      return out;
    }
    case ShapeType::kCapsule: {
      // closest point on the axis segment [-h, h] along local z, then a sphere of the radius
      const Scalar h = s.size[1];
      const Scalar z = std::max(-h, std::min(h, local[2]));
      const Vec3 axis_point(0, 0, z);
      const Vec3 d = local - axis_point;
      const Scalar len = Norm(d);
      Vec3 n;
      if (len > 0) {
        n = d / len;
      } else {
        n = Vec3(1, 0, 0);  // on the axis: any radial direction
      }
      out.distance = len - s.size[0];
      out.normal = r * n;
      out.point = s.center + r * (axis_point + s.size[0] * n);
      return out;
    }
    case ShapeType::kBox: {
      const Vec3 e = s.size;
      Vec3 q(std::fabs(local[0]) - e[0], std::fabs(local[1]) - e[1], std::fabs(local[2]) - e[2]);
      const Scalar outside = Norm(Vec3(std::max<Scalar>(q[0], 0), std::max<Scalar>(q[1], 0), std::max<Scalar>(q[2], 0)));
      const Scalar inside = std::min<Scalar>(std::max(q[0], std::max(q[1], q[2])), 0);
      out.distance = outside + inside;
      Vec3 closest = local;
      Vec3 n;
      if (outside > 0) {
        for (int k = 0; k < 3; ++k) closest[k] = std::max(-e[k], std::min(e[k], local[k]));
        n = Normalized(local - closest);
      } else {
        // inside: leave through the nearest face
        int axis = 0;
        for (int k = 1; k < 3; ++k)
          if (q[k] > q[axis]) axis = k;
        const Scalar sign = local[axis] >= 0 ? 1 : -1;
        closest[axis] = sign * e[axis];
        n = Vec3(0, 0, 0);
        n[axis] = sign;
      }
      out.normal = r * n;
      out.point = s.center + r * closest;
      return out;
    }
    case ShapeType::kMesh:
      break;
  }
  return out;
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
