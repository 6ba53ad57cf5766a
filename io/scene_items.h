// Parsers of the scene file's items (io/scene_items.cpp), for ParseScene (io/scene.cpp). Each
// reads one JSON value (scene_json.h), checks its keys and ranges, and throws condsim::Error
// naming the file and the value's JSON pointer. Paths in the items are relative to `dir`.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "io/scene_json.h"
#include "models/world/scene.h"

namespace condsim {
namespace scene_json {

void ParseWorld(const Value& v, WorldParams* w);
void ParseSolver(const Value& v, CondParams* c);
StaticShape ParseStatic(const Value& v);
SceneRigid ParseRigid(const Value& v, const std::string& dir, std::size_t index);
SceneFem ParseFem(const Value& v, const std::string& dir, std::size_t index);
// bodies named by index into the scene's rigid bodies (rigid_names: name -> index)
SceneJoint ParseJoint(const Value& v, const std::map<std::string, Index>& rigid_names);
SceneTrajectory ParseTrajectory(const Value& v, const std::string& dir);
SceneRod ParseRod(const Value& v, std::size_t index);
// a pose drive's gains and trajectory (the caller checks the object's keys)
ScenePoseDrive ParsePoseDrive(const Value& d, const std::string& dir);
SceneGripper ParseGripper(const Value& v, const std::string& dir, std::size_t index);

}  // namespace scene_json
}  // namespace condsim
