// The solve stage: the COND solve and its divergence checks.
#include "models/world/solve.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "condsim/error.h"

namespace condsim {

void SolveStage::BuildSummary(const WorldBodies& w) {
  // the deformable bodies' node ranges as segments (sorted; gaps between them their own segments)
  const Index base = w.system->num_base_nodes();
  kernels_ = MakeKernels<WorldKernels>(*w.backend);
  node_mass_.Assign(w.backend, w.BaseNodeMasses());
  terms_.Resize(w.backend, 2 * base);
  ke_.Resize(w.backend, base);
  ones_.Assign(w.backend, std::vector<Scalar>(std::size_t(base), Scalar(1)));
  std::vector<std::pair<Index, std::size_t>> starts;
  for (std::size_t d = 0; d < w.num_deformable(); ++d) starts.push_back({w.system->part_offset(w.DeformablePart(d)), d});
  std::sort(starts.begin(), starts.end());
  std::vector<Index> seg{0};
  body_segment_.assign(w.num_deformable(), 0);
  for (const auto& [first, d] : starts) {
    if (seg.back() != first) seg.push_back(first);
    body_segment_[d] = Index(seg.size()) - 1;
    seg.push_back(first + w.DeformableNodes(d));
  }
  ke_segments_.Assign(w.backend, seg);
  // the finiteness terms: the same segments shifted by base
  std::vector<Index> both = seg;
  for (std::size_t s = 1; s < seg.size(); ++s) both.push_back(base + seg[s]);
  if (seg.back() != base) both.insert(both.begin() + std::ptrdiff_t(seg.size()), base);
  max_segments_.Assign(w.backend, both);
  max_out_.Resize(w.backend, max_segments_.num_segments());
  ke_out_.Resize(w.backend, ke_segments_.num_segments());
}

void SolveStage::Summarize(const WorldBodies& w, VhatSummary* vhat) {
  const Index base = w.system->num_base_nodes();
  const std::size_t nd = w.num_deformable();
  vhat->max_speed.assign(nd, 0);
  vhat->kinetic_energy.assign(nd, 0);
  vhat->finite.assign(nd, 1);
  if (nd > 0) {
    kernels_->Run(base, VhatTermsOp{w.v.data(), node_mass_.data(), base, terms_.data(), ke_.data()});
    w.backend->SegmentedMaxAbs(terms_, max_segments_, &max_out_);
    w.backend->SegmentedDot(ke_, ones_, ke_segments_, &ke_out_);
    const std::vector<Scalar> maxes = max_out_.ToHost(), energies = ke_out_.ToHost();
    // the finiteness segment of body segment s: s + the speed segments (and the gap to base)
    const std::size_t shift = std::size_t(ke_segments_.num_segments()) + (ke_segments_.host().back() != base ? 1 : 0);
    for (std::size_t d = 0; d < nd; ++d) {
      const std::size_t s = std::size_t(body_segment_[d]);
      vhat->max_speed[d] = maxes[s];
      vhat->finite[d] = maxes[s + shift] == 0 ? 1 : 0;
      vhat->kinetic_energy[d] = energies[s];
    }
  }
  // the rigid bodies' v and omega nodes
  vhat->rigid.resize(3 * std::size_t(w.rigid.num_nodes()));
  if (!vhat->rigid.empty())
    w.backend->CopyToHost(vhat->rigid.data(), w.v.data() + 3 * std::size_t(w.system->part_offset(w.rigid_part)),
                          sizeof(Scalar) * vhat->rigid.size());
}

void SolveStage::Build(const WorldBodies& w) {
  solver_ = std::make_unique<CondSolver>(w.backend, w.params.cond);
  solver_->set_keep_loaded_free_level(keep_loaded_free_level_);
  // the momentum check of the stop rule: 2 m / t per DOF of eq. 9's mass part of the FEM nodes
  // (rigid bodies and virtual nodes 0), one body per FEM body and cable. Cables are left out (0):
  // their chains take the exact W of their contact-free system (CondChains), so theta already
  // measures their error at any stiffness, while their net force residual is dominated by the
  // stiff joints to kinematic end poses (cable_winding: 47 -> 270 iterations per step with them)
  std::vector<Scalar> mass_diag;
  for (Scalar m : w.BaseNodeMasses())
    for (int d = 0; d < 3; ++d) mass_diag.push_back(2 * m / w.params.dt);
  for (const auto& r : w.rods) {
    const std::size_t first = 3 * std::size_t(w.system->part_offset(r->part));
    std::fill(mass_diag.begin() + first, mass_diag.begin() + first + std::size_t(r->model->num_dofs()), Scalar(0));
  }
  // bodies for the check: each deformable part, and the rigid part and the virtual nodes as
  // bodies without mass (so no body runs into another environment's nodes)
  std::vector<Index> body_start;
  for (std::size_t d = 0; d < w.num_deformable(); ++d) body_start.push_back(w.system->part_offset(w.DeformablePart(d)));
  body_start.push_back(w.system->part_offset(w.rigid_part));
  body_start.push_back(w.system->num_base_nodes());
  std::sort(body_start.begin(), body_start.end());
  body_start.erase(std::unique(body_start.begin(), body_start.end()), body_start.end());
  // the environment of every base node
  base_env_.assign(std::size_t(w.system->num_base_nodes()), 0);
  for (std::size_t d = 0; d < w.num_deformable(); ++d) {
    const Index env = d < w.fem.size() ? w.Env(BodyKind::kFem, Index(d)) : w.Env(BodyKind::kRod, Index(d - w.fem.size()));
    const Index off = w.system->part_offset(w.DeformablePart(d));
    std::fill(base_env_.begin() + off, base_env_.begin() + off + w.DeformableNodes(d), env);
  }
  for (Index k = 0; k < w.rigid.num_bodies(); ++k)
    std::fill(base_env_.begin() + w.RigidNode(k), base_env_.begin() + w.RigidNode(k) + 2, w.Env(BodyKind::kRigid, k));
  // no FEM body: no check (theta alone, at no cost)
  if (std::none_of(mass_diag.begin(), mass_diag.end(), [](Scalar m) { return m > 0; })) mass_diag.clear();
  solver_->SetMassDiagonal(mass_diag, body_start);
  BuildSummary(w);
  if (w.rods.empty()) return;
  std::vector<Index> chain_ptr{0}, chain_nodes;
  for (const auto& r : w.rods) {
    const Index offset = w.system->part_offset(r->part);
    for (Index c = 0; c < r->model->num_cables(); ++c) {
      for (Index k = 2 * r->model->cable_start()[c]; k < 2 * r->model->cable_start()[c + 1]; ++k) chain_nodes.push_back(offset + k);
      chain_ptr.push_back(static_cast<Index>(chain_nodes.size()));
    }
  }
  solver_->SetChains(chain_ptr, chain_nodes, RodModel::kChainBand);
}

CondStats SolveStage::Run(WorldBodies* w, const Nodalizer& nodes, const RigidGroups& groups, const BodyModes& modes,
                          const ContactSet& contacts, ContactRecordWriter* writer, Index step, Scalar time, VhatSummary* vhat,
                          std::vector<EnvFailure>* failures) {
  const BackendCounters c0 = w->backend->counters();
  solver_->SetRigidGroups(groups, &w->system->virtual_nodes_on_backend());
  solver_->SetBarycentricNodes(nodes.barycentric(), &w->system->virtual_nodes_on_backend());
  solver_->SetBodyModes(modes);
  // environments: the base nodes', a virtual node's that of its first host; failed ones left out
  const VirtualNodeSet& vn = w->system->virtual_nodes();
  node_env_ = base_env_;
  for (Index k = 0; k < vn.size(); ++k) node_env_.push_back(base_env_[std::size_t(vn.host[std::size_t(vn.ptr[std::size_t(k)])])]);
  solver_->SetNodeEnvironments(node_env_);
  std::vector<unsigned char> enabled(std::size_t(w->num_envs()), 1);
  for (Index e = 0; e < w->num_envs(); ++e) enabled[std::size_t(e)] = w->Failed(e) ? 0 : 1;
  solver_->SetEnabledEnvironments(enabled);
  solver_->SetContacts(contacts, writer);
  const CondStats stats = solver_->Solve(w->system->matrix(), w->system->rhs(), &w->v);
  solver_counters_ = w->backend->counters() - c0;
  // the solver keeps a failed environment at its last finite iterate, which is no solution either
  std::vector<unsigned char> skip(enabled.size(), 0);
  for (std::size_t e = 0; e < enabled.size(); ++e) skip[e] = enabled[e] ? 0 : 1;
  for (int e : stats.failed_envs) {
    failures->push_back(MakeFailure(e, -1, step, time, "the COND iteration became NaN/Inf"));
    skip[std::size_t(e)] = 1;
  }
  Summarize(*w, vhat);
  CheckFinite(*w, *vhat, step, time, skip, failures);
  return stats;
}

void SolveStage::ZeroFailed(WorldBodies* w, VhatSummary* vhat) const {
  bool any = false;
  for (std::size_t k = 0; k < node_env_.size() && !any; ++k) any = w->Failed(node_env_[k]);
  if (!any) return;
  // the rare path: v-hat read back whole, zeroed, written back
  std::vector<Scalar> v = w->v.ToHost();
  const Index rigid_first = w->system->part_offset(w->rigid_part), rigid_end = rigid_first + w->rigid.num_nodes();
  for (std::size_t k = 0; k < node_env_.size(); ++k)
    if (w->Failed(node_env_[k]))
      for (int d = 0; d < 3; ++d) {
        v[3 * k + std::size_t(d)] = 0;
        if (Index(k) >= rigid_first && Index(k) < rigid_end) vhat->rigid[3 * (k - std::size_t(rigid_first)) + std::size_t(d)] = 0;
      }
  w->v.CopyFromHost(v);
}

void SolveStage::CheckFinite(const WorldBodies& w, const VhatSummary& vhat, Index step, Scalar time,
                             const std::vector<unsigned char>& skip, std::vector<EnvFailure>* failures) {
  std::vector<unsigned char> done = skip;
  for (std::size_t b = 0; b < w.ids.size(); ++b) {
    const Index env = w.body_env[b];
    if (done[std::size_t(env)]) continue;
    const BodyKind kind = w.ids[b].first;
    const Index k = w.ids[b].second;
    const std::size_t d = kind == BodyKind::kFem ? std::size_t(k) : w.fem.size() + std::size_t(k);
    bool finite = true;
    if (kind != BodyKind::kRigid) {
      finite = vhat.finite[d] != 0;
    } else {
      const Index t = w.RigidNode(k) - w.RigidNode(0);
      for (Index i = 3 * t; i < 3 * (t + 2); ++i) finite = finite && std::isfinite(vhat.rigid[std::size_t(i)]);
    }
    if (finite) continue;
    failures->push_back(MakeFailure(env, Index(b), step, time, "NaN/Inf velocity"));
    done[std::size_t(env)] = 1;
  }
}

}  // namespace condsim
