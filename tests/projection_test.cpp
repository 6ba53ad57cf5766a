// Friction-cone projections (eq. 26, Prop. 4-6) on >= 1e4 random inputs each:
// - strict: the per-contact surrogate Signorini-Coulomb conditions (eq. 11) hold to 1e-10, and the
//   tangential part equals a brute-force closest point on the disk boundary (dense angle scan +
//   golden-section refinement);
// - proximal: equals a brute-force Euclidean projection onto the cone (same scan over the
//   surface, plus the apex and the input itself);
// - anisotropic strict: equals the numeric maximal-dissipation optimum (closest point on the
//   ellipse by scan + refinement).
#include "models/cond/projection.h"

#include <gtest/gtest.h>

#include <functional>

#include "test_util.h"

namespace condsim {
namespace {

constexpr double kPi = 3.14159265358979323846;

// minimizes f over [0, 2 pi): 2000-point scan, then golden-section refinement around the best
double MinimizeAngle(const std::function<double(double)>& f) {
  const int n = 2000;
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (f(2 * kPi * i / n) < f(2 * kPi * best / n)) best = i;
  double lo = 2 * kPi * (best - 1) / n, hi = 2 * kPi * (best + 1) / n;
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 200; ++it) {
    const double c = hi - g * (hi - lo), d = lo + g * (hi - lo);
    if (f(c) < f(d)) hi = d; else lo = c;
  }
  return (lo + hi) / 2;
}

Vec3 RandomImpulse(std::mt19937_64& rng) {
  const auto v = test::RandomVector(rng, 4, -1, 1);
  // a spread of magnitudes so every branch (open, stick, slip, polar cone) is hit
  const double scale = std::pow(10.0, 3 * v[3]);
  return Vec3(scale * v[0], scale * v[1], scale * v[2]);
}

TEST(Projection, StrictSatisfiesSurrogateSignoriniCoulomb) {
  auto rng = test::Rng();
  std::uniform_real_distribution<double> mu_dist(0, 1.5), gamma_dist(0.01, 10);
  int open = 0, stick = 0, slip = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const Vec3 eta = RandomImpulse(rng);
    const double mu = trial % 10 == 0 ? 0.0 : mu_dist(rng), gamma = gamma_dist(rng), phi = 0.1 * eta[1];
    // one-shot solve (Alg. 2): lambda* = -(eta + phi e_n) / gamma, then the projection
    const Vec3 lstar = (-1 / gamma) * (eta + Vec3(phi, 0, 0));
    const Vec3 l = ProjectStrict(lstar, mu);
    // surrogate post velocity (eq. 23): zeta = gamma lambda + eta + phi e_n
    const Vec3 zeta = gamma * l + eta + Vec3(phi, 0, 0);
    const double scale = std::max({1.0, Norm(eta), std::fabs(phi)});
    const double tol = 1e-10 * scale;
    ASSERT_GE(l[0], 0.0);
    ASSERT_GE(zeta[0], -tol);
    ASSERT_LE(std::fabs(l[0] * zeta[0]), tol * scale / gamma);
    const double lt = std::hypot(l[1], l[2]), zt = std::hypot(zeta[1], zeta[2]);
    ASSERT_LE(lt, mu * l[0] * (1 + 1e-14) + 1e-300);
    if (l[0] == 0) {
      ++open;
    } else if (lt < mu * l[0] * (1 - 1e-12)) {
      ++stick;
      ASSERT_LE(zt, tol) << "stick with tangential velocity";
    } else {
      ++slip;
      // friction opposite to sliding: zeta_t = -delta lambda_t with delta >= 0
      if (zt > tol) {
        ASSERT_LE(std::fabs(zeta[1] * l[2] - zeta[2] * l[1]), tol * lt) << "not collinear";
      }
      ASSERT_LE(zeta[1] * l[1] + zeta[2] * l[2], tol * lt) << "friction along the sliding";
      // brute force: the closest point of the disk boundary to lambda*_t, found twice. The scan of
      // the distance d(a) is exact in distance (1e-12) but flat in angle where d >> r (its
      // rounding eps |l*_t| over a curvature r |l*_t| / d); |r u - l*_t|^2 = r^2 + |l*_t|^2 -
      // 2 r u . l*_t, so the scan maximizing u(a) . l*_t has the same optimum to ~sqrt(2 eps) in
      // angle whatever d, but not to 1e-12 in distance where d << r. (Positions from the distance
      // scan were 1.25e-6 off with CONDSIM_TEST_SEED=100058.)
      const double r = mu * l[0];
      const double th_d = MinimizeAngle([&](double a) { return std::hypot(r * std::cos(a) - lstar[1], r * std::sin(a) - lstar[2]); });
      const double th = MinimizeAngle([&](double a) { return -(std::cos(a) * lstar[1] + std::sin(a) * lstar[2]); });
      const double ref_dist = std::hypot(r * std::cos(th_d) - lstar[1], r * std::sin(th_d) - lstar[2]);
      ASSERT_NEAR(std::hypot(l[1] - lstar[1], l[2] - lstar[2]), ref_dist, 1e-12 * std::max(1.0, Norm(lstar)));
      ASSERT_NEAR(l[1], r * std::cos(th), 1e-6 * std::max(1.0, r));
      ASSERT_NEAR(l[2], r * std::sin(th), 1e-6 * std::max(1.0, r));
    }
  }
  // every regime was exercised
  EXPECT_GT(open, 1000);
  EXPECT_GT(stick, 1000);
  EXPECT_GT(slip, 1000);
}

TEST(Projection, ProximalIsTheEuclideanProjectionOntoTheCone) {
  auto rng = test::Rng();
  std::uniform_real_distribution<double> mu_dist(0.05, 1.5);
  for (int trial = 0; trial < 10000; ++trial) {
    const Vec3 y = RandomImpulse(rng);
    const double mu = mu_dist(rng);
    const Vec3 x = ProjectProximal(y, mu);
    // brute force over the candidates: y itself if feasible, the apex, and the best point of
    // the cone surface {(r, mu r cos a, mu r sin a), r >= 0}; for a fixed angle the best r is
    // the clamped 1-D least-squares solution
    auto best_on_surface = [&](double a) {
      const Vec3 d(1, mu * std::cos(a), mu * std::sin(a));
      const double r = std::max(0.0, Dot(d, y) / Dot(d, d));
      return r * d;
    };
    const double th = MinimizeAngle([&](double a) { return Norm(best_on_surface(a) - y); });
    Vec3 ref = best_on_surface(th);
    if (Norm(y) < Norm(ref - y)) ref = Vec3(0, 0, 0);
    if (std::hypot(y[1], y[2]) <= mu * y[0]) ref = y;
    const double scale = std::max(1.0, Norm(y));
    // equal distance to 1e-12 (the optimum is flat), equal position to ~sqrt(eps)
    ASSERT_NEAR(Norm(x - y), Norm(ref - y), 1e-12 * scale) << "trial " << trial;
    ASSERT_LE(Norm(x - ref), 1e-6 * scale) << "trial " << trial;
    // and x is feasible
    ASSERT_LE(std::hypot(x[1], x[2]), mu * x[0] + 1e-12 * scale);
  }
}

TEST(Projection, AnisotropicStrictIsTheMaximalDissipationOptimum) {
  auto rng = test::Rng();
  std::uniform_real_distribution<double> mu_dist(0.05, 1.5);
  int outside = 0;
  for (int trial = 0; trial < 10000; ++trial) {
    const Vec3 y = RandomImpulse(rng);
    const double mu1 = mu_dist(rng), mu2 = trial % 7 == 0 ? mu1 * (1 + 1e-9) : mu_dist(rng);
    const Vec3 x = ProjectStrictAnisotropic(y, mu1, mu2);
    const double n = std::max(0.0, y[0]);
    ASSERT_EQ(x[0], n);
    const double a = mu1 * n, b = mu2 * n;
    const double scale = std::max(1.0, Norm(y));
    if (n == 0) {
      ASSERT_EQ(x[1], 0.0);
      ASSERT_EQ(x[2], 0.0);
      continue;
    }
    if ((y[1] / a) * (y[1] / a) + (y[2] / b) * (y[2] / b) <= 1) {
      ASSERT_EQ(x[1], y[1]);
      ASSERT_EQ(x[2], y[2]);
      continue;
    }
    ++outside;
    // MDP (Prop. 6): the minimum-distance point of the ellipse boundary
    const double th = MinimizeAngle([&](double t) { return std::hypot(a * std::cos(t) - y[1], b * std::sin(t) - y[2]); });
    const double ref_dist = std::hypot(a * std::cos(th) - y[1], b * std::sin(th) - y[2]);
    const double dist = std::hypot(x[1] - y[1], x[2] - y[2]);
    ASSERT_NEAR(dist, ref_dist, 1e-12 * scale) << "trial " << trial;
    ASSERT_NEAR(x[1], a * std::cos(th), 1e-6 * scale) << "trial " << trial;
    ASSERT_NEAR(x[2], b * std::sin(th), 1e-6 * scale) << "trial " << trial;
    ASSERT_NEAR((x[1] / a) * (x[1] / a) + (x[2] / b) * (x[2] / b), 1.0, 1e-12);
  }
  EXPECT_GT(outside, 3000);
  // isotropic limit: agrees with the disk projection
  const Vec3 y(2, 3, -4);
  const Vec3 iso = ProjectStrict(y, 0.5), ani = ProjectStrictAnisotropic(y, 0.5, 0.5);
  EXPECT_NEAR(Norm(iso - ani), 0, 1e-14);
  // degenerate: no friction along t1
  const Vec3 d = ProjectStrictAnisotropic(Vec3(1, 3, 0.2), 0, 0.5);
  EXPECT_EQ(d[1], 0.0);
  EXPECT_EQ(d[2], 0.2);
}

}  // namespace
}  // namespace condsim
