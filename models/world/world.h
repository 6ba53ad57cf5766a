// A scene stepped in time (paper Alg. 1): static shapes, rigid bodies (with joints and drives),
// FEM bodies and cables coupled by contacts. World::Step runs the stages in order:
//   detect (detect.h: contacts under the contact rule, contact_rule.h; virtual nodes, nodalize.h)
//   -> assemble (assemble.h: A v-hat = b + Jc^T lambda, eq. 9 and 15)
//   -> solve (solve.h: COND, Alg. 1; divergence is a DivergenceError)
//   -> health (health.h: speed, energy and distance bounds; beyond them a DivergenceError)
//   -> integrate (integrate.h: x += t v-hat, v = 2 v-hat - v, eq. 4)
//   -> inelastic (inelastic.h: restitution 0 at pressed contacts)
// and records the contact forces. The stages share the bodies (bodies.h). SI units.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "models/fem/tet_mesh.h"
#include "models/world/assemble.h"
#include "models/world/bodies.h"
#include "models/world/detect.h"
#include "models/world/health.h"
#include "models/world/inelastic.h"
#include "models/world/momenta.h"
#include "models/world/nodalize.h"
#include "models/world/solve.h"

namespace condsim {

// what the world reports for one contact (force sensors, tactile data)
struct ContactRecord {
  Vec3 position;     // contact point on body i's side [m]
  Vec3 normal;       // unit normal, pointing into body i
  Vec3 lambda;       // (normal, t1, t2) force in the contact frame [N] (mean over the step)
  Vec3 force;        // the same in the world frame, acting on body i (body j gets -force) [N]
  Index body_i = -1;  // body ids (World::AddRigid / AddFem order); -1: the static world
  Index body_j = -1;
  Index shape = -1;   // the static shape when body_j = -1 (AddStatic's id)
  Index mesh = -1;    // the static triangle mesh when body_j = -1 (AddStaticMesh's id)
  Index env = 0;      // the environment of the contact's bodies
};

// total contact force and torque on a body [N], [N m] (torque about the rigid body's centre of
// mass; about the origin for FEM bodies)
struct Wrench {
  Vec3 force;
  Vec3 torque;
};

// adds contact c's force on `body` and its torque about `ref` to w: body_i takes the force,
// body_j its opposite (both for a self-contact, which then adds nothing)
void AddContactWrench(const ContactRecord& c, Index body, const Vec3& ref, Wrench* w);

// one environment's part of a step (batched worlds: World::AddEnvironment)
struct EnvStepStats {
  int iterations = 0;          // COND iterations of this environment
  double residual = 0;         // its final theta [m/s]
  double momentum_error = -1;  // its last theta_p [m/s] (-1: not checked)
  bool converged = true;       // it passed the stop rule
  Index contacts = 0;
  Scalar max_penetration = 0;  // deepest detected penetration at the step's start [m]
  HealthReport health;         // its bodies' speed, kinetic energy and distance
  bool failed = false;         // it diverged at this step (frozen from now on; World::env_failed)
  Index failed_body = -1;      // the body named by the failure (-1: the solve as a whole)
  std::string failure;         // the DivergenceError text
};

struct StepStats {
  CondStats cond;
  HealthReport health;         // speed, kinetic energy and distance of the step (models/world/health.h)
  Index contacts = 0;
  Index virtual_nodes = 0;
  Scalar max_penetration = 0;  // deepest detected penetration at the step's start [m] (-gap)
  // per body id, at the step's end (x, v after the step and the inelastic stage): kinetic energy,
  // linear and angular momentum about the origin (World::BodyMomenta); empty unless
  // World::set_body_momenta(true)
  std::vector<BodyMomentum> bodies;
  std::vector<EnvStepStats> envs;  // per environment
  // the backend traffic of the stages other than the world's own (docs/architecture.md
  // "Device-resident step"): detection and nodalization (detect_counters), the rigid groups and
  // body modes (modes_counters), the global system's new pattern and eq. 15 term lists when the
  // virtual nodes change (pattern_counters), and the COND solver's setup and loop
  // (solver_counters, loop included)
  BackendCounters detect_counters, modes_counters, pattern_counters, solver_counters;
  double detect_seconds = 0;     // detection and nodalization
  double inelastic_seconds = 0;  // the inelastic stage
  double assemble_seconds = 0;   // eq. 9 assembly of A and b (the bodies' dynamics)
  double solve_seconds = 0;      // rigid groups, body modes and the COND solve (setup + iterations)
  double step_seconds = 0;       // the whole step
  // the step's global system matrix A: rows and 3x3 blocks (`condsim bench scale` traffic model)
  Index matrix_rows = 0;
  Index matrix_blocks = 0;
};

// environment env's view of a step's statistics, as a world of that environment alone reports
// them: cond.iterations / residual / momentum_error / converged, contacts, max_penetration and
// health from envs[env]; bodies, timings and virtual_nodes as they are (bodies keep the batched
// world's body ids)
StepStats EnvironmentStats(const StepStats& stats, Index env);

class World {
 public:
  World(Backend* backend, const WorldParams& params);
  ~World();

  // batched worlds: starts a new environment and returns its id (1, 2, ...; the world starts in
  // environment 0). Shapes, meshes, bodies and joints added after it belong to it (ids continue
  // across environments); environments never touch each other, their DOFs share one system (one
  // SpMV per iteration) and each stops its solve on its own. Before the first Step.
  Index AddEnvironment();
  Index num_envs() const { return static_cast<Index>(w_.env_first_body.size()); }
  // the environment of a body id; the first body id of an environment (its bodies are
  // [first_body(e), first_body(e + 1)), the last one ending at num_bodies())
  Index environment(Index body) const;
  Index first_body(Index env) const;
  // fault isolation: off (the default), an environment that diverges is a DivergenceError naming
  // it; on, it is frozen at its state before the failing step (velocities 0, no contacts, left
  // out of the solve), reported once in StepStats::envs[e] (failed, failure) and the others go on
  // exactly as without it
  void set_isolate_failures(bool on) { isolate_failures_ = on; }
  bool env_failed(Index env) const;

  // scene building (before the first Step); returns the shape / body id
  Index AddStatic(const StaticShape& shape);
  // a static triangle mesh (world coordinates, outward counter-clockwise triangles) with friction
  // mu; returns its mesh id. Nodes, cable centres and rigid samples touch its triangles
  // (docs/collision.md, "Detection on the backend"); keep its triangles near the size of the
  // bodies' features (the grid cell follows the largest triangles).
  Index AddStaticMesh(const SurfaceMesh& mesh, Scalar mu = 0.5, const std::string& name = "static mesh");
  Index AddRigid(const RigidBody& body);
  // an FEM body with friction mu against other FEM bodies (and itself when self_contact)
  Index AddFem(const TetMesh& mesh, const FemMaterial& material, const std::string& name = "fem body",
               Scalar mu = 0.5, bool self_contact = true);
  // an FEM body's model: boundary conditions (prescribed nodes, attachments) between steps
  FemModel& fem_model(Index body);
  // a Cosserat-rod cable (models/rod/rod_model.h) with friction mu against other cables (and
  // itself when self_contact); its segment centres touch the static world, its links (centre to
  // centre) touch the links of other cables and its own non-neighbouring links
  Index AddRod(const RodGeometry& geometry, const RodMaterial& material, const RodEnd& start = {}, const RodEnd& finish = {},
               const std::string& name = "rod", Scalar mu = 0.5, bool self_contact = true);
  // a cable's model: end poses between steps
  RodModel& rod_model(Index body);
  // segment centres of a cable (3 per segment) [m] and their velocities (3 per segment) [m/s]
  std::vector<Scalar> RodPositions(Index body) const;
  std::vector<Scalar> RodVelocities(Index body) const;
  // segment angular velocities of a cable (3 per segment, world frame) [rad/s]
  std::vector<Scalar> RodAngularVelocities(Index body) const;
  // a cable's (v, w) per segment (6 per segment, world frame) [m/s], [rad/s]
  void SetRodVelocities(Index body, const std::vector<Scalar>& vw);
  // constant external forces for the coming steps, added to b of eq. 9 (empty: none). FEM body:
  // 3 per node [N]; cable: (force, torque) per segment, 6 each [N], [N m], world frame
  void SetFemForces(Index body, const std::vector<Scalar>& f);
  void SetRodForces(Index body, const std::vector<Scalar>& f);

  // a joint between two rigid bodies, or a rigid body and the world (body_j = -1), given at the
  // bodies' poses when added (models/rigid/joint.h; body ids as returned by AddRigid); contacts
  // between two jointed bodies are not detected. Returns the joint id.
  Index AddJoint(const Joint& joint);
  // a PD drive on a prismatic / revolute joint (set it again whenever the target changes)
  void SetJointDrive(Index joint, const JointDrive& drive);
  // the joint coordinate: slide [m] or unwrapped angle [rad]; its rate; the constraint error
  Scalar JointPosition(Index joint) const;
  Scalar JointRate(Index joint) const;
  JointError JointConstraintError(Index joint) const;
  // external wrench (force, torque: 6 values) on a rigid body for the coming steps
  void SetRigidWrench(Index body, const Vec3& force, const Vec3& torque);
  // a pose drive on a rigid body (models/rigid/rigid_model.h); set its target every step
  void SetPoseDrive(Index body, const PoseDrive& drive);
  StepStats Step();

  Scalar time() const { return time_; }
  // velocity DOFs of the bodies (3 per FEM node, 6 per cable segment and per rigid body)
  Index num_dofs() const;
  Index num_bodies() const { return static_cast<Index>(w_.ids.size()); }
  Index step_count() const { return steps_; }
  const WorldParams& params() const { return w_.params; }
  const RigidModel& rigid() const { return w_.rigid; }
  const RigidBody& rigid_body(Index body) const;
  // FEM node positions / velocities (3 per node) of a body
  std::vector<Scalar> FemPositions(Index body) const;
  // the same on the backend (for its kernels, e.g. FemModel::CarryPrescribed)
  const Array<Scalar>& fem_positions(Index body) const;
  std::vector<Scalar> FemVelocities(Index body) const;
  void SetFemVelocities(Index body, const std::vector<Scalar>& v);
  // the last step's contacts (made on the first call after a step, which reads the impulses back;
  // none after a step that threw; not safe to call from two threads at once)
  const std::vector<ContactRecord>& contacts() const;
  // every body's kinetic energy, linear and angular momentum (about the world origin) at the
  // current state, per body id (FEM bodies and cables: their point sums reduced on the backend,
  // BodyMomentumSums, 7 numbers per body read back; rigid bodies: WorldBodies::RigidMomentum);
  // ends scene building like the first step
  std::vector<BodyMomentum> BodyMomenta();
  // Step fills StepStats::bodies (BodyMomenta after every step)
  void set_body_momenta(bool on) { body_momenta_ = on; }
  // the sum of the contact forces on a body (the static world: body = -1)
  Wrench BodyWrench(Index body) const;
  // tests: rotates every contact's tangent basis about its normal by `angle` [rad]
  void set_tangent_rotation(Scalar angle) { detect_.set_tangent_rotation(angle); }
  // tests: the last step's contact set as the host made it (the fields only the backend made
  // read back first, DetectStage::Complete), and as the solver's backend record holds it (read back)
  const ContactSet& HostContacts() const;
  ContactSet BackendContacts() const { return solve_.BackendContacts(); }
  // tests: the inelastic stage corrects every contact on the host (InelasticStage::set_host_only)
  void set_inelastic_host_only(bool on) { inelastic_.set_host_only(on); }
  // tests: the solver keeps the free-body level when every free body is loaded
  // (CondSolver::set_keep_loaded_free_level; before the first step)
  void set_keep_loaded_free_level(bool on) { solve_.set_keep_loaded_free_level(on); }
  Index inelastic_backend_contacts() const { return inelastic_.backend_contacts(); }
  // how many of them the backend remade (the S-contacts of FEM nodes and cable centres against
  // static shapes, DetectStage::Write)
  Index remade_contacts() const { return detect_.remakes() ? detect_.remade_contacts() : 0; }

 private:
  void Finalize();
  // after the first step: every array the contacts size reserves a bound from the potential
  // contact points (ContactBounds), so that no later step allocates
  void ReserveForContacts();
  // registers the k-th body of a kind under the next body id, in the current environment
  void AddBodyId(BodyKind kind, Index k);
  // a failed environment's bodies at rest (World::set_isolate_failures)
  void FreezeEnvironment(Index env);
  void CheckJoint(Index joint) const;
  // this step's contact records from the contacts, their metadata and impulses
  void Record(const ContactSet& contacts, const std::vector<Scalar>& lambda) const;

  WorldBodies w_;
  Nodalizer nodes_;
  // mutable: the last step's contacts get the fields only the backend made when first asked for
  // (DetectStage::Complete from contacts() and HostContacts())
  mutable DetectStage detect_;
  mutable ContactSet contacts_;  // the last step's contacts (DetectStage::Run)
  AssembleStage assemble_;
  SolveStage solve_;
  InelasticStage inelastic_;
  HealthStage health_;
  mutable std::vector<ContactRecord> records_;
  mutable bool records_stale_ = false;  // a step since records_ were made
  bool finalized_ = false;
  bool body_momenta_ = false;
  BodyMomentumSums momenta_;  // the deformable bodies' momenta, reduced on the backend
  bool isolate_failures_ = false;
  Scalar time_ = 0;
  Index steps_ = 0;
};

}  // namespace condsim
