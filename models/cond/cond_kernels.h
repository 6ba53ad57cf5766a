// The COND loop's device operations, one virtual call per launch over raw backend pointers.
// Implemented once (cond_kernels_impl.h) as a template over the backend's executor and
// instantiated by cpu/cond_cpu.cpp and cuda/cond_cuda.cu.
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/cond/cond_ops.h"

namespace condsim {

class CondKernels {
 public:
  virtual ~CondKernels() = default;
  virtual void FpiStep(Index n, const Scalar* v, const Scalar* w, const Scalar* r, Scalar* u) = 0;
  virtual void ApplyImpulses(const ContactView& c, const Index* order, Index begin, Index count,
                             const Scalar* w, const Scalar* lambda, Scalar* u) = 0;
  virtual void Sweep(const ContactView& c, const Index* order, Index begin, Index count,
                     const Scalar* w, const unsigned char* env_active, Scalar omega,
                     Projection projection, Scalar* lambda, Scalar* u) = 0;
  virtual void Chebyshev(Index n, const Index* node_env, const Scalar* nu_env, Scalar relax,
                         const Scalar* v, const Scalar* v_prev, Scalar* u) = 0;
  virtual void Commit(Index n, const Index* node_env, const unsigned char* env_active,
                      const Scalar* u, Scalar* v, Scalar* v_prev) = 0;
  virtual void FrobeniusNodes(Index num_nodes, const Index* row_ptr, const Index* col_idx,
                              const Scalar* values, Scalar* diag_sum, Scalar* row_norm2, Scalar* row_abs) = 0;
  virtual void FrobeniusGroups(Index num_groups, const Index* group_ptr, const Index* group_nodes,
                               const Scalar* diag_sum, const Scalar* row_norm2, const Scalar* row_abs, Scalar safeguard, Scalar* w) = 0;
  virtual void EnvScalarToDof(Index n, const Index* node_env, const Scalar* alpha_env, Scalar* w) = 0;
  virtual void ChainFactor(Index chains, const ChainFactorOp& op) = 0;
  virtual void ChainApply(Index chains, const ChainApplyOp& op) = 0;
  virtual void RigidResponse(Index groups, const RigidResponseOp& op) = 0;
  virtual void RigidContactSweep(Index groups, const RigidContactSweepOp& op) = 0;
  virtual void SetNodeScalar(Index count, const SetNodeScalarOp& op) = 0;
  virtual void BarycentricFrobenius(Index hosts, const BarycentricFrobeniusOp& op) = 0;
  virtual void BarycentricGamma(Index nodes, const BarycentricGammaOp& op) = 0;
  virtual void BarycentricHost(Index hosts, const BarycentricHostOp& op) = 0;
  virtual void BarycentricNode(Index nodes, const BarycentricNodeOp& op) = 0;
  virtual void BodyModeProduct(Index listed, const BodyModeProductOp& op) = 0;
  virtual void BodyModeMatrix(Index patches, const BodyModeMatrixOp& op) = 0;
  virtual void BodyModeResidual(Index patches, const BodyModeResidualOp& op) = 0;
  virtual void BodyModeSolve(Index coarse_rows, const BodyModeSolveOp& op) = 0;
  virtual void BodyModeApply(Index listed, const BodyModeApplyOp& op) = 0;
};

// per-backend instantiations (cpu/cond_cpu.cpp, cuda/cond_cuda.cu or cuda/cuda_unavailable.cpp)
std::unique_ptr<CondKernels> MakeCpuCondKernels(int threads);
std::unique_ptr<CondKernels> MakeCudaCondKernels(void* stream);

// the kernels of the backend's kind, running on its threads / stream
inline std::unique_ptr<CondKernels> MakeCondKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuCondKernels(backend.cpu_threads())
                                             : MakeCudaCondKernels(backend.cuda_stream());
}

}  // namespace condsim
