// `condsim batch SCENE.json`: M randomized episodes of a scene, N at a time in one batched World
// (BuildBatch, failures isolated per environment), one HDF5 file per episode and a manifest
// (docs/batch.md). Episode i's seed is a fixed function of (batch seed, i), so
// `condsim run SCENE --seed <it>` reproduces the episode bitwise. Resumable: a restart with the
// same arguments skips the episodes whose final file exists; SIGINT / SIGTERM stop at a step
// boundary and drop the running episodes' .part files. `condsim batch merge DIR` joins the
// shard manifests. Exit codes: 0 every episode complete, 3 some failed, 1 error, 128 + signal
// when interrupted.
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/batch_groups.h"
#include "condsim/backend.h"
#include "condsim/build_commit.h"
#include "io/batch_file.h"
#include "io/output.h"
#include "io/scene.h"

namespace condsim::app {
namespace {

constexpr long long kSeedMax = (1LL << 53) - 1;  // seeds are exact in the option parser's double

// episode i's seed: output i + 1 of SplitMix64 (Steele, Lea and Flood 2014) started at the batch
// seed S, i.e. the mix of S + (i + 1) * 0x9E3779B97F4A7C15, shifted right by 11 bits (0 .. 2^53 - 1)
std::uint64_t EpisodeSeed(std::uint64_t batch_seed, long long i) {
  std::uint64_t z = batch_seed + std::uint64_t(i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z >> 11;
}

struct BatchOptions {
  std::string scene_path, out_dir;
  long long envs = 1, episodes = 1, steps = 0, every = 1;
  long long group = 0;  // environments per World (--group; 0 = auto, resolved before the first wave)
  std::uint64_t seed = 0;
  long long shard = 0, shards = 1;
  long long episode = -1;  // --episode i: only that one (always run, never skipped)
  bool quiet = false;
};

// "k/K" with 0 <= k < K
void ParseShard(const std::string& text, long long* k, long long* n) {
  const std::regex re("([0-9]{1,9})/([0-9]{1,9})");
  std::smatch m;
  if (std::regex_match(text, m, re)) {
    *k = std::stoll(m[1]);
    *n = std::stoll(m[2]);
    if (*n >= 1 && *k < *n) return;
  }
  throw Error("option --shard: '" + text + "' is not k/K with 0 <= k < K");
}

std::string EpisodeName(long long i) {
  char name[48];
  std::snprintf(name, sizeof(name), "episodes/episode_%06lld.h5", i);
  return name;
}

std::string ShardSuffix(const BatchOptions& o) {
  return o.shards == 1 ? "" : ".shard-" + std::to_string(o.shard) + "-of-" + std::to_string(o.shards);
}

struct Outcome {
  long long index = 0;
  std::uint64_t seed = 0;
  std::string status;  // complete, failed
  std::string failure;
  long long steps_done = 0;
};

// progress over the episodes this invocation runs: a bar on a terminal, a line every 10 % else
class Progress {
 public:
  Progress(long long episodes, long long steps, bool quiet)
      : episodes_(episodes), steps_(steps), quiet_(quiet), tty_(isatty(fileno(stderr))), t0_(std::chrono::steady_clock::now()) {}
  // env-steps done, and the steps an episode that ended early will not run
  void Steps(long long n) { env_steps_ += n; }
  void EpisodeDone(long long steps_left) {
    ++done_;
    credited_ += steps_left;
    Print(true);
  }
  void Print(bool force) {
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double>(now - t0_).count();
    const long long tenth = episodes_ > 0 ? done_ * 10 / episodes_ : 10;
    if (tty_ ? (!force && std::chrono::duration<double>(now - last_).count() < 0.2) : (tenth == last_tenth_ && done_ < episodes_)) return;
    last_ = now;
    last_tenth_ = tenth;
    const double rate = double(env_steps_) / std::max(wall, 1e-9);
    const double left = double(episodes_ * steps_ - env_steps_ - credited_);
    const int width = 30, filled = episodes_ > 0 ? int(width * done_ / episodes_) : width;
    char line[256];
    std::snprintf(line, sizeof(line), "[%s%s] %lld/%lld episodes  %.1f env-steps/s  ETA %.0f s", std::string(filled, '#').c_str(),
                  std::string(width - filled, '.').c_str(), done_, episodes_, rate, rate > 0 ? std::max(0.0, left) / rate : 0.0);
    std::cerr << (tty_ ? "\r" : "") << line << (tty_ ? "" : "\n") << std::flush;
    printed_ = true;
  }
  void End() {
    if (!quiet_ && tty_ && printed_) std::cerr << "\n";
  }
  long long env_steps() const { return env_steps_; }
  double wall() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  long long episodes_, steps_, done_ = 0, env_steps_ = 0, credited_ = 0, last_tenth_ = 0;
  bool quiet_, tty_, printed_ = false;
  std::chrono::steady_clock::time_point t0_, last_;
};

// runs the episodes together, as groups of at most o.group environments (EnvGroups: each group
// one batched World; on `backends`, apps/batch_groups.h); false when a stop signal ended it (the
// unfinished episodes' .part files removed)
bool RunWave(const BatchOptions& o, const std::vector<long long>& episodes, const std::vector<Backend*>& backends, Progress* progress,
             std::vector<Outcome>* outcomes) {
  const std::size_t n = episodes.size();
  std::vector<Scene> scenes;
  std::vector<std::uint64_t> seeds;
  for (long long i : episodes) {
    seeds.push_back(EpisodeSeed(o.seed, i));
    scenes.push_back(LoadScene(o.scene_path, &seeds.back()));
  }
  EnvGroups groups(scenes, Index(o.group), backends);
  // the contacts of each group's world by environment, sorted once per frame
  std::vector<std::vector<Index>> by_env(n);
  const auto sort_contacts = [&] {
    for (std::vector<Index>& ids : by_env) ids.clear();
    for (std::size_t g = 0; g < groups.num_groups(); ++g) {
      const std::vector<ContactRecord>& all = groups.world(g).contacts();
      for (std::size_t m = 0; m < all.size(); ++m) {
        const Index local = all[m].env;
        if (local >= 0 && std::size_t(local) < groups.group_size(g)) by_env[groups.env(g, local)].push_back(Index(m));
      }
    }
  };
  std::vector<std::unique_ptr<Recorder>> rec(n);
  std::vector<Outcome> out(n);
  std::vector<char> active(n, 1);
  for (std::size_t e = 0; e < n; ++e) {
    out[e] = {episodes[e], seeds[e], "", "", 0};
    RecordEpisode info;
    info.index = episodes[e];
    info.steps = o.steps;
    info.extras = true;
    rec[e] = std::make_unique<Recorder>(o.out_dir + "/" + EpisodeName(episodes[e]), scenes[e], groups.scene_world(e), info);
  }
  sort_contacts();
  for (std::size_t e = 0; e < n; ++e) rec[e]->AddFrame(groups.scene_world(e), &by_env[e]);
  std::size_t running = n;
  for (long long step = 0; step < o.steps && running > 0; ++step) {
    if (g_stop_signal.load() != 0) return false;  // the recorders' destructors drop the .part files
    // every group with a running environment: its drives set, one step; a diverging
    // environment is reported in its group's stats (isolated failures), never thrown
    groups.Step(scenes, active);
    const bool frame = (step + 1) % o.every == 0;
    if (frame) sort_contacts();
    for (std::size_t e = 0; e < n; ++e) {
      if (!active[e]) continue;
      const EnvStepStats& es = groups.env_stats(e);
      if (es.failed) {
        // the steps before the failing one are kept; the episode leaves the batch
        out[e].status = "failed";
        out[e].failure = es.failure;
        rec[e]->Finish("failed", es.failure);
        active[e] = 0;
        --running;
        progress->EpisodeDone(o.steps - step);
        continue;
      }
      rec[e]->AddStats(groups.stats(groups.group(e)), groups.local(e));  // = AddStats(EnvironmentStats(st, local)), without the copy
      if (frame) rec[e]->AddFrame(groups.scene_world(e), &by_env[e]);
      out[e].steps_done = step + 1;
    }
    progress->Steps(long(running));
    progress->Print(false);
  }
  for (std::size_t e = 0; e < n; ++e) {
    if (!active[e]) continue;
    out[e].status = "complete";
    rec[e]->Finish("complete", "");
    progress->EpisodeDone(0);
  }
  outcomes->insert(outcomes->end(), out.begin(), out.end());
  return true;
}

// the manifest entry of episode i from its final file (missing when there is none)
ManifestEntry Entry(const BatchOptions& o, long long i) {
  ManifestEntry e;
  e.index = i;
  e.seed = EpisodeSeed(o.seed, i);
  e.status = "missing";
  const std::string path = o.out_dir + "/" + EpisodeName(i);
  if (!std::filesystem::exists(path)) return e;
  const EpisodeFileInfo info = ReadEpisodeFile(path);
  e.status = info.status;
  e.failure = info.failure;
  e.steps_done = info.steps_done;
  e.file = EpisodeName(i);
  return e;
}

// an existing final file of episode i: done (complete or failed) by this batch; another batch's
// is an error, any other status is run again
bool AlreadyDone(const BatchOptions& o, const std::string& scene_hash, long long i) {
  const std::string path = o.out_dir + "/" + EpisodeName(i);
  if (!std::filesystem::exists(path)) return false;
  const EpisodeFileInfo info = ReadEpisodeFile(path);
  const std::uint64_t seed = EpisodeSeed(o.seed, i);
  if (info.scene_hash != scene_hash || !info.has_seed || info.seed != seed || info.steps != o.steps) {
    throw Error(path + ": written by another batch (scene_hash " + info.scene_hash + ", seed " +
                (info.has_seed ? std::to_string(info.seed) : std::string("none")) + ", steps " + std::to_string(info.steps) +
                "; this batch: " + scene_hash + ", " + std::to_string(seed) + ", " + std::to_string(o.steps) +
                "): use another --out or remove the folder");
  }
  return info.status == "complete" || info.status == "failed";
}

nlohmann::json EntryJson(const ManifestEntry& e) {
  nlohmann::json j = {{"episode", e.index}, {"seed", e.seed}, {"steps_done", e.steps_done}};
  if (e.status == "failed") {
    j["step"] = e.steps_done;  // the failing step (the steps before it are kept)
    j["failure"] = e.failure;
  }
  return j;
}

void PrintHelp() {
  std::cout << "usage: condsim batch SCENE.json --envs N --episodes M [--seed S] [--steps K | --duration T]\n"
               "       [--out DIR] [--backend cpu|cuda|auto] [--spmv csr|bsr|rowloop] [--threads T] [--group G] [--shard k/K]\n"
               "       [--episode i] [--quiet]\n"
               "       condsim batch merge DIR\n"
               "runs M episodes of a scene, N at a time in one batched world, each with its scene's randomized\n"
               "values drawn from its own seed (docs/batch.md). Episode i's seed: SplitMix64 output i + 1 from the\n"
               "batch seed S (default 0), shifted right 11 bits; `condsim run SCENE --seed <it>` reproduces it.\n"
               "Writes DIR/episodes/episode_<i:06>.h5 (run's output.h5 layout), DIR/manifest.h5 and\n"
               "DIR/batch_summary.json (default DIR: condsim-batch/<scene name>). An episode that diverges is\n"
               "marked failed (seed, step, reason) and the others go on. A restart with the same arguments skips\n"
               "the finished episodes. --shard k/K: the episodes i with i % K == k (manifest.shard-k-of-K.h5);\n"
               "`condsim batch merge DIR` joins the shard manifests into DIR/manifest.h5. --episode i: run that\n"
               "episode only. --group G: the episodes as Worlds of at most G (0, the default: auto;\n"
               "on the cpu from one environment's working set against the L2 and last-level caches, on cuda all N); the\n"
               "results do not depend on it (on cuda: with --spmv rowloop). --spmv: the cuda backend's SpMV (default rowloop: each row alone, so an episode's\n"
               "data do not depend on the other environments of its World; csr, bsr: cuSPARSE, which may split a row's sum\n"
               "differently in a larger matrix).\n"
               "Exit: 0 all complete, 3 some failed, 1 error, 128 + signal when interrupted.\n";
}

int Merge(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {"--help", "--quiet"}, "batch merge");
  if (args.Flag("--help")) {
    PrintHelp();
    return 0;
  }
  if (args.positional().size() != 1) throw Error("batch merge: give one folder (condsim batch merge DIR)");
  const std::string dir = args.positional()[0];
  const std::regex re("manifest\\.shard-([0-9]+)-of-([0-9]+)\\.h5");
  std::map<long long, std::string> files;
  long long shards = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, re)) continue;
    const long long k = std::stoll(m[1]), n = std::stoll(m[2]);
    if (shards >= 0 && n != shards) throw Error(dir + ": shard manifests of " + std::to_string(shards) + " and " + std::to_string(n) + " shards");
    shards = n;
    files[k] = entry.path().string();
  }
  if (ec) throw Error(dir + ": cannot read the folder (" + ec.message() + ")");
  if (shards < 0) throw Error(dir + ": no shard manifests (manifest.shard-k-of-K.h5)");
  for (long long k = 0; k < shards; ++k)
    if (!files.count(k)) throw Error(dir + ": manifest.shard-" + std::to_string(k) + "-of-" + std::to_string(shards) + ".h5 is missing");
  Manifest merged;
  std::map<long long, ManifestEntry> entries;
  for (const auto& [k, path] : files) {
    const Manifest m = ReadManifest(path);
    if (k == 0) {
      merged = m;
      merged.entries.clear();
    } else if (m.scene_hash != merged.scene_hash || m.batch_seed != merged.batch_seed || m.episodes != merged.episodes ||
               m.steps != merged.steps) {
      throw Error(path + ": another batch than shard 0's (scene_hash " + m.scene_hash + " vs " + merged.scene_hash + ", seed " +
                  std::to_string(m.batch_seed) + " vs " + std::to_string(merged.batch_seed) + ", episodes " + std::to_string(m.episodes) +
                  " vs " + std::to_string(merged.episodes) + ", steps " + std::to_string(m.steps) + " vs " + std::to_string(merged.steps) + ")");
    }
    for (const ManifestEntry& e : m.entries) entries[e.index] = e;
  }
  std::string missing;
  long long n_missing = 0;
  for (long long i = 0; i < merged.episodes; ++i) {
    const auto it = entries.find(i);
    if (it == entries.end() || it->second.status == "missing") {
      if (n_missing++ < 10) missing += " " + std::to_string(i);
    } else {
      merged.entries.push_back(it->second);
    }
  }
  if (n_missing > 0) throw Error(dir + ": " + std::to_string(n_missing) + " episodes not finished (" + missing.substr(1) + (n_missing > 10 ? " ..." : "") + "); run their shards again");
  merged.shard = 0;
  merged.shards = 1;
  WriteManifest(dir + "/manifest.h5", merged);
  long long failed = 0;
  for (const ManifestEntry& e : merged.entries) failed += e.status == "failed";
  if (!args.Flag("--quiet"))
    std::cout << "condsim batch merge: " << dir << "/manifest.h5: " << merged.entries.size() << " episodes from " << shards << " shards ("
              << failed << " failed)\n";
  return failed > 0 ? 3 : 0;
}

}  // namespace

int RunBatch(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "merge") return Merge(std::vector<std::string>(argv.begin() + 1, argv.end()));
  const Args args(argv, {"--envs", "--episodes", "--seed", "--steps", "--duration", "--out", "--backend", "--threads", "--shard", "--episode",
                   "--group", "--spmv"},
                  {"--help", "--quiet"}, "batch");
  if (args.Flag("--help")) {
    PrintHelp();
    return 0;
  }
  InstallSignalHandlers();
  // every option and the scene are checked before anything is written
  if (args.positional().size() != 1) throw Error("batch: give one scene file (condsim batch SCENE.json --envs N --episodes M)");
  BatchOptions o;
  o.scene_path = args.positional()[0];
  o.quiet = args.Flag("--quiet");
  o.envs = args.GetInt("--envs", 1, 1, 1 << 20);
  o.episodes = args.GetInt("--episodes", 1, 1, 1LL << 31);
  o.group = args.GetInt("--group", 0, 0, 1 << 20);
  o.seed = std::uint64_t(args.GetInt("--seed", 0, 0, kSeedMax));
  if (args.Has("--shard")) ParseShard(args.Get("--shard", ""), &o.shard, &o.shards);
  if (args.Has("--episode")) {
    o.episode = args.GetInt("--episode", 0, 0, o.episodes - 1);
    if (o.episode % o.shards != o.shard)
      throw Error("option --episode: episode " + std::to_string(o.episode) + " is not in --shard " + std::to_string(o.shard) + "/" +
                  std::to_string(o.shards));
  }
  BackendOptions options;
  options.cpu_threads = ThreadCount(args, o.quiet, "batch");
  options.spmv_format = SpmvOption(args);
  const std::uint64_t seed0 = EpisodeSeed(o.seed, 0);
  const Scene scene = LoadScene(o.scene_path, &seed0);
  o.steps = StepCount(args, scene, "batch");
  if (!HaveHdf5()) throw Error("batch: condsim was built without HDF5 (install libhdf5-dev and reconfigure)");
  const BackendSelection sel = MakeBackend(ParseBackendChoice(args.Get("--backend", "auto")), options);
  std::string name = scene.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  o.out_dir = args.Get("--out", "condsim-batch/" + name);
  // frames at the scene's output rate; without one, the first and the last state
  o.every = scene.frame_rate > 0 ? std::max<long long>(1, std::llround(1 / (scene.frame_rate * scene.world.dt))) : o.steps;
  const std::string scene_hash = HashHex(scene.hash);
  // a wave keeps one open file per episode: the open-file limit raised to what it needs
  struct rlimit files {};
  const rlim_t needed = rlim_t(o.envs) + 64;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < needed) {
    files.rlim_cur = files.rlim_max == RLIM_INFINITY ? needed : std::min(files.rlim_max, needed);
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
    if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < needed)
      throw Error("option --envs: " + std::to_string(o.envs) + " episodes at a time keep " + std::to_string(o.envs) +
                  " files open, more than the open-file limit " + std::to_string(files.rlim_cur) + " allows (ulimit -n)");
  }
  Preflight(o.out_dir);
  Preflight(o.out_dir + "/episodes");

  // this shard's episodes; those already finished are skipped (never with --episode)
  std::vector<long long> all, mine, todo;
  for (long long i = o.shard; i < o.episodes; i += o.shards) all.push_back(i);
  if (o.episode >= 0) {
    mine.push_back(o.episode);
  } else {
    mine = all;
  }
  long long skipped = 0;
  for (long long i : mine) {
    if (o.episode < 0 && AlreadyDone(o, scene_hash, i)) {
      ++skipped;
    } else {
      todo.push_back(i);
    }
  }
  if (!o.quiet) {
    std::cout << "condsim batch " << o.scene_path << ": " << scene.name << ", " << mine.size() << " episodes";
    if (o.shards > 1) std::cout << " (shard " << o.shard << "/" << o.shards << " of " << o.episodes << ")";
    std::cout << " of " << o.steps << " steps, up to " << o.envs << " at a time, seed " << o.seed << ", on " << sel.backend->Describe() << "\n";
    if (skipped > 0) std::cout << skipped << " episodes already finished (skipped)\n";
  }

  // the groups: --group G, or auto (CUDA: all environments of a wave in one World; CPU:
  // AutoGroupSize from one environment's working set and the caches)
  const int threads = EffectiveThreads(options.cpu_threads);
  std::string group_note = "--group";
  if (o.group == 0 && sel.backend->kind() != BackendKind::kCpu) {
    o.group = o.envs;
    group_note = "auto: one World per wave on " + std::string(ToString(sel.backend->kind()));
  } else if (o.group == 0) {
    const CacheSizes cache = Caches();
    const std::size_t env_bytes = o.envs > 1 && !todo.empty() ? EnvironmentBytes(scene, sel.backend.get()) : 1;
    o.group = o.envs > 1 ? AutoGroupSize(env_bytes, cache, threads, Index(o.envs)) : 1;
    char note[200];
    std::snprintf(note, sizeof(note), "auto: %.2f MB per environment, L2 %.1f MB, last-level %.1f MB (%s), %d thread%s",
                  double(env_bytes) / 1e6, double(cache.l2) / 1e6, double(cache.last) / 1e6, cache.source.c_str(), threads,
                  threads == 1 ? "" : "s");
    group_note = o.envs > 1 ? note : "auto";
  }
  o.group = std::min(o.group, o.envs);
  // a wave: one group per thread that steps groups (the groups in parallel when --envs gives
  // every thread one), each run to its episodes' end before the next wave (its data stay in cache
  // from step to step)
  const std::size_t envs_groups = std::size_t((o.envs + o.group - 1) / o.group);
  const std::vector<std::unique_ptr<Backend>> lanes = ParallelGroupBackends(*sel.backend, threads, envs_groups);
  std::vector<Backend*> backends;
  for (const auto& b : lanes) backends.push_back(b.get());
  if (backends.empty()) backends.push_back(sel.backend.get());
  const std::size_t wave_size = std::min(std::size_t(o.envs), std::size_t(o.group) * backends.size());
  if (!o.quiet)
    std::cout << "groups of at most " << o.group << " environments (" << group_note << "), " << wave_size << " at a time"
              << (backends.size() > 1 ? ", " + std::to_string(backends.size()) + " groups in parallel" : "") << "\n";

  Progress progress(long(todo.size()), o.steps, o.quiet);
  std::vector<Outcome> outcomes;
  int stop = 0;
  for (std::size_t w = 0; w < todo.size() && stop == 0; w += wave_size) {
    const std::vector<long long> wave(todo.begin() + long(w), todo.begin() + long(std::min(todo.size(), w + wave_size)));
    if (!RunWave(o, wave, backends, &progress, &outcomes)) stop = g_stop_signal.load();
  }
  progress.End();

  // the manifest and the summary: every episode of this shard from its file
  Manifest m;
  m.scene = scene.name;
  m.scene_path = o.scene_path;
  m.scene_hash = scene_hash;
  m.commit = CONDSIM_GIT_COMMIT;
  m.batch_seed = o.seed;
  m.envs = o.envs;
  m.steps = o.steps;
  m.episodes = o.episodes;
  m.shard = o.shard;
  m.shards = o.shards;
  for (long long i : all) m.entries.push_back(Entry(o, i));
  WriteManifest(o.out_dir + "/manifest" + ShardSuffix(o) + ".h5", m);

  long long complete = 0;
  nlohmann::json failed = nlohmann::json::array(), missing = nlohmann::json::array();
  for (const ManifestEntry& e : m.entries) {
    if (std::find(mine.begin(), mine.end(), e.index) == mine.end()) continue;
    if (e.status == "complete") {
      ++complete;
    } else if (e.status == "failed") {
      failed.push_back(EntryJson(e));
    } else {
      missing.push_back(EntryJson(e));
    }
  }
  const double wall = progress.wall();
  nlohmann::json s;
  s["scene"] = o.scene_path;
  s["scene_name"] = scene.name;
  s["scene_hash"] = scene_hash;
  s["commit"] = CONDSIM_GIT_COMMIT;
  s["seed"] = o.seed;
  s["envs"] = o.envs;
  s["group"] = o.group;
  s["episodes"] = o.episodes;
  s["steps"] = o.steps;
  s["shard"] = std::to_string(o.shard) + "/" + std::to_string(o.shards);
  if (o.episode >= 0) s["episode"] = o.episode;
  s["status"] = stop != 0 ? "interrupted" : "finished";
  s["complete"] = complete;
  s["failed"] = failed;
  s["not_finished"] = missing;
  s["skipped"] = skipped;
  s["ran"] = outcomes.size();
  s["env_steps"] = progress.env_steps();
  s["env_steps_per_s"] = double(progress.env_steps()) / std::max(wall, 1e-9);
  s["wall_s"] = wall;
  s["backend"] = ToString(sel.backend->kind());
  const std::string file = o.out_dir + "/batch_summary" + ShardSuffix(o) + ".json";
  WriteTextAtomically(file, s.dump(2) + "\n");
  std::cout << "episodes: " << complete << " complete, " << failed.size() << " failed, " << skipped << " skipped";
  if (!missing.empty()) std::cout << ", " << missing.size() << " not finished";
  std::cout << " (" << progress.env_steps() << " env-steps, " << s["env_steps_per_s"].get<double>() << " env-steps/s)\n";
  for (const auto& f : failed)
    std::cout << "failed: episode " << f["episode"] << " seed " << f["seed"] << " step " << f["step"] << ": " << f["failure"].get<std::string>() << "\n";
  std::cout << "manifest " << o.out_dir << "/manifest" << ShardSuffix(o) << ".h5, summary " << file << "\n";
  if (stop != 0) {
    std::cerr << "condsim batch: interrupted by " << (stop == SIGINT ? "SIGINT" : "SIGTERM") << "; run the same command again to go on\n";
    return 128 + stop;
  }
  return failed.empty() ? 0 : 3;
}

}  // namespace condsim::app
