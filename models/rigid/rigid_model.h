// Rigid bodies in maximal coordinates (paper eq. 1, 4): body b has two velocity nodes, the
// centre-of-mass velocity v (node 2b) and the world-frame angular velocity omega (node 2b+1).
// Per step, with the mid-step velocities v-hat, omega-hat:
//   (2m/t) v-hat               = (2m/t) v_k + m g + f_ext + contact forces          (eq. 4)
//   (2/t) I_w(q_m) omega-hat   = (2/t) L_k + tau_ext + contact torques,  L = I_w omega
// i.e. the world-frame angular momentum L is integrated (dL/dt = tau: no gyroscopic term in
// the world frame, so L is conserved exactly without torque), with the inertia at the
// predicted mid-step orientation q_m = exp(t omega_k / 2) q_k; then x += t v-hat,
// q <- exp(t omega-hat) q, v = 2 v-hat - v, L_{k+1} = 2 I_w(q_m) omega-hat - L_k,
// omega = I_w(q_{k+1})^-1 L_{k+1}. Contacts reach a body through virtual nodes (eq. 14-15);
// joints (models/rigid/joint.h) add their rows to A and b and couple the blocks of their bodies.
// Host-side state and assembly (bodies are few; the solve runs on the backend). SI units.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/block_sparse.h"
#include "condsim/contacts.h"
#include "condsim/math.h"
#include "models/collision/static_world.h"
#include "models/rigid/joint.h"

namespace condsim {

// a rigid body's triangle-mesh contact shape in its body frame (closed, outward
// counter-clockwise triangles): its vertices are contact samples, its triangles are touched by
// other bodies' points through the detector
struct RigidMesh {
  std::vector<Scalar> x;    // 3 per vertex [m], body frame
  std::vector<Index> tri;   // 3 vertices per triangle
};

struct RigidBody {
  Scalar mass = 1;             // [kg]
  Vec3 inertia{1, 1, 1};       // principal moments in the body frame [kg m^2]
  Vec3 x;                      // centre of mass [m]
  Quat q;                      // body -> world
  Vec3 v;                      // [m/s]
  Vec3 omega;                  // world frame [rad/s]
  ShapeType shape = ShapeType::kBox;  // contact shape, centred at x in the body frame
  Vec3 size{0.1, 0.1, 0.1};    // as StaticShape::size (box: half extents; mesh: its bounding half extents)
  std::shared_ptr<const RigidMesh> mesh;  // the shape when shape == kMesh (MakeRigidMesh)
  Scalar mu1 = 0.5, mu2 = 0.5; // friction of the body's surface
  // throws condsim::Error naming `where` and the field
  void Validate(const std::string& where) const;
};

// uniform solids: mass from density, principal inertia of the shape (capsule: cylinder + caps)
RigidBody MakeRigidBox(const Vec3& half_extents, Scalar mass);
RigidBody MakeRigidSphere(Scalar radius, Scalar mass);
RigidBody MakeRigidCapsule(Scalar radius, Scalar half_length, Scalar mass);
// a uniform solid bounded by a closed triangle mesh (vertices x, 3 each, and triangles, outward
// counter-clockwise) of the given mass: its centre of mass and principal axes become the body's
// pose (x, q) and the mesh is stored in that frame. Convex or not; contacts are vertex-face
// (docs/collision.md). Throws condsim::Error naming `where` for an open, inverted or degenerate mesh.
RigidBody MakeRigidMesh(const std::vector<Scalar>& x, const std::vector<Index>& tri, Scalar mass,
                        const std::string& where = "rigid mesh");

// a point of a body's surface used as a contact candidate against other geometry: a sphere of
// `radius` around `local` (box: its 8 corners, radius 0; sphere: its centre, radius R; capsule:
// the two cap centres, radius R; mesh: its vertices, radius 0)
struct SurfacePoint {
  Vec3 local;
  Scalar radius;
};
std::vector<SurfacePoint> ContactSamples(const RigidBody& body);

// a pose drive (eq. 7, implicit): a spring-damper pulling the body to a target pose at the
// mid-step time t_k + t/2 (p, q and the velocities v, omega there), evaluated at mid-step:
//   f = -k_lin (x_k + (t/2) v-hat - p) - d_lin (v-hat - v)
//   tau = -k_ang (log(q_k q^-1) + (t/2) omega-hat) - d_ang (omega-hat - omega)
// Set the target every step. A gripper palm or an end-effector follows a trajectory this way.
struct PoseDrive {
  Scalar k_lin = 0, d_lin = 0;   // [N/m], [N s/m]
  Scalar k_ang = 0, d_ang = 0;   // [N m/rad], [N m s/rad]
  Vec3 p, v;                     // target position [m] and velocity [m/s] at t_k + t/2
  Quat q;                        // target orientation at t_k + t/2
  Vec3 omega;                    // target angular velocity [rad/s] (world)
};

class RigidModel {
 public:
  RigidModel() = default;
  // joints (models/rigid/joint.h) are bound to the bodies' poses given here
  explicit RigidModel(const std::vector<RigidBody>& bodies, const std::string& source = "rigid bodies",
                      const std::vector<Joint>& joints = {});

  Index num_bodies() const { return static_cast<Index>(bodies_.size()); }
  Index num_nodes() const { return 2 * num_bodies(); }
  const RigidBody& body(Index b) const { return bodies_.at(std::size_t(b)); }
  RigidBody& mutable_body(Index b) { return bodies_.at(std::size_t(b)); }
  // the 3x3-block pattern: per body the 2x2 blocks of nodes (2b, 2b+1) and the 2x2 blocks with
  // every body it shares a joint with
  const BlockPattern& pattern() const { return pattern_; }
  // bodies connected by joints (ascending; groups ordered by their first body)
  const std::vector<std::vector<Index>>& groups() const { return groups_; }
  // the dense (6n x 6n, row-major) block of A over a group's bodies (v, omega per body in order)
  std::vector<Scalar> GroupMatrix(const std::vector<Scalar>& values, const std::vector<Index>& bodies) const;
  // world inertia I_w = R diag(I) R^T at the current pose
  Mat3 WorldInertia(Index b) const;
  // I_w at the predicted mid-step orientation exp(t omega_k / 2) q_k (the midpoint rule's
  // inertia: a tumbling body keeps its energy to O(t^2) instead of drifting to the minor axis)
  Mat3 MidInertia(Index b, Scalar dt) const;
  // the body's shape at its current pose (for node-vs-body distance queries)
  StaticShape ShapeAt(Index b) const;

  // drives body b (gains >= 0, finite); call again each step with the new target
  void SetPoseDrive(Index b, const PoseDrive& drive);

  // joints
  Index num_joints() const { return static_cast<Index>(joints_.size()); }
  const JointState& joint(Index j) const { return joints_.at(std::size_t(j)); }
  // a PD drive on a prismatic or revolute joint (gains >= 0, finite)
  void SetJointDrive(Index j, const JointDrive& drive);
  // the joint coordinate: slide [m] or unwrapped angle [rad] (0 for a fixed joint)
  Scalar JointPosition(Index j) const;
  // its rate [m/s] or [rad/s] at the current velocities
  Scalar JointRate(Index j) const;
  JointError JointConstraintError(Index j) const;
  // the automatic stiffness of joint j at step dt: k_lin = 1e4 * 4 m_red / t^2 (m_red: the reduced
  // mass of its bodies, the body's mass against the world), k_ang = k_lin L^2 (L: the larger
  // body's bounding radius)
  void AutoStiffness(Index j, Scalar dt, Scalar* k_lin, Scalar* k_ang) const;
  // the constraint rows of joint j (no drive) at the current poses
  void ConstraintRows(Index j, Scalar dt, std::vector<JointRow>* rows) const;
  // block values (pattern order) and b of the equations above; `wrench` holds force and
  // torque (6 per body, world frame, [N], [N m]) or is empty
  void Assemble(Scalar dt, const Vec3& gravity, const std::vector<Scalar>& wrench, std::vector<Scalar>* values,
                std::vector<Scalar>* b) const;
  // the state update from the mid-step velocities (6 per body: v-hat, omega-hat)
  void Advance(Scalar dt, const std::vector<Scalar>& vhat);
  // kinetic energy [J] and world angular momentum about the centre of mass [kg m^2/s]
  Scalar KineticEnergy() const;
  // body k's kinetic energy at velocities v, omega (world frame) [J]
  Scalar KineticEnergy(Index k, const Vec3& v, const Vec3& omega) const;
  Vec3 AngularMomentum(Index b) const;

 private:
  std::vector<RigidBody> bodies_;
  std::vector<PoseDrive> drives_;
  std::vector<JointState> joints_;
  std::vector<std::vector<Index>> groups_;
  BlockPattern pattern_;
  JointBodyPose Pose(Index b) const;  // the world for b = -1
  // the pose predicted at mid-step, x + (t/2) v and exp((t/2) omega) q
  JointBodyPose MidPose(Index b, Scalar dt) const;
};

}  // namespace condsim
