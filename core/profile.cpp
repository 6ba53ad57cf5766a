#include "condsim/profile.h"

#if defined(CONDSIM_WITH_CUDA)
#include <nvtx3/nvToolsExt.h>
#endif

namespace condsim {
namespace {
thread_local int depth = 0;
}  // namespace

ProfileRange::ProfileRange(const char* name) {
  ++depth;
#if defined(CONDSIM_WITH_CUDA)
  nvtxRangePushA(name);
#else
  (void)name;
#endif
}

void ProfileRange::End() {
  if (!open_) return;
  open_ = false;
  --depth;
#if defined(CONDSIM_WITH_CUDA)
  nvtxRangePop();
#endif
}

int ProfileRange::Depth() { return depth; }

}  // namespace condsim
