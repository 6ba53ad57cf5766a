// Named ranges of host time for profilers: NVTX push/pop ranges when the CUDA backend is built
// (Nsight Systems' timeline; Nsight Compute's `--nvtx --nvtx-include "step 40/cond loop"`), no
// work otherwise (NVTX itself costs a function-pointer call when no tool is attached). The World
// marks each step ("step K", K from 0) and its stages inside it, the COND solver its set-up and
// loop (docs/performance.md, "On a GPU machine").
#pragma once

#include <string>

namespace condsim {

class ProfileRange {
 public:
  explicit ProfileRange(const char* name);
  explicit ProfileRange(const std::string& name) : ProfileRange(name.c_str()) {}
  ~ProfileRange() { End(); }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;
  // closes the range before the scope ends (once; later calls do nothing)
  void End();
  // ranges open on this thread (0 between steps: every push has its pop, a throw included)
  static int Depth();

 private:
  bool open_ = true;
};

}  // namespace condsim
