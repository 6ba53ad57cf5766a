// What every stage of a World's step reads: its parameters, its bodies by kind (rigid bodies in
// one RigidModel, FEM bodies and cables with their backend arrays), static geometry, and the
// layout of the global system (one part per FEM body and cable, then the rigid bodies). SI units.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "condsim/backend.h"
#include "models/collision/static_world.h"
#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/rigid/rigid_model.h"
#include "models/rod/rod_model.h"
#include "models/system/system_matrix.h"

namespace condsim {

// bounds on every body's state per step (models/world/health.h); beyond one the run diverged
struct HealthLimits {
  Scalar max_speed = 1e3;          // mid-step speed of any node, segment or body [m/s]
  Scalar max_distance = 1e4;       // largest coordinate magnitude (the box [-d, d]^3) [m]
  Scalar max_energy_growth = 1e3;  // kinetic energy over the last step's (plus a floor, health.h)
  void Validate() const;
};

struct WorldParams {
  Scalar dt = 0.01;                     // time step t [s]
  Vec3 gravity{0, 0, -9.81};            // [m/s^2]
  Scalar kv = 1e5;                      // virtual-node gain (eq. 14) [N s/m]; Table I uses 1e5
  Scalar contact_margin = 1e-3;         // detection distance beyond |v| t [m]
  bool inelastic = true;                // restitution 0 at pressed contacts
  bool warm_start = true;               // start each solve from the previous step's v-hat (Sec. V-A5)
  // contacts per potential contact point that the contact-sized arrays reserve after the first
  // step (World::ReserveForContacts): 4 = no step allocates on the shipped scenes; 0 = nothing
  // reserved, the arrays grow as contacts come (less memory: batches of many environments)
  int contact_reserve = 4;
  CondParams cond;                      // the solver
  HealthLimits health;                  // divergence bounds
  // throws condsim::Error naming the field
  void Validate() const;
};

// what a body id names; kStatic: static shapes and static triangle meshes (no body id)
enum class BodyKind { kRigid, kFem, kRod, kStatic };

struct FemBody {
  std::string name;
  std::unique_ptr<FemModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> x, v, b, vhat;
  Array<Scalar> predictor;          // the rigid part of the last v-hat: where the step linearizes
  std::vector<Index> surface;       // boundary nodes
  std::vector<Index> tris;          // boundary triangles, outward (3 nodes each)
  std::vector<Index> adj_ptr, adj;  // nodes sharing an element with a node (itself included)
  std::vector<Scalar> mass;         // lumped [kg]
  Scalar depth_limit = 0;           // deepest vertex-triangle penetration still detected [m]
  Scalar mu = 0.5;
  bool self_contact = true;
  Index part = -1;
  std::vector<Index> patch;  // body-mode patch of each node (from the first step's positions)
  Array<Scalar> f_ext;       // constant external nodal forces (3 per node) [N]; empty: none
};

struct RodBody {
  std::string name;
  std::unique_ptr<RodModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> v, b, vhat;  // 6 per segment: (v, w)
  Array<Scalar> f_ext;       // constant external (force, torque) per segment [N], [N m]; empty: none
  Scalar mu = 0.5;
  bool self_contact = true;
  Index part = -1;
};

struct StaticMesh {
  std::string name;
  std::vector<Scalar> x;
  std::vector<Index> tri;
  Scalar mu = 0.5, depth_limit = 0;
};

// a body's kinetic energy [J], linear momentum [kg m/s] and angular momentum about the world
// origin [kg m^2/s]
struct BodyMomentum {
  Scalar kinetic_energy = 0;
  Vec3 linear, angular;
};


// a surface's depth limit: a quarter of its mean triangle edge (x: 3 per vertex; 0 without
// triangles). Deeper vertices are taken to be across a thin wall, not inside
Scalar DepthLimit(const Scalar* x, const std::vector<Index>& tri);

struct WorldBodies {
  Backend* backend = nullptr;
  WorldParams params;
  std::vector<StaticShape> statics;
  std::vector<StaticMesh> meshes;
  std::vector<RigidBody> rigid_init;               // as added (the model is built at the first step)
  std::vector<Joint> joints;                       // rigid-body indices (not body ids)
  std::vector<std::pair<Index, Index>> jointed;    // rigid pairs (i < j) sharing a joint, sorted
  RigidModel rigid;
  std::vector<std::unique_ptr<FemBody>> fem;
  std::vector<std::unique_ptr<RodBody>> rods;
  std::vector<std::pair<BodyKind, Index>> ids;     // per body id: its kind and index in the kind
  std::vector<Index> kind_ids[3];                  // per kind (rigid, FEM, rod): the body id of its k-th body
  // environments: per body id, static shape and static mesh its environment; the first body id of
  // each environment; per environment whether it failed (frozen, World::set_isolate_failures)
  std::vector<Index> body_env, static_env, mesh_env;
  std::vector<Index> env_first_body{0};
  std::vector<unsigned char> env_failed;
  std::vector<Scalar> rigid_wrench;                // 6 per rigid body, or empty
  std::vector<Scalar> rigid_vhat_prev;             // the last step's v-hat of the rigid bodies
  std::unique_ptr<SystemMatrix> system;
  Index rigid_part = -1;
  Array<Scalar> v;                                 // the global velocity (all parts, virtual nodes)

  Index num_envs() const { return static_cast<Index>(env_first_body.size()); }
  bool Failed(Index env) const { return std::size_t(env) < env_failed.size() && env_failed[std::size_t(env)] != 0; }
  Index current_env() const { return num_envs() - 1; }
  // the environment of the k-th body of a kind
  Index Env(BodyKind kind, Index k) const { return body_env[std::size_t(BodyId(kind, k))]; }
  // the body id of the k-th body of a kind, or -1
  Index BodyId(BodyKind kind, Index k) const;
  // throws unless body is a body of this kind
  void CheckBody(Index body, BodyKind kind) const;
  bool Jointed(Index a, Index b) const;
  // deformable part d: FEM bodies first, then cables; its part, node count and the mass of a
  // node that can touch (0 for a cable's rotation nodes)
  std::size_t num_deformable() const { return fem.size() + rods.size(); }
  Index DeformablePart(std::size_t d) const;
  Index DeformableNodes(std::size_t d) const;
  Scalar DeformableMass(std::size_t d, Index local) const;
  Array<Scalar>& DeformableVelocity(std::size_t d);
  // the lumped mass of every base node of the global system [kg]: 0 on rigid-body and cable
  // rotation nodes
  std::vector<Scalar> BaseNodeMasses() const;
  // the momenta of the k-th rigid body (the FEM bodies' and cables': BodyMomentumSums,
  // momenta.h): at its current pose with velocities v, omega: m v^2 / 2 + w^T I_w w / 2, m v,
  // I_w w + x × m v
  BodyMomentum RigidMomentum(Index k, const Vec3& v, const Vec3& omega) const;
  // first global node of rigid body k's (v, omega) pair
  Index RigidNode(Index k) const { return system->part_offset(rigid_part) + 2 * k; }
};

}  // namespace condsim
