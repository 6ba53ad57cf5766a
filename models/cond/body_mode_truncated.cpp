// COND body modes: truncated modes (docs/solver.md, "Truncated modes"): the listed contact nodes
// re-chosen during a solve, per environment.
#include "models/cond/cond_body_modes.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondBodyModes::StartSolve(Scalar* refresh_flag) {
  refresh_flag_ = truncating() && active() ? refresh_flag : nullptr;
  if (refresh_flag_ == nullptr) return;
  const Index ne = ctx_->num_envs, contacts = ctx_->contacts_host.size();
  ctx_->kernels->BodyModeRefreshFlag(BodyModeRefreshFlagOp{arrays_.view(), nullptr, nullptr, 0, 0, ne, true, refresh_flag_});
  // no contact has limited a step yet (each environment's flags as it would have them alone)
  blocked_.Resize(ctx_->backend, contacts);
  ctx_->kernels->BodyModeUnblock(contacts, BodyModeUnblockOp{nullptr, nullptr, blocked_.data()});
}

void CondBodyModes::RefreshRequested(const Scalar* flags) {
  bool any = false;
  for (Index e = 0; e < ctx_->num_envs; ++e)
    if (flags[e] != 0) {
      refresh_due_[std::size_t(e)] = 1;
      any = true;
    }
  if (any) ctx_->kernels->BodyModeRefreshFlag(BodyModeRefreshFlagOp{arrays_.view(), nullptr, nullptr, 0, 0, ctx_->num_envs, true, refresh_flag_});
}

bool CondBodyModes::truncating() const {
  return ctx_->params->truncated_modes && !free_ && ctx_->params->body_modes && ctx_->params->step_size == StepSize::kFrobenius;
}

bool CondBodyModes::Refresh(int l, const Array<Scalar>& v) {
  if (!truncating() || a_ == nullptr || l == 0) return false;
  // per environment, as it would alone: on schedule from l = 8 on (the first sweeps decide which
  // contacts are idle; PeriodicRefresh), and early, at least 4 iterations after its last one,
  // when one of its steps was cut short
  const Index ne = ctx_->num_envs;
  const bool periodic = PeriodicRefresh(l, ctx_->params->chebyshev_safeguard == ChebyshevSafeguard::kRate);
  std::vector<unsigned char> due(std::size_t(ne), 0);
  bool any = false;
  for (Index e = 0; e < ne; ++e) {
    due[std::size_t(e)] = periodic || (refresh_due_[std::size_t(e)] && l - last_refresh_[std::size_t(e)] >= kRefreshGap);
    any = any || due[std::size_t(e)];
  }
  if (!any) return false;
  const Index nodes = ctx_->nodes;
  const ContactSet& c = ctx_->contacts_host;
  if (c.size() == 0) return false;
  for (Index e = 0; e < ne; ++e)
    if (due[std::size_t(e)]) {
      refresh_due_[std::size_t(e)] = 0;
      last_refresh_[std::size_t(e)] = l;
    }
  // admitted: every contact of the node is an idle S-contact (lambda = 0) that limited no step
  // since the last refresh, with a slack J_n v + phi above kSlackFactor theta_th; a node of a
  // D-contact, of a loaded contact or of one at (or near) its bound stays out (truncated, as at
  // the active nodes of monotone multigrid, Kornhuber 1994). The per-contact test runs on the
  // backend (BodyModeIdleOp): one byte per contact comes back, neither v nor lambda
  const double slack_min = kSlackFactor * ctx_->params->theta_threshold;
  Backend* b = ctx_->backend;
  idle_.Resize(b, c.size());
  // (an environment without listed contact nodes has no contact blocked: StartSolve cleared them)
  ctx_->kernels->BodyModeIdle(c.size(), BodyModeIdleOp{ctx_->contacts.view(), ctx_->lambda.data(), blocked_.data(), v.data(), slack_min,
                                                      idle_.data()});
  const std::vector<unsigned char> contact_idle = idle_.ToHost();
  std::vector<unsigned char> admit(std::size_t(nodes), 0), veto(std::size_t(nodes), 0);
  for (Index m = 0; m < c.size(); ++m) {
    const Index i = c.node_i[m], j = c.node_j[m];
    const bool idle = j < 0 && !ctx_->own_gamma_host[i] && contact_idle[m];
    if (idle) {
      admit[i] = 1;
    } else {
      veto[i] = 1;
      if (j >= 0) veto[j] = 1;
    }
  }
  // only nodes of the patches count (a cable's or rigid body's contact node is never listed)
  std::vector<unsigned char> listed(std::size_t(nodes), 0);
  for (Index i : modes_.node)
    if (i < nodes) listed[i] = 1;
  // the environments refreshed now take their new set, the others keep theirs
  if (admit_.empty()) admit_.assign(std::size_t(nodes), 0);
  env_changed_host_.assign(std::size_t(ne), 0);
  bool changed = false;
  Index count = 0;
  for (Index i = 0; i < nodes; ++i) {
    const Index e = ctx_->node_env_host[i];
    if (due[std::size_t(e)]) {
      admit[i] = admit[i] && !veto[i] && listed[i];
      if (admit[i] != admit_[i]) env_changed_host_[std::size_t(e)] = changed = true;
    } else {
      admit[i] = admit_[i];
    }
    count += admit[i];
  }
  if (!changed) return false;
  admit_ = admit;
  admitted_ = count;
  env_changed_.Assign(b, env_changed_host_);
  ctx_->kernels->BodyModeUnblock(c.size(), BodyModeUnblockOp{ctx_->contacts.view().env, env_changed_.data(), blocked_.data()});
  refreshing_ = true;
  Prepare(*a_);
  refreshing_ = false;
  return true;
}
}  // namespace condsim
