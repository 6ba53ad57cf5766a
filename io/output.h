// Run output (docs/scene-format.md, "Output"): frames of every body's state, the contacts and
// per-step statistics, written as HDF5 with an XDMF sidecar that ParaView opens directly. The
// recorder keeps the frames in memory and writes `path` under a temporary name, renamed when
// complete (an interrupted run leaves no file that looks finished). Files are bitwise
// reproducible: no timestamps are stored. Needs HDF5 at build time (`condsim info`).
#pragma once

#include <string>
#include <vector>

#include "io/scene.h"

namespace condsim {

// true when condsim was built with HDF5
bool HaveHdf5();
// writes text to path through path + ".part", renamed when complete (an interrupted write
// never leaves a file that looks finished); throws condsim::Error naming the file
void WriteTextAtomically(const std::string& path, const std::string& text);

class Recorder {
 public:
  Recorder(const Scene& scene, const SceneWorld& world);
  // the state after a step, and that step's statistics
  void AddStats(const StepStats& stats);
  void AddFrame(const SceneWorld& world);
  Index num_frames() const { return static_cast<Index>(time_.size()); }
  // writes `path` (.h5) and its sidecar (path with .xmf); throws condsim::Error without HDF5
  void Write(const std::string& path) const;

 private:
  struct Track {
    std::string name, kind;        // "fem", "rod", "rigid"
    Index count = 0;               // nodes / segments / 1
    std::vector<Scalar> x, q;      // per frame: 3 per item, 4 per item (rods, rigid)
    std::vector<Index> cells;      // FEM: tetrahedra (4 each)
    Index body = -1;               // rigid: its World body id
    Index shape = -1;              // rigid: ShapeType (1 sphere, 2 box, 3 capsule, 4 mesh)
    Vec3 size;                     // rigid: StaticShape::size of its shape [m]
  };
  std::string scene_name_;
  std::uint64_t scene_hash_ = 0;
  std::vector<Track> tracks_;
  std::vector<StaticShape> statics_;
  std::vector<Scalar> time_;
  // contacts of every frame, concatenated; frame f has entries offset[f] .. offset[f+1)
  std::vector<Index> contact_offset_{0}, contact_bodies_;
  std::vector<Scalar> contact_position_, contact_normal_, contact_lambda_;
  // per step
  std::vector<Index> iterations_, contacts_;
  std::vector<Scalar> residual_, penetration_;
};

}  // namespace condsim
