// The machine's memory bandwidth floor for the benches: one large copy on a given number of
// threads, the reference the SpMV and the solver iteration are measured against
// (docs/performance.md). The STREAM copy of McCalpin (1995), by memcpy.
#pragma once

#include <cstddef>

namespace condsim::app {

// two arrays of `bytes` (default 256 MiB, far beyond any last-level cache, so this is DRAM
// bandwidth), each thread first-touching and copying its own contiguous slice
class CopyFloor {
 public:
  explicit CopyFloor(int threads, std::size_t bytes = std::size_t(256) << 20);
  ~CopyFloor();
  CopyFloor(const CopyFloor&) = delete;
  CopyFloor& operator=(const CopyFloor&) = delete;
  // one copy on the threads; returns its wall time [s]
  double Copy();
  // bytes one copy moves: read + written
  double bytes_moved() const { return 2.0 * double(bytes_); }
  int threads() const { return threads_; }

 private:
  void Run(bool first_touch);
  int threads_;
  std::size_t bytes_;
  char* src_ = nullptr;
  char* dst_ = nullptr;
};

// median GB/s (read + written) of `reps` copies of `bytes` on `threads` OpenMP threads (0:
// OpenMP's default) after one warm-up. On a shared machine interleave CopyFloor::Copy with the
// operation measured instead, so both see the same load.
double CopyBandwidthGBs(int threads, std::size_t bytes = std::size_t(256) << 20, int reps = 5);

}  // namespace condsim::app
