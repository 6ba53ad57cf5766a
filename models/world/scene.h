// A scene: the description of a world (static geometry, rigid bodies, FEM bodies, cables,
// joints, drives along trajectories, grippers), the world built from it, and the run-time
// controls that move its drives each step. Scene files are read by io/scene.h
// (docs/scene-format.md). SI units.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/fem/tet_mesh.h"
#include "models/world/gripper.h"
#include "models/world/world.h"

namespace condsim {

struct SceneRigid {
  std::string name;
  RigidBody body;
  Vec3 force, torque;  // constant external wrench [N], [N m]
};

// a pose over time: samples every `dt` from t = 0 (held after the last), or waypoints
// interpolated linearly in position and along the geodesic in orientation
struct SceneTrajectory {
  std::vector<Scalar> t;     // sample times [s], increasing
  std::vector<Vec3> p;       // [m]
  std::vector<Quat> q;
  // pose and velocities at time `time` (finite differences over the sample interval)
  void Sample(Scalar time, Vec3* position, Quat* orientation, Vec3* v, Vec3* w) const;
};

// a constant external load on a set of FEM nodes or cable segments: `force` on each of them [N]
// (cables: and `torque` [N m]), world frame
struct SceneNodeForce {
  std::vector<Index> nodes;  // node or segment indices
  Vec3 force, torque;
};

struct SceneFem {
  std::string name;
  TetMesh mesh;
  FemMaterial material;
  Scalar mu = 0.5;
  bool self_contact = true;
  // initial velocity: v + omega x (x - c), c the mesh's centre of volume (its centre of mass)
  Vec3 velocity, angular_velocity;  // [m/s], [rad/s]
  // constant external loads: `force` [N] in total, spread over the nodes in proportion to their
  // lumped masses (a uniform acceleration force / m), and forces on node sets
  Vec3 force;
  std::vector<SceneNodeForce> node_forces;
  // a handle (optional): the nodes inside a box, carried rigidly along a trajectory (each keeps
  // its position in the frame of the trajectory's first pose)
  std::vector<Index> handle_nodes;
  SceneTrajectory handle_trajectory;
};

struct SceneMesh {
  std::string name;
  SurfaceMesh mesh;
  Scalar mu = 0.5;
};

struct SceneRod {
  std::string name;
  RodGeometry geometry;
  RodMaterial material;
  RodEnd start, finish;
  Scalar mu = 0.5;
  bool self_contact = true;
  // initial velocity: every segment centre v + omega x (x_s - c), every segment spinning at
  // omega; c the cable's centre of mass (the mean of its equal-mass segment centres)
  Vec3 velocity, angular_velocity;  // [m/s], [rad/s]
  // constant external loads: `force` [N] in total, spread equally over the (equal-mass) segments,
  // and forces / torques on segment sets
  Vec3 force;
  std::vector<SceneNodeForce> segment_forces;
};


// a cable end carried by a trajectory: the end keeps the pose it has relative to the
// trajectory's first pose (a gripper holding it)
struct SceneRodEndDrive {
  Index rod = -1;   // index into Scene::rods
  int end = 0;      // 0 start, 1 finish
  SceneTrajectory trajectory;
};

// a rigid body pulled along a trajectory by a pose drive (models/rigid/rigid_model.h)
struct ScenePoseDrive {
  Index body = -1;  // index into Scene::rigid
  PoseDrive gains;  // k_lin, d_lin, k_ang, d_ang
  SceneTrajectory trajectory;
  // the drive with its target at `time`
  PoseDrive At(Scalar time) const;
};

// a parallel two-finger gripper (models/world/gripper.h): its palm follows a trajectory by a
// pose drive, its pad gap follows width waypoints (linear in time, held after the last)
struct SceneGripper {
  std::string name;
  GripperParams params;
  SceneTrajectory width;               // the pad gap over time: its positions' x [m] (unused when empty)
  ScenePoseDrive palm;                 // body unused (the gripper's palm)
  bool palm_driven = false;
};

struct SceneJoint {
  Joint joint;            // bodies resolved to indices into Scene::rigid (-1: world)
  bool driven = false;
  JointDrive drive;
};

// a randomized scene value: the numbers at `paths` (JSON pointers into the scene) take one
// draw, uniform in [lo, hi], when the scene is loaded with a seed (batch runs)
struct SceneRandom {
  std::vector<std::string> paths;
  double lo = 0, hi = 0;
  double value = 0;       // the value used (drawn, or the file's when not randomized)
};

struct Scene {
  std::string source;     // the file (for messages)
  std::string name, description;
  WorldParams world;
  Scalar duration = 1;    // [s]
  std::vector<StaticShape> statics;
  std::vector<SceneMesh> meshes;
  std::vector<SceneRigid> rigid;
  std::vector<SceneFem> fem;
  std::vector<SceneJoint> joints;
  std::vector<SceneRod> rods;
  std::vector<SceneRodEndDrive> rod_end_drives;
  std::vector<ScenePoseDrive> pose_drives;
  std::vector<SceneGripper> grippers;
  Scalar frame_rate = 0;   // output frames per second (0: no trajectory file)
  std::uint64_t hash = 0;  // FNV-1a of the file's bytes
  std::vector<SceneRandom> randomization;  // the scene's ranges, with the values used
  bool randomized = false;                 // loaded with a seed: values drawn from the ranges
  std::uint64_t seed = 0;
};

// a world built from a scene, with the ids of its bodies in scene order; in a batch
// (BuildBatch), environment `env` of a world the environments share
struct SceneWorld {
  std::shared_ptr<World> world;
  Index env = 0;         // its environment in the world
  Index first_body = 0;  // its first body id (a body's id within the scene: id - first_body)
  std::vector<Index> rigid_ids, fem_ids, rod_ids;
  std::vector<Gripper> grippers;
  std::vector<Vec3> end_offset;  // per rod end drive: the end's position in the first pose's frame
  std::vector<Quat> end_rotation;  // and its orientation there
};
SceneWorld BuildWorld(const Scene& scene, Backend* backend);
// one world with environment e built from scenes[e] (a batch: the same scene file with different
// seeds); every scene must have the same /world parameters (an error names the first that
// differs). Environment e alone (BuildWorld(scenes[e])) steps bitwise identically.
std::vector<SceneWorld> BuildBatch(const std::vector<Scene>& scenes, Backend* backend);
// an FEM body's initial nodal velocities (3 per node): f.velocity + f.angular_velocity x (x_i - c),
// c the mesh's centre of volume
std::vector<Scalar> RigidVelocityField(const SceneFem& f);
// a cable's initial (v, w) per segment (6 per segment)
std::vector<Scalar> RodVelocityField(const SceneRod& r);
// an FEM body's external nodal forces (3 per node) [N] from its lumped node masses; empty when
// it has none
std::vector<Scalar> FemForces(const SceneFem& f, const std::vector<Scalar>& mass);
// a cable's external (force, torque) per segment (6 per segment); empty when it has none
std::vector<Scalar> RodForces(const SceneRod& r);
// sets the scene's drives for the coming step (targets at its mid-step time); call before Step
void ApplyControls(const Scene& scene, SceneWorld* world);

}  // namespace condsim
