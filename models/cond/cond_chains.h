// Chains of the COND loop (docs/solver.md, "Chains"): ordered node lists whose part of A is
// block-banded with reach `band` nodes (a rod: its nodes in order, band 3). W on a chain's
// contact-free nodes is the exact inverse of that sub-system (banded Cholesky, ChainFactorOp),
// which makes stiff cables converge in a few iterations; contact nodes keep the scalar
// Frobenius w (Gamma stays diagonal, Prop. 3). Frobenius W only.
#pragma once

#include <vector>

#include "models/cond/chain_ops.h"
#include "models/cond/cond_context.h"

namespace condsim {

CONDSIM_RECORD_HOST(ChainHost, CONDSIM_CHAIN_FIELDS)
CONDSIM_RECORD_ARRAYS(ChainArrays, ChainRecord, CONDSIM_CHAIN_FIELDS)

// the chains' record for A's pattern: per chain position the band's block indices (-1 outside its
// chain or the pattern) and each chain's factor offset; throws when a node is not a node of A
ChainHost MakeChainHost(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band, const BlockPattern& p);

class CondChains : public CondComponent {
 public:
  using CondComponent::CondComponent;
  // chain c holds nodes[ptr[c] .. ptr[c+1]); a node belongs to at most one chain
  void Set(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band);
  // capacity for up to `nodes` nodes (Array::Reserve)
  void Reserve(Index nodes) {
    d_.Reserve(ctx_->backend, 3 * nodes);
    y_.Reserve(ctx_->backend, 3 * nodes);
  }
  bool active() const override { return !ptr_.empty(); }
  void Check() const override;
  // the band's blocks of A (when the chains or the matrix object changed), then the factors
  void Prepare(DeviceBlockMatrix& a) override;
  // d = W r with the chains' exact blocks (the scalar w elsewhere), then u = start - d (eq. 20)
  void Step(const Array<Scalar>& start);
  // Gauss-Seidel form (CondParams::chain_gauss_seidel): u already holds the contact nodes' new
  // velocities (and start - w r elsewhere); the free nodes solve with them:
  // u_C = start_C - A_CC^-1 (r_C + A_CN (u_N - start_N))
  void Couple(const Array<Scalar>& start);

 private:
  ChainView View() const { return ChainView{arrays_.view(), ctx_->in_contact.data(), band_}; }

  std::vector<Index> ptr_, nodes_;
  Index band_ = 0;
  bool dirty_ = false;
  const DeviceBlockMatrix* matrix_ = nullptr;
  std::uint64_t pattern_version_ = 0;  // of matrix_ when the band positions were found
  ChainArrays arrays_;
  Array<Scalar> factor_, d_, y_;
  Array<Scalar> spike_, edge_, work_;  // the partitioned solve's spikes, tails/heads and scratch
  Array<unsigned char> ok_;
};

}  // namespace condsim
