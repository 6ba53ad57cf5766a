// `condsim bench spmv|vector|...|batch`: throughput of the backend primitives, in GB/s of compulsory
// memory traffic, with each backend's measured copy bandwidth for reference. Medians over
// --reps timed repetitions after warm-up; every rep ends with a Synchronize.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/args.h"
#include "apps/bandwidth.h"
#include "condsim/backend.h"
#include "condsim/vector_ops.h"
#include "cpu/parallel.h"
#include "models/cond/cond_solver.h"
#include "fixtures/random_scene.h"
#include "models/fem/fem_model.h"
#include "fixtures/mass_spring.h"
#include "models/rod/rod_model.h"
#include "io/output.h"
#include "io/scene.h"

namespace condsim::app {
namespace {

// 7-point grid stencil of block_dim x block_dim blocks (a FEM-like pattern: ~7 blocks per block row)
BlockMatrix GridMatrix(Index target_rows, std::mt19937_64& rng, Index block_dim = 3) {
  const double nodes = double(target_rows) / double(block_dim);
  const Index side = std::max<Index>(2, Index(std::cbrt(nodes) + 0.5));
  const Index nx = side, ny = side, nz = std::max<Index>(1, Index(nodes / double(side * side) + 0.5));
  const Index n = nx * ny * nz;
  BlockPattern p;
  p.block_dim = block_dim;
  p.block_rows = p.block_cols = n;
  p.row_ptr.assign(std::size_t(n) + 1, 0);
  p.col_idx.reserve(std::size_t(n) * 7);
  for (Index k = 0; k < nz; ++k)
    for (Index j = 0; j < ny; ++j)
      for (Index i = 0; i < nx; ++i) {
        const Index id = (k * ny + j) * nx + i;
        // neighbours in increasing index order
        if (k > 0) p.col_idx.push_back(id - nx * ny);
        if (j > 0) p.col_idx.push_back(id - nx);
        if (i > 0) p.col_idx.push_back(id - 1);
        p.col_idx.push_back(id);
        if (i + 1 < nx) p.col_idx.push_back(id + 1);
        if (j + 1 < ny) p.col_idx.push_back(id + nx);
        if (k + 1 < nz) p.col_idx.push_back(id + nx * ny);
        p.row_ptr[std::size_t(id) + 1] = static_cast<Index>(p.col_idx.size());
      }
  BlockMatrix m(std::move(p));
  std::uniform_real_distribution<Scalar> u(-1, 1);
  for (Scalar& v : m.values) v = u(rng);
  return m;
}

double MedianSeconds(int reps, Backend& backend, const std::function<void()>& op) {
  for (int i = 0; i < 3; ++i) op();
  backend.Synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    op();
    backend.Synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void Row(const std::string& backend, const std::string& op, Index rows, double bytes,
         double seconds, double copy_gbs) {
  const double gbs = bytes / seconds / 1e9;
  std::printf("%-26s %-8s %10d %12.4f %9.2f %8.2f\n", backend.c_str(), op.c_str(), rows,
              seconds * 1e3, gbs, copy_gbs > 0 ? gbs / copy_gbs : 0.0);
}

// a backend to measure, with its row label
struct Target {
  std::unique_ptr<Backend> backend;
  std::string name;
};
Target MakeTarget(BackendChoice choice, SpmvFormat format, int threads) {
  BackendOptions opt;
  opt.cpu_threads = threads;
  opt.spmv_format = format;
  Target t{MakeBackend(choice, opt).backend, ""};
  t.name = t.backend->kind() == BackendKind::kCpu ? t.backend->Describe()
                                                  : std::string("cuda/") + ToString(format);
  return t;
}

// reps + 1 solves from v = 0 (the first warms up): the last stats and the medians of the
// solve's wall time and of its setup part [s]
struct SolveTiming {
  CondStats stats;
  double solve = 0, setup = 0;
};
SolveTiming MedianSolve(int reps, Backend& b, CondSolver& solver, DeviceBlockMatrix& a, const Array<Scalar>& rhs, Array<Scalar>* v) {
  std::vector<double> solve, setup;
  SolveTiming out;
  for (int r = 0; r < std::max(reps, 1) + 1; ++r) {
    b.Fill(0, v);
    const auto t0 = std::chrono::steady_clock::now();
    out.stats = solver.Solve(a, rhs, v);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == 0) continue;
    solve.push_back(dt);
    setup.push_back(out.stats.setup_seconds);
  }
  std::sort(solve.begin(), solve.end());
  std::sort(setup.begin(), setup.end());
  out.solve = solve[solve.size() / 2];
  out.setup = setup[setup.size() / 2];
  return out;
}

// `bench solver`: COND on mass-spring grids lying on a plane (every node in contact), from
// min to max DOFs by factors of 10: iterations, time per solve and per iteration, and the
// iteration's cost in units of one SpMV of the same matrix (the solver's roofline)
int BenchSolver(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, Index min_dofs,
                Index max_dofs, int reps, int threads, std::mt19937_64& rng) {
  std::printf("%-26s %10s %9s %6s %11s %11s %9s %8s\n", "backend", "dofs", "contacts", "iters",
              "solve_ms", "iter_ms", "spmv_ms", "iter/spmv");
  for (Index dofs = min_dofs; dofs <= max_dofs; dofs = dofs > max_dofs / 10 ? max_dofs + 1 : dofs * 10) {
    const Index side = std::max<Index>(2, Index(std::sqrt(double(dofs) / 3) + 0.5));
    std::uniform_real_distribution<Scalar> u(-0.5, 0.5);
    std::vector<Scalar> v0(std::size_t(3) * side * side);
    for (std::size_t k = 0; k < v0.size(); ++k) v0[k] = k % 3 == 2 ? Scalar(-0.2) : u(rng);
    // 1 cm spacing, 10 g nodes, 1e3 N/m springs, 10 ms steps, mu 0.5
    const MassSpringSystem sys = MakeMassSpringGrid(side, side, 0.01, 0.01, 1e3, 0.01, 9.81, 0.5, v0);
    const Index n = sys.a.pattern.rows();
    for (const auto& [choice, format] : configs) {
      const Target target = MakeTarget(choice, format, threads);
      Backend& b = *target.backend;
      auto a = b.CreateMatrix(sys.a.pattern);
      a->SetValues(sys.a.values);
      Array<Scalar> rhs(&b, sys.b), v(&b, n), y(&b, n);
      CondParams params;
      params.theta_threshold = 1e-8;
      params.max_iterations = 10000;
      CondSolver solver(&b, params);
      solver.SetContacts(sys.contacts);
      const SolveTiming timing = MedianSolve(reps, b, solver, *a, rhs, &v);
      const CondStats& st = timing.stats;
      const double solve = timing.solve;
      const double spmv = MedianSeconds(std::max(reps, 5), b, [&] { a->Multiply(1, v, 0, &y); });
      std::printf("%-26s %10d %9d %6d %11.3f %11.4f %9.4f %8.1f\n", target.name.c_str(), n, sys.contacts.size(),
                  st.iterations, solve * 1e3, solve / st.iterations * 1e3, spmv * 1e3,
                  solve / st.iterations / spmv);
    }
  }
  return 0;
}

// `bench fem`: one co-rotational FEM assembly (elements + b + A) per step on box meshes of about
// min..max tetrahedra (factors of 10): median time per assembly and per element
int BenchFem(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, Index min_tets,
             Index max_tets, int reps, int threads) {
  std::printf("%-26s %10s %10s %12s %12s\n", "backend", "tets", "nodes", "assemble_ms", "ns/tet");
  for (Index tets = min_tets; tets <= max_tets; tets = tets > max_tets / 10 ? max_tets + 1 : tets * 10) {
    const Index side = std::max<Index>(1, Index(std::cbrt(double(tets) / 6) + 0.5));
    const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(1, 1, 1), side, side, side);
    for (const auto& [choice, format] : configs) {
      const Target target = MakeTarget(choice, format, threads);
      Backend& b = *target.backend;
      FemModel fem(&b, mesh, FemMaterial(), "bench box");
      auto a = b.CreateMatrix(fem.pattern());
      Array<Scalar> x(&b, mesh.x), v(&b, std::vector<Scalar>(mesh.x.size(), 0)), rhs(&b, Index(mesh.x.size()));
      const double t = MedianSeconds(reps, b, [&] { fem.Assemble(x, v, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), &rhs); });
      std::printf("%-26s %10d %10d %12.3f %12.1f\n", target.name.c_str(), mesh.num_tets(), mesh.num_nodes(), t * 1e3,
                  t / mesh.num_tets() * 1e9);
    }
  }
  return 0;
}

// `bench modes`: COND on a soft FEM plate (the soft mat's 30 : 10 : 0.8 shape, E 75 kPa, nu 0.35,
// 1100 kg/m^3, two cells through the thickness) clamped at one short edge and released under
// gravity, t = 10 ms, theta_th 1e-6, for body-mode patch counts 1 (the whole plate's rigid
// motions), 8, 32 and 64: iterations, per-solve setup (incl. the patches' dense inverse) and
// solve time, time per iteration. Plates of about min..max nodes (factors of 10)
int BenchModes(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, Index min_nodes, Index max_nodes, int reps,
               int threads, const std::vector<Index>& patch_counts, int max_iterations) {
  std::printf("%-26s %8s %8s %7s %10s %10s %10s %9s %9s\n", "backend", "nodes", "patches", "iters", "setup_ms", "solve_ms", "iter_ms",
              "spmv_ms", "iter/spmv");
  for (Index nodes = min_nodes; nodes <= max_nodes; nodes = nodes > max_nodes / 10 ? max_nodes + 1 : nodes * 10) {
    // nx = 3 ny cells in the plane, 2 through the thickness: 3 (nx + 1)(ny + 1) nodes
    const Index ny = std::max<Index>(2, Index(std::sqrt(double(nodes) / 9.0)));
    const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.3, 0.1, 0.008), 3 * ny, ny, 2);
    std::vector<Index> clamped;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[0] < 1e-9) clamped.push_back(i);
    FemMaterial material;
    material.young = 75e3;
    material.poisson = 0.35;
    material.density = 1100;
    for (const auto& [choice, format] : configs) {
      const Target target = MakeTarget(choice, format, threads);
      Backend& b = *target.backend;
      FemModel fem(&b, mesh, material, "bench plate");
      fem.SetPrescribedNodes(clamped);
      fem.SetPrescribedVelocities(std::vector<Scalar>(3 * clamped.size(), 0));
      auto a = b.CreateMatrix(fem.pattern());
      Array<Scalar> x(&b, mesh.x), v(&b, std::vector<Scalar>(mesh.x.size(), 0)), rhs(&b, Index(mesh.x.size()));
      fem.Assemble(x, v, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), &rhs);
      // one SpMV of the plate's A, the unit of the iteration's cost. On one thread the times are
      // the thread's CPU time (a loaded machine deschedules it) and the iteration's time is that
      // of a solve less that of a 1-iteration solve, over the difference of iterations
      const bool cpu_time = b.kind() == BackendKind::kCpu && (threads == 1 || (threads == 0 && omp_get_max_threads() == 1));
      auto cpu_seconds = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
      };
      Array<Scalar> y(&b, Index(mesh.x.size()));
      double spmv = MedianSeconds(std::max(reps, 5), b, [&] { a->Multiply(1, rhs, 0, &y); });
      if (cpu_time) {
        std::vector<double> t;
        for (int r = 0; r < std::max(reps, 5); ++r) {
          const double t0 = cpu_seconds();
          a->Multiply(1, rhs, 0, &y);
          t.push_back(cpu_seconds() - t0);
        }
        std::sort(t.begin(), t.end());
        spmv = t[t.size() / 2];
        // the runtime-block-size loop every Multiply ran before the fixed sizes (the old SpMV)
        const BsrRowSpmvOp rt{3, a->row_ptr().data(), a->col_idx().data(), a->values().data(), 1, rhs.data(), 0, y.data()};
        t.clear();
        for (int r = 0; r < std::max(reps, 5); ++r) {
          const double t0 = cpu_seconds();
          cpu::ParallelFor(1, mesh.num_nodes(), rt);
          t.push_back(cpu_seconds() - t0);
        }
        std::sort(t.begin(), t.end());
        std::printf("# %d nodes: SpMV %.4f ms, runtime-loop SpMV %.4f ms (thread CPU time)\n", int(mesh.num_nodes()), spmv * 1e3,
                    t[t.size() / 2] * 1e3);
      }
      for (Index patches : patch_counts) for (bool fused : {true, false}) {
        // fused: the CPU's fused vector passes; "separate": the kernels one by one (the same bits)
        if (!fused && b.kind() != BackendKind::kCpu) continue;
        CondParams params;
        params.fused_passes = fused;
        params.theta_threshold = 1e-6;
        params.max_iterations = max_iterations;
        CondSolver solver(&b, params);
        BodyModes modes;
        AppendBodyPatches(GridPatches(mesh.x, patches), mesh.x, 0, &modes);
        solver.SetBodyModes(modes);
        solver.SetContacts(ContactSet());
        const SolveTiming timing = MedianSolve(reps, b, solver, *a, rhs, &v);
        const CondStats& st = timing.stats;
        const double t_setup = timing.setup, t_solve = timing.solve;
        double iter = (t_solve - t_setup) / std::max(st.iterations, 1);
        if (cpu_time && st.iterations > 1) {
          // CPU time: full solves and 1-iteration solves, medians
          CondParams one = params;
          one.max_iterations = 1;
          CondSolver short_solver(&b, one);
          short_solver.SetBodyModes(modes);
          short_solver.SetContacts(ContactSet());
          std::vector<double> full, first;
          for (int r = 0; r < std::max(reps, 1) + 1; ++r) {
            b.Fill(0, &v);
            double t0 = cpu_seconds();
            solver.Solve(*a, rhs, &v);
            full.push_back(cpu_seconds() - t0);
            b.Fill(0, &v);
            t0 = cpu_seconds();
            short_solver.Solve(*a, rhs, &v);
            first.push_back(cpu_seconds() - t0);
          }
          std::sort(full.begin(), full.end());
          std::sort(first.begin(), first.end());
          iter = (full[full.size() / 2] - first[first.size() / 2]) / (st.iterations - 1);
        }
        std::printf("%-26s %8d %8d %7d %10.3f %10.3f %10.4f %9.4f %9.2f%s\n", target.name.c_str(), mesh.num_nodes(), modes.size(),
                    st.iterations, t_setup * 1e3, t_solve * 1e3, iter * 1e3, spmv * 1e3, iter / spmv, fused ? "" : " separate");
      }
    }
  }
  return 0;
}

// `bench rod`: eq. 9 assembly and one COND solve (cables as chains) for one cable of 10^4
// segments and for a batch of 4096 cables of 160 segments (--max-cables to shrink it), each
// cable clamped at one end, released horizontally under gravity (the paper's cable parameters)
int BenchRod(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, int reps, int threads, Index max_cables) {
  std::printf("%-26s %8s %9s %10s %12s %10s %6s\n", "backend", "cables", "segments", "dofs", "assemble_ms", "solve_ms", "iters");
  RodMaterial m;  // r 2 mm, E 3 MPa, nu 0.49, rho 1259 (docs/rod.md)
  RodEnd clamp;
  clamp.attached = true;
  const std::pair<Index, Index> cases[2] = {{1, 10000}, {std::min<Index>(4096, max_cables), 160}};
  for (const auto& [count, segments] : cases) {
    std::vector<RodGeometry> cables;
    for (Index c = 0; c < count; ++c)
      cables.push_back(MakeStraightRod(Vec3(0, 0.01 * c, 0), Vec3(1, 0, 0), 0.4 * segments / 320.0, segments));
    for (const auto& [choice, format] : configs) {
      const Target target = MakeTarget(choice, format, threads);
      Backend& b = *target.backend;
      RodModel rod(&b, cables, m, clamp, RodEnd{}, "bench cables");
      auto a = b.CreateMatrix(rod.pattern());
      Array<Scalar> v(&b, std::vector<Scalar>(rod.num_dofs(), 0)), vhat(&b, rod.num_dofs()), rhs(&b, rod.num_dofs());
      CondParams params;
      params.theta_threshold = 1e-8;
      CondSolver solver(&b, params);
      solver.SetChains(rod.ChainPtr(), rod.ChainNodes(), RodModel::kChainBand);
      const double assemble = MedianSeconds(reps, b, [&] { rod.Assemble(v, 0.01, Vec3(0, 0, -9.81), nullptr, a.get(), &rhs); });
      CondStats st;
      const double solve = MedianSeconds(reps, b, [&] {
        b.Fill(0, &vhat);
        st = solver.Solve(*a, rhs, &vhat);
      });
      std::printf("%-26s %8d %9d %10d %12.3f %10.3f %6d\n", target.name.c_str(), count, segments, rod.num_dofs(),
                  assemble * 1e3, solve * 1e3, st.iterations);
    }
  }
  return 0;
}

// `bench detect`: point-vs-triangle detection (models/collision/detector.h) on random crowded
// scenes of box surfaces (6^3 cells each, 218 surface vertices) moving at up to 0.1 m/s, from
// min..max vertices (factors of 10): median time of one Detect (grid build, sort, narrow phase,
// compaction and the download of the contacts), per vertex, and the contact count
int BenchDetect(const std::vector<std::pair<BackendChoice, SpmvFormat>>& configs, Index min_nodes, Index max_nodes, int reps,
                int threads, std::mt19937_64& rng) {
  std::printf("%-26s %10s %10s %10s %10s %12s %10s\n", "backend", "vertices", "triangles", "pairs", "contacts", "detect_ms",
              "ns/vertex");
  for (Index nodes = min_nodes; nodes <= max_nodes; nodes = nodes > max_nodes / 10 ? max_nodes + 1 : nodes * 10) {
    // 218 surface vertices per box; spread keeps the crowding (boxes fill the volume once over)
    const int bodies = std::max(1, int(nodes / 218));
    const Scalar size = 0.04, spread = size * std::cbrt(Scalar(bodies));
    const DetectSceneData d = RandomDetectScene(rng, bodies, 6, size, spread, 0.1, 0.002);
    for (const auto& [choice, format] : configs) {
      const Target target = MakeTarget(choice, format, threads);
      Backend& b = *target.backend;
      Detector det(&b, d.scene);
      det.Upload(0, d.x, d.v);
      Index contacts = 0;
      const double t = MedianSeconds(reps, b, [&] { contacts = det.Detect(0.01, 1e-3).size(); });
      std::printf("%-26s %10d %10zu %10d %10d %12.3f %10.1f\n", target.name.c_str(), d.scene.num_vertices(),
                  d.scene.tri_owner.size(), det.num_pairs(), contacts, t * 1e3, t / d.scene.num_vertices() * 1e9);
    }
  }
  return 0;
}


}  // namespace

int RunBench(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "scale") return RunBenchScale(std::vector<std::string>(argv.begin() + 1, argv.end()));
  const Args args(argv, {"--backend", "--min-rows", "--max-rows", "--min-dofs", "--max-dofs", "--min-tets", "--max-tets", "--reps",
                   "--threads", "--seed", "--block-dims", "--patches", "--max-iters", "--max-cables", "--min-nodes", "--max-nodes", "--max-envs", "--envs", "--group", "--steps", "--json", "--scenes"},
                  {"--help"}, "bench");
  if (args.Flag("--help") || args.positional().empty()) {
    std::cout << "usage: condsim bench spmv|vector|solver|fem|rod|detect|modes|batch|scale [--backend cpu|cuda|all] [--min-rows 1e4]\n"
                 "       [--max-rows 1e7] [--min-dofs 1e3] [--max-dofs 1e6] [--min-tets 1e4]\n"
                 "       [--max-tets 1e6] [--min-nodes 1e4] [--max-nodes 1e6] [--reps 20] [--threads N] [--seed S]\n"
                 "detect: point-vs-triangle contact detection on random crowded box surfaces, time per\n"
                 "Detect() and per vertex.\n"
                 "fem: co-rotational FEM assembly per step on box meshes, time per assembly and per element.\n"
                 "modes: COND on a soft FEM plate clamped at one edge for body-mode patch counts --patches 1,8,32,64\n"
                 "(plates of --min-nodes 1e3 .. --max-nodes 1e4, at most --max-iters iterations): iterations, setup,\n"
                 "solve and iteration times, one SpMV and the iteration in SpMVs (one cpu thread: iteration and SpMV\n"
                 "in thread CPU time); on the cpu each also with the\n"
                 "separate kernels instead of the fused passes (rows marked separate).\n"
                 "batch: env-steps/s of scenes with N = 1, 2, 4, ... --max-envs (1024) environments (or --envs 1,4,16),\n"
                 "packed in one World and as `condsim batch` groups them (--group G, 0: auto), each against the mean\n"
                 "of seeds 0..7 alone (--scenes a.json,b.json, default scenes/cable_winding.json,scenes/soft_mat_folding.json;\n"
                 "seeds 0..N-1), --steps K (5) steps after a warm-up step, median of --reps (3 for batch); one thread:\n"
                 "thread CPU time; "
"--json FILE writes the rows.\n"
                 "scale: whole steps of a scene at growing sizes, CSV + JSON + plots (see `condsim bench scale --help`).\n"
                 "rod: assembly + one COND solve, 1 cable x 1e4 segments and 4096 cables x 160 segments\n"
                 "(--max-cables N caps the batch).\n"
                 "solver: COND on mass-spring grids on a plane (theta_th 1e-8), iterations, times,\n"
                 "and the per-iteration cost in SpMVs of the same matrix.\n"
                 "spmv: 7-point grid matrices of --block-dims 3,6 blocks (op spmvB; on the cpu also spmvBrt,\n"
                 "the runtime-block-size loop); on cuda every SpMV path (csr, bsr, rowloop) is measured.\n"
                 "Columns: median time per op, GB/s of compulsory traffic, and that as a fraction of the\n"
                 "backend's copy bandwidth (cpu: one 256 MiB memcpy on the same threads, interleaved rep by rep\n"
                 "with the products; cuda: a device copy of the vector; vector: the backend's Copy).\n";
    return args.Flag("--help") ? 0 : 2;
  }
  const std::string what = args.positional()[0];
  if (what != "spmv" && what != "vector" && what != "solver" && what != "fem" && what != "rod" && what != "detect" &&
      what != "modes" && what != "batch") {
    throw Error("bench: unknown benchmark '" + what + "' (valid: spmv, vector, solver, fem, rod, detect, modes, batch, scale)");
  }
  const std::string which = args.Get("--backend", "all");
  const Index min_rows = Index(args.GetInt("--min-rows", 10000, 10, 100000000));
  const Index max_rows = Index(args.GetInt("--max-rows", 10000000, 10, 100000000));
  const int reps = int(args.GetInt("--reps", 20, 1, 100000));
  const int threads = int(args.GetInt("--threads", 0, 0, 4096));
  std::mt19937_64 rng(std::uint64_t(args.GetInt("--seed", 1, 0, 1LL << 62)));

  // backends and SpMV formats to measure
  std::vector<std::pair<BackendChoice, SpmvFormat>> configs;
  if (which == "cpu" || which == "all") configs.push_back({BackendChoice::kCpu, SpmvFormat::kRowLoop});
  if (which == "cuda" || which == "all") {
    const CudaProbe probe = ProbeCuda(0);
    if (probe.usable) {
      for (SpmvFormat f : {SpmvFormat::kCsr, SpmvFormat::kBsr, SpmvFormat::kRowLoop}) {
        // the other benchmarks on the default SpMV (what run and batch use)
        if (what != "spmv" && what != "solver" && f != BackendOptions{}.spmv_format) continue;
        configs.push_back({BackendChoice::kCuda, f});
      }
    } else if (which == "cuda") {
      throw Error("bench: the cuda backend is not usable: " + probe.reason);
    } else {
      std::cout << "# cuda skipped: " << probe.reason << "\n";
    }
  }
  if (which != "cpu" && which != "cuda" && which != "all") throw Error("bench: --backend must be cpu, cuda or all");

  std::printf("# condsim bench %s: median of %d reps, Scalar = %zu bytes\n", what.c_str(), reps, sizeof(Scalar));
  if (what == "detect") {
    return BenchDetect(configs, Index(args.GetInt("--min-nodes", 10000, 100, 100000000)),
                       Index(args.GetInt("--max-nodes", 1000000, 100, 100000000)), reps, threads, rng);
  }
  if (what == "modes") {
    std::vector<Index> patch_counts;
    std::stringstream list(args.Get("--patches", "1,8,32,64"));
    for (std::string item; std::getline(list, item, ',');)
      if (!item.empty()) patch_counts.push_back(Index(std::stol(item)));
    return BenchModes(configs, Index(args.GetInt("--min-nodes", 1000, 50, 100000000)),
                      Index(args.GetInt("--max-nodes", 10000, 50, 100000000)), reps, threads, patch_counts,
                      int(args.GetInt("--max-iters", 100000, 1, 100000000)));
  }
  if (what == "batch") {
    std::vector<std::string> scenes;
    std::stringstream list(args.Get("--scenes", "scenes/cable_winding.json,scenes/soft_mat_folding.json"));
    for (std::string item; std::getline(list, item, ',');)
      if (!item.empty()) scenes.push_back(item);
    // --envs 1,4,16 or N = 1, 2, 4, ... --max-envs
    std::vector<Index> envs;
    if (args.Has("--envs")) {
      std::stringstream counts(args.Get("--envs", ""));
      for (std::string item; std::getline(counts, item, ',');) {
        const long long v = std::strtoll(item.c_str(), nullptr, 10);
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || v < 1 || v > (1 << 20))
          throw Error("option --envs: '" + item + "' is not an environment count in [1, 1048576]");
        envs.push_back(Index(v));
      }
    } else {
      const Index max_envs = Index(args.GetInt("--max-envs", 1024, 1, 1 << 20));
      for (Index n = 1; n <= max_envs; n *= 2) envs.push_back(n);
    }
    return BenchBatch(configs, scenes, envs, Index(args.GetInt("--group", 0, 0, 1 << 20)), int(args.GetInt("--steps", 5, 1, 1000000)),
                      args.Has("--reps") ? reps : 3, threads,
                      args.Get("--json", ""));
  }
  if (what == "rod") return BenchRod(configs, reps, threads, Index(args.GetInt("--max-cables", 4096, 1, 1000000)));
  if (what == "fem") {
    return BenchFem(configs, Index(args.GetInt("--min-tets", 10000, 6, 100000000)),
                    Index(args.GetInt("--max-tets", 1000000, 6, 100000000)), reps, threads);
  }
  if (what == "solver") {
    return BenchSolver(configs, Index(args.GetInt("--min-dofs", 1000, 12, 100000000)),
                       Index(args.GetInt("--max-dofs", 1000000, 12, 100000000)), reps, threads, rng);
  }
  std::vector<Index> block_dims;
  std::stringstream dims_list(args.Get("--block-dims", what == "spmv" ? "3,6" : "3"));
  for (std::string item; std::getline(dims_list, item, ',');) {
    const long d = std::strtol(item.c_str(), nullptr, 10);
    if (d < 1 || d > 64) throw Error("bench: --block-dims: '" + item + "' is not a block size in [1, 64]");
    block_dims.push_back(Index(d));
  }
  std::printf("%-26s %-8s %10s %12s %9s %8s\n", "backend", "op", "rows", "median_ms", "GB/s", "of_copy");
  for (Index rows = min_rows; rows <= max_rows; rows = rows > max_rows / 10 ? max_rows + 1 : rows * 10) {
    for (Index bd : block_dims) {
      const BlockMatrix host = GridMatrix(rows, rng, bd);
      const Index n = host.pattern.rows();
      std::vector<Scalar> hx(static_cast<std::size_t>(n));
      std::uniform_real_distribution<Scalar> u(-1, 1);
      for (Scalar& v : hx) v = u(rng);
      for (const auto& [choice, format] : configs) {
        const Target target = MakeTarget(choice, format, threads);
        Backend& b = *target.backend;
        const std::string& name = target.name;
        Array<Scalar> x(&b, hx), y(&b, hx), z(&b, n);
        const double vbytes = double(n) * sizeof(Scalar);
        if (what == "spmv" && b.kind() == BackendKind::kCpu) {
          // the floor (one 256 MiB memcpy on the same threads, apps/bandwidth.h), the dispatched
          // product and the runtime-block-size loop every Multiply ran before the fixed sizes,
          // interleaved rep by rep so that all three see the same load of a shared machine
          auto a = b.CreateMatrix(host.pattern);
          a->SetValues(host.values);
          const BlockPattern& p = host.pattern;
          const double bytes = double(p.nnz()) * sizeof(Scalar) + double(p.nnz_blocks()) * sizeof(Index) +
                               double(p.block_rows + 1) * sizeof(Index) + 2 * vbytes;
          const BsrRowSpmvOp rt{bd, a->row_ptr().data(), a->col_idx().data(), a->values().data(), 1, x.data(), 0, y.data()};
          CopyFloor floor(threads);
          // one thread: the thread's CPU time (a descheduled interval of a loaded machine is not
          // counted); more: wall time
          const bool cpu_time = floor.threads() == 1;
          auto now = [cpu_time] {
            if (!cpu_time) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
            timespec ts{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
          };
          std::vector<double> t[3];
          for (int r = -2; r < reps; ++r) {
            double start = now();
            floor.Copy();
            const double c = now() - start;
            start = now();
            a->Multiply(1, x, 0, &y);
            const double s_fixed = now() - start;
            start = now();
            cpu::ParallelFor(threads, p.block_rows, rt);
            const double s_rt = now() - start;
            if (r < 0) continue;  // warm-up
            t[0].push_back(c);
            t[1].push_back(s_fixed);
            t[2].push_back(s_rt);
          }
          if (cpu_time) std::printf("# %s, block size %d: thread CPU time\n", name.c_str(), int(bd));
          for (auto& v : t) std::sort(v.begin(), v.end());
          const double copy_gbs = floor.bytes_moved() / t[0][t[0].size() / 2] / 1e9;
          const std::string op = "spmv" + std::to_string(bd);
          Row(name, "copy", Index(floor.bytes_moved() / 2 / sizeof(Scalar)), floor.bytes_moved(), t[0][t[0].size() / 2], copy_gbs);
          Row(name, op, n, bytes, t[1][t[1].size() / 2], copy_gbs);
          Row(name, op + "rt", n, bytes, t[2][t[2].size() / 2], copy_gbs);
          continue;
        }
        const double copy_s = MedianSeconds(reps, b, [&] { b.Copy(x, &z); });
        const double copy_gbs = 2 * vbytes / copy_s / 1e9;
        Row(name, "copy", n, 2 * vbytes, copy_s, copy_gbs);
        if (what == "spmv") {
          auto a = b.CreateMatrix(host.pattern);
          a->SetValues(host.values);
          const BlockPattern& p = host.pattern;
          // values + block column indices + row pointers + x once + y written
          const double bytes = double(p.nnz()) * sizeof(Scalar) + double(p.nnz_blocks()) * sizeof(Index) +
                               double(p.block_rows + 1) * sizeof(Index) + 2 * vbytes;
          Row(name, "spmv" + std::to_string(bd), n, bytes, MedianSeconds(reps, b, [&] { a->Multiply(1, x, 0, &y); }), copy_gbs);
        } else {
          Row(name, "axpby", n, 3 * vbytes, MedianSeconds(reps, b, [&] { b.Axpby(0.5, x, 0.5, &y); }), copy_gbs);
          Row(name, "dot", n, 2 * vbytes, MedianSeconds(reps, b, [&] { b.Dot(x, y); }), copy_gbs);
          Row(name, "maxabs", n, vbytes, MedianSeconds(reps, b, [&] { b.MaxAbs(x); }), copy_gbs);
        }
      }
    }
  }
  return 0;
}

}  // namespace condsim::app
