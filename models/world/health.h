// The health stage: after the solve, every body's mid-step speed, kinetic energy and coordinates
// against the world's limits (WorldParams::health). A body beyond a limit is a
// DivergenceError naming the environment, the body and the step, like a NaN/Inf velocity, so a
// run that blows up stops (exit 3) with what it computed instead of writing 10^90 m positions.
// The solver's own warnings (iteration cap, residual growth) are the caller's (CondStats). SI units.
#pragma once

#include <string>
#include <vector>

#include "models/world/bodies.h"

namespace condsim {

// what one step's check measured (v-hat: the mid-step velocity of eq. 4)
struct HealthReport {
  Scalar max_speed = 0;       // the fastest node, segment or rigid body [m/s]
  Index fastest_body = -1;    // its body id
  Scalar kinetic_energy = 0;  // translational, of nodes and segments; rigid bodies with rotation [J]
  Scalar max_distance = 0;    // the largest coordinate magnitude |x|, |y|, |z| of any FEM node, segment
                              // centre or centre of mass at the step's start [m]
  Index farthest_body = -1;
};

// v-hat as the host sees it after the solve (v-hat itself stays on the backend, in w->v): per
// deformable body d its largest node speed (nodes with mass), its kinetic energy (the point
// masses' m v.v / 2, as BodyMomentumTermsOp without a cable's spin) and whether all its velocities are finite,
// reduced on the backend (SolveStage::Run); and the rigid bodies' v and omega nodes (3 per node,
// rigid node order), read back
struct VhatSummary {
  std::vector<Scalar> max_speed, kinetic_energy;  // per deformable body [m/s], [J]
  std::vector<unsigned char> finite;              // per deformable body
  std::vector<Scalar> rigid;                      // 3 per rigid node [m/s], [rad/s]
  // rigid node t's entry (t - the first rigid node)
  Vec3 RigidNode(Index t) const { return LoadVec3(rigid.data(), t); }
};

// an environment that diverged at a step: the body named (-1: the solve as a whole) and the
// DivergenceError text ("world: environment e, body b diverged (what) at step s (t = ... s)")
struct EnvFailure {
  Index env = 0, body = -1;
  std::string what;
};
// the failure's text in that form
EnvFailure MakeFailure(Index env, Index body, Index step, Scalar time, const std::string& what);

class HealthStage {
 public:
  // the node masses of the deformable parts (once, at the first step)
  void Build(const WorldBodies& w);
  // per environment that has not failed (WorldBodies::Failed): its report in env_reports and, when
  // a body exceeds w.params.health (the kinetic energy: the environment's growth over its last
  // step's plus the energy of its bodies at 1 m/s) or has a NaN/Inf position, a failure (the
  // first found per environment). Returns the reports combined (largest speed and distance,
  // summed energy)
  HealthReport Run(const WorldBodies& w, const VhatSummary& vhat, Index step, Scalar time, std::vector<HealthReport>* env_reports,
                   std::vector<EnvFailure>* failures);

 private:
  std::vector<Scalar> total_mass_;   // per environment [kg]
  std::vector<Scalar> last_energy_;  // per environment the last step's kinetic energy (-1: none yet)
};

}  // namespace condsim
