// The COND solver (paper Sec. III-IV, Alg. 1-3): given an SPD A (3x3 node blocks), b and nodal
// contacts, finds the mid-step velocity v and impulses lambda with A v = b + Jc^T lambda (eq. 1,
// 15) and the Signorini-Coulomb conditions (eq. 11) by the velocity fixed-point iteration
//   v* = v - W (A v - b)                    (eq. 20)
//   lambda = ProjectFC(-(Gamma)^-1 (Jc v* + phi))   per contact, in closed form (Alg. 2, eq. 25-26)
//   v <- v* + W Jc^T lambda                 (eq. 24)
// with optional Chebyshev acceleration (Alg. 3). One implementation for every backend; batched
// worlds stop per environment. The loop is this class; its mechanisms are components with their
// own arrays (cond_context.h): the step size W, chains, rigid groups, barycentric nodes and body
// modes. docs/solver.md documents parameters and conventions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "condsim/contacts.h"
#include "models/cond/chebyshev_state_ops.h"
#include "models/cond/cond_barycentric.h"
#include "models/cond/cond_body_modes.h"
#include "models/cond/cond_chains.h"
#include "models/cond/cond_context.h"
#include "models/cond/cond_ops.h"
#include "models/cond/cond_rigid.h"
#include "models/cond/cond_step_size.h"
#include "models/cond/contact_coloring.h"
#include "models/cond/projection.h"

namespace condsim {

// how the diagonal step matrix W is chosen (Sec. IV-C)
enum class StepSize {
  kFrobenius,    // per node, minimizes |I - W A|_F (IV-C1); equal within D-contact groups
  kBB1,          // Barzilai-Borwein alpha = s's / s'z per environment (IV-C2)
  kBB2,          // alpha = s'z / z'z
  kBBAlternate,  // BB1 and BB2 alternately
};
const char* ToString(StepSize s);
StepSize ParseStepSize(const std::string& name);

// when an environment stops (docs/solver.md "Stopping rule"); theta = |v^{l+1} - v^l|_2 < theta_th
// is always required
enum class StopRule {
  kStep,      // theta alone (Alg. 1 line 13): stops early where W A has eigenvalues near 0
  kMomentum,  // and the bodies' momentum error theta_p (net force residual over mass) <
              // momentum_factor * theta_th; needs SetMassDiagonal (theta alone without it)
};
const char* ToString(StopRule s);
StopRule ParseStopRule(const std::string& name);

// when the Chebyshev semi-iteration restarts (docs/solver.md "Chebyshev safeguard";
// chebyshev_state_ops.h ChebyshevBounds)
enum class ChebyshevSafeguard {
  kFixed,  // its residual grew to 10x its smallest, or no new smallest in 2 l_s iterations
  kRate,   // bounds scaled by the plain rate before it (up to 2 / (1 - rho) and 2 / sqrt(1 - rho)):
           // lets a slowly converging iteration (a refined body) finish its transient
};
const char* ToString(ChebyshevSafeguard s);
ChebyshevSafeguard ParseChebyshevSafeguard(const std::string& name);
Projection ParseProjection(const std::string& name);

struct CondParams {
  Projection projection = Projection::kStrict;  // strict (exact eq. 11) or proximal (CCP)
  StepSize step_size = StepSize::kFrobenius;
  int w_reuse_solves = 1;          // Frobenius: recompute A's row sums every k solves (IV-C1 reuse)
  double w_safeguard = 1.9;        // Frobenius: w <= this / (largest absolute row sum), so
                                   // lambda_max(W A) < 2 (Gershgorin); 0 = the paper's w as is
  double theta_threshold = 1e-6;   // theta_th [m/s]: stop an environment when |v^{l+1} - v^l| < it
                                   // (and the stop rule's theta_p < momentum_factor * it)
  StopRule stop_rule = StopRule::kMomentum;
  double momentum_factor = 100;    // kMomentum: theta_p's tolerance in units of theta_th (>= 1)
  int max_iterations = 1000;       // l_max
  int check_every = 1;             // k: the host reads theta (one small download) and decides which
                                   // environments stop every k iterations and at l_max; between
                                   // checks they iterate on (docs/solver.md "Convergence checks")
  bool chebyshev = true;           // Alg. 3
  int chebyshev_start = 10;        // l_s: plain iterations before acceleration starts (>= 2)
  double chebyshev_relax = 0.9;    // u in (0, 1]: under-relaxation of the accelerated update
  ChebyshevSafeguard chebyshev_safeguard = ChebyshevSafeguard::kFixed;
  double omega = 0;                // invertible contact: Gamma + omega I (Sec. III-E1), >= 0
  bool record_history = false;     // keep the residual of every check (iteration) in CondStats
  bool fused_passes = true;        // the fused vector passes (the CPU's chunked ones; CUDA's and
                                   // interleaved environments' per-DOF one; bitwise the separate
                                   // kernels; false: the separate kernels, for tests and profiles)
  bool body_modes = true;          // correct the motions of SetBodyModes patches exactly each
                                   // iteration (two-level W; docs/solver.md "Body modes")
  bool free_body_modes = true;     // also correct whole bodies with their contact nodes while
                                   // their contacts carry no impulse (docs/solver.md "Free bodies")
  bool truncated_modes = false;    // the patches also list contact nodes whose contacts are idle,
                                   // re-chosen every few iterations, with a feasibility-limited
                                   // step (docs/solver.md "Truncated modes")
  bool chain_gauss_seidel = true;  // chains: the free nodes solve after the contact nodes' step,
                                   // with their new velocities (block Gauss-Seidel; false: both
                                   // from v^l, docs/solver.md "Order of the chain step")
  int body_mode_patches = 32;      // patches per FEM body the World makes (1: rigid motions only)
  int body_mode_patch_nodes = 0;   // > 0: one patch per this many nodes of each FEM body when
                                   // that is more than body_mode_patches (a coarse space that
                                   // grows with the mesh)
  int body_mode_dense_patches = 128;  // bodies of at most this many patches: the coarse matrix
                                      // inverted densely on the backend; more: factorized sparse
                                      // on the backend (docs/solver.md "Sparse coarse solve")
  int body_mode_refresh = 1;       // body modes: invert the coarse matrices Z^T A Z every k solves
                                   // (>= 1) and when the patches change; in between the older
                                   // inverse (same fixed point, docs/solver.md "Patches")
  int rigid_sweeps = 32;           // Gauss-Seidel passes over each rigid group's own contacts per
                                   // iteration (docs/solver.md "Rigid groups"); 0 = the diagonal
                                   // solve with the group's Gamma = d_v
  // throws condsim::Error naming the bad field
  void Validate() const;
};

struct CondStats {
  int iterations = 0;                 // iterations of the slowest environment
  double residual = 0;                // largest final theta over environments [m/s]
  double momentum_error = -1;         // largest last theta_p (kMomentum) [m/s]; -1: not checked
  bool converged = false;             // every environment passed the stop rule (theta, theta_p)
  std::vector<int> env_iterations;
  std::vector<double> env_residual;
  std::vector<double> env_momentum_error;  // per environment the last theta_p (-1: not checked)
  std::vector<unsigned char> env_converged;  // per environment: it passed the stop rule (1 when left out)
  std::vector<int> failed_envs;       // environments whose iterate became NaN/Inf (left at
                                      // their last finite iterate; the others continue)
  std::vector<double> history;        // max theta over running environments, per check (per
                                      // iteration with check_every 1)
  Index num_contacts = 0;
  Index num_colors = 0;               // contact colors (1 when no node has two contacts)
  int chebyshev_restarts = 0;         // semi-iterations restarted after a residual increase
  double setup_seconds = 0;           // W and uploads
  double iterate_seconds = 0;         // the fixed-point loop
  BackendCounters loop_counters;      // what the fixed-point loop asked of the backend
};

class CondSolver {
 public:
  CondSolver(Backend* backend, const CondParams& params);
  ~CondSolver();

  const CondParams& params() const { return params_; }
  void set_params(const CondParams& p);
  // environment of every node (batched worlds); by default all nodes are environment 0.
  // Environments may interleave: each one's reductions run over its DOFs in their order, so an
  // environment's solve is bitwise what it gives alone
  void SetNodeEnvironments(const std::vector<Index>& node_env);
  // per environment whether the solves iterate it (empty: all); one left out keeps v as given
  // and reports 0 iterations (a batch's failed environment)
  void SetEnabledEnvironments(const std::vector<unsigned char>& enabled);
  // tests: keep the free-body level's correction when every free body is loaded (it is 0 then; by
  // default the level is left out from the check that reads it)
  void set_keep_loaded_free_level(bool on) { keep_loaded_free_level_ = on; }
  // the contacts of the next solves; impulses start at zero unless warm-started. The backend's
  // record is uploaded, or written by `writer` when given (it remakes fields there)
  void SetContacts(const ContactSet& contacts, ContactRecordWriter* writer = nullptr);
  // tests: the contact record on the backend, read back
  ContactSet BackendContacts() const;
  // tests: the barycentric nodes' record on the backend (after a solve: hload too), read back
  BarycentricHost BackendBarycentric() const { return bary_.Download(); }
  // tests: the body modes' listed nodes, halo and gates uploaded from the host, never made on the
  // backend; the patch level's record (or the free-body level's) on the backend read back
  void set_body_mode_list_on_backend(bool on) {
    modes_.set_list_on_backend(on);
    free_.set_list_on_backend(on);
  }
  BodyModeHost BackendBodyModes(bool free_level = false) const { return free_level ? free_.Download() : modes_.Download(); }
  // the contacts of the last SetContacts on the backend with their impulses (3 per contact) for
  // the backend's later stages
  ContactView contact_record() const { return ctx_.contacts.view(); }
  const Scalar* impulses_on_backend() const { return ctx_.lambda.data(); }
  // capacity for up to max_nodes nodes (the base nodes and the virtual nodes of `bounds`) and
  // the contacts of `bounds` in every array the contacts size (Array::Reserve): a later step
  // within the bounds allocates nothing
  void Reserve(const ContactBounds& bounds, Index max_nodes);
  // warm start (Sec. V-A5): initial impulses, 3 per contact (n, t1, t2)
  void SetImpulses(const std::vector<Scalar>& lambda);
  // chains (cond_chains.h): chain c holds nodes[ptr[c] .. ptr[c+1]), band = coupling reach in
  // nodes; a node belongs to at most one chain. Frobenius W only.
  void SetChains(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band);
  // rigid bodies answered exactly (cond_rigid.h); the virtual nodes must not be in chains;
  // with `source` (SystemMatrix::virtual_nodes_on_backend of the same virtual nodes) their virtual
  // nodes, arms and gains are made on the backend
  void SetRigidGroups(const RigidGroups& groups, const VirtualNodesOnBackend* source = nullptr);
  // tests: the rigid groups' record on the backend, read back
  RigidGroupHost BackendRigidGroups() const { return rigid_.Download(); }
  // virtual nodes on deformable hosts (cond_barycentric.h); hosts must not be rigid-group
  // nodes or virtual nodes themselves; with `source` (SystemMatrix::virtual_nodes_on_backend of
  // the same virtual nodes) their record is made on the backend, nothing uploaded
  void SetBarycentricNodes(const BarycentricNodes& nodes, const VirtualNodesOnBackend* source = nullptr);
  // patches of deformable bodies whose motions are corrected exactly (cond_body_modes.h);
  // Frobenius W only
  void SetBodyModes(const BodyModes& modes);
  // the momentum check of StopRule::kMomentum (docs/solver.md "Stopping rule"): the mass part
  // M-hat of A's diagonal per DOF (eq. 9's form: 2 m / t per DOF of a node of mass m), >= 0; 0
  // leaves a DOF out (virtual nodes, rotations, rigid bodies); DOFs past the end are 0.
  // body_start: the first node of each body, ascending (a body runs to the next one; empty: one
  // body per environment). An empty `mass` turns the check off
  void SetMassDiagonal(const std::vector<Scalar>& mass, const std::vector<Index>& body_start = {});
  // solves A v = b + Jc^T lambda with eq. 11; v holds the initial guess (warm start) on entry
  // and the mid-step velocity on return. A must be square with 3x3 blocks.
  CondStats Solve(DeviceBlockMatrix& a, const Array<Scalar>& b, Array<Scalar>* v);
  // contact impulses of the last solve (3 per contact, contact frame)
  std::vector<Scalar> Impulses() const;
  const Array<Scalar>& impulses() const { return ctx_.lambda; }
  // the step sizes W of the last solve (3 per node)
  const Array<Scalar>& step_weights() const { return ctx_.w; }
  // |A v - b - Jc^T lambda| / |b| (Remark 1)
  double ConsistencyResidual(DeviceBlockMatrix& a, const Array<Scalar>& b, const Array<Scalar>& v);

 private:
  struct Loop;
  // sizes the per-node arrays for A; per new contact set: validation, the contact-node marks,
  // the Frobenius groups and the components' contact data
  void Prepare(DeviceBlockMatrix& a);
  void PrepareContacts();
  // one iteration's new iterate u from v: the W step (eq. 20), then the contact step (Alg. 2,
  // eq. 24) with the components' answers before and after the sweeps
  // (u_ready: the W step already ran in the residual pass)
  void Iterate(int l, const Array<Scalar>& b, const Array<Scalar>& v, bool u_ready);
  // r = A v - b (the rows of running environments); returns whether it also computed the W
  // step u = v - W r, which it does in the same pass when the fused passes run and the step
  // starts from v itself with a fixed W (no body-mode correction, chains or Barzilai-Borwein)
  bool Residual(int l, DeviceBlockMatrix& a, const Array<Scalar>& b, const Array<Scalar>& v);
  // the fused passes' chunk tables for this node layout (fused_) and the restore's flags (both)
  void PrepareFused(const std::vector<Index>& dof_offsets);
  // the fused pass of Chebyshev, theta and the commit (cond_fused.cpp): theta^2's chunk sums in
  // chunk_sum_ (CondChebyshevStepOp folds them)
  void FusedThetaCommit(Array<Scalar>* v);
  // the per-DOF pass of Chebyshev, u - v (into diff_) and the commit (fused_diff_)
  void FusedDiffCommit(Array<Scalar>* v);
  // the end-of-iteration passes' arguments (Chebyshev now if Accelerate left it to them)
  CondIterationEnd IterationEnd(Array<Scalar>* v);
  // after either pass: the failed environments take back v^l
  void FusedRestore(const std::vector<unsigned char>& failed, Array<Scalar>* v);
  void RespondToForces(const Array<Scalar>& b, bool before_sweep);
  // Chebyshev (Alg. 3 line 8) on u with the nu the last Converge computed on the backend
  void Accelerate(int l, const Array<Scalar>& v);
  // theta per environment (Alg. 1 line 12), the Chebyshev state machine (rho, restarts and the
  // next nu, Alg. 3 line 7, on the backend: CondChebyshevStepOp), u accepted as v, and, at the
  // host's checks (every check_every iterations and at l_max), the environments that stop
  // (line 13) or failed
  void Converge(int l, Loop* loop, Array<Scalar>* v, CondStats* st);
  // the momentum check of the environments whose theta passed: theta_p from r = A v - b (computed
  // by the caller) and the current impulses; those within momentum_factor * theta_th stop
  void CheckMomentum(Loop* loop, CondStats* st);
  // the bodies' DOF ranges, masks and masses for this node layout
  void PrepareMomentum();
  bool momentum_check() const { return params_.stop_rule == StopRule::kMomentum && !body_mass_.empty(); }
  // the running environments to the backend, with the SpMV's row flags (batches)
  void SetActive(const std::vector<unsigned char>& active);
  const Array<unsigned char>* row_mask() const { return ctx_.num_envs > 1 ? &row_active_ : nullptr; }

  Backend* backend_;
  CondParams params_;
  std::unique_ptr<CondKernels> kernels_;
  CondContext ctx_;
  bool contacts_dirty_ = true;
  // per DOF / per environment arrays of the loop
  Array<Scalar> v_prev_, diff_, env_nu_, env_theta2_;
  std::vector<Index> node_env_held_;  // what ctx_.node_env holds (AssignSuffix)
  Array<Scalar> env_check_;  // per environment theta^2, the Chebyshev restarts, failed; then the truncated
                             // modes' refresh request (one read at a check)
  Array<CondChebyshevEnv> env_chebyshev_;  // per environment the Chebyshev state (chebyshev_state_ops.h)
  Array<unsigned char> row_active_;  // per node: its environment still iterates (num_envs > 1)
  // the fused passes (cond_ops.h: CondResidualOp, CondChebyshevThetaCommitOp): on the CPU with
  // environments stored contiguously, one pass each for r (+ the W step) and for Chebyshev +
  // theta + commit instead of ~8 separate kernels; CUDA and interleaved environments run the
  // Chebyshev update, theta's difference and the commit in one per-DOF pass
  // (CondChebyshevDiffCommitOp) and theta by the backend's segmented dot. Chunks of the environments' DOF ranges (CondChebyshevStepOp finds each
  // environment's by its range), their theta^2 sums, and per environment a flag for CondRestoreOp
  bool fused_layout_ = false;  // the backend and node layout allow them
  bool fused_ = false;         // and this solve runs them (CondParams::fused_passes)
  bool fused_diff_ = false;    // else the per-DOF Chebyshev-diff-commit pass (CondChebyshevDiffCommitOp)
  bool chebyshev_now_ = false;  // Accelerate left the Chebyshev update (env_nu_) to the fused pass
  Array<Index> chunk_begin_, chunk_end_;
  Array<Scalar> chunk_sum_;
  std::vector<Index> chunk_begin_host_, chunk_end_host_;
  Array<unsigned char> env_flag_;
  // the momentum check: SetMassDiagonal's values, per body its DOF range, the masks of its
  // x, y, z DOFs with mass, its mass, its nodes with mass and its environment
  std::vector<Scalar> mass_host_;
  std::vector<Index> body_start_;
  SegmentOffsets body_offsets_;
  Array<Scalar> body_mask_[3], body_sum_, body_sum3_;  // body_sum3_: the 3 components' sums, read at once
  Array<unsigned char> body_massive_;                  // per body: all its DOFs have mass (MomentumMaskOp)
  std::vector<Scalar> body_sum_host_;
  std::vector<double> body_mass_, body_nodes_;
  std::vector<Index> body_env_;
  bool mass_dirty_ = false;
  std::unique_ptr<ContactColoringDevice> coloring_;  // the contacts' colors, made on the backend
  CondStepSize step_{&ctx_};
  CondBarycentric bary_{&ctx_};
  CondRigidGroups rigid_{&ctx_};
  CondBodyModes modes_{&ctx_};
  CondBodyModes free_{&ctx_};  // the free-body level: whole bodies with their idle contact nodes
  // whether iteration l takes the free-body level's correction: from the second iteration on,
  // until every free body is loaded (free_still_, read with a check; its correction is 0 then)
  bool FreeLevel(int l) const { return free_.correcting() && l > 0 && !free_still_; }
  bool free_still_ = false;
  bool keep_loaded_free_level_ = false;
  CondChains chains_{&ctx_};
  // the components in hook order
  std::vector<CondComponent*> parts_{&bary_, &rigid_, &free_, &modes_, &chains_};
};

}  // namespace condsim
