// Scene files (docs/scene-format.md): JSON describing the world, the solver, static geometry,
// rigid bodies, FEM bodies and joints, loaded into a World. Every bad value is an error naming
// the file and the JSON pointer of the value (e.g. `box.json: /rigid_bodies/0/mass: -1 is
// outside (0, inf)`); unknown keys are errors. SI units.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/fem/mesh_io.h"
#include "models/world/world.h"

namespace condsim {

struct SceneRigid {
  std::string name;
  RigidBody body;
  Vec3 force, torque;  // constant external wrench [N], [N m]
};

struct SceneFem {
  std::string name;
  TetMesh mesh;
  FemMaterial material;
  Scalar mu = 0.5;
  bool self_contact = true;
};

struct SceneMesh {
  std::string name;
  SurfaceMesh mesh;
  Scalar mu = 0.5;
};

struct SceneJoint {
  Joint joint;            // bodies resolved to indices into Scene::rigid (-1: world)
  bool driven = false;
  JointDrive drive;
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
  std::uint64_t hash = 0;  // FNV-1a of the file's bytes
};

// reads and validates a scene file; mesh files are relative to the scene's directory
Scene LoadScene(const std::string& path);
// the same from text (`source` names it in messages, `dir` resolves relative mesh paths)
Scene ParseScene(const std::string& text, const std::string& source, const std::string& dir);

// a world built from a scene, with the ids of its bodies in scene order
struct SceneWorld {
  std::unique_ptr<World> world;
  std::vector<Index> rigid_ids, fem_ids;
};
SceneWorld BuildWorld(const Scene& scene, Backend* backend);

}  // namespace condsim
