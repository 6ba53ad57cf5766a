// Scene-file initial velocities of cables and external loads of FEM bodies and cables
// (docs/scene-format.md): the initial field against its definition, and free bodies in zero
// gravity against Newton's second law (the momentum change is the applied impulse), read from
// the world's state. Bad input is an error naming the file and the JSON pointer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "io/scene.h"
#include "test_util.h"

namespace condsim {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::string ParseError(const std::string& text) {
  try {
    ParseScene(text, "t.json", "");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// the mass-weighted mean velocity of an FEM body (lumped node masses), and its total mass
Vec3 FemMeanVelocity(World& w, Index body, Scalar* total) {
  const std::vector<Scalar>& m = w.fem_model(body).lumped_mass();
  const std::vector<Scalar> v = w.FemVelocities(body);
  Vec3 p;
  *total = 0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    p += m[i] * LoadVec3(v.data(), Index(i));
    *total += m[i];
  }
  return (1 / *total) * p;
}

// the mean segment velocity of a cable (equal segment masses)
Vec3 RodMeanVelocity(World& w, Index body) {
  const std::vector<Scalar> v = w.RodVelocities(body);
  Vec3 sum;
  for (std::size_t s = 0; s < v.size() / 3; ++s) sum += LoadVec3(v.data(), Index(s));
  return (Scalar(3) / Scalar(v.size())) * sum;
}

void ExpectRelNear(const Vec3& got, const Vec3& want, Scalar rel, const std::string& what) {
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(got[a], want[a], rel * Norm(want)) << what << " component " << a;
}

// a straight cable along d = (2, 0, 1) / sqrt(5), 0.3 m long, 12 segments, in zero gravity
const char* const kCable = R"("rods": [{"name": "c", "points": [[0, 0, 0], [0.26832815729997478, 0, 0.13416407864998739]],
    "segments": 12, "material": {"radius": 0.004, "young": 1e6, "density": 1000, "geometric_stiffness": false})";

// rods[].velocity / angular_velocity: segment s starts at v + w x (x_s - c) spinning at w, c the
// mean of the (equal-mass) centres. References: the field itself (1e-12 m/s); the total momentum
// m_total v (1e-12 relative); the angular momentum about c, I w with I the point masses' inertia
// sum m (|r|^2 1 - r r^T) plus each segment's solid-cylinder inertia m (3 r^2 + L^2) / 12
// across and m r^2 / 2 along the axis (1e-12 relative); after 10 free steps the momentum is
// unchanged (no external force; the joints' forces cancel in pairs), 1e-9 relative
TEST(SceneLoads, CableInitialVelocityIsARigidField) {
  const Vec3 v0(0.1, -0.2, 0.05), w0(0.5, 1, 2);
  const std::string text = std::string(R"({"name": "spin", "world": {"gravity": [0, 0, 0]}, "solver": {"theta_threshold": 1e-12, "max_iterations": 20000}, )") + kCable +
                           R"(, "velocity": [0.1, -0.2, 0.05], "angular_velocity": [0.5, 1, 2]}]})";
  const Scene scene = ParseScene(text, "spin.json", "");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  World& w = *sw.world;
  const Index id = sw.rod_ids[0];
  const std::vector<Vec3>& xs = scene.rods[0].geometry.centers;
  const Index n = Index(xs.size());
  ASSERT_EQ(n, 12);
  Vec3 c;
  for (const Vec3& x : xs) c += (Scalar(1) / Scalar(n)) * x;
  const std::vector<Scalar> v = w.RodVelocities(id), om = w.RodAngularVelocities(id);
  for (Index s = 0; s < n; ++s) {
    const Vec3 want = v0 + Cross(w0, xs[s] - c);
    for (int a = 0; a < 3; ++a) {
      ASSERT_NEAR(v[3 * s + a], want[a], 1e-12) << "segment " << s;
      ASSERT_NEAR(om[3 * s + a], w0[a], 1e-12) << "segment " << s;
    }
  }
  // momentum and spin
  const Scalar r = 0.004, len = 0.3 / 12, m = 1000 * kPi * r * r * len, mass = m * Scalar(n);
  const Vec3 d = Normalized(Vec3(2, 0, 1));
  const Scalar i_across = m * (3 * r * r + len * len) / 12, i_along = m * r * r / 2;
  Mat3 inertia = Scalar(n) * (i_across * (Mat3::Identity() - Outer(d, d)) + i_along * Outer(d, d));
  for (const Vec3& x : xs) inertia = inertia + m * (Dot(x - c, x - c) * Mat3::Identity() - Outer(x - c, x - c));
  const BodyMomentum p0 = w.BodyMomenta()[id];
  ExpectRelNear(p0.linear, mass * v0, 1e-12, "initial momentum");
  ExpectRelNear(p0.angular - Cross(c, p0.linear), inertia * w0, 1e-12, "initial spin about the centre of mass");
  for (int k = 0; k < 10; ++k) w.Step();
  ExpectRelNear(w.BodyMomenta()[id].linear, mass * v0, 1e-9, "momentum after 10 free steps");
}

// fem_bodies[].force: a total force F spread over the nodes by lumped mass. A free body in zero
// gravity: the centre-of-mass velocity after n steps is F n t / m (Newton's second law; the
// elastic forces cancel), 1e-9 relative
TEST(SceneLoads, FemTotalForceAcceleratesTheCentreOfMass) {
  const std::string text = R"({"name": "push", "world": {"gravity": [0, 0, 0], "dt": 0.01}, "solver": {"theta_threshold": 1e-12, "max_iterations": 20000},
    "fem_bodies": [{"mesh": {"generator": "box", "origin": [0, 0, 0], "size": [0.04, 0.02, 0.01], "cells": [4, 2, 1]},
                    "material": {"young": 1e5, "poisson": 0.3, "density": 1000}, "force": [0.3, -0.1, 0.2]}]})";
  const Scene scene = ParseScene(text, "push.json", "");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  const int steps = 20;
  for (int k = 0; k < steps; ++k) sw.world->Step();
  Scalar mass = 0;
  const Vec3 vc = FemMeanVelocity(*sw.world, sw.fem_ids[0], &mass);
  EXPECT_NEAR(mass, 1000 * 0.04 * 0.02 * 0.01, 1e-15);
  ExpectRelNear(vc, (steps * 0.01 / mass) * Vec3(0.3, -0.1, 0.2), 1e-9, "centre-of-mass velocity");
}

// fem_bodies[].node_forces: a force on each node of a set (indices, or a box). The momentum
// change of a free body in zero gravity is the sum of the forces times the time, 1e-8 relative
// (the poked body vibrates: the iterative solve's error, theta_threshold 1e-12 m/s, shows at
// ~4e-9 of the impulse)
TEST(SceneLoads, FemNodeForcesChangeTheMomentumByTheirImpulse) {
  const std::string text = R"({"name": "poke", "world": {"gravity": [0, 0, 0], "dt": 0.01}, "solver": {"theta_threshold": 1e-12, "max_iterations": 20000},
    "fem_bodies": [{"mesh": {"generator": "box", "origin": [0, 0, 0], "size": [0.04, 0.02, 0.01], "cells": [4, 2, 1]},
                    "material": {"young": 1e5, "poisson": 0.3, "density": 1000}, "velocity": [0.01, 0, 0],
                    "node_forces": [{"nodes": [0, 3], "force": [0.01, 0.02, 0]},
                                    {"box": [[0.039, -1, -1], [1, 1, 1]], "force": [0, 0, -0.005]}]}]})";
  const Scene scene = ParseScene(text, "poke.json", "");
  ASSERT_EQ(scene.fem[0].node_forces.size(), 2u);
  const std::size_t boxed = scene.fem[0].node_forces[1].nodes.size();
  EXPECT_EQ(boxed, 6u);  // the x = 0.04 face of a 4 x 2 x 1 cell box: 3 x 2 nodes
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  Scalar mass = 0;
  const Vec3 v0 = FemMeanVelocity(*sw.world, sw.fem_ids[0], &mass);
  const int steps = 20;
  for (int k = 0; k < steps; ++k) sw.world->Step();
  const Vec3 v1 = FemMeanVelocity(*sw.world, sw.fem_ids[0], &mass);
  const Vec3 total = Scalar(2) * Vec3(0.01, 0.02, 0) + Scalar(boxed) * Vec3(0, 0, -0.005);
  ExpectRelNear(mass * (v1 - v0), (steps * 0.01) * total, 1e-8, "momentum change");
}

// rods[].force and segment_forces: a free cable in zero gravity. The mean segment velocity after
// n steps is (F + sum of segment forces) n t / m (1e-9 relative)
TEST(SceneLoads, CableForcesAccelerateTheCentreOfMass) {
  const std::string text = std::string(R"({"name": "tow", "world": {"gravity": [0, 0, 0], "dt": 0.01}, "solver": {"theta_threshold": 1e-12, "max_iterations": 20000}, )") + kCable +
                           R"(, "force": [0.002, 0, 0.001], "segment_forces": [{"segments": [0, 11], "force": [0, 0.001, 0]}]}]})";
  const Scene scene = ParseScene(text, "tow.json", "");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  const Scalar r = 0.004, mass = 1000 * kPi * r * r * 0.3;
  const int steps = 20;
  for (int k = 0; k < steps; ++k) sw.world->Step();
  const Vec3 total = Vec3(0.002, 0, 0.001) + Scalar(2) * Vec3(0, 0.001, 0);
  ExpectRelNear(RodMeanVelocity(*sw.world, sw.rod_ids[0]), (steps * 0.01 / mass) * total, 1e-9, "mean segment velocity");
}

// rods[].segment_forces torque: a torque tau on two segments of a free cable at rest in zero
// gravity changes its angular momentum (about the origin, World::BodyMomenta: the centres'
// x × m v plus the segments' spin) by 2 tau n t, and its momentum not at all. The reference is
// the angular impulse; the tolerance, 1e-6 relative, covers the rod's rotational update
// (explicit gyroscopic term w × I w in b, docs/rod.md): the error grows as tau^2, measured
// 3.3e-7 of the impulse at this torque and 3.3e-4 at 1000 times it
TEST(SceneLoads, CableSegmentTorqueChangesTheAngularMomentum) {
  const std::string text = std::string(R"({"name": "twist", "world": {"gravity": [0, 0, 0], "dt": 0.01},
    "solver": {"theta_threshold": 1e-12, "max_iterations": 20000}, )") + kCable +
                           R"(, "segment_forces": [{"segments": [2, 7], "torque": [1e-9, -2e-9, 3e-9]}]}]})";
  const Scene scene = ParseScene(text, "twist.json", "");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  const int steps = 20;
  for (int k = 0; k < steps; ++k) sw.world->Step();
  const BodyMomentum m = sw.world->BodyMomenta()[sw.rod_ids[0]];
  const Vec3 want = (2 * steps * 0.01) * Vec3(1e-9, -2e-9, 3e-9);
  ExpectRelNear(m.angular, want, 1e-6, "angular momentum");
  EXPECT_LT(Norm(m.linear), 1e-12 * Norm(want) / 0.3) << "momentum [kg m/s]";
}

TEST(SceneLoads, BadInputNamesFileAndField) {
  const std::string fem = R"({"fem_bodies": [{"mesh": {"generator": "box", "size": [0.04, 0.02, 0.01], "cells": [2, 1, 1]},
      "material": {}, )";
  const std::string rod = R"({"rods": [{"points": [[0, 0, 0], [1, 0, 0]], "segments": 4, )";
  auto expect = [](const std::string& text, const std::string& want) {
    const std::string got = ParseError(text);
    EXPECT_NE(got.find(want), std::string::npos) << "got: " << got << "\nwant: " << want;
  };
  expect(rod + R"("velocity": [1, 2]}]})", "t.json: /rods/0/velocity: expected an array of 3 numbers");
  expect(rod + R"("angular_velocity": [1, "x", 2]}]})", "t.json: /rods/0/angular_velocity/1: expected a number, got string");
  expect(rod + R"("force": [1, 2, 3, 4]}]})", "t.json: /rods/0/force: expected an array of 3 numbers");
  expect(rod + R"("segment_forces": [{"segments": [1, 4], "force": [0, 0, 1]}]}]})",
         "t.json: /rods/0/segment_forces/0/segments/1: 4 is outside [0, 3]");
  expect(rod + R"("segment_forces": [{"segments": [1]}]}]})", "t.json: /rods/0/segment_forces/0: give a force, a torque or both");
  expect(fem + R"("force": [1, 2]}]})", "t.json: /fem_bodies/0/force: expected an array of 3 numbers");
  // a non-finite number is no JSON (the parser's overflow error, with its line)
  expect(fem + R"("force": [1, 2, 1e999]}]})", "invalid JSON (number overflow parsing '1e999')");
  // a 2 x 1 x 1 cell box has 12 nodes
  expect(fem + R"("node_forces": [{"nodes": [0, 12], "force": [0, 0, 1]}]}]})",
         "t.json: /fem_bodies/0/node_forces/0/nodes/1: 12 is outside [0, 11]");
  expect(fem + R"("node_forces": [{"nodes": [0], "force": [0, 0]}]}]})", "t.json: /fem_bodies/0/node_forces/0/force: expected an array of 3");
  expect(fem + R"("node_forces": [{"nodes": [], "force": [0, 0, 1]}]}]})", "t.json: /fem_bodies/0/node_forces/0/nodes: needs at least one node");
  expect(fem + R"("node_forces": [{"force": [0, 0, 1]}]}]})", "t.json: /fem_bodies/0/node_forces/0: give either nodes (indices) or box");
  expect(fem + R"("node_forces": [{"box": [[5, 5, 5], [6, 6, 6]], "force": [0, 0, 1]}]}]})",
         "t.json: /fem_bodies/0/node_forces/0/box: the box holds no node");
  // the World's setters check length and finiteness, naming the body
  const Scene scene = ParseScene(fem + "\"name\": \"slab\"}], \"rods\": [{\"name\": \"c\", \"points\": [[0, 0, 1], [1, 0, 1]], \"segments\": 4}]}",
                                 "t.json", "");
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  SceneWorld sw = BuildWorld(scene, backend.get());
  auto error = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error([&] { sw.world->SetFemForces(sw.fem_ids[0], std::vector<Scalar>(5, 0)); }).find("SetFemForces of 'slab' (3 per node [N]): needs 36 values, got 5"),
            std::string::npos);
  EXPECT_NE(error([&] { sw.world->SetRodForces(sw.rod_ids[0], std::vector<Scalar>(24, NAN)); }).find("SetRodForces of 'c' (force, torque per segment): value 0 is not finite"),
            std::string::npos);
  EXPECT_NE(error([&] { sw.world->SetRodVelocities(sw.rod_ids[0], std::vector<Scalar>(6, 0)); }).find("SetRodVelocities of 'c': needs 24 values"),
            std::string::npos);
}

}  // namespace
}  // namespace condsim
