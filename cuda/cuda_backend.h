// The CUDA backend's factory (implemented in cuda_backend.cu, or in cuda_unavailable.cpp when
// the build has no CUDA). Plain C++: included by host code compiled with g++. Backend-internal
// (core/ and cuda/ only).
#pragma once

#include <memory>

#include "condsim/backend.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace condsim {

// throws condsim::Error when no usable device is present (see ProbeCuda)
std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options);
// the stream a cuda backend queues its work on, for its kernel sets (cuda_backend.cu only)
CUstream_st* CudaStream(const Backend& backend);

}  // namespace condsim
