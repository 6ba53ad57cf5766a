// `condsim run`: steps a scene file (run_scene.cpp: progress, summary, HDF5 + XDMF output). Without
// a scene it runs a built-in check of the backend path: a batch of hanging chains (node masses and
// springs, 3x3 blocks) assembled as one block-diagonal system A v = b of one implicit step, solved
// by the damped Jacobi fixed-point iteration v <- v - W (A v - b) with W = omega diag(A)^-1 (the
// contact-free part of the paper's eq. 20), with per-environment convergence.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "apps/args.h"
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

int RunScene(const std::vector<std::string>& argv) {
  const Args args(argv, {"--backend", "--envs", "--nodes", "--tol", "--max-iters", "--steps", "--duration", "--out", "--threads", "--seed",
                          "--spmv"},
                  {"--help", "--quiet", "--no-output", "--verbose"}, "run");
  if (args.Flag("--help")) {
    std::cout << "usage: condsim run SCENE.json [--backend cpu|cuda|auto] [--steps N | --duration S]\n"
                 "       [--out DIR] [--threads N] [--seed N] [--spmv csr|bsr|rowloop] [--quiet] [--verbose] [--no-output]\n"
                 "steps a scene file (docs/scene-format.md): progress, a summary table and\n"
                 "DIR/summary.json (default DIR: condsim-out/<scene name>), and DIR/output.h5 + .xmf\n"
                 "when the scene sets output.frame_rate (--no-output: skip it).\n"
                 "--seed N (0 .. 2^53 - 1): draw the scene's randomized values (its \"randomization\" ranges) with seed N;\n"
                 "without it the values written in the file are used.\n"
                 "--spmv: the cuda backend's SpMV path (default rowloop: each row alone, bitwise as in a batch; csr, bsr: cuSPARSE).\n"
                 "--verbose: one line per step (iterations, residual, contacts, penetration, time, inelastic stage time).\n"
                 "Without a scene: a built-in check of the backend path (one implicit step of a batch\n"
                 "of hanging chains) with [--envs 8] [--nodes 1000] [--tol 1e-10] [--max-iters 10000].\n";
    return 0;
  }
  if (!args.positional().empty()) return RunSceneFile(args);
  const BackendSelection sel = MakeBackend(ParseBackendChoice(args.Get("--backend", "auto")));
  const Index envs = Index(args.GetInt("--envs", 8, 1, 1000000));
  const Index nodes = Index(args.GetInt("--nodes", 1000, 1, 10000000));
  const Index max_iters = Index(args.GetInt("--max-iters", 10000, 1, 100000000));
  const double tol = args.GetDouble("--tol", 1e-10, 0, 1e30, true);
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
