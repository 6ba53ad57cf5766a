// Static world geometry and node-vs-world contact generation (S-contacts, paper Sec. III-A):
// planes, spheres, boxes and capsules (finite cylinders with hemispherical caps). For a node of
// radius r at x with velocity v, the gap is the signed distance minus r; a contact is generated
// when gap <= margin = r_detect + |v| t (so a node cannot cross a thin shape within one step),
// with normal n (outward), a frame whose first row is n, and phi_n = gap / t: the node may close
// the gap within the step but not pass the surface (a penetration, gap < 0, is pushed out within
// the step). Host code (the GPU broad phase comes with the rest of the collision issue).
#pragma once

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
Proximity ShapeProximity(const StaticShape& shape, const Vec3& p);

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
