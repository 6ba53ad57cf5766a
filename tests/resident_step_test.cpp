// The device-resident step (issue 23 item 2, docs/architecture.md "Device-resident step"): every
// shipped scene's backend counters: after the first step no allocation, and in the solver loop no
// upload but the stop flags and at most one small read per convergence check. References: the
// counts the code must give (exact). The arrays' and matrices' capacity: backend_capacity_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "io/scene.h"
#include "test_util.h"

namespace condsim {
namespace {

std::unique_ptr<Backend> Cpu() { return MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend; }

// a World's FEM nodes, and its cable centres when `cables`
std::int64_t DeformablePoints(const World& world, bool cables) {
  std::int64_t points = 0;
  for (Index b = 0; b < world.num_bodies(); ++b) {
    try {
      points += std::int64_t(world.FemPositions(b).size() / 3);
    } catch (const Error&) {
    }
    if (!cables) continue;
    try {
      points += std::int64_t(world.RodPositions(b).size() / 3);
    } catch (const Error&) {
    }
  }
  return points;
}

// every shipped scene: steps after the first allocate nothing; in the solver loop nothing
// uploaded (one environment: its stop flag is not sent when none runs on) and about one read per
// iteration (theta, plus the momentum check's one read when a theta passed); the controls
// (ApplyControls: drives, cable ends, FEM handles carried on the backend) download nothing and
// upload no DOF-sized array (at most 1 KiB a step). Before the resident step: 57-78 allocations
// per step and 0.78-0.97 uploads per iteration; before the handles were carried on the backend,
// soft_mat_folding's controls moved 18 KiB each way per step.
TEST(ResidentStep, ShippedScenesAllocateOnceAndTransferLittle) {
  for (const char* name : {"box_sliding", "anisotropic_box", "cable_winding", "cable_winding_320", "soft_ball_gripping",
                           "soft_gripper", "soft_mat_folding"}) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    std::int64_t allocations = 0, loop_uploads = 0, loop_downloads = 0, iterations = 0;
    BackendCounters controls;
    for (int k = 0; k < 5; ++k) {
      const BackendCounters before = be->counters();
      ApplyControls(scene, &sw);
      const BackendCounters after_controls = be->counters();
      const StepStats st = sw.world->Step();
      if (k == 0) continue;
      controls = controls + (after_controls - before);
      allocations += (be->counters() - before).allocations;
      loop_uploads += st.cond.loop_counters.uploads;
      loop_downloads += st.cond.loop_counters.downloads;
      iterations += st.cond.iterations;
    }
    std::printf("%s, steps 2-5: %lld allocations, %lld uploads and %lld downloads in %lld iterations\n", name,
                static_cast<long long>(allocations), static_cast<long long>(loop_uploads),
                static_cast<long long>(loop_downloads), static_cast<long long>(iterations));
    EXPECT_EQ(allocations, 0);
    EXPECT_EQ(loop_uploads, 0);
    EXPECT_LE(double(loop_downloads), 1.1 * double(iterations));
    EXPECT_EQ(controls.downloads, 0);
    EXPECT_LE(controls.upload_bytes, 4 * 1024);
  }
}

// a batched World of 4 environments (4 seeds of soft_ball_gripping in one system): the solver
// loop uploads nothing per iteration (the Chebyshev state machine runs on the backend, one item
// per environment, chebyshev_state_ops.h) but the environments' stop flags, one upload per
// iteration at which some environment stops while another runs on, so at most 3 per solve; steps 2-10. Reference: the
// counts the code must give (exact bound). Before (b310cb4: the host's state machine uploaded
// each iteration's nu per environment): 397 uploads in 9 solves of 454 iterations; now 24, the
// same 494 downloads (one read per convergence check) and the same restarts
TEST(ResidentStep, BatchUploadsNothingPerIteration) {
  std::vector<Scene> scenes;
  for (std::uint64_t seed : {3, 11, 29, 41}) scenes.push_back(LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/soft_ball_gripping.json", &seed));
  auto be = Cpu();
  std::vector<SceneWorld> batch = BuildBatch(scenes, be.get());
  ASSERT_EQ(batch[0].world->num_envs(), 4);
  std::int64_t loop_uploads = 0, loop_downloads = 0, iterations = 0, solves = 0, restarts = 0;
  for (int k = 0; k < 10; ++k) {
    for (std::size_t e = 0; e < batch.size(); ++e) ApplyControls(scenes[e], &batch[e]);
    const StepStats st = batch[0].world->Step();
    if (k == 0) continue;
    loop_uploads += st.cond.loop_counters.uploads;
    loop_downloads += st.cond.loop_counters.downloads;
    iterations += st.cond.iterations;
    restarts += st.cond.chebyshev_restarts;
    ++solves;
  }
  std::printf("batch of 4, steps 2-10: %lld uploads and %lld downloads in %lld solves, %lld iterations, %lld restarts\n",
              static_cast<long long>(loop_uploads), static_cast<long long>(loop_downloads), static_cast<long long>(solves),
              static_cast<long long>(iterations), static_cast<long long>(restarts));
  EXPECT_GT(iterations, 10 * solves);  // Chebyshev ran (l_s = 10)
  EXPECT_LE(loop_uploads, 3 * solves);
}

// the world's own stages (assembly, v-hat's checks, health, integration, the inelastic stage:
// World::Step's traffic minus detection/nodalization, the body modes, the system's new pattern and the COND
// solver's, StepStats) move a bounded number of bytes per step, no DOF-sized array: at most 4 KB
// each way per step plus 192 B per contact (the impulses read back, 24 B; the inelastic stage's
// touched nodes, 48 B down and 40 B up each, up to 3 per contact side). Reference: that bound (a
// DOF-sized array is 18.5 KB on soft_gripper, 33 KB on soft_mat_folding). Now, steps 2-20, the
// largest step: 384 B up / 1800 B down (soft_gripper), 0 / 657 B (soft_mat_folding); before
// (b310cb4, the FEM rigid predictor, v-hat and the inelastic stage through the host; this test
// fails there): 37344 / 76864 B and 69264 / 150080 B
TEST(ResidentStep, WorldStagesTransferNoDofSizedArrays) {
  for (const char* name : {"soft_gripper", "soft_mat_folding"}) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    std::int64_t max_up = 0, max_down = 0, max_contacts = 0;
    bool within = true;
    for (int k = 0; k < 20; ++k) {
      ApplyControls(scene, &sw);
      const BackendCounters before = be->counters();
      const StepStats st = sw.world->Step();
      if (k == 0) continue;
      const BackendCounters own = (be->counters() - before) - st.detect_counters - st.modes_counters - st.pattern_counters - st.solver_counters;
      const std::int64_t bound = 4096 + 192 * std::int64_t(st.contacts);
      within = within && own.upload_bytes <= bound && own.download_bytes <= bound;
      max_up = std::max(max_up, own.upload_bytes);
      max_down = std::max(max_down, own.download_bytes);
      max_contacts = std::max<std::int64_t>(max_contacts, st.contacts);
    }
    std::printf("%s, steps 2-20: world stages at most %lld B up, %lld B down per step; up to %lld contacts\n", name,
                static_cast<long long>(max_up), static_cast<long long>(max_down), static_cast<long long>(max_contacts));
    EXPECT_GT(max_contacts, 0);
    EXPECT_TRUE(within);
  }
}

// soft_mat_folding, steps 2-10: the world's own stages (the inelastic stage, the records) read
// no impulses unless asked: at most 1 B per contact and 1 KB more per step (which contacts are
// pressed; its lone S-contacts are chosen and corrected on the backend, InelasticLoneKeyOp and
// InelasticNodeOp, so nothing goes up: ~1.6 KB of their indices did), where reading the
// impulses costs 24 B per contact; World::contacts() then reads them once (24 B per contact, one
// download) and the flagged points' positions for the frames and contact points only the backend
// made (DetectStage::Complete: 24 B per point, one download; each of the mat's flagged points
// touches the table alone, one contact each), and a second call reads nothing. Reference: those
// byte counts (exact bounds)
TEST(ResidentStep, ImpulsesAreReadOnlyForTheRecords) {
  const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/soft_mat_folding.json");
  auto be = Cpu();
  SceneWorld sw = BuildWorld(scene, be.get());
  for (int k = 0; k < 10; ++k) {
    ApplyControls(scene, &sw);
    const BackendCounters before = be->counters();
    const StepStats st = sw.world->Step();
    const BackendCounters own = (be->counters() - before) - st.detect_counters - st.modes_counters - st.pattern_counters - st.solver_counters;
    const BackendCounters c0 = be->counters();
    const std::size_t records = sw.world->contacts().size();
    const BackendCounters first = be->counters() - c0;
    const BackendCounters c1 = be->counters();
    sw.world->contacts();
    const BackendCounters second = be->counters() - c1;
    if (k == 0) continue;
    ASSERT_GT(st.contacts, 100) << "step " << k + 1;
    EXPECT_LE(own.download_bytes, std::int64_t(st.contacts) + 1024) << "step " << k + 1;
    EXPECT_EQ(own.upload_bytes, 0) << "step " << k + 1;
    EXPECT_EQ(records, std::size_t(st.contacts));
    EXPECT_EQ(first.downloads, 2);
    EXPECT_EQ(first.download_bytes, 48 * std::int64_t(st.contacts));
    EXPECT_EQ(second.downloads, 0);
  }
}

// the FEM scenes, steps 2-20: the body modes' stage (rigid groups and the body modes' patches
// and arms, StepStats::modes_counters) moves no FEM position or arm: its arms are computed on the
// backend (BodyPatchArms) and positions come to the host only when patches are made (the first
// step); and the solver gathers the arms it uses on the backend. Reference: at most 256 B each
// way per step for the stage (a bound that does not grow with the nodes; 24 B per FEM node is
// 34.6 KB on soft_mat_folding), detection bounded by its contacts as in
// DetectionDownloadsScaleWithContactsNotNodes. Before (7e676ab: the FEM x downloaded every step
// for the host's arms): the stage downloaded 24 B per FEM node, 34632 B a step on
// soft_mat_folding, 31944 on soft_ball_gripping, 18480 on soft_gripper
TEST(ResidentStep, BodyModeArmsMoveNoFemPositions) {
  for (const char* name : {"soft_mat_folding", "soft_ball_gripping", "soft_gripper"}) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    const std::int64_t fem_nodes = DeformablePoints(*sw.world, false);
    ASSERT_GT(fem_nodes, 0);
    std::int64_t max_up = 0, max_down = 0;
    for (int k = 0; k < 20; ++k) {
      ApplyControls(scene, &sw);
      const StepStats st = sw.world->Step();
      if (k == 0) continue;
      max_up = std::max(max_up, st.modes_counters.upload_bytes);
      max_down = std::max(max_down, st.modes_counters.download_bytes);
      EXPECT_LE(st.modes_counters.upload_bytes, 256) << "step " << k + 1;
      EXPECT_LE(st.modes_counters.download_bytes, 256) << "step " << k + 1;
      EXPECT_LE(st.detect_counters.download_bytes, 136 * std::int64_t(st.contacts) + 16 * 8) << "step " << k + 1;
    }
    std::printf("%s, steps 2-20: body modes stage at most %lld B up, %lld B down per step; %lld FEM nodes\n", name,
                static_cast<long long>(max_up), static_cast<long long>(max_down), static_cast<long long>(fem_nodes));
  }
}

// the scenes whose contacts grow after the first step, stepped past their growth points: no step
// after the first allocates (the arrays the contacts size reserve ContactBounds from the potential
// contact points once, World::ReserveForContacts). Reference: 0 (exact). Before (d869291), over
// these steps: cable_winding 822 allocations in 154 steps (the last at step 200), cable_winding_320
// 366 in 50, soft_gripper 53 (all at step 15, the fingers close), soft_ball_gripping 66 in 3 (the
// last at step 36, the body modes).
TEST(ResidentStep, GrowingContactsAllocateNothingAfterTheFirstStep) {
  const std::pair<const char*, int> runs[] = {{"cable_winding", 200}, {"cable_winding_320", 60}, {"soft_gripper", 40},
                                              {"soft_ball_gripping", 40}};
  for (const auto& [name, steps] : runs) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    std::int64_t allocations = 0, steps_allocating = 0, last = 0;
    Index max_contacts = 0;
    for (int k = 0; k < steps; ++k) {
      const BackendCounters before = be->counters();
      ApplyControls(scene, &sw);
      const StepStats st = sw.world->Step();
      Index contacts = 0;
      for (const EnvStepStats& e : st.envs) contacts += e.contacts;
      max_contacts = std::max(max_contacts, contacts);
      const std::int64_t n = (be->counters() - before).allocations;
      if (k == 0 || n == 0) continue;
      allocations += n;
      ++steps_allocating;
      last = k + 1;
    }
    std::printf("%s, steps 2-%d: %lld allocations in %lld steps (last: step %lld), up to %d contacts\n", name, steps,
                static_cast<long long>(allocations), static_cast<long long>(steps_allocating), static_cast<long long>(last),
                int(max_contacts));
    EXPECT_GT(max_contacts, 0);
    EXPECT_EQ(allocations, 0);
  }
}

// contacts that first come after the first step: a falling FEM ball and a falling rigid sphere
// (no contact at step 1), an FEM ball onto a resting one and a cable onto it (their first FEM-FEM
// and cable-FEM contacts, with virtual nodes, come later). The solver's levels first prepared then
// (the body modes with contact nodes left out) allocate nothing either. Reference: 0 allocations
// after the first step (exact), and more contacts later than at step 1 in every run. Before: the
// falling FEM ball allocated 10 arrays at its first contact (the body modes' per-node offsets and
// per-patch and per-body arrays)
TEST(ResidentStep, FirstContactAfterTheFirstStepAllocatesNothing) {
  const std::string ball = R"({"name": "%s", "mesh": {"generator": "sphere", "center": [0, 0, %s], "radius": 0.03,
      "element_size": 0.01}, "material": {"young": 1e6, "poisson": 0.35, "density": 1000, "rayleigh_alpha": 5},
      "mu": 0.5, "self_contact": false})";
  const auto fem = [&ball](const char* name, const char* z) {
    char text[512];
    std::snprintf(text, sizeof(text), ball.c_str(), name, z);
    return std::string(text);
  };
  const std::string head = R"({"world": {"dt": 0.01}, "solver": {"theta_threshold": 1e-4}, "static": [{"type": "plane", "mu": 0.5}], )";
  const std::string cable = R"("rods": [{"name": "cable", "points": [[0, -0.1, 0.1], [0, 0.1, 0.1]], "segments": 30,
      "material": {"radius": 0.002, "young": 2.954e6, "poisson": 0.49, "density": 1259, "rayleigh_alpha": 2},
      "mu": 0.5, "self_contact": true}])";
  const std::pair<const char*, std::string> runs[] = {
      {"FEM onto FEM", head + R"("fem_bodies": [)" + fem("a", "0.0301") + ", " + fem("b", "0.12") + "]}"},
      {"cable onto FEM", head + R"("fem_bodies": [)" + fem("a", "0.0301") + "], " + cable + "}"},
      {"FEM ball falling", head + R"("fem_bodies": [)" + fem("a", "0.08") + "]}"},
      {"rigid sphere falling", head + R"("rigid_bodies": [{"name": "s", "shape": "sphere", "radius": 0.03, "mass": 0.2,
          "position": [0, 0, 0.1], "mu": 0.3}]})"}};
  for (const auto& [name, text] : runs) {
    SCOPED_TRACE(name);
    const Scene scene = ParseScene(text, "falling.json", "");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    std::int64_t allocations = 0;
    Index first_contacts = -1, max_contacts = 0;
    for (int k = 0; k < 30; ++k) {
      const BackendCounters before = be->counters();
      const StepStats st = sw.world->Step();
      if (k == 0) first_contacts = st.contacts;
      max_contacts = std::max(max_contacts, st.contacts);
      if (k > 0) allocations += (be->counters() - before).allocations;
    }
    std::printf("%s: %d contacts at step 1, up to %d later; %lld allocations after step 1\n", name, int(first_contacts),
                int(max_contacts), static_cast<long long>(allocations));
    EXPECT_EQ(allocations, 0);
    EXPECT_GT(max_contacts, first_contacts);
  }
}

// world.contact_reserve = 0 reserves nothing: the first step allocates less, and cable_winding's
// growing contacts then allocate in later steps (references: the default's byte count and 0
// allocations after the first step, exact); the results do not depend on it (bitwise, 60 steps)
TEST(ResidentStep, ContactReserveZeroTradesAllocationsForMemory) {
  const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/cable_winding.json");
  struct Run {
    std::int64_t first_bytes = 0, later_allocations = 0;
    std::vector<Scalar> x;
  };
  auto run = [&](int reserve) {
    Scene s = scene;
    s.world.contact_reserve = reserve;
    auto be = Cpu();
    SceneWorld sw = BuildWorld(s, be.get());
    Run r;
    for (int k = 0; k < 60; ++k) {
      const BackendCounters before = be->counters();
      ApplyControls(s, &sw);
      sw.world->Step();
      const BackendCounters d = be->counters() - before;
      if (k == 0) r.first_bytes = d.allocated_bytes;
      else r.later_allocations += d.allocations;
    }
    r.x = sw.world->RodPositions(sw.world->num_bodies() - 1);  // the cable, the scene's only body
    return r;
  };
  const Run reserved = run(4), grown = run(0);
  std::printf("contact_reserve 4: %lld B in the first step, %lld allocations after; 0: %lld B, %lld allocations\n",
              static_cast<long long>(reserved.first_bytes), static_cast<long long>(reserved.later_allocations),
              static_cast<long long>(grown.first_bytes), static_cast<long long>(grown.later_allocations));
  EXPECT_EQ(reserved.later_allocations, 0);
  EXPECT_GT(grown.later_allocations, 0);
  EXPECT_LT(grown.first_bytes, reserved.first_bytes / 4);
  EXPECT_EQ(reserved.x, grown.x);
}

// detection downloads what its contacts need, not the bodies' state (issue 23 item 2): per step
// at most 136 bytes per contact (a triangle hit: query, triangle, gap, weights, normal and the
// triangle's 3 vertices; a flagged FEM node or cable centre: 36 bytes, index, position and the
// shapes in reach, and every flagged point makes at least one contact; a cable link pair: 80 bytes,
// two indices and its contact) plus 16 reads of one value (the reductions and scans); neither
// FEM nor cable positions and velocities come to the host. Reference: that bound (exact, from the
// records' sizes), and below one host copy of the FEM nodes' and cable centres' positions. Where
// no flagged point reaches a rigid body (soft_mat_folding) its position stays on the backend:
// 5 bytes per point (index, shapes in reach in one byte), DetectStage::Deferred.
// Before (b310cb4), steps 2-5: soft_mat_folding 67.7 KiB a step (48 bytes per FEM node, 1443
// nodes, and 40 bytes of reductions) for 471 contacts; soft_ball_gripping 62.4 KiB (1331 nodes)
// for 12 contacts; soft_gripper 36.1 KiB (770 nodes) for 4; cable_winding_320 22.5 KiB (320
// centres: x and the nodes' v) for 1 contact. Now 2.4, 0.1, 0.0 and 0.0 KiB.
TEST(ResidentStep, DetectionDownloadsScaleWithContactsNotNodes) {
  for (const char* name : {"soft_mat_folding", "soft_ball_gripping", "soft_gripper", "cable_winding_320"}) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto be = Cpu();
    SceneWorld sw = BuildWorld(scene, be.get());
    // the deformable points: FEM nodes and cable centres
    const std::int64_t points = DeformablePoints(*sw.world, true);
    std::int64_t bytes = 0, contacts = 0, steps = 0;
    for (int k = 0; k < 5; ++k) {
      ApplyControls(scene, &sw);
      const StepStats st = sw.world->Step();
      if (k == 0) continue;
      bytes += st.detect_counters.download_bytes;
      contacts += st.contacts;
      ++steps;
      EXPECT_LE(st.detect_counters.download_bytes, 136 * std::int64_t(st.contacts) + 16 * 8) << "step " << k + 1;
      EXPECT_LT(st.detect_counters.download_bytes, 24 * points) << "step " << k + 1;
      if (std::string(name) == "soft_mat_folding") {
        EXPECT_LE(st.detect_counters.download_bytes, 5 * std::int64_t(st.contacts) + 16 * 8) << "step " << k + 1;
      }
    }
    std::printf("%s, steps 2-5: detection downloads %.1f KiB a step for %.0f contacts, %lld FEM nodes and cable centres\n", name,
                double(bytes) / 1024 / double(steps), double(contacts) / double(steps), static_cast<long long>(points));
  }
}

// soft_mat_folding and soft_ball_gripping, steps 1-10: once every free body is loaded (a contact
// of it carried an impulse) the free-body level's correction is 0 for the rest of the solve, and
// the solver leaves the level out from the check that reads that flag (CondSolver::FreeLevel).
// Reference: the same steps with the level kept (World::set_keep_loaded_free_level): the same
// iteration counts and FEM positions and velocities, bitwise, in fewer launches (the level's
// sums, gate, solve and pass per iteration)
TEST(ResidentStep, LoadedFreeLevelIsLeftOut) {
  for (const char* name : {"soft_mat_folding", "soft_ball_gripping"}) {
    SCOPED_TRACE(name);
    const Scene scene = LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json");
    auto b1 = Cpu(), b2 = Cpu();
    SceneWorld skip = BuildWorld(scene, b1.get()), keep = BuildWorld(scene, b2.get());
    keep.world->set_keep_loaded_free_level(true);
    std::int64_t launches_skip = 0, launches_keep = 0;
    for (int k = 0; k < 10; ++k) {
      ApplyControls(scene, &skip);
      ApplyControls(scene, &keep);
      const StepStats s1 = skip.world->Step(), s2 = keep.world->Step();
      EXPECT_EQ(s1.cond.iterations, s2.cond.iterations) << "step " << k + 1;
      for (const Index f : skip.fem_ids) {
        EXPECT_EQ(skip.world->FemPositions(f), keep.world->FemPositions(f)) << "step " << k + 1;
        EXPECT_EQ(skip.world->FemVelocities(f), keep.world->FemVelocities(f)) << "step " << k + 1;
      }
      launches_skip += s1.cond.loop_counters.launches;
      launches_keep += s2.cond.loop_counters.launches;
    }
    std::printf("%s, steps 1-10: %lld launches in the loops with the loaded free level left out, %lld with it kept\n", name,
                static_cast<long long>(launches_skip), static_cast<long long>(launches_keep));
    EXPECT_LT(launches_skip, launches_keep);
  }
}

// StepStats::bodies / World::BodyMomenta for FEM bodies and cables: the point terms summed per
// body on the backend (models/world/momenta.h), against the same sums on the host from the state
// read back, in long double (reference: the definitions sum m v.v / 2, sum m v, sum x × m v, plus
// a cable segment's spin w^T I_w w / 2 and I_w w, I_w = R diag(I) R^T). Tolerance 1e-12 of the
// sum of the terms' magnitudes (the backend sums in 4096-term chunks). Traffic: one read of 7
// numbers per deformable body and nothing uploaded after the first call (before: every FEM
// body's x and v and every cable's x, q and (v, w) read back each step). Cases: the soft mat (one
// FEM body), the soft gripper (two), a batch of two cable_winding environments (two cables)
TEST(ResidentStep, BodyMomentaAreSummedOnTheBackend) {
  for (const auto& [name, envs] : {std::make_pair("soft_mat_folding", 1), std::make_pair("soft_gripper", 1), std::make_pair("cable_winding", 2)}) {
    SCOPED_TRACE(name);
    std::vector<Scene> scenes;
    for (int e = 0; e < envs; ++e) {
      const std::uint64_t seed = std::uint64_t(e);
      scenes.push_back(LoadScene(std::string(CONDSIM_SOURCE_DIR) + "/scenes/" + name + ".json", envs > 1 ? &seed : nullptr));
    }
    auto be = Cpu();
    std::vector<SceneWorld> batch = BuildBatch(scenes, be.get());
    for (int k = 0; k < 3; ++k) {
      for (int e = 0; e < envs; ++e) ApplyControls(scenes[std::size_t(e)], &batch[std::size_t(e)]);
      batch[0].world->Step();
    }
    // every environment's bodies (their ids run on across environments)
    SceneWorld sw = batch[0];
    for (int e = 1; e < envs; ++e) {
      sw.fem_ids.insert(sw.fem_ids.end(), batch[std::size_t(e)].fem_ids.begin(), batch[std::size_t(e)].fem_ids.end());
      sw.rod_ids.insert(sw.rod_ids.end(), batch[std::size_t(e)].rod_ids.begin(), batch[std::size_t(e)].rod_ids.end());
    }
    World& w = *sw.world;
    w.BodyMomenta();  // the first call uploads the masses
    const BackendCounters c0 = be->counters();
    const std::vector<BodyMomentum> m = w.BodyMomenta();
    const BackendCounters d = be->counters() - c0;
    const std::size_t deformable = sw.fem_ids.size() + sw.rod_ids.size();
    EXPECT_EQ(deformable, std::size_t(std::string(name) == "soft_mat_folding" ? 1 : 2));
    EXPECT_EQ(d.downloads, 1);
    EXPECT_EQ(d.download_bytes, std::int64_t(7 * sizeof(Scalar) * deformable));
    EXPECT_EQ(d.uploads, 0);
    EXPECT_EQ(d.allocations, 0);
    // the host sums: 7 values and the sum of the magnitudes of their terms
    const auto check = [&](Index id, const std::vector<long double>& ref, const std::vector<long double>& mag) {
      const Scalar got[7] = {m[std::size_t(id)].kinetic_energy, m[std::size_t(id)].linear[0], m[std::size_t(id)].linear[1],
                             m[std::size_t(id)].linear[2],      m[std::size_t(id)].angular[0], m[std::size_t(id)].angular[1],
                             m[std::size_t(id)].angular[2]};
      for (int k = 0; k < 7; ++k) EXPECT_NEAR(double(got[k]), double(ref[std::size_t(k)]), 1e-12 * double(mag[std::size_t(k)]) + 1e-300) << "body " << id << " term " << k;
    };
    const auto add = [](std::vector<long double>* ref, std::vector<long double>* mag, int k, long double t) {
      (*ref)[std::size_t(k)] += t;
      (*mag)[std::size_t(k)] += t < 0 ? -t : t;
    };
    for (Index id : sw.fem_ids) {
      const std::vector<Scalar> x = w.FemPositions(id), v = w.FemVelocities(id), mass = w.fem_model(id).lumped_mass();
      std::vector<long double> ref(7, 0), mag(7, 0);
      for (std::size_t i = 0; i < mass.size(); ++i) {
        const long double p[3] = {mass[i] * (long double)v[3 * i], mass[i] * (long double)v[3 * i + 1], mass[i] * (long double)v[3 * i + 2]};
        add(&ref, &mag, 0, 0.5L * (p[0] * v[3 * i] + p[1] * v[3 * i + 1] + p[2] * v[3 * i + 2]));
        for (int a = 0; a < 3; ++a) add(&ref, &mag, 1 + a, p[a]);
        const long double xi[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
        add(&ref, &mag, 4, xi[1] * p[2] - xi[2] * p[1]);
        add(&ref, &mag, 5, xi[2] * p[0] - xi[0] * p[2]);
        add(&ref, &mag, 6, xi[0] * p[1] - xi[1] * p[0]);
      }
      check(id, ref, mag);
    }
    for (Index id : sw.rod_ids) {
      const std::vector<Scalar> x = w.RodPositions(id), v = w.RodVelocities(id), om = w.RodAngularVelocities(id);
      const std::vector<Scalar> q = w.rod_model(id).orientations().ToHost();
      const long double ms = w.rod_model(id).segment_mass();
      const std::vector<Scalar> inertia = w.rod_model(id).inertia();
      std::vector<long double> ref(7, 0), mag(7, 0);
      for (std::size_t s = 0; s < x.size() / 3; ++s) {
        const long double p[3] = {ms * v[3 * s], ms * v[3 * s + 1], ms * v[3 * s + 2]};
        add(&ref, &mag, 0, 0.5L * (p[0] * v[3 * s] + p[1] * v[3 * s + 1] + p[2] * v[3 * s + 2]));
        for (int a = 0; a < 3; ++a) add(&ref, &mag, 1 + a, p[a]);
        add(&ref, &mag, 4, x[3 * s + 1] * p[2] - x[3 * s + 2] * p[1]);
        add(&ref, &mag, 5, x[3 * s + 2] * p[0] - x[3 * s] * p[2]);
        add(&ref, &mag, 6, x[3 * s] * p[1] - x[3 * s + 1] * p[0]);
        // spin: I_w w with I_w = R diag(I) R^T (R from the unit quaternion w, x, y, z)
        const long double qw = q[4 * s], qx = q[4 * s + 1], qy = q[4 * s + 2], qz = q[4 * s + 3];
        const long double r[3][3] = {{1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)},
                                     {2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)},
                                     {2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)}};
        long double wb[3], lb[3];
        for (int a = 0; a < 3; ++a) wb[a] = r[0][a] * om[3 * s] + r[1][a] * om[3 * s + 1] + r[2][a] * om[3 * s + 2];
        for (int a = 0; a < 3; ++a) lb[a] = inertia[std::size_t(a)] * wb[a];
        add(&ref, &mag, 0, 0.5L * (wb[0] * lb[0] + wb[1] * lb[1] + wb[2] * lb[2]));
        for (int a = 0; a < 3; ++a) add(&ref, &mag, 4 + a, r[a][0] * lb[0] + r[a][1] * lb[1] + r[a][2] * lb[2]);
      }
      check(id, ref, mag);
    }
  }
}

}  // namespace
}  // namespace condsim
