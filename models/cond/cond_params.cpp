// The COND solver's parameters (cond_solver.h CondParams): their names and their validation.
#include <cmath>
#include <cstddef>
#include <string>

#include "condsim/error.h"
#include "models/cond/cond_solver.h"

namespace condsim {
namespace {
// the value among `all` whose ToString is `name`, or an Error that lists their names
template <class E, std::size_t N>
E ParseNamed(const std::string& name, const E (&all)[N], const char* what) {
  std::string valid;
  for (E e : all) {
    if (name == ToString(e)) return e;
    valid += (valid.empty() ? "" : ", ") + std::string(ToString(e));
  }
  throw Error("unknown " + std::string(what) + " '" + name + "' (valid: " + valid + ")");
}
}  // namespace

const char* ToString(StepSize s) {
  switch (s) {
    case StepSize::kFrobenius:
      return "frobenius";
    case StepSize::kBB1:
      return "bb1";
    case StepSize::kBB2:
      return "bb2";
    case StepSize::kBBAlternate:
      return "bb-alternate";
  }
  return "?";
}

StepSize ParseStepSize(const std::string& name) {
  const StepSize all[] = {StepSize::kFrobenius, StepSize::kBB1, StepSize::kBB2, StepSize::kBBAlternate};
  return ParseNamed(name, all, "step size");
}

const char* ToString(StopRule s) {
  switch (s) {
    case StopRule::kStep:
      return "step";
    case StopRule::kMomentum:
      return "momentum";
  }
  return "?";
}

StopRule ParseStopRule(const std::string& name) {
  const StopRule all[] = {StopRule::kStep, StopRule::kMomentum};
  return ParseNamed(name, all, "stop rule");
}

const char* ToString(ChebyshevSafeguard s) {
  switch (s) {
    case ChebyshevSafeguard::kFixed:
      return "fixed";
    case ChebyshevSafeguard::kRate:
      return "rate";
  }
  return "?";
}

ChebyshevSafeguard ParseChebyshevSafeguard(const std::string& name) {
  const ChebyshevSafeguard all[] = {ChebyshevSafeguard::kFixed, ChebyshevSafeguard::kRate};
  return ParseNamed(name, all, "Chebyshev safeguard");
}

Projection ParseProjection(const std::string& name) {
  if (name == "strict") return Projection::kStrict;
  if (name == "proximal") return Projection::kProximal;
  throw Error("unknown projection '" + name + "' (valid: strict, proximal)");
}

void CondParams::Validate() const {
  CONDSIM_CHECK(std::isfinite(theta_threshold) && theta_threshold > 0,
                "CondParams.theta_threshold must be a positive number [m/s], got " << theta_threshold);
  CONDSIM_CHECK(std::isfinite(momentum_factor) && momentum_factor >= 1,
                "CondParams.momentum_factor must be a number >= 1, got " << momentum_factor);
  CONDSIM_CHECK(max_iterations >= 1, "CondParams.max_iterations must be >= 1, got " << max_iterations);
  CONDSIM_CHECK(check_every >= 1, "CondParams.check_every must be >= 1 (iterations), got " << check_every);
  CONDSIM_CHECK(w_reuse_solves >= 1, "CondParams.w_reuse_solves must be >= 1, got " << w_reuse_solves);
  CONDSIM_CHECK(chebyshev_start >= 2, "CondParams.chebyshev_start must be >= 2, got " << chebyshev_start);
  CONDSIM_CHECK(chebyshev_relax > 0 && chebyshev_relax <= 1,
                "CondParams.chebyshev_relax must be in (0, 1], got " << chebyshev_relax);
  CONDSIM_CHECK(std::isfinite(omega) && omega >= 0, "CondParams.omega must be >= 0, got " << omega);
  CONDSIM_CHECK(std::isfinite(w_safeguard) && w_safeguard >= 0 && w_safeguard < 2,
                "CondParams.w_safeguard must be in [0, 2) (0: off), got " << w_safeguard);
  CONDSIM_CHECK(rigid_sweeps >= 0 && rigid_sweeps <= 100, "CondParams.rigid_sweeps must be in [0, 100], got " << rigid_sweeps);
  CONDSIM_CHECK(body_mode_patches >= 1 && body_mode_patches <= kMaxBodyModePatches,
                "CondParams.body_mode_patches must be in [1, " << kMaxBodyModePatches << "], got " << body_mode_patches);
  CONDSIM_CHECK(body_mode_patch_nodes >= 0, "CondParams.body_mode_patch_nodes must be >= 0 (0: body_mode_patches), got " << body_mode_patch_nodes);
  CONDSIM_CHECK(body_mode_dense_patches >= 0 && body_mode_dense_patches <= kMaxDenseBodyModePatches,
                "CondParams.body_mode_dense_patches must be in [0, " << kMaxDenseBodyModePatches << "], got " << body_mode_dense_patches);
  CONDSIM_CHECK(body_mode_refresh >= 1, "CondParams.body_mode_refresh must be >= 1 (solves), got " << body_mode_refresh);
}

}  // namespace condsim
