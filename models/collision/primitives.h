// Closest-point queries between points, triangles and segments (host and device). The answers
// are barycentric weights, the form a virtual node needs (eq. 14: J_a = w_a I).
#pragma once

#include "condsim/math.h"

namespace condsim {

// the point of triangle (a, b, c) closest to p as weights (wa, wb, wc), summing to 1, all >= 0
// (Voronoi regions of the vertices, edges and face, tested in turn)
CONDSIM_HD_INLINE Vec3 ClosestOnTriangle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const Scalar d1 = Dot(ab, ap), d2 = Dot(ac, ap);
  if (d1 <= 0 && d2 <= 0) return Vec3(1, 0, 0);
  const Vec3 bp = p - b;
  const Scalar d3 = Dot(ab, bp), d4 = Dot(ac, bp);
  if (d3 >= 0 && d4 <= d3) return Vec3(0, 1, 0);
  const Scalar vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    const Scalar s = d1 / (d1 - d3);
    return Vec3(1 - s, s, 0);
  }
  const Vec3 cp = p - c;
  const Scalar d5 = Dot(ab, cp), d6 = Dot(ac, cp);
  if (d6 >= 0 && d5 <= d6) return Vec3(0, 0, 1);
  const Scalar vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    const Scalar s = d2 / (d2 - d6);
    return Vec3(1 - s, 0, s);
  }
  const Scalar va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    const Scalar s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return Vec3(0, 1 - s, s);
  }
  const Scalar denom = 1 / (va + vb + vc);
  const Scalar wb = vb * denom, wc = vc * denom;
  return Vec3(1 - wb - wc, wb, wc);
}

CONDSIM_HD_INLINE Scalar Clamp01(Scalar x) { return x < 0 ? Scalar(0) : (x > 1 ? Scalar(1) : x); }

// parameters (s, t) in [0, 1]^2 of the closest points p0 + s (p1 - p0) and q0 + t (q1 - q0) of
// two segments (parallel segments: the pair found from s = 0 or the clamped overlap)
struct SegmentParams {
  Scalar s, t;
};
CONDSIM_HD_INLINE SegmentParams ClosestOnSegments(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1) {
  const Vec3 d1 = p1 - p0, d2 = q1 - q0, r = p0 - q0;
  const Scalar a = Dot(d1, d1), e = Dot(d2, d2), f = Dot(d2, r);
  const Scalar tiny = Scalar(1e-30);
  if (a <= tiny && e <= tiny) return {0, 0};
  if (a <= tiny) return {0, Clamp01(f / e)};
  const Scalar c = Dot(d1, r);
  if (e <= tiny) return {Clamp01(-c / a), 0};
  const Scalar b = Dot(d1, d2), denom = a * e - b * b;
  Scalar s = denom > Scalar(1e-12) * a * e ? Clamp01((b * f - c * e) / denom) : Scalar(0);
  Scalar t = (b * s + f) / e;
  if (t < 0) {
    t = 0;
    s = Clamp01(-c / a);
  } else if (t > 1) {
    t = 1;
    s = Clamp01((b - c) / a);
  }
  return {s, t};
}

}  // namespace condsim
