// The solve stage (paper Alg. 1): the COND solver on the assembled system, with the step's rigid
// groups, barycentric nodes and body modes; each cable is a chain (exact W on its contact-free
// nodes). A solve that becomes NaN/Inf is a DivergenceError naming the environment, the body
// and the step; the world's state is then left as it was.
#pragma once

#include <memory>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/world/bodies.h"
#include "models/world/health.h"
#include "models/world/nodalize.h"

namespace condsim {

class SolveStage {
 public:
  // the solver and the cables' chains (once, at the first step)
  void Build(const WorldBodies& w);
  // solves w->system into w->v and returns v-hat on the host in vhat: every environment on its
  // own (failed ones left out, their v-hat 0). An environment whose solve became NaN/Inf, or whose
  // body has a NaN/Inf velocity, is a failure (`step` and `time` name the step)
  CondStats Run(WorldBodies* w, const Nodalizer& nodes, const RigidGroups& groups, const BodyModes& modes, const ContactSet& contacts,
                Index step, Scalar time, std::vector<Scalar>* vhat, std::vector<EnvFailure>* failures);
  std::vector<Scalar> Impulses() const { return solver_->Impulses(); }
  // the solver's capacity for the contacts of `bounds` (CondSolver::Reserve)
  void Reserve(const ContactBounds& bounds, Index max_nodes) { solver_->Reserve(bounds, max_nodes); }
  // sets v-hat (host and w->v) to 0 on the DOFs of the failed environments
  void ZeroFailed(WorldBodies* w, std::vector<Scalar>* vhat) const;

 private:
  // a failure per environment with a body whose velocity in vhat is not finite (the first body)
  static void CheckFinite(const WorldBodies& w, const std::vector<Scalar>& vhat, Index step, Scalar time,
                          const std::vector<unsigned char>& skip, std::vector<EnvFailure>* failures);

  std::unique_ptr<CondSolver> solver_;
  std::vector<Index> base_env_;  // per base node of the system its environment
  std::vector<Index> node_env_;  // this step's, virtual nodes included
};

}  // namespace condsim
