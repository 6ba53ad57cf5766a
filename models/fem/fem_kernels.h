// The FEM launches, one virtual call each (see models/cond/cond_kernels.h for the pattern).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/fem/fem_ops.h"

namespace condsim {

class FemKernels {
 public:
  virtual ~FemKernels() = default;
  virtual void Elements(Index count, const FemElementOp& op) = 0;
  virtual void NodeRhs(Index count, const FemNodeRhsOp& op) = 0;
  virtual void Blocks(Index count, const FemBlockOp& op) = 0;
  virtual void Midpoint(Index count, const MidpointOp& op) = 0;
  virtual void NewtonRhs(Index count, const NewtonRhsOp& op) = 0;
  virtual void Dirichlet(Index count, const DirichletRowOp& op) = 0;
  virtual void Attach(Index count, const AttachOp& op) = 0;
  virtual void LinkBlocks(Index count, const LinkBlockOp& op) = 0;
  virtual void LinkRhs(Index count, const LinkRhsOp& op) = 0;
};

std::unique_ptr<FemKernels> MakeCpuFemKernels(int threads);   // cpu/fem_cpu.cpp
std::unique_ptr<FemKernels> MakeCudaFemKernels(void* stream);  // cuda/fem_cuda.cu

inline std::unique_ptr<FemKernels> MakeFemKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuFemKernels(backend.cpu_threads())
                                             : MakeCudaFemKernels(backend.cuda_stream());
}

// the implementation for an executor with For(n, functor)
template <class Exec>
class FemKernelsImpl final : public FemKernels {
 public:
  explicit FemKernelsImpl(Exec exec) : exec_(exec) {}
  void Elements(Index count, const FemElementOp& op) override { exec_.For(count, op); }
  void NodeRhs(Index count, const FemNodeRhsOp& op) override { exec_.For(count, op); }
  void Blocks(Index count, const FemBlockOp& op) override { exec_.For(count, op); }
  void Midpoint(Index count, const MidpointOp& op) override { exec_.For(count, op); }
  void NewtonRhs(Index count, const NewtonRhsOp& op) override { exec_.For(count, op); }
  void Dirichlet(Index count, const DirichletRowOp& op) override { exec_.For(count, op); }
  void Attach(Index count, const AttachOp& op) override { exec_.For(count, op); }
  void LinkBlocks(Index count, const LinkBlockOp& op) override { exec_.For(count, op); }
  void LinkRhs(Index count, const LinkRhsOp& op) override { exec_.For(count, op); }

 private:
  Exec exec_;
};

}  // namespace condsim
