// Body modes of the COND loop (docs/solver.md, "Body modes"): deformable bodies whose slow
// motions the solver corrects exactly each iteration (a Galerkin step on Z = [I, -[r]x] per node
// before the W step). A body is split into patches, each moving rigidly in Z: one patch gives the
// body's six rigid motions (with the diagonal W these move at the rate 2M/t : stiffness, 10^-4
// per iteration for a stiff FEM ball at t = 10 ms); several give piecewise-rigid fields that also
// reach bending and stretching of thin bodies. The fixed point is unchanged. Each solve leaves out
// the contact nodes (and barycentric virtual nodes with their hosts), so the modes never move a
// contact node and the diagonal contact step is untouched; a patch left with fewer than 4 nodes
// is left out too. A node belongs to at most one patch. Frobenius W only. A second instance, the
// free-body level (SetFreeBodies), keeps the contact nodes in one patch per body and acts only
// while the body's contacts are idle (docs/solver.md "Free bodies"). With truncated modes
// (CondParams::truncated_modes) the patch level also lists contact nodes whose contacts are idle,
// re-chosen during the solve (Refresh), with a feasibility-limited step (docs/solver.md
// "Truncated modes").
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/cond/body_mode_setup_ops.h"
#include "models/cond/body_mode_sparse_ops.h"
#include "models/cond/cond_context.h"

namespace condsim {

// patches per body at most (GridPatches also makes at most one per 16 nodes)
constexpr int kMaxBodyModePatches = 1 << 20;
// patches per body at most for a dense coarse matrix ((6 m)^2, inverted on the backend every
// CondParams::body_mode_refresh solves; BodyModeInvertOp runs 2 (6 m) + 6 lane phases); a body of
// more patches (or of more than CondParams::body_mode_dense_patches) has its sparse Z^T A Z
// factorized and solved on the backend (CondBodyModes' sparse coarse solve)
constexpr int kMaxDenseBodyModePatches = 128;
static_assert(6 * kMaxDenseBodyModePatches <= kBodyModeMaxCoarse, "BodyModeInvertOp's phases must cover the largest dense body");

// the patches as given to CondSolver::SetBodyModes
struct BodyModes {
  std::vector<Index> ptr{0};   // patch p: node[ptr[p] .. ptr[p+1])
  std::vector<Index> node;
  std::vector<Scalar> arm;     // 3 per listed node: position - the patch's reference point [m]
  std::vector<Index> body_ptr;  // body k: patches body_ptr[k] .. body_ptr[k+1); empty: one
                                // patch per body
  std::vector<Scalar> body_arm;  // optional, 3 per listed node: position - the body's mean
                                 // position (AppendBodyPatches); the free-body modes need it
  // instead of arm and body_arm (both then empty): the same on the backend (BodyPatchArms), 3
  // per listed node, read by every solve until the next SetBodyModes; the solver gathers its
  // used arms from them there, so no arm is uploaded. device_body_arm is optional
  const Array<Scalar>* device_arm = nullptr;
  const Array<Scalar>* device_body_arm = nullptr;
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
// the same without arms (node, ptr and body_ptr only)
void AppendBodyPatchNodes(const std::vector<Index>& patch, Index first, BodyModes* modes);

// each patch's entries ptr[p] .. ptr[p+1) (listed nodes, or gate contacts) cut into chunks of
// BodyModeChunkLength(its size) from its start: chunk_ptr (per patch), chunk_begin (per chunk, and the end) and
// optionally chunk_patch (per chunk); BodyModeView's chunk_* and gate_chunk_* fields
void CutBodyModeChunks(const std::vector<Index>& ptr, std::vector<Index>* chunk_ptr, std::vector<Index>* chunk_begin,
                       std::vector<Index>* chunk_patch = nullptr);

// AppendBodyPatches' arms and body arms computed on the backend from the bodies' positions there,
// bitwise the host's (BodyPatchCentreOp, BodyPatchArmOp): no position comes to the host
class BodyPatchArms {
 public:
  explicit BodyPatchArms(Backend* backend);
  ~BodyPatchArms();
  // the patches of AppendBodyPatchNodes (arms ignored), `first` its first node per body; uploaded
  // only when node, ptr, body_ptr or first changed
  void SetPatches(const BodyModes& modes, const std::vector<Index>& first);
  // arm and body_arm from x[k], body k's positions (3 per node), as AppendBodyPatches
  void Compute(const std::vector<const Array<Scalar>*>& x);
  // 3 per listed node of SetPatches' modes (BodyModes::device_arm, device_body_arm)
  const Array<Scalar>& arm() const { return arm_; }
  const Array<Scalar>& body_arm() const { return body_arm_; }

 private:
  Backend* backend_;
  std::unique_ptr<CondKernels> kernels_;
  std::vector<Index> ptr_, node_, body_ptr_, first_;  // what the device arrays hold
  Array<Index> ptr_d_, local_, entry_patch_;
  Array<Scalar> centre_, body_centre_, arm_, body_arm_;
};

CONDSIM_RECORD_HOST(BodyModeHost, CONDSIM_BODY_MODE_FIELDS)
CONDSIM_RECORD_ARRAYS(BodyModeArrays, BodyModeView, CONDSIM_BODY_MODE_FIELDS)
CONDSIM_RECORD_HOST(BodyModeFactorHost, CONDSIM_BODY_MODE_FACTOR_FIELDS)
CONDSIM_RECORD_ARRAYS(BodyModeFactorArrays, BodyModeFactorView, CONDSIM_BODY_MODE_FACTOR_FIELDS)

// T's rows for the record's listed and halo rows, made on the backend (BodyModeCouplingOp,
// BodyModeRowOffsetOp): a count per row, the rows stored in their nodes' order (node_row:
// BodyModeRowOp's) by a scan over the nodes (its total, 4 B, read back: the size of T), then the
// patches each row reaches; sets the record's t_ptr, t_end and t_patch, returns the entries
Index MakeRowsOfT(CondKernels& k, Backend* b, BodyModeArrays* arrays, Index listed, Index rows, Index nodes, const Index* row_ptr,
                  const Index* col_idx, const Index* node_row, Array<Index>* offset);

// a sparse body's factor (body_mode_internal.h)
struct SparseCoarseFactor;

class CondBodyModes : public CondComponent {
 public:
  explicit CondBodyModes(CondContext* ctx);
  ~CondBodyModes() override;
  void Set(const BodyModes& modes);
  // the free-body level instead (docs/solver.md "Free bodies"): one patch per body of `modes`
  // (arms from body_arm; none without it) that keeps its contact nodes, for the bodies touched
  // by nodal contacts only, corrected only in iterations where none of its contacts carries an
  // impulse
  void SetFreeBodies(const BodyModes& modes);
  // when active: capacity for up to max_nodes nodes and the contacts of `bounds` (per node its
  // patch, slot, listed and halo rows and 3 arm values; per contact a gate entry)
  void Reserve(const ContactBounds& bounds, Index max_nodes);
  bool active() const override { return modes_.size() > 0; }
  // the patches of this solve (less the nodes the contact step touches) and the inverses of
  // their coarse matrices Z^T A Z (on the backend; kept for body_mode_refresh solves while the
  // patches stay the same)
  void Prepare(DeviceBlockMatrix& a) override;
  // whether this solve corrects anything
  bool correcting() const { return num_patches_ > 0; }
  // tests: the listed nodes uploaded from the host's selection, never made on the backend
  void set_list_on_backend(bool on) { list_on_backend_ = on; }
  // tests: the record on the backend, read back
  BodyModeHost Download() const {
    BodyModeHost h;
    arrays_.Download(&h);
    return h;
  }
  // a copy of v corrected in the patches' modes, v + Z dv with dv = -(Z^T A Z)^-1 Z^T r, with
  // r = A v - b updated to match (the W step starts from it; v itself stays for Chebyshev)
  const Array<Scalar>& Corrected(const Array<Scalar>& v);
  // the same correction and the W step in one pass: u = (v + Z dv) - W (r + T dv) (eq. 20), bitwise
  // Corrected followed by FpiStepOp; the corrected copy of v is not made, and r is updated only
  // with keep_r (the solver's fused passes, when nothing else in the iteration reads them)
  void CorrectedStep(const Array<Scalar>& v, const Array<Scalar>& w, bool keep_r, Array<Scalar>* u);
  // truncated modes (CondParams::truncated_modes; the patch level only): at the refresh
  // iterations l of this solve, re-chooses the patches with the contact nodes whose contacts are
  // all idle S-contacts (lambda = 0) with a positive slack J_n v + phi, and rebuilds the coarse
  // inverses when that set changed
  // the rebuilds at the refreshes; returns whether the patches changed
  bool Refresh(int l, const Array<Scalar>& v);
  // before each solve's loop: with truncated modes, the backend scalars (one per environment, in
  // the solver's check buffer, read at each convergence check) where a cut step asks for a
  // refresh, cleared here; without them none (refresh_flag_set() is false)
  void StartSolve(Scalar* refresh_flag);
  // free bodies: each correction writes to `slot` whether every patch is loaded
  // (BodyModeAllLoadedOp: from then on its correction is 0), read with the host's check; null: none
  void SetStillFlag(Scalar* slot);
  bool still_flag_set() const { return still_flag_ != nullptr; }
  // the check's read of those flags: the environments that asked refresh at their next
  // iteration that may (and the flags are cleared)
  void RefreshRequested(const Scalar* flags);
  // after a Refresh that returned true: per environment (backend), whether its listed nodes
  // changed (its Chebyshev semi-iteration starts afresh)
  const unsigned char* changed_envs() const { return env_changed_.data(); }
  bool refresh_flag_set() const { return refresh_flag_ != nullptr; }

 private:
  // this solve's patches: the listed nodes that the contact step does not touch, patches of at
  // least 4 such nodes; fills host's ptr, node, arm, node_patch, node_slot, patch_body, body_ptr
  void SelectPatches(BodyModeHost* host) const;
  // the halo (nodes left out whose row of A reaches a patch) and per body its coarse matrix's
  // offset (c_off); the patches each row of T reaches (t_ptr, t_end, t_patch) are made on the backend.
  // Returns whether the halo's candidates are the contact step's node flags (the nodes of contacts,
  // none with its own Gamma, and no other node flagged), so that BodyModeHaloFlagOp makes it
  bool Coupling(const BlockPattern& pattern, BodyModeHost* host) const;

  // whether this solve's patches may list idle contact nodes (truncated modes)
  bool truncating() const;
  // whether SelectPatches' listed nodes are those BodyModeKeepOp makes from the contact step's
  // flags (the patch level, no admitted contact node, no node of the patches with its own Gamma)
  bool ListableOnBackend() const;
  // the record's listed nodes made on the backend (BodyModeKeepOp, a scan, BodyModeListOp), its
  // halo of `halo` nodes from the per-node maps and A's pattern (BodyModeHaloFlagOp), its `entries`
  // gate contacts (BodyModeGateKeyOp, a sort); body_mode_lists.cpp
  void MakeListOnBackend();
  void MakeHaloOnBackend(DeviceBlockMatrix& a, Index halo);
  void MakeGatesOnBackend(Index entries);
  // dv = -(Z^T A Z)^-1 Z^T r for v (gated and limited as the level asks), into dv_
  void Correction(const Array<Scalar>& v);
  // the sparse bodies' A_c (BodyModeSparseMatrixOp) factorized on the backend for the bodies of
  // this solve whose refresh is due, the factors' structure made on the host and uploaded when a
  // block pattern or the sparse bodies changed (Prepare)
  void FactorSparse(const BlockPattern& pattern, const BodyModeHost& used, const std::vector<unsigned char>& refresh_body);
  // the sparse bodies' dv from this solve's g (BodyModeSparseSolveOp)
  void SolveSparse();
  BodyModeFactorValues FactorValues();
  // capacity for the scratch sums of any selection of modes_' nodes and patches
  void ReserveSelections();
  // the correction's data on v (and r) for BodyModeApplyStepOp
  BodyModeCorrection ApplyData(Array<Scalar>* v);

  BodyModes modes_;
  bool free_ = false;      // the free-body level (SetFreeBodies)
  // truncated modes: per node, a contact node listed in its patch this solve (empty: none);
  // the matrix of this solve, for the rebuilds at the refreshes
  std::vector<unsigned char> admit_;
  DeviceBlockMatrix* a_ = nullptr;
  bool refreshing_ = false;
  // per environment: a step was cut below kRefreshAlpha (refresh at its next iteration that may),
  // its last refresh, and whether the last refresh changed its listed nodes (host, backend)
  std::vector<unsigned char> refresh_due_;
  std::vector<int> last_refresh_;
  std::vector<unsigned char> env_changed_host_;
  Array<unsigned char> env_changed_;
  Index admitted_ = 0;  // contact nodes listed
  Index num_patches_ = 0;  // patches in use (0 when off)
  Index listed_ = 0;       // their nodes in this solve
  Index rows_ = 0;         // rows of T: the listed nodes and the halo
  BodyModeArrays arrays_;
  Array<Scalar> t_, ac_, g_, dv_, v_keep_, alpha_;
  Array<Index> node_row_;  // per node its row of T, or -1 (BodyModeRowOp)
  Array<Index> t_offset_;  // per node + 1: its row's first entry of T (MakeRowsOfT)
  Array<Scalar> node_arm_;  // 3 per node: the listed nodes' arms in node order (BodyModeNodeArmOp)
  Array<Scalar> partial_;  // 6 per chunk of listed nodes (BodyModeResidualChunkOp)
  Array<Scalar> solve_lanes_;  // BodyModeSolveOp::kLanes per coarse row (its warps' partial sums)
  Index chunks_ = 0;
  // per chunk of the patches' gate contacts (BodyModeGateChunkOp, BodyModeContactForceChunkOp,
  // BodyModeLimitChunkOp): a flag, 6 force sums, a step limit
  Array<Scalar> gate_partial_, gate_alpha_;
  Array<unsigned char> gate_hit_;
  Index gate_chunks_ = 0;
  Array<unsigned char> loaded_;   // free bodies: per patch, a contact carried an impulse this solve
  Array<unsigned char> blocked_;  // truncated modes: per contact, it limited a step
  Array<unsigned char> idle_;     // truncated modes: per contact, BodyModeIdleOp's test at a refresh
  Scalar* refresh_flag_ = nullptr;  // truncated modes: StartSolve's slot
  Scalar* still_flag_ = nullptr;    // free bodies: SetStillFlag's slot
  // the coarse inverses (BodyModeInvertOp), one slot per body of SetBodyModes ((6 m)^2 for its m
  // patches, so a body keeps its slot whatever the other bodies do), and per body the listed
  // nodes its inverse was made for and the solves since: each body's inverse is made again every
  // CondParams::body_mode_refresh solves or when its listed nodes change (per body, so that an
  // environment of a batch steps as it does alone)
  Array<Scalar> coarse_work_, coarse_scale_;
  Array<unsigned char> coarse_ok_, coarse_refresh_;
  std::vector<Index> slot_off_;                 // per body of modes_: its slot in ac_
  std::vector<std::vector<Index>> coarse_key_;  // per body of modes_: patch sizes and nodes
  std::vector<int> coarse_age_;                 // per body of modes_ (-1: no inverse yet)
  BodyModeHost uploaded_;   // what arrays_ holds (its node_patch and node_slot made there: BodyModeNodeMapOp)
  Index mapped_nodes_ = -1;  // the nodes of A those maps were made for
  std::array<std::uint64_t, 4> coupled_pattern_{};  // A (address, pattern version, rows, blocks) t_ptr and t_patch were made for
  Index t_entries_ = 0;                // entries of t_patch (T holds 18 scalars per entry)
  Array<Index> source_;      // device arms: per node of A its entry in modes_ (-1: none)
  // the listed nodes on the backend: modes_' nodes and ptr there (up once per set of patches, at
  // the first solve that lists them there), per entry whether it is listed (scanned); off in tests
  Array<Index> set_node_, set_ptr_, keep_;
  Array<Index> halo_flag_;  // per node + 1: a halo node (scanned: its place)
  Array<std::uint64_t> gate_key_;  // per contact 2: its sides' gate entries (BodyModeGateKeyOp)
  Array<Index> gate_order_;
  bool set_on_backend_ = false;
  bool list_on_backend_ = true;
  // the sparse coarse solve: per body of modes_ its factor (null: a dense body; its A_c blocks
  // and pattern on the backend with it); this solve's sparse bodies as {first patch, end patch,
  // body of modes_}; the factors' structure on the backend, the sparse bodies it was made for,
  // the factors' numbers (BodyModeSparseFactorOp) and the solve's work rows
  std::vector<std::unique_ptr<SparseCoarseFactor>> sparse_coarse_;
  std::vector<std::array<Index, 3>> sparse_used_, factored_used_;
  BodyModeFactorArrays factor_;
  Array<Scalar> factor_scale_, factor_diag_, factor_val_, factor_y_;
  Array<unsigned char> factor_ok_;
};

}  // namespace condsim
