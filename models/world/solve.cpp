// The solve stage: the COND solve and its divergence checks.
#include "models/world/solve.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "condsim/error.h"

namespace condsim {

void SolveStage::Build(const WorldBodies& w) {
  solver_ = std::make_unique<CondSolver>(w.backend, w.params.cond);
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
  std::vector<Index> body_start;
  for (std::size_t d = 0; d < w.num_deformable(); ++d) body_start.push_back(w.system->part_offset(w.DeformablePart(d)));
  std::sort(body_start.begin(), body_start.end());
  // no FEM body: no check (theta alone, at no cost)
  if (std::none_of(mass_diag.begin(), mass_diag.end(), [](Scalar m) { return m > 0; })) mass_diag.clear();
  solver_->SetMassDiagonal(mass_diag, body_start);
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
                          const ContactSet& contacts, Index step, Scalar time, std::vector<Scalar>* vhat) {
  solver_->SetRigidGroups(groups);
  solver_->SetBarycentricNodes(nodes.barycentric());
  solver_->SetBodyModes(modes);
  solver_->SetNodeEnvironments(std::vector<Index>(std::size_t(w->system->num_nodes()), 0));
  solver_->SetContacts(contacts);
  const CondStats stats = solver_->Solve(w->system->matrix(), w->system->rhs(), &w->v);
  // the solver keeps a failed environment at its last finite iterate, which is no solution either
  if (!stats.failed_envs.empty()) {
    std::ostringstream msg;
    msg << "world: environment 0 diverged (the COND iteration became NaN/Inf) at step " << step << " (t = " << time << " s)";
    throw DivergenceError(msg.str(), 0, -1, step);
  }
  *vhat = w->v.ToHost();
  CheckFinite(*w, *vhat, step, time);
  return stats;
}

void SolveStage::CheckFinite(const WorldBodies& w, const std::vector<Scalar>& vhat, Index step, Scalar time) {
  for (std::size_t b = 0; b < w.ids.size(); ++b) {
    const BodyKind kind = w.ids[b].first;
    const Index k = w.ids[b].second;
    const std::size_t d = kind == BodyKind::kFem ? std::size_t(k) : w.fem.size() + std::size_t(k);
    const Index offset = kind == BodyKind::kRigid ? w.RigidNode(k) : w.system->part_offset(w.DeformablePart(d));
    const Index count = kind == BodyKind::kRigid ? 2 : w.DeformableNodes(d);
    for (Index i = 3 * offset; i < 3 * (offset + count); ++i) {
      if (std::isfinite(vhat[i])) continue;
      std::ostringstream msg;
      msg << "world: environment 0, body " << b << " diverged (NaN/Inf velocity) at step " << step << " (t = " << time << " s)";
      throw DivergenceError(msg.str(), 0, Index(b), step);
    }
  }
}

}  // namespace condsim
