// The world's stages on the backend (issue 23 item 2, docs/architecture.md "Device-resident
// step"): the FEM rigid predictor (FemModel::RigidPredictor), formerly a host loop over the
// downloaded x and v. Reference: that host loop (kept here as it was, RigidPart), on random
// positions and velocities. The inelastic stage's corrections of lone S-contacts
// (InelasticNodeOp). Reference: the same stage with every correction on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "condsim/backend.h"
#include "models/fem/fem_model.h"
#include "models/fem/tet_mesh.h"
#include "models/world/scene.h"
#include "io/scene.h"
#include "test_util.h"

namespace condsim {
namespace {

// the former host function (models/world/assemble.cpp at b310cb4): the rigid motion closest to
// v in kinetic energy, as the mean velocity over a step dt
std::vector<Scalar> RigidPart(const std::vector<Scalar>& mass, const std::vector<Scalar>& x, const std::vector<Scalar>& v, Scalar dt) {
  Scalar total = 0;
  Vec3 p(0, 0, 0), c(0, 0, 0);
  for (std::size_t i = 0; i < mass.size(); ++i) {
    total += mass[i];
    p += mass[i] * LoadVec3(v.data(), Index(i));
    c += mass[i] * LoadVec3(x.data(), Index(i));
  }
  p = (1 / total) * p;
  c = (1 / total) * c;
  Vec3 l(0, 0, 0);
  Mat3 inertia;
  for (std::size_t i = 0; i < mass.size(); ++i) {
    const Vec3 r = LoadVec3(x.data(), Index(i)) - c;
    l += mass[i] * Cross(r, LoadVec3(v.data(), Index(i)));
    inertia = inertia + mass[i] * (Dot(r, r) * Mat3::Identity() - Outer(r, r));
  }
  const Scalar det = Determinant(inertia), trace = Trace(inertia);
  const Vec3 omega = det > Scalar(1e-12) * trace * trace * trace ? Inverse(inertia) * l : Vec3(0, 0, 0);
  const Mat3 chord = (1 / dt) * (ToMatrix(FromRotationVector(dt * omega)) - Mat3::Identity());
  std::vector<Scalar> out(x.size());
  for (std::size_t i = 0; i < mass.size(); ++i) StoreVec3(out.data(), Index(i), p + chord * (LoadVec3(x.data(), Index(i)) - c));
  return out;
}

// a box mesh's nodes moved by up to 1 mm at random and random velocities (up to 1 m/s) with a
// spin: the backend's predictor against the host loop. Tolerance: bitwise up to 4096 nodes (the
// CPU backend folds one chunk in node order, as the loop did); beyond, the sums are folded in
// 4096-node chunks, so 1e-12 relative to the largest entry (a few roundings of sums of 5000
// terms of similar size: ~1e-15 each)
TEST(RigidPredictor, MatchesTheFormerHostLoop) {
  auto be = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  auto rng = test::Rng();
  for (Index cells : {3, 16}) {
    SCOPED_TRACE(cells);
    const TetMesh mesh = MakeBoxMesh(Vec3(-0.1, -0.05, 0), Vec3(0.2, 0.1, 0.05), cells, cells, cells);
    FemModel model(be.get(), mesh, FemMaterial());
    const Index n = model.num_nodes();
    std::vector<Scalar> x(3 * std::size_t(n)), v(3 * std::size_t(n));
    const std::vector<Scalar> dx = test::RandomVector(rng, 3 * n), dv = test::RandomVector(rng, 3 * n);
    for (Index i = 0; i < n; ++i) {
      const Vec3 xi = mesh.Node(i) + Scalar(1e-3) * LoadVec3(dx.data(), i);
      StoreVec3(x.data(), i, xi);
      StoreVec3(v.data(), i, LoadVec3(dv.data(), i) + Cross(Vec3(0.5, -2, 3), xi));
    }
    const Scalar dt = 0.01;
    const std::vector<Scalar> ref = RigidPart(model.lumped_mass(), x, v, dt);
    Array<Scalar> xd(be.get(), x), vd(be.get(), v), out;
    model.RigidPredictor(xd, vd, dt, &out);
    const std::vector<Scalar> got = out.ToHost();
    ASSERT_EQ(got.size(), ref.size());
    Scalar err = 0, scale = 0;
    for (std::size_t k = 0; k < ref.size(); ++k) {
      err = std::max(err, std::fabs(got[k] - ref[k]));
      scale = std::max(scale, std::fabs(ref[k]));
    }
    std::printf("%lld nodes: max |backend - host| = %.3g of %.3g\n", static_cast<long long>(n), err, scale);
    if (n <= 4096) EXPECT_EQ(got, ref);
    else EXPECT_LE(err, 1e-12 * scale);
    EXPECT_GT(scale, 0.1);
  }
}

// the segmented max over checked offsets (v-hat's per-body speeds and finiteness, SolveStage)
// against the overload taking the offsets as an array (reference, exact: the same reduction), and
// it reads nothing back; NaN propagates (a non-finite body)
TEST(SegmentedMaxAbs, CheckedOffsetsMatchAndReadNothing) {
  auto be = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  auto rng = test::Rng();
  std::vector<Scalar> x = test::RandomVector(rng, 10000);
  x[7000] = std::nan("");
  const std::vector<Index> offsets{0, 0, 17, 5000, 9000, 10000};
  const Array<Scalar> xd(be.get(), x);
  const Array<Index> od(be.get(), offsets);
  const SegmentOffsets checked(be.get(), offsets);
  Array<Scalar> ref(be.get(), 5), got(be.get(), 5);
  be->SegmentedMaxAbs(xd, od, &ref);
  const BackendCounters c0 = be->counters();
  be->SegmentedMaxAbs(xd, checked, &got);
  EXPECT_EQ((be->counters() - c0).downloads, 0);
  const std::vector<Scalar> r = ref.ToHost(), g = got.ToHost();
  EXPECT_EQ(g[0], 0);
  EXPECT_TRUE(std::isnan(g[3]));
  for (int s : {0, 1, 2, 4}) EXPECT_EQ(g[std::size_t(s)], r[std::size_t(s)]);
  EXPECT_THROW(be->SegmentedMaxAbs(xd, SegmentOffsets(be.get(), {0, 10001}), &got), Error);
}

// the inelastic stage corrects a pressed S-contact whose node no other pressed contact touches on
// the backend (InelasticNodeOp, the arithmetic of ApplyInelasticContacts): a ball sliding and
// rolling onto a plane against a second ball (FEM-FEM contacts: their nodes stay on the host), a
// cable falling on the plane and over a rigid box (rigid components: on the host), 30 steps;
// every velocity equals, bitwise, the run with every correction on the host, and some contacts
// were corrected on the backend
TEST(InelasticStage, LoneSContactsOnTheBackendEqualTheHostCorrection) {
  const Scene scene = ParseScene(R"({"world": {"dt": 0.01}, "static": [{"type": "plane", "mu": [0.2, 0.6]}],
    "fem_bodies": [
      {"name": "a", "mesh": {"generator": "sphere", "center": [0, 0, 0.0205], "radius": 0.02, "element_size": 0.01},
       "material": {"young": 5e5, "poisson": 0.35}, "velocity": [0.3, 0.05, -0.1], "angular_velocity": [0, 4, 0]},
      {"name": "b", "mesh": {"generator": "sphere", "center": [0.06, 0, 0.0205], "radius": 0.02, "element_size": 0.01},
       "material": {"young": 5e5, "poisson": 0.35}}],
    "rods": [{"name": "cable", "points": [[-0.1, -0.1, 0.03], [0.1, -0.1, 0.03]], "segments": 20,
              "material": {"radius": 0.002, "young": 2e6, "poisson": 0.45, "density": 1200}}],
    "rigid_bodies": [{"name": "block", "shape": "box", "half_extents": [0.01, 0.03, 0.01], "mass": 0.05,
                      "position": [0, -0.1, 0.0101]}]})",
                                 "inelastic.json", "");
  auto b1 = MakeBackend(BackendChoice::kCpu).backend, b2 = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld host = BuildWorld(scene, b1.get()), dev = BuildWorld(scene, b2.get());
  host.world->set_inelastic_host_only(true);
  Index on_backend = 0, contacts = 0;
  for (int k = 0; k < 30; ++k) {
    host.world->Step();
    const StepStats st = dev.world->Step();
    ASSERT_EQ(host.world->inelastic_backend_contacts(), 0);
    on_backend += dev.world->inelastic_backend_contacts();
    contacts += st.contacts;
    for (Index f : dev.fem_ids) ASSERT_EQ(dev.world->FemVelocities(f), host.world->FemVelocities(f)) << "step " << k;
    for (Index r : dev.rod_ids) ASSERT_EQ(dev.world->RodVelocities(r), host.world->RodVelocities(r)) << "step " << k;
    for (Index r : dev.rigid_ids) {
      const RigidBody &a = dev.world->rigid_body(r), &b = host.world->rigid_body(r);
      for (int d = 0; d < 3; ++d) ASSERT_EQ(a.v[d], b.v[d]) << "step " << k;
      for (int d = 0; d < 3; ++d) ASSERT_EQ(a.omega[d], b.omega[d]) << "step " << k;
    }
  }
  std::printf("%lld of %lld contacts corrected on the backend\n", static_cast<long long>(on_backend), static_cast<long long>(contacts));
  EXPECT_GT(on_backend, 50);
  EXPECT_LT(on_backend, contacts);
}

}  // namespace
}  // namespace condsim
