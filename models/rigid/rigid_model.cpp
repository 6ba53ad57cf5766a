// Rigid bodies: inertia of the shapes, assembly of eq. 4 and the state update.
#include "models/rigid/rigid_model.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {
namespace {
constexpr double kPi = 3.14159265358979323846;
bool Finite(const Vec3& a) { return std::isfinite(a[0]) && std::isfinite(a[1]) && std::isfinite(a[2]); }
}  // namespace

void RigidBody::Validate(const std::string& where) const {
  CONDSIM_CHECK(std::isfinite(mass) && mass > 0, where << ": mass must be > 0 [kg], got " << mass);
  CONDSIM_CHECK(Finite(inertia) && inertia[0] > 0 && inertia[1] > 0 && inertia[2] > 0,
                where << ": principal inertia must be > 0 [kg m^2]");
  // the principal moments of a real body satisfy the triangle inequality
  CONDSIM_CHECK(inertia[0] <= (inertia[1] + inertia[2]) * (1 + 1e-9) && inertia[1] <= (inertia[0] + inertia[2]) * (1 + 1e-9) &&
                    inertia[2] <= (inertia[0] + inertia[1]) * (1 + 1e-9),
                where << ": principal inertia violates I_a <= I_b + I_c (no real body has it)");
  CONDSIM_CHECK(Finite(x) && Finite(v) && Finite(omega), where << ": position and velocities must be finite");
  CONDSIM_CHECK(std::fabs(Norm(q) - 1) < 1e-6, where << ": orientation must be a unit quaternion");
  StaticShape s;
  s.type = shape;
  s.size = size;
  s.mu1 = mu1;
  s.mu2 = mu2;
  s.Validate(where + " shape");
  CONDSIM_CHECK(shape != ShapeType::kPlane, where << ": a rigid body cannot have a plane shape");
}

RigidBody MakeRigidBox(const Vec3& h, Scalar mass) {
  RigidBody b;
  b.mass = mass;
  b.shape = ShapeType::kBox;
  b.size = h;
  // solid box of edges 2h: I_x = m (h_y^2 + h_z^2) / 3
  b.inertia = Vec3(mass * (h[1] * h[1] + h[2] * h[2]) / 3, mass * (h[0] * h[0] + h[2] * h[2]) / 3,
                   mass * (h[0] * h[0] + h[1] * h[1]) / 3);
  return b;
}

RigidBody MakeRigidSphere(Scalar radius, Scalar mass) {
  RigidBody b;
  b.mass = mass;
  b.shape = ShapeType::kSphere;
  b.size = Vec3(radius, 0, 0);
  const Scalar i = Scalar(0.4) * mass * radius * radius;  // 2/5 m R^2
  b.inertia = Vec3(i, i, i);
  return b;
}

RigidBody MakeRigidCapsule(Scalar r, Scalar h, Scalar mass) {
  RigidBody b;
  b.mass = mass;
  b.shape = ShapeType::kCapsule;
  b.size = Vec3(r, h, 0);
  // mass split by volume between the cylinder (length 2h) and the two caps (one sphere)
  const Scalar v_cyl = kPi * r * r * 2 * h, v_caps = Scalar(4) / 3 * kPi * r * r * r;
  const Scalar mc = mass * v_cyl / (v_cyl + v_caps), ms = mass - mc;
  const Scalar axial = mc * r * r / 2 + Scalar(0.4) * ms * r * r;
  // cylinder m (3 r^2 + L^2) / 12; caps (hemisphere centroids 3r/8 beyond the cylinder ends)
  const Scalar transverse = mc * (3 * r * r + 4 * h * h) / 12 + ms * (Scalar(0.4) * r * r + h * h + Scalar(0.75) * h * r);
  b.inertia = Vec3(transverse, transverse, axial);
  return b;
}

std::vector<SurfacePoint> ContactSamples(const RigidBody& body) {
  std::vector<SurfacePoint> out;
  switch (body.shape) {
    case ShapeType::kBox:
      for (int k = 0; k < 8; ++k)
        out.push_back({Vec3((k & 1 ? 1 : -1) * body.size[0], (k & 2 ? 1 : -1) * body.size[1], (k & 4 ? 1 : -1) * body.size[2]), 0});
      break;
    case ShapeType::kSphere:
      out.push_back({Vec3(), body.size[0]});
      break;
    case ShapeType::kCapsule:
      out.push_back({Vec3(0, 0, -body.size[1]), body.size[0]});
      out.push_back({Vec3(0, 0, body.size[1]), body.size[0]});
      break;
    case ShapeType::kPlane:
      break;
  }
  return out;
}

RigidModel::RigidModel(const std::vector<RigidBody>& bodies, const std::string& source) : bodies_(bodies) {
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    bodies_[b].Validate(source + ": body " + std::to_string(b));
    bodies_[b].q = Normalized(bodies_[b].q);
  }
  pattern_.block_dim = 3;
  pattern_.block_rows = pattern_.block_cols = num_nodes();
  for (Index n = 0; n < num_nodes(); ++n) {
    const Index first = n - n % 2;
    pattern_.col_idx.push_back(first);
    pattern_.col_idx.push_back(first + 1);
    pattern_.row_ptr.push_back(static_cast<Index>(pattern_.col_idx.size()));
  }
}

void RigidModel::SetPoseDrive(Index b, const PoseDrive& d) {
  CONDSIM_CHECK(b >= 0 && b < num_bodies(), "pose drive: body " << b << " does not exist");
  for (Scalar g : {d.k_lin, d.d_lin, d.k_ang, d.d_ang})
    CONDSIM_CHECK(std::isfinite(g) && g >= 0, "pose drive of body " << b << ": gains must be finite and >= 0");
  CONDSIM_CHECK(Finite(d.p) && Finite(d.v) && Finite(d.omega) && std::fabs(Norm(d.q) - 1) < 1e-6,
                "pose drive of body " << b << ": target must be finite with a unit quaternion");
  drives_.resize(bodies_.size());
  drives_[b] = d;
}

Mat3 RigidModel::WorldInertia(Index b) const {
  const RigidBody& body = bodies_.at(std::size_t(b));
  const Mat3 r = ToMatrix(body.q);
  return r * Mat3::Diagonal(body.inertia) * Transpose(r);
}

Mat3 RigidModel::MidInertia(Index b, Scalar dt) const {
  const RigidBody& body = bodies_.at(std::size_t(b));
  const Mat3 r = ToMatrix(Normalized(FromRotationVector((dt / 2) * body.omega) * body.q));
  return r * Mat3::Diagonal(body.inertia) * Transpose(r);
}

StaticShape RigidModel::ShapeAt(Index b) const {
  const RigidBody& body = bodies_.at(std::size_t(b));
  StaticShape s;
  s.type = body.shape;
  s.center = body.x;
  s.orientation = body.q;
  s.size = body.size;
  s.mu1 = body.mu1;
  s.mu2 = body.mu2;
  return s;
}

void RigidModel::Assemble(Scalar dt, const Vec3& gravity, const std::vector<Scalar>& wrench, std::vector<Scalar>* values,
                          std::vector<Scalar>* b) const {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "rigid bodies: time step must be > 0 [s]");
  CONDSIM_CHECK(wrench.empty() || wrench.size() == 6 * bodies_.size(), "rigid bodies: wrench needs 6 values per body");
  values->assign(std::size_t(pattern_.nnz_blocks()) * 9, 0);
  b->assign(std::size_t(num_nodes()) * 3, 0);
  for (Index k = 0; k < num_bodies(); ++k) {
    const RigidBody& body = bodies_[k];
    const Mat3 iw = MidInertia(k, dt);
    // blocks (t,t), (t,r), (r,t), (r,r) of body k: 4k .. 4k+3
    StoreMat3(values->data(), 4 * k, (2 * body.mass / dt) * Mat3::Identity());
    StoreMat3(values->data(), 4 * k + 3, (2 / dt) * iw);
    Vec3 f = body.mass * gravity, tau;
    if (!wrench.empty()) {
      f += LoadVec3(wrench.data(), 2 * k);
      tau = LoadVec3(wrench.data(), 2 * k + 1);
    }
    // eq. 4 with M-hat = 2M/t: b = M-hat v_k + f, and the momentum form for rotation
    StoreVec3(b->data(), 2 * k, (2 * body.mass / dt) * body.v + f);
    StoreVec3(b->data(), 2 * k + 1, (2 / dt) * (WorldInertia(k) * body.omega) + tau);
    // the pose drive's implicit spring-damper (see PoseDrive)
    if (std::size_t(k) < drives_.size()) {
      const PoseDrive& d = drives_[k];
      const Scalar ct = d.k_lin * dt / 2 + d.d_lin, cr = d.k_ang * dt / 2 + d.d_ang;
      StoreMat3(values->data(), 4 * k, LoadMat3(values->data(), 4 * k) + ct * Mat3::Identity());
      StoreMat3(values->data(), 4 * k + 3, LoadMat3(values->data(), 4 * k + 3) + cr * Mat3::Identity());
      const Vec3 e = LogRotation(ToMatrix(body.q) * Transpose(ToMatrix(d.q)));
      AddVec3(b->data(), 2 * k, Scalar(-d.k_lin) * (body.x - d.p) + d.d_lin * d.v);
      AddVec3(b->data(), 2 * k + 1, Scalar(-d.k_ang) * e + d.d_ang * d.omega);
    }
  }
}

void RigidModel::Advance(Scalar dt, const std::vector<Scalar>& vhat) {
  CONDSIM_CHECK(vhat.size() == 6 * bodies_.size(), "rigid bodies: v-hat needs 6 values per body");
  for (Index k = 0; k < num_bodies(); ++k) {
    RigidBody& body = bodies_[k];
    const Vec3 v_mid = LoadVec3(vhat.data(), 2 * k), w_mid = LoadVec3(vhat.data(), 2 * k + 1);
    const Mat3 iw = MidInertia(k, dt);
    const Vec3 l_next = Scalar(2) * (iw * w_mid) - WorldInertia(k) * body.omega;
    body.x += dt * v_mid;
    body.v = Scalar(2) * v_mid - body.v;
    body.q = Normalized(FromRotationVector(dt * w_mid) * body.q);
    body.omega = Inverse(WorldInertia(k)) * l_next;
  }
}

Scalar RigidModel::KineticEnergy() const {
  Scalar e = 0;
  for (Index k = 0; k < num_bodies(); ++k) {
    const RigidBody& body = bodies_[k];
    e += Scalar(0.5) * body.mass * Dot(body.v, body.v) + Scalar(0.5) * Dot(body.omega, WorldInertia(k) * body.omega);
  }
  return e;
}

Vec3 RigidModel::AngularMomentum(Index b) const { return WorldInertia(b) * bodies_.at(std::size_t(b)).omega; }

}  // namespace condsim
