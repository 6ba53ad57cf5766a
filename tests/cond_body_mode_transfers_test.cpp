// The body modes' transfers, arms and CUDA parity (docs/solver.md "Body modes"; the systems of
// tests/body_mode_systems.h):
// - the set-up moves no coarse matrix between host and backend (BackendCounters), with the dense
//   inverse and with the sparse factor; new arms or gates upload only themselves; arms made on
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

#include "body_mode_systems.h"
#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::BallSystem;
using test::PatchModes;
using test::PlateSystem;
using test::SolveFromRest;

TEST(CondBodyModes, SetupMovesNoCoarseMatrix) {
  // the set-up of a solve (what Solve asks of the backend less its fixed-point loop) on the plate
  // with 24 patches requested (GridPatches makes 16: one body, A_c 96 x 96, 73728 bytes): the
  // coarse matrices and their inverses stay on the backend, so the only download is the size of
  // T (4 B, the total of BodyModeCouplingOp's scan) on a solve whose patch structure is new, none
  // on one that keeps it (the host inverse downloaded A_c and uploaded A_c^-1 every solve: 73728 B
  // each way, measured on b310cb4); a second solve with the same patches and contacts uploads
  // nothing more than one without body modes (the patch structure is kept; b310cb4 uploaded it
  // and A_c^-1 again: 90656 B more). The same with the sparse factor (body_mode_dense_patches 0):
  // A_c is factorized on the backend each solve, its structure uploaded on the first only (the
  // host factor read A_c's blocks and uploaded L: 288 B per block each way)
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
  for (const int dense : {128, 0}) {
    p.body_mode_dense_patches = dense;
    for (int solves : {1, 2}) {
      const BackendCounters on = setup(true, solves), off = setup(false, solves);
      std::cout << "[ info     ] " << (dense > 0 ? "dense" : "sparse") << ", solve " << solves << " set-up: downloads "
                << on.download_bytes << " B (" << off.download_bytes << " B without modes), uploads " << on.upload_bytes << " B ("
                << off.upload_bytes << " B without); A_c " << matrix_bytes << " B\n";
      EXPECT_EQ(on.download_bytes, off.download_bytes + (solves == 1 ? 4 : 0)) << "solve " << solves;
      // the first solve uploads the patch structure (its listed nodes and chunks; 10248 B here, the
      // per-node maps and the rows of T made on the backend) and the sparse factor's structure
      if (solves == 2) {
        EXPECT_EQ(on.upload_bytes, off.upload_bytes) << "solve " << solves;
      }
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

// the ball's 8 grid patches with their arms made on the backend from its positions there
// (BodyPatchArms; BodyModes::device_arm and device_body_arm)
struct BackendArmBall {
  BallSystem sys;
  BodyPatchArms arms{sys.backend.get()};
  Array<Scalar> x{sys.backend.get(), sys.mesh.x};
  BodyModes nodes;
  BackendArmBall() {
    AppendBodyPatchNodes(GridPatches(sys.mesh.x, 8), 0, &nodes);
    arms.SetPatches(nodes, {0});
    arms.Compute({&x});
    nodes.device_arm = &arms.arm();
    nodes.device_body_arm = &arms.body_arm();
  }
};

// the ball with 8 patches and floor contacts, solved with the arms on the backend (BodyPatchArms,
// BodyModes::device_arm; the solver gathers its used arms there, also the free-body level's
// from device_body_arm) and with host arms: the same v-hat and impulses, bitwise (reference: the
// host-arm solve, exact). A second solve with new arms on the backend uploads no arm: 1 B more
// than one without body modes, the free-body level's gate flag of its one body (reference: that
// count, exact; host arms upload 24 B per listed node on top)
TEST(CondBodyModes, BackendArmsSolveAsHostArmsAndUploadNothing) {
  BackendArmBall ball;
  BallSystem& sys = ball.sys;
  Backend* be = sys.backend.get();
  const BodyModes host = sys.Modes(8);
  const BodyModes& nodes = ball.nodes;
  BodyPatchArms& arms = ball.arms;
  Array<Scalar>& x = ball.x;
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

// the patch level's listed nodes and halo made on the backend from the contact step's node flags
// (BodyModeKeepOp, BodyModeListOp, BodyModeHaloFlagOp) and the free-body level's gates from the
// contacts' nodes (BodyModeGateKeyOp) when a new contact set changes them, against the same solves
// with those uploaded from the host's selection (set_body_mode_list_on_backend(false)): the same
// records of both levels on the backend, v-hat and impulses, bitwise (reference: the host's
// selection), and the second solve's set-up uploads at least the listed nodes' 4 B each less
TEST(CondBodyModes, NewContactNodesUploadNoListedNode) {
  BackendArmBall ball;
  BallSystem& sys = ball.sys;
  Backend* be = sys.backend.get();
  const BodyModes& nodes = ball.nodes;
  const auto below = [&](Scalar z) {
    ContactSet c;
    for (Index i = 0; i < sys.mesh.num_nodes(); ++i)
      if (sys.mesh.Node(i)[2] < z) c.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), 0, 0.5, 0.5);
    return c;
  };
  const ContactSet low = below(0.004), high = below(0.02);
  ASSERT_GT(high.size(), low.size());
  CondParams p;
  p.max_iterations = 40;
  p.theta_threshold = 1e-300;
  struct Run {
    std::vector<Scalar> v, lambda;
    BodyModeHost record, free_record;
    BackendCounters setup;
  };
  const auto run = [&](bool on_backend) {
    CondSolver solver(be, p);
    solver.set_body_mode_list_on_backend(on_backend);
    Run r;
    for (const ContactSet* c : {&low, &high}) {
      solver.SetBodyModes(nodes);
      solver.SetContacts(*c);
      Array<Scalar> v(be, std::vector<Scalar>(sys.mesh.x.size(), 0));
      const BackendCounters before = be->counters();
      const CondStats st = solver.Solve(*sys.a, sys.b, &v);
      r.setup = be->counters() - before - st.loop_counters;
      r.v = v.ToHost();
      r.lambda = solver.Impulses();
    }
    r.record = solver.BackendBodyModes();
    r.free_record = solver.BackendBodyModes(true);
    return r;
  };
  const Run on = run(true), off = run(false);
  EXPECT_EQ(on.v, off.v);
  EXPECT_EQ(on.lambda, off.lambda);
#define CONDSIM_EXPECT_FIELD(T, name)                    \
  EXPECT_EQ(on.record.name, off.record.name) << #name; \
  EXPECT_EQ(on.free_record.name, off.free_record.name) << "free level's " << #name;
  CONDSIM_BODY_MODE_FIELDS(CONDSIM_EXPECT_FIELD)
#undef CONDSIM_EXPECT_FIELD
  ASSERT_GT(on.record.node.size(), 16u);
  EXPECT_GT(on.record.halo.size(), 0u);
  EXPECT_EQ(on.free_record.gate_contact.size(), std::size_t(high.size()));
  std::cout << "[ info     ] second solve's set-up: uploads " << on.setup.upload_bytes << " B (" << off.setup.upload_bytes
            << " B with the listed nodes from the host), " << on.record.node.size() << " listed nodes\n";
  EXPECT_LE(on.setup.upload_bytes + 4 * std::int64_t(on.record.node.size()), off.setup.upload_bytes);
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
  // the sparse coarse solve (factor and solve on the backend): the CPU's sparse run to 1e-12,
  // run-to-run bitwise
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
