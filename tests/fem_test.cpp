// Co-rotational linear FEM against laws and independent references:
// - forces = -dE/dx by central finite differences (relative 1e-6) on random deformed meshes;
// - the assembled stiffness R K0 R^T equals the finite-difference Jacobian of the forces at
//   rigidly moved configurations (exact there) and to O(strain) at small deformations;
// - patch test: an affine stretch of an irregular mesh has the energy V Psi(F0) of the uniform
//   linear-elastic state (1e-9) and zero force on interior nodes;
// - rigid-motion invariance; rotating a deformed mesh rotates its forces;
// - A and b of eq. 9 (mass, symmetry, positive definiteness) against a dense Eigen reference;
// - mesh generators and validation errors.
#include "models/fem/fem_model.h"
#include "models/fem/fem_ops.h"

#include <Eigen/SparseCholesky>

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <map>
#include <set>

#include "condsim/error.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

FemMaterial Rubber() {
  FemMaterial m;
  m.young = 1e5;
  m.poisson = 0.35;
  m.density = 1100;
  return m;
}

struct Eval {
  std::vector<Scalar> f;
  double energy;
};

class FemFixture {
 public:
  FemFixture(const TetMesh& mesh, const FemMaterial& mat)
      : backend_(MakeBackend(BackendChoice::kCpu).backend), model_(backend_.get(), mesh, mat, "test mesh") {}
  Eval Forces(const std::vector<Scalar>& x) {
    Array<Scalar> dx(backend_.get(), x), f(backend_.get(), Index(x.size()));
    const double e = model_.ElasticForces(dx, &f);
    return {f.ToHost(), e};
  }
  FemModel& model() { return model_; }
  Backend& backend() { return *backend_; }

 private:
  std::unique_ptr<Backend> backend_;
  FemModel model_;
};

Mat3 RandomRotation(std::mt19937_64& rng) {
  const auto q = test::RandomVector(rng, 4);
  return ToMatrix(Normalized(Quat(q[0], q[1], q[2], q[3])));
}

std::vector<Scalar> Transform(const TetMesh& mesh, const Mat3& a, const Vec3& c) {
  std::vector<Scalar> x(mesh.x.size());
  for (Index i = 0; i < mesh.num_nodes(); ++i) {
    const Vec3 y = a * mesh.Node(i) + c;
    for (int k = 0; k < 3; ++k) x[3 * std::size_t(i) + k] = y[k];
  }
  return x;
}

// a box mesh with interior nodes moved randomly by up to 20% of the cell (still valid)
TetMesh IrregularBox(std::mt19937_64& rng, Index n, Scalar size) {
  TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(size, size, size), n, n, n);
  const Scalar h = size / n;
  for (Index i = 0; i < mesh.num_nodes(); ++i) {
    const Vec3 p = mesh.Node(i);
    bool interior = true;
    for (int k = 0; k < 3; ++k) interior = interior && p[k] > 1e-9 && p[k] < size - 1e-9;
    if (!interior) continue;
    const auto d = test::RandomVector(rng, 3, -0.2 * h, 0.2 * h);
    for (int k = 0; k < 3; ++k) mesh.x[3 * std::size_t(i) + k] += d[k];
  }
  ValidateMesh(mesh, "irregular box");
  return mesh;
}

TEST(FemForces, AreMinusTheEnergyGradient) {
  auto rng = test::Rng();
  for (int trial = 0; trial < 3; ++trial) {
    const TetMesh mesh = IrregularBox(rng, 2, 0.1);
    FemFixture fem(mesh, Rubber());
    // random rotation + moderate random deformation (up to 10% of the size)
    std::vector<Scalar> x = Transform(mesh, RandomRotation(rng), Vec3(0.3, -0.1, 0.2));
    const auto d = test::RandomVector(rng, Index(x.size()), -0.01, 0.01);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] += d[k];
    const Eval e = fem.Forces(x);
    const Scalar step = 1e-7;
    double max_f = 0, max_err = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      std::vector<Scalar> xp = x, xm = x;
      xp[k] += step;
      xm[k] -= step;
      const double fd = -(fem.Forces(xp).energy - fem.Forces(xm).energy) / (2 * step);
      max_err = std::max(max_err, std::fabs(fd - e.f[k]));
      max_f = std::max(max_f, std::fabs(double(e.f[k])));
    }
    EXPECT_LT(max_err / max_f, 1e-6) << "trial " << trial;
  }
}

Eigen::MatrixXd DenseMatrix(const DeviceBlockMatrix& a) {
  const BlockPattern& p = a.pattern();
  const std::vector<Scalar> v = a.values().ToHost();
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(p.rows(), p.cols());
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) d(3 * r + i, 3 * p.col_idx[k] + j) = v[9 * std::size_t(k) + 3 * i + j];
  return d;
}

// K from A: assemble with v = 0 and read A = (2/t) M + (t/2) K
Eigen::MatrixXd Stiffness(FemFixture& fem, const std::vector<Scalar>& x, Scalar dt) {
  Backend& b = fem.backend();
  auto a = b.CreateMatrix(fem.model().pattern());
  Array<Scalar> dx(&b, x), v(&b, std::vector<Scalar>(x.size(), 0)), rhs(&b, Index(x.size()));
  fem.model().Assemble(dx, v, dt, Vec3(0, 0, 0), nullptr, a.get(), &rhs);
  Eigen::MatrixXd k = DenseMatrix(*a);
  for (Index i = 0; i < fem.model().num_nodes(); ++i)
    for (int c = 0; c < 3; ++c) k(3 * i + c, 3 * i + c) -= 2 / dt * fem.model().lumped_mass()[i];
  return k * (2 / dt);
}

Eigen::MatrixXd FiniteDifferenceJacobian(FemFixture& fem, const std::vector<Scalar>& x) {
  const Scalar step = 1e-7;
  Eigen::MatrixXd j(x.size(), x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::vector<Scalar> xp = x, xm = x;
    xp[k] += step;
    xm[k] -= step;
    const auto fp = fem.Forces(xp).f, fm = fem.Forces(xm).f;
    // K = -df/dx
    for (std::size_t r = 0; r < x.size(); ++r) j(r, k) = -(fp[r] - fm[r]) / (2 * step);
  }
  return j;
}

TEST(FemStiffness, MatchesFiniteDifferencesOfTheForces) {
  auto rng = test::Rng();
  const TetMesh mesh = IrregularBox(rng, 2, 0.1);
  FemFixture fem(mesh, Rubber());
  // rigidly moved rest shape: R K0 R^T is the exact Jacobian there
  const std::vector<Scalar> rigid = Transform(mesh, RandomRotation(rng), Vec3(1, 2, 3));
  const Eigen::MatrixXd k = Stiffness(fem, rigid, 0.01), fd = FiniteDifferenceJacobian(fem, rigid);
  EXPECT_LT((k - fd).norm() / k.norm(), 1e-6);
  EXPECT_LT((k - k.transpose()).norm() / k.norm(), 1e-14);
  // small deformation (strain ~1e-4): R K0 R^T omits the rotation derivative (eq. 8's
  // outer-product approximation), an O(strain) difference
  std::vector<Scalar> x = rigid;
  const auto d = test::RandomVector(rng, Index(x.size()), -1e-5, 1e-5);
  for (std::size_t c = 0; c < x.size(); ++c) x[c] += d[c];
  const Eigen::MatrixXd k2 = Stiffness(fem, x, 0.01), fd2 = FiniteDifferenceJacobian(fem, x);
  EXPECT_LT((k2 - fd2).norm() / k2.norm(), 1e-2);
}

TEST(FemStiffness, RotatedStiffnessPlusGeometricTermIsTheExactHessian) {
  auto rng = test::Rng();
  const TetMesh mesh = IrregularBox(rng, 2, 0.1);
  const FemMaterial mat = Rubber();
  FemFixture fem(mesh, mat);
  // a large deformation (10%) on top of a rotation
  std::vector<Scalar> x = Transform(mesh, RandomRotation(rng), Vec3(0.5, 0, 0));
  const auto d = test::RandomVector(rng, Index(x.size()), -0.01, 0.01);
  for (std::size_t c = 0; c < x.size(); ++c) x[c] += d[c];
  const Eigen::MatrixXd k = Stiffness(fem, x, 0.01), fd = FiniteDifferenceJacobian(fem, x);
  // G per element (GeometricStiffness), assembled densely here
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(x.size(), x.size());
  auto node = [&](const std::vector<Scalar>& p, Index i) { return Vec3(p[3 * i], p[3 * i + 1], p[3 * i + 2]); };
  auto element_g = [&](Index e) {
    const Index* t = mesh.tets.data() + 4 * e;
    const Mat3 dm = Mat3::FromColumns(mesh.Node(t[1]) - mesh.Node(t[0]), mesh.Node(t[2]) - mesh.Node(t[0]), mesh.Node(t[3]) - mesh.Node(t[0]));
    const Mat3 ds = Mat3::FromColumns(node(x, t[1]) - node(x, t[0]), node(x, t[2]) - node(x, t[0]), node(x, t[3]) - node(x, t[0]));
    const Mat3 bm = Inverse(dm);
    return GeometricStiffness(ds * bm, bm, Determinant(dm) / 6, mat.Mu(), mat.Lambda());
  };
  for (Index e = 0; e < mesh.num_tets(); ++e) {
    const Index* t = mesh.tets.data() + 4 * e;
    const Mat12 ge = element_g(e);
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) g(3 * t[a] + i, 3 * t[b] + j) += ge.m[12 * (3 * a + i) + 3 * b + j];
  }
  EXPECT_GT((k - fd).norm() / fd.norm(), 1e-3);          // R K0 R^T alone misses the rotation term
  EXPECT_LT((k + g - fd).norm() / fd.norm(), 1e-6);      // with G it is the exact Hessian
  EXPECT_LT((g - g.transpose()).norm(), 1e-9 * g.norm());
  // the geometric_stiffness option adds (t/2) sum_e P_e D_e P_e to A: D_e = diag(|G_e| row
  // sums), P_e the orthogonal projector onto the complement of the element's six rigid motions,
  // here from its definition P = I - Z (Z^T Z)^-1 Z^T (Z: 3 translations, 3 rotations about the
  // origin) by a dense solve; PSD, zero on the body's rigid motions, zero at rest
  FemMaterial geo_mat = mat;
  geo_mat.geometric_stiffness = true;
  FemFixture geo(mesh, geo_mat);
  const Eigen::MatrixXd kg = Stiffness(geo, x, 0.01);
  const Eigen::MatrixXd extra = kg - k;
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(x.size(), x.size());
  for (Index e = 0; e < mesh.num_tets(); ++e) {
    const Index* t = mesh.tets.data() + 4 * e;
    const Mat12 ge = element_g(e);
    Eigen::Matrix<double, 12, 12> dmat = Eigen::Matrix<double, 12, 12>::Zero();
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 12; ++j) dmat(i, i) += std::fabs(ge.m[12 * i + j]);
    Eigen::Matrix<double, 12, 6> z = Eigen::Matrix<double, 12, 6>::Zero();
    for (int a = 0; a < 4; ++a) {
      const Vec3 p = node(x, t[a]);
      for (int c = 0; c < 3; ++c) z(3 * a + c, c) = 1;
      // omega x p = -[p]x omega
      z.block<3, 3>(3 * a, 3) << 0, p[2], -p[1], -p[2], 0, p[0], p[1], -p[0], 0;
    }
    const Eigen::Matrix<double, 12, 12> proj =
        Eigen::Matrix<double, 12, 12>::Identity() - z * (z.transpose() * z).ldlt().solve(z.transpose());
    const Eigen::Matrix<double, 12, 12> pe = proj * dmat * proj;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) expected.block<3, 3>(3 * t[a], 3 * t[b]) += pe.block<3, 3>(3 * a, 3 * b);
  }
  EXPECT_LT((extra - expected).norm(), 1e-9 * expected.norm());
  EXPECT_GT(expected.norm(), 1e-3 * k.norm());
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(extra);
  EXPECT_GT(eig.eigenvalues().minCoeff(), -1e-9 * k.norm());
  for (int mode = 0; mode < 6; ++mode) {
    Eigen::VectorXd u(x.size());
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      Vec3 ui(0, 0, 0);
      if (mode < 3) ui[mode] = 1;
      else ui = Cross(Vec3(mode == 3, mode == 4, mode == 5), node(x, i));
      for (int c = 0; c < 3; ++c) u[3 * i + c] = ui[c];
    }
    EXPECT_LT((extra * u).norm(), 1e-9 * extra.norm() * u.norm()) << "rigid mode " << mode;
  }
  const std::vector<Scalar> rest = Transform(mesh, RandomRotation(rng), Vec3(0, 0, 0));
  const Eigen::MatrixXd at_rest = Stiffness(geo, rest, 0.01) - Stiffness(fem, rest, 0.01);
  EXPECT_LT(at_rest.norm(), 1e-9 * k.norm());
}

TEST(FemPatch, AffineStretchGivesTheUniformLinearElasticState) {
  auto rng = test::Rng();
  const TetMesh mesh = IrregularBox(rng, 3, 0.2);
  const FemMaterial mat = Rubber();
  FemFixture fem(mesh, mat);
  // F0 = Q diag(1.02, 0.99, 1.005): the corotated state has S = diag(...), uniform stress
  const Mat3 q = RandomRotation(rng);
  const Vec3 stretch(1.02, 0.99, 1.005);
  const Eval e = fem.Forces(Transform(mesh, q * Mat3::Diagonal(stretch), Vec3(0.1, 0.2, 0.3)));
  const double mu = mat.Mu(), lambda = mat.Lambda();
  double ss = 0, tr = 0;
  for (int k = 0; k < 3; ++k) {
    ss += (stretch[k] - 1) * (stretch[k] - 1);
    tr += stretch[k] - 1;
  }
  const double psi = mu * ss + lambda / 2 * tr * tr;
  double volume = 0;
  for (Index t = 0; t < mesh.num_tets(); ++t) volume += TetVolume(mesh, t);
  EXPECT_NEAR(volume, 0.2 * 0.2 * 0.2, 1e-15);
  EXPECT_NEAR(e.energy, volume * psi, 1e-9 * volume * psi);
  // interior nodes carry no force; all forces sum to zero
  double max_f = 0, max_interior = 0;
  Vec3 total(0, 0, 0);
  for (Index i = 0; i < mesh.num_nodes(); ++i) {
    const Vec3 f(e.f[3 * i], e.f[3 * i + 1], e.f[3 * i + 2]);
    total += f;
    max_f = std::max(max_f, double(Norm(f)));
    const Vec3 p = mesh.Node(i);
    bool interior = true;
    for (int k = 0; k < 3; ++k) interior = interior && p[k] > 1e-9 && p[k] < 0.2 - 1e-9;
    if (interior) max_interior = std::max(max_interior, double(Norm(f)));
  }
  EXPECT_LT(max_interior, 1e-9 * max_f);
  EXPECT_LT(Norm(total), 1e-9 * max_f);
}

TEST(FemInvariance, RigidMotionsGiveNoForceAndRotateForces) {
  auto rng = test::Rng();
  const TetMesh mesh = IrregularBox(rng, 2, 0.1);
  FemFixture fem(mesh, Rubber());
  const Eval rigid = fem.Forces(Transform(mesh, RandomRotation(rng), Vec3(5, -3, 2)));
  // force scale of a 1% strain: E * h^2 * 0.01
  const double scale = 1e5 * 0.05 * 0.05 * 0.01;
  for (Scalar f : rigid.f) EXPECT_LT(std::fabs(f), 1e-9 * scale);
  EXPECT_LT(rigid.energy, 1e-18);
  // f(Q x + c) = Q f(x)
  std::vector<Scalar> x = mesh.x;
  const auto d = test::RandomVector(rng, Index(x.size()), -0.005, 0.005);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] += d[k];
  const Eval base = fem.Forces(x);
  const Mat3 q = RandomRotation(rng);
  std::vector<Scalar> y(x.size());
  for (std::size_t i = 0; i < x.size(); i += 3) {
    const Vec3 p = q * Vec3(x[i], x[i + 1], x[i + 2]) + Vec3(1, 1, 1);
    for (int k = 0; k < 3; ++k) y[i + k] = p[k];
  }
  const Eval moved = fem.Forces(y);
  double max_f = 0, err = 0;
  for (std::size_t i = 0; i < x.size(); i += 3) {
    const Vec3 expect = q * Vec3(base.f[i], base.f[i + 1], base.f[i + 2]);
    for (int k = 0; k < 3; ++k) err = std::max(err, std::fabs(double(moved.f[i + k] - expect[k])));
    max_f = std::max(max_f, double(Norm(expect)));
  }
  EXPECT_LT(err, 1e-10 * max_f);
  EXPECT_NEAR(moved.energy, base.energy, 1e-10 * base.energy);
}

TEST(FemAssembly, SystemOfEquationNine) {
  auto rng = test::Rng();
  const TetMesh mesh = IrregularBox(rng, 2, 0.1);
  FemMaterial mat = Rubber();
  mat.rayleigh_alpha = 0.5;
  mat.rayleigh_beta = 0.01;
  FemFixture fem(mesh, mat);
  Backend& b = fem.backend();
  const Scalar dt = 0.01;
  std::vector<Scalar> x = mesh.x;
  const auto d = test::RandomVector(rng, Index(x.size()), -0.003, 0.003);
  for (std::size_t k = 0; k < x.size(); ++k) x[k] += d[k];
  const auto vel = test::RandomVector(rng, Index(x.size()));
  const std::vector<Scalar> fext = test::RandomVector(rng, Index(x.size()));
  auto a = b.CreateMatrix(fem.model().pattern());
  Array<Scalar> dx(&b, x), dv(&b, vel), rhs(&b, Index(x.size())), df(&b, fext);
  const Vec3 g(0, 0, -9.81);
  fem.model().Assemble(dx, dv, dt, g, &df, a.get(), &rhs);
  const Eigen::MatrixXd am = DenseMatrix(*a);
  const std::vector<Scalar> hb = rhs.ToHost();
  const Eval e = fem.Forces(x);
  const auto& m = fem.model().lumped_mass();
  double total_mass = 0;
  for (Scalar mi : m) total_mass += mi;
  EXPECT_NEAR(total_mass, mat.density * 0.1 * 0.1 * 0.1, 1e-12);
  // b = (2M/t) v + f_el + M g + f_ext
  for (Index i = 0; i < mesh.num_nodes(); ++i)
    for (int c = 0; c < 3; ++c) {
      const std::size_t k = 3 * std::size_t(i) + c;
      EXPECT_NEAR(hb[k], 2 / dt * m[i] * vel[k] + e.f[k] + m[i] * g[c] + fext[k], 1e-10);
    }
  // A = (2/t + alpha) M + (t/2 + beta) K: symmetric positive definite, M part on the diagonal
  EXPECT_LT((am - am.transpose()).norm(), 1e-12 * am.norm());
  EXPECT_EQ(Eigen::LLT<Eigen::MatrixXd>(am).info(), Eigen::Success);
  Eigen::VectorXd ones = Eigen::VectorXd::Zero(am.rows());
  for (Index i = 0; i < mesh.num_nodes(); ++i) ones[3 * i] = 1;
  // K annihilates translations, so A 1_x = (2/t + alpha) M 1_x
  const Eigen::VectorXd a1 = am * ones;
  for (Index i = 0; i < mesh.num_nodes(); ++i) EXPECT_NEAR(a1[3 * i], (2 / dt + 0.5) * m[i], 1e-9);
}

TEST(FemMesh, GeneratorsProduceValidMeshesOfTheRightVolume) {
  const TetMesh box = MakeBoxMesh(Vec3(1, 2, 3), Vec3(0.3, 0.2, 0.1), 3, 4, 2);
  EXPECT_TRUE(ValidateMesh(box, "box").empty());
  EXPECT_EQ(box.num_tets(), 3 * 4 * 2 * 6);
  double v = 0;
  for (Index e = 0; e < box.num_tets(); ++e) v += TetVolume(box, e);
  EXPECT_NEAR(v, 0.3 * 0.2 * 0.1, 1e-15);
  // sphere: the faceted volume converges to 4/3 pi r^3 at second order in h (chord error)
  double prev_err = 1;
  for (Scalar h : {0.05, 0.025, 0.0125}) {
    const TetMesh ball = MakeSphereMesh(Vec3(0, 0, 0), 0.1, h);
    EXPECT_TRUE(ValidateMesh(ball, "ball").empty());
    double vb = 0;
    for (Index e = 0; e < ball.num_tets(); ++e) vb += TetVolume(ball, e);
    const double err = std::fabs(vb - 4.0 / 3 * 3.14159265358979 * 1e-3) / (4.0 / 3 * 3.14159265358979 * 1e-3);
    if (prev_err < 1) {
      EXPECT_GT(prev_err / err, 3.0) << "h = " << h;
    }
    prev_err = err;
  }
  EXPECT_LT(prev_err, 0.006);
}

TEST(FemMesh, ValidationNamesTheProblem) {
  auto expect_error = [](const TetMesh& m, const std::string& fragment) {
    try {
      ValidateMesh(m, "cube.msh");
      ADD_FAILURE() << "no error, expected '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cube.msh"), std::string::npos) << e.what();
    }
  };
  TetMesh m = MakeBoxMesh(Vec3(0, 0, 0), Vec3(1, 1, 1), 1, 1, 1);
  TetMesh inverted = m;
  std::swap(inverted.tets[8], inverted.tets[9]);
  std::swap(inverted.tets[16], inverted.tets[17]);
  expect_error(inverted, "2 inverted tetrahedra (negative volume), the first is element 2");
  TetMesh out_of_range = m;
  out_of_range.tets[5] = 99;
  expect_error(out_of_range, "tetrahedron 1 refers to node 99");
  TetMesh flat = m;
  for (std::size_t i = 2; i < flat.x.size(); i += 3) flat.x[i] = 0;
  expect_error(flat, "zero-volume tetrahedra");
  TetMesh empty;
  expect_error(empty, "no tetrahedra");
  TetMesh extra = m;
  extra.x.insert(extra.x.end(), {5, 5, 5});
  const auto warnings = ValidateMesh(extra, "cube.msh");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 node(s) belong to no tetrahedron (the first is node 8)"), std::string::npos);
  FemMaterial bad = Rubber();
  bad.poisson = 0.5;
  EXPECT_THROW(bad.Validate("body"), Error);
}

}  // namespace
}  // namespace condsim

namespace condsim {
namespace {

// the boundary triangles close the body with outward normals: by the divergence theorem
// sum over triangles of x0 . (x1 x x2) / 6 equals the total tetrahedron volume (1e-12
// relative), and every boundary edge is shared by exactly two triangles
TEST(TetMeshSurface, TrianglesCloseTheBodyWithOutwardNormals) {
  for (const TetMesh& mesh : {MakeBoxMesh(Vec3(0.1, -0.2, 0.3), Vec3(0.3, 0.2, 0.1), 3, 2, 2),
                              MakeSphereMesh(Vec3(0.5, 0.5, 0.5), 0.2, 0.06)}) {
    const std::vector<Index> tri = SurfaceTriangles(mesh);
    double volume = 0, flux = 0;
    for (Index e = 0; e < mesh.num_tets(); ++e) volume += TetVolume(mesh, e);
    std::map<std::pair<Index, Index>, int> edges;
    for (std::size_t t = 0; t < tri.size(); t += 3) {
      flux += Dot(mesh.Node(tri[t]), Cross(mesh.Node(tri[t + 1]), mesh.Node(tri[t + 2]))) / 6;
      for (int a = 0; a < 3; ++a) {
        const Index p = tri[t + a], q = tri[t + (a + 1) % 3];
        ++edges[{std::min(p, q), std::max(p, q)}];
      }
    }
    EXPECT_NEAR(flux, volume, 1e-12 * volume);
    for (const auto& [edge, count] : edges) EXPECT_EQ(count, 2);
    // the surface nodes are exactly the nodes of those triangles
    const std::vector<Index> nodes = SurfaceNodes(mesh);
    EXPECT_EQ(std::set<Index>(tri.begin(), tri.end()), std::set<Index>(nodes.begin(), nodes.end()));
  }
}

}  // namespace
}  // namespace condsim
