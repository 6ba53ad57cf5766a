// `condsim run SCENE.json`: steps a scene file (docs/scene-format.md) with a progress bar, streams
// the trajectory into DIR/output.h5 (+ .xmf) and writes DIR/summary.json. Everything that can be
// checked before the first step is (options, the scene, the output directory); after it, an
// error, a divergence or SIGINT / SIGTERM stops the run at a step boundary, and the output and
// the summary are closed with the run's status. Exit codes: 0 complete, 1 error, 3 diverged,
// 130 / 143 interrupted by SIGINT / SIGTERM.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "apps/args.h"
#include "condsim/backend.h"
#include "condsim/build_commit.h"
#include "io/output.h"
#include "io/scene.h"

namespace condsim::app {

// the signal that asked the run to stop (0: none); a second one ends the process at once
std::atomic<int> g_stop_signal{0};

namespace {
extern "C" void OnStopSignal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

// SIGINT / SIGTERM stop the run at the next step boundary; a file size limit (SIGXFSZ) becomes a
// write error (EFBIG) instead of killing the process
void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

// the step count from the scene or --steps / --duration, checked against overflow
long long StepCount(const Args& args, const Scene& scene, const std::string& command) {
  // the World counts steps in an Index (32 bits)
  constexpr double kMaxSteps = 2147483647;
  const double dt = scene.world.dt;
  if (args.Has("--steps") && args.Has("--duration")) throw Error(command + ": give --steps or --duration, not both");
  if (args.Has("--steps")) return args.GetInt("--steps", 1, 1, (long long)kMaxSteps);
  const bool from_option = args.Has("--duration");
  const double duration = from_option ? args.GetDouble("--duration", 1, 0, 1e15, true) : scene.duration;
  const double steps = duration / dt;
  if (!(steps <= kMaxSteps)) {
    std::ostringstream msg;
    msg << scene.source << ": " << (from_option ? "--duration" : "/duration") << " / /world/dt = " << duration << " s / " << dt
        << " s = " << steps << " steps, more than " << static_cast<long long>(kMaxSteps);
    throw Error(msg.str());
  }
  return std::max<long long>(1, std::llround(steps));
}

// the output directory exists and takes a file, before the first step
void Preflight(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory (" + ec.message() + ")");
  if (!std::filesystem::is_directory(dir, ec)) throw Error(dir + ": the output path is not a directory");
  const std::string probe = dir + "/.condsim-write-test";
  {
    std::ofstream out(probe);
    if (out) out << "condsim\n";
    out.flush();
    if (!out) {
      const std::string reason = std::strerror(errno);
      std::filesystem::remove(probe, ec);
      throw Error(dir + ": cannot write in the output directory (" + reason + ")");
    }
  }
  std::filesystem::remove(probe, ec);
}

SpmvFormat SpmvOption(const Args& args) {
  try {
    return ParseSpmvFormat(args.Get("--spmv", "rowloop"));
  } catch (const Error& e) {
    throw Error(std::string("option --spmv: ") + e.what());
  }
}

// --threads N, capped at the hardware threads (more only oversubscribes the cores)
int ThreadCount(const Args& args, bool quiet, const std::string& command) {
  int threads = int(args.GetInt("--threads", 0, 0, 4096));
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  if (threads > hw) {
    if (!quiet) std::cout << "condsim " << command << ": --threads " << threads << " capped at the " << hw << " hardware threads\n";
    threads = hw;
  }
  return threads;
}

namespace {

struct RunOptions {
  std::string scene_path, out_dir;
  long long steps = 0;
  bool quiet = false, verbose = false, record = false;
  long long every = 0;  // a frame every `every` steps
};

// a warning of the solver's: how often, and the first step
struct Warning {
  long long count = 0, first_step = -1;
  void Add(long long step) {
    if (count++ == 0) first_step = step;
  }
  nlohmann::json Json() const { return {{"count", count}, {"first_step", first_step}}; }
};

struct Totals {
  double iterations = 0, contacts = 0, solver_s = 0, dynamics_s = 0, max_pen = 0, max_speed = 0, max_energy = 0;
  long long done = 0;
  // the backend's work after the first step: per step (controls and step, no output) and in the
  // solver's loops, with their iterations
  BackendCounters step_counters, loop_counters;
  double loop_iterations = 0;
  Warning not_converged;    // the solve stopped at max_iterations above theta_th
  Warning residual_growth;  // and its final residual grew tenfold over the last step's
  double last_residual = -1;
};

void Progress(const Totals& t, long long steps, double wall, bool tty, bool* printed) {
  const double rate = double(t.done) / std::max(wall, 1e-9);
  const int width = 30, filled = int(width * double(t.done) / double(steps));
  char line[200];
  std::snprintf(line, sizeof(line), "[%s%s] %lld/%lld steps  %.1f steps/s  ETA %.0f s", std::string(filled, '#').c_str(),
                std::string(width - filled, '.').c_str(), t.done, steps, rate, double(steps - t.done) / rate);
  std::cerr << (tty ? "\r" : "") << line << (tty ? "" : "\n") << std::flush;
  *printed = true;
}

nlohmann::json Summary(const RunOptions& o, const Scene& scene, const World& world, const Backend& backend, const Totals& t,
                       double wall) {
  const double n = double(std::max<long long>(t.done, 1));
  nlohmann::json s;
  s["scene"] = o.scene_path;
  s["scene_name"] = scene.name;
  s["scene_hash"] = HashHex(scene.hash);
  s["commit"] = CONDSIM_GIT_COMMIT;
  s["steps"] = t.done;
  s["steps_requested"] = o.steps;
  s["dt_s"] = scene.world.dt;
  s["dof"] = world.num_dofs();
  s["backend"] = ToString(backend.kind());
  s["device"] = backend.Describe();
  s["mean_iterations"] = t.iterations / n;
  s["health"] = {{"not_converged", t.not_converged.Json()},
                 {"residual_growth", t.residual_growth.Json()},
                 {"max_speed_m_s", t.max_speed},
                 {"max_kinetic_energy_j", t.max_energy}};
  s["max_penetration_m"] = t.max_pen;
  s["mean_contacts"] = t.contacts / n;
  s["dynamics_ms_per_step"] = t.dynamics_s / n * 1e3;
  s["solver_ms_per_step"] = t.solver_s / n * 1e3;
  s["wall_s"] = wall;
  // the backend's work per step after the first (controls and step, no output), and per iteration
  // of the solver's loop
  const double later = double(std::max<long long>(t.done - 1, 1)), it = std::max(t.loop_iterations, 1.0);
  const auto counts = [](const BackendCounters& c, double per) {
    return nlohmann::json{{"allocations", double(c.allocations) / per},   {"allocated_bytes", double(c.allocated_bytes) / per},
                          {"uploads", double(c.uploads) / per},           {"upload_bytes", double(c.upload_bytes) / per},
                          {"downloads", double(c.downloads) / per},       {"download_bytes", double(c.download_bytes) / per},
                          {"launches", double(c.launches) / per},         {"read_ms", double(c.read_ns) * 1e-6 / per}};
  };
  s["backend_counters"] = {{"per_step", counts(t.step_counters, later)}, {"per_iteration", counts(t.loop_counters, it)}};
  if (scene.randomized) s["seed"] = scene.seed;
  for (const SceneRandom& r : scene.randomization)
    for (const std::string& p : r.paths) s["randomization"][p] = r.value;
  return s;
}

void PrintTable(const Scene& scene, const World& world, const Totals& t, double wall, const std::string& status,
                const std::string& summary_file) {
  const double n = double(std::max<long long>(t.done, 1));
  std::printf("%-22s %s\n", "scene", scene.name.c_str());
  std::printf("%-22s %s\n", "status", status.c_str());
  std::printf("%-22s %lld (%.3f s simulated)\n", "steps", t.done, double(t.done) * scene.world.dt);
  std::printf("%-22s %d\n", "dof", world.num_dofs());
  std::printf("%-22s %.1f\n", "mean iterations", t.iterations / n);
  std::printf("%-22s %.1f\n", "mean contacts", t.contacts / n);
  std::printf("%-22s %.3g mm\n", "max penetration", t.max_pen * 1e3);
  std::printf("%-22s %lld", "steps not converged", t.not_converged.count);
  if (t.not_converged.count > 0) std::printf(" (first: step %lld; residual growth %lld)", t.not_converged.first_step, t.residual_growth.count);
  std::printf("\n%-22s %.3g m/s\n", "max speed", t.max_speed);
  std::printf("%-22s %.3f ms/step\n", "dynamics", t.dynamics_s / n * 1e3);
  std::printf("%-22s %.3f ms/step\n", "solver", t.solver_s / n * 1e3);
  std::printf("%-22s %.2f s\n", "wall", wall);
  std::printf("%-22s %s\n", "summary", summary_file.c_str());
}

}  // namespace

int RunSceneFile(const Args& args) {
  InstallSignalHandlers();
  RunOptions o;
  o.scene_path = args.positional()[0];
  o.quiet = args.Flag("--quiet");
  o.verbose = args.Flag("--verbose");
  // --seed: the scene's randomized values drawn from their ranges (a batch member)
  std::uint64_t seed = 0;
  if (args.Has("--seed")) seed = std::uint64_t(args.GetInt("--seed", 0, 0, (1LL << 53) - 1));  // exact in the parser's double
  BackendOptions options;
  options.cpu_threads = ThreadCount(args, o.quiet, "run");
  options.spmv_format = SpmvOption(args);
  const Scene scene = LoadScene(o.scene_path, args.Has("--seed") ? &seed : nullptr);
  o.steps = StepCount(args, scene, "run");
  const BackendSelection sel = MakeBackend(ParseBackendChoice(args.Get("--backend", "auto")), options);
  std::string name = scene.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  o.out_dir = args.Get("--out", "condsim-out/" + name);
  Preflight(o.out_dir);
  SceneWorld sw = BuildWorld(scene, sel.backend.get());
  World& world = *sw.world;
  // trajectory frames every `every` steps (the scene's output frame rate), the first at t = 0
  const Scalar dt = scene.world.dt;
  o.record = scene.frame_rate > 0 && !args.Flag("--no-output");
  if (o.record && !HaveHdf5() && !o.quiet) std::cout << "condsim run: built without HDF5: no trajectory file, summary.json only\n";
  o.every = o.record ? std::max<long long>(1, std::llround(1 / (scene.frame_rate * dt))) : 0;
  std::unique_ptr<Recorder> recorder;
  if (o.record && HaveHdf5()) {
    recorder = std::make_unique<Recorder>(o.out_dir + "/output.h5", scene, sw);
    recorder->AddFrame(sw);
  }
  if (!o.quiet) {
    std::cout << "condsim run " << o.scene_path << ": " << scene.name << ", " << o.steps << " steps of " << dt << " s on "
              << sel.backend->Describe() << "\n";
    if (scene.randomized) {
      std::cout << "seed " << scene.seed << ":";
      for (const SceneRandom& r : scene.randomization)
        for (const std::string& p : r.paths) std::cout << " " << p << " = " << r.value;
      std::cout << "\n";
    }
  }
  const bool tty = isatty(fileno(stderr));
  Totals t;
  std::string status = "complete", failure;
  int exit_code = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  bool printed = false;
  while (t.done < o.steps) {
    if (const int sig = g_stop_signal.load()) {
      status = "interrupted";
      failure = std::string("stopped by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + " after step " + std::to_string(t.done);
      exit_code = 128 + sig;
      break;
    }
    StepStats st;
    const BackendCounters before = sel.backend->counters();
    try {
      ApplyControls(scene, &sw);
      st = world.Step();
    } catch (const DivergenceError& e) {
      status = "failed";
      failure = e.what();
      exit_code = 3;
      break;
    } catch (const std::exception& e) {
      status = "failed";
      failure = e.what();
      exit_code = 1;
      break;
    }
    const BackendCounters step_counters = sel.backend->counters() - before;
    if (t.done > 0) {
      t.step_counters = t.step_counters + step_counters;
      t.loop_counters = t.loop_counters + st.cond.loop_counters;
      t.loop_iterations += st.cond.iterations;
    }
    if (recorder) {
      try {
        recorder->AddStats(st);
        if ((t.done + 1) % o.every == 0) recorder->AddFrame(sw);
      } catch (const std::exception& e) {
        // the output cannot be written (e.g. the disk is full): the run stops, the partial file goes
        recorder.reset();
        status = "failed";
        failure = e.what();
        exit_code = 1;
        break;
      }
    }
    ++t.done;
    if (o.verbose)
      std::printf("step %lld t %.4f s: iterations %d residual %.3g m/s contacts %d virtual nodes %d penetration %.4g mm %.1f ms (inelastic %.3f ms)\n",
                  t.done - 1, double(t.done) * dt, st.cond.iterations, st.cond.residual, int(st.contacts), int(st.virtual_nodes),
                  double(st.max_penetration) * 1e3, st.step_seconds * 1e3, st.inelastic_seconds * 1e3);
    if (o.verbose) {
      // the backend's work: the step, and the solver's loop per iteration
      const BackendCounters& c = step_counters;
      const BackendCounters& l = st.cond.loop_counters;
      const double it = std::max(1, st.cond.iterations);
      std::printf("  backend: step %lld allocations (%lld B), %lld uploads (%lld B), %lld downloads (%lld B), %lld launches; "
                  "per iteration %.2f allocations, %.2f uploads, %.2f downloads (%.0f B), %.1f launches\n",
                  (long long)c.allocations, (long long)c.allocated_bytes, (long long)c.uploads, (long long)c.upload_bytes,
                  (long long)c.downloads, (long long)c.download_bytes, (long long)c.launches, double(l.allocations) / it,
                  double(l.uploads) / it, double(l.downloads) / it, double(l.download_bytes) / it, double(l.launches) / it);
      // where the step's time goes; reads: the host blocked in the loop's reads (on CUDA the wait
      // for queued kernels: a loop much longer than its reads is busy on the host)
      std::printf("  time [ms]: detect %.3f, assemble %.3f, solve %.3f (COND set-up %.3f, loop %.3f, reads in the loop %.3f), inelastic %.3f\n",
                  st.detect_seconds * 1e3, st.assemble_seconds * 1e3, st.solve_seconds * 1e3, st.cond.setup_seconds * 1e3,
                  st.cond.iterate_seconds * 1e3, double(l.read_ns) * 1e-6, st.inelastic_seconds * 1e3);
      // the step's transfers by stage (StepStats; the rest: the world's own stages and the controls)
      const BackendCounters rest = c - st.detect_counters - st.modes_counters - st.pattern_counters - st.solver_counters;
      std::printf("  transfers up / down [B]: detect %lld / %lld, modes %lld / %lld, pattern %lld / %lld, solver %lld / %lld, other %lld / %lld\n",
                  (long long)st.detect_counters.upload_bytes, (long long)st.detect_counters.download_bytes,
                  (long long)st.modes_counters.upload_bytes, (long long)st.modes_counters.download_bytes,
                  (long long)st.pattern_counters.upload_bytes, (long long)st.pattern_counters.download_bytes,
                  (long long)st.solver_counters.upload_bytes, (long long)st.solver_counters.download_bytes, (long long)rest.upload_bytes,
                  (long long)rest.download_bytes);
    }
    t.iterations += st.cond.iterations;
    // the solver's warnings: the first one is printed, all are counted
    if (!st.cond.converged) {
      if (t.not_converged.count == 0 && !o.quiet)
        std::cerr << "condsim run: warning: step " << t.done - 1 << ": the solve stopped at max_iterations with residual "
                  << st.cond.residual << " m/s and momentum error "
                  << (st.cond.momentum_error >= 0 ? std::to_string(st.cond.momentum_error) + " m/s" : std::string("not checked")) << " (theta_th "
                  << scene.world.cond.theta_threshold << ", momentum_factor " << scene.world.cond.momentum_factor
                  << "); counted in summary.json health\n";
      t.not_converged.Add(t.done - 1);
      if (t.last_residual > 0 && st.cond.residual > 10 * t.last_residual) t.residual_growth.Add(t.done - 1);
    }
    t.last_residual = st.cond.residual;
    t.max_speed = std::max(t.max_speed, double(st.health.max_speed));
    t.max_energy = std::max(t.max_energy, double(st.health.kinetic_energy));
    t.contacts += double(st.contacts);
    const double solve = st.cond.setup_seconds + st.cond.iterate_seconds;
    t.solver_s += solve;
    t.dynamics_s += st.step_seconds - solve;
    t.max_pen = std::max(t.max_pen, double(st.max_penetration));
    // progress: a bar on a terminal, plain lines every 10 % otherwise
    const auto now = std::chrono::steady_clock::now();
    const bool tenth = t.done * 10 / o.steps != (t.done - 1) * 10 / o.steps;
    if (!o.quiet && ((tty && std::chrono::duration<double>(now - last_print).count() > 0.2) || (!tty && tenth) || t.done == o.steps)) {
      last_print = now;
      Progress(t, o.steps, std::chrono::duration<double>(now - t0).count(), tty, &printed);
    }
  }
  if (!o.quiet && tty && printed) std::cerr << "\n";
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json summary = Summary(o, scene, world, *sel.backend, t, wall);
  summary["status"] = status;
  summary["diverged"] = exit_code == 3;
  if (!failure.empty()) summary["failure"] = failure;
  // no trajectory from this run (none asked for, or its file failed): an older run's must not
  // pass for it
  const bool remove_stale = !recorder;
  if (recorder) {
    try {
      recorder->Finish(status, failure);
      summary["output"] = recorder->path();
      summary["frames"] = recorder->num_frames();
    } catch (const std::exception& e) {
      // the steps ran, the output could not be closed: said in the summary and the exit code
      recorder.reset();
      if (status == "complete") status = "failed";
      failure = failure.empty() ? e.what() : failure + "; " + e.what();
      summary["status"] = status;
      summary["failure"] = failure;
      if (exit_code == 0) exit_code = 1;
    }
  }
  if (remove_stale) {
    std::error_code ec;
    for (const char* stale : {"/output.h5", "/output.xmf"}) std::filesystem::remove(o.out_dir + stale, ec);
  }
  const std::string file = o.out_dir + "/summary.json";
  WriteTextAtomically(file, summary.dump(2) + "\n");
  if (!o.quiet) PrintTable(scene, world, t, wall, status, file);
  if (exit_code != 0) std::cerr << "condsim run: " << status << ": " << failure << "\n";
  return exit_code;
}

}  // namespace condsim::app
