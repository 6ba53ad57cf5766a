// COND rigid groups: exact answers of rigid bodies to contact forces (docs/solver.md, "Rigid groups").
#include "models/cond/cond_rigid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {
namespace {
// a rigid group's own contacts are settled when a sweep changes no relative velocity by more than
// this fraction of theta_th
constexpr double kRigidSweepSettled = 0.1;
}  // namespace

void CondRigidGroups::Reserve(const ContactBounds& bounds) {
  // no rigid body, no group (a batch of cables or FEM bodies reserves nothing here)
  if (bounds.rigid_bodies == 0) return;
  Backend* b = ctx_->backend;
  // the groups' fields: 3 per virtual node (arm), (6 n_g)^2 per group (ao_inv, at most
  // 36 B min(B, kMaxRigidGroupBodies) for B bodies), one per body, plus one
  const Index nb = bounds.rigid_bodies;
  const Index inv = 36 * nb * std::min<Index>(nb, kMaxRigidGroupBodies);
  arrays_.Reserve(b, std::max({3 * bounds.virtual_nodes, inv, nb}) + 1);
  d_.Reserve(b, bounds.virtual_nodes);
  point_key_.Reserve(b, bounds.virtual_nodes, false);
  point_order_.Reserve(b, bounds.virtual_nodes, false);
  slot_of_.Reserve(b, 2 * nb);  // the v nodes' span (two nodes a body)
  own_.Reserve(b, bounds.contacts + 1);
  sweep_order_.Reserve(b, bounds.contacts);
}

bool CondRigidGroups::Derivable(const RigidGroups& g, const VirtualNodesOnBackend& source) {
  // the body slot of each v node (the rigid part's nodes are contiguous: a short map)
  const auto [lo, hi] = std::minmax_element(g.trans.begin(), g.trans.end());
  slot_first_ = *lo;
  slot_of_host_.assign(std::size_t(*hi - *lo + 1), -1);
  for (Index k = 0; k < g.num_bodies(); ++k) slot_of_host_[std::size_t(g.trans[k] - slot_first_)] = k;
  // the backend's rule on the host's copies, then its order (by body, then virtual node)
  const VirtualNodeSet& vn = *source.set;
  const std::vector<unsigned char>& kind = *source.kind_host;
  const std::vector<Index>& offset = *source.offset_host;
  const std::vector<Scalar>& param = *source.param_host;
  std::vector<std::pair<Index, Index>> points;  // (slot, virtual node)
  for (Index k = 0; k < vn.size(); ++k) {
    const Index e = vn.ptr[k];
    if (vn.ptr[k + 1] - e != 2 || kind[std::size_t(e)] != 0 || kind[std::size_t(e) + 1] != 1) continue;
    const Index h = vn.host[e] - slot_first_;
    if (h >= 0 && h < Index(slot_of_host_.size()) && slot_of_host_[std::size_t(h)] >= 0) points.push_back({slot_of_host_[std::size_t(h)], k});
  }
  std::sort(points.begin(), points.end());
  if (points.size() != g.node.size()) return false;
  const auto same = [](Scalar a, Scalar b) { return std::memcmp(&a, &b, sizeof(Scalar)) == 0; };
  for (std::size_t e = 0; e < points.size(); ++e) {
    const auto [slot, k] = points[e];
    const Scalar* r = param.data() + offset[std::size_t(vn.ptr[k]) + 1];
    if (g.node[e] != source.base_nodes + k || Index(e) < g.ptr[slot] || Index(e) >= g.ptr[slot + 1] || !same(g.kv[e], vn.kv[k]) ||
        !same(g.arm[3 * e], r[0]) || !same(g.arm[3 * e + 1], r[1]) || !same(g.arm[3 * e + 2], r[2]))
      return false;
  }
  return true;
}

void CondRigidGroups::Set(const RigidGroups& g, const VirtualNodesOnBackend* source) {
  const Index n = g.size(), nb = g.num_bodies();
  CONDSIM_CHECK(!g.body_ptr.empty() && g.body_ptr.front() == 0 && g.body_ptr.back() == nb && g.rot.size() == g.trans.size() &&
                    g.ptr.size() == std::size_t(nb) + 1 && g.arm.size() == 3 * g.node.size() && g.kv.size() == g.node.size() &&
                    std::size_t(g.ptr.back()) == g.node.size(),
                "SetRigidGroups: inconsistent arrays");
  RigidGroupHost h;
  h.inv_off.push_back(0);
  for (Index k = 0; k < n; ++k) {
    const Index size = g.body_ptr[k + 1] - g.body_ptr[k];
    CONDSIM_CHECK(size >= 1 && size <= kMaxRigidGroupBodies,
                  "SetRigidGroups: group " << k << " has " << size << " bodies (1 to " << kMaxRigidGroupBodies << ")");
    h.inv_off.push_back(h.inv_off.back() + 36 * size * size);
  }
  CONDSIM_CHECK(g.ao_inv.size() == std::size_t(h.inv_off.back()), "SetRigidGroups: ao_inv needs (6 n_g)^2 values per group");
  for (Scalar kv : g.kv) CONDSIM_CHECK(std::isfinite(kv) && kv > 0, "SetRigidGroups: kv must be > 0");
  slot_body_.assign(g.node.size(), 0);
  slot_group_.assign(g.node.size(), 0);
  for (Index k = 0; k < n; ++k)
    for (Index ba = g.body_ptr[k]; ba < g.body_ptr[k + 1]; ++ba)
      for (Index a = g.ptr[ba]; a < g.ptr[ba + 1]; ++a) {
        slot_body_[a] = ba - g.body_ptr[k];
        slot_group_[a] = k;
      }
  num_groups_ = n;
  num_own_contacts_ = 0;  // until OnContacts
  max_node_ = -1;
  for (const auto* list : {&g.trans, &g.rot, &g.node})
    for (Index k : *list) max_node_ = std::max(max_node_, k);
  h.body_ptr = g.body_ptr;
  h.trans = g.trans;
  h.rot = g.rot;
  h.ao_inv = g.ao_inv;
  h.ptr = g.ptr;
  h.node = g.node;
  h.arm = g.arm;
  h.kv = g.kv;
  Backend* b = ctx_->backend;
  if (source != nullptr && source->kind != nullptr && !g.node.empty() && Derivable(g, *source)) {
    // the rest of the record in one upload, the virtual nodes' fields made from the system's
    std::vector<Index> node;
    std::vector<Scalar> arm, kv;
    node.swap(h.node);
    arm.swap(h.arm);
    kv.swap(h.kv);
    arrays_.Upload(b, h);
    node.swap(h.node);
    arm.swap(h.arm);
    kv.swap(h.kv);
    if (slot_of_host_ != slot_of_uploaded_) {
      slot_of_.Assign(b, slot_of_host_);
      slot_of_uploaded_ = slot_of_host_;
    }
    const Index count = source->set->size(), entries = static_cast<Index>(h.node.size());
    point_key_.Resize(b, count);
    point_order_.Resize(b, count);
    ctx_->kernels->Run(count, RigidPointKeyOp{source->ptr, source->host, source->kind, slot_of_.data(), slot_first_,
                                              static_cast<Index>(slot_of_host_.size()), point_key_.data(), point_order_.data()});
    b->SortPairs(count, &point_key_, &point_order_);
    arrays_.node.Resize(b, entries);
    arrays_.arm.Resize(b, 3 * entries);
    arrays_.kv.Resize(b, entries);
    ctx_->kernels->Run(entries, RigidPointFillOp{point_key_.data(), source->ptr, source->offset, source->param, source->kv,
                                                 source->base_nodes, arrays_.node.data(), arrays_.arm.data(), arrays_.kv.data()});
  } else {
    arrays_.Upload(b, h);
  }
  host_ = std::move(h);
  v_o_.Resize(ctx_->backend, 6 * std::max<Index>(nb, 1));  // RigidContactSweepOp's group velocities
  d_.Resize(ctx_->backend, CheckedIndex(host_.node.size(), "rigid: nodes"));  // d_v: OnContacts, once the swept contacts are known
}

void CondRigidGroups::Check() const {
  CONDSIM_CHECK(max_node_ < ctx_->nodes,
                "COND: rigid group node " << max_node_ << " is not a node of A (" << ctx_->nodes << " nodes)");
  CONDSIM_CHECK(ctx_->params->step_size == StepSize::kFrobenius, "COND: rigid groups and barycentric nodes need the Frobenius step size");
}

void CondRigidGroups::MarkOwnGamma(std::vector<unsigned char>* own) const {
  for (Index k : host_.node)
    if (k < ctx_->nodes) (*own)[k] = 1;
}

void CondRigidGroups::SetGamma() {
  ctx_->kernels->SetNodeScalar(arrays_.node.size(), SetNodeScalarOp{arrays_.node.data(), d_.data(), ctx_->w.data()});
}

void CondRigidGroups::Respond(const Array<Scalar>& b, bool before_sweep) {
  const Array<Scalar>& f = before_sweep ? ctx_->f : ctx_->f_new;
  ctx_->kernels->RigidResponse(num_groups_, RigidResponseOp{arrays_.view(), b.data(), f.data(), ctx_->w.data(), before_sweep,
                                                            ctx_->u.data()});
}

void CondRigidGroups::SweepOwnContacts(const Array<Scalar>& b) {
  const CondParams& params = *ctx_->params;
  ctx_->backend->Fill(0, &ctx_->f_new);
  ctx_->AddContactForces(nullptr, ctx_->lambda, &ctx_->f_new);
  ctx_->kernels->RigidContactSweep(
      num_groups_, RigidContactSweepOp{arrays_.view(), own_.view(), ctx_->contacts.view(), b.data(), ctx_->f_new.data(), ctx_->w.data(),
                                       ctx_->env_active.data(), static_cast<Scalar>(params.omega), params.projection,
                                       params.rigid_sweeps, Scalar(kRigidSweepSettled * params.theta_threshold),
                                       ctx_->lambda.data(), ctx_->u.data(), v_o_.data()});
}

void CondRigidGroups::GammaBounds(const std::vector<unsigned char>& swept) {
  // d_v: the largest absolute row sum of J A_o^-1 J^T + I / kv (the group's Delassus block with
  // eq. 15's damper; a Gershgorin majorant for the Gamma of eq. 25) over the virtual nodes solved
  // together with v. A node whose contacts the diagonal solve takes (a Jacobi step, all at once)
  // sums over the group's other such nodes only: the swept nodes' impulses stay fixed during
  // the diagonal solve, and the sweep answers them exactly afterwards. A swept node keeps the
  // sum over the whole group.
  const RigidGroupHost& g = host_;
  auto jac = [&](Index e) {  // 3x6 J = [I, -[r]x]
    const Mat3 sk = Scalar(-1) * Skew(LoadVec3(g.arm.data(), e));
    std::array<Scalar, 18> j{};
    for (int r = 0; r < 3; ++r) {
      j[6 * r + r] = 1;
      for (int c = 0; c < 3; ++c) j[6 * r + 3 + c] = sk(r, c);
    }
    return j;
  };
  std::vector<Scalar> d(g.node.size(), 0);
  for (Index k = 0; k < num_groups_; ++k) {
    const Scalar* m = g.ao_inv.data() + g.inv_off[k];
    const Index first = g.body_ptr[k], size = g.body_ptr[k + 1] - first, dim = 6 * size;
    for (Index ba = first; ba < first + size; ++ba)
      for (Index a = g.ptr[ba]; a < g.ptr[ba + 1]; ++a) {
        const auto ja = jac(a);
        Scalar rows[3] = {1 / g.kv[a], 1 / g.kv[a], 1 / g.kv[a]};
        for (Index bb = first; bb < first + size; ++bb) {
          // J_a A_o^-1 restricted to body bb's columns
          Scalar ja_m[18] = {};
          for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 6; ++c)
              for (int q = 0; q < 6; ++q) ja_m[6 * r + c] += ja[6 * r + q] * m[(6 * (ba - first) + q) * dim + 6 * (bb - first) + c];
          for (Index e = g.ptr[bb]; e < g.ptr[bb + 1]; ++e) {
            if (!swept[a] && swept[e]) continue;
            const auto jb = jac(e);
            for (int r = 0; r < 3; ++r)
              for (int c = 0; c < 3; ++c) {
                Scalar gv = 0;
                for (int q = 0; q < 6; ++q) gv += ja_m[6 * r + q] * jb[6 * c + q];
                rows[r] += std::fabs(gv);
              }
          }
        }
        d[a] = std::max(rows[0], std::max(rows[1], rows[2]));
      }
  }
  d_.CopyFromHost(d);
}

std::vector<std::vector<std::pair<Index, Index>>> CondRigidGroups::ClaimOwnContacts() const {
  const ContactSet& contacts = ctx_->contacts_host;
  const Index nc = contacts.size(), nodes = ctx_->nodes;
  std::vector<std::vector<std::pair<Index, Index>>> lists(static_cast<std::size_t>(num_groups_));
  if (ctx_->params->rigid_sweeps == 0) return lists;
  std::vector<unsigned char> own(std::size_t(nc), 0);
  std::vector<Index> slot_of(std::size_t(nodes), -1), count(std::size_t(nodes), 0), claim(std::size_t(nodes), -1);
  for (std::size_t e = 0; e < host_.node.size(); ++e)
    if (host_.node[e] < nodes) slot_of[host_.node[e]] = static_cast<Index>(e);
  for (Index m = 0; m < nc; ++m) {
    ++count[contacts.node_i[m]];
    if (contacts.node_j[m] >= 0) ++count[contacts.node_j[m]];
  }
  for (Index m = 0; m < nc; ++m) {
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    const Index si = slot_of[i], sj = j >= 0 ? slot_of[j] : -1;
    // one rigid virtual node against a node of a deformable body (an FEM or cable node, or a
    // barycentric virtual node on a triangle or segment); two rigid bodies stay with the
    // diagonal solve
    if ((si >= 0) == (sj >= 0)) continue;
    const Index e = si >= 0 ? si : sj, other = si >= 0 ? j : i;
    // the static world stays with the diagonal solve: it has no compliance of its own, so a
    // body on several supports is indeterminate up to 1 / kv, and repeated sweeps there cost
    // iterations at tight theta
    if (count[host_.node[e]] != 1 || other < 0) continue;
    // the other node belongs to one group's sweep (the groups run in parallel)
    const Index grp = slot_group_[e];
    if (claim[other] >= 0 && claim[other] != grp) continue;
    claim[other] = grp;
    own[m] = 1;
    lists[grp].emplace_back(m, e);
  }
  // a group with any other contact left to the diagonal solve but the static world's (another
  // group, a node another group sweeps, a virtual node with two contacts) keeps the diagonal
  // solve for all its contacts: sweeping some while others take Jacobi steps lets the Jacobi
  // ones sink deeper
  std::vector<unsigned char> mixed(std::size_t(num_groups_), 0);
  for (Index m = 0; m < nc; ++m) {
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    if (own[m] || j < 0) continue;
    for (Index k : {i, j})
      if (slot_of[k] >= 0) mixed[slot_group_[slot_of[k]]] = 1;
  }
  for (Index grp = 0; grp < num_groups_; ++grp)
    if (mixed[grp]) lists[grp].clear();
  return lists;
}

void CondRigidGroups::OnContacts() {
  const auto lists = ClaimOwnContacts();
  std::vector<unsigned char> swept(host_.node.size(), 0), own(std::size_t(ctx_->contacts_host.size()), 0);
  for (const auto& list : lists)
    for (const auto& [m, e] : list) {
      swept[std::size_t(e)] = 1;
      own[std::size_t(m)] = 1;
    }
  GammaBounds(swept);
  RigidContactHost h;
  h.ptr.push_back(0);
  for (const auto& list : lists) {
    for (const auto& [m, e] : list) {
      h.contact.push_back(m);
      h.slot.push_back(e);
      h.body.push_back(slot_body_[e]);
    }
    h.ptr.push_back(static_cast<Index>(h.contact.size()));
  }
  num_own_contacts_ = static_cast<Index>(h.contact.size());
  if (num_own_contacts_ == 0) return;  // the diagonal solve takes every contact
  own_.Upload(ctx_->backend, h);
  // the diagonal sweeps: every color less the own contacts (the colored order read back: 4 B per
  // contact, only when rigid groups own contacts)
  const std::vector<Index> colored = ctx_->order.ToHost();
  std::vector<Index> order;
  sweep_color_ptr_.assign(1, 0);
  for (std::size_t c = 0; c + 1 < ctx_->color_ptr.size(); ++c) {
    for (Index k = ctx_->color_ptr[c]; k < ctx_->color_ptr[c + 1]; ++k)
      if (!own[colored[k]]) order.push_back(colored[k]);
    sweep_color_ptr_.push_back(static_cast<Index>(order.size()));
  }
  sweep_order_.Assign(ctx_->backend, order);
}

}  // namespace condsim
