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

// one step's view of the bodies for the correction: the base-node layout, the contact sides'
// hosts and the velocities after the midpoint update (v_next)
class Correction {
 public:
  Correction(WorldBodies* w, InelasticStage::Buffers* buf, const std::vector<Scalar>& mass, const ContactSet& contacts,
             const std::vector<Scalar>& rigid_vhat)
      : w_(*w),
        buf_(*buf),
        rigid_(w->rigid),
        vn_(w->system->virtual_nodes()),
        mass_(mass),
        contacts_(contacts),
        rigid_vhat_(rigid_vhat),
        base_(static_cast<Index>(mass.size())),
        rigid_first_(rigid_.num_bodies() > 0 ? w->RigidNode(0) : base_) {}

  // which contacts are pressed (lambda_n > 0): one flag per contact from the backend; when no
  // contact can be corrected there (host_only, or no S-contact on a deformable node), every
  // impulse in one read instead
  void ReadPressed(const Scalar* lambda, bool host_only) {
    const Index n = contacts_.size();
    bool lone_possible = false;
    for (Index m = 0; m < n && !host_only && !lone_possible; ++m) lone_possible = LoneCandidate(m);
    all_lambda_ = !lone_possible;
    buf_.pressed_host.resize(std::size_t(n));
    if (all_lambda_) {
      ReadAllImpulses(lambda);
      // the backend's rule (PressedFlagOp) on the host's copy
      const PressedFlagOp flag{lambda_.data(), buf_.pressed_host.data()};
      for (Index m = 0; m < n; ++m) flag(m);
      return;
    }
    buf_.pressed.Resize(w_.backend, n);
    buf_.kernels->Run(n, PressedFlagOp{lambda, buf_.pressed.data()});
    w_.backend->CopyToHost(buf_.pressed_host.data(), buf_.pressed.data(), std::size_t(n));
  }

  // whether a pressed contact corrected here has its frame on the backend only
  bool NeedsFieldsOf(const ContactRecordWriter& maker) const {
    for (Index m = 0; m < contacts_.size(); ++m)
      if (Pressed(m) && !on_backend_[std::size_t(m)] && maker.Deferred(m)) return true;
    return false;
  }

  // every contact's impulse to lambda_, one read
  void ReadAllImpulses(const Scalar* lambda) {
    lambda_.resize(3 * std::size_t(contacts_.size()));
    w_.backend->CopyToHost(lambda_.data(), lambda, sizeof(Scalar) * lambda_.size());
  }

  // the impulses of the pressed contacts corrected here (the others are not read: 0): gathered on
  // the backend, or all of them in one read when those are over half the contacts
  void ReadImpulses(const Scalar* lambda) {
    if (all_lambda_) return;
    const Index n = contacts_.size();
    lambda_.assign(3 * std::size_t(n), 0);
    buf_.lambda_idx_host.clear();
    for (Index m = 0; m < n; ++m)
      if (Pressed(m) && !on_backend_[std::size_t(m)]) buf_.lambda_idx_host.push_back(m);
    const Index k = static_cast<Index>(buf_.lambda_idx_host.size());
    if (k == 0) return;
    if (2 * k > n) {
      ReadAllImpulses(lambda);
      return;
    }
    buf_.lambda_idx.Assign(w_.backend, buf_.lambda_idx_host);
    buf_.lambda_values.Resize(w_.backend, 3 * k);
    buf_.kernels->Run(k, GatherVec3Op{lambda, buf_.lambda_idx.data(), buf_.lambda_values.data()});
    buf_.lambda_values_host.resize(3 * std::size_t(k));
    w_.backend->CopyToHost(buf_.lambda_values_host.data(), buf_.lambda_values.data(), sizeof(Scalar) * 3 * std::size_t(k));
    for (Index q = 0; q < k; ++q) StoreVec3(lambda_.data(), buf_.lambda_idx_host[std::size_t(q)], LoadVec3(buf_.lambda_values_host.data(), q));
  }

  // the pressed S-contacts on a deformable node (with mass) that no other pressed contact
  // touches: corrected on the backend (nobody else moves their node, so the order of the
  // corrections does not matter and the result is the per-contact closed form's), the others here
  void SelectBackendContacts(bool host_only) {
    on_backend_.assign(std::size_t(contacts_.size()), 0);
    if (host_only) return;
    std::vector<Index> hosts;
    for (Index m = 0; m < contacts_.size(); ++m)
      if (Pressed(m)) ForEachHost(m, [&](int, Index host, const Scalar*) { hosts.push_back(host); });
    pressed_hosts_ = static_cast<Index>(hosts.size());
    std::sort(hosts.begin(), hosts.end());
    for (Index m = 0; m < contacts_.size(); ++m) {
      if (!Pressed(m) || !LoneCandidate(m)) continue;
      const auto same = std::equal_range(hosts.begin(), hosts.end(), contacts_.node_i[m]);
      if (same.second - same.first == 1) on_backend_[std::size_t(m)] = 1;
    }
  }

  // those contacts' corrections on the backend, one launch per deformable part over their indices
  // in node order: chosen there by the same rule from the same pressed flags (InelasticLoneKeyOp:
  // the pressed contacts' hosts sorted, then the lone contacts' nodes), so only their count per
  // part is the host's
  void CorrectOnBackend(const ContactView& record, const Scalar* lambda_dev) {
    std::vector<std::pair<Index, Index>> by_node;  // (node, contact)
    for (Index m = 0; m < contacts_.size(); ++m)
      if (on_backend_[std::size_t(m)]) by_node.push_back({contacts_.node_i[m], m});
    buf_.items_host.clear();
    if (by_node.empty()) return;
    std::sort(by_node.begin(), by_node.end());
    buf_.item_part.assign(w_.num_deformable() + 1, 0);
    for (std::size_t d = 0; d < w_.num_deformable(); ++d) {
      const Index first = w_.system->part_offset(w_.DeformablePart(d)), end = first + w_.DeformableNodes(d);
      buf_.item_part[d] = static_cast<Index>(buf_.items_host.size());
      auto lo = std::lower_bound(by_node.begin(), by_node.end(), std::make_pair(first, Index(-1)));
      for (auto it = lo; it != by_node.end() && it->first < end; ++it) buf_.items_host.push_back(it->second);
    }
    buf_.item_part[w_.num_deformable()] = static_cast<Index>(buf_.items_host.size());
    CONDSIM_CHECK(buf_.items_host.size() == by_node.size(), "inelastic stage: a contact node outside the deformable parts");
    const Index n = contacts_.size();
    const VirtualNodesOnBackend& vn = w_.system->virtual_nodes_on_backend();
    const InelasticSides sides{record, buf_.pressed.data(), buf_.mass.data(), vn.ptr, vn.host, base_, rigid_first_,
                               rigid_first_ + 2 * rigid_.num_bodies()};
    Backend* b = w_.backend;
    buf_.host_offset.Resize(b, n + 1);
    buf_.kernels->Run(n + 1, InelasticHostCountOp{sides, n, buf_.host_offset.data()});
    b->ExclusiveScanOnBackend(n + 1, buf_.host_offset, &buf_.host_offset);
    buf_.host_key.Resize(b, pressed_hosts_);
    buf_.host_order.Resize(b, pressed_hosts_);
    buf_.kernels->Run(n, InelasticHostKeyOp{sides, buf_.host_offset.data(), buf_.host_key.data(), buf_.host_order.data()});
    b->SortPairs(pressed_hosts_, &buf_.host_key, &buf_.host_order);
    buf_.lone_key.Resize(b, n);
    buf_.items.Resize(b, n);
    buf_.kernels->Run(n, InelasticLoneKeyOp{sides, buf_.host_key.data(), pressed_hosts_, buf_.lone_key.data(), buf_.items.data()});
    b->SortPairs(n, &buf_.lone_key, &buf_.items);
    for (std::size_t d = 0; d < w_.num_deformable(); ++d) {
      const Index first = buf_.item_part[d], count = buf_.item_part[d + 1] - first;
      if (count > 0)
        buf_.kernels->Run(count, InelasticNodeOp{record, lambda_dev, buf_.mass.data(), w_.v.data(), buf_.items.data() + first,
                                                 w_.system->part_offset(w_.DeformablePart(d)), w_.DeformableVelocity(d).data()});
    }
  }

  // v-hat and v_next (every base node's velocity after the update) in the global node layout, on
  // the nodes the correction reads and writes: the deformable hosts of pressed contacts, read
  // from the backend (one upload of their indices, one gather per part, one read back), and the
  // rigid bodies' v and omega nodes; the other entries stay 0, unread
  void Gather() {
    v_next_.assign(3 * mass_.size(), 0);
    vhat_.assign(3 * mass_.size(), 0);
    // the deformable hosts, by global node (so grouped by part)
    touched_.clear();
    for (Index m = 0; m < contacts_.size(); ++m)
      if (Pressed(m) && !on_backend_[std::size_t(m)])
        ForEachHost(m, [&](int, Index host, const Scalar*) {
          if (!IsRigid(host)) touched_.push_back(host);
        });
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    const Index t = static_cast<Index>(touched_.size());
    if (t > 0) {
      // indices: global (into w->v) then local (into each part's velocity)
      buf_.idx_host.assign(2 * touched_.size(), 0);
      part_begin_.assign(w_.num_deformable() + 1, 0);
      std::size_t q = 0;
      for (std::size_t d = 0; d < w_.num_deformable(); ++d) {
        const Index first = w_.system->part_offset(w_.DeformablePart(d)), end = first + w_.DeformableNodes(d);
        part_begin_[d] = static_cast<Index>(q);
        // this part's range of touched_ (entry k names global node idx_host[k], in part order)
        auto lo = std::lower_bound(touched_.begin(), touched_.end(), first), hi = std::lower_bound(touched_.begin(), touched_.end(), end);
        for (auto it = lo; it != hi; ++it, ++q) {
          buf_.idx_host[q] = *it;
          buf_.idx_host[touched_.size() + q] = *it - first;
        }
      }
      part_begin_[w_.num_deformable()] = static_cast<Index>(q);
      CONDSIM_CHECK(q == touched_.size(), "inelastic stage: a contact host outside the deformable parts");
      buf_.idx.Assign(w_.backend, buf_.idx_host);
      buf_.values.Resize(w_.backend, 6 * t);
      buf_.kernels->Run(t, GatherVec3Op{w_.v.data(), buf_.idx.data(), buf_.values.data()});
      for (std::size_t d = 0; d < w_.num_deformable(); ++d) {
        const Index b = part_begin_[d], n = part_begin_[d + 1] - b;
        if (n > 0)
          buf_.kernels->Run(n, GatherVec3Op{w_.DeformableVelocity(d).data(), buf_.idx.data() + t + b, buf_.values.data() + 3 * (t + b)});
      }
      buf_.values_host.resize(6 * touched_.size());
      w_.backend->CopyToHost(buf_.values_host.data(), buf_.values.data(), sizeof(Scalar) * buf_.values_host.size());
      for (std::size_t k = 0; k < touched_.size(); ++k) {
        const Index node = buf_.idx_host[k];
        StoreVec3(vhat_.data(), node, LoadVec3(buf_.values_host.data(), Index(k)));
        StoreVec3(v_next_.data(), node, LoadVec3(buf_.values_host.data(), t + Index(k)));
      }
    }
    for (Index k = 0; k < rigid_.num_bodies(); ++k) {
      const Index r = w_.RigidNode(k) - rigid_first_;
      StoreVec3(vhat_.data(), w_.RigidNode(k), LoadVec3(rigid_vhat_.data(), r));
      StoreVec3(vhat_.data(), w_.RigidNode(k) + 1, LoadVec3(rigid_vhat_.data(), r + 1));
      StoreVec3(v_next_.data(), w_.RigidNode(k), rigid_.body(k).v);
      StoreVec3(v_next_.data(), w_.RigidNode(k) + 1, rigid_.body(k).omega);
    }
  }

  // components: a rigid group's bodies are one unit (their joints couple them), a deformable node
  // another; the pressed contacts join the units they touch. Returns the pressed contacts of the
  // components with a rigid body as (component root, contact), by root, and corrects the others
  // (deformable nodes only) by the per-contact closed form of ApplyInelasticContacts
  std::vector<std::pair<Index, Index>> SplitComponents() {
    parent_.resize(mass_.size());
    std::iota(parent_.begin(), parent_.end(), Index(0));
    for (const std::vector<Index>& group : rigid_.groups())
      for (Index b : group) {
        Unite(&parent_, w_.RigidNode(group[0]), w_.RigidNode(b));
        Unite(&parent_, w_.RigidNode(b), w_.RigidNode(b) + 1);
      }
    for (Index m = 0; m < contacts_.size(); ++m) {
      if (!Pressed(m)) continue;
      Index first = -1;
      ForEachHost(m, [&](int, Index host, const Scalar*) {
        if (first < 0) first = host;
        Unite(&parent_, first, host);
      });
    }
    std::vector<char> rigid_root(mass_.size(), 0);
    for (Index k = 0; k < rigid_.num_bodies(); ++k) rigid_root[Find(&parent_, w_.RigidNode(k))] = 1;
    std::vector<Scalar> lambda_deformable = lambda_;
    std::vector<std::pair<Index, Index>> coupled;
    for (Index m = 0; m < contacts_.size(); ++m) {
      if (!Pressed(m)) continue;
      Index root = -1;
      ForEachHost(m, [&](int, Index host, const Scalar*) {
        if (root < 0) root = Find(&parent_, host);
      });
      if (root < 0 || !rigid_root[root]) continue;
      coupled.push_back({root, m});
      lambda_deformable[3 * std::size_t(m)] = 0;
    }
    for (Index m = 0; m < contacts_.size(); ++m)
      if (on_backend_[std::size_t(m)]) lambda_deformable[3 * std::size_t(m)] = 0;
    ApplyInelasticContacts(contacts_, lambda_deformable, vhat_, mass_, &vn_, &v_next_);
    std::stable_sort(coupled.begin(), coupled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return coupled;
  }

  // the rigid components one after the other: coupled[begin, end) share a root
  void SolveRigidComponents(const std::vector<std::pair<Index, Index>>& coupled) {
    if (coupled.empty()) return;
    column_.assign(mass_.size(), -1);
    for (Index k = 0; k < rigid_.num_bodies(); ++k) iw_inv_.push_back(Inverse(rigid_.WorldInertia(k)));
    for (std::size_t g = 0; g < rigid_.groups().size(); ++g)
      group_roots_.push_back({Find(&parent_, w_.RigidNode(rigid_.groups()[g][0])), static_cast<Index>(g)});
    std::sort(group_roots_.begin(), group_roots_.end());
    for (std::size_t begin = 0; begin < coupled.size();) {
      std::size_t end = begin;
      while (end < coupled.size() && coupled[end].first == coupled[begin].first) ++end;
      SolveComponent(coupled, begin, end);
      begin = end;
    }
  }

  // v_next back to the bodies
  void Scatter() {
    // the touched deformable nodes: one upload, one scatter per part
    const Index t = static_cast<Index>(touched_.size());
    if (t > 0) {
      buf_.values_host.resize(3 * touched_.size());
      for (std::size_t k = 0; k < touched_.size(); ++k)
        StoreVec3(buf_.values_host.data(), Index(k), LoadVec3(v_next_.data(), buf_.idx_host[k]));
      w_.backend->CopyFromHost(buf_.values.data(), buf_.values_host.data(), sizeof(Scalar) * buf_.values_host.size());
      for (std::size_t d = 0; d < w_.num_deformable(); ++d) {
        const Index b = part_begin_[d], n = part_begin_[d + 1] - b;
        if (n > 0)
          buf_.kernels->Run(n, ScatterVec3Op{buf_.values.data() + 3 * b, buf_.idx.data() + t + b, w_.DeformableVelocity(d).data()});
      }
    }
    for (Index k = 0; k < rigid_.num_bodies(); ++k) {
      rigid_.mutable_body(k).v = LoadVec3(v_next_.data(), w_.RigidNode(k));
      rigid_.mutable_body(k).omega = LoadVec3(v_next_.data(), w_.RigidNode(k) + 1);
    }
  }

 private:
  bool IsRigid(Index node) const { return node >= rigid_first_ && node < rigid_first_ + 2 * rigid_.num_bodies(); }
  bool Pressed(Index m) const { return buf_.pressed_host[std::size_t(m)] != 0; }
  // an S-contact on a deformable base node with mass (InelasticNodeOp can correct it when no
  // other pressed contact touches the node)
  bool LoneCandidate(Index m) const {
    const Index i = contacts_.node_i[m];
    return contacts_.node_j[m] < 0 && i >= 0 && i < base_ && !IsRigid(i) && mass_[i] > 0;
  }

  // f(side, host, J_a) for every base node a side of contact m moves with (a node: itself with
  // J = I; a virtual node: its hosts, eq. 14); mass-0 deformable nodes (cable rotation nodes)
  // never carry a side
  template <typename F>
  void ForEachHost(Index m, F&& f) const {
    static const Scalar kEye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts_.node_i[m] : contacts_.node_j[m];
      if (node < 0) continue;
      if (node < base_) {
        if (mass_[node] > 0 || IsRigid(node)) f(side, node, kEye);
        continue;
      }
      const Index k = node - base_;
      CONDSIM_CHECK(k < vn_.size() && vn_.ptr[k + 1] - vn_.ptr[k] <= 8,
                    "inelastic stage: contact node " << node << " beyond the virtual nodes or with more than 8 hosts");
      for (Index q = vn_.ptr[k]; q < vn_.ptr[k + 1]; ++q)
        if (mass_[vn_.host[q]] > 0 || IsRigid(vn_.host[q])) f(side, vn_.host[q], vn_.jac.data() + 9 * std::size_t(q));
    }
  }

  // a column block for a base node (a rigid body: its v and omega nodes, 6 columns)
  void AddColumn(Index node) {
    if (column_[node] >= 0) return;
    if (IsRigid(node)) {
      const Index t = node - (node - rigid_first_) % 2;
      column_[t] = dim_;
      column_[t + 1] = dim_ + 3;
      blocks_.push_back(t);
      dim_ += 6;
    } else {
      column_[node] = dim_;
      blocks_.push_back(node);
      dim_ += 3;
    }
  }

  // M^-1 c on one node: 1/m on a deformable node and a body's v node, I_w^-1 on its omega node
  Eigen::Vector3d MinvTimes(Index node, const Vec3& c) const {
    Vec3 r;
    if (!IsRigid(node)) {
      r = (1 / mass_[node]) * c;
    } else {
      const Index b = (node - rigid_first_) / 2;
      r = (node - rigid_first_) % 2 == 0 ? (1 / rigid_.body(b).mass) * c : iw_inv_[b] * c;
    }
    return Eigen::Vector3d(r[0], r[1], r[2]);
  }

  // one rigid component: C dv = C (v-hat - v_next) along every pressed contact's corrected axes
  // (the relative velocity of its two sides), joint rows C_j dv = 0; the least kinetic-energy
  // change (Gauss's principle of least constraint, Gauss 1829) dv = M^-1 C^T y with
  // (C M^-1 C^T) y = d, by a complete orthogonal decomposition (dependent rows, e.g. four corners
  // of a box, in the least-squares sense). A contact row puts equal and opposite impulses on its
  // two sides (the weights of a side sum to 1): the total linear momentum is kept
  void SolveComponent(const std::vector<std::pair<Index, Index>>& coupled, std::size_t begin, std::size_t end) {
    rows_.clear();
    targets_.clear();
    blocks_.clear();
    dim_ = 0;
    // every body of the component's rigid groups (their joints join the rows)
    const auto groups = std::equal_range(group_roots_.begin(), group_roots_.end(), std::make_pair(coupled[begin].first, Index(-1)),
                                         [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = groups.first; it != groups.second; ++it)
      for (Index b : rigid_.groups()[it->second]) AddColumn(w_.RigidNode(b));
    for (std::size_t e = begin; e < end; ++e) AddContactRows(coupled[e].second);
    for (auto it = groups.first; it != groups.second; ++it) AddJointRows(it->second);
    const Index nrows = static_cast<Index>(rows_.size());
    // W = M^-1 C^T (dim x rows), S = C W
    Eigen::MatrixXd wmat = Eigen::MatrixXd::Zero(dim_, nrows);
    for (Index i = 0; i < nrows; ++i)
      for (const RowTerm& t : rows_[i]) wmat.block<3, 1>(column_[t.node], i) += MinvTimes(t.node, t.c);
    Eigen::MatrixXd s = Eigen::MatrixXd::Zero(nrows, nrows);
    for (Index i = 0; i < nrows; ++i)
      for (const RowTerm& t : rows_[i])
        s.row(i) += Eigen::Vector3d(t.c[0], t.c[1], t.c[2]).transpose() * wmat.block(column_[t.node], 0, 3, nrows);
    const Eigen::VectorXd rhs = Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>>(targets_.data(), nrows).template cast<double>();
    const Eigen::VectorXd y = s.completeOrthogonalDecomposition().solve(rhs);
    const Eigen::VectorXd dv = wmat * y;
    for (Index t : blocks_) {
      const int nodes = IsRigid(t) ? 2 : 1;
      for (int q = 0; q < nodes; ++q) {
        const Index c = column_[t + q];
        AddVec3(v_next_.data(), t + q, Vec3(dv[c], dv[c + 1], dv[c + 2]));
        column_[t + q] = -1;
      }
    }
  }

  // contact m's rows: its normal, and its tangents when it sticks; c = s J_a^T d per host
  void AddContactRows(Index m) {
    const Mat3 r = contacts_.Frame(m);
    const int axes = IsSticking(contacts_, lambda_, m) ? 3 : 1;
    for (int a = 0; a < axes; ++a) {
      const Vec3 d = r.Row(a);
      std::vector<RowTerm> row;
      Scalar target = 0;
      ForEachHost(m, [&](int side, Index host, const Scalar* j) {
        const Scalar sign = side == 0 ? 1 : -1;
        const Vec3 c = sign * Vec3(j[0] * d[0] + j[3] * d[1] + j[6] * d[2], j[1] * d[0] + j[4] * d[1] + j[7] * d[2],
                                   j[2] * d[0] + j[5] * d[1] + j[8] * d[2]);
        AddColumn(host);
        row.push_back({host, c});
        target += Dot(c, LoadVec3(vhat_.data(), host) - LoadVec3(v_next_.data(), host));
      });
      rows_.push_back(std::move(row));
      targets_.push_back(target);
    }
  }

  // the constraint rows of rigid group g's joints, target 0 (their relative velocities kept)
  void AddJointRows(Index g) {
    for (Index j = 0; j < rigid_.num_joints(); ++j) {
      const JointState& js = rigid_.joint(j);
      if (!std::binary_search(rigid_.groups()[g].begin(), rigid_.groups()[g].end(), js.body_i)) continue;
      jrows_.clear();
      rigid_.ConstraintRows(j, w_.params.dt, &jrows_);
      for (const JointRow& jr : jrows_) {
        std::vector<RowTerm> row;
        for (int p = 0; p < 4; ++p) {
          const Index body = p < 2 ? js.body_i : js.body_j;
          if (body >= 0) row.push_back({w_.RigidNode(body) + p % 2, jr.g[p]});
        }
        rows_.push_back(std::move(row));
        targets_.push_back(0);
      }
    }
  }

  WorldBodies& w_;
  InelasticStage::Buffers& buf_;
  RigidModel& rigid_;
  const VirtualNodeSet& vn_;
  const std::vector<Scalar>& mass_;
  const ContactSet& contacts_;
  std::vector<Scalar> lambda_;  // the pressed host-corrected contacts' impulses (3 each), else 0
  bool all_lambda_ = false;     // lambda_ holds every contact's impulse
  const std::vector<Scalar>& rigid_vhat_;
  const Index base_, rigid_first_;
  std::vector<Scalar> vhat_, v_next_;  // global layout; only the touched and rigid nodes are set
  std::vector<Index> touched_;         // the deformable hosts of pressed contacts, sorted
  std::vector<char> on_backend_;       // per contact: corrected on the backend
  std::vector<Index> part_begin_;      // per deformable part its first entry in the index order
  Index pressed_hosts_ = 0;                           // the pressed contacts' hosts (SelectBackendContacts)
  std::vector<Index> parent_;                         // union-find over the base nodes
  std::vector<std::pair<Index, Index>> group_roots_;  // (component root, rigid group), by root
  std::vector<Mat3> iw_inv_;                          // per rigid body: world inertia inverse
  // the component being solved: its column blocks (first base node each), rows and targets
  std::vector<Index> column_, blocks_;
  Index dim_ = 0;
  std::vector<std::vector<RowTerm>> rows_;
  std::vector<Scalar> targets_;
  std::vector<JointRow> jrows_;
};

}  // namespace

void InelasticStage::Build(const WorldBodies& w) {
  mass_ = w.BaseNodeMasses();
  buf_.kernels = MakeKernels<WorldKernels>(*w.backend);
  // capacity for every base node touched (at most 2 and 6 entries per node), so that no later
  // step allocates
  const Index base = static_cast<Index>(mass_.size());
  buf_.idx.Reserve(w.backend, 2 * base);
  buf_.values.Reserve(w.backend, 6 * base);
  buf_.items.Reserve(w.backend, base);
  buf_.mass = Array<Scalar>(w.backend, mass_);
}

void InelasticStage::Reserve(Backend* backend, Index contacts) {
  buf_.pressed.Reserve(backend, contacts);
  // the lone contacts' choice: per contact its hosts' offset and sort key, its hosts (up to 3 a
  // side: a triangle's point)
  buf_.host_offset.Reserve(backend, contacts + 1, false);
  buf_.lone_key.Reserve(backend, contacts, false);
  buf_.items.Reserve(backend, contacts, false);
  buf_.host_key.Reserve(backend, 6 * contacts, false);
  buf_.host_order.Reserve(backend, 6 * contacts, false);
  buf_.lambda_idx.Reserve(backend, contacts);
  buf_.lambda_values.Reserve(backend, 3 * contacts);
}

void InelasticStage::Run(WorldBodies* w, const ContactSet& contacts, const std::vector<Scalar>& rigid_vhat, const ContactView& record,
                         const Scalar* lambda, ContactRecordWriter* maker) {
  Correction c(w, &buf_, mass_, contacts, rigid_vhat);
  c.ReadPressed(lambda, host_only_);
  c.SelectBackendContacts(host_only_);
  if (maker != nullptr && c.NeedsFieldsOf(*maker)) maker->Complete();
  c.ReadImpulses(lambda);
  c.Gather();
  c.SolveRigidComponents(c.SplitComponents());
  c.Scatter();
  c.CorrectOnBackend(record, lambda);
}

}  // namespace condsim
