// Every kernel set (models/kernel_list.h) on the CPU backend: KernelSetImpl over OpenMP.
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "models/kernel_list.h"

namespace condsim::cpu {

// the COND's fused theta pass folds the segmented reductions' chunks itself
static_assert(CondChebyshevThetaCommitOp::kChunk == kReductionChunk &&
                  CondChebyshevThetaCommitOp::kGrain == kDefaultGrain / kReductionChunk,
              "CondChebyshevThetaCommitOp must cut SegmentedReduce's chunks");

template <class Set>
std::unique_ptr<Set> MakeKernels(Backend& backend) {
  return std::make_unique<KernelSetImpl<Exec, Set>>(Exec{CpuThreads(backend), backend.mutable_counters()});
}

#define CONDSIM_INSTANTIATE_KERNELS(Set) template std::unique_ptr<Set> MakeKernels<Set>(Backend&);
CONDSIM_KERNEL_SETS(CONDSIM_INSTANTIATE_KERNELS)
#undef CONDSIM_INSTANTIATE_KERNELS

}  // namespace condsim::cpu
