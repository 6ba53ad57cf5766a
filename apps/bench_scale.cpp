// `condsim bench scale`: how a whole step scales with the problem size, per backend and thread
// count. For each (backend, threads, size) it builds the world, runs --warmup steps, then
// --steps measured steps, and records per step the DOFs, contacts, the stage times (detection,
// assembly of eq. 9, the COND solve), the iterations, the time per iteration, the bytes one
// iteration moves under a stated traffic model and that traffic's rate as a fraction of the
// backend's measured copy bandwidth (the roofline fraction); each step's wall time and the
// process's CPU time over it (all threads). Writes scale.csv (one row per
// measured step), scale.json (the rows, the per-size medians, machine, backends and bandwidths)
// and, through scripts/plot_scale.py with Debian's /usr/bin/python3 and matplotlib, PNG plots.
//
// Traffic model of one COND iteration (the compulsory traffic of an iteration that reads A once
// and each vector once; docs/performance.md, "Scaling"):
//   bytes = S nnz + I nnz_blocks + I (block_rows + 1) + k S n,   k = 6
// with S = sizeof(Scalar), I = sizeof(Index), nnz the scalar entries of A (9 per 3x3 block),
// n its rows; the k = 6 vector passes are v, b, the diagonal W and v_prev read, v and v_prev
// written (r = A v - b, v* = v - W r and the Chebyshev combination, eq. 20 and 38; r, u and the
// difference kept in registers). Contact terms (3 impulses per contact) are left out.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include <time.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "condsim/backend.h"
#include "condsim/build_commit.h"
#include "condsim/build_info.h"
#include "io/output.h"
#include "io/scene.h"

namespace condsim::app {
namespace {

// vector passes of one iteration in the traffic model (see the file comment)
constexpr int kVectorPasses = 6;
// copy-bandwidth arrays: 2^24 scalars each (128 MiB in double), far beyond the caches
constexpr Index kCopyScalars = Index(1) << 24;

// a usage error: the message names the option and its valid values; exit code 2
struct UsageError : Error {
  using Error::Error;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// a number parsed whole (false when trailing characters are left or it is not finite)
bool ParseNumber(const std::string& text, double* v) {
  std::size_t used = 0;
  try {
    *v = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && std::isfinite(*v);
}

// a file relative to the working directory, else to the source tree the binary was built from
std::string FindFile(const std::string& relative) {
  if (std::filesystem::exists(relative)) return relative;
#ifdef CONDSIM_SOURCE_DIR
  const std::string in_source = std::string(CONDSIM_SOURCE_DIR) + "/" + relative;
  if (std::filesystem::exists(in_source)) return in_source;
#endif
  return relative;
}

// the size factor's per-axis refinement: cells c -> max(1, round(c f^(1/3))), rounding halves up
// (the soft mat's 3 (nx + 1)(ny + 1)(nz + 1) DOFs grow about like f: 2592 f + lower powers)
Index RefinedCells(Index cells, double factor) {
  return std::max<Index>(1, Index(std::floor(double(cells) * std::cbrt(factor) + 0.5)));
}

// the scene of one size: soft_mat with every box-generated FEM mesh refined by the factor;
// cable_batch the scene itself (copied N times by the caller). `cells` describes the mesh
Scene SizedScene(const std::string& scenario, const std::string& path, double size, std::string* cells) {
  if (scenario != "soft_mat") return LoadScene(path);
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the scene file");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw Error(path + ": " + e.what());
  }
  cells->clear();
  if (j.contains("fem_bodies")) {
    for (auto& body : j["fem_bodies"]) {
      if (!body.contains("mesh") || body["mesh"].value("generator", "") != "box") continue;
      auto& c = body["mesh"]["cells"];
      for (auto& v : c) v = RefinedCells(v.get<Index>(), size);
      if (!cells->empty()) *cells += " ";
      *cells += std::to_string(c[0].get<Index>()) + "x" + std::to_string(c[1].get<Index>()) + "x" +
                std::to_string(c[2].get<Index>());
    }
  }
  if (cells->empty()) throw Error(path + ": soft_mat scaling needs an FEM body with a box mesh generator (/fem_bodies/*/mesh)");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseScene(j.dump(), path, dir.empty() ? "." : dir);
}

// the process's CPU time, all threads [s] (a loaded machine stretches wall time, not this)
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// the backend's copy bandwidth [GB/s]: 2 S n bytes per Copy of n scalars, median of 7 after one
// warm-up (memmove on the backend's threads on the CPU, device-to-device copy on CUDA)
double CopyBandwidth(Backend& b) {
  Array<Scalar> x(&b, kCopyScalars), y(&b, kCopyScalars);
  b.Fill(1, &x);
  b.Fill(0, &y);
  std::vector<double> t;
  for (int r = 0; r < 8; ++r) {
    b.Synchronize();
    const auto start = std::chrono::steady_clock::now();
    b.Copy(x, &y);
    b.Synchronize();
    if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * double(kCopyScalars) * sizeof(Scalar) / Median(t) / 1e9;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

// one measured step
struct StepRow {
  std::string backend, cells;
  int threads = 0;
  double size = 0;
  Index envs = 1, dofs = 0, rows = 0, blocks = 0, contacts = 0;
  int step = 0, iterations = 0;
  bool converged = false;
  double step_s = 0, step_cpu_s = 0, detect_s = 0, assemble_s = 0, solve_s = 0, setup_s = 0, iterate_s = 0, inelastic_s = 0, other_s = 0;
  double iter_s = 0, bytes_per_iter = 0, gbs = 0, copy_gbs = 0, fraction = 0;
};

nlohmann::json ToJson(const StepRow& r) {
  return {{"backend", r.backend}, {"threads", r.threads}, {"size", r.size}, {"cells", r.cells}, {"envs", r.envs},
          {"dofs", r.dofs}, {"matrix_rows", r.rows}, {"matrix_blocks", r.blocks}, {"step", r.step},
          {"contacts", r.contacts}, {"iterations", r.iterations}, {"converged", r.converged}, {"step_s", r.step_s}, {"step_cpu_s", r.step_cpu_s},
          {"detect_s", r.detect_s}, {"assemble_s", r.assemble_s}, {"solve_s", r.solve_s}, {"solve_setup_s", r.setup_s},
          {"iterate_s", r.iterate_s}, {"inelastic_s", r.inelastic_s}, {"other_s", r.other_s}, {"iteration_s", r.iter_s},
          {"bytes_per_iteration", r.bytes_per_iter}, {"iteration_gbs", r.gbs}, {"copy_gbs", r.copy_gbs},
          {"roofline_fraction", r.fraction}};
}

const char* kCsvHeader =
    "scenario,backend,threads,size,cells,envs,dofs,matrix_rows,matrix_blocks,step,contacts,iterations,converged,"
    "step_s,step_cpu_s,detect_s,assemble_s,solve_s,solve_setup_s,iterate_s,inelastic_s,other_s,iteration_s,bytes_per_iteration,"
    "iteration_gbs,copy_gbs,roofline_fraction\n";

std::string CsvLine(const std::string& scenario, const StepRow& r) {
  std::ostringstream o;
  o.precision(9);
  o << scenario << "," << r.backend << "," << r.threads << "," << r.size << "," << r.cells << "," << r.envs << ","
    << r.dofs << "," << r.rows << "," << r.blocks << "," << r.step << "," << r.contacts << "," << r.iterations << ","
    << (r.converged ? 1 : 0) << "," << r.step_s << "," << r.step_cpu_s << "," << r.detect_s << "," << r.assemble_s << "," << r.solve_s << ","
    << r.setup_s << "," << r.iterate_s << "," << r.inelastic_s << "," << r.other_s << "," << r.iter_s << ","
    << r.bytes_per_iter << "," << r.gbs << "," << r.copy_gbs << "," << r.fraction << "\n";
  return o.str();
}

// the medians over the measured steps of one (backend, threads, size)
nlohmann::json Summary(const std::vector<StepRow>& rows) {
  const auto med = [&](double StepRow::*field) {
    std::vector<double> v;
    for (const StepRow& r : rows) v.push_back(r.*field);
    return Median(v);
  };
  const auto med_int = [&](auto field) {
    std::vector<double> v;
    for (const StepRow& r : rows) v.push_back(double(r.*field));
    return Median(v);
  };
  const StepRow& f = rows.front();
  bool all_converged = true;
  for (const StepRow& r : rows) all_converged = all_converged && r.converged;
  return {{"backend", f.backend}, {"threads", f.threads}, {"size", f.size}, {"cells", f.cells}, {"envs", f.envs},
          {"dofs", f.dofs}, {"steps", rows.size()}, {"all_converged", all_converged},
          {"matrix_rows", med_int(&StepRow::rows)}, {"matrix_blocks", med_int(&StepRow::blocks)},
          {"contacts", med_int(&StepRow::contacts)}, {"iterations", med_int(&StepRow::iterations)},
          {"step_s", med(&StepRow::step_s)}, {"step_cpu_s", med(&StepRow::step_cpu_s)}, {"detect_s", med(&StepRow::detect_s)}, {"assemble_s", med(&StepRow::assemble_s)},
          {"solve_s", med(&StepRow::solve_s)}, {"solve_setup_s", med(&StepRow::setup_s)}, {"iterate_s", med(&StepRow::iterate_s)},
          {"inelastic_s", med(&StepRow::inelastic_s)}, {"other_s", med(&StepRow::other_s)}, {"iteration_s", med(&StepRow::iter_s)},
          {"bytes_per_iteration", med(&StepRow::bytes_per_iter)}, {"iteration_gbs", med(&StepRow::gbs)},
          {"copy_gbs", f.copy_gbs}, {"roofline_fraction", med(&StepRow::fraction)}};
}

// one (backend, threads, size): build, warm up, measure
std::vector<StepRow> MeasureSize(const std::string& scenario, const std::string& scene_path, double size, Backend* backend,
                                 const std::string& backend_name, int threads, double copy_gbs, int warmup, int steps) {
  std::string cells;
  const Scene base = SizedScene(scenario, scene_path, size, &cells);
  // cable_batch: N copies of the scene as environments of one World (BuildBatch)
  const Index envs = scenario == "cable_batch" ? Index(size) : 1;
  std::vector<Scene> scenes(std::size_t(envs), base);
  std::vector<SceneWorld> sws = BuildBatch(scenes, backend);
  World& world = *sws[0].world;
  double cpu_s = 0;
  const auto step = [&] {
    for (std::size_t e = 0; e < scenes.size(); ++e) ApplyControls(scenes[e], &sws[e]);
    const double c0 = ProcessCpuSeconds();
    StepStats st = world.Step();
    backend->Synchronize();
    cpu_s = ProcessCpuSeconds() - c0;
    return st;
  };
  for (int k = 0; k < warmup; ++k) step();
  std::vector<StepRow> rows;
  for (int k = 0; k < steps; ++k) {
    const StepStats st = step();
    StepRow r;
    r.backend = backend_name;
    r.threads = threads;
    r.size = size;
    r.cells = cells;
    r.envs = envs;
    r.dofs = world.num_dofs();
    r.rows = st.matrix_rows;
    r.blocks = st.matrix_blocks;
    r.step = warmup + k;
    r.contacts = st.contacts;
    r.iterations = st.cond.iterations;
    r.converged = st.cond.converged;
    r.step_s = st.step_seconds;
    r.step_cpu_s = cpu_s;
    r.detect_s = st.detect_seconds;
    r.assemble_s = st.assemble_seconds;
    r.solve_s = st.solve_seconds;
    r.setup_s = st.cond.setup_seconds;
    r.iterate_s = st.cond.iterate_seconds;
    r.inelastic_s = st.inelastic_seconds;
    r.other_s = std::max(0.0, r.step_s - r.detect_s - r.assemble_s - r.solve_s - r.inelastic_s);
    r.iter_s = r.iterations > 0 ? r.iterate_s / r.iterations : 0;
    // the traffic model (file comment): A once (values, block columns, row pointers) + k vectors
    const double block_rows = double(r.rows) / 3.0;
    r.bytes_per_iter = double(r.blocks) * 9 * sizeof(Scalar) + double(r.blocks) * sizeof(Index) +
                       (block_rows + 1) * sizeof(Index) + double(kVectorPasses) * double(r.rows) * sizeof(Scalar);
    r.gbs = r.iter_s > 0 ? r.bytes_per_iter / r.iter_s / 1e9 : 0;
    r.copy_gbs = copy_gbs;
    r.fraction = copy_gbs > 0 ? r.gbs / copy_gbs : 0;
    rows.push_back(r);
  }
  return rows;
}

const char* kUsage =
    "usage: condsim bench scale [--scenario soft_mat|cable_batch] [--sizes LIST] [--backends cpu,cuda]\n"
    "       [--threads 1,2,...] [--steps 3] [--warmup 1] [--out bench-scale] [--scene FILE]\n"
    "Whole steps of a scene at growing sizes: per step DOFs, contacts, detection / assembly / solver time,\n"
    "iterations, time per iteration, bytes per iteration (A once + 6 vector passes) and the fraction of the\n"
    "backend's measured copy bandwidth; medians over the --steps measured steps after --warmup steps.\n"
    "  soft_mat     scenes/soft_mat_folding.json, its box mesh refined: size f multiplies the cells per axis\n"
    "               by f^(1/3) (rounded, at least 1): 36x12x2 cells -> 3 (nx+1)(ny+1)(nz+1) DOFs (f = 0.2: 1056,\n"
    "               1: 4329, 10: 31995, 100: 287280, 400: 1136352; about 2600 f when large). Default sizes 0.2,1,3.\n"
    "  cable_batch  N copies of scenes/cable_winding.json as environments of one World (960 N DOFs);\n"
    "               sizes are N (integers). Default sizes 1,4,16.\n"
    "--backends: cpu and/or cuda (cuda is skipped, with the reason, when no device is usable).\n"
    "--threads: CPU thread counts (default 1 and the hardware threads); cuda runs once.\n"
    "Writes DIR/scale.csv (one row per measured step), DIR/scale.json (the rows, per-size medians, machine,\n"
    "backends, copy bandwidths) and DIR/*.png via scripts/plot_scale.py (Debian's /usr/bin/python3 with\n"
    "matplotlib). --scene replaces the scenario's scene file.\n";

}  // namespace

int RunBenchScale(const std::vector<std::string>& argv) {
  const Args args(argv, {"--scenario", "--sizes", "--backends", "--threads", "--steps", "--warmup", "--out", "--scene"},
                  {"--help"}, "bench scale");
  if (args.Flag("--help")) {
    std::cout << kUsage;
    return 0;
  }
  std::string scenario, scene_path, out_dir;
  std::vector<double> sizes;
  std::vector<std::string> backends;
  std::vector<int> thread_counts;
  int steps = 0, warmup = 0;
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  try {
    if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional()[0] + "'");
    scenario = args.Get("--scenario", "soft_mat");
    if (scenario != "soft_mat" && scenario != "cable_batch")
      throw UsageError("option --scenario: unknown scenario '" + scenario + "' (valid: soft_mat, cable_batch)");
    const bool batch = scenario == "cable_batch";
    for (const std::string& s : SplitList(args.Get("--sizes", batch ? "1,4,16" : "0.2,1,3"))) {
      double v = 0;
      const bool ok = ParseNumber(s, &v) && v > 0 && (!batch || (v == std::floor(v) && v <= 1e6)) && v <= 1e4;
      if (!ok) {
        throw UsageError("option --sizes: '" + s + "' is not valid (valid: a comma-separated list of " +
                         (batch ? std::string("environment counts, integers 1..1000000") : std::string("size factors in (0, 10000]")) + ")");
      }
      sizes.push_back(v);
    }
    if (sizes.empty()) throw UsageError("option --sizes: empty list (valid: a comma-separated list of positive numbers)");
    for (const std::string& b : SplitList(args.Get("--backends", "cpu,cuda"))) {
      if (b != "cpu" && b != "cuda") throw UsageError("option --backends: unknown backend '" + b + "' (valid: cpu, cuda)");
      if (std::find(backends.begin(), backends.end(), b) == backends.end()) backends.push_back(b);
    }
    if (backends.empty()) throw UsageError("option --backends: empty list (valid: cpu, cuda)");
    const std::string default_threads = hw > 1 ? "1," + std::to_string(hw) : "1";
    for (const std::string& t : SplitList(args.Get("--threads", default_threads))) {
      double v = 0;
      if (!ParseNumber(t, &v) || v != std::floor(v) || v < 1 || v > hw)
        throw UsageError("option --threads: '" + t + "' is not valid (valid: a comma-separated list of integers 1.." +
                         std::to_string(hw) + ", the hardware threads)");
      if (std::find(thread_counts.begin(), thread_counts.end(), int(v)) == thread_counts.end()) thread_counts.push_back(int(v));
    }
    if (thread_counts.empty()) throw UsageError("option --threads: empty list (valid: integers 1.." + std::to_string(hw) + ")");
    steps = int(args.GetInt("--steps", 3, 1, 1000000));
    warmup = int(args.GetInt("--warmup", 1, 0, 1000000));
    out_dir = args.Get("--out", "bench-scale");
    scene_path = args.Get("--scene", FindFile(batch ? "scenes/cable_winding.json" : "scenes/soft_mat_folding.json"));
  } catch (const Error& e) {
    std::cerr << "condsim bench scale: error: " << e.what() << "\n" << "(see condsim bench scale --help)\n";
    return 2;
  }
  Preflight(out_dir);

  // the backends to run: cpu per thread count, cuda once when a device is usable
  struct Config {
    BackendChoice choice;
    int threads;
  };
  std::vector<Config> configs;
  nlohmann::json cuda_info = {{"requested", false}};
  for (const std::string& b : backends) {
    if (b == "cpu") {
      for (int t : thread_counts) configs.push_back({BackendChoice::kCpu, t});
    } else {
      const CudaProbe probe = ProbeCuda(0);
      cuda_info = {{"requested", true}, {"compiled", probe.compiled}, {"usable", probe.usable}, {"reason", probe.reason},
                   {"device", probe.device_name}, {"total_memory", probe.total_memory}};
      if (probe.usable) {
        configs.push_back({BackendChoice::kCuda, 0});
      } else {
        std::cout << "# cuda skipped: " << probe.reason << "\n";
      }
    }
  }

  std::printf("# condsim bench scale %s (%s): %d warm-up + %d measured steps per size, medians; Scalar %zu bytes\n",
              scenario.c_str(), scene_path.c_str(), warmup, steps, sizeof(Scalar));
  std::printf("%-6s %4s %8s %-10s %9s %8s %6s %10s %10s %10s %10s %10s %10s %9s %6s\n", "backend", "thr", "size", "cells", "dofs",
              "contacts", "iters", "step_ms", "cpu_ms", "detect_ms", "assem_ms", "solve_ms", "iter_ms", "GB/s", "ofcopy");
  std::string csv = kCsvHeader;
  nlohmann::json step_rows = nlohmann::json::array(), size_rows = nlohmann::json::array(), backend_rows = nlohmann::json::array();
  for (const Config& c : configs) {
    BackendOptions opt;
    opt.cpu_threads = c.threads;
    BackendSelection sel = MakeBackend(c.choice, opt);
    Backend& backend = *sel.backend;
    const std::string name = c.choice == BackendChoice::kCpu ? "cpu" : "cuda";
    const double copy_gbs = CopyBandwidth(backend);
    std::printf("# %s: copy bandwidth %.2f GB/s (%s)\n", backend.Describe().c_str(), copy_gbs, name.c_str());
    std::fflush(stdout);
    backend_rows.push_back({{"backend", name}, {"threads", c.threads}, {"describe", backend.Describe()},
                            {"copy_gbs", copy_gbs}, {"copy_bytes", 2.0 * double(kCopyScalars) * sizeof(Scalar)}});
    for (double size : sizes) {
      const std::vector<StepRow> rows = MeasureSize(scenario, scene_path, size, &backend, name, c.threads, copy_gbs, warmup, steps);
      for (const StepRow& r : rows) {
        csv += CsvLine(scenario, r);
        step_rows.push_back(ToJson(r));
      }
      const nlohmann::json s = Summary(rows);
      size_rows.push_back(s);
      std::printf("%-6s %4d %8g %-10s %9lld %8.0f %6.0f %10.2f %10.2f %10.2f %10.2f %10.2f %10.4f %9.2f %6.3f%s\n", name.c_str(), c.threads,
                  size, rows.front().cells.c_str(), (long long)rows.front().dofs, s["contacts"].get<double>(),
                  s["iterations"].get<double>(), s["step_s"].get<double>() * 1e3, s["step_cpu_s"].get<double>() * 1e3,
                  s["detect_s"].get<double>() * 1e3,
                  s["assemble_s"].get<double>() * 1e3, s["solve_s"].get<double>() * 1e3, s["iteration_s"].get<double>() * 1e3,
                  s["iteration_gbs"].get<double>(), s["roofline_fraction"].get<double>(),
                  s["all_converged"].get<bool>() ? "" : "  (not converged)");
      std::fflush(stdout);
    }
  }

  nlohmann::json doc = {
      {"command", "condsim bench scale"},
      {"arguments", argv},
      {"scenario", scenario},
      {"scene", scene_path},
      {"date", UtcNow()},
      {"commit", CONDSIM_GIT_COMMIT},
      {"version", CONDSIM_VERSION_STRING},
      {"build", {{"type", CONDSIM_BUILD_TYPE}, {"compiler", CONDSIM_CXX_COMPILER}, {"scalar_bytes", sizeof(Scalar)},
                 {"index_bytes", sizeof(Index)}}},
      {"machine", {{"cpu", CpuModel()}, {"hardware_threads", hw}}},
      {"warmup", warmup},
      {"steps", steps},
      {"csv_rows", "one row per measured step"},
      {"traffic_model",
       {{"formula", "bytes = S*nnz + I*nnz_blocks + I*(block_rows+1) + k*S*n"},
        {"k_vector_passes", kVectorPasses},
        {"note", "A read once (values, block column indices, row pointers); v, b, W, v_prev read and v, v_prev written; contact terms left out"}}},
      {"cuda", cuda_info},
      {"backends", backend_rows},
      {"sizes", size_rows},
      {"rows", step_rows}};
  const std::string dir = std::filesystem::path(out_dir).string();
  WriteTextAtomically(dir + "/scale.csv", csv);
  WriteTextAtomically(dir + "/scale.json", doc.dump(2) + "\n");
  std::cout << "wrote " << dir << "/scale.csv (one row per measured step) and " << dir << "/scale.json" << std::endl;

  // the plots: Debian's python3 with matplotlib, else how to make them
  const std::string script = FindFile("scripts/plot_scale.py");
  const std::string python = "/usr/bin/python3";
  const bool have_python = std::filesystem::exists(python) &&
                           std::system((python + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0;
  const std::string plot_cmd = python + " '" + script + "' '" + dir + "'";
  if (have_python && std::filesystem::exists(script)) {
    if (std::system(plot_cmd.c_str()) != 0) {
      std::cerr << "condsim bench scale: the plot script failed: " << plot_cmd << "\n";
      return 1;
    }
  } else {
    std::cout << "plots skipped: " << (have_python ? script + " not found" : python + " with matplotlib not found")
              << "; make them with `apt-get install python3-matplotlib` and `" << plot_cmd << "`\n";
  }
  return 0;
}

}  // namespace condsim::app
