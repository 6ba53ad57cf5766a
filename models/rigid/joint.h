// Joints between rigid bodies (or a body and the world) as constraint potentials (paper eq. 7-9):
// psi = 1/2 e^T K e with the constraint error e(q), treated implicitly with the outer-product
// Hessian J_e^T K J_e and a damping E = d J_e^T J_e:
//   A += (t/2) J_e^T K J_e + d J_e^T J_e,   b -= J_e^T K e                              (eq. 9)
// Each joint is a list of scalar rows g (12 values: the v_i, omega_i, v_j, omega_j blocks) with
// error e, stiffness k and damping d. The velocity of a body point p is v + omega x (p - x_com).
//   fixed:     anchor rows along the world x, y, z + relative rotation log(F_i F_j^T) (3 rows)
//   prismatic: anchor rows along the two directions normal to the axis + relative rotation
//   revolute:  anchor rows along x, y, z + axis misalignment a_j x a_i along the two normals
// with the joint frames F_i = R_i L_i, F_j = R_j L_j (L: the body-frame joint frame, its z axis
// the joint axis). Body j (or the world) is the base: the axis turns with it, and body i moves
// relative to it. A drive (PD on the joint coordinate s: the slide a_j . (P_i - P_j) [m] or the
// angle of F_i's x axis about a_j from F_j's x axis [rad], unwrapped) is one more row:
//   f = -k (s + (t/2) s-hat' - s*) - d (s-hat' - s*') + f_ff
// evaluated at mid-step like PoseDrive. Rows are taken at the poses predicted for mid-step
// (x + (t/2) v, exp((t/2) omega) q), see JointRows. SI units.
#pragma once

#include <string>
#include <vector>

#include "condsim/math.h"

namespace condsim {

enum class JointType { kFixed, kPrismatic, kRevolute };

// a joint as the user gives it: world anchor and axis at the bodies' poses when it is added
struct Joint {
  JointType type = JointType::kFixed;
  Index body_i = -1;        // a rigid body: the one that moves along / about the axis
  Index body_j = -1;        // the base: another rigid body, or -1: the world
  Vec3 anchor;              // [m], world frame at creation
  Vec3 axis{0, 0, 1};       // slide direction / rotation axis, world frame at creation
  Scalar k_lin = 0;         // anchor stiffness [N/m]; 0: automatic (docs/collision.md, "Joints")
  Scalar k_ang = 0;         // rotation stiffness [N m/rad]; 0: automatic
  Scalar damping = 1;       // damping per row as a multiple of k t / 2 (1: the error of a step is
                            // removed in the next one instead of ringing)
  // throws condsim::Error naming `where` and the field
  void Validate(const std::string& where) const;
};

// a PD drive on a prismatic or revolute joint's coordinate (set again whenever it changes)
struct JointDrive {
  Scalar k = 0, d = 0;        // [N/m], [N s/m] (revolute: [N m/rad], [N m s/rad])
  Scalar target = 0;          // s* [m] or [rad]
  Scalar target_rate = 0;     // s*' [m/s] or [rad/s]
  Scalar force = 0;           // feed-forward effort along the coordinate [N] or [N m]
};

// one scalar row: A += c g g^T, b += r g
struct JointRow {
  Vec3 g[4];       // v_i, omega_i, v_j, omega_j
  Scalar c = 0;    // stiffness and damping coefficient k t / 2 + d
  Scalar r = 0;    // -k e_m + (k t/2) g v_k + d s*' + f_ff
};

// a joint bound to its bodies: body-frame anchors and frames (body_j = -1: world frame)
struct JointState {
  JointType type = JointType::kFixed;
  Index body_i = -1, body_j = -1;
  Vec3 p_i, p_j;     // anchor in each body's frame
  Mat3 l_i, l_j;     // joint frame in each body's frame (columns x, y, z = axis)
  Scalar k_lin = 0, k_ang = 0, damping = 1;
  JointDrive drive;
  bool driven = false;
  Scalar angle = 0;  // unwrapped revolute angle [rad]
};

// pose and velocity of a body as the joint sees it (the world: identity at the origin, at rest)
struct JointBodyPose {
  Vec3 x;
  Mat3 r = Mat3::Identity();
  Vec3 v, w;  // [m/s], [rad/s]
};

// binds a joint given in the world frame to the bodies' current poses
JointState BindJoint(const Joint& joint, const JointBodyPose& bi, const JointBodyPose& bj);
// the joint coordinate s: slide [m] (prismatic), wrapped angle in (-pi, pi] [rad] (revolute), 0 (fixed)
Scalar JointCoordinate(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj);
// a revolute angle unwrapped: `wrapped` moved by whole turns to within pi of `previous` [rad]
Scalar UnwrapAngle(Scalar previous, Scalar wrapped);
// the constraint rows at the given (predicted mid-step) poses, then the drive row when driven and
// `with_drive`; k_lin, k_ang <= 0 are taken from `auto_k_lin`, `auto_k_ang`. With the error e_m
// at those poses and the velocities v_k there, the mid-step error is e_m + (t/2) g (v-hat - v_k),
// so r = -k e_m + (k t/2) g v_k (the second-order drift of the anchors along curved paths stays
// out of the rows: a swinging pendulum keeps its energy)
void JointRows(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj, Scalar dt, Scalar auto_k_lin,
               Scalar auto_k_ang, bool with_drive, std::vector<JointRow>* rows);
// constraint error: anchor separation normal to a prismatic axis (else full) [m] and the
// rotation error [rad]
struct JointError {
  Scalar position = 0, angle = 0;
};
JointError JointConstraintError(const JointState& j, const JointBodyPose& bi, const JointBodyPose& bj);

}  // namespace condsim
