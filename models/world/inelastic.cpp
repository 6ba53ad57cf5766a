// The inelastic stage: deformable nodes per contact, rigid bodies per rigid group.
#include "models/world/inelastic.h"

#include <Eigen/Dense>
#include <algorithm>

#include "models/integrate/midpoint.h"

namespace condsim {

namespace {

// one target of a rigid body: n^T J dv = n^T J (v-hat - v_next) along a contact axis
using TargetRow = std::pair<Eigen::Matrix<Scalar, 1, 6>, Scalar>;

// the targets of every rigid side of the pressed contacts, per rigid body; rigid_next holds the
// bodies' velocities after the update (2 per body: v, omega)
std::vector<std::vector<TargetRow>> RigidTargets(const WorldBodies& w, const ContactSet& contacts, const std::vector<ContactMeta>& meta,
                                                 const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                                                 const std::vector<Scalar>& rigid_next) {
  std::vector<std::vector<TargetRow>> rows(std::size_t(w.rigid.num_bodies()));
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Mat3 r = contacts.Frame(m);
    const int axes = IsSticking(contacts, lambda, m) ? 3 : 1;
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      const Index rigid = side == 0 ? meta[m].rigid_i : meta[m].rigid_j;
      if (node < 0 || rigid < 0) continue;
      const Vec3 arm = side == 0 ? meta[m].arm_i : meta[m].arm_j;
      const Index t = w.RigidNode(rigid);
      const Vec3 mid = LoadVec3(vhat.data(), t) + Cross(LoadVec3(vhat.data(), t + 1), arm);
      const Vec3 now = LoadVec3(rigid_next.data(), 2 * rigid) + Cross(LoadVec3(rigid_next.data(), 2 * rigid + 1), arm);
      for (int a = 0; a < axes; ++a) {
        const Vec3 d = r.Row(a);
        Eigen::Matrix<Scalar, 1, 6> row;
        const Vec3 rd = Cross(arm, d);  // d . (w x arm) = (arm x d) . w
        row << d[0], d[1], d[2], rd[0], rd[1], rd[2];
        rows[rigid].push_back({row, Dot(d, mid - now)});
      }
    }
  }
  return rows;
}

// per rigid group: dv = M^-1 C^T y with (C M^-1 C^T) y = d, C the targets' rows and the joints'
// constraint rows (targets 0); added to rigid_next
void CorrectRigidGroups(const WorldBodies& w, const std::vector<std::vector<TargetRow>>& rows, std::vector<Scalar>* rigid_next) {
  const RigidModel& rigid = w.rigid;
  std::vector<JointRow> jrows;
  std::vector<Index> jrow_joint;
  for (const std::vector<Index>& group : rigid.groups()) {
    Index m = 0;
    for (Index b : group) m += static_cast<Index>(rows[b].size());
    if (m == 0) continue;
    const Index dim = 6 * static_cast<Index>(group.size());
    auto column = [&](Index body) { return 6 * Index(std::lower_bound(group.begin(), group.end(), body) - group.begin()); };
    jrows.clear();
    jrow_joint.clear();
    for (Index j = 0; j < rigid.num_joints(); ++j) {
      if (!std::binary_search(group.begin(), group.end(), rigid.joint(j).body_i)) continue;
      rigid.ConstraintRows(j, w.params.dt, &jrows);
      jrow_joint.resize(jrows.size(), j);
    }
    const Index total = m + static_cast<Index>(jrows.size());
    Eigen::MatrixXd c = Eigen::MatrixXd::Zero(total, dim);
    Eigen::VectorXd d = Eigen::VectorXd::Zero(total);
    Index i = 0;
    for (Index b : group)
      for (const TargetRow& row : rows[b]) {
        c.block(i, column(b), 1, 6) = row.first.template cast<double>();
        d[i++] = row.second;
      }
    for (std::size_t r = 0; r < jrows.size(); ++r, ++i) {
      const JointState& js = rigid.joint(jrow_joint[r]);
      for (int p = 0; p < 4; ++p) {
        const Index body = p < 2 ? js.body_i : js.body_j;
        if (body < 0) continue;
        for (int q = 0; q < 3; ++q) c(i, column(body) + 3 * (p % 2) + q) = jrows[r].g[p][q];
      }
    }
    Eigen::MatrixXd minv = Eigen::MatrixXd::Zero(dim, dim);
    for (std::size_t q = 0; q < group.size(); ++q) {
      const Mat3 iw_inv = Inverse(rigid.WorldInertia(group[q]));
      for (int a = 0; a < 3; ++a) {
        minv(6 * q + a, 6 * q + a) = 1 / rigid.body(group[q]).mass;
        for (int b = 0; b < 3; ++b) minv(6 * q + 3 + a, 6 * q + 3 + b) = iw_inv(a, b);
      }
    }
    const Eigen::MatrixXd sm = c * minv * c.transpose();
    const Eigen::VectorXd y = sm.completeOrthogonalDecomposition().solve(d);
    const Eigen::VectorXd dv = minv * c.transpose() * y;
    for (std::size_t q = 0; q < group.size(); ++q) {
      AddVec3(rigid_next->data(), 2 * group[q], Vec3(dv[6 * q], dv[6 * q + 1], dv[6 * q + 2]));
      AddVec3(rigid_next->data(), 2 * group[q] + 1, Vec3(dv[6 * q + 3], dv[6 * q + 4], dv[6 * q + 5]));
    }
  }
}

}  // namespace

void InelasticStage::Build(const WorldBodies& w) { mass_ = w.BaseNodeMasses(); }

void InelasticStage::Run(WorldBodies* w, const ContactSet& contacts, const std::vector<ContactMeta>& meta,
                         const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat) {
  RigidModel& rigid = w->rigid;
  std::vector<Scalar> rigid_next(6 * std::size_t(rigid.num_bodies()));
  for (Index k = 0; k < rigid.num_bodies(); ++k) {
    StoreVec3(rigid_next.data(), 2 * k, rigid.body(k).v);
    StoreVec3(rigid_next.data(), 2 * k + 1, rigid.body(k).omega);
  }
  const std::vector<std::vector<TargetRow>> rows = RigidTargets(*w, contacts, meta, lambda, vhat, rigid_next);
  // deformable parts: their velocities side by side in the global node layout
  std::vector<Scalar> v_next(3 * mass_.size(), 0);
  for (std::size_t d = 0; d < w->num_deformable(); ++d) {
    const std::vector<Scalar> part = w->DeformableVelocity(d).ToHost();
    std::copy(part.begin(), part.end(), v_next.begin() + 3 * std::size_t(w->system->part_offset(w->DeformablePart(d))));
  }
  ApplyInelasticContacts(contacts, lambda, vhat, mass_, &w->system->virtual_nodes(), &v_next);
  for (std::size_t d = 0; d < w->num_deformable(); ++d) {
    const auto first = v_next.begin() + 3 * std::size_t(w->system->part_offset(w->DeformablePart(d)));
    w->DeformableVelocity(d).CopyFromHost(std::vector<Scalar>(first, first + 3 * std::size_t(w->DeformableNodes(d))));
  }
  CorrectRigidGroups(*w, rows, &rigid_next);
  for (Index k = 0; k < rigid.num_bodies(); ++k) {
    rigid.mutable_body(k).v = LoadVec3(rigid_next.data(), 2 * k);
    rigid.mutable_body(k).omega = LoadVec3(rigid_next.data(), 2 * k + 1);
  }
}

}  // namespace condsim
