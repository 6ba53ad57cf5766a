// What the body-mode op tests share (tests/cond_body_mode_ops_test.cpp, cond_body_mode_setup_ops_test.cpp).
#pragma once

#include <memory>

#include "condsim/backend.h"
#include "models/cond/cond_body_modes.h"
#include "models/cond/cond_kernels.h"

namespace condsim::test {

// a CPU backend of `threads` threads with the COND launches and a body-mode record uploaded
struct OpsOnThreads {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CondKernels> kernels;
  BodyModeArrays arrays;
  OpsOnThreads(int threads, const BodyModeHost& h) {
    BackendOptions o;
    o.cpu_threads = threads;
    backend = MakeBackend(BackendChoice::kCpu, o).backend;
    kernels = MakeKernels<CondKernels>(*backend);
    arrays.Upload(backend.get(), h);
  }
};

}  // namespace condsim::test
