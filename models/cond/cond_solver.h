// The COND solver (paper Sec. III-IV, Alg. 1-3): given an SPD A (3x3 node blocks), b and nodal
// contacts, finds the mid-step velocity v and impulses lambda with A v = b + Jc^T lambda (eq. 1,
// 15) and the Signorini-Coulomb conditions (eq. 11) by the velocity fixed-point iteration
//   v* = v - W (A v - b)                    (eq. 20)
//   lambda = ProjectFC(-(Gamma)^-1 (Jc v* + phi))   per contact, in closed form (Alg. 2, eq. 25-26)
//   v <- v* + W Jc^T lambda                 (eq. 24)
// with optional Chebyshev acceleration (Alg. 3). One implementation for every backend; batched
// worlds stop per environment. docs/solver.md documents parameters and conventions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "condsim/contacts.h"
#include "models/cond/cond_ops.h"
#include "models/cond/projection.h"

namespace condsim {

class CondKernels;

// how the diagonal step matrix W is chosen (Sec. IV-C)
enum class StepSize {
  kFrobenius,    // per node, minimizes |I - W A|_F (IV-C1); equal within D-contact groups
  kBB1,          // Barzilai-Borwein alpha = s's / s'z per environment (IV-C2)
  kBB2,          // alpha = s'z / z'z
  kBBAlternate,  // BB1 and BB2 alternately
};
const char* ToString(StepSize s);
StepSize ParseStepSize(const std::string& name);
Projection ParseProjection(const std::string& name);

// patches per body at most (the coarse matrix of a body is dense: (6 m)^2, inverted per solve)
constexpr int kMaxBodyModePatches = 128;

struct CondParams {
  Projection projection = Projection::kStrict;  // strict (exact eq. 11) or proximal (CCP)
  StepSize step_size = StepSize::kFrobenius;
  int w_reuse_solves = 1;          // Frobenius: recompute A's row sums every k solves (IV-C1 reuse)
  double w_safeguard = 1.9;        // Frobenius: w <= this / (largest absolute row sum), so
                                   // lambda_max(W A) < 2 (Gershgorin); 0 = the paper's w as is
  double theta_threshold = 1e-6;   // theta_th [m/s]: stop an environment when |v^{l+1} - v^l| < it
  int max_iterations = 1000;       // l_max
  bool chebyshev = true;           // Alg. 3
  int chebyshev_start = 10;        // l_s: plain iterations before acceleration starts (>= 2)
  double chebyshev_relax = 0.9;    // u in (0, 1]: under-relaxation of the accelerated update
  double omega = 0;                // invertible contact: Gamma + omega I (Sec. III-E1), >= 0
  bool record_history = false;     // keep the residual of every iteration in CondStats
  bool body_modes = true;          // correct the motions of SetBodyModes patches exactly each
                                   // iteration (two-level W; docs/solver.md "Body modes")
  int body_mode_patches = 32;      // patches per FEM body the World makes (1: rigid motions only)
  int rigid_sweeps = 32;           // Gauss-Seidel passes over each rigid group's own contacts per
                                   // iteration (docs/solver.md "Rigid groups"); 0 = the diagonal
                                   // solve with the group's Gamma = d_v
  // throws condsim::Error naming the bad field
  void Validate() const;
};

struct CondStats {
  int iterations = 0;                 // iterations of the slowest environment
  double residual = 0;                // largest final theta over environments [m/s]
  bool converged = false;             // every environment reached theta_th
  std::vector<int> env_iterations;
  std::vector<double> env_residual;
  std::vector<int> failed_envs;       // environments whose iterate became NaN/Inf (left at
                                      // their last finite iterate; the others continue)
  std::vector<double> history;        // max theta over running environments, per iteration
  Index num_contacts = 0;
  Index num_colors = 0;               // contact colors (1 when no node has two contacts)
  int chebyshev_restarts = 0;         // semi-iterations restarted after a residual increase
  double setup_seconds = 0;           // W and uploads
  double iterate_seconds = 0;         // the fixed-point loop
};

// rigid groups (docs/solver.md): the velocity nodes (v, omega) of rigid bodies coupled by joints
// (one body when it has none) and the virtual nodes on them (eq. 15, J = [I, -[r]x], gain kv).
// The group's contact-free nodes take the exact answer to the current contact forces,
// v_o = A_o^-1 (b_o + J^T f), and each virtual node the velocity it then has, J v_o + f / kv; the
// contact step stays diagonal with Gamma = d_v, the largest absolute row sum of the group's
// J A_o^-1 J^T + I / kv (a majorant, so the contacts of one group converge like a projected
// Jacobi on its Delassus operator, at a rate independent of kv and of the joint stiffness). A
// plain diagonal W would need ~kv / (2m/t) iterations to move a body with its virtual nodes.
// With CondParams::rigid_sweeps, a group whose contacts all go to deformable bodies or the static
// world solves the deformable ones by repeated Gauss-Seidel sweeps with v_o kept exact
// (RigidContactSweepOp), which removes that Jacobi rate (a gripped soft ball: 151 -> 43).
struct RigidGroups {
  std::vector<Index> trans, rot;   // velocity nodes of each body
  std::vector<Index> body_ptr{0};  // group g: bodies body_ptr[g] .. body_ptr[g+1) (at most
                                   // kMaxRigidGroupBodies)
  std::vector<Scalar> ao_inv;      // per group, (6 n_g)^2: inverse of the group's block of A (A
                                   // without the virtual-node terms; v, omega per body), row-major
  std::vector<Index> ptr{0};       // virtual nodes of body k: node[ptr[k] .. ptr[k+1])
  std::vector<Index> node;
  std::vector<Scalar> arm;         // 3 per virtual node: contact point - centre of mass [m]
  std::vector<Scalar> kv;          // per virtual node [N s/m]
  Index size() const { return static_cast<Index>(body_ptr.size()) - 1; }
  Index num_bodies() const { return static_cast<Index>(trans.size()); }
};

// barycentric virtual nodes (docs/solver.md): virtual nodes inside a triangle or on a segment of
// deformable hosts (J_a = w_a I, eq. 14-15). The hosts take W_o from A without the eq. 15 terms
// and move with the virtual nodes' contact forces directly; each virtual node takes the
// velocity J v_o + f / kv its hosts give it (BarycentricView in cond_ops.h). Convergence is then
// independent of kv, where a plain diagonal W needs ~kv / (2m/t) iterations.
struct BarycentricNodes {
  std::vector<Index> node;       // the virtual node's global index
  std::vector<Index> ptr{0};     // hosts of virtual node k: host[ptr[k] .. ptr[k+1])
  std::vector<Index> host;
  std::vector<Scalar> weight;    // w_a >= 0, summing to 1 per virtual node
  std::vector<Scalar> kv;        // per virtual node [N s/m]
  Index size() const { return static_cast<Index>(node.size()); }
};

// body modes (docs/solver.md): deformable bodies whose slow motions the solver corrects exactly
// each iteration (a Galerkin step on Z = [I, -[r]x] per node before the W step). A body is split
// into patches, each moving rigidly in Z: one patch gives the body's six rigid motions (with the
// diagonal W these move at the rate 2M/t : stiffness, 10^-4 per iteration for a stiff FEM ball
// at t = 10 ms); several give piecewise-rigid fields that also reach bending and stretching of
// thin bodies. The fixed point is unchanged. Each solve leaves out the contact nodes (and
// barycentric virtual nodes with their hosts), so the modes never move a contact node and the
// diagonal contact step is untouched; a patch left with fewer than 4 nodes is left out too. A
// node belongs to at most one patch.
struct BodyModes {
  std::vector<Index> ptr{0};   // patch p: node[ptr[p] .. ptr[p+1])
  std::vector<Index> node;
  std::vector<Scalar> arm;     // 3 per listed node: position - the patch's reference point [m]
  std::vector<Index> body_ptr;  // body k: patches body_ptr[k] .. body_ptr[k+1); empty: one
                                // patch per body
  Index size() const { return static_cast<Index>(ptr.size()) - 1; }
};

// patches of the points x (3 per point), at most `target` and at most one per 16 points: the
// cells of a cubic grid from the points' lower bounding-box corner, with the smallest cell size
// (bisection, relative 10^-3) that leaves at most that many non-empty cells; a cell with fewer
// than 8 points joins the nearest larger one. Returns each point's patch (0 .. count-1, in cell
// order)
std::vector<Index> GridPatches(const std::vector<Scalar>& x, Index target);
// appends one body to `modes`: its nodes first + i grouped by patch[i] (0 .. max), arms from
// each patch's mean position in x (3 per node), and closes the body in body_ptr (started as
// {0} when empty)
void AppendBodyPatches(const std::vector<Index>& patch, const std::vector<Scalar>& x, Index first, BodyModes* modes);

class CondSolver {
 public:
  CondSolver(Backend* backend, const CondParams& params);
  ~CondSolver();

  const CondParams& params() const { return params_; }
  void set_params(const CondParams& p);
  // environment of every node (batched worlds); by default all nodes are environment 0
  void SetNodeEnvironments(const std::vector<Index>& node_env);
  // the contacts of the next solves; impulses start at zero unless warm-started
  void SetContacts(const ContactSet& contacts);
  // warm start (Sec. V-A5): initial impulses, 3 per contact (n, t1, t2)
  void SetImpulses(const std::vector<Scalar>& lambda);
  // chains (docs/solver.md): ordered node lists whose part of A is block-banded with reach
  // `band` nodes (a rod: its nodes in order, band 3). W on a chain's contact-free nodes is the
  // exact inverse of that sub-system (banded Cholesky), which makes stiff cables converge in a
  // few iterations; contact nodes keep the scalar Frobenius w (Gamma stays diagonal). Chain c
  // holds nodes[ptr[c] .. ptr[c+1]); a node belongs to at most one chain. Frobenius W only.
  void SetChains(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band);
  // rigid bodies answered exactly (see RigidGroups); the virtual nodes must not be in chains
  void SetRigidGroups(const RigidGroups& groups);
  // virtual nodes on deformable hosts (see BarycentricNodes); hosts must not be rigid-group
  // nodes or virtual nodes themselves
  void SetBarycentricNodes(const BarycentricNodes& nodes);
  // bodies whose rigid motions are corrected exactly (see BodyModes); Frobenius W only
  void SetBodyModes(const BodyModes& modes);
  // solves A v = b + Jc^T lambda with eq. 11; v holds the initial guess (warm start) on entry
  // and the mid-step velocity on return. A must be square with 3x3 blocks.
  CondStats Solve(DeviceBlockMatrix& a, const Array<Scalar>& b, Array<Scalar>* v);
  // contact impulses of the last solve (3 per contact, contact frame)
  std::vector<Scalar> Impulses() const;
  const Array<Scalar>& impulses() const { return lambda_; }
  // |A v - b - Jc^T lambda| / |b| (Remark 1)
  double ConsistencyResidual(DeviceBlockMatrix& a, const Array<Scalar>& b, const Array<Scalar>& v);

 private:
  void Prepare(DeviceBlockMatrix& a);
  void ComputeStepMatrix(DeviceBlockMatrix& a);
  void AddContactForces(const Scalar* weights, const Array<Scalar>& lambda, Array<Scalar>* out);
  BarycentricView BaryView() const;
  RigidGroupView RigidView() const;
  // the rigid groups' own contacts (RigidContactView) and the diagonal sweep order of the rest
  void BuildOwnContacts();
  // d_v of every rigid virtual node (Gamma on its contacts), given which nodes the sweeps take
  void RigidGammaBounds(const std::vector<unsigned char>& swept);
  // rigid groups and barycentric nodes answer the contact forces (before / after the sweeps)
  void OwnGammaResponse(const Array<Scalar>& b, bool before_sweep);
  // body modes: the coarse matrices of A (per solve) and the correction of v and r (per iteration)
  void PrepareBodyModes(DeviceBlockMatrix& a);
  void ApplyBodyModes(Array<Scalar>* v);
  BodyModeView ModeView() const;

  Backend* backend_;
  CondParams params_;
  std::unique_ptr<CondKernels> kernels_;
  Index nodes_ = 0;
  std::vector<Index> node_env_host_;
  Index num_envs_ = 1;
  // contacts
  ContactSet contacts_host_;
  std::vector<Index> color_ptr_, color_order_host_;
  Array<Index> ci_, cj_, cenv_, order_;
  Array<Scalar> frame_, phi_, mu1_, mu2_, lambda_;
  // Frobenius groups: nodes linked by D-contacts
  Array<Index> group_ptr_, group_nodes_;
  Index num_groups_ = 0;
  bool groups_dirty_ = true;
  // per DOF / per node / per environment arrays
  Array<Index> node_env_, dof_offsets_;
  Array<Scalar> w_, r_, r_prev_, u_, v_prev_, diff_, diag_sum_, row_norm2_, row_abs_, env_scalar_, env_theta2_;
  Array<unsigned char> env_active_;
  const DeviceBlockMatrix* w_matrix_ = nullptr;
  int solves_since_w_ = 0;
  // chains
  std::vector<Index> chain_ptr_host_, chain_nodes_host_;
  Index chain_band_ = 0;
  bool chains_dirty_ = false;
  const DeviceBlockMatrix* chain_matrix_ = nullptr;
  Array<Index> chain_ptr_, chain_nodes_, band_block_, factor_offset_;
  Array<Scalar> factor_, d_;
  Array<unsigned char> chain_ok_, in_contact_;
  std::vector<unsigned char> in_contact_host_;  // contact nodes and barycentric hosts
  // rigid groups
  Index num_rigid_ = 0, rg_max_node_ = -1;
  Array<Index> rg_trans_, rg_rot_, rg_ptr_, rg_node_;
  Array<Index> rg_body_ptr_, rg_inv_off_;
  Array<Scalar> rg_ao_inv_, rg_arm_, rg_kv_, rg_d_, f_, f_new_;
  std::vector<Index> rg_slot_body_host_;  // per virtual-node slot: its body within the group
  std::vector<Index> rg_slot_group_host_;
  RigidGroups rg_host_;                   // the groups as given (d_v is computed per contact set)
  std::vector<Index> rg_inv_off_host_;
  // the groups' own contacts (RigidContactView) and the sweep order of the others
  Array<Index> rc_ptr_, rc_contact_, rc_slot_, rc_body_, sweep_order_;
  std::vector<Index> sweep_color_ptr_;
  Index num_own_contacts_ = 0;
  // barycentric nodes
  Index num_bary_ = 0, num_bary_hosts_ = 0, bary_max_node_ = -1;
  Array<Index> bn_node_, bn_ptr_, bn_host_, bn_slot_, bh_node_, bh_ptr_, bh_vn_;
  Array<Scalar> bn_weight_, bn_kv_, bh_w_, bh_load_;
  std::vector<Scalar> bh_sum_host_;
  // virtual nodes with their own Gamma (rigid groups, barycentric nodes): never merged into
  // Frobenius groups; hosts of barycentric nodes: scalar w inside chains
  std::vector<Index> bary_vnodes_host_, bary_hosts_host_;  // rigid virtual nodes: rg_host_.node
  // body modes
  BodyModes modes_host_;
  Index num_modes_ = 0;     // patches in use (0 when off)
  Index listed_modes_ = 0;  // their nodes in this solve (contact nodes left out)
  Array<Index> bm_ptr_, bm_node_, bm_node_patch_, bm_node_slot_, bm_patch_body_, bm_body_ptr_, bm_c_off_, bm_t_ptr_,
      bm_t_patch_;
  Array<Scalar> bm_arm_, bm_t_, bm_ac_, bm_g_, bm_dv_, v_keep_;
};

}  // namespace condsim
