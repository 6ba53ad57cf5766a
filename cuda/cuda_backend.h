// The CUDA backend's factory (implemented in cuda_backend.cu, or in cuda_unavailable.cpp when
// the build has no CUDA). Plain C++: included by host code compiled with g++.
#pragma once

#include <memory>

#include "condsim/backend.h"

namespace condsim {

// throws condsim::Error when no usable device is present (see ProbeCuda)
std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options);

}  // namespace condsim
