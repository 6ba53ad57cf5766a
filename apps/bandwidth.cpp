#include "apps/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "condsim/error.h"

namespace condsim::app {

CopyFloor::CopyFloor(int threads, std::size_t bytes)
    : threads_(threads > 0 ? threads : omp_get_max_threads()), bytes_((bytes + 63) / 64 * 64) {
  src_ = static_cast<char*>(std::aligned_alloc(64, bytes_));
  dst_ = static_cast<char*>(std::aligned_alloc(64, bytes_));
  if (src_ == nullptr || dst_ == nullptr) {
    std::free(src_);
    std::free(dst_);
    throw Error("bandwidth: out of memory allocating 2 x " + std::to_string(bytes_) + " bytes");
  }
  Run(true);
}

CopyFloor::~CopyFloor() {
  std::free(src_);
  std::free(dst_);
}

void CopyFloor::Run(bool first_touch) {
  // thread k owns bytes [n k / t, n (k+1) / t), cut at cache lines
  const std::size_t n = bytes_;
#pragma omp parallel num_threads(threads_)
  {
    const std::size_t k = std::size_t(omp_get_thread_num()), parts = std::size_t(omp_get_num_threads());
    const std::size_t begin = n * k / parts / 64 * 64, end = k + 1 == parts ? n : n * (k + 1) / parts / 64 * 64;
    if (first_touch) {
      std::memset(src_ + begin, 1, end - begin);
      std::memset(dst_ + begin, 0, end - begin);
    }
    std::memcpy(dst_ + begin, src_ + begin, end - begin);
  }
}

double CopyFloor::Copy() {
  const auto start = std::chrono::steady_clock::now();
  Run(false);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double CopyBandwidthGBs(int threads, std::size_t bytes, int reps) {
  CopyFloor floor(threads, bytes);
  std::vector<double> seconds;
  for (int r = 0; r < std::max(reps, 1); ++r) seconds.push_back(floor.Copy());
  std::sort(seconds.begin(), seconds.end());
  return floor.bytes_moved() / seconds[seconds.size() / 2] / 1e9;
}

}  // namespace condsim::app
