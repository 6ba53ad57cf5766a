// The COND step matrix W: Frobenius groups and Barzilai-Borwein steps (Sec. IV-C).
#include "models/cond/cond_step_size.h"

#include <cmath>
#include <numeric>
#include <utility>

#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondStepSize::Reserve(Index nodes) {
  Backend* b = ctx_->backend;
  for (Array<Scalar>* a : {&diag_sum_, &row_norm2_, &row_abs_}) a->Reserve(b, nodes);
  // s and r_prev are written before they are read in every solve (Update at l = 0 and l >= 1)
  for (Array<Scalar>* a : {&r_prev_, &s_}) a->Reserve(b, 3 * nodes, false);
  group_ptr_.Reserve(b, nodes + 1);
  group_nodes_.Reserve(b, nodes);
}

void CondStepSize::Resize() {
  Backend* b = ctx_->backend;
  const Index nodes = ctx_->nodes, n = 3 * nodes;
  // the arrays keep their memory when the node count changes (Array::Resize)
  diag_sum_.Resize(b, nodes);
  row_norm2_.Resize(b, nodes);
  row_abs_.Resize(b, nodes);
  r_prev_.Resize(b, n);
  s_.Resize(b, n);
  alpha_.Resize(b, ctx_->num_envs);
  alpha_host_.assign(std::size_t(ctx_->num_envs), 0);
  w_matrix_ = nullptr;
}

void CondStepSize::Group(const std::vector<unsigned char>& own) {
  const Index nodes = ctx_->nodes;
  const ContactSet& contacts = ctx_->contacts_host;
  // union-find over D-contacts: linked nodes share one Frobenius w (Sec. IV-C1)
  std::vector<Index> parent(static_cast<std::size_t>(nodes));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](Index x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (Index m = 0; m < contacts.size(); ++m) {
    const Index i = contacts.node_i[m], j = contacts.node_j[m];
    if (j >= 0 && !own[i] && !own[j]) {
      const Index ri = find(i), rj = find(j);
      if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
    }
  }
  std::vector<Index> group_of(std::size_t(nodes), -1), count;
  for (Index k = 0; k < nodes; ++k) {
    const Index root = find(k);
    if (group_of[root] < 0) {
      group_of[root] = static_cast<Index>(count.size());
      count.push_back(0);
    }
    group_of[k] = group_of[root];
    ++count[group_of[k]];
  }
  std::vector<Index> ptr(count.size() + 1, 0), members(static_cast<std::size_t>(nodes));
  for (std::size_t g = 0; g < count.size(); ++g) ptr[g + 1] = ptr[g] + count[g];
  std::vector<Index> fill(ptr.begin(), ptr.end() - 1);
  for (Index k = 0; k < nodes; ++k) members[fill[group_of[k]]++] = k;
  num_groups_ = static_cast<Index>(count.size());
  // every node its own group (no D-contact links two nodes of their own w): nothing to upload,
  // FrobeniusGroupOp takes group g as node g
  singletons_ = num_groups_ == nodes;
  if (singletons_) return;
  // the same groups as the last contacts (no D-contact changed): nothing to upload
  if (ptr == group_ptr_host_ && members == group_nodes_host_) return;
  group_ptr_.Assign(ctx_->backend, ptr);
  group_nodes_.Assign(ctx_->backend, members);
  group_ptr_host_ = std::move(ptr);
  group_nodes_host_ = std::move(members);
}

void CondStepSize::Compute(DeviceBlockMatrix& a, const std::vector<CondComponent*>& parts) {
  const CondParams& params = *ctx_->params;
  CondKernels& k = *ctx_->kernels;
  if (w_matrix_ != &a || w_pattern_ != a.pattern_version() || solves_since_w_ >= params.w_reuse_solves) {
    k.FrobeniusNodes(ctx_->nodes, a.row_ptr().data(), a.col_idx().data(), a.values().data(), diag_sum_.data(),
                     row_norm2_.data(), row_abs_.data());
    const FrobeniusSums rows{diag_sum_.data(), row_norm2_.data(), row_abs_.data()};
    for (CondComponent* c : parts)
      if (c->active()) c->RowSums(a, rows);
    w_matrix_ = &a;
    w_pattern_ = a.pattern_version();
    solves_since_w_ = 0;
  }
  ++solves_since_w_;
  k.FrobeniusGroups(num_groups_, singletons_ ? nullptr : group_ptr_.data(), singletons_ ? nullptr : group_nodes_.data(), diag_sum_.data(), row_norm2_.data(),
                    row_abs_.data(), static_cast<Scalar>(params.w_safeguard), ctx_->w.data());
  for (CondComponent* c : parts)
    if (c->active()) c->SetGamma();
}

void CondStepSize::Update(int l, const Array<Scalar>& v, const Array<Scalar>& v_prev) {
  const CondParams& params = *ctx_->params;
  if (params.step_size == StepSize::kFrobenius) return;
  Backend& be = *ctx_->backend;
  if (l >= 1) {
    be.Copy(v, &s_);
    be.Axpby(-1, v_prev, 1, &s_);       // s
    be.Axpby(1, ctx_->r, -1, &r_prev_);  // z (r_prev <- r - r_prev)
    ctx_->EnvDot(s_, s_, &alpha_);
    const std::vector<Scalar> ss = alpha_.ToHost();
    ctx_->EnvDot(s_, r_prev_, &alpha_);
    const std::vector<Scalar> sz = alpha_.ToHost();
    ctx_->EnvDot(r_prev_, r_prev_, &alpha_);
    const std::vector<Scalar> zz = alpha_.ToHost();
    const bool use_bb1 = params.step_size == StepSize::kBB1 || (params.step_size == StepSize::kBBAlternate && l % 2 == 1);
    for (Index e = 0; e < ctx_->num_envs; ++e) {
      // a non-positive value keeps the environment's current W (curvature estimate unusable)
      const Scalar alpha = use_bb1 ? ss[e] / sz[e] : sz[e] / zz[e];
      alpha_host_[e] = (std::isfinite(alpha) && alpha > 0 && sz[e] > 0) ? alpha : Scalar(-1);
    }
    alpha_.CopyFromHost(alpha_host_);
    ctx_->kernels->EnvScalarToDof(3 * ctx_->nodes, ctx_->node_env.data(), alpha_.data(), ctx_->w.data());
  }
  be.Copy(ctx_->r, &r_prev_);
}

}  // namespace condsim
