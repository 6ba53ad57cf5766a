// Scene files (docs/scene-format.md): JSON describing the world, the solver, static geometry,
// rigid bodies, FEM bodies and joints, loaded into a World. Every bad value is an error naming
// the file and the JSON pointer of the value (e.g. `box.json: /rigid_bodies/0/mass: -1 is
// outside (0, inf)`); unknown keys are errors. SI units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/world/scene.h"

namespace condsim {

// reads and validates a scene file; mesh files are relative to the scene's directory. With a
// seed, every value named in the scene's "randomization" list is first replaced by a uniform
// draw from its range (std::mt19937_64 seeded with `seed`, one draw per entry in file order, so
// the same seed gives the same scene on every platform)
Scene LoadScene(const std::string& path, const std::uint64_t* seed = nullptr);
// a scene hash as 16 lowercase hex digits (summary.json, output.h5)
std::string HashHex(std::uint64_t hash);
// the same from text (`source` names it in messages, `dir` resolves relative mesh paths)
Scene ParseScene(const std::string& text, const std::string& source, const std::string& dir,
                 const std::uint64_t* seed = nullptr);

}  // namespace condsim
