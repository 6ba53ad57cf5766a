// Nodalization: virtual nodes and the solver's rigid groups, barycentric nodes and body modes.
#include "models/world/nodalize.h"

#include <algorithm>

#include <Eigen/Dense>

namespace condsim {

void Nodalizer::Reset() {
  vn_ = VirtualNodeSet();
  bary_ = BarycentricNodes();
}

Index Nodalizer::RigidPoint(const WorldBodies& w, Index k, const Vec3& p) {
  const Index trans = w.RigidNode(k);
  return w.system->num_base_nodes() + vn_.AddRigidPoint(trans, trans + 1, p - w.rigid.body(k).x, w.params.kv);
}

Index Nodalizer::Barycentric(const WorldBodies& w, Index n, const Index* hosts, const Scalar* wt) {
  const Index node = w.system->num_base_nodes() + vn_.AddBarycentric(n, hosts, wt, w.params.kv);
  bary_.node.push_back(node);
  for (Index k = 0; k < n; ++k) {
    bary_.host.push_back(hosts[k]);
    bary_.weight.push_back(wt[k]);
  }
  bary_.ptr.push_back(static_cast<Index>(bary_.host.size()));
  bary_.kv.push_back(w.params.kv);
  return node;
}

RigidGroups Nodalizer::BuildRigidGroups(const WorldBodies& w, const std::vector<Scalar>& rigid_values) const {
  RigidGroups groups;
  const RigidModel& rigid = w.rigid;
  const Index rigid_offset = w.system->part_offset(w.rigid_part);
  // the virtual nodes of each rigid body (two hosts: its v and omega nodes)
  std::vector<std::vector<Index>> per_body(std::size_t(rigid.num_bodies()));
  for (Index k = 0; k < vn_.size(); ++k) {
    const Index host = vn_.host[vn_.ptr[k]];
    if (host >= rigid_offset && host < rigid_offset + rigid.num_nodes() && vn_.ptr[k + 1] - vn_.ptr[k] == 2)
      per_body[(host - rigid_offset) / 2].push_back(k);
  }
  for (const std::vector<Index>& group : rigid.groups()) {
    for (Index b : group) {
      groups.trans.push_back(rigid_offset + 2 * b);
      groups.rot.push_back(rigid_offset + 2 * b + 1);
      for (Index k : per_body[b]) {
        groups.node.push_back(w.system->num_base_nodes() + k);
        // J_rot = -[r]x (row-major), so r = (J(1,2), J(2,0), J(0,1))
        const Scalar* j = vn_.jac.data() + 9 * std::size_t(vn_.ptr[k] + 1);
        groups.arm.push_back(j[5]);
        groups.arm.push_back(j[6]);
        groups.arm.push_back(j[1]);
        groups.kv.push_back(vn_.kv[k]);
      }
      groups.ptr.push_back(static_cast<Index>(groups.node.size()));
    }
    groups.body_ptr.push_back(static_cast<Index>(groups.trans.size()));
    // A_o^-1 of the group (eq. 15 without the virtual-node terms), row-major
    const Index dim = 6 * static_cast<Index>(group.size());
    const std::vector<Scalar> dense = rigid.GroupMatrix(rigid_values, group);
    const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> inv =
        Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(dense.data(), dim, dim).inverse();
    for (Index r = 0; r < dim; ++r)
      for (Index c = 0; c < dim; ++c) groups.ao_inv.push_back(inv(r, c));
  }
  return groups;
}

BodyModes Nodalizer::BuildBodyModes(WorldBodies* w) {
  // material patches (they follow the body) with arms from each patch's mean node position (any
  // reference point spans the same modes; the mean keeps Z^T A Z well scaled); the solver leaves
  // out contact nodes
  BodyModes modes;
  if (w->fem.empty()) return modes;
  std::vector<Index> first;
  std::vector<const Array<Scalar>*> x;
  for (std::size_t f = 0; f < w->fem.size(); ++f) {
    FemBody& body = *w->fem[f];
    // patches: body_mode_patches per body, and more with body_mode_patch_nodes: one per that
    // many nodes
    const Index nodes = body.x.size() / 3, per = w->params.cond.body_mode_patch_nodes;
    const Index target = std::max<Index>(w->params.cond.body_mode_patches, per > 0 ? (nodes + per / 2) / per : 0);
    if (Index(body.patch.size()) != nodes) body.patch = GridPatches(body.x.ToHost(), target);
    first.push_back(w->system->part_offset(body.part));
    AppendBodyPatchNodes(body.patch, first.back(), &modes);
    x.push_back(&body.x);
  }
  if (!arms_) arms_ = std::make_unique<BodyPatchArms>(w->backend);
  arms_->SetPatches(modes, first);
  arms_->Compute(x);
  modes.device_arm = &arms_->arm();
  modes.device_body_arm = &arms_->body_arm();
  return modes;
}

}  // namespace condsim
