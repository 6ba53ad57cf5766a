// Device side of the CUDA math test: MathOp through cuda::ParallelFor.
#include "cuda/parallel.cuh"
#include "cuda_math_kernels.h"

namespace condsim::test {

std::vector<MathResult> RunMathOnDevice(const std::vector<MathCase>& cases) {
  const Index n = static_cast<Index>(cases.size());
  cuda::DeviceBuffer<MathCase> in(cases.size());
  cuda::DeviceBuffer<MathResult> out(cases.size());
  CONDSIM_CUDA_CHECK(cudaMemcpy(in.get(), cases.data(), sizeof(MathCase) * cases.size(), cudaMemcpyHostToDevice));
  // poison the output: an unwritten result shows up as NaN
  CONDSIM_CUDA_CHECK(cudaMemset(out.get(), 0xff, sizeof(MathResult) * cases.size()));
  cuda::ParallelFor(n, MathOp{in.get(), out.get()});
  std::vector<MathResult> host(cases.size());
  CONDSIM_CUDA_CHECK(cudaMemcpy(host.data(), out.get(), sizeof(MathResult) * cases.size(), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace condsim::test
