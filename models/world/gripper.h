// A parallel two-finger gripper as a ready-made building block (cond-paper Sec. V-C4): a palm
// (a rigid box, usually moved by a pose drive) and two finger boxes on prismatic joints along
// the palm's x axis, each with a PD drive on its slide. The fingers hang below the palm (its -z
// side) with their pads facing each other. SI units.
#pragma once

#include "models/world/world.h"

namespace condsim {

struct GripperParams {
  Vec3 position;                           // palm centre [m]
  Quat orientation;                        // palm frame: fingers close along x, hang along -z
  Vec3 palm_half{0.05, 0.02, 0.01};        // palm half extents [m]
  Vec3 finger_half{0.005, 0.015, 0.035};   // finger half extents [m] (x: pad normal)
  Scalar palm_mass = 0.3;                  // [kg]
  Scalar finger_mass = 0.05;               // [kg]
  Scalar opening = 0.1;                    // initial gap between the finger pads [m]
  Scalar mu = 0.8;                         // friction of the fingers and palm
  Scalar drive_k = 500;                    // finger drive stiffness [N/m]
  Scalar drive_d = 20;                     // finger drive damping [N s/m]
  // throws condsim::Error naming the field
  void Validate() const;
};

struct Gripper {
  Index palm = -1;          // body ids
  Index finger[2] = {-1, -1};  // -x side, +x side
  Index joint[2] = {-1, -1};   // finger slides (outward positive)
  GripperParams params;
};

// adds the palm, the fingers and their joints (before the first step)
Gripper AddParallelGripper(World* world, const GripperParams& params);
// drives both fingers to a pad gap `width` [m], the gap changing at `rate` [m/s] (negative:
// closing). Holding an object of width D > width, each pad presses with drive_k (D - width) / 2.
void SetGripperWidth(World* world, const Gripper& gripper, Scalar width, Scalar rate = 0);
// the current gap between the pads [m]
Scalar GripperWidth(const World& world, const Gripper& gripper);

}  // namespace condsim
