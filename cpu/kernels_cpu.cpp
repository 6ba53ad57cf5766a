// Every kernel set (models/kernel_list.h) on the CPU backend: KernelSetImpl over OpenMP.
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "models/kernel_list.h"

namespace condsim::cpu {

template <class Set>
std::unique_ptr<Set> MakeKernels(Backend& backend) {
  return std::make_unique<KernelSetImpl<Exec, Set>>(Exec{CpuThreads(backend), backend.mutable_counters()});
}

#define CONDSIM_INSTANTIATE_KERNELS(Set) template std::unique_ptr<Set> MakeKernels<Set>(Backend&);
CONDSIM_KERNEL_SETS(CONDSIM_INSTANTIATE_KERNELS)
#undef CONDSIM_INSTANTIATE_KERNELS

}  // namespace condsim::cpu
