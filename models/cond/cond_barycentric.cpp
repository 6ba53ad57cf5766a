// COND barycentric virtual nodes (docs/solver.md, "Barycentric nodes").
#include "models/cond/cond_barycentric.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

bool CondBarycentric::Set(const BarycentricNodes& bn, const VirtualNodesOnBackend* source) {
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
  for (Index k = 0; k < n; ++k)
    for (Index q = bn.ptr[k]; q < bn.ptr[k + 1]; ++q) {
      const Index e = fill[h.slot[q]]++;
      h.hvn[e] = k;
      h.hw[e] = bn.weight[q];
    }
  const bool changed = bn.node != host_.node || bn.ptr != host_.ptr || bn.host != host_.host;
  h.node = bn.node;
  h.ptr = bn.ptr;
  h.host = bn.host;
  h.weight = bn.weight;
  h.kv = bn.kv;
  h.hload.resize(h.hnode.size());  // made on the backend (OnContacts)
  num_nodes_ = n;
  num_hosts_ = static_cast<Index>(h.hnode.size());
  // (no virtual node: the component is inactive, nothing reads its arrays)
  if (source != nullptr && source->kind != nullptr && n > 0 && Derivable(bn, *source)) {
    arrays_.ResizeLike(ctx_->backend, h);
    MakeOnBackend(*source);
  } else if (n > 0) {
    arrays_.Upload(ctx_->backend, h);
  }
  host_ = std::move(h);
  return changed;
}

bool CondBarycentric::Derivable(const BarycentricNodes& bn, const VirtualNodesOnBackend& source) {
  const VirtualNodeSet& vn = *source.set;
  const std::vector<unsigned char>& kind = *source.kind_host;
  const std::vector<Index>& offset = *source.offset_host;
  const std::vector<Scalar>& param = *source.param_host;
  if (kind.size() != vn.host.size() || offset.size() != vn.host.size()) return false;
  const auto same = [](Scalar a, Scalar b) { return std::memcmp(&a, &b, sizeof(Scalar)) == 0; };
  Index b = 0;
  for (Index k = 0; k < vn.size(); ++k) {
    const Index e0 = vn.ptr[k], e1 = vn.ptr[k + 1];
    if (!std::all_of(kind.begin() + e0, kind.begin() + e1, [](unsigned char x) { return x == 0; })) continue;
    if (b >= bn.size() || bn.node[b] != source.base_nodes + k || bn.ptr[b + 1] - bn.ptr[b] != e1 - e0 || !same(bn.kv[b], vn.kv[k]))
      return false;
    for (Index e = e0; e < e1; ++e) {
      const Index q = bn.ptr[b] + e - e0;
      if (bn.host[q] != vn.host[e] || !same(bn.weight[q], param[std::size_t(offset[std::size_t(e)])])) return false;
    }
    ++b;
  }
  return b == bn.size();
}

void CondBarycentric::MakeOnBackend(const VirtualNodesOnBackend& source) {
  Backend* b = ctx_->backend;
  const Index count = source.set->size(), entries = static_cast<Index>(arrays_.host.size());
  // the barycentric virtual nodes and their entries (their places: two scans)
  pick_.Resize(b, count + 1);
  entries_.Resize(b, count + 1);
  ctx_->kernels->Run(count + 1, BarycentricPickOp{source.ptr, source.kind, count, pick_.data(), entries_.data()});
  b->ExclusiveScanOnBackend(count + 1, pick_, &pick_);
  b->ExclusiveScanOnBackend(count + 1, entries_, &entries_);
  owner_.Resize(b, entries);
  order_.Resize(b, entries);
  key_.Resize(b, entries);
  const BarycentricOutView g = arrays_.out_view<BarycentricOutView>();
  ctx_->kernels->Run(count + 1, BarycentricFillOp{source.ptr, source.host, source.offset, source.param, source.kv, source.base_nodes,
                                                  count, pick_.data(), entries_.data(), g, owner_.data(), key_.data(), order_.data()});
  // the hosts' side: the entries sorted by host (stably), a run per host
  b->SortPairs(entries, &key_, &order_);
  head_.Resize(b, entries + 1);
  ctx_->kernels->Run(entries + 1, BarycentricHeadOp{key_.data(), entries, head_.data()});
  b->ExclusiveScanOnBackend(entries + 1, head_, &head_);
  ctx_->kernels->Run(entries + 1, BarycentricTransposeOp{key_.data(), order_.data(), head_.data(), owner_.data(), entries, g});
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
  Backend* b = ctx_->backend;
  const Index entries = std::max(bounds.virtual_entries, bounds.virtual_nodes) + 1;
  arrays_.Reserve(b, entries);
  for (Array<Index>* x : {&pick_, &entries_, &owner_, &order_, &head_}) x->Reserve(b, entries, false);
  key_.Reserve(b, entries, false);
  contact_key_.Reserve(b, 2 * bounds.contacts, false);
  contact_order_.Reserve(b, 2 * bounds.contacts, false);
}

void CondBarycentric::OnContacts() {
  // a host's load in the virtual nodes' Gamma: its weights S_a plus its direct contacts (the
  // row-sum majorant of the Delassus coupling through that host), on the backend from the
  // contacts' nodes sorted
  Backend* b = ctx_->backend;
  const Index keys = 2 * ctx_->contacts_host.size();
  contact_key_.Resize(b, keys);
  contact_order_.Resize(b, keys);
  if (keys > 0) {
    ctx_->kernels->Run(keys / 2, BarycentricContactKeyOp{ctx_->contacts.node_i.data(), ctx_->contacts.node_j.data(), contact_key_.data(),
                                                         contact_order_.data()});
    b->SortPairs(keys, &contact_key_, &contact_order_);
  }
  ctx_->kernels->Run(num_hosts_, BarycentricLoadOp{arrays_.out_view<BarycentricOutView>(), contact_key_.data(), keys});
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
