// Nodalization (paper Sec. III-A2, eq. 14-15): every contact point that is not a node becomes a
// virtual node tied to its hosts with gain kv; then the solver's views of them: rigid groups
// (rigid bodies with their virtual nodes and the exact inverse of their block of A) and
// barycentric nodes, and the FEM bodies' patches for the body-mode correction.
#pragma once

#include <memory>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/system/virtual_nodes.h"
#include "models/world/bodies.h"

namespace condsim {

class Nodalizer {
 public:
  // forgets the last step's virtual nodes
  void Reset();
  // a virtual node at point p of rigid body k (J = [I, -[r]x], gain kv); returns its global node
  Index RigidPoint(const WorldBodies& w, Index k, const Vec3& p);
  // a barycentric virtual node on global hosts h[0..n) with weights wt; returns its global node
  Index Barycentric(const WorldBodies& w, Index n, const Index* hosts, const Scalar* wt);
  const VirtualNodeSet& virtual_nodes() const { return vn_; }
  const BarycentricNodes& barycentric() const { return bary_; }
  // rigid groups (joint-connected bodies) with their virtual nodes; A_o^-1 from the rigid
  // part's assembled values (RigidModel::Assemble)
  RigidGroups BuildRigidGroups(const WorldBodies& w, const std::vector<Scalar>& rigid_values) const;
  // each FEM body split into params.cond.body_mode_patches patches of a grid on its positions
  // when the patches are made (its first step, or a new node count: the only time they come to
  // the host); the patches are kept in the bodies. The arms are computed on the backend from the
  // bodies' current positions (BodyModes::device_arm, valid until the next call)
  BodyModes BuildBodyModes(WorldBodies* w);

 private:
  VirtualNodeSet vn_;
  BarycentricNodes bary_;  // this step's virtual nodes on FEM triangles and cable links
  std::unique_ptr<BodyPatchArms> arms_;  // the body modes' arms (made at the first call)
};

}  // namespace condsim
