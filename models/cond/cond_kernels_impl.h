// CondKernels for an executor with `template <class F> void For(Index n, const F& f) const`.
// Included only by the backends' instantiation files.
#pragma once

#include "models/cond/cond_kernels.h"

namespace condsim {

template <class Exec>
class CondKernelsImpl final : public CondKernels {
 public:
  explicit CondKernelsImpl(Exec exec) : exec_(exec) {}

  void FpiStep(Index n, const Scalar* v, const Scalar* w, const Scalar* r, Scalar* u) override {
    exec_.For(n, FpiStepOp{v, w, r, u});
  }
  void ApplyImpulses(const ContactView& c, const Index* order, Index begin, Index count,
                     const Scalar* w, const Scalar* lambda, Scalar* u) override {
    exec_.For(count, ApplyImpulseOp{c, order, begin, w, lambda, u});
  }
  void Sweep(const ContactView& c, const Index* order, Index begin, Index count, const Scalar* w,
             const unsigned char* env_active, Scalar omega, Projection projection, Scalar* lambda,
             Scalar* u) override {
    exec_.For(count, ContactSweepOp{c, order, begin, w, env_active, omega, projection, lambda, u});
  }
  void Chebyshev(Index n, const Index* node_env, const Scalar* nu_env, Scalar relax,
                 const Scalar* v, const Scalar* v_prev, Scalar* u) override {
    exec_.For(n, ChebyshevOp{node_env, nu_env, relax, v, v_prev, u});
  }
  void Commit(Index n, const Index* node_env, const unsigned char* env_active, const Scalar* u,
              Scalar* v, Scalar* v_prev) override {
    exec_.For(n, CommitOp{node_env, env_active, u, v, v_prev});
  }
  void FrobeniusNodes(Index num_nodes, const Index* row_ptr, const Index* col_idx,
                      const Scalar* values, Scalar* diag_sum, Scalar* row_norm2, Scalar* row_abs) override {
    exec_.For(num_nodes, FrobeniusNodeOp{row_ptr, col_idx, values, diag_sum, row_norm2, row_abs});
  }
  void FrobeniusGroups(Index num_groups, const Index* group_ptr, const Index* group_nodes,
                       const Scalar* diag_sum, const Scalar* row_norm2, const Scalar* row_abs, Scalar safeguard, Scalar* w) override {
    exec_.For(num_groups, FrobeniusGroupOp{group_ptr, group_nodes, diag_sum, row_norm2, row_abs, safeguard, w});
  }
  void EnvScalarToDof(Index n, const Index* node_env, const Scalar* alpha_env, Scalar* w) override {
    exec_.For(n, EnvScalarToDofOp{node_env, alpha_env, w});
  }
  void ChainFactor(Index chains, const ChainFactorOp& op) override { exec_.For(chains, op); }
  void ChainApply(Index chains, const ChainApplyOp& op) override { exec_.For(chains, op); }
  void RigidResponse(Index groups, const RigidResponseOp& op) override { exec_.For(groups, op); }
  void RigidContactSweep(Index groups, const RigidContactSweepOp& op) override { exec_.For(groups, op); }
  void SetNodeScalar(Index count, const SetNodeScalarOp& op) override { exec_.For(count, op); }
  void BarycentricFrobenius(Index hosts, const BarycentricFrobeniusOp& op) override { exec_.For(hosts, op); }
  void BarycentricGamma(Index nodes, const BarycentricGammaOp& op) override { exec_.For(nodes, op); }
  void BarycentricHost(Index hosts, const BarycentricHostOp& op) override { exec_.For(hosts, op); }
  void BarycentricNode(Index nodes, const BarycentricNodeOp& op) override { exec_.For(nodes, op); }
  void BodyModeProduct(Index listed, const BodyModeProductOp& op) override { exec_.For(listed, op); }
  void BodyModeMatrix(Index patches, const BodyModeMatrixOp& op) override { exec_.For(patches, op); }
  void BodyModeResidual(Index patches, const BodyModeResidualOp& op) override { exec_.For(patches, op); }
  void BodyModeSolve(Index coarse_rows, const BodyModeSolveOp& op) override { exec_.For(coarse_rows, op); }
  void BodyModeApply(Index listed, const BodyModeApplyOp& op) override { exec_.For(listed, op); }

 private:
  Exec exec_;
};

}  // namespace condsim
