// A small command-line parser for the condsim subcommands: --key value pairs and --flags,
// unknown keys rejected with a message naming them.
#pragma once

#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "condsim/backend.h"
#include "condsim/error.h"
#include "models/world/scene.h"

namespace condsim::app {

class Args {
 public:
  // value_keys take one value, flag_keys none; positional arguments are kept in order
  Args(const std::vector<std::string>& argv, const std::set<std::string>& value_keys,
       const std::set<std::string>& flag_keys, const std::string& command) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if ((a == "-h" || a == "help") && flag_keys.count("--help")) {
        flags_.insert("--help");
      } else if (a.rfind("--", 0) != 0) {
        positional_.push_back(a);
      } else if (flag_keys.count(a)) {
        flags_.insert(a);
      } else if (value_keys.count(a)) {
        if (i + 1 >= argv.size()) throw Error(command + ": option " + a + " needs a value");
        values_[a] = argv[++i];
      } else {
        std::string valid;
        for (const auto& k : value_keys) valid += " " + k;
        for (const auto& k : flag_keys) valid += " " + k;
        throw Error(command + ": unknown option '" + a + "' (valid:" + valid + ")");
      }
    }
  }

  bool Flag(const std::string& key) const { return flags_.count(key) > 0; }
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  std::string Get(const std::string& key, const std::string& fallback) const {
    const auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
  }
  // integer option, checked against [lo, hi]; accepts 1e6-style values
  long long GetInt(const std::string& key, long long fallback, long long lo, long long hi) const {
    double v = 0;
    if (!Number(key, &v)) return fallback;
    if (!(v >= double(lo) && v <= double(hi)) || v != std::floor(v)) {
      throw Error("option " + key + ": '" + values_.at(key) + "' is not an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    }
    return static_cast<long long>(v);
  }
  // number option, checked against [lo, hi] (lo excluded when open_lo); the message names the
  // option and the valid range
  double GetDouble(const std::string& key, double fallback, double lo, double hi, bool open_lo = false) const {
    double v = 0;
    if (!Number(key, &v)) return fallback;
    if (!std::isfinite(v) || (open_lo ? v <= lo : v < lo) || v > hi) {
      std::ostringstream range;
      range << (open_lo ? "(" : "[") << lo << ", " << hi << "]";
      throw Error("option " + key + ": '" + values_.at(key) + "' is not a number in " + range.str());
    }
    return v;
  }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  // the option's value as a number (NaN when it is not one, so every range check fails); false
  // when the option is absent
  bool Number(const std::string& key, double* v) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return false;
    std::size_t used = 0;
    try {
      *v = std::stod(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size()) *v = std::nan("");
    return true;
  }

  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

// shared by run and batch (apps/run_scene.cpp): the signal that asked for a stop (0: none);
// SIGINT / SIGTERM set it (a second one ends the process at once), SIGXFSZ is ignored (a write
// error instead)
extern std::atomic<int> g_stop_signal;
void InstallSignalHandlers();
// the step count from the scene or --steps / --duration, checked against overflow
long long StepCount(const Args& args, const Scene& scene, const std::string& command);
// the output directory exists and takes a file, before the first step
void Preflight(const std::string& dir);
// --threads N, capped at the hardware threads
int ThreadCount(const Args& args, bool quiet, const std::string& command);
// --spmv csr|bsr|rowloop: the CUDA backend's SpMV path (default rowloop)
SpmvFormat SpmvOption(const Args& args);

int RunInfo(const std::vector<std::string>& args);
int RunBatch(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);
// `condsim bench scale` (apps/bench_scale.cpp): exit 2 on a bad option value
int RunBenchScale(const std::vector<std::string>& args);
// `condsim bench batch` (apps/bench_batch.cpp): per scene, backend and N of envs, the packed and
// the grouped cost per env-step (groups of group_size, 0: as `condsim batch --group 0` picks)
// against the environments alone
int BenchBatch(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, const std::vector<std::string>& scenes,
               const std::vector<Index>& envs, Index group_size, int steps, int reps, int threads, const std::string& json_file);
int RunScene(const std::vector<std::string>& args);
// `condsim run SCENE.json` (apps/run_scene.cpp)
int RunSceneFile(const Args& args);

}  // namespace condsim::app
