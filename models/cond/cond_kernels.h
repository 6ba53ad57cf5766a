// The COND loop's launches (models/kernel_set.h): one Run per functor; the named methods build
// the per-iteration ops from raw backend pointers.
#pragma once

#include "models/cond/barycentric_ops.h"
#include "models/cond/body_mode_setup_ops.h"
#include "models/cond/body_mode_sparse_ops.h"
#include "models/cond/chain_ops.h"
#include "models/cond/chebyshev_state_ops.h"
#include "models/cond/cond_ops.h"
#include "models/cond/contact_color_ops.h"
#include "models/cond/rigid_ops.h"
#include "models/kernel_set.h"

namespace condsim {

class CondKernels
    : public KernelSet<FpiStepOp, ApplyImpulseOp, ContactSweepOp, ChebyshevOp, CommitOp, FrobeniusNodeOp,
                       FrobeniusGroupOp, EnvScalarToDofOp, PermuteOp, EnvRowMaskOp, MomentumMaskOp, ChainFactorOp, ChainApplyOp, ChainSpikeOp, ChainLaneApplyOp, ChainCouplingOp, ChainFinishOp, ChainBandBlockOp, RigidResponseOp, RigidPointKeyOp, RigidPointFillOp,
                       RigidContactSweepOp, SetNodeScalarOp, BarycentricFrobeniusOp, BarycentricGammaOp,
                       BarycentricHostOp, BarycentricNodeOp, BarycentricPickOp, BarycentricFillOp, BarycentricHeadOp, BarycentricTransposeOp,
                       BarycentricContactKeyOp, BarycentricLoadOp, BodyModeProductOp, BodyModeMatrixOp, BodyModeSparseMatrixOp, BodyModeSparseFactorOp, BodyModeSparseSolveOp, BodyModeInvertOp,
                       BodyModeResidualChunkOp, BodyModeResidualOp, BodyModeGateChunkOp, BodyModeGateOp, BodyModeAllLoadedOp, BodyModeContactForceChunkOp,
                       BodyModeContactForceOp, BodyModeLimitChunkOp, BodyModeLimitOp, BodyModeScaleOp,
                       BodyModeRefreshFlagOp, BodyModeIdleOp, BodyModeUnblockOp,
                       BodyModeSolveOp, BodyModeApplyStepOp, BodyModeRowOp, BodyModeNodeMapOp, BodyModeKeepOp, BodyModeListOp, BodyModeHaloFlagOp, BodyModeHaloListOp, BodyModeGateKeyOp,
                       BodyModeGateListOp, BodyModeCouplingOp, BodyModeRowOffsetOp, BodyModeGatherArmOp, BodyModeNodeArmOp, BodyPatchCentreOp, BodyPatchArmOp,
                       CondResidualOp, CondChebyshevThetaCommitOp, CondChebyshevDiffCommitOp, CondRestoreOp,
                       CondChebyshevResetOp, CondChebyshevRestartOp, CondChebyshevStepOp, ContactNodeKeyOp, ContactKeyPtrOp,
                       ContactColorRoundOp, ContactColorKeyOp, ContactNodeFlagOp> {
 public:
  void FpiStep(Index n, const Scalar* v, const Scalar* w, const Scalar* r, Scalar* u) {
    Run(n, FpiStepOp{v, w, r, u});
  }
  void ApplyImpulses(const ContactView& c, const Index* order, Index begin, Index count,
                     const Scalar* w, const Scalar* lambda, Scalar* u) {
    Run(count, ApplyImpulseOp{c, order, begin, w, lambda, u});
  }
  void Sweep(const ContactView& c, const Index* order, Index begin, Index count, const Scalar* w,
             const unsigned char* env_active, Scalar omega, Projection projection, Scalar* lambda,
             Scalar* u) {
    Run(count, ContactSweepOp{c, order, begin, w, env_active, omega, projection, lambda, u});
  }
  void Chebyshev(Index n, const Index* node_env, const Scalar* nu_env, Scalar relax, const Scalar* v,
                 const Scalar* v_prev, Scalar* u) {
    Run(n, ChebyshevOp{node_env, nu_env, relax, v, v_prev, u});
  }
  void Commit(Index n, const Index* node_env, const unsigned char* env_active, const Scalar* u,
              Scalar* v, Scalar* v_prev) {
    Run(n, CommitOp{node_env, env_active, u, v, v_prev});
  }
  void FrobeniusNodes(Index num_nodes, const Index* row_ptr, const Index* col_idx,
                      const Scalar* values, Scalar* diag_sum, Scalar* row_norm2, Scalar* row_abs) {
    Run(num_nodes, FrobeniusNodeOp{row_ptr, col_idx, values, diag_sum, row_norm2, row_abs});
  }
  void FrobeniusGroups(Index num_groups, const Index* group_ptr, const Index* group_nodes,
                       const Scalar* diag_sum, const Scalar* row_norm2, const Scalar* row_abs, Scalar safeguard, Scalar* w) {
    Run(num_groups, FrobeniusGroupOp{group_ptr, group_nodes, diag_sum, row_norm2, row_abs, safeguard, w});
  }
  void EnvScalarToDof(Index n, const Index* node_env, const Scalar* alpha_env, Scalar* w) {
    Run(n, EnvScalarToDofOp{node_env, alpha_env, w});
  }
  void EnvRowMask(Index nodes, const Index* node_env, const unsigned char* env_active, unsigned char* row_active) {
    Run(nodes, EnvRowMaskOp{node_env, env_active, row_active});
  }
  void Permute(Index n, const Index* perm, const Scalar* x, Scalar* y) { Run(n, PermuteOp{perm, x, y}); }
  void MomentumMask(Index n, const MomentumMaskOp& op) { Run(n, op); }
  void Residual(Index nodes, const CondResidualOp& op) { Run(nodes, op); }
  void ChebyshevThetaCommit(Index chunks, const CondChebyshevThetaCommitOp& op) { Run(chunks, op); }
  void ChebyshevDiffCommit(Index n, const CondChebyshevDiffCommitOp& op) { Run(n, op); }
  void Restore(Index n, const CondRestoreOp& op) { Run(n, op); }
  void ChebyshevReset(Index envs, const CondChebyshevResetOp& op) { Run(envs, op); }
  void ChebyshevRestart(Index envs, const CondChebyshevRestartOp& op) { Run(envs, op); }
  void ChebyshevStep(Index envs, const CondChebyshevStepOp& op) { Run(envs, op); }
  void ChainFactor(Index chains, const ChainFactorOp& op) { Run(chains, op); }
  void ChainApply(Index chains, const ChainApplyOp& op) { Run(chains, op); }
  void ChainSpike(Index chains, const ChainSpikeOp& op) { Run(chains, op); }
  void ChainLaneApply(Index chains, const ChainLaneApplyOp& op) { Run(chains, op); }
  void ChainCoupling(Index positions, const ChainCouplingOp& op) { Run(positions, op); }
  void ChainFinish(Index positions, const ChainFinishOp& op) { Run(positions, op); }
  void ChainBandBlock(Index items, const ChainBandBlockOp& op) { Run(items, op); }
  void RigidResponse(Index groups, const RigidResponseOp& op) { Run(groups, op); }
  void RigidContactSweep(Index groups, const RigidContactSweepOp& op) { Run(groups, op); }
  void SetNodeScalar(Index count, const SetNodeScalarOp& op) { Run(count, op); }
  void BarycentricFrobenius(Index hosts, const BarycentricFrobeniusOp& op) { Run(hosts, op); }
  void BarycentricGamma(Index nodes, const BarycentricGammaOp& op) { Run(nodes, op); }
  void BarycentricHost(Index hosts, const BarycentricHostOp& op) { Run(hosts, op); }
  void BarycentricNode(Index nodes, const BarycentricNodeOp& op) { Run(nodes, op); }
  void BodyModeProduct(Index listed, const BodyModeProductOp& op) { Run(listed, op); }
  void BodyModeMatrix(Index patches, const BodyModeMatrixOp& op) { Run(patches, op); }
  void BodyModeSparseMatrix(Index patches, const BodyModeSparseMatrixOp& op) { Run(patches, op); }
  void BodyModeSparseFactor(Index bodies, const BodyModeSparseFactorOp& op) { Run(bodies, op); }
  void BodyModeSparseSolve(Index bodies, const BodyModeSparseSolveOp& op) { Run(bodies, op); }
  void BodyModeInvert(Index bodies, const BodyModeInvertOp& op) { Run(bodies, op); }
  void BodyModeGatherArm(Index listed, const BodyModeGatherArmOp& op) { Run(listed, op); }
  void BodyModeNodeArm(Index listed, const BodyModeNodeArmOp& op) { Run(listed, op); }
  void BodyPatchCentre(Index items, const BodyPatchCentreOp& op) { Run(items, op); }
  void BodyPatchArm(Index entries, const BodyPatchArmOp& op) { Run(entries, op); }
  void BodyModeResidualChunk(Index chunks, const BodyModeResidualChunkOp& op) { Run(chunks, op); }
  void BodyModeResidual(Index patches, const BodyModeResidualOp& op) { Run(patches, op); }
  void BodyModeGateChunk(Index chunks, const BodyModeGateChunkOp& op) { Run(chunks, op); }
  void BodyModeGate(Index patches, const BodyModeGateOp& op) { Run(patches, op); }
  void BodyModeAllLoaded(const BodyModeAllLoadedOp& op) { Run(1, op); }
  void BodyModeContactForceChunk(Index chunks, const BodyModeContactForceChunkOp& op) { Run(chunks, op); }
  void BodyModeContactForce(Index patches, const BodyModeContactForceOp& op) { Run(patches, op); }
  void BodyModeLimitChunk(Index chunks, const BodyModeLimitChunkOp& op) { Run(chunks, op); }
  void BodyModeLimit(Index patches, const BodyModeLimitOp& op) { Run(patches, op); }
  void BodyModeScale(Index patches, const BodyModeScaleOp& op) { Run(patches, op); }
  void BodyModeRefreshFlag(const BodyModeRefreshFlagOp& op) { Run(1, op); }
  void BodyModeNodeMap(Index items, const BodyModeNodeMapOp& op) { Run(items, op); }
  void BodyModeCoupling(Index items, const BodyModeCouplingOp& op) { Run(items, op); }
  void BodyModeRowOffset(Index items, const BodyModeRowOffsetOp& op) { Run(items, op); }
  void BodyModeIdle(Index contacts, const BodyModeIdleOp& op) { Run(contacts, op); }
  void BodyModeUnblock(Index contacts, const BodyModeUnblockOp& op) { Run(contacts, op); }
  void BodyModeSolve(Index coarse_rows, const BodyModeSolveOp& op) { Run(coarse_rows, op); }
  void BodyModeApplyStep(Index nodes, const BodyModeApplyStepOp& op) { Run(nodes, op); }
  void BodyModeRow(Index items, const BodyModeRowOp& op) { Run(items, op); }
  void ContactNodeKey(Index contacts, const ContactNodeKeyOp& op) { Run(contacts, op); }
  void ContactKeyPtr(Index items, const ContactKeyPtrOp& op) { Run(items, op); }
  void ContactColorRound(Index contacts, const ContactColorRoundOp& op) { Run(contacts, op); }
  void ContactColorKey(Index contacts, const ContactColorKeyOp& op) { Run(contacts, op); }
  void ContactNodeFlag(Index items, const ContactNodeFlagOp& op) { Run(items, op); }
};

}  // namespace condsim
