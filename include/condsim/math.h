// Small fixed-size math shared by host and device: Vec3, Mat3, Quat, symmetric
// eigen-decomposition, 3x3 SVD and polar decomposition. Plain structs, no alignment rules.
#pragma once

#include <cmath>
#include <cstdint>

#include "condsim/core.h"

namespace condsim {

// machine epsilon of Scalar, usable in device code
#if defined(CONDSIM_FLOAT) && CONDSIM_FLOAT
constexpr Scalar kEpsilon = 1.1920928955078125e-07f;
constexpr Scalar kTinyScalar = 1.17549435e-38f;  // smallest normal float
#else
constexpr Scalar kEpsilon = 2.220446049250313e-16;
constexpr Scalar kTinyScalar = 2.2250738585072014e-308;  // smallest normal double
#endif

// a number that is neither infinite nor NaN (no fast-math in this project; std::isfinite is not
// usable in every device function)
CONDSIM_HD_INLINE bool IsFinite(Scalar x) { return x - x == 0; }

struct Vec3 {
  Scalar e[3];

  CONDSIM_HD_INLINE Vec3() : e{0, 0, 0} {}
  CONDSIM_HD_INLINE Vec3(Scalar x, Scalar y, Scalar z) : e{x, y, z} {}
  CONDSIM_HD_INLINE Scalar& operator[](int i) { return e[i]; }
  CONDSIM_HD_INLINE Scalar operator[](int i) const { return e[i]; }
  CONDSIM_HD_INLINE Scalar x() const { return e[0]; }
  CONDSIM_HD_INLINE Scalar y() const { return e[1]; }
  CONDSIM_HD_INLINE Scalar z() const { return e[2]; }
};

CONDSIM_HD_INLINE Vec3 operator+(const Vec3& a, const Vec3& b) {
  return Vec3(a[0] + b[0], a[1] + b[1], a[2] + b[2]);
}
CONDSIM_HD_INLINE Vec3 operator-(const Vec3& a, const Vec3& b) {
  return Vec3(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}
CONDSIM_HD_INLINE Vec3 operator-(const Vec3& a) { return Vec3(-a[0], -a[1], -a[2]); }
CONDSIM_HD_INLINE Vec3 operator*(Scalar s, const Vec3& a) {
  return Vec3(s * a[0], s * a[1], s * a[2]);
}
CONDSIM_HD_INLINE Vec3 operator*(const Vec3& a, Scalar s) { return s * a; }
CONDSIM_HD_INLINE Vec3 operator/(const Vec3& a, Scalar s) {
  return Vec3(a[0] / s, a[1] / s, a[2] / s);
}
CONDSIM_HD_INLINE Vec3& operator+=(Vec3& a, const Vec3& b) { return a = a + b; }
CONDSIM_HD_INLINE Vec3& operator-=(Vec3& a, const Vec3& b) { return a = a - b; }
CONDSIM_HD_INLINE Scalar Dot(const Vec3& a, const Vec3& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
CONDSIM_HD_INLINE Vec3 Cross(const Vec3& a, const Vec3& b) {
  return Vec3(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}
CONDSIM_HD_INLINE Scalar SquaredNorm(const Vec3& a) { return Dot(a, a); }
CONDSIM_HD_INLINE Scalar Norm(const Vec3& a) { return std::sqrt(Dot(a, a)); }
// unit vector along a; the zero vector stays zero
CONDSIM_HD_INLINE Vec3 Normalized(const Vec3& a) {
  const Scalar n = Norm(a);
  return n > Scalar(0) ? a / n : Vec3();
}

// row-major 3x3 matrix
struct Mat3 {
  Scalar m[3][3];

  CONDSIM_HD_INLINE Mat3() : m{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}} {}
  CONDSIM_HD_INLINE Mat3(Scalar a00, Scalar a01, Scalar a02, Scalar a10, Scalar a11, Scalar a12,
                         Scalar a20, Scalar a21, Scalar a22)
      : m{{a00, a01, a02}, {a10, a11, a12}, {a20, a21, a22}} {}
  CONDSIM_HD_INLINE Scalar& operator()(int i, int j) { return m[i][j]; }
  CONDSIM_HD_INLINE Scalar operator()(int i, int j) const { return m[i][j]; }

  CONDSIM_HD_INLINE static Mat3 Identity() { return Mat3(1, 0, 0, 0, 1, 0, 0, 0, 1); }
  CONDSIM_HD_INLINE static Mat3 Diagonal(const Vec3& d) {
    return Mat3(d[0], 0, 0, 0, d[1], 0, 0, 0, d[2]);
  }
  CONDSIM_HD_INLINE static Mat3 FromColumns(const Vec3& c0, const Vec3& c1, const Vec3& c2) {
    return Mat3(c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2]);
  }
  CONDSIM_HD_INLINE static Mat3 FromRows(const Vec3& r0, const Vec3& r1, const Vec3& r2) {
    return Mat3(r0[0], r0[1], r0[2], r1[0], r1[1], r1[2], r2[0], r2[1], r2[2]);
  }
  CONDSIM_HD_INLINE Vec3 Col(int j) const { return Vec3(m[0][j], m[1][j], m[2][j]); }
  CONDSIM_HD_INLINE Vec3 Row(int i) const { return Vec3(m[i][0], m[i][1], m[i][2]); }
};

CONDSIM_HD_INLINE Mat3 operator+(const Mat3& a, const Mat3& b) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[i][j] + b.m[i][j];
  return r;
}
CONDSIM_HD_INLINE Mat3 operator-(const Mat3& a, const Mat3& b) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r.m[i][j] = a.m[i][j] - b.m[i][j];
  return r;
}
CONDSIM_HD_INLINE Mat3 operator*(Scalar s, const Mat3& a) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r.m[i][j] = s * a.m[i][j];
  return r;
}
CONDSIM_HD_INLINE Vec3 operator*(const Mat3& a, const Vec3& v) {
  return Vec3(a.m[0][0] * v[0] + a.m[0][1] * v[1] + a.m[0][2] * v[2],
              a.m[1][0] * v[0] + a.m[1][1] * v[1] + a.m[1][2] * v[2],
              a.m[2][0] * v[0] + a.m[2][1] * v[1] + a.m[2][2] * v[2]);
}
CONDSIM_HD_INLINE Mat3 operator*(const Mat3& a, const Mat3& b) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
  return r;
}
CONDSIM_HD_INLINE Mat3 Transpose(const Mat3& a) {
  return Mat3(a.m[0][0], a.m[1][0], a.m[2][0], a.m[0][1], a.m[1][1], a.m[2][1], a.m[0][2],
              a.m[1][2], a.m[2][2]);
}
CONDSIM_HD_INLINE Scalar Trace(const Mat3& a) { return a.m[0][0] + a.m[1][1] + a.m[2][2]; }
CONDSIM_HD_INLINE Scalar Determinant(const Mat3& a) {
  return Dot(a.Row(0), Cross(a.Row(1), a.Row(2)));
}
CONDSIM_HD_INLINE Scalar FrobeniusNorm(const Mat3& a) {
  Scalar s = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) s += a.m[i][j] * a.m[i][j];
  return std::sqrt(s);
}
// a * b^T
CONDSIM_HD_INLINE Mat3 Outer(const Vec3& a, const Vec3& b) {
  return Mat3(a[0] * b[0], a[0] * b[1], a[0] * b[2], a[1] * b[0], a[1] * b[1], a[1] * b[2],
              a[2] * b[0], a[2] * b[1], a[2] * b[2]);
}
// a right-handed frame (columns x, y, z) whose z axis is the unit vector z; x is the world axis
// least aligned with z (1, 0, 0 unless |z_x| >= 0.9, then 0, 1, 0), orthogonalized
CONDSIM_HD_INLINE Mat3 FrameAround(const Vec3& z) {
  const Vec3 axis = std::fabs(z[0]) < Scalar(0.9) ? Vec3(1, 0, 0) : Vec3(0, 1, 0);
  const Vec3 x = Normalized(axis - Dot(axis, z) * z);
  return Mat3::FromColumns(x, Cross(z, x), z);
}
// [a]x, the matrix with [a]x b = a x b
CONDSIM_HD_INLINE Mat3 Skew(const Vec3& a) { return Mat3(0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0); }
// inverse by the adjugate; the caller guarantees det != 0
CONDSIM_HD_INLINE Mat3 Inverse(const Mat3& a) {
  const Vec3 c0 = Cross(a.Row(1), a.Row(2));
  const Vec3 c1 = Cross(a.Row(2), a.Row(0));
  const Vec3 c2 = Cross(a.Row(0), a.Row(1));
  const Scalar inv_det = Scalar(1) / Dot(a.Row(0), c0);
  return inv_det * Mat3::FromColumns(c0, c1, c2);
}

// unit quaternion w + xi + yj + zk for rotations (Hamilton convention)
struct Quat {
  Scalar w, x, y, z;

  CONDSIM_HD_INLINE Quat() : w(1), x(0), y(0), z(0) {}
  CONDSIM_HD_INLINE Quat(Scalar w_, Scalar x_, Scalar y_, Scalar z_) : w(w_), x(x_), y(y_), z(z_) {}
  CONDSIM_HD_INLINE Vec3 Vec() const { return Vec3(x, y, z); }
};

CONDSIM_HD_INLINE Quat operator*(const Quat& a, const Quat& b) {
  return Quat(a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
              a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
              a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
              a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w);
}
CONDSIM_HD_INLINE Quat Conjugate(const Quat& q) { return Quat(q.w, -q.x, -q.y, -q.z); }
CONDSIM_HD_INLINE Scalar Norm(const Quat& q) {
  return std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
}
CONDSIM_HD_INLINE Quat Normalized(const Quat& q) {
  const Scalar n = Norm(q);
  return n > Scalar(0) ? Quat(q.w / n, q.x / n, q.y / n, q.z / n) : Quat();
}
// q v q*, for unit q
CONDSIM_HD_INLINE Vec3 Rotate(const Quat& q, const Vec3& v) {
  const Vec3 u = q.Vec();
  const Vec3 t = Scalar(2) * Cross(u, v);
  return v + q.w * t + Cross(u, t);
}
CONDSIM_HD_INLINE Mat3 ToMatrix(const Quat& q) {
  const Scalar xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  const Scalar xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
  const Scalar wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  return Mat3(1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy), 2 * (xy + wz), 1 - 2 * (xx + zz),
              2 * (yz - wx), 2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy));
}
// rotation matrix to unit quaternion with w >= 0 (Shepperd: branch on the largest diagonal term)
CONDSIM_HD_INLINE Quat FromMatrix(const Mat3& r) {
  const Scalar tr = Trace(r);
  Quat q;
  if (tr >= r(0, 0) && tr >= r(1, 1) && tr >= r(2, 2)) {
    const Scalar s = std::sqrt(tr + 1) * 2;  // s = 4w
    q = Quat(s / 4, (r(2, 1) - r(1, 2)) / s, (r(0, 2) - r(2, 0)) / s, (r(1, 0) - r(0, 1)) / s);
  } else if (r(0, 0) >= r(1, 1) && r(0, 0) >= r(2, 2)) {
    const Scalar s = std::sqrt(1 + r(0, 0) - r(1, 1) - r(2, 2)) * 2;  // s = 4x
    q = Quat((r(2, 1) - r(1, 2)) / s, s / 4, (r(0, 1) + r(1, 0)) / s, (r(0, 2) + r(2, 0)) / s);
  } else if (r(1, 1) >= r(2, 2)) {
    const Scalar s = std::sqrt(1 + r(1, 1) - r(0, 0) - r(2, 2)) * 2;  // s = 4y
    q = Quat((r(0, 2) - r(2, 0)) / s, (r(0, 1) + r(1, 0)) / s, s / 4, (r(1, 2) + r(2, 1)) / s);
  } else {
    const Scalar s = std::sqrt(1 + r(2, 2) - r(0, 0) - r(1, 1)) * 2;  // s = 4z
    q = Quat((r(1, 0) - r(0, 1)) / s, (r(0, 2) + r(2, 0)) / s, (r(1, 2) + r(2, 1)) / s, s / 4);
  }
  if (q.w < 0) q = Quat(-q.w, -q.x, -q.y, -q.z);
  return Normalized(q);
}
// exponential map: rotation by |theta| radians about theta/|theta|; Taylor series near zero
CONDSIM_HD_INLINE Quat FromRotationVector(const Vec3& theta) {
  const Scalar angle = Norm(theta);
  const Scalar half = angle / 2;
  // sin(half)/angle, with its series below 1e-4 rad (error < angle^4/3840)
  const Scalar k = angle < Scalar(1e-4) ? Scalar(0.5) - angle * angle / 48 : std::sin(half) / angle;
  return Normalized(Quat(std::cos(half), k * theta[0], k * theta[1], k * theta[2]));
}

// rotation vector of a rotation matrix (the SO(3) logarithm), robust near 0 and pi
CONDSIM_HD_INLINE Vec3 LogRotation(const Mat3& r) {
  Quat q = FromMatrix(r);  // w >= 0
  const Scalar s = Norm(q.Vec());
  if (s < Scalar(1e-8)) return Scalar(2) * q.Vec() * (1 - s * s / 6);  // angle ~ 2 s
  const Scalar angle = 2 * std::atan2(s, q.w);
  return (angle / s) * q.Vec();
}

// ---- flat structure-of-arrays access: item k of an array of 3-vectors / row-major 3x3 blocks

CONDSIM_HD_INLINE Vec3 LoadVec3(const Scalar* a, Index k) {
  const Scalar* p = a + 3 * std::int64_t(k);
  return Vec3(p[0], p[1], p[2]);
}
CONDSIM_HD_INLINE void StoreVec3(Scalar* a, Index k, const Vec3& v) {
  Scalar* p = a + 3 * std::int64_t(k);
  p[0] = v[0];
  p[1] = v[1];
  p[2] = v[2];
}
CONDSIM_HD_INLINE void AddVec3(Scalar* a, Index k, const Vec3& v) {
  Scalar* p = a + 3 * std::int64_t(k);
  p[0] += v[0];
  p[1] += v[1];
  p[2] += v[2];
}
CONDSIM_HD_INLINE Mat3 LoadMat3(const Scalar* a, Index k) {
  const Scalar* p = a + 9 * std::int64_t(k);
  return Mat3(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
}
CONDSIM_HD_INLINE void StoreMat3(Scalar* a, Index k, const Mat3& m) {
  Scalar* p = a + 9 * std::int64_t(k);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) p[3 * i + j] = m(i, j);
}

// ---- decompositions -----------------------------------------------------------------------

// eigen-decomposition of a symmetric matrix: a = vectors * diag(values) * vectors^T,
// values sorted in decreasing order, vectors a rotation (det = +1)
struct SymmetricEigen3 {
  Vec3 values;
  Mat3 vectors;
};

// one Jacobi rotation J in the (p, q) plane (r the third index) that zeroes a_pq of the symmetric
// matrix held as its diagonal and off-diagonal entries: a <- J^T a J, v <- v J, with
// t = tan(phi) the smaller root of t^2 + 2 theta t - 1 = 0, theta = (a_qq - a_pp) / (2 a_pq),
// so that a_pp -= t a_pq, a_qq += t a_pq (Golub & Van Loan 2013, Alg. 8.5.1 "sym.schur2")
template <int P, int Q>
CONDSIM_HD_INLINE void JacobiRotate(Scalar& app, Scalar& aqq, Scalar& apq, Scalar& arp, Scalar& arq, Mat3& v) {
  if (apq == Scalar(0)) return;
  const Scalar theta = (aqq - app) / (2 * apq);
  const Scalar abs_theta = std::fabs(theta);
  // 1 / (|theta| + sqrt(theta^2 + 1)) without overflow of theta^2
  Scalar t = abs_theta > Scalar(1e18) ? Scalar(1) / (2 * abs_theta) : Scalar(1) / (abs_theta + std::sqrt(theta * theta + 1));
  if (theta < 0) t = -t;
  const Scalar c = Scalar(1) / std::sqrt(t * t + 1);
  const Scalar s = t * c;
  app -= t * apq;
  aqq += t * apq;
  apq = 0;  // zeroed up to rounding: store the exact zero
  const Scalar rp = arp, rq = arq;
  arp = c * rp - s * rq;
  arq = s * rp + c * rq;
  for (int k = 0; k < 3; ++k) {
    const Scalar vkp = v(k, P), vkq = v(k, Q);
    v(k, P) = c * vkp - s * vkq;
    v(k, Q) = s * vkp + c * vkq;
  }
}

// most cyclic Jacobi sweeps ComputeSymmetricEigen makes. Cyclic Jacobi converges quadratically,
// also with repeated eigenvalues (Henrici 1958; Schoenhage 1961): on 2e5 random 3x3 Gram matrices
// f^T f the off-diagonal fell below 1 ulp of the diagonal after 2 sweeps in 0.5 %, 3 in 69 % and
// 4 in 30.5 %; no draw of random, near-identity (FEM elements), clustered or rank-deficient
// input needed a 5th. The cap is 5, one sweep of margin that the stop rule leaves unused.
// tests/math_test.cpp checks the accuracy on such input against Eigen (and fails with a cap of
// 3 or 2: residuals 4e-7 and 5e-2 of |a|)
constexpr int kJacobiSweeps = 5;

// cyclic Jacobi rotations on a symmetric 3x3 matrix, unrolled, on its 6 distinct entries: at
// most kJacobiSweeps sweeps, stopping once every off-diagonal entry is within 1 ulp of the
// largest diagonal one (then eigenvalues are exact to ~1 ulp of |a| by Weyl's theorem and
// |a v - v diag| <= ~2 ulp |a|)
CONDSIM_HD_INLINE SymmetricEigen3 ComputeSymmetricEigen(const Mat3& sym) {
  Scalar a00 = sym(0, 0), a11 = sym(1, 1), a22 = sym(2, 2);
  Scalar a01 = sym(0, 1), a02 = sym(0, 2), a12 = sym(1, 2);
  Mat3 v = Mat3::Identity();
  for (int sweep = 0; sweep < kJacobiSweeps; ++sweep) {
    // magnitudes, not squares: no overflow for entries up to the Scalar range
    const Scalar off = std::fmax(std::fmax(std::fabs(a01), std::fabs(a02)), std::fabs(a12));
    const Scalar diag = std::fmax(std::fmax(std::fabs(a00), std::fabs(a11)), std::fabs(a22));
    if (!(off > kEpsilon * diag)) break;  // also stops on NaN
    // pairs (0,1), (0,2), (1,2); (a_rp, a_rq) the third row's entries in columns p and q
    JacobiRotate<0, 1>(a00, a11, a01, a02, a12, v);
    JacobiRotate<0, 2>(a00, a22, a02, a01, a12, v);
    JacobiRotate<1, 2>(a11, a22, a12, a01, a02, v);
  }
  // sort by decreasing eigenvalue, swapping columns of v
  Vec3 d(a00, a11, a22);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2 - i; ++j) {
      if (d[j] < d[j + 1]) {
        const Scalar tmp = d[j];
        d[j] = d[j + 1];
        d[j + 1] = tmp;
        for (int k = 0; k < 3; ++k) {
          const Scalar tv = v(k, j);
          v(k, j) = v(k, j + 1);
          v(k, j + 1) = tv;
        }
      }
    }
  }
  // make v a proper rotation
  if (Determinant(v) < 0) {
    for (int k = 0; k < 3; ++k) v(k, 2) = -v(k, 2);
  }
  return SymmetricEigen3{d, v};
}

// f = u * diag(sigma) * v^T with u, v rotations (det = +1) and sigma[0] >= sigma[1] >= |sigma[2]|;
// sigma[2] < 0 exactly when det(f) < 0 (inverted element). Method: Jacobi eigenvectors of f^T f,
// then a Givens QR of f v, which stays accurate for nearly singular f (the small singular values
// come from the QR, not from square roots of tiny eigenvalues).
struct Svd3 {
  Mat3 u;
  Vec3 sigma;
  Mat3 v;
};

CONDSIM_HD_INLINE Svd3 ComputeSvd(const Mat3& f) {
  const SymmetricEigen3 eig = ComputeSymmetricEigen(Transpose(f) * f);
  const Mat3 v = eig.vectors;
  Mat3 b = f * v;
  Mat3 q = Mat3::Identity();
  // givens rotations zeroing b(1,0), b(2,0), b(2,1); q accumulates so that f v = q b
  const int rows_i[3] = {1, 2, 2};
  const int rows_j[3] = {0, 0, 1};
  for (int g = 0; g < 3; ++g) {
    const int i = rows_i[g], j = rows_j[g];
    const Scalar aj = b(j, j), ai = b(i, j);
    const Scalar r = std::sqrt(aj * aj + ai * ai);
    Scalar c = 1, s = 0;
    if (r > Scalar(0)) {
      c = aj / r;
      s = ai / r;
    }
    for (int k = 0; k < 3; ++k) {
      const Scalar bj = b(j, k), bi = b(i, k);
      b(j, k) = c * bj + s * bi;
      b(i, k) = -s * bj + c * bi;
    }
    for (int k = 0; k < 3; ++k) {
      const Scalar qj = q(k, j), qi = q(k, i);
      q(k, j) = c * qj + s * qi;
      q(k, i) = -s * qj + c * qi;
    }
  }
  return Svd3{q, Vec3(b(0, 0), b(1, 1), b(2, 2)), v};
}

// polar decomposition f = r * s: r the rotation closest to f in the Frobenius norm (det r = +1
// even for inverted f, as co-rotational FEM needs) and s = r^T f symmetric (indefinite when
// det f < 0)
struct Polar3 {
  Mat3 r;
  Mat3 s;
};

CONDSIM_HD_INLINE Polar3 ComputePolar(const Mat3& f) {
  const Svd3 svd = ComputeSvd(f);
  const Mat3 r = svd.u * Transpose(svd.v);
  const Mat3 s = svd.v * Mat3::Diagonal(svd.sigma) * Transpose(svd.v);
  return Polar3{r, s};
}

}  // namespace condsim
