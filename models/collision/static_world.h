// Static world geometry and node-vs-world contact generation (S-contacts, paper Sec. III-A):
// planes, spheres, boxes and capsules (finite cylinders with hemispherical caps). For a node of
// radius r at x with velocity v, the gap is the signed distance minus r; a contact is generated
// when gap <= margin = r_detect + |v| t (so a node cannot cross a thin shape within one step),
// with normal n (outward), a frame whose first row is n, and phi_n = gap / t: the node may close
// the gap within the step but not pass the surface (a penetration, gap < 0, is pushed out within
// the step). AnalyticProximity also runs on the backend (detect_ops.h NodeShapeFlagOp).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "condsim/contacts.h"
#include "condsim/math.h"

namespace condsim {

// kMesh: a triangle mesh, for rigid bodies only (RigidBody::mesh); a static triangle mesh is
// added with World::AddStaticMesh
enum class ShapeType { kPlane, kSphere, kBox, kCapsule, kMesh };

struct StaticShape {
  ShapeType type = ShapeType::kPlane;
  Vec3 center;                 // plane: a point on it; others: the centre [m]
  Quat orientation;            // plane: local +z is the normal; box: axes; capsule: local z axis
  Vec3 size;                   // sphere: (radius); box: half extents; capsule: (radius, half length)
  Scalar mu1 = 0.5, mu2 = 0.5; // friction along the frame's tangents (isotropic when equal)
  // throws condsim::Error naming `where` and the field
  void Validate(const std::string& where) const;
};

// signed distance from p to the shape's surface (negative inside), the outward unit normal at
// the closest surface point, and that point
struct Proximity {
  Scalar distance;
  Vec3 normal;
  Vec3 point;
};
// ShapeProximity on the host (a mesh: condsim::Error) and AnalyticProximity on host and device
// (the backend's node-vs-shape test, detect_ops.h; a mesh: distance 1e30 m)
Proximity ShapeProximity(const StaticShape& shape, const Vec3& p);

// std::max / std::min as the device sees them (the same comparisons, so the same results)
CONDSIM_HD_INLINE Scalar MaxOf(Scalar a, Scalar b) { return a < b ? b : a; }
CONDSIM_HD_INLINE Scalar MinOf(Scalar a, Scalar b) { return b < a ? b : a; }

CONDSIM_HD_INLINE Proximity AnalyticProximity(const StaticShape& s, const Vec3& p) {
  const Mat3 r = ToMatrix(s.orientation);
  const Vec3 local = Transpose(r) * (p - s.center);
  Proximity out;
  out.distance = Scalar(1e30);  // a mesh: beyond any reach
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
      const Scalar z = MaxOf(-h, MinOf(h, local[2]));
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
      const Scalar outside = Norm(Vec3(MaxOf(q[0], 0), MaxOf(q[1], 0), MaxOf(q[2], 0)));
      const Scalar inside = MinOf(MaxOf(q[0], MaxOf(q[1], q[2])), 0);
      out.distance = outside + inside;
      Vec3 closest = local;
      Vec3 n;
      if (outside > 0) {
        for (int k = 0; k < 3; ++k) closest[k] = MaxOf(-e[k], MinOf(e[k], local[k]));
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

// the contact frame of a point against a shape at the outward normal n: rows (n, t1, t2); an
// anisotropic shape (mu1 != mu2) puts t1 along its local x axis projected on the tangent plane
// (contact_rule.h ShapeFrame, which checks n first; host and device); within 1e-6 rad of n the
// axis has no tangent direction and the isotropic frame is taken (the projection's rounding,
// ~1e-16 / |t1| off orthogonal, stays below ContactSet::Validate's 1e-9)
CONDSIM_HD_INLINE Mat3 UncheckedShapeFrame(const StaticShape& s, const Vec3& n) {
  const Mat3 frame = UncheckedContactFrame(n);
  if (s.mu1 == s.mu2) return frame;
  const Vec3 ax = ToMatrix(s.orientation).Col(0);
  Vec3 t1 = ax - Dot(ax, n) * n;
  if (Norm(t1) < Scalar(1e-6)) return frame;
  t1 = Normalized(t1);
  return Mat3::FromRows(n, t1, Cross(n, t1));
}

struct NodeView {
  const std::vector<Scalar>* x;       // 3 per node [m]
  const std::vector<Scalar>* v;       // 3 per node [m/s] (may be null: no velocity margin)
  const std::vector<Scalar>* radius;  // per node [m] (may be null: 0)
  Index node_offset = 0;              // index of the first node in the solver's numbering
  Index stride = 1;                   // solver node = node_offset + stride * k (rods: 2)
  Index env = 0;
};

// appends one S-contact per (node, shape) pair within the margin, in node-then-shape order
void DetectStaticContacts(const std::vector<StaticShape>& shapes, const NodeView& nodes, Scalar dt,
                          Scalar extra_margin, ContactSet* contacts);

}  // namespace condsim
