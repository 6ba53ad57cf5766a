// Scene files: the top level of the JSON, randomization, and loading (the items: scene_items.cpp).
#include "io/scene.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "condsim/error.h"
#include "io/mesh_io.h"
#include "io/scene_items.h"
#include "io/scene_json.h"

namespace condsim {
using scene_json::Json;
using scene_json::kInf;
using scene_json::Value;
using scene_json::ForEach;
using scene_json::AddName;
using scene_json::Lookup;
using scene_json::Checked;
using scene_json::Join;
using scene_json::ParseWorld;
using scene_json::ParseSolver;
using scene_json::ParseStatic;
using scene_json::ParseRigid;
using scene_json::ParseFem;
using scene_json::ParseJoint;
using scene_json::ParseRod;
using scene_json::ParseTrajectory;
using scene_json::ParsePoseDrive;
using scene_json::ParseGripper;

namespace {

// the "randomization" list: each entry's path must name a number in the scene and its range
// must hold that number; with a seed the numbers are replaced by uniform draws
std::vector<SceneRandom> ParseRandomization(const Value& list, Json* root, const std::uint64_t* seed) {
  std::vector<SceneRandom> out;
  const std::size_t n = list.Array();
  for (std::size_t i = 0; i < n; ++i) {
    const Value e = list.At(i);
    e.Object({"path", "range"});
    SceneRandom r;
    // one pointer, or several sharing the draw (e.g. two fingers of one material)
    const Value path = e.At("path");
    std::vector<Value> items;
    if (path.json().is_array()) {
      if (path.Array() == 0) path.Fail("expected a pointer or a non-empty array of pointers");
      for (std::size_t k = 0; k < path.json().size(); ++k) items.push_back(path.At(k));
    } else {
      items.push_back(path);
    }
    for (const Value& item : items) {
      const std::string p = item.String();
      Json::json_pointer ptr;
      try {
        ptr = Json::json_pointer(p);
      } catch (const Json::exception&) {
        item.Fail("'" + p + "' is not a JSON pointer (e.g. /fem_bodies/0/material/young)");
      }
      bool found = false;
      try {
        found = root->contains(ptr);
      } catch (const Json::exception&) {
      }
      if (p.empty() || p.rfind("/randomization", 0) == 0 || !found) item.Fail("'" + p + "' names no value in the scene");
      const Json& number = root->at(ptr);
      if (!number.is_number()) item.Fail("'" + p + "' is not a number");
      if (r.paths.empty()) r.value = number.get<double>();  // the file's value (the first pointer's)
      r.paths.push_back(p);
    }
    const Value range = e.At("range");
    if (range.Array() != 2) range.Fail("expected [lo, hi]");
    r.lo = range.At(0).Number();
    r.hi = range.At(1).Number(r.lo, kInf);
    out.push_back(r);
  }
  if (seed != nullptr) {
    std::mt19937_64 rng(*seed);
    for (SceneRandom& r : out) {
      // 53 random bits to [0, 1): the same on every platform (std's distributions are not)
      const double u = double(rng() >> 11) * 0x1.0p-53;
      r.value = r.lo + (r.hi - r.lo) * u;
      for (const std::string& p : r.paths) (*root)[Json::json_pointer(p)] = r.value;
    }
  }
  return out;
}

}  // namespace

Scene ParseScene(const std::string& text, const std::string& source, const std::string& dir, const std::uint64_t* seed) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // line and column of the byte nlohmann names
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON (" + e.what() + ")");
  } catch (const Json::exception& e) {
    // e.g. a number out of double range: the library names the token, found here for its line
    std::string what = e.what();
    const std::size_t q0 = what.find('\''), q1 = q0 == std::string::npos ? q0 : what.find('\'', q0 + 1);
    std::string where = source;
    if (q1 != std::string::npos) {
      const std::size_t at = text.find(what.substr(q0 + 1, q1 - q0 - 1));
      if (at != std::string::npos) where += ":" + std::to_string(1 + std::count(text.begin(), text.begin() + at, '\n'));
    }
    const std::size_t tag = what.find("] ");
    throw Error(where + ": invalid JSON (" + (tag == std::string::npos ? what : what.substr(tag + 2)) + ")");
  }
  Scene scene;
  scene.source = source;
  // randomized values are drawn first, so every value is then checked as if written in the file
  if (root.is_object() && root.contains("randomization")) {
    const Json list = root["randomization"];
    scene.randomization = ParseRandomization(Value(list, "/randomization", source), &root, seed);
  }
  scene.randomized = seed != nullptr;
  scene.seed = seed != nullptr ? *seed : 0;
  const Value v(root, "", source);
  v.Object({"name", "description", "duration", "world", "solver", "static", "static_meshes", "rigid_bodies", "fem_bodies",
            "joints", "rods", "rod_end_drives", "pose_drives", "grippers", "output", "randomization"});
  scene.name = v.String("name", source);
  scene.description = v.String("description", "");
  scene.duration = v.Number("duration", 1, 0, kInf, true);
  if (v.Has("world")) ParseWorld(v.At("world"), &scene.world);
  if (v.Has("output")) {
    const Value o = v.At("output");
    o.Object({"frame_rate"});
    scene.frame_rate = o.Number("frame_rate", 0, 0, 1e6);
  }
  if (v.Has("solver")) ParseSolver(v.At("solver"), &scene.world.cond);
  ForEach(v, "static", [&](const Value& item, std::size_t) { scene.statics.push_back(ParseStatic(item)); });
  ForEach(v, "static_meshes", [&](const Value& m, std::size_t i) {
    m.Object({"name", "file", "mu"});
    SceneMesh sm;
    sm.name = m.String("name", "static mesh " + std::to_string(i));
    const Value f = m.At("file");
    sm.mesh = Checked(f, [&] { return ReadSurface(Join(dir, f.String())); });
    sm.mu = m.Number("mu", 0.5, 0, kInf);
    scene.meshes.push_back(std::move(sm));
  });
  std::map<std::string, Index> rigid_names, rod_names;
  ForEach(v, "rigid_bodies", [&](const Value& item, std::size_t i) {
    scene.rigid.push_back(ParseRigid(item, dir, i));
    AddName(item, scene.rigid.back().name, &rigid_names);
  });
  ForEach(v, "fem_bodies", [&](const Value& item, std::size_t i) { scene.fem.push_back(ParseFem(item, dir, i)); });
  ForEach(v, "joints", [&](const Value& item, std::size_t) { scene.joints.push_back(ParseJoint(item, rigid_names)); });
  ForEach(v, "rods", [&](const Value& item, std::size_t i) {
    scene.rods.push_back(ParseRod(item, i));
    AddName(item, scene.rods.back().name, &rod_names);
  });
  ForEach(v, "rod_end_drives", [&](const Value& d, std::size_t) {
    d.Object({"rod", "end", "trajectory"});
    SceneRodEndDrive drive;
    drive.rod = Lookup(d.At("rod"), rod_names, "rod");
    const std::string end = d.String("end", "start");
    if (end != "start" && end != "finish") d.At("end").Fail("'" + end + "' is not an end (valid: start, finish)");
    drive.end = end == "start" ? 0 : 1;
    const SceneRod& rod = scene.rods[drive.rod];
    if (!(drive.end == 0 ? rod.start : rod.finish).attached) d.At("end").Fail("the rod's " + end + " end is not attached");
    drive.trajectory = ParseTrajectory(d.At("trajectory"), dir);
    scene.rod_end_drives.push_back(std::move(drive));
  });
  ForEach(v, "pose_drives", [&](const Value& d, std::size_t) {
    d.Object({"body", "k_lin", "d_lin", "k_ang", "d_ang", "trajectory"});
    ScenePoseDrive drive = ParsePoseDrive(d, dir);
    drive.body = Lookup(d.At("body"), rigid_names, "rigid body");
    scene.pose_drives.push_back(std::move(drive));
  });
  ForEach(v, "grippers", [&](const Value& item, std::size_t i) { scene.grippers.push_back(ParseGripper(item, dir, i)); });
  if (scene.rigid.empty() && scene.fem.empty() && scene.rods.empty() && scene.grippers.empty())
    v.Fail("the scene has no bodies: add rigid_bodies, fem_bodies, rods or grippers");
  // every value checked again by its owner (e.g. the principal inertia of a body)
  Checked(v, [&] {
    scene.world.Validate();
    return 0;
  });
  // FNV-1a 64 of the text: summary.json names the scene's exact contents
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  scene.hash = h;
  return scene;
}

std::string HashHex(std::uint64_t hash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

Scene LoadScene(const std::string& path, const std::uint64_t* seed) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the scene file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::size_t slash = path.find_last_of('/');
  return ParseScene(ss.str(), path, slash == std::string::npos ? "" : path.substr(0, slash), seed);
}

}  // namespace condsim
