// Files of `condsim batch` (docs/batch.md): the attributes of an episode file (written by
// io/output.h's Recorder), and the manifest: the batch's attributes, a table of its episodes
// (index, seed, status, failure, steps done) and a group /episodes with one HDF5 external link
// per episode file. Needs HDF5 at build time (HaveHdf5(); without it these throw).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace condsim {

// an episode file's root attributes and its step count
struct EpisodeFileInfo {
  std::string scene_hash, status, failure;
  bool has_seed = false;
  std::uint64_t seed = 0;
  long long episode = -1, steps = -1;  // -1: no such attribute
  long long steps_done = 0;            // rows of /stats/iterations
};
// throws condsim::Error naming the file when it cannot be read
EpisodeFileInfo ReadEpisodeFile(const std::string& path);

struct ManifestEntry {
  long long index = 0;
  std::uint64_t seed = 0;
  std::string status;   // complete, failed, missing
  std::string failure;  // the failure text (failed)
  long long steps_done = 0;
  std::string file;     // the episode file relative to the manifest's folder (empty: none)
};

struct Manifest {
  std::string scene, scene_path, scene_hash, commit;
  std::uint64_t batch_seed = 0;
  long long envs = 0, steps = 0, episodes = 0;  // episodes: M of the whole batch
  long long shard = 0, shards = 1;              // this manifest's shard k of K (merged: 0 of 1)
  std::vector<ManifestEntry> entries;            // by index
};

// writes path through path.part (renamed when complete); throws condsim::Error naming the file
void WriteManifest(const std::string& path, const Manifest& manifest);
// throws condsim::Error naming the file
Manifest ReadManifest(const std::string& path);

}  // namespace condsim
