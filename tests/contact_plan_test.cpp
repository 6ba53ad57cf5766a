// The contact record the backend remakes (issue 23, docs/architecture.md "Device-resident step"):
// the S-contacts of FEM surface nodes and cable centres against static shapes are made again on
// the backend from the flagged points (Detector::WriteContacts, ContactPlanFillOp), the other
// contacts copied from the host's plan. Reference: the host's contact set, which DetectStage
// makes with the same functions (AnalyticProximity, UncheckedShapeFrame, RotateTangents) on the
// same doubles: bitwise, on every analytic shape type, anisotropic friction and a rotated
// tangent basis, next to host-made contacts (rigid samples, FEM against FEM and a rigid body).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "condsim/backend.h"
#include "io/scene.h"
#include "models/cond/cond_solver.h"
#include "test_util.h"

namespace condsim {
namespace {

// FEM balls onto a tilted anisotropic plane, a turned anisotropic box, a sphere and a capsule; a
// cable across the capsule (and the ball on it); a rigid box onto the plane
const char* kShapesScene = R"({
  "world": {"dt": 0.01},
  "static": [
    {"type": "plane", "rotation": [0.05, 0.02, 0.3], "mu": [0.3, 0.6]},
    {"type": "box", "center": [0.2, 0, 0.02], "rotation": [0, 0, 0.4], "half_extents": [0.04, 0.04, 0.02], "mu": [0.2, 0.5]},
    {"type": "sphere", "center": [0.4, 0, 0.03], "radius": 0.03, "mu": 0.4},
    {"type": "capsule", "center": [0.6, 0, 0.02], "rotation": [0, 1.5707963, 0], "radius": 0.02, "half_length": 0.05, "mu": 0.7}],
  "fem_bodies": [
    {"name": "a", "mesh": {"generator": "sphere", "center": [0, 0, 0.022], "radius": 0.02, "element_size": 0.01},
     "material": {"young": 5e5, "poisson": 0.35}},
    {"name": "b", "mesh": {"generator": "sphere", "center": [0.2, 0, 0.061], "radius": 0.02, "element_size": 0.01},
     "material": {"young": 5e5, "poisson": 0.35}},
    {"name": "c", "mesh": {"generator": "sphere", "center": [0.4, 0, 0.081], "radius": 0.02, "element_size": 0.01},
     "material": {"young": 5e5, "poisson": 0.35}},
    {"name": "d", "mesh": {"generator": "sphere", "center": [0.6, 0.03, 0.061], "radius": 0.02, "element_size": 0.01},
     "material": {"young": 5e5, "poisson": 0.35}}],
  "rods": [{"name": "cable", "points": [[0.58, -0.1, 0.0425], [0.62, 0.1, 0.0425]], "segments": 20,
            "material": {"radius": 0.002, "young": 2e6, "poisson": 0.45, "density": 1200}}],
  "rigid_bodies": [{"name": "block", "shape": "box", "half_extents": [0.01, 0.01, 0.01], "mass": 0.05,
                    "position": [-0.1, 0, 0.016]}]})";

// every field of the backend's record equal to the host's set, bitwise
void ExpectSameContacts(const ContactSet& host, const ContactSet& backend) {
#define CONDSIM_EXPECT_FIELD(T, name) EXPECT_EQ(backend.name, host.name) << #name;
  CONDSIM_CONTACT_FIELDS(CONDSIM_EXPECT_FIELD)
#undef CONDSIM_EXPECT_FIELD
}

// 20 steps (the balls and the block land, the cable drapes): at every step the record on the
// backend equals the host's set, with and without a rotated tangent basis; the backend remakes
// the S-contacts of the FEM nodes and cable centres (a part of the set), the host's others stay
TEST(ContactPlan, BackendRecordEqualsTheHostSet) {
  const Scene scene = ParseScene(kShapesScene, "shapes.json", "");
  for (const Scalar angle : {Scalar(0), Scalar(0.7)}) {
    SCOPED_TRACE(angle);
    auto backend = MakeBackend(BackendChoice::kCpu).backend;
    SceneWorld sw = BuildWorld(scene, backend.get());
    sw.world->set_tangent_rotation(angle);
    Index remade = 0, host_made = 0, with_rigid = 0, with_fem = 0;
    for (int k = 0; k < 20; ++k) {
      ApplyControls(scene, &sw);
      sw.world->Step();
      const ContactSet& host = sw.world->HostContacts();
      ExpectSameContacts(host, sw.world->BackendContacts());
      remade += sw.world->remade_contacts();
      host_made += host.size() - sw.world->remade_contacts();
      for (const ContactRecord& r : sw.world->contacts()) {
        with_rigid += r.body_i == sw.rigid_ids[0] || r.body_j == sw.rigid_ids[0];
        with_fem += r.body_j >= 0 && r.body_i != r.body_j && r.body_j != sw.rigid_ids[0];
      }
    }
    // every shape type touched: the S-contacts' shapes among the records
    std::vector<int> shapes(4, 0);
    for (const ContactRecord& r : sw.world->contacts())
      if (r.shape >= 0) shapes[std::size_t(r.shape)] = 1;
    std::printf("angle %.1f: %lld contacts remade on the backend, %lld made on the host (%lld with the block, %lld between bodies)\n",
                angle, static_cast<long long>(remade), static_cast<long long>(host_made), static_cast<long long>(with_rigid),
                static_cast<long long>(with_fem));
    EXPECT_EQ(shapes, std::vector<int>(4, 1));
    EXPECT_GT(remade, 0);
    EXPECT_GT(with_rigid, 0);
  }
}

// the host's contacts of the flagged points take the backend's reach decisions (bit k: the
// environment's k-th shape), or, past 64 shapes in an environment, test reach themselves from
// the downloaded velocities: a ball falling onto a plane with and without 64 far spheres after
// the plane makes the same contacts, bitwise, with the same records (reference: each other; the
// bits and the host's InReach apply the same rule to the same doubles)
TEST(ContactPlan, ReachBitsAndHostReachMakeTheSameContacts) {
  std::string far;
  for (int k = 0; k < 64; ++k) far += R"(, {"type": "sphere", "center": [5, 5, )" + std::to_string(5 + k) + R"(], "radius": 0.01})";
  auto scene = [&](const std::string& extra) {
    return ParseScene(R"({"world": {"dt": 0.01}, "static": [{"type": "plane", "mu": [0.3, 0.5]})" + extra + R"(],
      "fem_bodies": [{"name": "a", "mesh": {"generator": "sphere", "center": [0, 0, 0.021], "radius": 0.02, "element_size": 0.01},
                      "material": {"young": 5e5, "poisson": 0.35}, "velocity": [0.1, 0, -0.2]}]})",
                      "ball.json", "");
  };
  const Scene few = scene(""), many = scene(far);
  auto b1 = MakeBackend(BackendChoice::kCpu).backend, b2 = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld w1 = BuildWorld(few, b1.get()), w2 = BuildWorld(many, b2.get());
  Index contacts = 0;
  for (int k = 0; k < 15; ++k) {
    w1.world->Step();
    w2.world->Step();
    ExpectSameContacts(w1.world->HostContacts(), w2.world->HostContacts());
    ExpectSameContacts(w2.world->HostContacts(), w2.world->BackendContacts());
    ASSERT_EQ(w1.world->contacts().size(), w2.world->contacts().size());
    for (std::size_t m = 0; m < w1.world->contacts().size(); ++m) {
      for (int a = 0; a < 3; ++a) EXPECT_EQ(w1.world->contacts()[m].lambda[a], w2.world->contacts()[m].lambda[a]);
      EXPECT_EQ(w1.world->contacts()[m].shape, w2.world->contacts()[m].shape);
    }
    contacts += w1.world->HostContacts().size();
  }
  EXPECT_GT(contacts, 20);
}

// the S-contacts of flagged points against static shapes keep their frames, phi and contact points
// on the backend (DetectStage::Deferred) when no flagged point reaches an analytic rigid body; the
// host's set gets them when asked for (DetectStage::Complete), the inelastic stage before it
// corrects a pressed one on the host (an FEM box's edge nodes in a corner touch the floor and the
// wall: a component of two contacts), and the step's penetration statistic comes from the
// backend. Reference: the same scene with 64 far spheres added, which makes the host take every
// decision from the downloaded velocities and positions (nothing deferred): the contact sets,
// records, impulses, penetrations and FEM positions bitwise the same at every step, and the
// detection's downloads smaller (5 B in place of 52 B per flagged point)
TEST(ContactPlan, DeferredFramesComeToTheHostAsTheHostMakesThem) {
  std::string far;
  for (int k = 0; k < 64; ++k) far += R"(, {"type": "sphere", "center": [5, 5, )" + std::to_string(5 + k) + R"(], "radius": 0.01})";
  auto scene = [&](const std::string& extra) {
    return ParseScene(R"({"world": {"dt": 0.01}, "static": [{"type": "plane", "mu": 0.4},
      {"type": "box", "center": [0.05, 0, 0.05], "half_extents": [0.02, 0.1, 0.05], "mu": [0.3, 0.5]})" + extra + R"(],
      "fem_bodies": [{"name": "a", "mesh": {"generator": "box", "origin": [0, -0.01, 0.0005], "size": [0.0295, 0.02, 0.02],
                      "cells": [3, 2, 2]}, "material": {"young": 5e5, "poisson": 0.35}, "velocity": [0.1, 0, -0.05]}]})",
                      "corner.json", "");
  };
  const Scene few = scene(""), many = scene(far);
  auto b1 = MakeBackend(BackendChoice::kCpu).backend, b2 = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld w1 = BuildWorld(few, b1.get()), w2 = BuildWorld(many, b2.get());
  Index both = 0;
  std::int64_t down1 = 0, down2 = 0;
  for (int k = 0; k < 12; ++k) {
    SCOPED_TRACE(k);
    const StepStats s1 = w1.world->Step(), s2 = w2.world->Step();
    EXPECT_EQ(s1.max_penetration, s2.max_penetration);
    down1 += s1.detect_counters.download_bytes;
    down2 += s2.detect_counters.download_bytes;
    ExpectSameContacts(w1.world->HostContacts(), w2.world->HostContacts());
    ExpectSameContacts(w1.world->HostContacts(), w1.world->BackendContacts());
    ASSERT_EQ(w1.world->contacts().size(), w2.world->contacts().size());
    std::vector<int> shapes(2, 0);
    for (std::size_t m = 0; m < w1.world->contacts().size(); ++m) {
      const ContactRecord &r1 = w1.world->contacts()[m], &r2 = w2.world->contacts()[m];
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(r1.lambda[a], r2.lambda[a]);
        EXPECT_EQ(r1.position[a], r2.position[a]);
      }
      if (r1.shape >= 0 && r1.lambda[0] > 0) shapes[std::size_t(r1.shape)] = 1;
    }
    both += shapes[0] && shapes[1];
    EXPECT_EQ(w1.world->FemPositions(0), w2.world->FemPositions(0));
  }
  std::printf("steps pressed on floor and wall: %lld of 12; detection downloads %lld B (deferred) against %lld B (host decisions)\n",
              static_cast<long long>(both), static_cast<long long>(down1), static_cast<long long>(down2));
  EXPECT_GT(both, 3);
  EXPECT_LT(down1, down2);
}

// a writer that copies the host's set field by field (one upload each): SetContacts takes the
// record from it and uploads nothing of its own
class CopyWriter : public ContactRecordWriter {
 public:
  explicit CopyWriter(Backend* b) : b_(b) {}
  void Write(const ContactSet& c, const ContactOutView& out) override {
#define CONDSIM_COPY_FIELD(T, name) b_->CopyFromHost(out.name, c.name.data(), sizeof(T) * c.name.size());
    CONDSIM_CONTACT_FIELDS(CONDSIM_COPY_FIELD)
#undef CONDSIM_COPY_FIELD
  }

 private:
  Backend* b_;
};

TEST(ContactPlan, SetContactsTakesTheWritersRecord) {
  ContactSet c;
  for (Index m = 0; m < 50; ++m)
    c.Add(m, m % 3 == 0 ? 100 + m : -1, ContactFrame(Vec3(0.1 * m, 1, 0.3)), -0.01 * m, 0.1 + 0.01 * m, 0.2, 0);
  const std::unique_ptr<Backend> b = MakeBackend(BackendChoice::kCpu, BackendOptions()).backend;
  CondSolver solver(b.get(), CondParams());
  CopyWriter writer(b.get());
  solver.SetContacts(c, &writer);  // the first call sizes the arrays
  const BackendCounters c0 = b->counters();
  solver.SetContacts(c, &writer);
  const BackendCounters moved = b->counters() - c0;
  EXPECT_EQ(moved.uploads, 7);  // the writer's, one per field
  EXPECT_EQ(moved.allocations, 0);
  ExpectSameContacts(c, solver.BackendContacts());
}

}  // namespace
}  // namespace condsim
