// The COND solver's momentum check (docs/solver.md "Stopping rule"): the bodies' mass diagonal,
// DOF ranges and masks for the node layout (CondSolver::CheckMomentum runs it in the loop).
#include <algorithm>
#include <cmath>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondSolver::SetMassDiagonal(const std::vector<Scalar>& mass, const std::vector<Index>& body_start) {
  for (std::size_t k = 1; k < body_start.size(); ++k)
    CONDSIM_CHECK(body_start[k] > body_start[k - 1], "SetMassDiagonal: body_start must be ascending (entry " << k << ")");
  for (std::size_t k = 0; k < mass.size(); ++k)
    CONDSIM_CHECK(std::isfinite(mass[k]) && mass[k] >= 0, "SetMassDiagonal: DOF " << k << " has mass " << mass[k] << " (must be >= 0)");
  mass_host_ = mass;
  body_start_ = body_start;
  mass_dirty_ = true;
}

void CondSolver::PrepareMomentum() {
  mass_dirty_ = false;
  body_mass_.clear();
  if (mass_host_.empty()) return;
  const Index n = 3 * ctx_.nodes;
  CONDSIM_CHECK(Index(mass_host_.size()) <= n, "SetMassDiagonal: " << mass_host_.size() << " values for " << n << " DOFs");
  // bodies: DOF ranges, with the sums of their masses and node counts
  std::vector<Index> starts = body_start_;
  if (starts.empty())
    for (Index k = 0; k < ctx_.nodes; ++k)
      if (k == 0 || ctx_.node_env_host[k] != ctx_.node_env_host[k - 1]) starts.push_back(k);
  std::vector<Index> offsets{0};
  for (Index k : starts)
    if (3 * k > offsets.back()) offsets.push_back(3 * k);
  if (n > offsets.back()) offsets.push_back(n);
  const std::size_t nb = offsets.size() - 1;
  body_mass_.assign(nb, 0);
  body_nodes_.assign(nb, 0);
  body_env_.assign(nb, 0);
  // per body: whether all its DOFs have mass (1), none (0) or some (2)
  std::vector<unsigned char> massive(nb, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    body_env_[b] = ctx_.node_env_host[std::size_t(offsets[b] / 3)];
    Index with_mass = 0;
    for (Index k = offsets[b]; k < offsets[b + 1]; ++k) {
      if (std::size_t(k) >= mass_host_.size() || mass_host_[k] <= 0) continue;
      ++with_mass;
      if (k % 3 == 0) {
        body_mass_[b] += mass_host_[k];
        body_nodes_[b] += 1;
      }
    }
    massive[b] = with_mass == 0 ? 0 : with_mass == offsets[b + 1] - offsets[b] ? 1 : 2;
  }
  body_offsets_.Assign(backend_, offsets);
  // the masks of the DOFs with mass: made on the backend from one flag per body (a new node
  // layout uploads nb bytes, not 3 DOF-sized arrays); uploaded only for a body with some DOFs
  // without mass
  if (std::find(massive.begin(), massive.end(), 2) == massive.end()) {
    for (auto& m : body_mask_) m.Resize(backend_, n);
    body_massive_.Assign(backend_, massive);
    kernels_->MomentumMask(n, MomentumMaskOp{body_offsets_.array().data(), Index(nb), body_massive_.data(), body_mask_[0].data(),
                                             body_mask_[1].data(), body_mask_[2].data()});
  } else {
    std::vector<Scalar> mask[3];
    for (auto& m : mask) m.assign(std::size_t(n), 0);
    for (Index k = 0; k < n && std::size_t(k) < mass_host_.size(); ++k)
      if (mass_host_[k] > 0) mask[k % 3][k] = 1;
    for (int d = 0; d < 3; ++d) body_mask_[d].Assign(backend_, mask[d]);
  }
  body_sum_.Resize(backend_, Index(nb));
  body_sum3_.Resize(backend_, 3 * Index(nb));
}

}  // namespace condsim
