// Point-vs-triangle detection on the backend (models/collision/detector.h) against the brute-force
// rule (every query against every triangle, tests/detect_scenes.h): the same contacts, in the
// same canonical order, with the same gaps, weights and normals; bad scenes are rejected.
#include <gtest/gtest.h>

#include "detect_scenes.h"
#include "test_util.h"

namespace condsim {
namespace {

void ExpectSameContacts(const DetectResult& got, const DetectResult& want, Scalar tol) {
  // the first difference, readable
  for (Index k = 0; k < std::min(got.size(), want.size()); ++k)
    if (got.query[k] != want.query[k] || got.tri[k] != want.tri[k]) {
      ADD_FAILURE() << "contact " << k << ": got (query " << got.query[k] << ", tri " << got.tri[k] << ", gap " << got.gap[k]
                    << "), want (query " << want.query[k] << ", tri " << want.tri[k] << ", gap " << want.gap[k] << ")";
      break;
    }
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.query, want.query);
  ASSERT_EQ(got.tri, want.tri);
  for (Index k = 0; k < got.size(); ++k) {
    EXPECT_NEAR(got.gap[k], want.gap[k], tol) << "contact " << k;
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(got.w[3 * k + a], want.w[3 * k + a], tol) << "contact " << k;
      EXPECT_NEAR(got.n[3 * k + a], want.n[3 * k + a], tol) << "contact " << k;
    }
  }
}

// random scenes of crowded box surfaces (moving, with radii, self-contact on some) over a static
// sheet: the grid finds exactly the brute-force contacts
TEST(Detector, MatchesBruteForceOnRandomScenes) {
  auto rng = test::Rng();
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  Index total = 0, self = 0, sheet = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const test::DetectSceneData d = test::RandomDetectScene(rng, 4, 3, 0.04, 0.05, 1.0, 0.004);
    Detector det(backend.get(), d.scene);
    det.Upload(0, d.x, d.v);
    const Scalar dt = 0.01, margin = 1e-3;
    const DetectResult& got = det.Detect(dt, margin);
    const DetectResult want = test::BruteForceDetect(d, dt, margin);
    ExpectSameContacts(got, want, 1e-12);
    total += got.size();
    for (Index k = 0; k < got.size(); ++k) {
      const Index owner = d.scene.tri_owner[got.tri[k]];
      self += owner == d.scene.vertex_owner[d.scene.query[got.query[k]]] ? 1 : 0;
      sheet += owner == 4 ? 1 : 0;
    }
  }
  std::printf("detector: %d contacts over 6 scenes (%d self, %d on the sheet)\n", total, self, sheet);
  // the scenes exercise every kind of contact
  EXPECT_GT(total, 100);
  EXPECT_GT(self, 0);
  EXPECT_GT(sheet, 0);
}

// the points within reach of an analytic shape (Detector::ShapeCandidates): on random scenes
// with static shapes of every kind and moving rigid shapes in two environments, exactly the
// points the host's rule flags (ShapeProximity, InReach: some shape of the point's environment
// has gap <= |v_p - v_q| t + margin), ascending, with their positions as uploaded and, per
// point, which of its environment's shapes are in reach (reference: that host evaluation,
// exact); with more shapes in an environment than the reach bits, the velocities instead
TEST(Detector, ShapeCandidatesMatchTheHostRule) {
  auto rng = test::Rng();
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  std::uniform_real_distribution<Scalar> u(-1, 1);
  Index flagged = 0, points = 0;
  for (int trial = 0; trial < 4; ++trial) {
    test::DetectSceneData d = test::RandomDetectScene(rng, 4, 3, 0.04, 0.05, 1.0, 0.004);
    // owners 0, 1 in environment 0, the others in environment 1
    d.scene.owner_env.assign(d.scene.self_contact.size(), 1);
    d.scene.owner_env[0] = d.scene.owner_env[1] = 0;
    Detector det(backend.get(), d.scene);
    det.Upload(0, d.x, d.v);
    std::vector<NodeShape> shapes;
    auto add = [&](ShapeType type, const Vec3& size, bool moving) {
      NodeShape sh;
      sh.shape.type = type;
      sh.shape.center = Vec3(0.02 * u(rng), 0.02 * u(rng), 0.02 * u(rng));
      sh.shape.orientation = Normalized(Quat(1 + u(rng), u(rng), u(rng), u(rng)));
      sh.shape.size = size;
      sh.x = sh.shape.center;
      sh.v = Vec3(u(rng), u(rng), u(rng));
      sh.omega = Vec3(10 * u(rng), 10 * u(rng), 10 * u(rng));
      sh.moving = moving ? 1 : 0;
      shapes.push_back(sh);
    };
    add(ShapeType::kPlane, Vec3(), false);
    // the plane below the scene's cube, tilted by at most ~0.3 rad: it flags the lowest points
    // (a plane through the cube flagged every point behind it, up to all of them)
    shapes.back().shape.center = Vec3(0.025, 0.025, -0.03);
    shapes.back().shape.orientation = Normalized(Quat(1, Scalar(0.15) * u(rng), Scalar(0.15) * u(rng), 0));
    shapes.back().x = shapes.back().shape.center;
    add(ShapeType::kSphere, Vec3(0.01, 0, 0), false);
    add(ShapeType::kBox, Vec3(0.01, 0.005, 0.008), true);
    add(ShapeType::kCapsule, Vec3(0.004, 0.01, 0), true);
    add(ShapeType::kSphere, Vec3(0.008, 0, 0), true);
    // environment 0: the plane and the moving box; environment 1: the rest
    const std::vector<Index> env_ptr = {0, 2, 5}, list = {0, 2, 1, 3, 4};
    det.SetShapes(shapes, env_ptr, list);
    const Scalar dt = 0.01, margin = 1e-3;
    const Index nq = static_cast<Index>(d.scene.query.size());
    const NodeCandidates& got = det.ShapeCandidates(nq, dt, margin);
    std::vector<Index> want;
    std::vector<std::uint64_t> want_reach;
    for (Index q = 0; q < nq; ++q) {
      const Vec3 p = LoadVec3(d.x.data(), q), vp = LoadVec3(d.v.data(), q);
      const Index env = d.scene.owner_env[d.scene.vertex_owner[q]];
      std::uint64_t bits = 0;
      for (Index j = env_ptr[env]; j < env_ptr[env + 1]; ++j) {
        const NodeShape& sh = shapes[list[j]];
        const Proximity prox = ShapeProximity(sh.shape, p);
        const Vec3 vq = sh.moving ? sh.v + Cross(sh.omega, prox.point - sh.x) : Vec3();
        if (!(prox.distance - d.scene.radius[q] > Norm(vp - vq) * dt + margin)) bits |= std::uint64_t(1) << (j - env_ptr[env]);
      }
      if (bits != 0) {
        want.push_back(q);
        want_reach.push_back(bits);
      }
    }
    ASSERT_EQ(got.query, want);
    EXPECT_EQ(got.reach, want_reach);
    EXPECT_TRUE(got.v.empty());
    for (Index k = 0; k < got.size(); ++k)
      for (int a = 0; a < 3; ++a) EXPECT_EQ(got.x[3 * k + a], d.x[3 * got.query[k] + a]);
    // 65 shapes in environment 1 (the last 62 far away): no reach bits, the velocities come down
    std::vector<Index> many_list = list;
    for (int extra = 0; extra < 62; ++extra) {
      add(ShapeType::kSphere, Vec3(0.001, 0, 0), false);
      shapes.back().shape.center = Vec3(10, 10, 10);
      many_list.push_back(Index(shapes.size()) - 1);
    }
    det.SetShapes(shapes, {0, 2, Index(many_list.size())}, many_list);
    const NodeCandidates& many = det.ShapeCandidates(nq, dt, margin);
    ASSERT_EQ(many.query, want);
    EXPECT_TRUE(many.reach.empty());
    for (Index k = 0; k < many.size(); ++k)
      for (int a = 0; a < 3; ++a) EXPECT_EQ(many.v[3 * k + a], d.v[3 * many.query[k] + a]);
    flagged += got.size();
    points += nq;
  }
  std::printf("shape candidates: %d of %d points flagged\n", int(flagged), int(points));
  // the scenes flag some points and leave others
  EXPECT_GT(flagged, 20);
  EXPECT_LT(flagged, points / 2);
}

// repeated detection gives the same result; 1 and 2 OpenMP threads too
TEST(Detector, IsDeterministicAcrossThreads) {
  auto rng = test::Rng();
  const test::DetectSceneData d = test::RandomDetectScene(rng, 4, 3, 0.04, 0.05, 1.0, 0.004);
  BackendOptions one, two;
  one.cpu_threads = 1;
  two.cpu_threads = 2;
  auto b1 = MakeBackend(BackendChoice::kCpu, one).backend, b2 = MakeBackend(BackendChoice::kCpu, two).backend;
  Detector d1(b1.get(), d.scene), d2(b2.get(), d.scene);
  d1.Upload(0, d.x, d.v);
  d2.Upload(0, d.x, d.v);
  const DetectResult r1 = d1.Detect(0.01, 1e-3);
  ExpectSameContacts(d2.Detect(0.01, 1e-3), r1, 0);
  ExpectSameContacts(d1.Detect(0.01, 1e-3), r1, 0);
}

TEST(Detector, RejectsInconsistentScenes) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  DetectScene s;
  s.vertex_owner = {0, 0, 0};
  s.tri = {0, 1, 2};
  s.tri_owner = {0};
  s.query = {0};
  s.radius = {0};
  s.self_contact = {1};
  s.depth_limit = {0};
  EXPECT_NO_THROW(Detector(backend.get(), s));
  DetectScene bad = s;
  bad.tri = {0, 1, 3};
  EXPECT_THROW(Detector(backend.get(), bad), Error);
  bad = s;
  bad.radius = {-1};
  EXPECT_THROW(Detector(backend.get(), bad), Error);
  bad = s;
  bad.tri_owner = {2};
  EXPECT_THROW(Detector(backend.get(), bad), Error);
  bad = s;
  bad.adj_ptr = {0, 2, 2, 2};
  bad.adj = {2, 1};  // unsorted
  EXPECT_THROW(Detector(backend.get(), bad), Error);
  Detector det(backend.get(), s);
  det.Upload(0, {0, 0, 0, 1, 0, 0, std::nan(""), 1, 0}, std::vector<Scalar>(9, 0));
  EXPECT_THROW(det.Detect(0.01, 1e-3), Error);  // NaN position
}

}  // namespace
}  // namespace condsim
