// The COND kernels on the CPU: CondKernelsImpl over OpenMP.
#include "cpu/parallel.h"
#include "models/cond/cond_kernels_impl.h"

namespace condsim {
namespace {
struct CpuExec {
  int threads;
  template <class F>
  void For(Index n, const F& f) const {
    cpu::ParallelFor(threads, n, f);
  }
};
}  // namespace

std::unique_ptr<CondKernels> MakeCpuCondKernels(int threads) {
  return std::make_unique<CondKernelsImpl<CpuExec>>(CpuExec{threads});
}

}  // namespace condsim
