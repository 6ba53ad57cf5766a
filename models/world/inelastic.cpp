// The inelastic stage: one least-kinetic-energy velocity correction per connected component of
// pressed contacts (docs/collision.md, "Inelastic contacts for bodies").
#include "models/world/inelastic.h"

#include <Eigen/Dense>
#include <algorithm>
#include <numeric>

#include "models/integrate/midpoint.h"

namespace condsim {

namespace {

// one term of a constraint row: a base node and the row's 3 coefficients on it (c = s J_a^T d)
struct RowTerm {
  Index node;
  Vec3 c;
};

// union-find over the base nodes (path halving)
Index Find(std::vector<Index>* parent, Index a) {
  while ((*parent)[a] != a) a = (*parent)[a] = (*parent)[(*parent)[a]];
  return a;
}

void Unite(std::vector<Index>* parent, Index a, Index b) {
  a = Find(parent, a);
  b = Find(parent, b);
  if (a != b) (*parent)[std::max(a, b)] = std::min(a, b);
}

}  // namespace

void InelasticStage::Build(const WorldBodies& w) { mass_ = w.BaseNodeMasses(); }

void InelasticStage::Run(WorldBodies* w, const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat) {
  RigidModel& rigid = w->rigid;
  const VirtualNodeSet& vn = w->system->virtual_nodes();
  const Index base = static_cast<Index>(mass_.size());
  const Index rigid_first = rigid.num_bodies() > 0 ? w->RigidNode(0) : base;
  auto is_rigid = [&](Index node) { return node >= rigid_first && node < rigid_first + 2 * rigid.num_bodies(); };
  // v_next: every base node's velocity after the update (deformable parts, then the rigid
  // bodies' v and omega nodes), in the global node layout
  std::vector<Scalar> v_next(3 * mass_.size(), 0);
  for (std::size_t d = 0; d < w->num_deformable(); ++d) {
    const std::vector<Scalar> part = w->DeformableVelocity(d).ToHost();
    std::copy(part.begin(), part.end(), v_next.begin() + 3 * std::size_t(w->system->part_offset(w->DeformablePart(d))));
  }
  for (Index k = 0; k < rigid.num_bodies(); ++k) {
    StoreVec3(v_next.data(), w->RigidNode(k), rigid.body(k).v);
    StoreVec3(v_next.data(), w->RigidNode(k) + 1, rigid.body(k).omega);
  }
  // the base nodes a contact side moves with, and their 3x3 blocks J_a (a node: I; a virtual
  // node: its hosts, eq. 14); mass-0 deformable nodes (cable rotation nodes) never carry a side
  auto side_hosts = [&](Index node, Index* hosts, const Scalar** jac, Scalar* eye) {
    if (node < base) {
      hosts[0] = node;
      jac[0] = eye;
      return 1;
    }
    const Index k = node - base;
    CONDSIM_CHECK(k < vn.size() && vn.ptr[k + 1] - vn.ptr[k] <= 8,
                  "inelastic stage: contact node " << node << " beyond the virtual nodes or with more than 8 hosts");
    int n = 0;
    for (Index q = vn.ptr[k]; q < vn.ptr[k + 1]; ++q, ++n) {
      hosts[n] = vn.host[q];
      jac[n] = vn.jac.data() + 9 * std::size_t(q);
    }
    return n;
  };
  Scalar eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  // components: a rigid group's bodies are one unit (their joints couple them), a deformable
  // node another; the pressed contacts join the units they touch
  std::vector<Index> parent(mass_.size());
  std::iota(parent.begin(), parent.end(), Index(0));
  for (const std::vector<Index>& group : rigid.groups())
    for (Index b : group) {
      Unite(&parent, w->RigidNode(group[0]), w->RigidNode(b));
      Unite(&parent, w->RigidNode(b), w->RigidNode(b) + 1);
    }
  auto pressed = [&](Index m) { return lambda[3 * std::size_t(m)] > 0; };
  Index hosts[8];
  const Scalar* jac[8];
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!pressed(m)) continue;
    Index first = -1;
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      if (node < 0) continue;
      const int n = side_hosts(node, hosts, jac, eye);
      for (int q = 0; q < n; ++q) {
        if (!(mass_[hosts[q]] > 0) && !is_rigid(hosts[q])) continue;
        if (first < 0) first = hosts[q];
        Unite(&parent, first, hosts[q]);
      }
    }
  }
  // a component with a rigid body is solved as a whole below; the others (deformable nodes only)
  // by the per-contact closed form of ApplyInelasticContacts
  std::vector<char> rigid_root(mass_.size(), 0);
  for (Index k = 0; k < rigid.num_bodies(); ++k) rigid_root[Find(&parent, w->RigidNode(k))] = 1;
  auto contact_root = [&](Index m) {
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      if (node < 0) continue;
      const int n = side_hosts(node, hosts, jac, eye);
      for (int q = 0; q < n; ++q)
        if (mass_[hosts[q]] > 0 || is_rigid(hosts[q])) return Find(&parent, hosts[q]);
    }
    return Index(-1);
  };
  std::vector<Scalar> lambda_deformable = lambda;
  std::vector<std::pair<Index, Index>> coupled;  // (component root, contact) of the rigid components
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!pressed(m)) continue;
    const Index root = contact_root(m);
    if (root < 0 || !rigid_root[root]) continue;
    coupled.push_back({root, m});
    lambda_deformable[3 * std::size_t(m)] = 0;
  }
  ApplyInelasticContacts(contacts, lambda_deformable, vhat, mass_, &vn, &v_next);
  std::stable_sort(coupled.begin(), coupled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // per rigid component: C dv = C (v-hat - v_next) along every pressed contact's corrected axes
  // (the relative velocity of its two sides), joint rows C_j dv = 0; the least kinetic-energy
  // change (Gauss's principle of least constraint, Gauss 1829) dv = M^-1 C^T y with
  // (C M^-1 C^T) y = d, by a complete orthogonal decomposition (dependent rows, e.g. four corners
  // of a box, in the least-squares sense). A contact row puts equal and opposite impulses on its
  // two sides (the weights of a side sum to 1): the total linear momentum is kept
  std::vector<Index> column(mass_.size(), -1);
  std::vector<Mat3> iw_inv;
  if (!coupled.empty())
    for (Index k = 0; k < rigid.num_bodies(); ++k) iw_inv.push_back(Inverse(rigid.WorldInertia(k)));
  // (component root, rigid group) of every group, by root
  std::vector<std::pair<Index, Index>> group_roots;
  if (!coupled.empty())
    for (std::size_t g = 0; g < rigid.groups().size(); ++g)
      group_roots.push_back({Find(&parent, w->RigidNode(rigid.groups()[g][0])), static_cast<Index>(g)});
  std::sort(group_roots.begin(), group_roots.end());
  std::vector<Index> blocks;  // first base node of each column block (a body: 2 nodes; else 1)
  std::vector<std::vector<RowTerm>> rows;
  std::vector<Scalar> targets;
  std::vector<JointRow> jrows;
  for (std::size_t begin = 0; begin < coupled.size();) {
    std::size_t end = begin;
    while (end < coupled.size() && coupled[end].first == coupled[begin].first) ++end;
    rows.clear();
    targets.clear();
    blocks.clear();
    Index dim = 0;
    auto add_column = [&](Index node) {
      if (column[node] >= 0) return;
      if (is_rigid(node)) {
        const Index t = node - (node - rigid_first) % 2;
        column[t] = dim;
        column[t + 1] = dim + 3;
        blocks.push_back(t);
        dim += 6;
      } else {
        column[node] = dim;
        blocks.push_back(node);
        dim += 3;
      }
    };
    // every body of the component's rigid groups (their joints join the rows)
    const auto groups = std::equal_range(group_roots.begin(), group_roots.end(), std::make_pair(coupled[begin].first, Index(-1)),
                                         [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = groups.first; it != groups.second; ++it)
      for (Index b : rigid.groups()[it->second]) add_column(w->RigidNode(b));
    for (std::size_t e = begin; e < end; ++e) {
      const Index m = coupled[e].second;
      const Mat3 r = contacts.Frame(m);
      const int axes = IsSticking(contacts, lambda, m) ? 3 : 1;
      for (int a = 0; a < axes; ++a) {
        const Vec3 d = r.Row(a);
        std::vector<RowTerm> row;
        Scalar target = 0;
        for (int side = 0; side < 2; ++side) {
          const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
          if (node < 0) continue;
          const Scalar sign = side == 0 ? 1 : -1;
          const int n = side_hosts(node, hosts, jac, eye);
          for (int q = 0; q < n; ++q) {
            if (!(mass_[hosts[q]] > 0) && !is_rigid(hosts[q])) continue;
            // c = s J_a^T d
            const Scalar* j = jac[q];
            const Vec3 c = sign * Vec3(j[0] * d[0] + j[3] * d[1] + j[6] * d[2], j[1] * d[0] + j[4] * d[1] + j[7] * d[2],
                                       j[2] * d[0] + j[5] * d[1] + j[8] * d[2]);
            add_column(hosts[q]);
            row.push_back({hosts[q], c});
            target += Dot(c, LoadVec3(vhat.data(), hosts[q]) - LoadVec3(v_next.data(), hosts[q]));
          }
        }
        rows.push_back(std::move(row));
        targets.push_back(target);
      }
    }
    for (auto it = groups.first; it != groups.second; ++it)
      for (Index j = 0; j < rigid.num_joints(); ++j) {
        const Index g = it->second;
        const JointState& js = rigid.joint(j);
        if (!std::binary_search(rigid.groups()[g].begin(), rigid.groups()[g].end(), js.body_i)) continue;
        jrows.clear();
        rigid.ConstraintRows(j, w->params.dt, &jrows);
        for (const JointRow& jr : jrows) {
          std::vector<RowTerm> row;
          for (int p = 0; p < 4; ++p) {
            const Index body = p < 2 ? js.body_i : js.body_j;
            if (body >= 0) row.push_back({w->RigidNode(body) + p % 2, jr.g[p]});
          }
          rows.push_back(std::move(row));
          targets.push_back(0);
        }
      }
    // M^-1 c on one node: 1/m on a deformable node and a body's v node, I_w^-1 on its omega node
    auto node_minv = [&](Index node, const Vec3& c) {
      Vec3 r;
      if (!is_rigid(node)) {
        r = (1 / mass_[node]) * c;
      } else {
        const Index b = (node - rigid_first) / 2;
        r = (node - rigid_first) % 2 == 0 ? (1 / rigid.body(b).mass) * c : iw_inv[b] * c;
      }
      return Eigen::Vector3d(r[0], r[1], r[2]);
    };
    const Index nrows = static_cast<Index>(rows.size());
    // W = M^-1 C^T (dim x rows), S = C W
    Eigen::MatrixXd wmat = Eigen::MatrixXd::Zero(dim, nrows);
    for (Index i = 0; i < nrows; ++i)
      for (const RowTerm& t : rows[i]) wmat.block<3, 1>(column[t.node], i) += node_minv(t.node, t.c);
    Eigen::MatrixXd s = Eigen::MatrixXd::Zero(nrows, nrows);
    for (Index i = 0; i < nrows; ++i)
      for (const RowTerm& t : rows[i])
        s.row(i) += Eigen::Vector3d(t.c[0], t.c[1], t.c[2]).transpose() * wmat.block(column[t.node], 0, 3, nrows);
    const Eigen::VectorXd rhs = Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>>(targets.data(), nrows).template cast<double>();
    const Eigen::VectorXd y = s.completeOrthogonalDecomposition().solve(rhs);
    const Eigen::VectorXd dv = wmat * y;
    for (Index t : blocks) {
      const int nodes = is_rigid(t) ? 2 : 1;
      for (int q = 0; q < nodes; ++q) {
        const Index c = column[t + q];
        AddVec3(v_next.data(), t + q, Vec3(dv[c], dv[c + 1], dv[c + 2]));
        column[t + q] = -1;
      }
    }
    begin = end;
  }
  for (std::size_t d = 0; d < w->num_deformable(); ++d) {
    const auto first = v_next.begin() + 3 * std::size_t(w->system->part_offset(w->DeformablePart(d)));
    w->DeformableVelocity(d).CopyFromHost(std::vector<Scalar>(first, first + 3 * std::size_t(w->DeformableNodes(d))));
  }
  for (Index k = 0; k < rigid.num_bodies(); ++k) {
    rigid.mutable_body(k).v = LoadVec3(v_next.data(), w->RigidNode(k));
    rigid.mutable_body(k).omega = LoadVec3(v_next.data(), w->RigidNode(k) + 1);
  }
}

}  // namespace condsim
