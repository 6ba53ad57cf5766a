// FEM dynamics through the COND solver (eq. 9 + Alg. 1):
// - free flight without gravity or damping: linear momentum (exact for the scheme: K annihilates
//   translations and internal forces sum to zero) and angular momentum, energy not growing;
// - an FEM cube dropped on a plane comes to rest carrying its weight: total normal contact
//   force = m g (normal impulse per step = m g t) within 1e-6 relative, penetration < 0.01 mm.
#include <gtest/gtest.h>

#include "condsim/error.h"
#include "models/cond/cond_solver.h"
#include "models/fem/fem_model.h"
#include "models/integrate/midpoint.h"
#include "fixtures/mass_spring.h"
#include "test_util.h"

namespace condsim {
namespace {

// one FEM body stepped with eq. 9 and COND: x_{k+1} = x_k + t v-hat, v_{k+1} = 2 v-hat - v_k
class FemStepper {
 public:
  FemStepper(const TetMesh& mesh, const FemMaterial& mat, const CondParams& params, const std::vector<FemLink>& links = {})
      : backend_(MakeBackend(BackendChoice::kCpu).backend),
        model_(backend_.get(), mesh, mat, "stepper", links),
        solver_(backend_.get(), params),
        a_(backend_->CreateMatrix(model_.pattern())),
        x_(backend_.get(), mesh.x),
        v_(backend_.get(), std::vector<Scalar>(mesh.x.size(), 0)),
        vhat_(backend_.get(), Index(mesh.x.size())),
        b_(backend_.get(), Index(mesh.x.size())),
        guess_(backend_.get(), Index(mesh.x.size())) {}

  // contacts with the ground plane z = 0 for nodes within `margin` of it, phi = gap / t (the
  // end-of-step gap stays >= 0); Newton iterations of eq. 10 until |delta v-hat| < newton_tol
  // (1 = eq. 9 as is); inelastic contact velocities (models/integrate/midpoint.h)
  CondStats Step(Scalar dt, const Vec3& gravity, Scalar ground_margin, Scalar mu, int newton_max = 1,
                 double newton_tol = 0) {
    const std::vector<Scalar> x = x_.ToHost();
    ContactSet contacts;
    if (ground_margin > 0) {
      for (Index i = 0; i < model_.num_nodes(); ++i) {
        const Scalar z = x[3 * std::size_t(i) + 2];
        if (z < ground_margin) contacts.Add(i, -1, ContactFrame(Vec3(0, 0, 1)), z / dt, mu, mu);
      }
    }
    solver_.SetContacts(contacts);
    backend_->Copy(v_, &vhat_);  // warm start: the previous velocity
    newton_iterations_ = 0;
    for (int it = 0; it < newton_max; ++it) {
      backend_->Copy(vhat_, &guess_);
      model_.Assemble(x_, v_, dt, gravity, nullptr, a_.get(), &b_, it == 0 ? nullptr : &guess_);
      last_ = solver_.Solve(*a_, b_, &vhat_);
      ++newton_iterations_;
      if (!last_.converged) break;
      backend_->Axpby(-1, vhat_, 1, &guess_);
      if (it > 0 && backend_->Norm2(guess_) < newton_tol) break;
    }
    backend_->Axpby(dt, vhat_, 1, &x_);   // x += t v-hat
    backend_->Axpby(2, vhat_, -1, &v_);   // v = 2 v-hat - v
    if (contacts.size() > 0) {
      std::vector<Scalar> vn = v_.ToHost();
      ApplyInelasticContacts(contacts, solver_.Impulses(), vhat_.ToHost(), model_.lumped_mass(), nullptr, &vn);
      v_.CopyFromHost(vn);
    }
    return last_;
  }
  int newton_iterations() const { return newton_iterations_; }
  std::vector<Scalar> x() const { return x_.ToHost(); }
  std::vector<Scalar> v() const { return v_.ToHost(); }
  void set_v(const std::vector<Scalar>& v) { v_.CopyFromHost(v); }
  std::vector<Scalar> impulses() const { return solver_.Impulses(); }
  FemModel& model() { return model_; }
  Backend& backend() { return *backend_; }
  double ElasticEnergy() {
    Array<Scalar> f(backend_.get(), x_.size());
    return model_.ElasticForces(x_, &f);
  }

 private:
  std::unique_ptr<Backend> backend_;
  FemModel model_;
  CondSolver solver_;
  std::unique_ptr<DeviceBlockMatrix> a_;
  Array<Scalar> x_, v_, vhat_, b_, guess_;
  CondStats last_;
  int newton_iterations_ = 0;
};

FemMaterial Soft(double alpha = 0, double beta = 0) {
  FemMaterial m;
  m.young = 2e4;
  m.poisson = 0.3;
  m.density = 1000;
  m.rayleigh_alpha = alpha;
  m.rayleigh_beta = beta;
  return m;
}

TEST(FemDynamics, FreeFlightConservesMomentumAndDoesNotGainEnergy) {
  auto rng = test::Rng();
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.1, 0.06, 0.04), 4, 3, 2);
  CondParams params;
  params.theta_threshold = 1e-13;
  params.max_iterations = 100000;
  FemStepper sim(mesh, Soft(), params);
  // translation + spin + a random deformation velocity
  std::vector<Scalar> v(mesh.x.size());
  const auto noise = test::RandomVector(rng, Index(v.size()), -0.05, 0.05);
  const Vec3 omega(0.5, -1.0, 2.0), vel(0.3, 0.1, -0.2), c(0.05, 0.03, 0.02);
  for (Index i = 0; i < mesh.num_nodes(); ++i) {
    const Vec3 vi = vel + Cross(omega, mesh.Node(i) - c);
    for (int k = 0; k < 3; ++k) v[3 * std::size_t(i) + k] = vi[k] + noise[3 * std::size_t(i) + k];
  }
  sim.set_v(v);
  const auto& m = sim.model().lumped_mass();
  auto momenta = [&](Vec3* p, Vec3* l, double* kinetic) {
    const auto x = sim.x(), vv = sim.v();
    *p = Vec3(0, 0, 0);
    *l = Vec3(0, 0, 0);
    *kinetic = 0;
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      const Vec3 xi(x[3 * i], x[3 * i + 1], x[3 * i + 2]), vi(vv[3 * i], vv[3 * i + 1], vv[3 * i + 2]);
      *p += m[i] * vi;
      *l += Cross(xi, m[i] * vi);
      *kinetic += 0.5 * m[i] * SquaredNorm(vi);
    }
  };
  Vec3 p0, l0;
  double k0;
  momenta(&p0, &l0, &k0);
  const double e0 = k0 + sim.ElasticEnergy();
  // the implicit midpoint rule is symplectic: its energy oscillates within O(t^2) but does not
  // drift; compare the mean energy of the last 500 steps with that of the first 500
  double max_dp = 0, max_dl = 0, max_e = e0, mean_first = 0, mean_last = 0;
  for (int step = 0; step < 1000; ++step) {
    // the implicit midpoint rule: Newton (eq. 10) to |delta v-hat| < 1e-12 m/s
    const CondStats st = sim.Step(0.01, Vec3(0, 0, 0), 0, 0, 50, 1e-12);
    ASSERT_TRUE(st.converged) << "step " << step;
    ASSERT_LT(sim.newton_iterations(), 50) << "step " << step;
    Vec3 p, l;
    double k;
    momenta(&p, &l, &k);
    max_dp = std::max(max_dp, double(Norm(p - p0)) / Norm(p0));
    max_dl = std::max(max_dl, double(Norm(l - l0)) / Norm(l0));
    const double energy = k + sim.ElasticEnergy();
    max_e = std::max(max_e, energy);
    (step < 500 ? mean_first : mean_last) += energy / 500;
  }
  std::cout << "[ info     ] 1000 steps: max relative drift |dP|/|P| = " << max_dp << ", |dL|/|L| = " << max_dl
            << ", max energy / initial " << max_e / e0 << ", mean energy second / first half "
            << mean_last / mean_first << "\n";
  EXPECT_LT(max_dp, 1e-9);
  EXPECT_LT(max_dl, 1e-9);
  EXPECT_LT(max_e, e0 * (1 + 1e-3));               // bounded O(t^2) oscillation
  // no secular growth: the half means differ by less than the O(t^2) oscillation (an energy
  // gain of the linearized scheme without Newton is 10% over the same run)
  EXPECT_LT(mean_last, mean_first * (1 + 3e-4));
}

TEST(FemDynamics, CubeDroppedOnAPlaneRestsWithItsWeight) {
  // 4 cm soft cube, 3x3x3 cells, dropped from 5 mm, mu 0.5, Rayleigh damping 10/s and 0.01 s
  // (the midpoint rule leaves stiff modes undamped by mass damping alone)
  const TetMesh mesh = MakeBoxMesh(Vec3(-0.02, -0.02, 0.005), Vec3(0.04, 0.04, 0.04), 3, 3, 3);
  CondParams params;
  params.theta_threshold = 1e-12;
  params.max_iterations = 100000;
  FemStepper sim(mesh, Soft(10, 0.01), params);
  const Scalar dt = 0.01, g = 9.81;
  double mass = 0;
  for (Scalar mi : sim.model().lumped_mass()) mass += mi;
  double min_z = 1;
  for (int step = 0; step < 400; ++step) {
    const CondStats st = sim.Step(dt, Vec3(0, 0, -g), 0.004, 0.5);
    ASSERT_TRUE(st.converged) << "step " << step;
    const auto x = sim.x();
    for (std::size_t i = 2; i < x.size(); i += 3) min_z = std::min(min_z, double(x[i]));
  }
  // lambda is a mean force in this (eq. 9) form: the normal impulse per step is lambda t
  const auto lambda = sim.impulses();
  double total = 0;
  for (std::size_t m = 0; m < lambda.size(); m += 3) total += lambda[m];
  std::cout << "[ info     ] resting normal impulse per step " << total * dt << " N s (m g t = " << mass * g * dt
            << "), min z " << min_z << " m\n";
  EXPECT_NEAR(total * dt, mass * g * dt, 1e-6 * mass * g * dt);
  EXPECT_GT(min_z, -1e-5);  // penetration below 0.01 mm
}

TEST(FemDynamics, BodyHangingFromAttachmentsCarriesItsWeight) {
  // top-face nodes attached to their rest positions (eq. 7 springs, 200 N/m each, implicit)
  const TetMesh mesh = MakeBoxMesh(Vec3(0, 0, 0), Vec3(0.04, 0.04, 0.04), 2, 2, 2);
  CondParams params;
  params.theta_threshold = 1e-12;
  params.max_iterations = 100000;
  FemStepper sim(mesh, Soft(10, 0.01), params);
  std::vector<Index> top;
  std::vector<Scalar> target;
  for (Index i = 0; i < mesh.num_nodes(); ++i)
    if (mesh.Node(i)[2] > 0.04 - 1e-12) {
      top.push_back(i);
      for (int c = 0; c < 3; ++c) target.push_back(mesh.x[3 * std::size_t(i) + c]);
    }
  const Scalar k = 200;
  sim.model().SetAttachments(top, std::vector<Scalar>(top.size(), k));
  sim.model().SetAttachmentTargets(target, std::vector<Scalar>(target.size(), 0));
  const Scalar g = 9.81;
  double mass = 0;
  for (Scalar mi : sim.model().lumped_mass()) mass += mi;
  for (int step = 0; step < 400; ++step) ASSERT_TRUE(sim.Step(0.01, Vec3(0, 0, -g), 0, 0).converged);
  // static balance: the springs carry the weight, k sum (p - x) = m g
  const auto x = sim.x();
  Vec3 spring(0, 0, 0);
  for (std::size_t q = 0; q < top.size(); ++q)
    for (int c = 0; c < 3; ++c) spring[c] += k * (target[3 * q + c] - x[3 * std::size_t(top[q]) + c]);
  EXPECT_NEAR(spring[2], mass * g, 1e-6 * mass * g);
  EXPECT_NEAR(spring[0], 0, 1e-9);
  EXPECT_NEAR(spring[1], 0, 1e-9);
}

TEST(FemDynamics, BodyLinkedToAnotherBodyHangsFromIt) {
  // two cubes in one model: the upper one pinned, the lower one hanging from it by eq. 7 links
  // between the lower cube's top nodes and the upper cube's bottom nodes (rest length 0, so the
  // lower cube starts 1 cm below and is pulled up)
  const TetMesh upper = MakeBoxMesh(Vec3(0, 0, 0.05), Vec3(0.04, 0.04, 0.04), 2, 2, 2);
  const TetMesh lower = MakeBoxMesh(Vec3(0, 0, 0.0), Vec3(0.04, 0.04, 0.04), 2, 2, 2);
  TetMesh both = upper;
  const Index offset = upper.num_nodes();
  both.x.insert(both.x.end(), lower.x.begin(), lower.x.end());
  for (Index t : lower.tets) both.tets.push_back(t + offset);
  std::vector<FemLink> links;
  std::vector<Index> pinned;
  for (Index i = 0; i < upper.num_nodes(); ++i) {
    pinned.push_back(i);
    if (upper.Node(i)[2] > 0.05 + 1e-12) continue;  // bottom face of the upper cube
    for (Index j = 0; j < lower.num_nodes(); ++j) {
      const Vec3 d = lower.Node(j) - upper.Node(i);
      if (std::fabs(d[0]) < 1e-12 && std::fabs(d[1]) < 1e-12 && std::fabs(d[2] + 0.01) < 1e-12) links.push_back({i, j + offset, 300});
    }
  }
  ASSERT_EQ(links.size(), 9u);
  auto cpu = MakeBackend(BackendChoice::kCpu).backend;
  EXPECT_THROW(FemModel(cpu.get(), both, Soft(), "bad", {{0, 0, 1}}), Error);
  EXPECT_THROW(FemModel(cpu.get(), both, Soft(), "bad", {{0, 1, -1}}), Error);
  CondParams params;
  params.theta_threshold = 1e-12;
  params.max_iterations = 100000;
  FemStepper sim(both, Soft(10, 0.01), params, links);
  sim.model().SetPrescribedNodes(pinned);
  sim.model().SetPrescribedVelocities(std::vector<Scalar>(3 * pinned.size(), 0));
  const Scalar g = 9.81;
  double lower_mass = 0;
  for (Index j = 0; j < lower.num_nodes(); ++j) lower_mass += sim.model().lumped_mass()[j + offset];
  for (int step = 0; step < 400; ++step) ASSERT_TRUE(sim.Step(0.01, Vec3(0, 0, -g), 0, 0).converged);
  const auto x = sim.x();
  double link_force = 0;
  for (const FemLink& l : links) link_force += l.stiffness * (x[3 * std::size_t(l.i) + 2] - x[3 * std::size_t(l.j) + 2]);
  EXPECT_NEAR(link_force, lower_mass * g, 1e-6 * lower_mass * g);
  // the pinned cube did not move
  for (Index i = 0; i < upper.num_nodes(); ++i) EXPECT_EQ(x[3 * std::size_t(i) + 2], upper.x[3 * std::size_t(i) + 2]);
}

}  // namespace
}  // namespace condsim
