// COND chains: exact W on banded sub-systems (docs/solver.md, "Chains").
#include "models/cond/cond_chains.h"

#include <algorithm>

#include "condsim/error.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondChains::Set(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band) {
  CONDSIM_CHECK(ptr.empty() || (ptr.front() == 0 && std::size_t(ptr.back()) == nodes.size()),
                "SetChains: ptr must start at 0 and end at the number of chain nodes (" << nodes.size() << ")");
  for (std::size_t c = 1; c < ptr.size(); ++c) CONDSIM_CHECK(ptr[c - 1] < ptr[c], "SetChains: chain " << c - 1 << " is empty");
  CONDSIM_CHECK(band >= 1 || nodes.empty(), "SetChains: band must be >= 1 node, got " << band);
  std::vector<Index> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    CONDSIM_CHECK(sorted[k] >= 0, "SetChains: negative node " << sorted[k]);
    CONDSIM_CHECK(k == 0 || sorted[k] != sorted[k - 1], "SetChains: node " << sorted[k] << " is in more than one chain");
  }
  ptr_ = ptr.size() > 1 ? ptr : std::vector<Index>();
  nodes_ = nodes;
  band_ = band;
  dirty_ = true;
}

ChainHost MakeChainHost(const std::vector<Index>& ptr, const std::vector<Index>& nodes, Index band, const BlockPattern& p) {
  const Index chains = static_cast<Index>(ptr.size()) - 1;
  ChainHost host;
  host.ptr = ptr;
  host.nodes = nodes;
  host.band_block.assign(nodes.size() * std::size_t(band + 1), -1);
  host.factor_offset.assign(static_cast<std::size_t>(chains > 0 ? chains : 0) + 1, 0);
  for (Index c = 0; c < chains; ++c) {
    for (Index g = ptr[c]; g < ptr[c + 1]; ++g) {
      CONDSIM_CHECK(nodes[g] < p.block_rows, "SetChains: node " << nodes[g] << " is not a node of A");
      for (Index d = 0; d <= band && g - d >= ptr[c]; ++d)
        host.band_block[std::size_t(g) * (band + 1) + d] = p.Find(nodes[g], nodes[g - d]);
    }
    const std::size_t len = 3 * std::size_t(ptr[c + 1] - ptr[c]);
    host.factor_offset[c + 1] =
        CheckedIndex(std::size_t(host.factor_offset[c]) + len * std::size_t(ChainBandwidth(band) + 1), "chain factor size");
  }
  return host;
}

void CondChains::Check() const {
  CONDSIM_CHECK(ctx_->params->step_size == StepSize::kFrobenius, "COND: chains need the Frobenius step size");
}

void CondChains::Prepare(DeviceBlockMatrix& a) {
  const Index chains = static_cast<Index>(ptr_.size()) - 1;
  // the band positions depend on A's pattern (rebuilt when the World's system changes it): made
  // on the backend from it when only the pattern changed, the record uploaded otherwise
  if (!dirty_ && matrix_ == &a && pattern_version_ != a.pattern_version()) {
    const Index items = CheckedIndex(nodes_.size() * std::size_t(band_ + 1), "chain band blocks");
    ctx_->kernels->ChainBandBlock(items, ChainBandBlockOp{arrays_.ptr.data(), chains, arrays_.nodes.data(), band_, a.row_ptr().data(),
                                                         a.col_idx().data(), arrays_.band_block.data()});
    pattern_version_ = a.pattern_version();
  } else if (dirty_ || matrix_ != &a || pattern_version_ != a.pattern_version()) {
    Check();
    const ChainHost host = MakeChainHost(ptr_, nodes_, band_, a.pattern());
    arrays_.Upload(ctx_->backend, host);
    factor_.Resize(ctx_->backend, host.factor_offset.back());
    const Index bw = ChainBandwidth(band_);
    spike_.Resize(ctx_->backend, CheckedIndex(std::size_t(chains) * std::size_t(ChainSpikeStride(bw)), "chain spike size"));
    edge_.Resize(ctx_->backend, CheckedIndex(std::size_t(chains) * std::size_t(ChainEdgeStride(bw)), "chain edge size"));
    work_.Resize(ctx_->backend, CheckedIndex(3 * nodes_.size(), "chain work size"));
    ok_.Resize(ctx_->backend, chains);
    matrix_ = &a;
    pattern_version_ = a.pattern_version();
    dirty_ = false;
  }
  // (per node of A: the virtual nodes change their count)
  d_.Resize(ctx_->backend, 3 * ctx_->nodes);
  y_.Resize(ctx_->backend, 3 * ctx_->nodes);
  ctx_->kernels->ChainFactor(chains, ChainFactorOp{View(), a.values().data(), factor_.data(), ok_.data()});
  ctx_->kernels->ChainSpike(chains, ChainSpikeOp{View(), factor_.data(), ok_.data(), spike_.data(), work_.data()});
}

void CondChains::Step(const Array<Scalar>& start) {
  Backend& be = *ctx_->backend;
  const Index chains = static_cast<Index>(ptr_.size()) - 1;
  be.Multiply(ctx_->w, ctx_->r, &d_);
  // the partitioned substitution (a warp per chain on CUDA; ChainApplyOp's result up to rounding)
  ctx_->kernels->ChainLaneApply(chains, ChainLaneApplyOp{View(), factor_.data(), ok_.data(), spike_.data(), edge_.data(), work_.data(),
                                                         ctx_->w.data(), ctx_->r.data(), ctx_->node_env.data(), ctx_->env_active.data(),
                                                         d_.data()});
  be.Copy(start, &ctx_->u);
  be.Axpby(-1, d_, 1, &ctx_->u);
}

void CondChains::Couple(const Array<Scalar>& start) {
  const Index chains = static_cast<Index>(ptr_.size()) - 1, positions = static_cast<Index>(nodes_.size());
  // y = r_C + A_CN (u_N - start_N), d = w y on the free nodes; then d = A_CC^-1 y and u_C = start_C - d
  ctx_->kernels->ChainCoupling(positions, ChainCouplingOp{View(), positions, matrix_->values().data(), start.data(), ctx_->u.data(),
                                                          ctx_->r.data(), ctx_->w.data(), y_.data(), d_.data()});
  ctx_->kernels->ChainLaneApply(chains, ChainLaneApplyOp{View(), factor_.data(), ok_.data(), spike_.data(), edge_.data(), work_.data(),
                                                         ctx_->w.data(), y_.data(), ctx_->node_env.data(), ctx_->env_active.data(),
                                                         d_.data()});
  ctx_->kernels->ChainFinish(positions, ChainFinishOp{View(), start.data(), d_.data(), ctx_->u.data()});
}

}  // namespace condsim
