// `condsim bench batch`: env-steps/s of scenes with N = 1, 2, 4, ... environments, packed in one
// World (BuildBatch) and as `condsim batch` schedules them (groups of the automatic size,
// apps/batch_groups.h), against each environment alone (docs/batch.md, "Performance").
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/batch_groups.h"
#include "condsim/backend.h"
#include "io/output.h"
#include "io/scene.h"

namespace condsim::app {
namespace {

// seconds on a clock: the thread's CPU time with one thread (a shared machine's descheduled
// intervals not counted), else wall time
double Now(bool cpu_time) {
  if (!cpu_time) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Run {
  double per_step = 0, it_mean = 0, it_max = 0;  // median seconds per step; iterations
  Index dofs = 0, groups = 0;
  std::string name;
};

// seeds [first, first + n) of a scene as groups of at most `group` (group = n: one World, the
// packed layout): a warm-up step, then reps runs of `steps` steps (ApplyControls per environment,
// one Step per group), the median run. it_mean: the environments' mean iterations per step;
// it_max: the groups' mean iterations per step (a group iterates until its slowest environment
// stops; one group: the packed World's iterations)
Run Measure(const std::string& path, Index first, Index n, Index group, Backend* shared, int threads, int steps, int reps,
            bool cpu_time) {
  std::vector<Scene> scenes;
  for (Index e = 0; e < n; ++e) {
    const std::uint64_t seed = std::uint64_t(first + e);
    scenes.push_back(LoadScene(path, &seed));
  }
  const std::size_t count = std::size_t((n + group - 1) / group);
  const std::vector<std::unique_ptr<Backend>> lanes = ParallelGroupBackends(*shared, threads, count);
  std::vector<Backend*> backends;
  for (const auto& b : lanes) backends.push_back(b.get());
  if (backends.empty()) backends.push_back(shared);
  EnvGroups groups(scenes, group, backends);
  const std::vector<char> active(std::size_t(n), 1);
  double it_sum = 0, it_max = 0;
  const auto step = [&] {
    groups.Step(scenes, active);
    for (std::size_t e = 0; e < groups.num_envs(); ++e) it_sum += groups.env_stats(e).iterations;
    it_max += groups.iterations() / double(groups.num_groups());
  };
  step();
  it_sum = it_max = 0;
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double start = Now(cpu_time);
    for (int k = 0; k < steps; ++k) step();
    for (Backend* b : backends) b->Synchronize();
    t.push_back((Now(cpu_time) - start) / steps);
  }
  std::sort(t.begin(), t.end());
  Run out;
  out.per_step = t[t.size() / 2];
  out.it_mean = it_sum / (double(n) * reps * steps);
  out.it_max = it_max / (double(reps) * steps);
  for (std::size_t g = 0; g < groups.num_groups(); ++g) out.dofs += groups.world(g).num_dofs();
  out.groups = Index(groups.num_groups());
  out.name = scenes[0].name;
  return out;
}

// the host memory available now [bytes]: /proc/meminfo's MemAvailable (free and reclaimable),
// else sysconf's free pages; 0 when unknown
double AvailableHostBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0;
}

}  // namespace

// per scene and backend: the reference "alone" (the mean cost per step of seeds 0 ... 7 each in a
// World of its own, the same steps, so the ratios compare the same mix of episodes), then per N
// the packed World and the runner's grouped schedule (auto G: EnvironmentBytes of seed 0 against
// Caches, AutoGroupSize; CUDA: G = N; group_size > 0: that), each against the alone cost. The grouped iterations:
// the groups' mean, weighted by their environments
int BenchBatch(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, const std::vector<std::string>& scenes,
               const std::vector<Index>& envs, Index group_size, int steps, int reps, int threads, const std::string& json_file) {
  nlohmann::json rows = nlohmann::json::array();
  const int lanes = EffectiveThreads(threads);
  // one CPU thread: thread CPU time; CUDA and more threads: wall time
  const bool one_thread = lanes == 1;
  const CacheSizes cache = Caches();
  std::printf("# %s; caches: L2 %.1f MB, last-level %.1f MB (%s)\n", one_thread ? "cpu: thread CPU time, cuda: wall time" : "wall time",
              double(cache.l2) / 1e6, double(cache.last) / 1e6, cache.source.c_str());
  std::printf("%-26s %-18s %5s %8s %5s %11s %9s %11s %9s %9s %7s %7s %7s\n", "backend", "scene", "envs", "dofs", "group", "packed_ms",
              "packed_vs", "grouped_ms", "env-st/s", "group_vs", "it_mean", "it_pack", "it_grp");
  for (const std::string& path : scenes) {
    for (const auto& [choice, format] : configs) {
      BackendOptions opt;
      opt.cpu_threads = threads;
      opt.spmv_format = format;
      std::unique_ptr<Backend> backend = MakeBackend(choice, opt).backend;
      const bool cpu = backend->kind() == BackendKind::kCpu;
      const bool cpu_time = cpu && one_thread;
      const std::string name = cpu ? backend->Describe() : std::string("cuda/") + ToString(format);
      const std::uint64_t seed0 = 0;
      const std::size_t env_bytes = cpu ? EnvironmentBytes(LoadScene(path, &seed0), backend.get()) : 0;
      if (cpu)
        std::printf("# %s: %.2f MB per environment (EnvironmentBytes), auto group %d\n", path.c_str(), double(env_bytes) / 1e6,
                    AutoGroupSize(env_bytes, cache, lanes, 1 << 20));
      const Index alone_seeds = std::min<Index>(8, *std::max_element(envs.begin(), envs.end()));
      double alone = 0, alone_bytes = 0;
      for (Index s = 0; s < alone_seeds; ++s) {
        const std::int64_t before = backend->counters().allocated_bytes;
        alone += Measure(path, s, 1, 1, backend.get(), lanes, steps, reps, cpu_time).per_step / double(alone_seeds);
        // what one environment's World allocates, its contact reservation included (an upper bound
        // of its peak: freed buffers count too)
        alone_bytes = std::max(alone_bytes, double(backend->counters().allocated_bytes - before));
      }
      for (Index n : envs) {
        const Index group = group_size > 0 ? std::min(group_size, n) : cpu ? AutoGroupSize(env_bytes, cache, lanes, n) : n;
        // the runner's schedule: waves of one group per thread that steps groups
        const Index parallel = ParallelGroupBackends(*backend, lanes, std::size_t((n + group - 1) / group)).empty() ? 1 : lanes;
        const Index wave = std::min(n, group * parallel);
        // k environments at once on the CPU need about k times one's memory: a World (or wave)
        // that would take over 60 % of the host memory available now is left out
        const double available = AvailableHostBytes();
        const auto fits = [&](Index k) { return !cpu || available == 0 || double(k) * alone_bytes <= 0.6 * available; };
        if (!fits(wave)) {
          std::printf("# %s, %d environments: left out: a wave of %d needs about %.1f GB (%.1f MB per environment), %.1f GB available\n",
                      path.c_str(), n, wave, double(wave) * alone_bytes / 1e9, alone_bytes / 1e6, available / 1e9);
          continue;
        }
        const bool packed_fits = fits(n);
        if (!packed_fits)
          std::printf("# %s, %d environments: packed World left out: it needs about %.1f GB (%.1f MB per environment), %.1f GB available\n",
                      path.c_str(), n, double(n) * alone_bytes / 1e9, alone_bytes / 1e6, available / 1e9);
        Run packed;
        if (packed_fits) packed = Measure(path, 0, n, n, backend.get(), lanes, steps, reps, cpu_time);
        // each wave run to its end before the next (apps/batch.cpp): the sum of the waves' costs per
        // step; it also holds the environments' scene, DOFs and mean iterations (an environment
        // iterates alike in any World, so they do not depend on the schedule)
        Run grouped = packed;
        if (group < n || !packed_fits) {
          grouped = Run{};
          for (Index first = 0; first < n; first += wave) {
            const Index m = std::min(wave, n - first);
            const Run w = Measure(path, first, m, group, backend.get(), lanes, steps, reps, cpu_time);
            grouped.dofs += w.dofs;
            grouped.name = w.name;
            grouped.per_step += w.per_step;
            grouped.it_mean += w.it_mean * double(m) / double(n);
            grouped.it_max += w.it_max * double(m) / double(n);
            grouped.groups += w.groups;
          }
        }
        const double packed_env = packed.per_step / double(n), grouped_env = grouped.per_step / double(n);
        const auto packed_value = [&](double v) { return packed_fits ? nlohmann::json(v) : nlohmann::json(nullptr); };
        // the packed columns, "-" when the packed World was left out
        char packed_cols[32] = "          -         -", it_pack[16] = "      -";
        if (packed_fits) {
          std::snprintf(packed_cols, sizeof(packed_cols), "%11.3f %9.3f", packed.per_step * 1e3, packed_env / alone);
          std::snprintf(it_pack, sizeof(it_pack), "%7.1f", packed.it_max);
        }
        std::printf("%-26s %-18s %5d %8d %5d %s %11.3f %9.1f %9.3f %7.1f %s %7.1f\n", name.c_str(), grouped.name.c_str(), n,
                    grouped.dofs, group, packed_cols, grouped.per_step * 1e3, 1 / grouped_env, grouped_env / alone, grouped.it_mean,
                    it_pack, grouped.it_max);
        std::fflush(stdout);
        rows.push_back({{"backend", name},
                        {"scene", grouped.name},
                        {"envs", n},
                        {"dofs", grouped.dofs},
                        {"group", group},
                        {"groups", grouped.groups},
                        {"env_bytes", env_bytes},
                        {"alone_bytes", alone_bytes},
                        {"l2_bytes", cache.l2},
                        {"last_level_cache_bytes", cache.last},
                        {"alone_seconds_per_step", alone},
                        {"packed_seconds_per_step", packed_value(packed.per_step)},
                        {"packed_env_steps_per_s", packed_value(1 / packed_env)},
                        {"packed_cost_vs_alone", packed_value(packed_env / alone)},
                        {"grouped_seconds_per_step", grouped.per_step},
                        {"grouped_env_steps_per_s", 1 / grouped_env},
                        {"grouped_cost_vs_alone", grouped_env / alone},
                        {"iterations_mean", grouped.it_mean},
                        {"iterations_packed", packed_value(packed.it_max)},
                        {"iterations_grouped", grouped.it_max},
                        {"clock", cpu_time ? "thread_cpu" : "wall"},
                        {"steps", steps},
                        {"reps", reps}});
      }
    }
  }
  if (!json_file.empty()) WriteTextAtomically(json_file, rows.dump(2) + "\n");
  return 0;
}

}  // namespace condsim::app
