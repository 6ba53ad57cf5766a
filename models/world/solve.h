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
#include "models/world/world_kernels.h"

namespace condsim {

class SolveStage {
 public:
  // the solver and the cables' chains (once, at the first step)
  void Build(const WorldBodies& w);
  // solves w->system into w->v (v-hat, on the backend) and returns its summary in vhat (per
  // deformable body speed, energy and finiteness reduced on the backend; the rigid nodes read
  // back): every environment on its own (failed ones left out, their v-hat 0). An environment
  // whose solve became NaN/Inf, or whose body has a NaN/Inf velocity, is a failure (`step` and
  // `time` name the step)
  // writer: the contacts' maker when it writes their backend record (CondSolver::SetContacts)
  CondStats Run(WorldBodies* w, const Nodalizer& nodes, const RigidGroups& groups, const BodyModes& modes, const ContactSet& contacts,
                ContactRecordWriter* writer, Index step, Scalar time, VhatSummary* vhat, std::vector<EnvFailure>* failures);
  // tests: the last Run's contacts on the backend, read back (CondSolver::BackendContacts)
  ContactSet BackendContacts() const { return solver_->BackendContacts(); }
  // tests: CondSolver::set_keep_loaded_free_level (before the first Run)
  void set_keep_loaded_free_level(bool on) { keep_loaded_free_level_ = on; }
  // the last Run's contacts and impulses on the backend (CondSolver::contact_record)
  ContactView contact_record() const { return solver_->contact_record(); }
  const Scalar* impulses_on_backend() const { return solver_->impulses_on_backend(); }
  std::vector<Scalar> Impulses() const { return solver_->Impulses(); }
  // the last Run's backend traffic in the solver's own calls (setup and solve, loop included)
  const BackendCounters& solver_counters() const { return solver_counters_; }
  // the solver's capacity for the contacts of `bounds` (CondSolver::Reserve)
  void Reserve(const ContactBounds& bounds, Index max_nodes) { solver_->Reserve(bounds, max_nodes); }
  // sets v-hat (w->v, and the summary's rigid nodes) to 0 on the DOFs of the failed
  // environments (w->v read back and written whole: only when an environment failed)
  void ZeroFailed(WorldBodies* w, VhatSummary* vhat) const;

 private:
  // the summary of w->v: one launch over the base nodes, one segmented max and one segmented
  // dot over the deformable bodies (3 scalars per body read back), the rigid part read back
  void Summarize(const WorldBodies& w, VhatSummary* vhat);
  // the summary's arrays and segments (once)
  void BuildSummary(const WorldBodies& w);
  // a failure per environment with a body whose velocity in vhat is not finite (the first body)
  static void CheckFinite(const WorldBodies& w, const VhatSummary& vhat, Index step, Scalar time,
                          const std::vector<unsigned char>& skip, std::vector<EnvFailure>* failures);

  std::unique_ptr<CondSolver> solver_;
  std::vector<Index> base_env_;  // per base node of the system its environment
  std::vector<Index> node_env_;  // this step's, virtual nodes included
  BackendCounters solver_counters_;
  // the summary's reductions: per base node its mass, the speed/finiteness terms (2 per node) and
  // the kinetic energy; ones; segment s = deformable body body_segment_[d] (the others: gaps)
  std::unique_ptr<WorldKernels> kernels_;
  Array<Scalar> node_mass_, terms_, ke_, ones_, max_out_, ke_out_;
  SegmentOffsets max_segments_, ke_segments_;
  std::vector<Index> body_segment_;
  bool keep_loaded_free_level_ = false;
};

}  // namespace condsim
