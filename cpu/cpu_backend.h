// The CPU backend: host memory, OpenMP loops, deterministic chunked reductions. Backend-internal
// (core/ and cpu/ only).
#pragma once

#include <memory>

#include "condsim/backend.h"

namespace condsim {

std::unique_ptr<Backend> MakeCpuBackend(const BackendOptions& options);
// the OpenMP thread count of a cpu backend (0 = OpenMP's default), for its kernel sets
int CpuThreads(const Backend& backend);

}  // namespace condsim
