// Friction-cone projections of the per-contact solve (paper Sec. III-D, eq. 26, Fig. 3, Prop. 6).
// A contact impulse is (n, t1, t2) in the contact frame, normal first.
#pragma once

#include <cmath>

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

enum class Projection : int { kStrict = 0, kProximal = 1 };

// strict operator (eq. 26): n = max(n*, 0), then t onto the disk of radius mu n. With it the
// one-shot solve satisfies the Signorini-Coulomb conditions (eq. 11) exactly (Prop. 4).
CONDSIM_HD_INLINE Vec3 ProjectStrict(const Vec3& l, Scalar mu) {
  const Scalar n = l[0] > Scalar(0) ? l[0] : Scalar(0);
  const Scalar radius = mu * n;
  const Scalar s = std::sqrt(l[1] * l[1] + l[2] * l[2]);
  if (s <= radius) return Vec3(n, l[1], l[2]);
  const Scalar k = radius / s;  // s > radius >= 0
  return Vec3(n, k * l[1], k * l[2]);
}

// proximal operator (eq. 26): Euclidean projection onto the cone {|t| <= mu n}; the converged
// solution is the convex (CCP) relaxation of eq. 11 (Prop. 5)
CONDSIM_HD_INLINE Vec3 ProjectProximal(const Vec3& l, Scalar mu) {
  const Scalar n = l[0];
  const Scalar s = std::sqrt(l[1] * l[1] + l[2] * l[2]);
  if (s <= mu * n) return l;                          // inside the cone
  if (mu * s <= -n) return Vec3(0, 0, 0);             // inside the polar cone
  const Scalar np = (n + mu * s) / (1 + mu * mu);     // onto the cone's surface
  const Scalar k = mu * np / s;                       // s > 0 here
  return Vec3(np, k * l[1], k * l[2]);
}

// closest point to (y1, y2) in the ellipse x1^2/a^2 + x2^2/b^2 <= 1 (a, b >= 0): for a point
// outside, x_i = y_i a_i^2 / (a_i^2 + tau) with tau > 0 the root of
// g(tau) = sum (a_i y_i / (a_i^2 + tau))^2 - 1, which is convex and decreasing: Newton from
// tau = 0 increases monotonically to the root; a bisection bracket guards rounding.
CONDSIM_HD_INLINE void ProjectOntoEllipse(Scalar a, Scalar b, Scalar y1, Scalar y2, Scalar* x1,
                                          Scalar* x2) {
  if (a <= Scalar(0) || b <= Scalar(0)) {
    // degenerate ellipse: a segment on one axis (or the origin)
    *x1 = a > Scalar(0) ? (y1 > a ? a : (y1 < -a ? -a : y1)) : Scalar(0);
    *x2 = b > Scalar(0) ? (y2 > b ? b : (y2 < -b ? -b : y2)) : Scalar(0);
    return;
  }
  const Scalar q1 = y1 / a, q2 = y2 / b;
  if (q1 * q1 + q2 * q2 <= Scalar(1)) {
    *x1 = y1;
    *x2 = y2;
    return;
  }
  const Scalar a2 = a * a, b2 = b * b, ay = a * std::fabs(y1), by = b * std::fabs(y2);
  Scalar lo = 0, hi = std::sqrt(ay * ay + by * by);  // g(lo) > 0 >= g(hi)
  Scalar tau = 0;
  for (int it = 0; it < 200; ++it) {
    const Scalar d1 = a2 + tau, d2 = b2 + tau;
    const Scalar r1 = ay / d1, r2 = by / d2;
    const Scalar g = r1 * r1 + r2 * r2 - 1;
    if (g > 0) lo = tau; else hi = tau;
    const Scalar dg = -2 * (r1 * r1 / d1 + r2 * r2 / d2);
    Scalar next = tau - g / dg;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;  // stay inside the bracket
    if (std::fabs(next - tau) <= 4 * kEpsilon * next || hi - lo <= 4 * kEpsilon * hi) {
      tau = next;
      break;
    }
    tau = next;
  }
  *x1 = y1 * a2 / (a2 + tau);
  *x2 = y2 * b2 / (b2 + tau);
}

// strict operator for the ellipsoidal cone t1^2/mu1^2 + t2^2/mu2^2 <= n^2: n = max(n*, 0), then
// the closest point of the ellipse cross-section: the maximal-dissipation solution (Prop. 6)
CONDSIM_HD_INLINE Vec3 ProjectStrictAnisotropic(const Vec3& l, Scalar mu1, Scalar mu2) {
  const Scalar n = l[0] > Scalar(0) ? l[0] : Scalar(0);
  Scalar t1 = 0, t2 = 0;
  ProjectOntoEllipse(mu1 * n, mu2 * n, l[1], l[2], &t1, &t2);
  return Vec3(n, t1, t2);
}

// the projection used by the solver for one contact (isotropic when mu1 == mu2); the proximal
// operator is defined for isotropic contacts only (checked when contacts are validated)
CONDSIM_HD_INLINE Vec3 ProjectFrictionCone(Projection kind, const Vec3& l, Scalar mu1, Scalar mu2) {
  if (kind == Projection::kProximal) return ProjectProximal(l, mu1);
  if (mu1 == mu2) return ProjectStrict(l, mu1);
  return ProjectStrictAnisotropic(l, mu1, mu2);
}

}  // namespace condsim
