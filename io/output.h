// Run output (docs/scene-format.md, "Output"): frames of every body's state, the contacts and
// per-step statistics, streamed into HDF5 as they are produced (chunked datasets extended and
// flushed frame by frame, so memory does not grow with the run) with an XDMF
// sidecar that ParaView opens directly. The file is written as `path`.part with the attribute
// status = "running"; Finish sets the final status (complete, interrupted, failed), writes the
// sidecar and renames it to `path`, replacing an older run's file only then. A recorder destroyed
// unfinished (an error while writing) removes its .part file. Files are bitwise reproducible: no
// timestamps are stored. Needs HDF5 at build time (`condsim info`).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/world/scene.h"

namespace condsim {

// true when condsim was built with HDF5
bool HaveHdf5();
// writes text to path through path + ".part", renamed when complete (an interrupted write
// never leaves a file that looks finished); throws condsim::Error naming the file
void WriteTextAtomically(const std::string& path, const std::string& text);
// text with the five XML special characters escaped (&amp; &lt; &gt; &quot; &apos;)
std::string EscapeXml(const std::string& text);
// HDF5 group names for the given body names, unique and in order: '/', '.', '|' and ':' become
// '_' (HDF5 paths; the XDMF selection syntax), an empty name "_", and a repeated result gets
// "_2", "_3", ...
std::vector<std::string> UniqueGroupNames(const std::vector<std::string>& names);

// what a batch episode adds to its file's root attributes (condsim batch, docs/batch.md)
struct RecordEpisode {
  long long index = -1;  // episode index (attribute `episode`; -1: none)
  long long steps = -1;  // steps asked for (attribute `steps`; -1: none)
  // per frame: each body's contact wrench (/bodies/<name>/contact_force, contact_torque) and the
  // drives' targets (/drives/...) (docs/batch.md)
  bool extras = false;
};

class Recorder {
 public:
  // creates path.part with every dataset empty; throws condsim::Error naming the file when it
  // cannot (or when condsim was built without HDF5). The world may be one environment of a batch
  // (BuildBatch): only its bodies and contacts are recorded, with body ids local to its scene
  // (id - world.first_body). A scene loaded with a seed adds the attributes `seed` and
  // `randomization` (JSON: pointer -> value used).
  Recorder(const std::string& path, const Scene& scene, const SceneWorld& world, const RecordEpisode& episode = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // one step's statistics (kept until the next frame); in a batch, EnvironmentStats(stats, env)
  void AddStats(const StepStats& stats);
  // the same as AddStats(EnvironmentStats(stats, env)) without copying the batch's statistics
  // (a batch of N environments records N of them per step)
  void AddStats(const StepStats& stats, Index env);
  // the state after a step (with the statistics since the last frame), appended to the file.
  // contact_ids: the indices into World::contacts() of this environment's contacts, in order
  // (a batch sorts them once per frame); null: every contact whose env is the world's
  void AddFrame(const SceneWorld& world, const std::vector<Index>* contact_ids = nullptr);
  // the remaining statistics, status ("complete", "interrupted", "failed") and failure text,
  // the .xmf sidecar, then the rename of path.part to path
  void Finish(const std::string& status, const std::string& failure);
  Index num_frames() const { return static_cast<Index>(time_.size()); }
  const std::string& path() const { return path_; }

 private:
  struct Track {
    std::string name, group, kind;  // kind: "fem", "rod", "rigid"
    Index count = 0;                // nodes / segments / 1
    Index cells = 0;                // FEM: tetrahedra
    Index body = -1;                // its World body id
  };
  // a drive whose target is recorded per frame (RecordEpisode::extras)
  struct DriveTrack {
    std::string group;              // under /drives/<kind>/
    std::string kind;               // "pose", "rod_end", "gripper"
    SceneTrajectory trajectory;     // pose / rod end / gripper palm (empty: none)
    SceneTrajectory width;          // gripper: its pad gap (empty: none)
    Vec3 offset;                    // rod end: its position and orientation in the first pose's frame
    Quat rotation;
  };
  struct File;                      // the open HDF5 file and its datasets
  // keeps one step's statistics (per-body rows from the batch's body ids)
  void KeepStats(int iterations, Index contacts, double residual, Scalar penetration, bool converged, Scalar max_speed,
                 Scalar kinetic_energy, const std::vector<BodyMomentum>& bodies);
  // appends the statistics kept since the last frame
  void WriteStats();
  void WriteSidecar() const;
  // the frame's contact wrenches and drive targets (RecordEpisode::extras)
  void WriteExtras(const SceneWorld& world, const std::vector<Index>* contact_ids);

  std::string path_;
  std::string scene_name_;
  Index env_ = 0, first_body_ = 0;  // the recorded environment and its first body id
  std::vector<Track> tracks_;
  std::vector<DriveTrack> drives_;
  bool extras_ = false;
  std::vector<Scalar> time_;       // per frame (also in the file; the sidecar needs them)
  std::unique_ptr<File> file_;
  // statistics since the last frame
  std::vector<Index> iterations_, contacts_, converged_;
  std::vector<Scalar> residual_, penetration_, max_speed_, kinetic_energy_;
  std::vector<std::vector<Scalar>> body_rows_;  // per track: (energy, momentum, angular momentum) per step
  bool finished_ = false;
};

}  // namespace condsim
