// Cosserat-rod cables (paper Sec. V-C5): N rigid cylinder segments (6 DOF each) joined by 6-D
// springs in the constraint-potential form of eq. 7 — shear G A / L (two axes), stretch E A / L,
// bending E I / L (two axes), twist G J / L, with A = pi r^2, I = pi r^4 / 4, J = pi r^4 / 2,
// G = E / (2 (1 + nu)) — linearized implicitly into A and b of eq. 9 and assembled by gathers on
// any backend. SI units. The velocity vector holds (v_s, w_s) per segment (w in the world frame);
// node 2s is the segment centre (contact node), node 2s+1 its rotation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "condsim/math.h"

namespace condsim {

class RodKernels;

struct RodMaterial {
  double radius = 0.002;     // r [m]
  double young = 3e6;        // E [Pa]
  double poisson = 0.49;     // nu
  double density = 1259;     // rho [kg/m^3]
  double rayleigh_alpha = 0; // mass-proportional damping [1/s]
  double rayleigh_beta = 0;  // stiffness-proportional damping [s]
  // E of eq. 9: the SPD diagonal projection of the joints' geometric stiffness (the second
  // derivatives of the joint errors) on the segments' rotation DOFs, which keeps large
  // deformations passive at t = 10 ms without damping translation
  bool geometric_stiffness = true;
  // factor on that diagonal: its row sums add the joint forces times a 1 m lever, a rotational
  // damping (t / 2) E that slows bending at t = 10 ms; 0.2 drapes a cable faster (docs/rod.md) and
  // still keeps the stiff cable passive, 0.01 let a draped cable diverge
  double geometric_stiffness_scale = 1;
  void Validate(const std::string& where) const;
  double Shear() const { return young / (2 * (1 + poisson)); }
};

// how a cable end is held: free, or tied to a (possibly moving) pose by a 6-D joint whose
// stiffness is the material's over the half segment between the pose and the first centre,
// times `stiffness_scale` (1 = a clamped end; larger = a stiffer gripper attachment)
struct RodEnd {
  bool attached = false;
  double stiffness_scale = 1;
};

struct RodGeometry {
  std::vector<Vec3> centers;  // segment centres [m]
  std::vector<Quat> frames;   // segment orientations: body z along the cable
  double segment_length = 0;  // L [m]
};

// a straight cable of n segments from `start` along `direction` (total length `length`), and a
// cable along a polyline resampled to n equal segments (parallel-transport frames, no twist);
// the rest shape is the generated shape
RodGeometry MakeStraightRod(const Vec3& start, const Vec3& direction, double length, Index segments);
RodGeometry MakePolylineRod(const std::vector<Vec3>& points, Index segments);

class RodModel {
 public:
  RodModel(Backend* backend, const RodGeometry& geometry, const RodMaterial& material,
           const RodEnd& start_end = {}, const RodEnd& finish_end = {}, const std::string& source = "rod");
  // several cables of one material in one model (a batch): segments concatenated in order, no
  // joint between cables, the same end conditions for every cable
  RodModel(Backend* backend, const std::vector<RodGeometry>& cables, const RodMaterial& material,
           const RodEnd& start_end = {}, const RodEnd& finish_end = {}, const std::string& source = "rods");
  ~RodModel();

  Index num_segments() const { return segments_; }
  Index num_cables() const { return static_cast<Index>(cable_start_.size()) - 1; }
  // first segment of each cable, and the total at the end
  const std::vector<Index>& cable_start() const { return cable_start_; }
  Index num_dofs() const { return 6 * segments_; }
  const BlockPattern& pattern() const { return pattern_; }
  // of the first cable's segments
  double segment_mass() const { return mass_host_; }
  const std::vector<Scalar>& inertia() const { return inertia_host_; }  // body moments
  double segment_length() const { return length_; }
  double radius() const { return material_.radius; }
  // the cables as COND chains (CondSolver::SetChains): all nodes in order, one chain per cable,
  // coupling reach 3
  static constexpr Index kChainBand = 3;
  std::vector<Index> ChainNodes(Index node_offset = 0) const {
    std::vector<Index> nodes;
    for (Index k = 0; k < 2 * segments_; ++k) nodes.push_back(node_offset + k);
    return nodes;
  }
  std::vector<Index> ChainPtr() const {
    std::vector<Index> ptr;
    for (Index s : cable_start_) ptr.push_back(2 * s);
    return ptr;
  }

  // state on the backend: centres (3 per segment), orientations (unit quaternions w,x,y,z)
  Array<Scalar>& positions() { return x_; }
  Array<Scalar>& orientations() { return q_; }
  // the poses the attached ends follow (position, orientation, mid-step velocity (v, w));
  // end 0 = start, 1 = finish
  void SetEndPose(int end, const Vec3& position, const Quat& orientation, const Vec3& v, const Vec3& w);
  void SetEndPose(Index cable, int end, const Vec3& position, const Quat& orientation, const Vec3& v, const Vec3& w);

  // assembles eq. 9 at the current state with velocities v (6 per segment), step dt, gravity and
  // optional external wrenches (6 per segment). `linearize_at` = a v-hat guess assembles the
  // Newton step of the midpoint equation (eq. 10) like the FEM model.
  void Assemble(const Array<Scalar>& v, Scalar dt, const Vec3& gravity, const Array<Scalar>* f_ext,
                DeviceBlockMatrix* a, Array<Scalar>* b, const Array<Scalar>* linearize_at = nullptr);
  // x <- x + t v-hat, R <- exp(t w-hat) R
  void Advance(const Array<Scalar>& vhat, Scalar dt);
  // elastic joint forces (6 per segment, -dE/dq with world-frame rotations) and the energy [J]
  Scalar JointForces(Array<Scalar>* f);

 private:
  void ComputeJoints(const Scalar* x, const Scalar* q, Scalar half_dt, bool with_energy);

  Backend* backend_;
  RodMaterial material_;
  std::unique_ptr<RodKernels> kernels_;
  Index segments_ = 0, joints_ = 0;
  double length_ = 0, mass_host_ = 0;
  std::vector<Scalar> inertia_host_;
  BlockPattern pattern_;
  std::vector<Index> end_pose_joint_;  // joint of pose slot 2c + end, or -1
  std::vector<Index> cable_start_;
  Array<Index> left_, right_, pose_, node_ptr_, node_refs_, block_ptr_, block_refs_, block_row_;
  Array<Scalar> arm_l_, arm_r_, rest_, k_, x_, q_, x_mid_, q_mid_, pose_x_, pose_q_, pose_v_;
  Array<Scalar> jkj_, geo_, force_, energy_, mass_, inertia_, ones_, zero_v_, r_;
};

}  // namespace condsim
