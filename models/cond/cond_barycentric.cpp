// COND barycentric virtual nodes (docs/solver.md, "Barycentric nodes").
#include "models/cond/cond_barycentric.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

bool CondBarycentric::Set(const BarycentricNodes& bn) {
  const Index n = bn.size();
  CONDSIM_CHECK(bn.ptr.size() == std::size_t(n) + 1 && bn.ptr.front() == 0 && std::size_t(bn.ptr.back()) == bn.host.size() &&
                    bn.weight.size() == bn.host.size() && bn.kv.size() == std::size_t(n),
                "SetBarycentricNodes: inconsistent arrays");
  BarycentricHost h;
  // hosts in ascending node order, each with its incidences in virtual-node order
  h.hnode = bn.host;
  std::sort(h.hnode.begin(), h.hnode.end());
  h.hnode.erase(std::unique(h.hnode.begin(), h.hnode.end()), h.hnode.end());
  h.slot.resize(bn.host.size());
  h.hptr.assign(h.hnode.size() + 1, 0);
  max_node_ = -1;
  for (Index k = 0; k < n; ++k) {
    CONDSIM_CHECK(std::isfinite(bn.kv[k]) && bn.kv[k] > 0, "SetBarycentricNodes: kv of virtual node " << k << " must be > 0");
    CONDSIM_CHECK(bn.node[k] >= 0, "SetBarycentricNodes: negative node");
    max_node_ = std::max(max_node_, bn.node[k]);
    for (Index q = bn.ptr[k]; q < bn.ptr[k + 1]; ++q) {
      CONDSIM_CHECK(std::isfinite(bn.weight[q]) && bn.weight[q] >= 0, "SetBarycentricNodes: weights must be >= 0");
      max_node_ = std::max(max_node_, bn.host[q]);
      h.slot[q] = static_cast<Index>(std::lower_bound(h.hnode.begin(), h.hnode.end(), bn.host[q]) - h.hnode.begin());
      ++h.hptr[h.slot[q] + 1];
    }
  }
  for (std::size_t a = 0; a < h.hnode.size(); ++a) h.hptr[a + 1] += h.hptr[a];
  std::vector<Index> fill(h.hptr.begin(), h.hptr.end() - 1);
  h.hvn.resize(bn.host.size());
  h.hw.resize(bn.host.size());
  host_sum_.assign(h.hnode.size(), 0);
  for (Index k = 0; k < n; ++k)
    for (Index q = bn.ptr[k]; q < bn.ptr[k + 1]; ++q) {
      const Index e = fill[h.slot[q]]++;
      h.hvn[e] = k;
      h.hw[e] = bn.weight[q];
      host_sum_[h.slot[q]] += bn.weight[q];
    }
  const bool changed = bn.node != host_.node || bn.ptr != host_.ptr || bn.host != host_.host;
  h.node = bn.node;
  h.ptr = bn.ptr;
  h.host = bn.host;
  h.weight = bn.weight;
  h.kv = bn.kv;
  num_nodes_ = n;
  num_hosts_ = static_cast<Index>(h.hnode.size());
  arrays_.Upload(ctx_->backend, h);
  host_ = std::move(h);
  return changed;
}

void CondBarycentric::Check() const {
  CONDSIM_CHECK(ctx_->params->step_size == StepSize::kFrobenius, "COND: rigid groups and barycentric nodes need the Frobenius step size");
  CONDSIM_CHECK(max_node_ < ctx_->nodes,
                "COND: barycentric node or host " << max_node_ << " is not a node of A (" << ctx_->nodes << " nodes)");
}

void CondBarycentric::MarkOwnGamma(std::vector<unsigned char>* own) const {
  for (Index k : host_.node)
    if (k < ctx_->nodes) (*own)[k] = 1;
}

void CondBarycentric::MarkContactNodes(std::vector<unsigned char>* contact) const {
  for (Index a : host_.hnode)
    if (a < ctx_->nodes) (*contact)[a] = 1;
}

void CondBarycentric::MarkContactNodesOnBackend(Array<unsigned char>* contact) const {
  ctx_->kernels->ContactNodeFlag(num_hosts_, ContactNodeFlagOp{nullptr, 0, arrays_.hnode.data(), ctx_->nodes, true, contact->data()});
}

void CondBarycentric::Reserve(const ContactBounds& bounds) {
  // every field holds at most one entry per host entry (entries, hosts, incidences) or per
  // virtual node, plus one (the pointer arrays)
  arrays_.Reserve(ctx_->backend, std::max(bounds.virtual_entries, bounds.virtual_nodes) + 1);
}

void CondBarycentric::OnContacts() {
  // a host's load in the virtual nodes' Gamma: its weights S_a plus its direct contacts (the
  // row-sum majorant of the Delassus coupling through that host)
  const ContactSet& contacts = ctx_->contacts_host;
  const std::vector<Index>& hosts = host_.hnode;
  std::vector<Scalar> load = host_sum_;
  for (Index m = 0; m < contacts.size(); ++m)
    for (Index node : {contacts.node_i[m], contacts.node_j[m]}) {
      auto it = std::lower_bound(hosts.begin(), hosts.end(), node);
      if (node >= 0 && it != hosts.end() && *it == node) load[it - hosts.begin()] += 1;
    }
  arrays_.hload.Assign(ctx_->backend, load);
}

void CondBarycentric::RowSums(DeviceBlockMatrix& a, const FrobeniusSums& sums) {
  // hosts of barycentric nodes: the rows of A_o
  ctx_->kernels->BarycentricFrobenius(num_hosts_, BarycentricFrobeniusOp{arrays_.view(), a.row_ptr().data(), a.col_idx().data(),
                                                                         a.values().data(), sums.diag_sum, sums.row_norm2,
                                                                         sums.row_abs});
}

void CondBarycentric::SetGamma() {
  ctx_->kernels->BarycentricGamma(num_nodes_, BarycentricGammaOp{arrays_.view(), ctx_->w.data()});
}

void CondBarycentric::Respond(bool before_sweep) {
  const Array<Scalar>& f = before_sweep ? ctx_->f : ctx_->f_new;
  ctx_->kernels->BarycentricHost(num_hosts_, BarycentricHostOp{arrays_.view(), ctx_->r.data(), ctx_->f.data(), f.data(),
                                                               ctx_->w.data(), before_sweep, ctx_->u.data()});
  ctx_->kernels->BarycentricNode(num_nodes_, BarycentricNodeOp{arrays_.view(), f.data(), ctx_->w.data(), before_sweep, ctx_->u.data()});
}

}  // namespace condsim
