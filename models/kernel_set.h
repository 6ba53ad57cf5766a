// A set of device launches for one model: one virtual Run(n, op) per functor type, implemented
// once for any executor (cpu::Exec, cuda::Exec) by KernelSetImpl. Models hold a
// std::unique_ptr<Set> from MakeKernels<Set>(backend) and call kernels->Run(n, SomeOp{...});
// each backend instantiates every set of models/kernel_list.h in one translation unit.
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "condsim/core.h"

namespace condsim {

template <class Op>
class KernelSlot {
 public:
  virtual ~KernelSlot() = default;
  virtual void Run(Index n, const Op& op) = 0;
};

namespace internal {
template <class Exec, class Set, class... Ops>
class KernelChain;
}  // namespace internal

// a model's launch set: `class FemKernels : public KernelSet<OpA, OpB, ...> {};`
template <class... Ops>
class KernelSet : public KernelSlot<Ops>... {
 public:
  using KernelSlot<Ops>::Run...;
  template <class Exec, class Set>
  using ImplFor = internal::KernelChain<Exec, Set, Ops...>;
};

namespace internal {
// overrides Run for each Op in turn, down a chain of classes ending at the Set itself
template <class Exec, class Set>
class KernelChain<Exec, Set> : public Set {
 public:
  explicit KernelChain(Exec exec) : exec_(exec) {}

 protected:
  Exec exec_;
};

template <class Exec, class Set, class Op, class... Rest>
class KernelChain<Exec, Set, Op, Rest...> : public KernelChain<Exec, Set, Rest...> {
 public:
  using KernelChain<Exec, Set, Rest...>::KernelChain;
  using KernelChain<Exec, Set, Rest...>::Run;
  void Run(Index n, const Op& op) override { this->exec_.For(n, op); }
};

}  // namespace internal

// the implementation of a launch set (a class derived from KernelSet<Ops...>) on an executor
template <class Exec, class Set>
using KernelSetImpl = typename Set::template ImplFor<Exec, Set>;

// every backend as X(kind, ns): BackendKind::kind gets its kernel sets from ns::MakeKernels
#define CONDSIM_BACKENDS(X) X(kCpu, cpu) X(kCuda, cuda)

// one backend's sets, defined for every listed set in cpu/kernels_cpu.cpp, cuda/kernels_cuda.cu
// (or the throwing cuda/cuda_unavailable.cpp)
#define CONDSIM_DECLARE_MAKE_KERNELS(kind, ns)        \
  namespace ns {                                      \
  template <class Set>                                \
  std::unique_ptr<Set> MakeKernels(Backend& backend); \
  }
CONDSIM_BACKENDS(CONDSIM_DECLARE_MAKE_KERNELS)
#undef CONDSIM_DECLARE_MAKE_KERNELS

// a model's launch set on the backend's threads / stream; Set must be in models/kernel_list.h
template <class Set>
std::unique_ptr<Set> MakeKernels(Backend& backend) {
  switch (backend.kind()) {
#define CONDSIM_DISPATCH_KERNELS(kind, ns) \
  case BackendKind::kind:                  \
    return ns::MakeKernels<Set>(backend);
    CONDSIM_BACKENDS(CONDSIM_DISPATCH_KERNELS)
#undef CONDSIM_DISPATCH_KERNELS
  }
  throw Error("MakeKernels: unknown backend kind");
}

}  // namespace condsim
