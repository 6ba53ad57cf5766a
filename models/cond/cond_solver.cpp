// The COND velocity fixed-point iteration (Alg. 1 and 3), written once against the backend
// primitives and the shared COND kernels; the mechanisms it drives are its components.
#include "models/cond/cond_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "condsim/error.h"
#include "condsim/profile.h"
#include "models/cond/cond_kernels.h"

namespace condsim {

void CondContext::AddContactForces(const Scalar* weights, const Array<Scalar>& lambda_in, Array<Scalar>* out) {
  const ContactView view = contacts.view();
  for (std::size_t c = 0; c + 1 < color_ptr.size(); ++c)
    kernels->ApplyImpulses(view, order.data(), color_ptr[c], color_ptr[c + 1] - color_ptr[c], weights, lambda_in.data(),
                           out->data());
}

void CondContext::EnvDot(const Array<Scalar>& x, const Array<Scalar>& y, Array<Scalar>* out) {
  if (env_perm.size() == 0) {
    backend->SegmentedDot(x, y, dof_offsets, out);
    return;
  }
  const Index n = env_perm.size();
  kernels->Permute(n, env_perm.data(), x.data(), perm_x.data());
  if (&x == &y) {
    backend->SegmentedDot(perm_x, perm_x, dof_offsets, out);
    return;
  }
  kernels->Permute(n, env_perm.data(), y.data(), perm_y.data());
  backend->SegmentedDot(perm_x, perm_y, dof_offsets, out);
}

CondSolver::CondSolver(Backend* backend, const CondParams& params)
    : backend_(backend), params_(params), kernels_(MakeKernels<CondKernels>(*backend)) {
  params_.Validate();
  ctx_.backend = backend_;
  ctx_.kernels = kernels_.get();
  ctx_.params = &params_;
  coloring_ = std::make_unique<ContactColoringDevice>(backend_, kernels_.get());
}

CondSolver::~CondSolver() = default;

void CondSolver::set_params(const CondParams& p) {
  p.Validate();
  params_ = p;
  contacts_dirty_ = true;  // the projection decides which contacts are valid
}

void CondSolver::SetNodeEnvironments(const std::vector<Index>& node_env) {
  for (std::size_t k = 0; k < node_env.size(); ++k)
    CONDSIM_CHECK(node_env[k] >= 0, "node " << k << " has a negative environment " << node_env[k]);
  // the same layout again (a World sets it every step): the prepared arrays stay
  if (ctx_.nodes > 0 && node_env == ctx_.node_env_host) return;
  ctx_.node_env_host = node_env;
  ctx_.nodes = 0;  // re-prepare
  contacts_dirty_ = true;
}

void CondSolver::SetActive(const std::vector<unsigned char>& active) {
  ctx_.env_active.CopyFromHost(active);
  if (ctx_.num_envs > 1) kernels_->EnvRowMask(ctx_.nodes, ctx_.node_env.data(), ctx_.env_active.data(), row_active_.data());
}

void CondSolver::SetEnabledEnvironments(const std::vector<unsigned char>& enabled) { ctx_.env_enabled = enabled; }

void CondSolver::SetContacts(const ContactSet& contacts, ContactRecordWriter* writer) {
  Index max_node = -1;
  for (Index i : contacts.node_i) max_node = std::max(max_node, i);
  for (Index j : contacts.node_j) max_node = std::max(max_node, j);
  CONDSIM_CHECK(contacts.node_i.size() == contacts.node_j.size() && contacts.frame.size() == 9 * contacts.node_i.size(),
                "contacts: arrays have inconsistent lengths");
  ctx_.contacts_host = contacts;
  ctx_.contacts_backend_only.assign(contacts.node_i.size(), 0);
  if (writer != nullptr)
    for (Index m = 0; m < contacts.size(); ++m) ctx_.contacts_backend_only[std::size_t(m)] = writer->Deferred(m) ? 1 : 0;
  if (writer != nullptr) {
    ctx_.contacts.ResizeLike(backend_, contacts);
    writer->Write(contacts, ctx_.contacts.out_view<ContactOutView>());
  } else {
    ctx_.contacts.Upload(backend_, contacts);
  }
  // the colors (ColorContacts' order) made on the backend from the uploaded nodes
  coloring_->Color(ctx_.contacts.node_i, ctx_.contacts.node_j, contacts.size(), max_node + 1, &ctx_.order, &ctx_.color_ptr);
  ctx_.lambda.Resize(backend_, CheckedIndex(contacts.frame.size() / 3, "contacts: impulses"));
  backend_->Fill(0, &ctx_.lambda);
  contacts_dirty_ = true;
}

void CondSolver::Reserve(const ContactBounds& bounds, Index max_nodes) {
  Backend* b = backend_;
  const Index n = 3 * max_nodes, c = bounds.contacts;
  ctx_.contacts.Reserve(b, 9 * c);  // the largest field: frame, 9 per contact
  ctx_.order.Reserve(b, c);
  coloring_->Reserve(c, max_nodes);
  ctx_.lambda.Reserve(b, 3 * c);
  ctx_.in_contact.Reserve(b, max_nodes);
  ctx_.node_env.Reserve(b, max_nodes);
  for (Array<Scalar>* x : {&ctx_.w, &ctx_.r, &ctx_.u, &ctx_.f, &ctx_.f_new, &v_prev_, &diff_}) x->Reserve(b, n);
  if (ctx_.env_perm.size() > 0) {
    ctx_.env_perm.Reserve(b, n);
    ctx_.perm_x.Reserve(b, n);
    ctx_.perm_y.Reserve(b, n);
  }
  if (ctx_.num_envs > 1) row_active_.Reserve(b, max_nodes);
  for (Array<Scalar>& m : body_mask_) m.Reserve(b, n);
  // the fused passes' chunks: each environment's DOFs cut every kChunk
  const Index chunks = n / CondChebyshevThetaCommitOp::kChunk + ctx_.num_envs + 1;
  chunk_begin_.Reserve(b, chunks);
  chunk_end_.Reserve(b, chunks);
  chunk_sum_.Reserve(b, chunks);
  step_.Reserve(max_nodes);
  bary_.Reserve(bounds);
  rigid_.Reserve(bounds);
  chains_.Reserve(max_nodes);
  modes_.Reserve(bounds, max_nodes);
  free_.Reserve(bounds, max_nodes);
}

void CondSolver::SetImpulses(const std::vector<Scalar>& lambda) {
  CONDSIM_CHECK(lambda.size() == std::size_t(3) * ctx_.contacts_host.node_i.size(),
                "SetImpulses: got " << lambda.size() << " values for " << ctx_.contacts_host.size() << " contacts (3 each)");
  for (std::size_t k = 0; k < lambda.size(); ++k) CONDSIM_CHECK(std::isfinite(lambda[k]), "SetImpulses: value " << k << " is not finite");
  ctx_.lambda.CopyFromHost(lambda);
}

ContactSet CondSolver::BackendContacts() const {
  ContactSet c;
  ctx_.contacts.Download(&c);
  return c;
}

std::vector<Scalar> CondSolver::Impulses() const { return ctx_.lambda.ToHost(); }

void CondSolver::SetChains(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band) {
  chains_.Set(ptr, nodes, band);
}

void CondSolver::SetRigidGroups(const RigidGroups& groups, const VirtualNodesOnBackend* source) {
  rigid_.Set(groups, source);
  contacts_dirty_ = true;
}

void CondSolver::SetBarycentricNodes(const BarycentricNodes& nodes, const VirtualNodesOnBackend* source) {
  contacts_dirty_ = true;  // also marks the hosts as scalar-w nodes inside chains
  // new virtual nodes or hosts: their row sums are made again (new weights alone: as new values)
  if (bary_.Set(nodes, source)) step_.Invalidate();
}

void CondSolver::SetBodyModes(const BodyModes& modes) {
  modes_.Set(modes);
  free_.SetFreeBodies(modes);
}

void CondSolver::Prepare(DeviceBlockMatrix& a) {
  const BlockPattern& p = a.pattern();
  CONDSIM_CHECK(p.block_dim == 3 && p.block_rows == p.block_cols,
                "COND needs a square matrix of 3x3 node blocks, got " << p.block_rows << " x " << p.block_cols
                                                                      << " blocks of size " << p.block_dim);
  const Index nodes = p.block_rows;
  std::vector<Index>& node_env = ctx_.node_env_host;
  if (node_env.empty()) node_env.assign(std::size_t(nodes), 0);
  CONDSIM_CHECK(node_env.size() == std::size_t(nodes),
                "node environments given for " << node_env.size() << " nodes, the matrix has " << nodes);
  if (nodes != ctx_.nodes) {
    Backend* b = backend_;
    const Index n = 3 * nodes;
    ctx_.nodes = nodes;
    ctx_.num_envs = nodes > 0 ? *std::max_element(node_env.begin(), node_env.end()) + 1 : 1;
    std::vector<Index> dof_offsets(std::size_t(ctx_.num_envs) + 1, 0);
    for (Index e : node_env) dof_offsets[std::size_t(e) + 1] += 3;
    for (Index e = 0; e < ctx_.num_envs; ++e) dof_offsets[e + 1] += dof_offsets[e];
    // the arrays keep their memory when the node count changes (Array::Resize); of the nodes'
    // environments only the entries from the first changed one go up (the virtual nodes' tail)
    ctx_.node_env.AssignSuffix(b, node_env, node_env_held_);
    node_env_held_ = node_env;
    ctx_.dof_offsets.Assign(b, dof_offsets);
    // interleaved environments: the DOFs grouped by environment, each in its own order
    ctx_.env_perm.Resize(b, 0);
    if (!std::is_sorted(node_env.begin(), node_env.end())) {
      std::vector<Index> perm(static_cast<std::size_t>(n));
      std::vector<Index> next(dof_offsets.begin(), dof_offsets.end() - 1);
      for (Index k = 0; k < nodes; ++k)
        for (int d = 0; d < 3; ++d) perm[std::size_t(next[std::size_t(node_env[std::size_t(k)])]++)] = 3 * k + d;
      ctx_.env_perm.Assign(b, perm);
      ctx_.perm_x.Resize(b, n);
      ctx_.perm_y.Resize(b, n);
    }
    for (Array<Scalar>* x : {&ctx_.w, &ctx_.r, &ctx_.u, &ctx_.f, &ctx_.f_new, &v_prev_, &diff_}) x->Resize(b, n);
    env_nu_.Resize(b, ctx_.num_envs);
    env_theta2_.Resize(b, ctx_.num_envs);
    env_chebyshev_.Resize(b, ctx_.num_envs);
    // (one more slot per environment: the truncated modes' refresh requests, read with the rest
    // when they run; and one for the free-body level's still flag)
    env_check_.Resize(b, 4 * ctx_.num_envs + 1);
    ctx_.env_active.Resize(b, ctx_.num_envs);
    row_active_.Resize(b, ctx_.num_envs > 1 ? nodes : 0);
    b->Fill(0, &ctx_.r);  // rows of environments left out are never computed
    PrepareFused(dof_offsets);
    step_.Resize();
    contacts_dirty_ = true;
    mass_dirty_ = true;
  }
  fused_ = fused_layout_ && params_.fused_passes;
  fused_diff_ = !fused_layout_ && params_.fused_passes;
  if (mass_dirty_) PrepareMomentum();
  if (contacts_dirty_) {
    PrepareContacts();
    contacts_dirty_ = false;
  }
}

void CondSolver::PrepareContacts() {
  const ContactSet& contacts = ctx_.contacts_host;
  contacts.Validate(ctx_.node_env_host, params_.projection == Projection::kProximal, &ctx_.contacts_backend_only);
  const std::size_t nodes = std::size_t(ctx_.nodes);
  ctx_.own_gamma_host.assign(nodes, 0);
  std::vector<unsigned char> contact(nodes, 0);
  for (Index m = 0; m < contacts.size(); ++m) {
    contact[contacts.node_i[m]] = 1;
    if (contacts.node_j[m] >= 0) contact[contacts.node_j[m]] = 1;
  }
  for (CondComponent* c : parts_) {
    if (!c->active()) continue;
    c->MarkOwnGamma(&ctx_.own_gamma_host);
    c->MarkContactNodes(&contact);
  }
  step_.Group(ctx_.own_gamma_host);
  // the same flags made on the backend from the coloring's nodes (nothing uploaded)
  ctx_.in_contact.Resize(backend_, ctx_.nodes);
  kernels_->ContactNodeFlag(ctx_.nodes, ContactNodeFlagOp{coloring_->node_ptr().data(), std::min(coloring_->covered(), ctx_.nodes), nullptr, 0,
                                                          false, ctx_.in_contact.data()});
  for (CondComponent* c : parts_)
    if (c->active()) c->MarkContactNodesOnBackend(&ctx_.in_contact);
  ctx_.in_contact_host = std::move(contact);
  for (CondComponent* c : parts_)
    if (c->active()) c->OnContacts();
}

void CondSolver::RespondToForces(const Array<Scalar>& b, bool before_sweep) {
  if (!rigid_.active() && !bary_.active()) return;
  // f: contact forces before the sweeps, f_new after them
  Array<Scalar>& f = before_sweep ? ctx_.f : ctx_.f_new;
  backend_->Fill(0, &f);
  ctx_.AddContactForces(nullptr, ctx_.lambda, &f);
  for (CondComponent* c : parts_) {
    if (!c->active()) continue;
    if (before_sweep) {
      c->BeforeSweep(b);
    } else {
      c->AfterSweep(b);
    }
  }
}

void CondSolver::Iterate(int l, const Array<Scalar>& b, const Array<Scalar>& v, bool u_ready) {
  // the W step starts from v corrected in the body modes (v itself stays v^l for Chebyshev and
  // theta); v* = v - W r (eq. 20) with the chains' exact blocks where there are chains (in the
  // Gauss-Seidel form after the contact nodes' step, below)
  // (first the free bodies' whole motions, from the second iteration on: the first sweep decides
  // which contacts are idle, the impulses of a cold start say nothing; then the patches)
  // (fused passes without chains: the last level's correction and the W step in one pass, which
  // writes u and, for the barycentric hosts, r; nothing below reads the corrected v)
  const bool free_level = FreeLevel(l);
  const bool fused_step = params_.fused_passes && !chains_.active() && !u_ready && (free_level || modes_.correcting());
  const Array<Scalar>* corrected = &v;
  if (free_level) {
    if (fused_step && !modes_.correcting()) {
      free_.CorrectedStep(*corrected, ctx_.w, bary_.active(), &ctx_.u);
    } else {
      corrected = &free_.Corrected(*corrected);
    }
  }
  if (modes_.correcting()) {
    if (fused_step) {
      modes_.CorrectedStep(*corrected, ctx_.w, bary_.active(), &ctx_.u);
    } else {
      corrected = &modes_.Corrected(*corrected);
    }
  }
  const Array<Scalar>& start = *corrected;
  const bool chain_gs = chains_.active() && params_.chain_gauss_seidel;
  if (chains_.active() && !chain_gs) {
    chains_.Step(start);
  } else if (!u_ready && !fused_step) {
    kernels_->FpiStep(3 * ctx_.nodes, start.data(), ctx_.w.data(), ctx_.r.data(), ctx_.u.data());
  }
  // u = v* + W Jc^T lambda_prev; virtual nodes with their own Gamma answer the current forces
  // (less Gamma f, added back with the impulses), and after the sweeps the new ones
  RespondToForces(b, true);
  ctx_.AddContactForces(ctx_.w.data(), ctx_.lambda, &ctx_.u);
  // the diagonal solve color by color (Alg. 2, eq. 24), then the rigid groups' own contacts by
  // Gauss-Seidel from the forces of the new impulses (a group's other contacts have moved it)
  const bool own = rigid_.has_own_contacts();
  const std::vector<Index>& sweep_ptr = own ? rigid_.sweep_color_ptr() : ctx_.color_ptr;
  const Array<Index>& order = own ? rigid_.sweep_order() : ctx_.order;
  const ContactView view = ctx_.contacts.view();
  for (std::size_t c = 0; c + 1 < sweep_ptr.size(); ++c) {
    const Index count = sweep_ptr[c + 1] - sweep_ptr[c];
    if (count == 0) continue;
    kernels_->Sweep(view, order.data(), sweep_ptr[c], count, ctx_.w.data(), ctx_.env_active.data(),
                    static_cast<Scalar>(params_.omega), params_.projection, ctx_.lambda.data(), ctx_.u.data());
  }
  if (own) rigid_.SweepOwnContacts(b);
  RespondToForces(b, false);
  // the chains' free nodes solve with their contact nodes' new velocities
  if (chain_gs) chains_.Couple(start);
}

// per-environment state of one solve's loop (the Chebyshev state is on the backend:
// env_chebyshev_, chebyshev_state_ops.h)
struct CondSolver::Loop {
  std::vector<unsigned char> active;
  std::vector<unsigned char> pending;  // theta passed; the momentum check at the next r decides
  bool any_pending = false;
  int running = 0;
  std::vector<Scalar> check;  // theta^2, the Chebyshev restarts and the failure flags per environment, as last read
  explicit Loop(Index ne) : active(std::size_t(ne), 1), pending(std::size_t(ne), 0), running(ne) {}
};

void CondSolver::Accelerate(int l, const Array<Scalar>& v) {
  // nu per environment from the backend's state machine (Converge's CondChebyshevStepOp, which
  // starts each environment at its own cheb_start): nothing uploaded
  if (!params_.chebyshev || l < params_.chebyshev_start) return;
  if (fused_ || fused_diff_) {
    chebyshev_now_ = true;  // in Converge's pass
    return;
  }
  kernels_->Chebyshev(3 * ctx_.nodes, ctx_.node_env.data(), env_nu_.data(), static_cast<Scalar>(params_.chebyshev_relax), v.data(),
                      v_prev_.data(), ctx_.u.data());
}

void CondSolver::Converge(int l, Loop* loop, Array<Scalar>* v, CondStats* st) {
  Backend& be = *backend_;
  // theta_e = |v^{l+1} - v^l| per environment (Alg. 1 line 12); fused: with the Chebyshev
  // update before it and the commit after it in one pass, the chunks folded in order by the
  // state machine's pass
  if (fused_) {
    FusedThetaCommit(v);
  } else if (fused_diff_) {
    FusedDiffCommit(v);
    ctx_.EnvDot(diff_, diff_, &env_theta2_);
  } else {
    be.Copy(ctx_.u, &diff_);
    be.Axpby(-1, *v, 1, &diff_);
    ctx_.EnvDot(diff_, diff_, &env_theta2_);
  }
  // per environment the Chebyshev state machine (rho, restarts, the next nu) on the backend; an
  // environment whose theta is not finite stops there
  const Index ne = ctx_.num_envs;
  kernels_->ChebyshevStep(ne, CondChebyshevStepOp{fused_ ? chunk_sum_.data() : nullptr, chunk_begin_.data(), Index(chunk_begin_host_.size()),
                                                  ctx_.dof_offsets.array().data(), fused_ ? nullptr : env_theta2_.data(),
                                                  ctx_.env_active.data(), ne, l, params_.chebyshev, params_.chebyshev_start,
                                                  params_.max_iterations, params_.chebyshev_safeguard == ChebyshevSafeguard::kRate, env_chebyshev_.data(),
                                                  env_nu_.data(), env_check_.data()});
  // between the host's checks the running environments iterate on (the commit skips the ones
  // the state machine stopped); at a check: theta^2, the restarts and the failure flags in one
  // download
  const bool check = (l + 1) % params_.check_every == 0 || l + 1 >= params_.max_iterations;
  std::vector<unsigned char> failed;
  double worst = 0;
  if (check) {
    // (and, until it is 1, whether every free body is loaded: then its level is left out, its
    // correction being 0 for the rest of the solve)
    const bool flag = modes_.refresh_flag_set(), still = free_.still_flag_set() && !free_still_;
    const std::size_t still_at = std::size_t(3 * ne + (flag ? ne : 0));
    loop->check.resize(still_at + (still ? 1 : 0));
    backend_->CopyToHost(loop->check.data(), env_check_.data(), sizeof(Scalar) * loop->check.size());
    if (flag) modes_.RefreshRequested(loop->check.data() + 3 * ne);
    if (still && loop->check[still_at] != 0) free_still_ = true;
    st->chebyshev_restarts = 0;
    for (Index e = 0; e < ne; ++e) st->chebyshev_restarts += int(loop->check[std::size_t(ne + e)]);
    bool changed = false;
    for (Index e = 0; e < ne; ++e) {
      if (!loop->active[e]) continue;
      const double theta = std::sqrt(double(loop->check[std::size_t(e)]));
      if (loop->check[std::size_t(2 * ne + e)] != 0 || !std::isfinite(theta)) {
        // divergence: this environment keeps its last finite iterate, the others go on
        st->failed_envs.push_back(e);
        failed.resize(std::size_t(ne), 0);
        failed[e] = 1;
        loop->active[e] = 0;
        changed = true;
        --loop->running;
        continue;
      }
      worst = std::max(worst, theta);
      st->env_iterations[e] = l + 1;
      st->env_residual[e] = theta;
    }
    if (changed) SetActive(loop->active);
  }
  if (!fused_ && !fused_diff_) {
    kernels_->Commit(3 * ctx_.nodes, ctx_.node_env.data(), ctx_.env_active.data(), ctx_.u.data(), v->data(), v_prev_.data());
  } else if (!failed.empty()) {
    FusedRestore(failed, v);
  }
  if (!check) return;
  if (params_.record_history) st->history.push_back(worst);
  // environments below theta_th stop (Alg. 1 line 13); with the momentum check they first pass
  // it at the next iteration's r. When none runs on, the flags stay as they are (the next solve
  // sets them)
  bool changed = false;
  for (Index e = 0; e < ne; ++e) {
    if (loop->active[e] && st->env_residual[e] < params_.theta_threshold) {
      if (momentum_check()) {
        loop->pending[e] = 1;
        loop->any_pending = true;
        continue;
      }
      loop->active[e] = 0;
      changed = true;
      --loop->running;
    }
  }
  if (changed && loop->running > 0) SetActive(loop->active);
}

void CondSolver::CheckMomentum(Loop* loop, CondStats* st) {
  if (!loop->any_pending) return;
  loop->any_pending = false;
  Backend& be = *backend_;
  // the full residual r - Jc^T lambda (eq. 1) with the current impulses
  be.Fill(0, &diff_);
  ctx_.AddContactForces(nullptr, ctx_.lambda, &diff_);
  be.Axpby(1, ctx_.r, -1, &diff_);
  // per body the net force residual F = sum_i (r - Jc^T lambda)_i: the elastic and damping forces
  // cancel in it (K annihilates translations), so F / M is the error of the body's mean velocity
  // however stiff the body is (eq. 9: M-hat (v - v*) summed over the body = F when K 1 = 0);
  // theta_p^2 = sum_b n_b |F_b / M_b|^2, the 2-norm of that velocity over the body's n_b nodes
  // (comparable with theta)
  // the three components' sums side by side on the backend, read in one download
  std::vector<double> p2(std::size_t(ctx_.num_envs), 0);
  const std::size_t nb = body_mass_.size();
  for (int d = 0; d < 3; ++d) {
    be.SegmentedDot(diff_, body_mask_[d], body_offsets_, &body_sum_);
    if (nb > 0) be.CopyWithin(body_sum3_.data() + d * nb, body_sum_.data(), sizeof(Scalar) * nb);
  }
  body_sum_host_.resize(3 * nb);
  if (nb > 0) be.CopyToHost(body_sum_host_.data(), body_sum3_.data(), sizeof(Scalar) * 3 * nb);
  for (int d = 0; d < 3; ++d) {
    const Scalar* f = body_sum_host_.data() + d * nb;
    for (std::size_t b = 0; b < nb; ++b)
      if (body_mass_[b] > 0) p2[std::size_t(body_env_[b])] += body_nodes_[b] * std::pow(double(f[b]) / body_mass_[b], 2);
  }
  const double bound = params_.momentum_factor * params_.theta_threshold;
  bool changed = false;
  for (Index e = 0; e < ctx_.num_envs; ++e) {
    if (!loop->pending[e]) continue;
    loop->pending[e] = 0;
    const double theta_p = std::sqrt(p2[std::size_t(e)]);
    st->env_momentum_error[e] = theta_p;
    if (!loop->active[e] || !(theta_p < bound)) continue;
    loop->active[e] = 0;
    changed = true;
    --loop->running;
  }
  if (changed && loop->running > 0) SetActive(loop->active);
}

CondStats CondSolver::Solve(DeviceBlockMatrix& a, const Array<Scalar>& b, Array<Scalar>* v) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // profiler ranges (NVTX on CUDA builds)
  ProfileRange setup_range("cond set-up");
  Prepare(a);
  const Index n = 3 * ctx_.nodes, ne = ctx_.num_envs;
  CONDSIM_CHECK(b.size() == n && v->size() == n,
                "COND: b has " << b.size() << " and v has " << v->size() << " entries, A has " << n << " rows");
  for (CondComponent* c : parts_)
    if (c->active()) c->Check();
  step_.Compute(a, parts_);
  for (CondComponent* c : parts_)
    if (c->active()) c->Prepare(a);
  Loop loop(ne);
  // the Chebyshev states start plain (rho = nu = 1) until l_s
  kernels_->ChebyshevReset(ne, CondChebyshevResetOp{params_.chebyshev_start, env_chebyshev_.data()});
  // environments left out (SetEnabledEnvironments) keep v as it is
  CONDSIM_CHECK(ctx_.env_enabled.empty() || Index(ctx_.env_enabled.size()) == ne,
                "COND: enabled flags for " << ctx_.env_enabled.size() << " environments, the node layout has " << ne);
  for (std::size_t e = 0; e < ctx_.env_enabled.size(); ++e)
    if (!ctx_.env_enabled[e]) {
      loop.active[e] = 0;
      --loop.running;
    }
  SetActive(loop.active);
  CondStats st;
  st.num_contacts = ctx_.contacts_host.size();
  st.num_colors = static_cast<Index>(ctx_.color_ptr.size()) - 1;
  st.env_iterations.assign(std::size_t(ne), 0);
  st.env_residual.assign(std::size_t(ne), 0.0);
  st.env_momentum_error.assign(std::size_t(ne), -1.0);
  backend_->Synchronize();
  const auto t1 = Clock::now();
  st.setup_seconds = std::chrono::duration<double>(t1 - t0).count();
  setup_range.End();
  ProfileRange loop_range("cond loop");
  const BackendCounters c0 = backend_->counters();
  modes_.StartSolve(env_check_.data() + 3 * ne);
  free_still_ = false;
  free_.SetStillFlag(keep_loaded_free_level_ ? nullptr : env_check_.data() + 3 * ne + (modes_.refresh_flag_set() ? ne : 0));

  for (int l = 0; l < params_.max_iterations && loop.running > 0; ++l) {
    // truncated modes: the patches re-chosen from the last iteration's impulses
    // (a new coarse space changes the iteration: the Chebyshev semi-iteration starts afresh,
    // without counting as a failed one)
    if (params_.truncated_modes && modes_.active() && modes_.Refresh(l, *v) && params_.chebyshev)
      kernels_->ChebyshevRestart(ne, CondChebyshevRestartOp{l, params_.chebyshev_start, env_chebyshev_.data(), env_nu_.data(), modes_.changed_envs()});
    // r = A v - b; the Barzilai-Borwein W from the last step (Frobenius: fixed)
    const bool u_ready = Residual(l, a, b, *v);
    // the momentum check of the environments whose theta passed in the last iteration
    CheckMomentum(&loop, &st);
    if (loop.running == 0) break;
    step_.Update(l, *v, v_prev_);
    Iterate(l, b, *v, u_ready);
    Accelerate(l, *v);
    Converge(l, &loop, v, &st);
  }
  // at l_max the last iterate's momentum check needs one more r
  if (loop.any_pending) {
    Residual(params_.max_iterations, a, b, *v);
    CheckMomentum(&loop, &st);
  }
  backend_->Synchronize();
  st.iterate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  loop_range.End();
  st.loop_counters = backend_->counters() - c0;
  const double bound = params_.momentum_factor * params_.theta_threshold;
  st.env_converged.assign(std::size_t(ne), 1);
  for (int e : st.failed_envs) st.env_converged[std::size_t(e)] = 0;
  for (Index e = 0; e < ne; ++e) {
    if (!ctx_.env_enabled.empty() && !ctx_.env_enabled[std::size_t(e)]) continue;
    st.iterations = std::max(st.iterations, st.env_iterations[e]);
    st.residual = std::max(st.residual, st.env_residual[e]);
    st.momentum_error = std::max(st.momentum_error, st.env_momentum_error[e]);
    if (!(st.env_residual[e] < params_.theta_threshold)) st.env_converged[std::size_t(e)] = 0;
    if (momentum_check() && !(st.env_momentum_error[e] >= 0 && st.env_momentum_error[e] < bound)) st.env_converged[std::size_t(e)] = 0;
  }
  st.converged = std::find(st.env_converged.begin(), st.env_converged.end(), 0) == st.env_converged.end();
  return st;
}

double CondSolver::ConsistencyResidual(DeviceBlockMatrix& a, const Array<Scalar>& b, const Array<Scalar>& v) {
  Prepare(a);
  Backend& be = *backend_;
  // r = A v - b - Jc^T lambda (eq. 1)
  be.Fill(0, &diff_);
  ctx_.AddContactForces(nullptr, ctx_.lambda, &diff_);
  a.Multiply(1, v, 0, &ctx_.r);
  be.Axpby(-1, b, 1, &ctx_.r);
  be.Axpby(-1, diff_, 1, &ctx_.r);
  return double(be.Norm2(ctx_.r)) / std::max(double(be.Norm2(b)), 1e-300);
}

}  // namespace condsim
