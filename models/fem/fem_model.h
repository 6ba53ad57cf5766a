// A co-rotational linear FEM body (paper Sec. II-A, eq. 7-9) on a backend: rest data computed
// once from the mesh, then per step the element rotations, elastic forces and the system
//   A = M-hat + (t/2) K + D,   b = M-hat v_k + f_el(x_k) + M g + f_ext,   M-hat = 2M/t   (eq. 9)
// with Rayleigh damping D = alpha M + beta K, assembled by gathers on the backend. A v-hat = b
// (+ Jc^T lambda) gives the mid-step velocity; then x_{k+1} = x_k + t v-hat,
// v_{k+1} = 2 v-hat - v_k. SI units: m, kg, s, Pa, N.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "models/fem/tet_mesh.h"

namespace condsim {

class FemKernels;

// a spring of stiffness k [N/m] and rest length 0 between nodes i and j (eq. 7): attaches one
// body of the model to another (several bodies may share one mesh and model)
struct FemLink {
  Index i;
  Index j;
  Scalar stiffness;
};

struct FemMaterial {
  double young = 1e5;          // Young's modulus E [Pa]
  double poisson = 0.3;        // Poisson ratio nu, in (-1, 0.5)
  double density = 1000;       // rho [kg/m^3]
  double rayleigh_alpha = 0;   // mass-proportional damping [1/s]
  double rayleigh_beta = 0;    // stiffness-proportional damping [s]
  // E of eq. 9: the SPD diagonal projection of the geometric stiffness (absolute row sums of
  // the rotation-derivative part of the element Hessian), for passivity at large rotations
  bool geometric_stiffness = false;
  // throws condsim::Error naming `where` and the field
  void Validate(const std::string& where) const;
  double Mu() const { return young / (2 * (1 + poisson)); }
  double Lambda() const { return young * poisson / ((1 + poisson) * (1 - 2 * poisson)); }
};

class FemModel {
 public:
  // validates the mesh and the material (errors name `source`)
  FemModel(Backend* backend, const TetMesh& mesh, const FemMaterial& material,
           const std::string& source = "fem body", const std::vector<FemLink>& links = {});
  ~FemModel();

  Index num_nodes() const { return num_nodes_; }
  Index num_tets() const { return num_tets_; }
  // the fixed 3x3-block pattern of A (node adjacency through elements)
  const BlockPattern& pattern() const { return pattern_; }
  // lumped node masses [kg] (rho V / 4 from each element)
  const std::vector<Scalar>& lumped_mass() const { return mass_host_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // boundary conditions (applied by Assemble, after the elements): nodes with a prescribed
  // mid-step velocity (pinned: 0 m/s; driven along p(t): (p(t_{k+1}) - x_k) / t), and nodes
  // attached to target points by springs of stiffness k [N/m] (eq. 7, implicit, so stiff
  // attachments are stable at t = 10 ms)
  void SetPrescribedNodes(const std::vector<Index>& nodes);
  void SetAttachments(const std::vector<Index>& nodes, const std::vector<Scalar>& stiffness);
  // per step: prescribed velocities (3 per prescribed node, in SetPrescribedNodes order) and
  // attachment targets p_k and mid-step target velocities (3 per attachment each)
  void SetPrescribedVelocities(const std::vector<Scalar>& v);
  // or the prescribed nodes carried rigidly on the backend (a handle): SetPrescribedReference
  // gives their reference positions X (3 per node, SetPrescribedNodes order) once; per step
  // CarryPrescribed sets v = (p + R (X - o) - x) / t from the positions x, so that each reaches
  // p + R (X - o) at the step's end
  void SetPrescribedReference(const std::vector<Scalar>& reference);
  void CarryPrescribed(const Array<Scalar>& x, const Mat3& r, const Vec3& p, const Vec3& origin, Scalar dt);
  void SetAttachmentTargets(const std::vector<Scalar>& p, const std::vector<Scalar>& v);

  // elastic forces at positions x (3 per node): f = -dE/dx [N]; returns the elastic energy [J]
  Scalar ElasticForces(const Array<Scalar>& x, Array<Scalar>* f);
  // assembles eq. 9 at (x_k, v_k) with step dt [s], gravity [m/s^2] and optional external
  // nodal forces [N] into a (created from pattern()) and b. With `linearize_at` = a guess of
  // v-hat, it assembles the Newton step of the nonlinear midpoint equation instead (eq. 10):
  // elements at x_mid = x_k + (t/2) v-hat, b += (t/2) K v-hat; iterating it to convergence gives
  // the implicit midpoint rule (exact angular momentum), one iteration from v-hat = 0 is eq. 9.
  void Assemble(const Array<Scalar>& x, const Array<Scalar>& v, Scalar dt, const Vec3& gravity,
                const Array<Scalar>* f_ext, DeviceBlockMatrix* a, Array<Scalar>* b,
                const Array<Scalar>* linearize_at = nullptr);

  // the rigid motion closest to v in kinetic energy (mass-weighted least squares, the lumped
  // masses): the centre-of-mass velocity V and the angular velocity W = I_c^-1 L_c about the
  // centre of mass c, as the mean velocity over a step t of that rigid motion:
  // out_i = V + (exp(t W) - I)(x_i - c) / t (the chord, so x + (t/2) out is the rigid midpoint).
  // A body without rotational inertia (all nodes on a line) keeps V only. On the backend: two
  // segmented dots (6 and 12 sums read back, 144 B) and one map; the sums are folded in node
  // order on the CPU (bitwise the former host loop up to 4096 nodes, chunked beyond)
  void RigidPredictor(const Array<Scalar>& x, const Array<Scalar>& v, Scalar dt, Array<Scalar>* out);

 private:
  void ComputeElements(const Array<Scalar>& x, bool with_energy, bool with_geometric);

  Backend* backend_;
  FemMaterial material_;
  std::unique_ptr<FemKernels> kernels_;
  Index num_nodes_ = 0, num_tets_ = 0;
  BlockPattern pattern_;
  std::vector<Scalar> mass_host_;
  std::vector<std::string> warnings_;
  Array<Index> tets_, node_ptr_, node_refs_, block_ptr_, block_refs_, block_row_;
  Array<Scalar> bm_, volume_, mu_, lambda_, mass_, rotation_, force_, energy_, ones_, zero_v_, x_mid_, r_, geo_diag_;
  // boundary conditions
  std::vector<Index> prescribed_nodes_;
  Array<Index> prescribed_index_;       // the prescribed nodes (CarryPrescribed)
  Array<Scalar> prescribed_reference_;  // their reference positions, 3 each
  Array<unsigned char> prescribed_;
  Array<Scalar> v_prescribed_;
  Index num_attached_ = 0;
  Array<Index> attach_nodes_, attach_block_;
  Array<Scalar> attach_k_, attach_p_, attach_v_;
  Index num_links_ = 0;
  Array<Index> link_i_, link_j_, link_block_ptr_, link_block_refs_, link_node_ptr_, link_node_refs_;
  Array<Scalar> link_k_;
  // the rigid predictor: 12 terms per node, the masses repeated 12 times, the passes' segments
  Scalar total_mass_ = 0;
  Array<Scalar> rigid_terms_, rigid_mass_, rigid_sums_;
  SegmentOffsets moment_segments_, inertia_segments_;
};

}  // namespace condsim
