// The global system of one step: the parts of a scene (FEM bodies, rod cables, rigid bodies,
// each a block pattern at a node offset, batched environments side by side) plus the virtual
// nodes of the step (eq. 15):
//   A = [[A_o + kv Jv^T Jv, -kv Jv^T], [-kv Jv, kv I]],   b = [b_o; 0]
// Virtual node k is global node num_base_nodes() + k. The parts assemble into their own
// matrices; Assemble() copies their values into the global pattern (a block map, no atomics)
// and adds the eq. 15 terms by gathers in a fixed order, so results are bitwise reproducible.
// The pattern merge is host-side integer work, redone only when the virtual nodes change; the
// backend makes the same index arrays from the virtual nodes' hosts (only those go up).
#pragma once

#include <memory>
#include <vector>

#include "condsim/backend.h"
#include "condsim/block_sparse.h"
#include "models/system/virtual_nodes.h"

namespace condsim {

class SystemKernels;

class SystemMatrix {
 public:
  explicit SystemMatrix(Backend* backend);
  ~SystemMatrix();

  // registers a part with a square 3x3-block pattern; returns its first global node
  Index AddPart(const BlockPattern& pattern);
  Index num_parts() const { return static_cast<Index>(parts_.size()); }
  Index part_offset(Index p) const { return part_offset_.at(std::size_t(p)); }
  Index num_base_nodes() const { return base_nodes_; }
  Index num_virtual() const { return virtual_.size(); }
  Index num_nodes() const { return base_nodes_ + virtual_.size(); }
  const VirtualNodeSet& virtual_nodes() const { return virtual_; }

  // the virtual nodes of the coming solves (host nodes in global numbering, below
  // num_base_nodes()); builds the global pattern and the eq. 15 term lists
  void SetVirtualNodes(const VirtualNodeSet& vn);
  // A and b from the parts' matrices and right-hand sides (AddPart order) and eq. 15
  void Assemble(const std::vector<const DeviceBlockMatrix*>& a, const std::vector<const Array<Scalar>*>& b);
  DeviceBlockMatrix& matrix() { return *matrix_; }
  const Array<Scalar>& rhs() const { return b_; }

  // v (resized to 3 num_nodes()) from the parts' velocities, virtual nodes at Jv v_o (the
  // warm start of Sec. V-A5)
  // capacity for the virtual nodes of `bounds` (after the first SetVirtualNodes): the merged
  // pattern, the rhs, the eq. 15 term lists, J and kv; and v of GatherVelocity
  void Reserve(const ContactBounds& bounds, Array<Scalar>* v);
  void GatherVelocity(const std::vector<const Array<Scalar>*>& part_v, Array<Scalar>* v);
  // part p's segment of the global v
  void ScatterVelocity(Index part, const Array<Scalar>& v, Array<Scalar>* part_v);
  // whether the merged pattern and the eq. 15 term lists are made on the backend from the virtual
  // nodes' hosts (the default; every host-host term on a base block) and the Jacobian blocks from
  // their compact form, else uploaded from the host's merge (tests compare the two)
  void set_make_on_backend(bool on) { make_on_backend_ = on; }
  // the virtual nodes on the backend (hosts, gains) with their compact Jacobians, for the solver's
  // and the world's records to be made from; the compact fields null when the blocks went up whole
  // (one not of the compact forms)
  const VirtualNodesOnBackend& virtual_nodes_on_backend() const { return on_backend_; }

 private:
  // the index arrays of the merge from vn_ptr_ and vn_host_ on the backend (p: the host's merged
  // pattern, for its sizes and the matrix's host copy)
  void MakeOnBackend(const BlockPattern& p);
  // jac_ from the set's blocks
  void SetJacobians(const VirtualNodeSet& vn);
  // on_backend_ from the current arrays
  void ViewOnBackend();

  Backend* backend_;
  std::unique_ptr<SystemKernels> kernels_;
  std::vector<BlockPattern> parts_;
  std::vector<Index> part_offset_, part_block_offset_;
  Index base_nodes_ = 0;
  BlockPattern base_;  // the parts side by side
  VirtualNodeSet virtual_;
  std::unique_ptr<DeviceBlockMatrix> matrix_;
  Array<Scalar> b_;
  // block maps (part blocks in AddPart order -> global blocks) and eq. 15 terms
  Array<Index> block_map_, target_block_, term_ptr_, term_a_, term_b_, term_vn_, vn_ptr_, vn_host_;
  Array<int> term_kind_;
  // their host copies (uploaded again only when they change)
  std::vector<Index> host_block_map_, host_target_, host_term_ptr_, host_ta_, host_tb_, host_tvn_, host_vn_ptr_,
      host_vn_host_;
  std::vector<int> host_kind_;
  Array<Scalar> jac_, kv_;
  Index num_targets_ = 0;
  bool make_on_backend_ = true;
  // MakeOnBackend: the base pattern, the terms in the host's order and sorted (keys, original
  // order, heads and their scan), the targets' keys, the merged rows
  Array<Index> base_row_ptr_, base_col_, term_offset_, term_order_, fill_a_, fill_b_, fill_vn_, term_head_, term_target_,
      row_ptr_, first_new_, col_;
  Array<int> fill_kind_;
  Array<std::uint64_t> term_key_, target_key_;
  // SetJacobians: per entry its kind (0: w I, 1: -[r]x) and its first parameter; w or r, packed
  Array<unsigned char> jac_kind_;
  Array<Index> jac_offset_;
  Array<Scalar> jac_param_;
  std::vector<unsigned char> jac_kind_host_;
  std::vector<Index> jac_offset_host_;
  std::vector<Scalar> jac_param_host_;
  bool compact_ = false;  // the blocks went up in their compact form
  VirtualNodesOnBackend on_backend_;
};

}  // namespace condsim
