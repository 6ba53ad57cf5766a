// The step matrix W of the COND loop (Sec. IV-C): the Frobenius-norm w per node, shared within
// groups of nodes linked by D-contacts, with the Gershgorin safeguard; or a Barzilai-Borwein
// scalar per environment. Components with their own Gamma set W on their nodes afterwards.
#pragma once

#include <vector>

#include "models/cond/cond_context.h"

namespace condsim {

class CondStepSize {
 public:
  explicit CondStepSize(CondContext* ctx) : ctx_(ctx) {}

  // per-node and per-environment arrays for a new node layout; the next W is recomputed
  void Resize();
  // capacity for up to `nodes` nodes (Array::Reserve)
  void Reserve(Index nodes);
  // W is recomputed at the next Compute (a component's rows changed)
  void Invalidate() { w_matrix_ = nullptr; }
  // the Frobenius groups of the current contacts: union-find over D-contacts, leaving out the
  // virtual nodes with their own Gamma (own[k] = 1; merging them would give their partner a w of
  // order 1 / kv); groups in order of their smallest node, nodes ascending within a group;
  // uploaded only when they changed (every step's contacts call it)
  void Group(const std::vector<unsigned char>& own);
  // W for a solve of A: A's per-node sums with the components' rows, the groups' w, then the
  // components' Gamma. The sums are reused for w_reuse_solves solves of one matrix object and
  // pattern, also when its values changed in between (IV-C1: W changes little from step to
  // step; the fixed point does not depend on W); a new matrix, pattern or node layout, or
  // Invalidate, recomputes them
  void Compute(DeviceBlockMatrix& a, const std::vector<CondComponent*>& parts);
  // Barzilai-Borwein, iteration l >= 1: W = alpha_e I per environment from s = v - v_prev and
  // z = A s = r - r_prev (IV-C2); then r_prev = r. Frobenius: nothing.
  void Update(int l, const Array<Scalar>& v, const Array<Scalar>& v_prev);

 private:
  CondContext* ctx_;
  Array<Index> group_ptr_, group_nodes_;
  std::vector<Index> group_ptr_host_, group_nodes_host_;  // what group_ptr_ and group_nodes_ hold
  Index num_groups_ = 0;
  bool singletons_ = false;  // every node its own group: group_ptr_ and group_nodes_ not used
  Array<Scalar> diag_sum_, row_norm2_, row_abs_;  // per node
  const DeviceBlockMatrix* w_matrix_ = nullptr;
  std::uint64_t w_pattern_ = 0;  // w_matrix_'s pattern_version() when the sums were made
  int solves_since_w_ = 0;
  // Barzilai-Borwein: r of the previous iteration, s, and alpha per environment
  Array<Scalar> r_prev_, s_, alpha_;
  std::vector<Scalar> alpha_host_;
};

}  // namespace condsim
