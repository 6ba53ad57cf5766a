// The solve stage (paper Alg. 1): the COND solver on the assembled system, with the step's rigid
// groups, barycentric nodes and body modes; each cable is a chain (exact W on its contact-free
// nodes). A solve that becomes NaN/Inf is a DivergenceError naming the environment, the body
// and the step; the world's state is then left as it was.
#pragma once

#include <memory>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/world/bodies.h"
#include "models/world/nodalize.h"

namespace condsim {

class SolveStage {
 public:
  // the solver and the cables' chains (once, at the first step)
  void Build(const WorldBodies& w);
  // solves w->system into w->v and returns v-hat on the host in vhat; `step` and `time` name the
  // step in errors
  CondStats Run(WorldBodies* w, const Nodalizer& nodes, const RigidGroups& groups, const BodyModes& modes, const ContactSet& contacts,
                Index step, Scalar time, std::vector<Scalar>* vhat);
  std::vector<Scalar> Impulses() const { return solver_->Impulses(); }

 private:
  // throws DivergenceError unless every body's velocity in vhat is finite
  static void CheckFinite(const WorldBodies& w, const std::vector<Scalar>& vhat, Index step, Scalar time);

  std::unique_ptr<CondSolver> solver_;
};

}  // namespace condsim
