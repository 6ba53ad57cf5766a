// Environment groups: the CPU schedule of `condsim batch` and `condsim bench batch` (docs/batch.md,
// "Groups"). N environments run as groups of at most G, each group its own batched World
// (BuildBatch), the groups stepped one after another, or in parallel (one OpenMP thread and one
// single-threaded backend each) when there are threads for them. On the CPU an environment's
// data do not depend on its group (the solver's reductions are per environment and in a fixed
// order), so the grouping changes the cost, never the results.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "models/world/scene.h"

namespace condsim::app {

// the level-2 and the last-level data caches [bytes]: from /sys/devices/system/cpu/cpu0/cache
// (each level's data or unified cache, its `size`), else sysconf(_SC_LEVEL2_CACHE_SIZE) and
// _SC_LEVEL3_CACHE_SIZE, else 1 MiB and 8 MiB; `source` says which
struct CacheSizes {
  std::size_t l2 = 0, last = 0;
  std::string source;
};
CacheSizes Caches();

// one environment's working set [bytes]: what the backend allocates to build `scene` alone and
// run its first step, with the contact reservation off (world.contact_reserve = 0: room for
// contacts that never come is never touched) -- the system matrix, the solver's vectors, the
// bodies' arrays and the contacts of that step
std::size_t EnvironmentBytes(const Scene& scene, Backend* backend);

// the automatic group size: the fewest environments whose working sets together reach the
// level-2 cache, but no more than fit in half the last-level cache's share of each thread that
// steps a group (threads groups at a time when threads > 1); at least 1, at most envs
Index AutoGroupSize(std::size_t env_bytes, const CacheSizes& cache, int threads, Index envs);

// the environments of scenes as groups of at most `group` (sizes as equal as possible), each a
// batched World with failures isolated (World::set_isolate_failures)
class EnvGroups {
 public:
  // backends: one (every group on it, stepped in turn) or one per parallel thread (group k on
  // backends[k % size], the groups stepped in parallel, at most backends.size() at a time)
  EnvGroups(const std::vector<Scene>& scenes, Index group, const std::vector<Backend*>& backends);

  std::size_t num_envs() const { return env_group_.size(); }
  std::size_t num_groups() const { return groups_.size(); }
  // environment e's world, its environment in that world and its group
  SceneWorld& scene_world(std::size_t e) { return groups_[env_group_[e]].worlds[env_local_[e]]; }
  Index local(std::size_t e) const { return Index(env_local_[e]); }
  std::size_t group(std::size_t e) const { return env_group_[e]; }
  // group g's environment count, and the index in scenes of its environment `local`
  std::size_t group_size(std::size_t g) const { return groups_[g].envs.size(); }
  std::size_t env(std::size_t g, Index local) const { return groups_[g].envs[std::size_t(local)]; }
  World& world(std::size_t g) { return *groups_[g].worlds[0].world; }
  // this step's statistics of group g (after Step)
  const StepStats& stats(std::size_t g) const { return groups_[g].stats; }
  // environment e's step statistics from its group's
  const EnvStepStats& env_stats(std::size_t e) const { return groups_[env_group_[e]].stats.envs.at(env_local_[e]); }
  // one step of every group that still has an active environment (ApplyControls on those);
  // a group's exception is rethrown after all groups stepped
  void Step(const std::vector<Scene>& scenes, const std::vector<char>& active);
  // the sum over groups of the solver's iterations (the slowest environment's per group)
  double iterations() const;

 private:
  struct Group {
    std::vector<SceneWorld> worlds;
    std::vector<std::size_t> envs;  // their indices in scenes
    Backend* backend = nullptr;
    StepStats stats;
  };
  std::vector<Group> groups_;
  std::vector<std::size_t> env_group_, env_local_;
  bool parallel_ = false;
  std::size_t lanes_ = 1;  // backends in use (groups stepped at the same time)
};

// the backends a grouped run needs: `threads` single-threaded CPU backends when the groups are
// stepped in parallel (threads > 1, at least `threads` groups, CPU), else none (use the shared one)
std::vector<std::unique_ptr<Backend>> ParallelGroupBackends(const Backend& shared, int threads, std::size_t groups);

// the effective thread count of --threads T (0: OpenMP's default)
int EffectiveThreads(int threads);

}  // namespace condsim::app
