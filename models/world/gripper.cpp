// The parallel two-finger gripper: palm, fingers, prismatic joints and their drives.
#include "models/world/gripper.h"

#include <cmath>

#include "condsim/error.h"

namespace condsim {
namespace {
bool Positive(const Vec3& a) { return a[0] > 0 && a[1] > 0 && a[2] > 0 && std::isfinite(Norm(a)); }
}  // namespace

void GripperParams::Validate() const {
  CONDSIM_CHECK(std::isfinite(Norm(position)), "gripper: position must be finite [m]");
  CONDSIM_CHECK(std::fabs(Norm(orientation) - 1) < 1e-6, "gripper: orientation must be a unit quaternion");
  CONDSIM_CHECK(Positive(palm_half), "gripper: palm_half must be > 0 [m]");
  CONDSIM_CHECK(Positive(finger_half), "gripper: finger_half must be > 0 [m]");
  CONDSIM_CHECK(std::isfinite(palm_mass) && palm_mass > 0, "gripper: palm_mass must be > 0 [kg], got " << palm_mass);
  CONDSIM_CHECK(std::isfinite(finger_mass) && finger_mass > 0, "gripper: finger_mass must be > 0 [kg], got " << finger_mass);
  CONDSIM_CHECK(std::isfinite(opening) && opening > 0, "gripper: opening must be > 0 [m], got " << opening);
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, "gripper: mu must be >= 0, got " << mu);
  CONDSIM_CHECK(std::isfinite(drive_k) && drive_k >= 0, "gripper: drive_k must be >= 0 [N/m], got " << drive_k);
  CONDSIM_CHECK(std::isfinite(drive_d) && drive_d >= 0, "gripper: drive_d must be >= 0 [N s/m], got " << drive_d);
}

Gripper AddParallelGripper(World* world, const GripperParams& p) {
  p.Validate();
  Gripper g;
  g.params = p;
  const Mat3 r = ToMatrix(p.orientation);
  RigidBody palm = MakeRigidBox(p.palm_half, p.palm_mass);
  palm.x = p.position;
  palm.q = p.orientation;
  palm.mu1 = palm.mu2 = p.mu;
  g.palm = world->AddRigid(palm);
  for (int k = 0; k < 2; ++k) {
    const Scalar side = k == 0 ? -1 : 1;
    // finger centre: pad at +-opening/2, hanging below the palm
    const Vec3 local(side * (p.opening / 2 + p.finger_half[0]), 0, -(p.palm_half[2] + p.finger_half[2]));
    RigidBody finger = MakeRigidBox(p.finger_half, p.finger_mass);
    finger.x = p.position + r * local;
    finger.q = p.orientation;
    finger.mu1 = finger.mu2 = p.mu;
    g.finger[k] = world->AddRigid(finger);
    Joint slide;
    slide.type = JointType::kPrismatic;
    slide.body_i = g.finger[k];
    slide.body_j = g.palm;
    slide.anchor = finger.x;
    slide.axis = side * r.Col(0);  // outward
    g.joint[k] = world->AddJoint(slide);
  }
  return g;
}

void SetGripperWidth(World* world, const Gripper& g, Scalar width, Scalar rate) {
  CONDSIM_CHECK(std::isfinite(width) && width >= 0, "gripper: width must be >= 0 [m], got " << width);
  CONDSIM_CHECK(std::isfinite(rate), "gripper: rate must be finite [m/s]");
  JointDrive drive;
  drive.k = g.params.drive_k;
  drive.d = g.params.drive_d;
  // each finger slides outward by (width - opening) / 2
  drive.target = (width - g.params.opening) / 2;
  drive.target_rate = rate / 2;
  for (Index j : g.joint) world->SetJointDrive(j, drive);
}

Scalar GripperWidth(const World& world, const Gripper& g) {
  return g.params.opening + world.JointPosition(g.joint[0]) + world.JointPosition(g.joint[1]);
}

}  // namespace condsim
