// Cable links against cable links on the backend (models/collision/link_detector.h) against the
// former host rule by brute force: per link s of cable a ascending, every link u of cable b
// ascending whose box (both centres, grown by the reach; broad_phase.h Aabb) holds s's midpoint,
// self-contact skipping u < s + skip, that LinkNarrow accepts. Reference: that evaluation
// (exact: the same pairs in the same order, the same contact values bit for bit). The box test
// only drops pairs out of reach (the reach bounds what two links can close), so it decides no
// contact; the order, the self-contact skip and the narrow phase do (a skip one link short
// fails here).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "condsim/backend.h"
#include "models/collision/broad_phase.h"
#include "models/collision/link_detector.h"
#include "test_util.h"

namespace condsim {
namespace {

// a random-walk cable of n centres (two cables in one model: a break at n / 2), its nodes'
// velocities (2 per centre, 3 values each)
struct Cable {
  std::vector<Scalar> x, v;
  std::vector<Index> links;
};
Cable RandomCable(std::mt19937_64& rng, Index n, Scalar step, Scalar speed) {
  std::uniform_real_distribution<Scalar> u(-1, 1);
  Cable c;
  Vec3 p(0.02 * u(rng), 0.02 * u(rng), 0.02 * u(rng));
  for (Index s = 0; s < n; ++s) {
    p = p + step * Normalized(Vec3(u(rng), u(rng), u(rng)));
    for (int d = 0; d < 3; ++d) c.x.push_back(p[d]);
    for (int k = 0; k < 6; ++k) c.v.push_back(speed * u(rng));
    if (s + 1 < n && s + 1 != n / 2) c.links.push_back(s);
  }
  return c;
}

TEST(LinkDetector, MatchesTheHostRuleByBruteForce) {
  auto rng = test::Rng();
  auto be = MakeBackend(BackendChoice::kCpu).backend;
  const Scalar dt = 0.01, margin = 1e-3, ra = 0.002, rb = 0.003, len = 0.004;
  Index total = 0;
  for (int trial = 0; trial < 4; ++trial) {
    for (const bool self : {false, true}) {
      const Cable ca = RandomCable(rng, 300, len, 0.5);
      const Cable cb = self ? ca : RandomCable(rng, 200, len, 0.5);
      const Index na = Index(ca.x.size() / 3), nb = Index(cb.x.size() / 3);
      const Scalar r2 = self ? ra : rb;
      const Index skip = self ? 2 + Index(std::ceil((ra + r2) / len)) : 0;
      LinkDetector det(be.get(), ca.links, cb.links, na, nb, self);
      const Array<Scalar> xa(be.get(), ca.x), va(be.get(), ca.v), xb(be.get(), cb.x), vb(be.get(), cb.v);
      const LinkHits& got = det.Detect(xa, va, xb, vb, ra, r2, Scalar(0.5) * len, skip, dt, margin);
      // the former host rule
      Scalar speed = 0;
      for (Index s = 0; s < na; ++s) speed = std::max(speed, Norm(LoadVec3(ca.v.data(), 2 * s)));
      for (Index s = 0; s < nb; ++s) speed = std::max(speed, Norm(LoadVec3(cb.v.data(), 2 * s)));
      const Scalar reach = ra + r2 + margin + 2 * dt * speed + Scalar(0.5) * len;
      std::vector<Index> want_a, want_b;
      std::vector<Scalar> want_data;
      for (std::size_t i = 0; i < ca.links.size(); ++i) {
        const Index s = ca.links[i];
        const Vec3 p0 = LoadVec3(ca.x.data(), s), p1 = LoadVec3(ca.x.data(), s + 1);
        for (std::size_t k = 0; k < cb.links.size(); ++k) {
          const Index u = cb.links[k];
          Aabb box;
          box.Grow(LoadVec3(cb.x.data(), u));
          box.Grow(LoadVec3(cb.x.data(), u + 1));
          box.Inflate(reach);
          if (!box.Contains(Scalar(0.5) * (p0 + p1)) || (self && u < s + skip)) continue;
          LinkContact lc;
          if (!LinkNarrow(p0, p1, LoadVec3(cb.x.data(), u), LoadVec3(cb.x.data(), u + 1), LoadVec3(ca.v.data(), 2 * s),
                          LoadVec3(ca.v.data(), 2 * s + 2), LoadVec3(cb.v.data(), 2 * u), LoadVec3(cb.v.data(), 2 * u + 2), ra, r2, dt,
                          margin, &lc))
            continue;
          want_a.push_back(Index(i));
          want_b.push_back(Index(k));
          for (Scalar value : {lc.st.s, lc.st.t, lc.gap, lc.n[0], lc.n[1], lc.n[2], lc.pp[0], lc.pp[1], lc.pp[2]})
            want_data.push_back(value);
        }
      }
      ASSERT_EQ(got.a, want_a) << "trial " << trial << (self ? ", self" : ", two cables");
      ASSERT_EQ(got.b, want_b);
      ASSERT_EQ(got.data, want_data);
      total += got.size();
    }
  }
  std::printf("link detector: %d link pairs in contact over 8 scenes\n", int(total));
  EXPECT_GT(total, 50);  // the scenes touch
}

}  // namespace
}  // namespace condsim
