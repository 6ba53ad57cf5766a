// The rod launches (see models/cond/cond_kernels.h for the pattern).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/rod/rod_ops.h"

namespace condsim {

class RodKernels {
 public:
  virtual ~RodKernels() = default;
  virtual void Joints(Index count, const RodJointOp& op) = 0;
  virtual void Rhs(Index count, const RodRhsOp& op) = 0;
  virtual void Blocks(Index count, const RodBlockOp& op) = 0;
  virtual void Advance(Index count, const RodAdvanceOp& op) = 0;
  virtual void NewtonRhs(Index count, const RodNewtonRhsOp& op) = 0;
};

std::unique_ptr<RodKernels> MakeCpuRodKernels(int threads);   // cpu/rod_cpu.cpp
std::unique_ptr<RodKernels> MakeCudaRodKernels(void* stream);  // cuda/rod_cuda.cu

inline std::unique_ptr<RodKernels> MakeRodKernels(Backend& backend) {
  return backend.kind() == BackendKind::kCpu ? MakeCpuRodKernels(backend.cpu_threads())
                                             : MakeCudaRodKernels(backend.cuda_stream());
}

template <class Exec>
class RodKernelsImpl final : public RodKernels {
 public:
  explicit RodKernelsImpl(Exec exec) : exec_(exec) {}
  void Joints(Index count, const RodJointOp& op) override { exec_.For(count, op); }
  void Rhs(Index count, const RodRhsOp& op) override { exec_.For(count, op); }
  void Blocks(Index count, const RodBlockOp& op) override { exec_.For(count, op); }
  void Advance(Index count, const RodAdvanceOp& op) override { exec_.For(count, op); }
  void NewtonRhs(Index count, const RodNewtonRhsOp& op) override { exec_.For(count, op); }

 private:
  Exec exec_;
};

}  // namespace condsim
