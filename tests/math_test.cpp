// Vec3 / Mat3 / Quat and the 3x3 decompositions against Eigen (dense reference) on random
// input. Tolerances: 1e-12 relative for well-conditioned operations in double (a few ulps
// times the condition number), stated per test.
#include "condsim/math.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "test_util.h"

namespace condsim {
namespace {

using Eigen::Matrix3d;
using Eigen::Vector3d;

Matrix3d ToEigen(const Mat3& a) {
  Matrix3d m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = a(i, j);
  return m;
}
Mat3 FromEigen(const Matrix3d& m) {
  Mat3 a;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) a(i, j) = m(i, j);
  return a;
}
Vector3d ToEigen(const Vec3& v) { return Vector3d(v[0], v[1], v[2]); }
Mat3 RandomMat(std::mt19937_64& rng) {
  const auto v = test::RandomVector(rng, 9);
  return Mat3(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
}
Matrix3d RandomRotation(std::mt19937_64& rng) {
  const auto v = test::RandomVector(rng, 4);
  return Eigen::Quaterniond(v[0], v[1], v[2], v[3]).normalized().toRotationMatrix();
}

constexpr double kTol = 1e-12;

TEST(Math, VectorAndMatrixOpsMatchEigen) {
  auto rng = test::Rng();
  for (int t = 0; t < 100; ++t) {
    const Mat3 a = RandomMat(rng), b = RandomMat(rng);
    const auto w = test::RandomVector(rng, 6);
    const Vec3 u(w[0], w[1], w[2]), v(w[3], w[4], w[5]);
    EXPECT_LT((ToEigen(a * b) - ToEigen(a) * ToEigen(b)).norm(), kTol);
    EXPECT_LT((ToEigen(a * u) - ToEigen(a) * ToEigen(u)).norm(), kTol);
    EXPECT_LT((ToEigen(Transpose(a)) - ToEigen(a).transpose()).norm(), kTol);
    EXPECT_NEAR(Determinant(a), ToEigen(a).determinant(), kTol);
    EXPECT_NEAR(Trace(a), ToEigen(a).trace(), kTol);
    EXPECT_NEAR(FrobeniusNorm(a), ToEigen(a).norm(), kTol);
    EXPECT_LT((ToEigen(Cross(u, v)) - ToEigen(u).cross(ToEigen(v))).norm(), kTol);
    EXPECT_LT((ToEigen(Skew(u) * v) - ToEigen(u).cross(ToEigen(v))).norm(), kTol);
    EXPECT_LT((ToEigen(Outer(u, v)) - ToEigen(u) * ToEigen(v).transpose()).norm(), kTol);
    EXPECT_NEAR(Dot(u, v), ToEigen(u).dot(ToEigen(v)), kTol);
    // inverse: relative to the condition number of a
    const double cond = ToEigen(a).norm() * ToEigen(a).inverse().norm();
    EXPECT_LT((ToEigen(Inverse(a)) - ToEigen(a).inverse()).norm() / ToEigen(a).inverse().norm(), kTol * cond);
  }
  EXPECT_EQ(SquaredNorm(Normalized(Vec3(0, 0, 0))), 0.0);
}

TEST(Math, QuaternionsMatchEigen) {
  auto rng = test::Rng();
  for (int t = 0; t < 100; ++t) {
    const auto c = test::RandomVector(rng, 11);
    const Quat p = Normalized(Quat(c[0], c[1], c[2], c[3]));
    const Quat q = Normalized(Quat(c[4], c[5], c[6], c[7]));
    const Eigen::Quaterniond ep(p.w, p.x, p.y, p.z), eq(q.w, q.x, q.y, q.z);
    const Vec3 v(c[8], c[9], c[10]);
    EXPECT_LT((ToEigen(ToMatrix(p)) - ep.toRotationMatrix()).norm(), kTol);
    const Quat pq = p * q;
    const Eigen::Quaterniond epq = ep * eq;
    EXPECT_LT(std::fabs(pq.w - epq.w()) + std::fabs(pq.x - epq.x()) + std::fabs(pq.y - epq.y()) +
                  std::fabs(pq.z - epq.z()),
              kTol);
    EXPECT_LT((ToEigen(Rotate(p, v)) - ep * ToEigen(v)).norm(), kTol);
    EXPECT_LT((ToEigen(Rotate(Conjugate(p), Rotate(p, v))) - ToEigen(v)).norm(), kTol);
    // matrix -> quaternion round trip (q and -q are the same rotation)
    const Quat back = FromMatrix(ToMatrix(p));
    const double sign = back.w * p.w + back.x * p.x + back.y * p.y + back.z * p.z > 0 ? 1 : -1;
    EXPECT_LT(std::fabs(back.w - sign * p.w) + std::fabs(back.x - sign * p.x) +
                  std::fabs(back.y - sign * p.y) + std::fabs(back.z - sign * p.z),
              kTol);
  }
}

TEST(Math, RotationVectorMatchesAngleAxisIncludingTinyAngles) {
  auto rng = test::Rng();
  for (double angle : {0.0, 1e-12, 1e-6, 9e-5, 1.1e-4, 0.3, 2.0, 3.14159}) {
    const auto a = test::RandomVector(rng, 3);
    const Vector3d axis = Vector3d(a[0], a[1], a[2]).normalized();
    const Vector3d theta = angle * axis;
    const Matrix3d ref = Eigen::AngleAxisd(angle, axis).toRotationMatrix();
    const Mat3 r = ToMatrix(FromRotationVector(Vec3(theta[0], theta[1], theta[2])));
    EXPECT_LT((ToEigen(r) - ref).norm(), kTol) << "angle " << angle;
  }
}

TEST(Math, SymmetricEigenMatchesEigenSolver) {
  auto rng = test::Rng();
  for (int t = 0; t < 200; ++t) {
    const Mat3 a = RandomMat(rng);
    const Mat3 s = a + Transpose(a);
    const SymmetricEigen3 eig = ComputeSymmetricEigen(s);
    Eigen::SelfAdjointEigenSolver<Matrix3d> ref(ToEigen(s));
    // Eigen sorts increasing, condsim decreasing
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(eig.values[i], ref.eigenvalues()[2 - i], kTol);
    const Matrix3d v = ToEigen(eig.vectors);
    EXPECT_LT((v * ToEigen(Mat3::Diagonal(eig.values)) * v.transpose() - ToEigen(s)).norm(), kTol);
    EXPECT_LT((v.transpose() * v - Matrix3d::Identity()).norm(), kTol);
    EXPECT_NEAR(v.determinant(), 1.0, kTol);
  }
}

// ComputeSymmetricEigen's at most kJacobiSweeps cyclic Jacobi sweeps (math.h) on the spectra
// where a capped Jacobi is weakest: clustered and repeated eigenvalues (relative gaps 1e-16 to
// 1e-2), near-identity Gram matrices F^T F of slightly strained elements, rank-deficient and
// indefinite ones. Reference: Eigen's SelfAdjointEigenSolver. Tolerances (eps = 2.2e-16, |A| the
// Frobenius norm): eigenvalues within 16 eps |A| of Eigen's (both solvers' errors, a few eps
// each: Weyl's theorem for an off-diagonal below 1 ulp), residual |A V - V D| <= 8 eps |A|,
// |V^T V - I| <= 32 eps, det V = +1 within 32 eps. Measured worst over 2e5 draws per kind:
// 8 / 3.1 / 12 eps (values / residual / orthogonality). With kJacobiSweeps = 3 the residual
// reaches 1.7e9 eps (4e-7 |A|), with 2 2.5e14 eps: the test fails.
TEST(Math, SymmetricEigenIsAccurateOnClusteredAndSingularSpectra) {
  auto rng = test::Rng();
  std::uniform_real_distribution<double> u01(0, 1);
  std::normal_distribution<double> n01;
  const double eps = kEpsilon;
  double worst_value = 0, worst_residual = 0, worst_orth = 0;
  for (int t = 0; t < 4000; ++t) {
    const int kind = t % 4;
    Matrix3d a;
    if (kind == 0) {
      // clustered around 1 (half of them with an isolated negative eigenvalue)
      const double gap = std::pow(10.0, -16 + 14 * u01(rng));
      const Matrix3d v = RandomRotation(rng);
      Vector3d l(1, 1 + gap * n01(rng), 1 + gap * n01(rng));
      if (t % 8 == 0) l[2] = -0.5;
      a = v * l.asDiagonal() * v.transpose();
    } else if (kind == 1) {
      // F^T F of a near-rotation F = I + e G, e from 1e-1 to 1e-8
      const double e = std::pow(10.0, -1 - 7 * u01(rng));
      Matrix3d f = Matrix3d::Identity();
      for (int i = 0; i < 9; ++i) f(i) += e * n01(rng);
      a = f.transpose() * f;
    } else if (kind == 2) {
      // rank 1 and 2 (nearly flat elements)
      const Matrix3d v = RandomRotation(rng);
      a = v * Vector3d(u01(rng), (t % 8 == 2) ? 0.0 : 1e-9 * u01(rng), 0).asDiagonal() * v.transpose();
    } else {
      // random symmetric indefinite
      const Matrix3d m = ToEigen(RandomMat(rng));
      a = m + m.transpose();
    }
    a = Matrix3d(0.5 * (a + a.transpose()));
    const SymmetricEigen3 eig = ComputeSymmetricEigen(FromEigen(a));
    Eigen::SelfAdjointEigenSolver<Matrix3d> ref(a);
    const double scale = a.norm();
    const Matrix3d v = ToEigen(eig.vectors);
    const Vector3d d = ToEigen(eig.values);
    for (int i = 0; i < 3; ++i) worst_value = std::max(worst_value, std::fabs(d[i] - ref.eigenvalues()[2 - i]) / (eps * scale));
    worst_residual = std::max(worst_residual, (a * v - v * d.asDiagonal()).norm() / (eps * scale));
    worst_orth = std::max(worst_orth, (v.transpose() * v - Matrix3d::Identity()).norm() / eps);
    EXPECT_NEAR(v.determinant(), 1.0, 32 * eps);
    EXPECT_GE(d[0], d[1]);
    EXPECT_GE(d[1], d[2]);
  }
  EXPECT_LE(worst_value, 16.0);
  EXPECT_LE(worst_residual, 8.0);
  EXPECT_LE(worst_orth, 32.0);
}

// reference polar factor from Eigen's two-sided Jacobi SVD: R = U diag(1, 1, det(U V^T)) V^T
Matrix3d ReferenceRotation(const Matrix3d& f) {
  Eigen::JacobiSVD<Matrix3d> svd(f, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Matrix3d d = Matrix3d::Identity();
  d(2, 2) = (svd.matrixU() * svd.matrixV().transpose()).determinant() > 0 ? 1 : -1;
  return svd.matrixU() * d * svd.matrixV().transpose();
}

void CheckPolar(const Matrix3d& f, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  const Polar3 p = ComputePolar(FromEigen(f));
  const Matrix3d r = ToEigen(p.r), s = ToEigen(p.s);
  const double scale = std::max(f.norm(), 1e-300);
  EXPECT_LT((r.transpose() * r - Matrix3d::Identity()).norm(), tol);
  EXPECT_NEAR(r.determinant(), 1.0, tol);
  EXPECT_LT((r * s - f).norm() / scale, tol);
  EXPECT_LT((s - s.transpose()).norm() / scale, tol);
  EXPECT_LT((r - ReferenceRotation(f)).norm(), tol);
  const Svd3 svd = ComputeSvd(FromEigen(f));
  EXPECT_LT((ToEigen(svd.u) * ToEigen(Mat3::Diagonal(svd.sigma)) * ToEigen(svd.v).transpose() - f).norm() / scale, tol);
  EXPECT_NEAR(ToEigen(svd.u).determinant(), 1.0, tol);
  EXPECT_NEAR(ToEigen(svd.v).determinant(), 1.0, tol);
  // ordered up to rounding (the order comes from the eigenvalues of f^T f, sigma from the QR)
  EXPECT_GE(svd.sigma[0], svd.sigma[1] - tol * scale);
  EXPECT_GE(svd.sigma[1], std::fabs(svd.sigma[2]) - tol * scale);
  // sign of the smallest singular value carries det f (inverted elements)
  if (std::fabs(f.determinant()) > 1e-6 * std::pow(scale, 3)) {
    EXPECT_EQ(svd.sigma[2] < 0, f.determinant() < 0);
  }
}

TEST(Math, PolarDecompositionOfRandomMatrices) {
  auto rng = test::Rng();
  for (int t = 0; t < 500; ++t) {
    const Mat3 a = RandomMat(rng);
    // closest-rotation sensitivity ~ eps / (sigma_2 + sigma_3): skip near-ambiguous draws
    Eigen::JacobiSVD<Matrix3d> svd(ToEigen(a));
    const double sign = ToEigen(a).determinant() < 0 ? -1 : 1;
    const auto sv = svd.singularValues();
    if (sv[1] + sign * sv[2] < 1e-3) continue;
    CheckPolar(ToEigen(a), kTol * 1e3 * std::max(1.0, 1e-3 / (sv[1] + sign * sv[2])), "random");
  }
}

TEST(Math, PolarDecompositionIsRobustForDegenerateAndInvertedMatrices) {
  auto rng = test::Rng();
  for (int t = 0; t < 50; ++t) {
    const Matrix3d u = RandomRotation(rng), v = RandomRotation(rng);
    auto make = [&](double s0, double s1, double s2) {
      return Matrix3d(u * Vector3d(s0, s1, s2).asDiagonal() * v.transpose());
    };
    CheckPolar(make(1, 0.5, 1e-12), 1e-11, "nearly singular");
    CheckPolar(make(2, 0.7, 0), 1e-11, "rank 2");
    CheckPolar(make(1.5, 1.0, -0.4), 1e-11, "inverted");
    CheckPolar(make(1.0, 0.9, -1e-9), 1e-11, "inverted, nearly flat");
    CheckPolar(make(1.2, 1.2, 1.2), 1e-11, "scaled rotation (repeated singular values)");
    CheckPolar(make(1e-100, 5e-101, 2e-101), 1e-11, "tiny scale");
    CheckPolar(make(1e100, 5e99, -2e99), 1e-11, "huge scale, inverted");
    // a pure rotation is its own rotation factor with s = I
    const Polar3 p = ComputePolar(FromEigen(u));
    EXPECT_LT((ToEigen(p.r) - u).norm(), 1e-12);
    EXPECT_LT((ToEigen(p.s) - Matrix3d::Identity()).norm(), 1e-12);
  }
  // the zero matrix still yields a rotation
  const Polar3 z = ComputePolar(Mat3());
  EXPECT_NEAR(ToEigen(z.r).determinant(), 1.0, 1e-12);
}

}  // namespace
}  // namespace condsim
