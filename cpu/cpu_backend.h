// The CPU backend: host memory, OpenMP loops, deterministic chunked reductions.
#pragma once

#include <memory>

#include "condsim/backend.h"

namespace condsim {

std::unique_ptr<Backend> MakeCpuBackend(const BackendOptions& options);

}  // namespace condsim
