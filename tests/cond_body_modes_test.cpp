// The Gershgorin safeguard of the Frobenius W and the body-mode correction (docs/solver.md):
// - on a stiff FEM ball (216 nodes, E 1 MPa, t = 10 ms) the paper's Frobenius w gives
//   lambda_max(W A) = 2.05 > 2: the plain iteration grows; the safeguarded w converges to the
//   sparse direct solve (Eigen SimplicialLDLT) of A v = b;
// - the body modes leave the fixed point unchanged (same v-hat as the direct solve, and the
//   same v-hat and impulses with a resting contact patch as without them) and cut the
//   iterations several-fold (rigid modes: 2M/t against the stiffness);
// - in a World, a stiff ball falling from rest takes v-hat = g t / 2 on every node (eq. 9 with
//   no elastic force) within a few iterations;
// - patches (piecewise-rigid modes): GridPatches splits a 10x10x10 grid into exactly 2x2x2
//   cells of 125 points, keeps at least 8 points per patch and one patch per 16 points; on a thin cantilever plate (clamped edge, gravity) 24 patches keep the
//   direct solve's v-hat (1e-9 m/s) and, on floor contacts, the single patch's v-hat and
//   impulses, in several times fewer iterations (the plate's bending is its slowest motion);
// - the coarse matrix factorized sparse (body_mode_dense_patches) solves the coarse space as
//   exactly as the dense inverse and gives its iterates; beyond the dense limit (more than 128
//   patches) the plate keeps the direct solve's v-hat.
// What the set-up moves between host and backend, the arms made on the backend and the CUDA
// parity: tests/cond_body_mode_transfers_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"
#include "models/world/world.h"
#include "body_mode_systems.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::BallSystem;
using test::kDt;
using test::PatchModes;
using test::PlateSystem;
using test::SolveFromRest;

TEST(CondSafeguard, FrobeniusGrowsOnStiffBallSafeguardConverges) {
  BallSystem sys;
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.chebyshev = false;
  p.theta_threshold = 1e-12;
  p.max_iterations = 3000;
  std::vector<Scalar> v;
  // the paper's w as is: the mode at lambda = 2.05 grows by 1.05 per iteration
  p.w_safeguard = 0;
  const CondStats grow = sys.Solve(p, true, ContactSet(), &v);
  EXPECT_FALSE(grow.converged);
  EXPECT_GT(test::MaxDiff(v, exact), 1.0) << "m/s";
  // safeguarded (lambda_max(W A) <= 1.9): the direct solve's answer (|v-hat| ~ 0.1 m/s)
  p.w_safeguard = 1.9;
  p.max_iterations = 20000;
  const CondStats ok = sys.Solve(p, true, ContactSet(), &v);
  EXPECT_TRUE(ok.converged);
  EXPECT_LT(test::MaxDiff(v, exact), 1e-9) << "m/s";
  EXPECT_THROW(
      [] {
        CondParams bad;
        bad.w_safeguard = 2.0;
        bad.Validate();
      }(),
      Error);
}

TEST(CondBodyModes, SameFixedPointInFewerIterations) {
  BallSystem sys;
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.theta_threshold = 1e-11;
  p.max_iterations = 50000;
  std::vector<Scalar> v_off, v_on, l_off, l_on;
  p.body_modes = false;
  const CondStats off = sys.Solve(p, true, ContactSet(), &v_off);
  p.body_modes = true;
  const CondStats on = sys.Solve(p, true, ContactSet(), &v_on);
  std::cout << "[ info     ] free ball to theta 1e-11: " << off.iterations << " iterations without body modes, "
            << on.iterations << " with\n";
  ASSERT_TRUE(on.converged);
  // theta stops the slow rigid modes early without the correction (error ~ theta / lambda_min)
  std::cout << "[ info     ] |v - direct solve|: " << test::MaxDiff(v_off, exact) << " m/s without, " << test::MaxDiff(v_on, exact)
            << " with\n";
  EXPECT_LT(test::MaxDiff(v_on, exact), 1e-9) << "m/s";
  EXPECT_LT(4 * on.iterations, off.iterations);

  // resting on a contact patch: the same v-hat and impulses (eq. 11 at the same fixed point)
  const ContactSet floor = sys.FloorContacts();
  ASSERT_GE(floor.size(), 3);
  p.body_modes = false;
  const CondStats c_off = sys.Solve(p, true, floor, &v_off, &l_off);
  p.body_modes = true;
  const CondStats c_on = sys.Solve(p, true, floor, &v_on, &l_on);
  std::cout << "[ info     ] ball on " << floor.size() << " floor contacts: " << c_off.iterations
            << " iterations without body modes, " << c_on.iterations << " with\n";
  std::cout << "[ info     ] |v_on - v_off| " << test::MaxDiff(v_on, v_off) << " m/s, |l_on - l_off| " << test::MaxDiff(l_on, l_off) << " N\n";
  ASSERT_TRUE(c_on.converged);
  // the run without the correction stops at l_max short of theta (its error ~ 1e-8 m/s, as in
  // the free case), so the two agree to that
  EXPECT_LT(test::MaxDiff(v_on, v_off), 1e-7) << "m/s";
  double total = 0;
  for (Scalar x : l_on) total = std::max(total, std::fabs(double(x)));
  EXPECT_LT(test::MaxDiff(l_on, l_off), 1e-6 * total) << "N";
  EXPECT_LT(c_on.iterations, c_off.iterations);
}

TEST(CondBodyModes, StiffBallFallsExactlyInAFewIterations) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  WorldParams wp;
  wp.dt = kDt;
  wp.cond.theta_threshold = 1e-10;
  wp.cond.max_iterations = 20000;
  World world(backend.get(), wp);
  FemMaterial m;
  m.young = 1e7;
  m.poisson = 0.35;
  const Index ball = world.AddFem(MakeSphereMesh(Vec3(0, 0, 1), 0.04, 0.016), m, "ball", 0.5, false);
  const StepStats st = world.Step();
  // from rest with no elastic force, eq. 9 gives v-hat = g t / 2 and v_1 = g t on every node
  const std::vector<Scalar> v = world.FemVelocities(ball);
  double err = 0;
  for (std::size_t k = 0; k < v.size(); ++k) err = std::max(err, std::fabs(double(v[k]) - (k % 3 == 2 ? -9.81 * kDt : 0.0)));
  EXPECT_LT(err, 1e-9) << "m/s";
  EXPECT_LE(st.cond.iterations, 5);
}

TEST(CondBodyModes, GridPatchesSplitAGridIntoEqualCells) {
  // 10 x 10 x 10 points 0.1 apart, at most 8 patches: the smallest cell keeping 8 is just over
  // 0.45 (2 cells per axis; below it 3), so 8 patches of 5 x 5 x 5 points
  std::vector<Scalar> x;
  for (int k = 0; k < 10; ++k)
    for (int j = 0; j < 10; ++j)
      for (int i = 0; i < 10; ++i) x.insert(x.end(), {0.1 * i, 0.1 * j, 0.1 * k});
  const std::vector<Index> patch = GridPatches(x, 8);
  std::vector<int> count(8, 0);
  for (std::size_t q = 0; q < patch.size(); ++q) {
    ASSERT_GE(patch[q], 0);
    ASSERT_LT(patch[q], 8);
    ++count[std::size_t(patch[q])];
    // its cell: the point's coordinates below or above 0.45
    const int cell = (x[3 * q] > 0.45) * 4 + (x[3 * q + 1] > 0.45) * 2 + (x[3 * q + 2] > 0.45);
    EXPECT_EQ(patch[q], cell) << "point " << q;
  }
  for (int c : count) EXPECT_EQ(c, 125);
  EXPECT_EQ(GridPatches(x, 8), patch);  // deterministic
  for (Index p : GridPatches(x, 1)) EXPECT_EQ(p, 0);
  // a thin plate (2 x 0.5 x 0.05): cells span the thickness, at most 32 and at least 16
  std::vector<Scalar> plate;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j <= 10; ++j)
      for (int i = 0; i <= 40; ++i) plate.insert(plate.end(), {0.05 * i, 0.05 * j, 0.05 * k});
  const std::vector<Index> pp = GridPatches(plate, 32);
  const Index n = *std::max_element(pp.begin(), pp.end()) + 1;
  EXPECT_LE(n, 32);
  EXPECT_GE(n, 16);
  // stray points far off the grid join a patch of at least 8 points; few points, one patch
  std::vector<Scalar> stray = x;
  stray.insert(stray.end(), {2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 2.0});
  const std::vector<Index> sp = GridPatches(stray, 27);
  const Index ns = *std::max_element(sp.begin(), sp.end()) + 1;
  EXPECT_LE(ns, 27);
  std::vector<int> members(std::size_t(ns), 0);
  for (Index p : sp) ++members[std::size_t(p)];
  for (int c : members) EXPECT_GE(c, 8);
  for (Index p : GridPatches(std::vector<Scalar>(x.begin(), x.begin() + 3 * 31), 8)) EXPECT_EQ(p, 0);
}

TEST(CondBodyModes, PatchesKeepTheFixedPointAndReachBending) {
  PlateSystem sys;
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.theta_threshold = 1e-11;
  p.max_iterations = 100000;
  std::vector<Scalar> v_one, v_many, l_one, l_many;
  const CondStats one = sys.Solve(p, 1, ContactSet(), &v_one);
  const CondStats many = sys.Solve(p, 24, ContactSet(), &v_many);
  std::cout << "[ info     ] clamped plate to theta 1e-11: " << one.iterations << " iterations with one patch, " << many.iterations
            << " with 24; |v - direct solve| " << test::MaxDiff(v_one, exact) << " / " << test::MaxDiff(v_many, exact) << " m/s\n";
  ASSERT_TRUE(many.converged);
  EXPECT_LT(test::MaxDiff(v_many, exact), 1e-9) << "m/s";
  EXPECT_LT(3 * many.iterations, one.iterations);
  // the free end's nodes on floor contacts (phi = 0, S-contacts): the same fixed point (eq. 11)
  ContactSet floor;
  for (Index i = 0; i < sys.mesh.num_nodes(); ++i)
    if (sys.mesh.Node(i)[0] > 0.15 && sys.mesh.Node(i)[2] < 1e-9) floor.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
  ASSERT_GE(floor.size(), 20);
  const CondStats c_one = sys.Solve(p, 1, floor, &v_one, &l_one);
  const CondStats c_many = sys.Solve(p, 24, floor, &v_many, &l_many);
  std::cout << "[ info     ] plate on " << floor.size() << " floor contacts: " << c_one.iterations << " iterations with one patch, "
            << c_many.iterations << " with 24; |dv| " << test::MaxDiff(v_one, v_many) << " m/s, |dl| " << test::MaxDiff(l_one, l_many)
            << " N s\n";
  ASSERT_TRUE(c_many.converged);
  ASSERT_TRUE(c_one.converged);
  EXPECT_LT(test::MaxDiff(v_one, v_many), 1e-8) << "m/s";
  double total = 0;
  for (Scalar x : l_many) total = std::max(total, std::fabs(double(x)));
  EXPECT_GT(total, 0);
  EXPECT_LT(test::MaxDiff(l_one, l_many), 1e-6 * total);
  EXPECT_LT(2 * c_many.iterations, c_one.iterations);
}

TEST(CondBodyModes, CorrectionIsExactOnTheCoarseSpaceAndKeepsTheContactRowsResidual) {
  // reference: v = Z c in the patches' span (Z as in body_mode_ops.h: v_i = c_lin + c_rot x
  // arm_i on the listed nodes, 0 on the contact nodes the patches leave out) and b = A v by the
  // matrix itself. From v = 0 the Galerkin step dv = -(Z^T A Z)^-1 Z^T (A 0 - b) = c gives v
  // exactly when the coarse operator is Z^T A Z and its solve is exact; r = A v - b is then 0 on
  // every row, the contact nodes' rows next to the patches included, so the W step adds nothing
  // and the second iteration's theta is rounding. A stale r on those rows (the code before the
  // halo rows: r_i = -b_i there) moves the contact nodes by w_i b_i instead.
  PlateSystem sys;
  const Index patches = 24;
  const BodyModes modes = PatchModes(sys.mesh, patches);
  // idle S-contacts (phi 10 m/s: never closing) on the bottom nodes of the free end: excluded
  // from the patches, their rows reach the patches
  ContactSet idle;
  std::vector<unsigned char> contact(std::size_t(sys.mesh.num_nodes()), 0);
  for (Index i = 0; i < sys.mesh.num_nodes(); ++i)
    if (sys.mesh.Node(i)[0] > 0.1 && sys.mesh.Node(i)[2] < 1e-9) {
      idle.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 10, 0.5, 0.5);
      contact[std::size_t(i)] = 1;
    }
  ASSERT_GE(idle.size(), 20);
  // c per patch: a translation and a rotation of 0.01 m/s and 0.1 rad/s scale, varied by patch
  std::vector<Scalar> v_ref(sys.mesh.x.size(), 0);
  for (Index p = 0; p < modes.size(); ++p) {
    const Vec3 lin(0.01 * std::sin(1.0 + p), 0.01 * std::cos(2.0 * p), 0.005 * (p % 3));
    const Vec3 rot(0.1 * std::cos(0.5 + p), 0.05 * std::sin(3.0 * p), 0.1 * ((p % 4) - 1.5));
    std::vector<Index> nodes;
    for (Index q = modes.ptr[p]; q < modes.ptr[p + 1]; ++q)
      if (!contact[std::size_t(modes.node[q])]) nodes.push_back(q);
    if (nodes.size() < 4) continue;  // the solver drops a patch of fewer than 4 listed nodes
    for (Index q : nodes) {
      const Vec3 arm(modes.arm[3 * std::size_t(q)], modes.arm[3 * std::size_t(q) + 1], modes.arm[3 * std::size_t(q) + 2]);
      const Vec3 vi = lin + Cross(rot, arm);
      for (int d = 0; d < 3; ++d) v_ref[3 * std::size_t(modes.node[q]) + d] = vi[d];
    }
  }
  Array<Scalar> v_dev(sys.backend.get(), v_ref), b(sys.backend.get(), Index(v_ref.size()));
  sys.a->Multiply(1, v_dev, 0, &b);
  CondParams p;
  p.chebyshev = false;
  p.theta_threshold = 1e-300;
  p.max_iterations = 2;
  double scale = 0;
  for (Scalar x : v_ref) scale = std::max(scale, std::fabs(double(x)));
  // the dense inverse, then the sparse factor (body_mode_dense_patches 0), both on the backend
  for (const int dense : {128, 0}) {
    p.body_mode_dense_patches = dense;
    std::vector<Scalar> v;
    const CondStats st = SolveFromRest(sys.backend.get(), *sys.a, b, p, &modes, idle, &v, nullptr);
    std::cout << "[ info     ] " << (dense > 0 ? "dense" : "sparse") << " coarse solve: v = Z c (|v| " << scale
              << " m/s) from rest, 2 iterations: |v - Z c| " << test::MaxDiff(v, v_ref) << " m/s, second theta " << st.residual << " m/s\n";
    // tolerances: the coarse solve's 1e-10 I shift (unit diagonal) and rounding through the plate's
    // stiffness (W r of a rounding-level r); the stale-row error is ~1e5 times the theta bound
    EXPECT_LT(test::MaxDiff(v, v_ref), 1e-8 * scale) << "m/s";
    EXPECT_LT(st.residual, 1e-7 * scale) << "m/s";
  }
}

// a node listed in two patches is refused with a message naming it (the rows of T are placed per
// node; a second row of one node would overlap another row's entries)
TEST(CondBodyModes, ANodeListedTwiceIsRefused) {
  PlateSystem sys;
  BodyModes m = PatchModes(sys.mesh, 4);
  m.node[m.ptr[1]] = m.node[0];
  CondSolver solver(sys.backend.get(), CondParams());
  try {
    solver.SetBodyModes(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node " + std::to_string(m.node[0]) + " is listed twice"), std::string::npos) << e.what();
  }
}

TEST(CondBodyModes, SparseCoarseSolveMatchesTheDenseInverse) {
  // the same plate on floor contacts with 24 patches, the coarse matrix inverted densely on the
  // backend (BodyModeInvertOp) or factorized sparse there (BodyModeSparseFactorOp,
  // BodyModeSparseSolveOp): both exact coarse solves of the same A_c, so the same iterations and
  // iterates up to rounding
  PlateSystem sys;
  ContactSet floor;
  for (Index i = 0; i < sys.mesh.num_nodes(); ++i)
    if (sys.mesh.Node(i)[0] > 0.15 && sys.mesh.Node(i)[2] < 1e-9) floor.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
  CondParams p;
  p.theta_threshold = 1e-11;
  p.max_iterations = 100000;
  std::vector<Scalar> v_dense, v_sparse, l_dense, l_sparse;
  const CondStats dense = sys.Solve(p, 24, floor, &v_dense, &l_dense);
  p.body_mode_dense_patches = 0;
  const CondStats sparse = sys.Solve(p, 24, floor, &v_sparse, &l_sparse);
  std::cout << "[ info     ] plate on " << floor.size() << " contacts, 24 patches: " << dense.iterations << " iterations dense, "
            << sparse.iterations << " sparse; |dv| " << test::MaxDiff(v_dense, v_sparse) << " m/s, |dl| "
            << test::MaxDiff(l_dense, l_sparse) << " N s\n";
  ASSERT_TRUE(dense.converged);
  ASSERT_TRUE(sparse.converged);
  EXPECT_LE(std::abs(dense.iterations - sparse.iterations), 2);
  // the sparse path ran on the backend: one launch more per iteration at least
  // (BodyModeSparseSolveOp), and no transfer more in the loop (BackendCounters)
  EXPECT_GE(sparse.loop_counters.launches, dense.loop_counters.launches + sparse.iterations);
  EXPECT_EQ(sparse.loop_counters.uploads, dense.loop_counters.uploads);
  EXPECT_LE(sparse.loop_counters.downloads, dense.loop_counters.downloads + 2);
  // both stop at theta 1e-11 m/s of the same fixed point (the plate's v ~ 0.1 m/s)
  EXPECT_LT(test::MaxDiff(v_dense, v_sparse), 1e-9) << "m/s";
  double total = 0;
  for (Scalar x : l_dense) total = std::max(total, std::fabs(double(x)));
  EXPECT_LT(test::MaxDiff(l_dense, l_sparse), 1e-6 * total) << "N s";
}

TEST(CondBodyModes, PatchesBeyondTheDenseLimitKeepTheFixedPoint) {
  // a plate of 65 x 17 x 3 nodes clamped at one edge with more patches than a dense coarse
  // matrix may have (kMaxDenseBodyModePatches): the sparse factor gives the direct solve's v-hat
  // (reference: Eigen's SimplicialLDLT of A v = b, 1e-9 m/s), in fewer iterations than 32
  // patches (a finer coarse space reaches shorter bending waves)
  PlateSystem sys(MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.32, 0.08, 0.01), 64, 16, 2));
  const std::vector<Scalar> exact = test::SparseSolve(*sys.a, sys.b);
  CondParams p;
  p.theta_threshold = 1e-11;
  p.max_iterations = 100000;
  const BodyModes many = PatchModes(sys.mesh, 200), few = PatchModes(sys.mesh, 32);
  ASSERT_GT(many.size(), kMaxDenseBodyModePatches);
  std::vector<Scalar> v_many, v_few;
  const CondStats st_many = SolveFromRest(sys.backend.get(), *sys.a, sys.b, p, &many, ContactSet(), &v_many, nullptr);
  const CondStats st_few = SolveFromRest(sys.backend.get(), *sys.a, sys.b, p, &few, ContactSet(), &v_few, nullptr);
  std::cout << "[ info     ] clamped plate, " << sys.mesh.num_nodes() << " nodes, to theta 1e-11: " << st_many.iterations << " iterations with "
            << many.size() << " patches (sparse), " << st_few.iterations << " with " << few.size() << " (dense); |v - direct| "
            << test::MaxDiff(v_many, exact) << " / " << test::MaxDiff(v_few, exact) << " m/s\n";
  ASSERT_TRUE(st_many.converged);
  EXPECT_LT(test::MaxDiff(v_many, exact), 1e-9) << "m/s";
  EXPECT_LT(st_many.iterations, st_few.iterations);
}

}  // namespace
}  // namespace condsim
