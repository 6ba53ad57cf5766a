// Joint rows (eq. 7-9): constraint errors, their velocity Jacobians and the drive row.
#include "models/rigid/joint.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"

namespace condsim {
namespace {

bool Finite(const Vec3& a) { return std::isfinite(a[0]) && std::isfinite(a[1]) && std::isfinite(a[2]); }

struct Anchors {
  Vec3 r_i, r_j;      // anchor - centre of mass
  Vec3 pi, pj;        // world anchors
  Mat3 fi, fj;        // world joint frames
};

Anchors Evaluate(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj) {
  Anchors a;
  a.r_i = bi.r * j.p_i;
  a.r_j = bj.r * j.p_j;
  a.pi = bi.x + a.r_i;
  a.pj = bj.x + a.r_j;
  a.fi = bi.r * j.l_i;
  a.fj = bj.r * j.l_j;
  return a;
}

}  // namespace

void Joint::Validate(const std::string& where) const {
  CONDSIM_CHECK(body_i >= 0, where << ": body_i must be a rigid body");
  CONDSIM_CHECK(body_j != body_i, where << ": a joint needs two different bodies (body_j = -1: the world)");
  CONDSIM_CHECK(Finite(anchor), where << ": anchor must be finite [m]");
  CONDSIM_CHECK(Finite(axis) && Norm(axis) > 1e-12, where << ": axis must be a finite nonzero vector");
  CONDSIM_CHECK(std::isfinite(k_lin) && k_lin >= 0, where << ": k_lin must be >= 0 [N/m] (0: automatic), got " << k_lin);
  CONDSIM_CHECK(std::isfinite(k_ang) && k_ang >= 0, where << ": k_ang must be >= 0 [N m/rad] (0: automatic), got " << k_ang);
  CONDSIM_CHECK(std::isfinite(damping) && damping >= 0, where << ": damping must be >= 0, got " << damping);
}

JointState BindJoint(const Joint& joint, const JointBodyPose& bi, const JointBodyPose& bj) {
  JointState s;
  s.type = joint.type;
  s.body_i = joint.body_i;
  s.body_j = joint.body_j;
  s.k_lin = joint.k_lin;
  s.k_ang = joint.k_ang;
  s.damping = joint.damping;
  const Mat3 frame = FrameAround(Normalized(joint.axis));
  // body-frame anchors and joint frames: R^T (p - x), R^T F
  s.p_i = Transpose(bi.r) * (joint.anchor - bi.x);
  s.p_j = Transpose(bj.r) * (joint.anchor - bj.x);
  s.l_i = Transpose(bi.r) * frame;
  s.l_j = Transpose(bj.r) * frame;
  return s;
}

Scalar JointCoordinate(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj) {
  const Anchors a = Evaluate(j, bi, bj);
  switch (j.type) {
    case JointType::kPrismatic:
      return Dot(a.fj.Col(2), a.pi - a.pj);
    case JointType::kRevolute: {
      const Vec3 xi = a.fi.Col(0), xj = a.fj.Col(0);
      return std::atan2(Dot(a.fj.Col(2), Cross(xj, xi)), Dot(xi, xj));
    }
    case JointType::kFixed:
      break;
  }
  return 0;
}

Scalar UnwrapAngle(Scalar previous, Scalar wrapped) {
  return previous + std::remainder(wrapped - previous, Scalar(2 * 3.14159265358979323846));
}

void JointRows(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj, Scalar dt, Scalar auto_k_lin,
               Scalar auto_k_ang, bool with_drive, std::vector<JointRow>* rows) {
  const Anchors a = Evaluate(j, bi, bj);
  const Scalar k_lin = j.k_lin > 0 ? j.k_lin : auto_k_lin, k_ang = j.k_ang > 0 ? j.k_ang : auto_k_ang;
  const Scalar c_lin = (1 + j.damping) * k_lin * dt / 2, c_ang = (1 + j.damping) * k_ang * dt / 2;
  const Vec3 d = a.pi - a.pj;
  // g v_k: the row's rate at the poses' velocities
  auto rate = [&](const JointRow& row) {
    return Dot(row.g[0], bi.v) + Dot(row.g[1], bi.w) + Dot(row.g[2], bj.v) + Dot(row.g[3], bj.w);
  };
  // anchor row along u: e = u . (P_i - P_j); u turns with body j when `turning` (prismatic):
  // d/dt e = u . (v_i + omega_i x r_i - v_j - omega_j x r_j) + (omega_j x u) . (P_i - P_j)
  auto anchor_row = [&](const Vec3& u, bool turning) {
    JointRow row;
    row.g[0] = u;
    row.g[1] = Cross(a.r_i, u);
    row.g[2] = Scalar(-1) * u;
    row.g[3] = Scalar(-1) * Cross(a.r_j, u) + (turning ? Cross(u, d) : Vec3());
    row.c = c_lin;
    row.r = -k_lin * (Dot(u, d) - dt / 2 * rate(row));
    rows->push_back(row);
  };
  // rotation row along u: d/dt of the error ~ u . (omega_i - omega_j)
  auto rotation_row = [&](const Vec3& u, Scalar e) {
    JointRow row;
    row.g[1] = u;
    row.g[3] = Scalar(-1) * u;
    row.c = c_ang;
    row.r = -k_ang * (e - dt / 2 * rate(row));
    rows->push_back(row);
  };
  const Vec3 ex(1, 0, 0), ey(0, 1, 0), ez(0, 0, 1);
  switch (j.type) {
    case JointType::kFixed:
    case JointType::kPrismatic: {
      if (j.type == JointType::kFixed) {
        for (const Vec3& u : {ex, ey, ez}) anchor_row(u, false);
      } else {
        anchor_row(a.fj.Col(0), true);
        anchor_row(a.fj.Col(1), true);
      }
      // relative rotation log(F_i F_j^T): d/dt ~ omega_i - omega_j
      const Vec3 e = LogRotation(a.fi * Transpose(a.fj));
      for (const Vec3& u : {ex, ey, ez}) rotation_row(u, Dot(u, e));
      break;
    }
    case JointType::kRevolute: {
      for (const Vec3& u : {ex, ey, ez}) anchor_row(u, false);
      // axis misalignment a_j x a_i (normal to the axis): d/dt ~ P (omega_i - omega_j)
      const Vec3 e = Cross(a.fj.Col(2), a.fi.Col(2));
      rotation_row(a.fj.Col(0), Dot(a.fj.Col(0), e));
      rotation_row(a.fj.Col(1), Dot(a.fj.Col(1), e));
      break;
    }
  }
  if (!with_drive || !j.driven || j.type == JointType::kFixed) return;
  // the drive: f = -k (s + (t/2) s' - s*) - d (s' - s*') + f_ff on the coordinate s
  const JointDrive& dr = j.drive;
  const Vec3 ax = a.fj.Col(2);
  JointRow row;
  Scalar s;
  if (j.type == JointType::kPrismatic) {
    // s = a . (P_i - P_j), a turning with body j
    s = Dot(ax, d);
    row.g[0] = ax;
    row.g[1] = Cross(a.r_i, ax);
    row.g[2] = Scalar(-1) * ax;
    row.g[3] = Scalar(-1) * Cross(a.r_j, ax) + Cross(ax, d);
  } else {
    // s' = a . (omega_i - omega_j)
    s = UnwrapAngle(j.angle, JointCoordinate(j, bi, bj));
    row.g[1] = ax;
    row.g[3] = Scalar(-1) * ax;
  }
  row.c = dr.k * dt / 2 + dr.d;
  row.r = -dr.k * (s - dt / 2 * rate(row) - dr.target) + dr.d * dr.target_rate + dr.force;
  rows->push_back(row);
}

JointError JointConstraintError(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj) {
  const Anchors a = Evaluate(j, bi, bj);
  JointError err;
  Vec3 d = a.pi - a.pj;
  if (j.type == JointType::kPrismatic) d = d - Dot(d, a.fj.Col(2)) * a.fj.Col(2);
  err.position = Norm(d);
  if (j.type == JointType::kRevolute) {
    err.angle = std::asin(std::min(Scalar(1), Norm(Cross(a.fj.Col(2), a.fi.Col(2)))));
  } else {
    err.angle = Norm(LogRotation(a.fi * Transpose(a.fj)));
  }
  return err;
}

}  // namespace condsim
