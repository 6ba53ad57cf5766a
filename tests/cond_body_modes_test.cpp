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
// - the coarse matrix factorized sparse on the host (body_mode_dense_patches) solves the coarse
//   space as exactly as the dense inverse and gives its iterates; beyond the dense limit (more
//   than 128 patches) the plate keeps the direct solve's v-hat;
// - the set-up moves no coarse matrix between host and backend (BackendCounters); arms made on
//   the backend from positions there (BodyPatchArms) are the host's bitwise and go into the
//   solver without an upload;
// - CUDA: the same 60 iterations with contacts and 8 patches give the CPU's v-hat and impulses
//   to 1e-12 (relative), run-to-run bitwise, with the dense and the sparse coarse solve (skipped
//   without a usable device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"
#include "models/world/world.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr Scalar kDt = 0.01;

// one body: the mesh's nodes in GridPatches patches, arms from each patch's mean position
BodyModes PatchModes(const TetMesh& mesh, Index patches) {
  BodyModes m;
  AppendBodyPatches(GridPatches(mesh.x, patches), mesh.x, 0, &m);
  return m;
}

// one COND solve of A v = b (+ contacts) from v = 0, with body modes when given
CondStats SolveFromRest(Backend* backend, DeviceBlockMatrix& a, const Array<Scalar>& b, const CondParams& p, const BodyModes* modes,
                        const ContactSet& contacts, std::vector<Scalar>* v, std::vector<Scalar>* lambda) {
  CondSolver solver(backend, p);
  if (modes != nullptr) solver.SetBodyModes(*modes);
  solver.SetContacts(contacts);
  Array<Scalar> vd(backend, std::vector<Scalar>(std::size_t(b.size()), 0));
  const CondStats st = solver.Solve(a, b, &vd);
  *v = vd.ToHost();
  if (lambda != nullptr) *lambda = solver.Impulses();
  return st;
}

// the eq. 9 system of a free FEM ball of radius 4 cm under gravity, moving with a spin, a
// breathing (radial) velocity and a shear, so that v-hat has rigid and elastic parts
struct BallSystem {
  std::unique_ptr<Backend> backend;
  TetMesh mesh = MakeSphereMesh(Vec3(0, 0, 0.04), 0.04, 0.016);
  FemMaterial material = [] {
    FemMaterial m;
    m.young = 1e6;
    m.poisson = 0.35;
    m.density = 1000;
    return m;
  }();
  FemModel model{backend.get(), mesh, material, "ball"};
  std::unique_ptr<DeviceBlockMatrix> a = backend->CreateMatrix(model.pattern());
  Array<Scalar> b{backend.get(), Index(mesh.x.size())};

  explicit BallSystem(BackendChoice choice = BackendChoice::kCpu) : backend(MakeBackend(choice).backend) {
    std::vector<Scalar> v0(mesh.x.size());
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      const Vec3 r = mesh.Node(i) - Vec3(0, 0, 0.04);
      const Vec3 vi = Cross(Vec3(0, 0, 3), r) + 2.0 * r + Vec3(5 * r[2], 0, 0);
      for (int d = 0; d < 3; ++d) v0[3 * std::size_t(i) + d] = vi[d];
    }
    Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), v0);
    model.Assemble(x, v, kDt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
  }
  BodyModes Modes(Index patches = 1) const { return PatchModes(mesh, patches); }
  // the nodes within 4 mm of the floor, in S-contact with it as if touching (phi = 0)
  ContactSet FloorContacts() const {
    ContactSet c;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[2] < 0.004) c.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
    return c;
  }
  CondStats Solve(const CondParams& p, bool modes, const ContactSet& contacts, std::vector<Scalar>* v,
                  std::vector<Scalar>* lambda = nullptr, Index patches = 1) {
    const BodyModes m = Modes(patches);
    return SolveFromRest(backend.get(), *a, b, p, modes ? &m : nullptr, contacts, v, lambda);
  }
};

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

// the eq. 9 system of a thin plate (by default 20 x 5 x 0.5 cm, E 0.1 MPa) clamped at x = 0 (prescribed
// nodes at rest), at rest under gravity: its slow motions are bending, which the rigid modes of
// the whole plate cannot represent
struct PlateSystem {
  std::unique_ptr<Backend> backend = MakeBackend(BackendChoice::kCpu).backend;
  TetMesh mesh;
  std::unique_ptr<FemModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> b{backend.get(), Index(mesh.x.size())};

  explicit PlateSystem(TetMesh plate = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.2, 0.05, 0.005), 24, 6, 1)) : mesh(std::move(plate)) {
    FemMaterial m;
    m.young = 1e5;
    m.poisson = 0.35;
    m.density = 1100;
    model = std::make_unique<FemModel>(backend.get(), mesh, m, "plate");
    std::vector<Index> clamped;
    for (Index i = 0; i < mesh.num_nodes(); ++i)
      if (mesh.Node(i)[0] < 1e-9) clamped.push_back(i);
    model->SetPrescribedNodes(clamped);
    model->SetPrescribedVelocities(std::vector<Scalar>(3 * clamped.size(), 0));
    a = backend->CreateMatrix(model->pattern());
    Array<Scalar> x(backend.get(), mesh.x), v(backend.get(), std::vector<Scalar>(mesh.x.size(), 0));
    model->Assemble(x, v, kDt, Vec3(0, 0, -9.81), nullptr, a.get(), &b);
  }
  CondStats Solve(const CondParams& p, Index patches, const ContactSet& contacts, std::vector<Scalar>* v,
                  std::vector<Scalar>* lambda = nullptr) {
    const BodyModes m = PatchModes(mesh, patches);
    return SolveFromRest(backend.get(), *a, b, p, &m, contacts, v, lambda);
  }
};

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
  // the dense inverse on the backend, then the sparse factor on the host (body_mode_dense_patches 0)
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

TEST(CondBodyModes, SparseCoarseSolveMatchesTheDenseInverse) {
  // the same plate on floor contacts with 24 patches, the coarse matrix inverted densely on the
  // backend (BodyModeInvertOp) or factorized sparse on the host (Eigen's simplicial Cholesky) and
  // solved on the backend (BodyModeSparseSolveOp):
  // both exact coarse solves of the same A_c, so the same iterations and iterates up to rounding
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

TEST(CondBodyModes, SetupMovesNoCoarseMatrix) {
  // the set-up of a solve (what Solve asks of the backend less its fixed-point loop) on the plate
  // with 24 patches requested (GridPatches makes 16: one body, A_c 96 x 96, 73728 bytes): the
  // coarse matrices and their inverses stay on the backend, so the only download is the size of
  // T (4 B, the total of BodyModeCouplingOp's scan) on a solve whose patch structure is new, none
  // on one that keeps it (the host inverse downloaded A_c and uploaded A_c^-1 every solve: 73728 B
  // each way, measured on b310cb4); a second solve with the same patches and contacts uploads
  // nothing more than one without body modes (the patch structure is kept; b310cb4 uploaded it
  // and A_c^-1 again: 90656 B more)
  PlateSystem sys;
  const BodyModes modes = PatchModes(sys.mesh, 24);
  CondParams p;
  p.max_iterations = 5;
  auto setup = [&](bool with_modes, int solves) {
    CondSolver solver(sys.backend.get(), p);
    if (with_modes) solver.SetBodyModes(modes);
    solver.SetContacts(ContactSet());
    BackendCounters last;
    for (int k = 0; k < solves; ++k) {
      Array<Scalar> v(sys.backend.get(), std::vector<Scalar>(sys.mesh.x.size(), 0));
      const BackendCounters before = sys.backend->counters();
      const CondStats st = solver.Solve(*sys.a, sys.b, &v);
      last = sys.backend->counters() - before - st.loop_counters;
    }
    return last;
  };
  const std::int64_t coarse = 6 * std::int64_t(modes.size()), matrix_bytes = 8 * coarse * coarse;
  ASSERT_EQ(modes.size(), 16);
  for (int solves : {1, 2}) {
    const BackendCounters on = setup(true, solves), off = setup(false, solves);
    std::cout << "[ info     ] solve " << solves << " set-up: downloads " << on.download_bytes << " B (" << off.download_bytes
              << " B without modes), uploads " << on.upload_bytes << " B (" << off.upload_bytes << " B without); A_c " << matrix_bytes
              << " B\n";
    EXPECT_EQ(on.download_bytes, off.download_bytes + (solves == 1 ? 4 : 0)) << "solve " << solves;
    // the first solve uploads the patch structure (its listed nodes and chunks; 10248 B here, the
    // per-node maps and the rows of T made on the backend)
    if (solves == 2) {
      EXPECT_EQ(on.upload_bytes, off.upload_bytes) << "solve " << solves;
    }
  }
}

// a second solve whose patches keep their nodes but get new arms (as the World's every step: arms
// from the current positions) uploads the arms alone on top of what a solve without body modes
// uploads: 8 B x 3 per listed node (reference: that count, exact; before, the whole patch record
// went up again whenever an arm changed: 16928 B here)
TEST(CondBodyModes, NewArmsUploadOnlyTheArms) {
  PlateSystem sys;
  const BodyModes modes = PatchModes(sys.mesh, 24);
  BodyModes moved = modes;
  for (Scalar& a : moved.arm) a += Scalar(1e-3);
  CondParams p;
  p.max_iterations = 5;
  auto second = [&](bool with_modes) {
    CondSolver solver(sys.backend.get(), p);
    if (with_modes) solver.SetBodyModes(modes);
    solver.SetContacts(ContactSet());
    Array<Scalar> v(sys.backend.get(), std::vector<Scalar>(sys.mesh.x.size(), 0));
    solver.Solve(*sys.a, sys.b, &v);
    if (with_modes) solver.SetBodyModes(moved);
    solver.SetContacts(ContactSet());
    v.Assign(sys.backend.get(), std::vector<Scalar>(sys.mesh.x.size(), 0));
    const BackendCounters before = sys.backend->counters();
    const CondStats st = solver.Solve(*sys.a, sys.b, &v);
    return sys.backend->counters() - before - st.loop_counters;
  };
  const BackendCounters on = second(true), off = second(false);
  EXPECT_EQ(on.upload_bytes - off.upload_bytes, std::int64_t(sizeof(Scalar) * modes.arm.size()));
  EXPECT_EQ(on.download_bytes, off.download_bytes);
}

// a second solve whose contacts touch the same nodes but are more (a second contact on one
// node): the patch level keeps its nodes (the same contact nodes are left out) and the free-body
// level keeps its nodes (it lists the contact nodes) while its gates (the contacts per patch)
// change, so on top of what the same two solves upload without body modes only the gates go up:
// 4 B per gate entry and per patch (reference: that bound, with 64 B to spare; before, the whole
// free-level record went up again, about 24 B per node: 15649 B more here, 209 B now)
TEST(CondBodyModes, NewGatesUploadOnlyTheGates) {
  PlateSystem sys;
  const BodyModes modes = PatchModes(sys.mesh, 24);
  // floor contacts under the free end's bottom nodes (x > 0.15 m, z = 0), normal +z
  ContactSet one, two;
  Index first = -1;
  for (Index i = 0; i < sys.mesh.num_nodes(); ++i) {
    const Vec3 x = sys.mesh.Node(i);
    if (x[0] < 0.15 || x[2] > 1e-9) continue;
    if (first < 0) first = i;
    for (ContactSet* c : {&one, &two}) c->Add(i, -1, Mat3(0, 0, 1, 1, 0, 0, 0, 1, 0), Scalar(0.01), Scalar(0.3), Scalar(0.3), 0);
  }
  ASSERT_GE(first, 0);
  two.Add(first, -1, Mat3(0, 0, 1, 1, 0, 0, 0, 1, 0), Scalar(0.02), Scalar(0.3), Scalar(0.3), 0);
  CondParams p;
  p.max_iterations = 5;
  auto second = [&](bool with_modes) {
    CondSolver solver(sys.backend.get(), p);
    if (with_modes) solver.SetBodyModes(modes);
    solver.SetContacts(one);
    Array<Scalar> v(sys.backend.get(), std::vector<Scalar>(sys.mesh.x.size(), 0));
    solver.Solve(*sys.a, sys.b, &v);
    solver.SetContacts(two);
    v.Assign(sys.backend.get(), std::vector<Scalar>(sys.mesh.x.size(), 0));
    const BackendCounters before = sys.backend->counters();
    const CondStats st = solver.Solve(*sys.a, sys.b, &v);
    return sys.backend->counters() - before - st.loop_counters;
  };
  const BackendCounters on = second(true), off = second(false);
  const std::int64_t gates = 4 * (2 + 2 * std::int64_t(two.size()));
  std::cout << "[ info     ] second solve's set-up: uploads " << on.upload_bytes << " B (" << off.upload_bytes
            << " B without modes), gates at most " << gates << " B\n";
  EXPECT_LE(on.upload_bytes - off.upload_bytes, gates + 64);
  EXPECT_EQ(on.download_bytes, off.download_bytes);
}

// two FEM bodies' arms made by BodyPatchArms from positions on the backend, against
// AppendBodyPatches' host arms of the same positions (randomly jittered sphere and box meshes,
// GridPatches patches, the second body's nodes offset as in a World). Reference: the host's arms
// and body arms, bitwise (the same sums in the same order, then the same division)
std::vector<std::vector<Scalar>> JitteredBodies() {
  std::mt19937_64 rng = test::Rng();
  std::vector<std::vector<Scalar>> x = {MakeSphereMesh(Vec3(0.1, -0.2, 0.3), 0.04, 0.012).x,
                                        MakeBoxMesh(Vec3(-0.3, 0.1, 0.02), Vec3(0.2, 0.05, 0.01), 16, 5, 2).x};
  for (std::vector<Scalar>& xb : x) {
    const std::vector<Scalar> jitter = test::RandomVector(rng, Index(xb.size()), -1e-3, 1e-3);
    for (std::size_t k = 0; k < xb.size(); ++k) xb[k] += jitter[k];
  }
  return x;
}

void ExpectBackendArmsBitwise(Backend* backend) {
  const std::vector<std::vector<Scalar>> x = JitteredBodies();
  const std::vector<Index> first = {0, Index(x[0].size() / 3) + 7};
  BodyModes host, nodes;
  std::vector<Array<Scalar>> xd;
  std::vector<const Array<Scalar>*> xp;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const std::vector<Index> patch = GridPatches(x[k], 12);
    AppendBodyPatches(patch, x[k], first[k], &host);
    AppendBodyPatchNodes(patch, first[k], &nodes);
    xd.emplace_back(backend, x[k]);
  }
  for (const Array<Scalar>& a : xd) xp.push_back(&a);
  ASSERT_GT(host.size(), 12);
  EXPECT_EQ(nodes.node, host.node);
  EXPECT_EQ(nodes.ptr, host.ptr);
  EXPECT_EQ(nodes.body_ptr, host.body_ptr);
  BodyPatchArms arms(backend);
  arms.SetPatches(nodes, first);
  arms.Compute(xp);
  EXPECT_EQ(arms.arm().ToHost(), host.arm);
  EXPECT_EQ(arms.body_arm().ToHost(), host.body_arm);
}

TEST(CondBodyModes, BackendArmsEqualTheHostArmsBitwise) { ExpectBackendArmsBitwise(MakeBackend(BackendChoice::kCpu).backend.get()); }

TEST(CondBodyModes, CudaBackendArmsEqualTheHostArmsBitwise) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  ExpectBackendArmsBitwise(MakeBackend(BackendChoice::kCuda).backend.get());
}

// the ball with 8 patches and floor contacts, solved with the arms on the backend (BodyPatchArms,
// BodyModes::device_arm; the solver gathers its used arms there, also the free-body level's
// from device_body_arm) and with host arms: the same v-hat and impulses, bitwise (reference: the
// host-arm solve, exact). A second solve with new arms on the backend uploads no arm: 1 B more
// than one without body modes, the free-body level's gate flag of its one body (reference: that
// count, exact; host arms upload 24 B per listed node on top)
TEST(CondBodyModes, BackendArmsSolveAsHostArmsAndUploadNothing) {
  BallSystem sys;
  Backend* be = sys.backend.get();
  const BodyModes host = sys.Modes(8);
  BodyModes nodes;
  AppendBodyPatchNodes(GridPatches(sys.mesh.x, 8), 0, &nodes);
  BodyPatchArms arms(be);
  arms.SetPatches(nodes, {0});
  Array<Scalar> x(be, sys.mesh.x);
  arms.Compute({&x});
  nodes.device_arm = &arms.arm();
  nodes.device_body_arm = &arms.body_arm();
  CondParams p;
  p.max_iterations = 40;
  p.theta_threshold = 1e-300;
  const ContactSet contacts = sys.FloorContacts();
  ASSERT_GT(contacts.size(), 0);
  std::vector<Scalar> v_host, l_host, v_dev, l_dev;
  SolveFromRest(be, *sys.a, sys.b, p, &host, contacts, &v_host, &l_host);
  SolveFromRest(be, *sys.a, sys.b, p, &nodes, contacts, &v_dev, &l_dev);
  EXPECT_EQ(v_dev, v_host);
  EXPECT_EQ(l_dev, l_host);
  // a second solve after the positions moved (the World's every step)
  auto second = [&](const BodyModes* modes) {
    CondSolver solver(be, p);
    if (modes != nullptr) solver.SetBodyModes(*modes);
    solver.SetContacts(contacts);
    Array<Scalar> v(be, std::vector<Scalar>(sys.mesh.x.size(), 0));
    solver.Solve(*sys.a, sys.b, &v);
    std::vector<Scalar> moved = sys.mesh.x;
    for (Scalar& c : moved) c += Scalar(1e-3);
    x.Assign(be, moved);
    arms.Compute({&x});
    if (modes != nullptr) solver.SetBodyModes(*modes);
    solver.SetContacts(contacts);
    v.Assign(be, std::vector<Scalar>(sys.mesh.x.size(), 0));
    const BackendCounters before = be->counters();
    const CondStats st = solver.Solve(*sys.a, sys.b, &v);
    return be->counters() - before - st.loop_counters;
  };
  const BackendCounters on = second(&nodes), off = second(nullptr);
  EXPECT_EQ(on.upload_bytes - off.upload_bytes, 1);
  EXPECT_EQ(on.download_bytes, off.download_bytes);
}

TEST(CondBodyModes, CudaMatchesCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  CondParams p;
  p.theta_threshold = 1e-300;  // never stops early: exactly max_iterations
  p.max_iterations = 60;
  std::vector<Scalar> v_cpu, v_gpu, v_gpu2, l_cpu, l_gpu, l_gpu2;
  BallSystem cpu, gpu(BackendChoice::kCuda);
  cpu.Solve(p, true, cpu.FloorContacts(), &v_cpu, &l_cpu, 8);
  const CondStats st = gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu, &l_gpu, 8);
  gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu2, &l_gpu2, 8);
  ASSERT_EQ(st.iterations, 60);
  EXPECT_LE(test::RelativeError(v_gpu, v_cpu), 1e-12);
  EXPECT_LE(test::RelativeError(l_gpu, l_cpu), 1e-12);
  EXPECT_EQ(v_gpu, v_gpu2);
  EXPECT_EQ(l_gpu, l_gpu2);
  // the sparse coarse solve (factor on the host, g read and dv written each iteration): the CPU's
  // sparse run to 1e-12, run-to-run bitwise
  p.body_mode_dense_patches = 0;
  cpu.Solve(p, true, cpu.FloorContacts(), &v_cpu, &l_cpu, 8);
  gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu, &l_gpu, 8);
  gpu.Solve(p, true, gpu.FloorContacts(), &v_gpu2, &l_gpu2, 8);
  EXPECT_LE(test::RelativeError(v_gpu, v_cpu), 1e-12);
  EXPECT_LE(test::RelativeError(l_gpu, l_cpu), 1e-12);
  EXPECT_EQ(v_gpu, v_gpu2);
  EXPECT_EQ(l_gpu, l_gpu2);
}

}  // namespace
}  // namespace condsim
