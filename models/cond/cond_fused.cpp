// The fused passes of the COND loop (cond_ops.h: CondResidualOp, CondChebyshevThetaCommitOp,
// CondChebyshevDiffCommitOp, CondRestoreOp; CondParams::fused_passes): their chunk tables and
// launches.
#include <algorithm>

#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondSolver::PrepareFused(const std::vector<Index>& dof_offsets) {
  fused_layout_ = backend_->kind() == BackendKind::kCpu && ctx_.env_perm.size() == 0;
  // the restore's flags (both fused paths)
  env_flag_.Resize(backend_, ctx_.num_envs);
  if (!fused_layout_) return;
  // cpu::SegmentedReduce's chunks: each environment's DOF range cut every kChunk DOFs
  constexpr Index kChunk = CondChebyshevThetaCommitOp::kChunk;
  std::vector<Index> begin, end;
  for (std::size_t e = 0; e + 1 < dof_offsets.size(); ++e) {
    for (Index k = dof_offsets[e]; k < dof_offsets[e + 1]; k += kChunk) {
      begin.push_back(k);
      end.push_back(std::min(k + kChunk, dof_offsets[e + 1]));
    }
  }
  // the same layout again (a World re-prepares every step): keep the arrays
  if (begin == chunk_begin_host_ && end == chunk_end_host_ && env_flag_.size() == ctx_.num_envs) return;
  chunk_begin_host_ = begin;
  chunk_end_host_ = end;
  // the arrays keep their memory (Array::Assign / Resize)
  chunk_begin_.Assign(backend_, begin);
  chunk_end_.Assign(backend_, end);
  chunk_sum_.Resize(backend_, Index(begin.size()));
}

bool CondSolver::Residual(int l, DeviceBlockMatrix& a, const Array<Scalar>& b, const Array<Scalar>& v) {
  if (!fused_) {
    a.Multiply(1, v, 0, &ctx_.r, row_mask());
    backend_->Axpby(-1, b, 1, &ctx_.r);
    return false;
  }
  // the W step in the same pass when Iterate would start it from v with this W (step_.Update
  // changes only a Barzilai-Borwein W)
  const bool step = params_.step_size == StepSize::kFrobenius &&
                    (!chains_.active() || params_.chain_gauss_seidel) && !modes_.correcting() && !FreeLevel(l);
  const Array<unsigned char>* mask = row_mask();
  kernels_->Residual(ctx_.nodes, CondResidualOp{a.row_ptr().data(), a.col_idx().data(), a.values().data(), v.data(), b.data(),
                                                mask != nullptr ? mask->data() : nullptr, ctx_.r.data(),
                                                step ? ctx_.w.data() : nullptr, ctx_.u.data()});
  return step;
}

CondIterationEnd CondSolver::IterationEnd(Array<Scalar>* v) {
  const CondIterationEnd end{ctx_.node_env.data(), chebyshev_now_, env_nu_.data(), static_cast<Scalar>(params_.chebyshev_relax),
                             ctx_.env_active.data(), ctx_.u.data(), v->data(), v_prev_.data()};
  chebyshev_now_ = false;
  return end;
}

void CondSolver::FusedThetaCommit(Array<Scalar>* v) {
  const Index chunks = Index(chunk_begin_host_.size());
  kernels_->ChebyshevThetaCommit(chunks, CondChebyshevThetaCommitOp{chunk_begin_.data(), chunk_end_.data(), IterationEnd(v), chunk_sum_.data()});
}

void CondSolver::FusedDiffCommit(Array<Scalar>* v) {
  kernels_->ChebyshevDiffCommit(3 * ctx_.nodes, CondChebyshevDiffCommitOp{IterationEnd(v), diff_.data()});
}

void CondSolver::FusedRestore(const std::vector<unsigned char>& failed, Array<Scalar>* v) {
  // the pass committed every running environment: the failed ones take back v^l
  env_flag_.CopyFromHost(failed);
  kernels_->Restore(3 * ctx_.nodes, CondRestoreOp{ctx_.node_env.data(), env_flag_.data(), v_prev_.data(), v->data()});
}

}  // namespace condsim
