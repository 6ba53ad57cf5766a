// Cosserat-rod cables against laws and references:
// - joint forces/torques = -dE/dq by central finite differences with world-frame rotation
//   perturbations R <- exp(d theta) R (1e-6); the assembled stiffness J^T K J = finite differences
//   of the forces at the rest shape (where the Gauss-Newton Hessian is exact);
// - linear statics of a clamped cable (sparse direct solve of the assembled system): tip load
//   P L^3 / (3 E I) within 3 % at N = 50, twist rate T / (G J) under a tip torque, extension
//   P L / (E A) under an axial load;
// - large deflection under gravity: the static tip position converges as N grows.
#include "models/rod/rod_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include <Eigen/Dense>
#include <Eigen/SparseCholesky>

#include "condsim/error.h"
#include "sparse_reference.h"
#include "test_util.h"

namespace condsim {
namespace {

RodMaterial Cable() {
  RodMaterial m;
  m.radius = 0.002;
  m.young = 3e6;
  m.poisson = 0.45;
  m.density = 1259;
  return m;
}

struct RodFixture {
  std::unique_ptr<Backend> backend = MakeBackend(BackendChoice::kCpu).backend;
  std::unique_ptr<RodModel> rod;
  RodFixture(const RodGeometry& g, const RodMaterial& m, bool clamp_start) {
    RodEnd start;
    start.attached = clamp_start;
    rod = std::make_unique<RodModel>(backend.get(), g, m, start, RodEnd{}, "test rod");
  }
  std::vector<Scalar> Forces(double* energy) {
    Array<Scalar> f(backend.get(), rod->num_dofs());
    *energy = rod->JointForces(&f);
    return f.ToHost();
  }
};

// perturbs the state: dq = (dx, dtheta) per segment (world-frame rotation vector)
void Perturb(RodModel& rod, const std::vector<Scalar>& x0, const std::vector<Scalar>& q0, const std::vector<Scalar>& dq) {
  std::vector<Scalar> x = x0, q = q0;
  for (Index s = 0; s < rod.num_segments(); ++s) {
    for (int c = 0; c < 3; ++c) x[3 * s + c] += dq[6 * s + c];
    const Quat r = FromRotationVector(Vec3(dq[6 * s + 3], dq[6 * s + 4], dq[6 * s + 5])) *
                   Quat(q[4 * s], q[4 * s + 1], q[4 * s + 2], q[4 * s + 3]);
    q[4 * s] = r.w;
    q[4 * s + 1] = r.x;
    q[4 * s + 2] = r.y;
    q[4 * s + 3] = r.z;
  }
  rod.positions().CopyFromHost(x);
  rod.orientations().CopyFromHost(q);
}

TEST(RodJoints, ForcesAreMinusTheEnergyGradient) {
  auto rng = test::Rng();
  RodFixture fx(MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0.5, 0.2), 0.05, 6), Cable(), true);
  RodModel& rod = *fx.rod;
  // a random deformed state: 1 mm and 0.2 rad perturbations
  std::vector<Scalar> dq = test::RandomVector(rng, rod.num_dofs(), -1e-3, 1e-3);
  for (Index s = 0; s < rod.num_segments(); ++s)
    for (int c = 3; c < 6; ++c) dq[6 * s + c] *= 200;
  Perturb(rod, rod.positions().ToHost(), rod.orientations().ToHost(), dq);
  const std::vector<Scalar> x0 = rod.positions().ToHost(), q0 = rod.orientations().ToHost();
  double e0;
  const std::vector<Scalar> f = fx.Forces(&e0);
  EXPECT_GT(e0, 0);
  const double h = 1e-7;
  double max_err = 0, max_f = 0;
  for (Index k = 0; k < rod.num_dofs(); ++k) {
    std::vector<Scalar> d(static_cast<std::size_t>(rod.num_dofs()), 0);
    double ep, em;
    d[k] = h;
    Perturb(rod, x0, q0, d);
    fx.Forces(&ep);
    d[k] = -h;
    Perturb(rod, x0, q0, d);
    fx.Forces(&em);
    max_err = std::max(max_err, std::fabs(-(ep - em) / (2 * h) - f[k]));
    max_f = std::max(max_f, std::fabs(double(f[k])));
  }
  EXPECT_LT(max_err / max_f, 1e-6);
}

// the joint stiffness K from two assemblies: t A(t) = 2M + (t^2/2) K
Eigen::MatrixXd JointStiffness(RodFixture& fx) {
  RodModel& rod = *fx.rod;
  Backend& b = *fx.backend;
  auto a = b.CreateMatrix(rod.pattern());
  Array<Scalar> v(&b, std::vector<Scalar>(rod.num_dofs(), 0)), rhs(&b, rod.num_dofs());
  auto dense = [&](double dt) {
    rod.Assemble(v, dt, Vec3(0, 0, 0), nullptr, a.get(), &rhs);
    const BlockPattern& p = a->pattern();
    const std::vector<Scalar> vals = a->values().ToHost();
    Eigen::MatrixXd d = Eigen::MatrixXd::Zero(p.rows(), p.cols());
    for (Index r = 0; r < p.block_rows; ++r)
      for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) d(3 * r + i, 3 * p.col_idx[k] + j) = vals[9 * std::size_t(k) + 3 * i + j];
    return d;
  };
  const double t1 = 0.01, t2 = 0.02;
  return 2 * (t1 * dense(t1) - t2 * dense(t2)) / (t1 * t1 - t2 * t2);
}

TEST(RodJoints, AssembledStiffnessMatchesFiniteDifferencesAtRest) {
  RodFixture fx(MakePolylineRod({Vec3(0, 0, 0), Vec3(0.02, 0.01, 0), Vec3(0.03, 0.03, 0.01)}, 5), Cable(), true);
  RodModel& rod = *fx.rod;
  // a rigid motion of the rest shape keeps every joint error at 0 (the start pose moves along)
  const std::vector<Scalar> x0 = rod.positions().ToHost(), q0 = rod.orientations().ToHost();
  const Eigen::MatrixXd k = JointStiffness(fx);
  const double h = 1e-7;
  Eigen::MatrixXd fd(rod.num_dofs(), rod.num_dofs());
  for (Index c = 0; c < rod.num_dofs(); ++c) {
    std::vector<Scalar> d(static_cast<std::size_t>(rod.num_dofs()), 0);
    double e;
    d[c] = h;
    Perturb(rod, x0, q0, d);
    const auto fp = fx.Forces(&e);
    d[c] = -h;
    Perturb(rod, x0, q0, d);
    const auto fm = fx.Forces(&e);
    for (Index r = 0; r < rod.num_dofs(); ++r) fd(r, c) = -(fp[r] - fm[r]) / (2 * h);
  }
  EXPECT_LT((k - fd).norm() / k.norm(), 1e-6);
  EXPECT_LT((k - k.transpose()).norm() / k.norm(), 1e-12);
}

struct StaticResult {
  std::vector<Scalar> u;  // displacement (dx, dtheta) per segment
  double tip_axis_rotation;
};

// linear static response K u = f of a cable clamped at its start: with t = 1e6 s,
// A = (2/t) M + (t/2) K is (t/2) K to 1e-12 and u = (t/2) v-hat (Eigen sparse LDLT)
std::vector<Scalar> StaticSolve(RodFixture& fx, const std::vector<Scalar>& f_ext, const Vec3& gravity) {
  RodModel& rod = *fx.rod;
  Backend& b = *fx.backend;
  auto a = b.CreateMatrix(rod.pattern());
  const Scalar dt = 1e6;
  Array<Scalar> v(&b, std::vector<Scalar>(rod.num_dofs(), 0)), rhs(&b, rod.num_dofs()), fe(&b, f_ext);
  rod.Assemble(v, dt, gravity, &fe, a.get(), &rhs);
  const std::vector<Scalar> vhat = test::SparseSolve(*a, rhs);
  std::vector<Scalar> u(static_cast<std::size_t>(rod.num_dofs()));
  for (Index k = 0; k < rod.num_dofs(); ++k) u[k] = dt / 2 * vhat[k];
  return u;
}

TEST(RodStatics, ClampedCableMatchesBeamTheoryForBendingTwistAndStretch) {
  const RodMaterial m = Cable();
  const double length = 0.4, r = m.radius;
  const Index n = 50;
  const double area = 3.14159265358979 * r * r, i_bend = area * r * r / 4, j_twist = area * r * r / 2;
  RodFixture fx(MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), length, n), m, true);
  const Index last = n - 1;
  const Vec3 arm(length / n / 2, 0, 0);  // from the last centre to the tip
  auto tip_load = [&](const Vec3& force, const Vec3& torque) {
    std::vector<Scalar> f(static_cast<std::size_t>(6 * n), 0);
    const Vec3 tau = Cross(arm, force) + torque;
    for (int c = 0; c < 3; ++c) {
      f[6 * last + c] = force[c];
      f[6 * last + 3 + c] = tau[c];
    }
    return f;
  };
  // bending: small tip load P along -z, deflection P L^3 / (3 E I)
  const double p = 1e-4;
  std::vector<Scalar> u = StaticSolve(fx, tip_load(Vec3(0, 0, -p), Vec3(0, 0, 0)), Vec3(0, 0, 0));
  const Vec3 theta(u[6 * last + 3], u[6 * last + 4], u[6 * last + 5]);
  const double tip = u[6 * last + 2] + Cross(theta, arm)[2];
  const double reference = p * std::pow(length, 3) / (3 * m.young * i_bend);
  std::cout << "[ info     ] N = 50: tip deflection / (P L^3 / 3EI) = " << -tip / reference << "\n";
  EXPECT_NEAR(-tip / reference, 1.0, 0.03);
  // twist: a tip torque T about the axis gives a uniform twist rate T / (G J)
  const double torque = 1e-5, rate = torque / (m.Shear() * j_twist);
  u = StaticSolve(fx, tip_load(Vec3(0, 0, 0), Vec3(torque, 0, 0)), Vec3(0, 0, 0));
  for (Index s = 0; s < n; ++s) {
    const double xs = length * (s + 0.5) / n;
    EXPECT_NEAR(u[6 * s + 3], rate * xs, 1e-9 * rate * length) << "segment " << s;
  }
  // stretch: an axial tip load gives extension P L / (E A)
  const double axial = 1e-2;
  u = StaticSolve(fx, tip_load(Vec3(axial, 0, 0), Vec3(0, 0, 0)), Vec3(0, 0, 0));
  EXPECT_NEAR(u[6 * last], axial * (length - length / n / 2) / (m.young * area), 1e-9 * axial * length / (m.young * area));
}

// large deflection: Gauss-Newton iterations of the static equilibrium (each a linear solve of
// the assembled system at t -> large) until the update is below 1e-12 m; returns the tip position
Vec3 HeavyCantileverTip(Index n) {
  // q L^3 / (E I) = 4.1: well beyond the linear regime (q = rho A g). Plain Gauss-Newton: the
  // geometric-stiffness diagonal E would only damp (slow) the iteration, not move its fixed point
  RodMaterial m = Cable();
  m.geometric_stiffness = false;
  const double length = 0.1;
  RodFixture fx(MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), length, n), m, true);
  RodModel& rod = *fx.rod;
  const std::vector<Scalar> zero(static_cast<std::size_t>(6 * n), 0);
  bool converged = false;
  for (int it = 0; it < 500 && !converged; ++it) {
    const std::vector<Scalar> u = StaticSolve(fx, zero, Vec3(0, 0, -9.81));
    double norm = 0;
    for (Scalar c : u) norm = std::max(norm, std::fabs(double(c)));
    // damped update: at most 0.2 rad / 20 mm per iteration
    const double scale = std::min(1.0, 0.02 / std::max(norm, 1e-300));
    std::vector<Scalar> step(u.size());
    for (std::size_t k = 0; k < u.size(); ++k) step[k] = scale * u[k];
    Perturb(rod, rod.positions().ToHost(), rod.orientations().ToHost(), step);
    converged = norm < 1e-12;
  }
  EXPECT_TRUE(converged) << "N = " << n;
  const std::vector<Scalar> x = rod.positions().ToHost(), q = rod.orientations().ToHost();
  const Index s = n - 1;
  const Mat3 rot = ToMatrix(Quat(q[4 * s], q[4 * s + 1], q[4 * s + 2], q[4 * s + 3]));
  return Vec3(x[3 * s], x[3 * s + 1], x[3 * s + 2]) + rot * Vec3(0, 0, length / n / 2);
}

TEST(RodStatics, HeavyCantileverShapeConvergesWithResolution) {
  std::vector<Vec3> tips;
  const Index sizes[4] = {40, 80, 160, 320};
  for (Index n : sizes) tips.push_back(HeavyCantileverTip(n));
  std::cout << "[ info     ] heavy cantilever tip (x, z) [m]:";
  for (int i = 0; i < 4; ++i) std::cout << " N=" << sizes[i] << " (" << tips[i][0] << ", " << tips[i][2] << ")";
  std::cout << "\n";
  // a large deflection: the tip drops by more than a third of the length (linear theory would
  // put it at q L^4 / (8 E I) = 0.51 L, past any small-deflection regime)
  EXPECT_LT(tips[3][2], -0.033);
  EXPECT_GT(tips[3][0], 0.05);
  // the differences between successive resolutions shrink (second order: about 4x per doubling)
  const double d1 = Norm(tips[1] - tips[0]), d2 = Norm(tips[2] - tips[1]), d3 = Norm(tips[3] - tips[2]);
  EXPECT_LT(d2, 0.4 * d1);
  EXPECT_LT(d3, 0.4 * d2);
  EXPECT_LT(d3, 1e-4);
}

TEST(RodJoints, GeometricStiffnessIsAnSpdDiagonalThatVanishesAtRest) {
  auto rng = test::Rng();
  RodMaterial with = Cable(), without = Cable();
  without.geometric_stiffness = false;
  const RodGeometry g = MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 0.05, 6);
  RodFixture a(g, with, true), b(g, without, true);
  const std::vector<Scalar> x0 = a.rod->positions().ToHost(), q0 = a.rod->orientations().ToHost();
  auto difference = [&]() -> Eigen::MatrixXd {
    const Eigen::MatrixXd ka = JointStiffness(a), kb = JointStiffness(b);
    return ka - kb;
  };
  EXPECT_LT(difference().norm(), 1e-12 * JointStiffness(b).norm());  // e = 0: no geometric term
  std::vector<Scalar> dq = test::RandomVector(rng, a.rod->num_dofs(), -1e-3, 1e-3);
  for (Index s = 0; s < 6; ++s)
    for (int c = 3; c < 6; ++c) dq[6 * s + c] *= 300;
  Perturb(*a.rod, x0, q0, dq);
  Perturb(*b.rod, x0, q0, dq);
  const Eigen::MatrixXd d = difference();
  EXPECT_LT((d - Eigen::MatrixXd(d.diagonal().asDiagonal())).norm(), 1e-9 * d.norm());
  EXPECT_GE(d.diagonal().minCoeff(), 0.0);
  EXPECT_GT(d.diagonal().maxCoeff(), 0.0);
  // geometric_stiffness_scale multiplies that diagonal (0.2 of it, to the extraction's 1e-9)
  RodMaterial scaled = Cable();
  scaled.geometric_stiffness_scale = 0.2;
  RodFixture c(g, scaled, true);
  Perturb(*c.rod, x0, q0, dq);
  EXPECT_LT((JointStiffness(c) - JointStiffness(b) - 0.2 * d).norm(), 1e-9 * d.norm());
}

TEST(RodBatch, CablesInOneModelMatchSeparateModels) {
  // three cables of different lengths in one model: the same forces and energy as three models
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  const std::vector<RodGeometry> cables = {MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 0.1, 5),
                                           MakeStraightRod(Vec3(0, 1, 0), Vec3(0, 0, 1), 0.2, 8),
                                           MakePolylineRod({Vec3(1, 1, 1), Vec3(1.1, 1, 1), Vec3(1.1, 1.1, 1)}, 6)};
  RodEnd start;
  start.attached = true;
  RodModel batch(backend.get(), cables, Cable(), start, RodEnd{});
  EXPECT_EQ(batch.num_cables(), 3);
  EXPECT_EQ(batch.cable_start(), (std::vector<Index>{0, 5, 13, 19}));
  EXPECT_EQ(batch.ChainPtr(), (std::vector<Index>{0, 10, 26, 38}));
  auto rng = test::Rng();
  const auto dq = test::RandomVector(rng, batch.num_dofs(), -1e-3, 1e-3);
  Perturb(batch, batch.positions().ToHost(), batch.orientations().ToHost(), dq);
  Array<Scalar> f(backend.get(), batch.num_dofs());
  const double energy = batch.JointForces(&f);
  const std::vector<Scalar> fb = f.ToHost();
  double sum = 0;
  for (std::size_t c = 0; c < cables.size(); ++c) {
    RodModel one(backend.get(), cables[c], Cable(), start, RodEnd{});
    const Index s0 = batch.cable_start()[c];
    const std::vector<Scalar> part(dq.begin() + 6 * s0, dq.begin() + 6 * (s0 + one.num_segments()));
    Perturb(one, one.positions().ToHost(), one.orientations().ToHost(), part);
    Array<Scalar> fo(backend.get(), one.num_dofs());
    sum += one.JointForces(&fo);
    const std::vector<Scalar> h = fo.ToHost();
    for (Index k = 0; k < one.num_dofs(); ++k) EXPECT_EQ(fb[6 * s0 + k], h[k]) << "cable " << c;
  }
  EXPECT_NEAR(energy, sum, 1e-15 * std::max(1.0, sum));
  EXPECT_THROW(batch.SetEndPose(3, 0, Vec3(0, 0, 0), Quat(), Vec3(0, 0, 0), Vec3(0, 0, 0)), Error);
  EXPECT_THROW(batch.SetEndPose(1, 1, Vec3(0, 0, 0), Quat(), Vec3(0, 0, 0), Vec3(0, 0, 0)), Error);
}

TEST(RodModelInput, RejectsBadParameters) {
  auto backend = MakeBackend(BackendChoice::kCpu).backend;
  RodMaterial m = Cable();
  m.radius = 0;
  EXPECT_THROW(RodModel(backend.get(), MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 1, 4), m), Error);
  m = Cable();
  m.geometric_stiffness_scale = 0;
  EXPECT_THROW(RodModel(backend.get(), MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 1, 4), m), Error);
  m.geometric_stiffness_scale = std::nan("");
  EXPECT_THROW(RodModel(backend.get(), MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 1, 4), m), Error);
  EXPECT_THROW(MakeStraightRod(Vec3(0, 0, 0), Vec3(0, 0, 0), 1, 4), Error);
  EXPECT_THROW(MakePolylineRod({Vec3(0, 0, 0), Vec3(0, 0, 0)}, 4), Error);
  RodModel free(backend.get(), MakeStraightRod(Vec3(0, 0, 0), Vec3(1, 0, 0), 1, 4), Cable());
  EXPECT_THROW(free.SetEndPose(0, Vec3(0, 0, 0), Quat(), Vec3(0, 0, 0), Vec3(0, 0, 0)), Error);
}

}  // namespace
}  // namespace condsim
