// Environment groups (apps/batch_groups.h; docs/batch.md, "Groups").
#include "apps/batch_groups.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <string>

#include "condsim/error.h"

namespace condsim::app {

namespace {

// a sysfs cache size ("32768K", "1M", "512"), in bytes; 0 when unreadable
std::size_t ParseCacheSize(const std::string& text) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K') v <<= 10;
  if (unit == 'M') v <<= 20;
  if (unit == 'G') v <<= 30;
  return std::size_t(v);
}

}  // namespace

CacheSizes Caches() {
  // the level-2 and the highest-level data or unified caches of cpu0 (a size is one instance's,
  // not the sum over the machine's that sysconf reports on some virtual machines)
  CacheSizes c;
  int last_level = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
    const std::size_t bytes = ParseCacheSize(size);
    if (type == "Instruction" || bytes == 0) continue;
    if (level == 2) c.l2 = bytes;
    if (level >= last_level) {
      last_level = level;
      c.last = bytes;
    }
  }
  if (c.last > 0 && c.l2 > 0) {
    c.source = "L2 and L" + std::to_string(last_level) + ", /sys/devices/system/cpu/cpu0/cache";
    return c;
  }
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l2 > 0) {
    c.l2 = std::size_t(l2);
    c.last = l3 > 0 ? std::size_t(l3) : std::size_t(l2);
    c.source = "sysconf";
    return c;
  }
  c.l2 = std::size_t(1) << 20;
  c.last = std::size_t(8) << 20;
  c.source = "unknown: 1 MiB and 8 MiB assumed";
  return c;
}

std::size_t EnvironmentBytes(const Scene& scene, Backend* backend) {
  Scene alone = scene;
  alone.world.contact_reserve = 0;
  const std::int64_t before = backend->counters().allocated_bytes;
  std::vector<SceneWorld> sws = BuildBatch({alone}, backend);
  sws[0].world->set_isolate_failures(true);
  ApplyControls(alone, &sws[0]);
  sws[0].world->Step();
  return std::size_t(std::max<std::int64_t>(1, backend->counters().allocated_bytes - before));
}

Index AutoGroupSize(std::size_t env_bytes, const CacheSizes& cache, int threads, Index envs) {
  const std::size_t w = std::max<std::size_t>(1, env_bytes);
  // at most what fits in half the last-level cache (the rest for the code, the stack and the
  // other processes), shared by the threads that step groups at the same time
  const std::size_t fit = cache.last / 2 / std::size_t(std::max(1, threads)) / w;
  // at least enough environments that the group's working set reaches the level-2 cache: below
  // it a World's fixed cost per step (launches, detection set-up) dominates, above it the group
  // only adds iterations (a World iterates until its slowest environment stops)
  const std::size_t enough = (cache.l2 + w - 1) / w;
  return Index(std::clamp<std::size_t>(std::min(fit, enough), 1, std::size_t(std::max<Index>(1, envs))));
}

int EffectiveThreads(int threads) { return threads > 0 ? threads : std::max(1, omp_get_max_threads()); }

std::vector<std::unique_ptr<Backend>> ParallelGroupBackends(const Backend& shared, int threads, std::size_t groups) {
  std::vector<std::unique_ptr<Backend>> out;
  if (shared.kind() != BackendKind::kCpu || threads <= 1 || groups < std::size_t(threads)) return out;
  BackendOptions one;
  one.cpu_threads = 1;
  for (int t = 0; t < threads; ++t) out.push_back(MakeBackend(BackendChoice::kCpu, one).backend);
  return out;
}

EnvGroups::EnvGroups(const std::vector<Scene>& scenes, Index group, const std::vector<Backend*>& backends)
    : env_group_(scenes.size()), env_local_(scenes.size()), parallel_(backends.size() > 1) {
  CONDSIM_CHECK(!backends.empty(), "EnvGroups: no backend");
  const std::size_t n = scenes.size(), g = std::size_t(std::max<Index>(1, group));
  const std::size_t count = (n + g - 1) / g;
  groups_.resize(count);
  // sizes as equal as possible: the first n % count groups one environment more
  std::size_t first = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t size = n / count + (k < n % count ? 1 : 0);
    Group& gr = groups_[k];
    gr.backend = backends[k % backends.size()];
    std::vector<Scene> members(scenes.begin() + long(first), scenes.begin() + long(first + size));
    for (std::size_t e = first; e < first + size; ++e) {
      gr.envs.push_back(e);
      env_group_[e] = k;
      env_local_[e] = e - first;
    }
    gr.worlds = BuildBatch(members, gr.backend);
    gr.worlds[0].world->set_isolate_failures(true);
    first += size;
  }
  lanes_ = std::min(backends.size(), groups_.size());
}

void EnvGroups::Step(const std::vector<Scene>& scenes, const std::vector<char>& active) {
  std::vector<std::exception_ptr> errors(groups_.size());
  // no exception leaves an OpenMP region: each group's is kept and rethrown after the region
  const auto step = [&](std::size_t k) {
    Group& gr = groups_[k];
    try {
      bool any = false;
      for (std::size_t j = 0; j < gr.envs.size(); ++j) {
        if (!active[gr.envs[j]]) continue;
        ApplyControls(scenes[gr.envs[j]], &gr.worlds[j]);
        any = true;
      }
      // a group whose environments all ended is not stepped again (its stats stay the last ones)
      if (any) gr.stats = gr.worlds[0].world->Step();
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  if (parallel_) {
    // thread t steps the groups on its backend, t, t + T, t + 2T, ... in turn
    const long lanes = long(lanes_);
#pragma omp parallel for schedule(static, 1) num_threads(int(lanes))
    for (long t = 0; t < lanes; ++t)
      for (std::size_t k = std::size_t(t); k < groups_.size(); k += std::size_t(lanes)) step(k);
  } else {
    for (std::size_t k = 0; k < groups_.size(); ++k) step(k);
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

double EnvGroups::iterations() const {
  double sum = 0;
  for (const Group& gr : groups_) sum += gr.stats.cond.iterations;
  return sum;
}

}  // namespace condsim::app
