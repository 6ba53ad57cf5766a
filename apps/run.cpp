// `condsim run`: steps a scene file (RunSceneFile: progress, summary, HDF5 + XDMF output). Without
// a scene it runs a built-in check of the backend path: a batch of hanging chains (node masses and
// springs, 3x3 blocks) assembled as one block-diagonal system A v = b of one implicit step, solved
// by the damped Jacobi fixed-point iteration v <- v - W (A v - b) with W = omega diag(A)^-1 (the
// contact-free part of the paper's eq. 20), with per-environment convergence.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/args.h"
#include "condsim/build_commit.h"
#include "condsim/build_info.h"
#include "io/output.h"
#include "io/scene.h"
#include "condsim/backend.h"
#include "condsim/batch.h"
#include "condsim/math.h"

namespace condsim::app {
namespace {

// one environment: n nodes in a chain, node mass m [kg], spring stiffness k [N/m], step h [s];
// A = M + h^2 K (K the chain Laplacian plus the anchor spring, times I3), b = M v0 + h f with v0 = 0, f = m g
BlockMatrix ChainMatrix(Index n, Scalar m, Scalar k, Scalar h) {
  std::vector<std::pair<Index, Index>> coords;
  for (Index i = 0; i < n; ++i) {
    coords.push_back({i, i});
    if (i > 0) coords.push_back({i, i - 1});
    if (i + 1 < n) coords.push_back({i, i + 1});
  }
  BlockMatrix a(BlockPattern::FromCoordinates(3, n, n, coords));
  for (Index i = 0; i < n; ++i) {
    // node 0 hangs from a fixed anchor by one more spring
    const Scalar degree = Scalar((i > 0) + (i + 1 < n) + (i == 0));
    const Scalar d = m + h * h * k * degree, o = -h * h * k;
    const Scalar diag[9] = {d, 0, 0, 0, d, 0, 0, 0, d};
    const Scalar off[9] = {o, 0, 0, 0, o, 0, 0, 0, o};
    a.AddToBlock(i, i, diag);
    if (i > 0) a.AddToBlock(i, i - 1, off);
    if (i + 1 < n) a.AddToBlock(i, i + 1, off);
  }
  return a;
}

}  // namespace

// `condsim run SCENE`: steps a scene file (docs/scene-format.md) and writes DIR/summary.json
int RunSceneFile(const Args& args) {
  const std::string path = args.positional()[0];
  // --seed: the scene's randomized values drawn from their ranges (a batch member)
  std::uint64_t seed = 0;
  if (args.Has("--seed")) seed = std::uint64_t(args.GetInt("--seed", 0, 0, (1LL << 53) - 1));  // exact in the parser's double
  const Scene scene = LoadScene(path, args.Has("--seed") ? &seed : nullptr);
  BackendOptions options;
  options.cpu_threads = int(args.GetInt("--threads", 0, 0, 4096));
  const BackendSelection sel = MakeBackend(ParseBackendChoice(args.Get("--backend", "auto")), options);
  const bool quiet = args.Flag("--quiet"), verbose = args.Flag("--verbose");
  const Scalar dt = scene.world.dt;
  if (args.Has("--steps") && args.Has("--duration")) throw Error("run: give --steps or --duration, not both");
  long long steps = (long long)std::llround(scene.duration / dt);
  if (args.Has("--steps")) steps = args.GetInt("--steps", 1, 1, 1LL << 40);
  if (args.Has("--duration")) {
    const double d = std::stod(args.Get("--duration", "1"));
    if (!(d > 0 && std::isfinite(d))) throw Error("run: --duration must be a positive number of seconds");
    steps = std::max<long long>(1, (long long)std::llround(d / dt));
  }
  std::string name = scene.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  const std::string out_dir = args.Get("--out", "condsim-out/" + name);
  std::filesystem::create_directories(out_dir);
  SceneWorld sw = BuildWorld(scene, sel.backend.get());
  World& world = *sw.world;
  // trajectory frames every `every` steps (the scene's output frame rate), the first at t = 0
  const bool record = scene.frame_rate > 0 && !args.Flag("--no-output");
  if (record && !HaveHdf5() && !quiet) std::cout << "condsim run: built without HDF5: no trajectory file, summary.json only\n";
  const long long every = record ? std::max<long long>(1, std::llround(1 / (scene.frame_rate * dt))) : 0;
  std::unique_ptr<Recorder> recorder;
  if (record && HaveHdf5()) {
    recorder = std::make_unique<Recorder>(scene, sw);
    recorder->AddFrame(sw);
  }
  if (!quiet) {
    std::cout << "condsim run " << path << ": " << scene.name << ", " << steps << " steps of " << dt << " s on "
              << sel.backend->Describe() << "\n";
    if (scene.randomized) {
      std::cout << "seed " << scene.seed << ":";
      for (const SceneRandom& r : scene.randomization)
        for (const std::string& p : r.paths) std::cout << " " << p << " = " << r.value;
      std::cout << "\n";
    }
  }
  const bool tty = isatty(fileno(stderr));
  double iterations = 0, contacts = 0, solver_s = 0, dynamics_s = 0, max_pen = 0;
  bool diverged = false;
  std::string failure;
  long long done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  for (; done < steps; ++done) {
    StepStats st;
    try {
      ApplyControls(scene, &sw);
      st = world.Step();
    } catch (const Error& e) {
      diverged = std::string(e.what()).find("diverged") != std::string::npos;
      if (!diverged) throw;
      failure = e.what();
      break;
    }
    if (recorder) {
      recorder->AddStats(st);
      if ((done + 1) % every == 0) recorder->AddFrame(sw);
    }
    if (verbose)
      std::printf("step %lld t %.4f s: iterations %d residual %.3g m/s contacts %d virtual nodes %d penetration %.4g mm %.1f ms\n",
                  done, double(done + 1) * dt, st.cond.iterations, st.cond.residual, int(st.contacts), int(st.virtual_nodes),
                  double(st.max_penetration) * 1e3, st.step_seconds * 1e3);
    iterations += st.cond.iterations;
    contacts += double(st.contacts);
    const double solve = st.cond.setup_seconds + st.cond.iterate_seconds;
    solver_s += solve;
    dynamics_s += st.step_seconds - solve;
    max_pen = std::max(max_pen, double(st.max_penetration));
    // progress: a bar on a terminal, plain lines every 10 % otherwise
    const auto now = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double>(now - t0).count();
    const double rate = double(done + 1) / std::max(wall, 1e-9);
    const bool tenth = (done + 1) * 10 / steps != done * 10 / steps;
    if (!quiet && ((tty && std::chrono::duration<double>(now - last_print).count() > 0.2) || (!tty && tenth) || done + 1 == steps)) {
      last_print = now;
      const int width = 30, filled = int(width * double(done + 1) / double(steps));
      char line[200];
      std::snprintf(line, sizeof(line), "[%s%s] %lld/%lld steps  %.1f steps/s  ETA %.0f s", std::string(filled, '#').c_str(),
                    std::string(width - filled, '.').c_str(), done + 1, steps, rate, double(steps - done - 1) / rate);
      std::cerr << (tty ? "\r" : "") << line << (tty ? "" : "\n") << std::flush;
    }
  }
  if (!quiet && tty) std::cerr << "\n";
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double n = double(std::max<long long>(done, 1));
  nlohmann::json summary;
  summary["scene"] = path;
  summary["scene_name"] = scene.name;
  summary["scene_hash"] = HashHex(scene.hash);
  summary["commit"] = CONDSIM_GIT_COMMIT;
  summary["steps"] = done;
  summary["dt_s"] = dt;
  summary["dof"] = world.num_dofs();
  summary["backend"] = ToString(sel.backend->kind());
  summary["device"] = sel.backend->Describe();
  summary["mean_iterations"] = iterations / n;
  summary["max_penetration_m"] = max_pen;
  summary["mean_contacts"] = contacts / n;
  summary["dynamics_ms_per_step"] = dynamics_s / n * 1e3;
  summary["solver_ms_per_step"] = solver_s / n * 1e3;
  summary["wall_s"] = wall;
  if (scene.randomized) summary["seed"] = scene.seed;
  for (const SceneRandom& r : scene.randomization)
    for (const std::string& p : r.paths) summary["randomization"][p] = r.value;
  summary["diverged"] = diverged;
  if (diverged) summary["failure"] = failure;
  if (recorder) {
    recorder->Write(out_dir + "/output.h5");
    summary["output"] = out_dir + "/output.h5";
    summary["frames"] = recorder->num_frames();
  }
  // written under a temporary name, renamed when complete
  const std::string file = out_dir + "/summary.json";
  WriteTextAtomically(file, summary.dump(2) + "\n");
  if (!quiet) {
    std::printf("%-22s %s\n", "scene", scene.name.c_str());
    std::printf("%-22s %lld (%.3f s simulated)\n", "steps", done, double(done) * dt);
    std::printf("%-22s %d\n", "dof", world.num_dofs());
    std::printf("%-22s %.1f\n", "mean iterations", iterations / n);
    std::printf("%-22s %.1f\n", "mean contacts", contacts / n);
    std::printf("%-22s %.3g mm\n", "max penetration", max_pen * 1e3);
    std::printf("%-22s %.3f ms/step\n", "dynamics", dynamics_s / n * 1e3);
    std::printf("%-22s %.3f ms/step\n", "solver", solver_s / n * 1e3);
    std::printf("%-22s %.2f s\n", "wall", wall);
    std::printf("%-22s %s\n", "summary", file.c_str());
  }
  if (diverged) {
    std::cerr << "condsim run: " << failure << "\n";
    return 3;
  }
  return 0;
}

int RunScene(const std::vector<std::string>& argv) {
  const Args args(argv, {"--backend", "--envs", "--nodes", "--tol", "--max-iters", "--steps", "--duration", "--out", "--threads", "--seed"},
                  {"--help", "--quiet", "--no-output", "--verbose"}, "run");
  if (args.Flag("--help")) {
    std::cout << "usage: condsim run SCENE.json [--backend cpu|cuda|auto] [--steps N | --duration S]\n"
                 "       [--out DIR] [--threads N] [--seed N] [--quiet] [--verbose] [--no-output]\n"
                 "steps a scene file (docs/scene-format.md): progress, a summary table and\n"
                 "DIR/summary.json (default DIR: condsim-out/<scene name>), and DIR/output.h5 + .xmf\n"
                 "when the scene sets output.frame_rate (--no-output: skip it).\n"
                 "--seed N (0 .. 2^53 - 1): draw the scene's randomized values (its \"randomization\" ranges) with seed N;\n"
                 "without it the values written in the file are used.\n"
                 "--verbose: one line per step (iterations, residual, contacts, penetration, time).\n"
                 "Without a scene: a built-in check of the backend path (one implicit step of a batch\n"
                 "of hanging chains) with [--envs 8] [--nodes 1000] [--tol 1e-10] [--max-iters 10000].\n";
    return 0;
  }
  if (!args.positional().empty()) return RunSceneFile(args);
  const BackendSelection sel = MakeBackend(ParseBackendChoice(args.Get("--backend", "auto")));
  const Index envs = Index(args.GetInt("--envs", 8, 1, 1000000));
  const Index nodes = Index(args.GetInt("--nodes", 1000, 1, 10000000));
  const Index max_iters = Index(args.GetInt("--max-iters", 10000, 1, 100000000));
  const double tol = std::stod(args.Get("--tol", "1e-10"));
  if (!(tol > 0 && std::isfinite(tol))) throw Error("run: --tol must be a positive number");
  Backend& b = *sel.backend;
  std::cout << "condsim run: no scene given; built-in check 'hanging chains' (condsim run SCENE.json steps a scene)\n"
            << "backend: " << b.Describe() << " (" << sel.reason << ")\n";

  // environment e: mass 0.01 kg/node, stiffness 100 * (1 + e/envs) N/m, dt = 0.01 s, g = -9.81 z
  const Scalar h = 0.01, m = 0.01, g = -9.81;
  std::vector<BlockMatrix> chains;
  for (Index e = 0; e < envs; ++e) chains.push_back(ChainMatrix(nodes, m, 100 * (1 + Scalar(e) / envs), h));
  const PackedBatch batch = PackBlockDiagonal(chains);
  const Index n = batch.matrix.pattern.rows();
  std::vector<Scalar> hb(static_cast<std::size_t>(n), 0), hw(static_cast<std::size_t>(n));
  for (Index i = 2; i < n; i += 3) hb[i] = m * h * g;
  // step matrix W = omega / diag(A), omega = 2/3 (damped Jacobi)
  for (Index r = 0; r < batch.matrix.pattern.block_rows; ++r) {
    const Index k = batch.matrix.pattern.Find(r, r);
    for (Index i = 0; i < 3; ++i) hw[std::size_t(r) * 3 + i] = Scalar(2) / 3 / batch.matrix.Block(k)[i * 4];
  }
  auto a = b.CreateMatrix(batch.matrix.pattern);
  a->SetValues(batch.matrix.values);
  Array<Scalar> rhs(&b, hb), w(&b, hw), v(&b, n), r(&b, n), dv(&b, n);
  Array<Index> offsets(&b, batch.layout.DofOffsets());
  Array<Scalar> env_step(&b, envs), env_res(&b, envs), env_rhs(&b, envs);
  b.Fill(0, &v);
  b.SegmentedMaxAbs(rhs, offsets, &env_rhs);
  Index iters = 0;
  Scalar step = 0;
  for (; iters < max_iters; ++iters) {
    a->Multiply(1, v, 0, &r);   // r = A v
    b.Axpby(-1, rhs, 1, &r);    // r = A v - b
    b.Multiply(w, r, &dv);      // dv = W r
    b.Axpby(-1, dv, 1, &v);     // v <- v - W (A v - b)   (eq. 20 without contacts)
    step = b.MaxAbs(dv);
    if (!std::isfinite(step)) throw Error("run: the iteration diverged (non-finite update) at iteration " + std::to_string(iters));
    if (step <= tol) break;
  }
  // final per-environment residual max |A v - b| relative to max |b|
  a->Multiply(1, v, 0, &r);
  b.Axpby(-1, rhs, 1, &r);
  b.SegmentedMaxAbs(r, offsets, &env_res);
  const std::vector<Scalar> res = env_res.ToHost(), rb = env_rhs.ToHost();
  const std::vector<Scalar> hv = v.ToHost();
  Scalar worst = 0;
  for (Index e = 0; e < envs; ++e) worst = std::max(worst, res[e] / rb[e]);
  std::printf("environments %d, nodes/env %d, DOFs %d, iterations %d, last update %.3e m/s\n", envs, nodes, n, iters + 1, step);
  std::printf("env 0: tip velocity v_z = %.6e m/s, relative residual %.3e\n", hv[std::size_t(nodes) * 3 - 1], res[0] / rb[0]);
  std::printf("worst relative residual over environments: %.3e\n", worst);
  // converged: relative residual below 1e-6 (double) or 1000 ulp (float builds)
  const Scalar accept = std::max<Scalar>(Scalar(1e-6), 1000 * kEpsilon);
  std::printf("summary: %s\n", worst < accept ? "converged" : "NOT converged");
  return worst < accept ? 0 : 3;
}

}  // namespace condsim::app
