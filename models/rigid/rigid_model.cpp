// Rigid bodies: inertia of the shapes, assembly of eq. 4 and the state update.
#include "models/rigid/rigid_model.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "condsim/error.h"

namespace condsim {
namespace {
constexpr double kPi = 3.14159265358979323846;
bool Finite(const Vec3& a) { return std::isfinite(a[0]) && std::isfinite(a[1]) && std::isfinite(a[2]); }
// automatic joint stiffness: k t^2 / (4 m_red), the spring against the bodies' inertia per step
constexpr Scalar kJointStiffness = 1e4;
// a body's orientation half a step ahead at its current angular velocity
Mat3 MidRotation(const RigidBody& body, Scalar dt) {
  return ToMatrix(Normalized(FromRotationVector((dt / 2) * body.omega) * body.q));
}
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
  CONDSIM_CHECK(shape != ShapeType::kPlane, where << ": a rigid body cannot have a plane shape");
  if (shape == ShapeType::kMesh) {
    CONDSIM_CHECK(mesh != nullptr && !mesh->tri.empty(), where << ": a mesh shape needs its mesh (MakeRigidMesh)");
    CONDSIM_CHECK(std::isfinite(mu1) && std::isfinite(mu2) && mu1 >= 0 && mu2 >= 0, where << ": friction must be finite and >= 0");
    return;
  }
  StaticShape s;
  s.type = shape;
  s.size = size;
  s.mu1 = mu1;
  s.mu2 = mu2;
  s.Validate(where + " shape");
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

RigidBody MakeRigidMesh(const std::vector<Scalar>& x, const std::vector<Index>& tri, Scalar mass, const std::string& where) {
  CONDSIM_CHECK(std::isfinite(mass) && mass > 0, where << ": mass must be > 0 [kg], got " << mass);
  CONDSIM_CHECK(x.size() % 3 == 0 && x.size() >= 12, where << ": needs at least 4 vertices (3 coordinates each)");
  CONDSIM_CHECK(tri.size() % 3 == 0 && tri.size() >= 12, where << ": needs at least 4 triangles (3 vertices each)");
  const Index nv = static_cast<Index>(x.size() / 3);
  for (Scalar c : x) CONDSIM_CHECK(std::isfinite(c), where << ": vertex coordinates must be finite");
  // closed: every directed edge appears once and its reverse once
  std::vector<std::pair<Index, Index>> edges;
  for (std::size_t t = 0; t < tri.size(); t += 3)
    for (int k = 0; k < 3; ++k) {
      const Index a = tri[t + k], b = tri[t + (k + 1) % 3];
      CONDSIM_CHECK(a >= 0 && a < nv && b >= 0 && b < nv, where << ": triangle " << t / 3 << " has a vertex out of range");
      CONDSIM_CHECK(a != b, where << ": triangle " << t / 3 << " repeats a vertex");
      edges.push_back({a, b});
    }
  std::sort(edges.begin(), edges.end());
  for (std::size_t e = 0; e < edges.size(); ++e) {
    CONDSIM_CHECK(e == 0 || edges[e] != edges[e - 1], where << ": edge (" << edges[e].first << ", " << edges[e].second
                                                            << ") is used twice in one direction (inconsistent orientation)");
    CONDSIM_CHECK(std::binary_search(edges.begin(), edges.end(), std::make_pair(edges[e].second, edges[e].first)),
                  where << ": edge (" << edges[e].first << ", " << edges[e].second << ") has no twin: the mesh is not closed");
  }
  // volume, first and second moments by tetrahedra from the origin (signed):
  // V = a.(b x c)/6, int x dV = V (a+b+c)/4, int x x^T dV = V/20 (sum p p^T + (sum p)(sum p)^T)
  Scalar volume = 0;
  Eigen::Vector3d first = Eigen::Vector3d::Zero();
  Eigen::Matrix3d second = Eigen::Matrix3d::Zero();
  for (std::size_t t = 0; t < tri.size(); t += 3) {
    const Vec3 a = LoadVec3(x.data(), tri[t]), b = LoadVec3(x.data(), tri[t + 1]), c = LoadVec3(x.data(), tri[t + 2]);
    CONDSIM_CHECK(Norm(Cross(b - a, c - a)) > 0, where << ": triangle " << t / 3 << " is degenerate (zero area)");
    const Scalar v = Dot(a, Cross(b, c)) / 6;
    const Eigen::Vector3d pa(a[0], a[1], a[2]), pb(b[0], b[1], b[2]), pc(c[0], c[1], c[2]), sum = pa + pb + pc;
    volume += v;
    first += v * sum / 4;
    second += v / 20 * (pa * pa.transpose() + pb * pb.transpose() + pc * pc.transpose() + sum * sum.transpose());
  }
  CONDSIM_CHECK(volume > 0, where << ": enclosed volume " << volume << " m^3 is not positive (inverted triangles?)");
  const Scalar density = mass / volume;
  const Eigen::Vector3d com = first / volume;
  // inertia about the centre of mass: I = tr(C) 1 - C with C = rho (second - V com com^T)
  const Eigen::Matrix3d cov = density * (second - volume * com * com.transpose());
  const Eigen::Matrix3d inertia = cov.trace() * Eigen::Matrix3d::Identity() - cov;
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(inertia);
  Eigen::Matrix3d axes = eig.eigenvectors();
  if (axes.determinant() < 0) axes.col(2) *= -1;
  RigidBody b;
  b.mass = mass;
  b.shape = ShapeType::kMesh;
  b.inertia = Vec3(eig.eigenvalues()[0], eig.eigenvalues()[1], eig.eigenvalues()[2]);
  b.x = Vec3(com[0], com[1], com[2]);
  const Mat3 r(axes(0, 0), axes(0, 1), axes(0, 2), axes(1, 0), axes(1, 1), axes(1, 2), axes(2, 0), axes(2, 1), axes(2, 2));
  b.q = FromMatrix(r);
  // the mesh in the principal frame: R^T (p - com)
  auto mesh = std::make_shared<RigidMesh>();
  mesh->tri = tri;
  const Mat3 rt = Transpose(ToMatrix(b.q));
  Vec3 lo(1e300, 1e300, 1e300), hi(-1e300, -1e300, -1e300);
  for (Index i = 0; i < nv; ++i) {
    const Vec3 p = rt * (LoadVec3(x.data(), i) - b.x);
    for (int d = 0; d < 3; ++d) {
      mesh->x.push_back(p[d]);
      lo[d] = std::min(lo[d], p[d]);
      hi[d] = std::max(hi[d], p[d]);
    }
  }
  b.size = Scalar(0.5) * (hi - lo);
  b.mesh = mesh;
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
    case ShapeType::kMesh:
      for (std::size_t i = 0; i < body.mesh->x.size() / 3; ++i) out.push_back({LoadVec3(body.mesh->x.data(), Index(i)), 0});
      break;
    case ShapeType::kPlane:
      break;
  }
  return out;
}

RigidModel::RigidModel(const std::vector<RigidBody>& bodies, const std::string& source, const std::vector<Joint>& joints)
    : bodies_(bodies) {
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    bodies_[b].Validate(source + ": body " + std::to_string(b));
    bodies_[b].q = Normalized(bodies_[b].q);
  }
  // joints, and the bodies each body is jointed to (itself included)
  std::vector<std::vector<Index>> adj(bodies_.size());
  for (std::size_t b = 0; b < bodies_.size(); ++b) adj[b].push_back(static_cast<Index>(b));
  for (std::size_t j = 0; j < joints.size(); ++j) {
    const Joint& jt = joints[j];
    const std::string where = source + ": joint " + std::to_string(j);
    jt.Validate(where);
    CONDSIM_CHECK(jt.body_i < num_bodies() && jt.body_j < num_bodies(), where << ": body does not exist");
    joints_.push_back(BindJoint(jt, Pose(jt.body_i), Pose(jt.body_j)));
    if (jt.body_j >= 0) {
      adj[jt.body_i].push_back(jt.body_j);
      adj[jt.body_j].push_back(jt.body_i);
    }
  }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  // groups: connected components of the joint graph
  std::vector<Index> seen(bodies_.size(), -1);
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    if (seen[b] >= 0) continue;
    std::vector<Index> group{static_cast<Index>(b)}, stack{static_cast<Index>(b)};
    seen[b] = static_cast<Index>(groups_.size());
    while (!stack.empty()) {
      const Index c = stack.back();
      stack.pop_back();
      for (Index n : adj[c])
        if (seen[n] < 0) {
          seen[n] = seen[b];
          group.push_back(n);
          stack.push_back(n);
        }
    }
    std::sort(group.begin(), group.end());
    groups_.push_back(group);
  }
  pattern_.block_dim = 3;
  pattern_.block_rows = pattern_.block_cols = num_nodes();
  for (Index n = 0; n < num_nodes(); ++n) {
    for (Index c : adj[n / 2]) {
      pattern_.col_idx.push_back(2 * c);
      pattern_.col_idx.push_back(2 * c + 1);
    }
    pattern_.row_ptr.push_back(static_cast<Index>(pattern_.col_idx.size()));
  }
}

JointBodyPose RigidModel::Pose(Index b) const {
  JointBodyPose p;
  if (b < 0) return p;
  const RigidBody& body = bodies_.at(std::size_t(b));
  p.x = body.x;
  p.r = ToMatrix(body.q);
  p.v = body.v;
  p.w = body.omega;
  return p;
}

JointBodyPose RigidModel::MidPose(Index b, Scalar dt) const {
  JointBodyPose p = Pose(b);
  if (b < 0) return p;
  const RigidBody& body = bodies_[b];
  p.x = body.x + (dt / 2) * body.v;
  p.r = MidRotation(body, dt);
  return p;
}

std::vector<Scalar> RigidModel::GroupMatrix(const std::vector<Scalar>& values, const std::vector<Index>& bodies) const {
  const std::size_t n = 6 * bodies.size();
  std::vector<Scalar> dense(n * n, 0);
  for (std::size_t p = 0; p < bodies.size(); ++p)
    for (std::size_t q = 0; q < bodies.size(); ++q)
      for (int a = 0; a < 2; ++a)
        for (int c = 0; c < 2; ++c) {
          const Index blk = pattern_.Find(2 * bodies[p] + a, 2 * bodies[q] + c);
          if (blk < 0) continue;
          for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 3; ++k) dense[(6 * p + 3 * a + r) * n + 6 * q + 3 * c + k] = values[9 * std::size_t(blk) + 3 * r + k];
        }
  return dense;
}

void RigidModel::SetJointDrive(Index j, const JointDrive& d) {
  CONDSIM_CHECK(j >= 0 && j < num_joints(), "joint drive: joint " << j << " does not exist");
  CONDSIM_CHECK(joints_[j].type != JointType::kFixed, "joint drive: joint " << j << " is fixed (nothing to drive)");
  for (Scalar g : {d.k, d.d})
    CONDSIM_CHECK(std::isfinite(g) && g >= 0, "joint drive of joint " << j << ": gains must be finite and >= 0");
  CONDSIM_CHECK(std::isfinite(d.target) && std::isfinite(d.target_rate) && std::isfinite(d.force),
                "joint drive of joint " << j << ": target, rate and force must be finite");
  joints_[j].drive = d;
  joints_[j].driven = true;
}

Scalar RigidModel::JointPosition(Index j) const {
  const JointState& s = joints_.at(std::size_t(j));
  return s.type == JointType::kRevolute ? s.angle : JointCoordinate(s, Pose(s.body_i), Pose(s.body_j));
}

Scalar RigidModel::JointRate(Index j) const {
  JointState s = joints_.at(std::size_t(j));
  if (s.type == JointType::kFixed) return 0;
  s.driven = true;
  std::vector<JointRow> rows;
  JointRows(s, Pose(s.body_i), Pose(s.body_j), 1, 1, 1, true, &rows);
  const JointRow& g = rows.back();
  Scalar rate = Dot(g.g[0], body(s.body_i).v) + Dot(g.g[1], body(s.body_i).omega);
  if (s.body_j >= 0) rate += Dot(g.g[2], body(s.body_j).v) + Dot(g.g[3], body(s.body_j).omega);
  return rate;
}

JointError RigidModel::JointConstraintError(Index j) const {
  const JointState& s = joints_.at(std::size_t(j));
  return condsim::JointConstraintError(s, Pose(s.body_i), Pose(s.body_j));
}

void RigidModel::AutoStiffness(Index j, Scalar dt, Scalar* k_lin, Scalar* k_ang) const {
  const JointState& s = joints_.at(std::size_t(j));
  auto radius = [&](Index b) {
    const RigidBody& r = bodies_[b];
    return r.shape == ShapeType::kBox || r.shape == ShapeType::kMesh ? Norm(r.size)
           : r.shape == ShapeType::kCapsule                          ? r.size[0] + r.size[1]
                                                                     : r.size[0];
  };
  Scalar m = bodies_[s.body_i].mass, len = radius(s.body_i);
  if (s.body_j >= 0) {
    m = m * bodies_[s.body_j].mass / (m + bodies_[s.body_j].mass);
    len = std::max(len, radius(s.body_j));
  }
  *k_lin = kJointStiffness * 4 * m / (dt * dt);
  *k_ang = *k_lin * len * len;
}

void RigidModel::ConstraintRows(Index j, Scalar dt, std::vector<JointRow>* rows) const {
  const JointState& s = joints_.at(std::size_t(j));
  Scalar k_lin, k_ang;
  AutoStiffness(j, dt, &k_lin, &k_ang);
  JointRows(s, Pose(s.body_i), Pose(s.body_j), dt, k_lin, k_ang, false, rows);
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
  const Mat3 r = MidRotation(body, dt);
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
    const Index tt = pattern_.Find(2 * k, 2 * k), rr = pattern_.Find(2 * k + 1, 2 * k + 1);
    StoreMat3(values->data(), tt, (2 * body.mass / dt) * Mat3::Identity());
    StoreMat3(values->data(), rr, (2 / dt) * iw);
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
      StoreMat3(values->data(), tt, LoadMat3(values->data(), tt) + ct * Mat3::Identity());
      StoreMat3(values->data(), rr, LoadMat3(values->data(), rr) + cr * Mat3::Identity());
      const Vec3 e = LogRotation(ToMatrix(body.q) * Transpose(ToMatrix(d.q)));
      AddVec3(b->data(), 2 * k, Scalar(-d.k_lin) * (body.x - d.p) + d.d_lin * d.v);
      AddVec3(b->data(), 2 * k + 1, Scalar(-d.k_ang) * e + d.d_ang * d.omega);
    }
  }
  // joints (eq. 9): A += c g g^T, b += r g over the nodes of their bodies, at the predicted
  // mid-step poses
  std::vector<JointRow> rows;
  for (Index j = 0; j < num_joints(); ++j) {
    const JointState& s = joints_[j];
    Scalar k_lin, k_ang;
    AutoStiffness(j, dt, &k_lin, &k_ang);
    rows.clear();
    JointRows(s, MidPose(s.body_i, dt), MidPose(s.body_j, dt), dt, k_lin, k_ang, true, &rows);
    const Index nodes[4] = {2 * s.body_i, 2 * s.body_i + 1, s.body_j < 0 ? -1 : 2 * s.body_j, s.body_j < 0 ? -1 : 2 * s.body_j + 1};
    for (const JointRow& row : rows)
      for (int p = 0; p < 4; ++p) {
        if (nodes[p] < 0) continue;
        AddVec3(b->data(), nodes[p], row.r * row.g[p]);
        for (int q = 0; q < 4; ++q) {
          if (nodes[q] < 0) continue;
          const Index blk = pattern_.Find(nodes[p], nodes[q]);
          StoreMat3(values->data(), blk, LoadMat3(values->data(), blk) + row.c * Outer(row.g[p], row.g[q]));
        }
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
  // revolute angles: unwrap the new wrapped angle against the last one
  for (JointState& s : joints_)
    if (s.type == JointType::kRevolute) s.angle = UnwrapAngle(s.angle, JointCoordinate(s, Pose(s.body_i), Pose(s.body_j)));
}

Scalar RigidModel::KineticEnergy() const {
  Scalar e = 0;
  for (Index k = 0; k < num_bodies(); ++k) {
    e += KineticEnergy(k, bodies_[k].v, bodies_[k].omega);
  }
  return e;
}

Scalar RigidModel::KineticEnergy(Index k, const Vec3& v, const Vec3& omega) const {
  return Scalar(0.5) * bodies_[k].mass * Dot(v, v) + Scalar(0.5) * Dot(omega, WorldInertia(k) * omega);
}

Vec3 RigidModel::AngularMomentum(Index b) const { return WorldInertia(b) * bodies_.at(std::size_t(b)).omega; }

}  // namespace condsim
