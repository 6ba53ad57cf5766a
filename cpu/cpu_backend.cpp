// The CPU/OpenMP backend.
#include "cpu/cpu_backend.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "condsim/vector_ops.h"
#include "cpu/parallel.h"

namespace condsim {
namespace {

class CpuBlockMatrix final : public DeviceBlockMatrix {
 public:
  CpuBlockMatrix(Backend* backend, const BlockPattern& pattern, int threads)
      : DeviceBlockMatrix(backend, pattern), threads_(threads) {}

 protected:
  void DoMultiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y, const unsigned char* row_active) override {
    const BsrRowSpmvOp op{pattern_.block_dim, row_ptr_.data(), col_idx_.data(), values_.data(),
                          alpha, x, beta, y, row_active};
    DispatchBsrRowSpmv(op, [&](const auto& f) { cpu::Launch(threads_, pattern_.block_rows, f); });
  }

 private:
  int threads_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options) : threads_(options.cpu_threads) {
    CONDSIM_CHECK(threads_ >= 0, "cpu_threads must be >= 0 (0 = OpenMP default), got " << threads_);
  }

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string Describe() const override {
    const int t = threads_ > 0 ? threads_ : omp_get_max_threads();
    return "cpu (OpenMP, " + std::to_string(t) + " thread" + (t == 1 ? "" : "s") + ")";
  }

  void* DoAllocate(std::size_t bytes) override {
    if (cpu::GuardOn()) return cpu::GuardedAllocate(bytes);
    // 64-byte alignment: whole cache lines, vectorizable loops
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw Error("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void DoFree(void* ptr) noexcept override {
    if (cpu::GuardOn()) return cpu::GuardedFree(ptr);
    std::free(ptr);
  }
  // copies and the host loops of the primitives below open guarded memory (cpu::GuardScope)
  void DoCopyFromHost(void* dst, const void* src, std::size_t bytes) override {
    const cpu::GuardScope open;
    std::memcpy(dst, src, bytes);
  }
  void DoCopyToHost(void* dst, const void* src, std::size_t bytes) override {
    const cpu::GuardScope open;
    std::memcpy(dst, src, bytes);
  }
  void DoCopyWithin(void* dst, const void* src, std::size_t bytes) override {
    const cpu::GuardScope open;
    std::memmove(dst, src, bytes);
  }
  void DoInvalidate(void* ptr, std::size_t bytes) override {
    if (!cpu::GuardOn()) return;
    const cpu::GuardScope open;
    std::memset(ptr, 0xFF, bytes);
  }
  void Synchronize() override {}
  int threads() const { return threads_; }

  std::unique_ptr<DeviceBlockMatrix> CreateMatrix(const BlockPattern& pattern) override {
    return std::make_unique<CpuBlockMatrix>(this, pattern, threads_);
  }

 protected:
  void DoFill(Index n, Scalar value, Scalar* y) override { cpu::Launch(threads_, n, FillOp{value, y}); }
  void DoAxpby(Index n, Scalar a, const Scalar* x, Scalar b, Scalar* y) override {
    cpu::Launch(threads_, n, AxpbyOp{a, x, b, y});
  }
  void DoMultiply(Index n, const Scalar* x, const Scalar* y, Scalar* z) override {
    cpu::Launch(threads_, n, MultiplyOp{x, y, z});
  }
  Scalar DoDot(Index n, const Scalar* x, const Scalar* y) override {
    const Index whole[2] = {0, n};
    Scalar out = 0;
    DoSegmentedDot(1, whole, n, x, y, &out);
    return out;
  }
  Scalar DoMaxAbs(Index n, const Scalar* x) override {
    const Index whole[2] = {0, n};
    Scalar out = 0;
    DoSegmentedMaxAbs(1, whole, n, x, &out);
    return out;
  }
  void DoSegmentedDot(Index num_segments, const Index* offsets, Index /*end*/, const Scalar* x, const Scalar* y,
                      Scalar* out) override {
    cpu::SegmentedReduce(
        threads_, num_segments, offsets, Scalar(0), [=](Index i) { return x[i] * y[i]; },
        [](Scalar a, Scalar b) { return a + b; }, out);
  }
  void DoSegmentedMaxAbs(Index num_segments, const Index* offsets, Index /*end*/, const Scalar* x,
                         Scalar* out) override {
    cpu::SegmentedReduce(
        threads_, num_segments, offsets, Scalar(0), [=](Index i) { return std::fabs(x[i]); },
        [](Scalar a, Scalar b) { return NanMax(a, b); }, out);
  }
  Index DoExclusiveScan(Index n, const Index* in, Index* out, bool /*total*/) override {
    const cpu::GuardScope open;
    Index sum = 0;
    for (Index i = 0; i < n; ++i) {
      const Index x = in[i];
      out[i] = sum;
      sum += x;
    }
    return sum;
  }
  void DoSortPairs(Index n, std::uint64_t* keys, Index* values) override {
    const cpu::GuardScope open;
    std::vector<std::pair<std::uint64_t, Index>> pairs(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) pairs[i] = {keys[i], values[i]};
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (Index i = 0; i < n; ++i) {
      keys[i] = pairs[i].first;
      values[i] = pairs[i].second;
    }
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

namespace cpu {

const CheckMode& Checks() {
  static const CheckMode mode = [] {
    CheckMode m;
    const char* order = std::getenv("CONDSIM_CPU_ORDER");
    const std::string o = order != nullptr ? order : "";
    CONDSIM_CHECK(o.empty() || o == "forward" || o == "reverse" || o == "shuffle",
                  "CONDSIM_CPU_ORDER: '" << o << "' is not an order (valid: forward, reverse, shuffle)");
    m.order = o == "reverse" ? CheckMode::kReverse : o == "shuffle" ? CheckMode::kShuffle : CheckMode::kForward;
    if (const char* grain = std::getenv("CONDSIM_CPU_GRAIN")) {
      char* end = nullptr;
      const long g = std::strtol(grain, &end, 10);
      CONDSIM_CHECK(end != grain && *end == '\0' && g >= 1, "CONDSIM_CPU_GRAIN: '" << grain << "' is not an integer >= 1");
      m.grain = Index(g);
    }
    const char* guard = std::getenv("CONDSIM_CPU_GUARD");
    const std::string gd = guard != nullptr ? guard : "";
    CONDSIM_CHECK(gd.empty() || gd == "0" || gd == "1", "CONDSIM_CPU_GUARD: '" << gd << "' is not 0 or 1");
    m.guard = gd == "1";
    if (const char* log = std::getenv("CONDSIM_CPU_KERNEL_LOG")) m.kernel_log = log;
    return m;
  }();
  return mode;
}

void LogKernelType(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string line = status == 0 && name != nullptr ? name : type.name();
  std::free(name);
  line += '\n';
  const int fd = open(Checks().kernel_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  CONDSIM_CHECK(fd >= 0, "CONDSIM_CPU_KERNEL_LOG: cannot open '" << Checks().kernel_log << "': " << std::strerror(errno));
  const ssize_t written = write(fd, line.data(), line.size());
  const int error = errno;
  close(fd);
  CONDSIM_CHECK(written == ssize_t(line.size()),
                "CONDSIM_CPU_KERNEL_LOG: cannot write '" << Checks().kernel_log << "': " << std::strerror(error));
}

std::vector<Index> CheckedOrder(Index n) {
  const CheckMode::Order mode = Checks().order;
  std::vector<Index> order(std::size_t(std::max<Index>(n, 0)));
  for (Index i = 0; i < n; ++i) order[i] = mode == CheckMode::kReverse ? n - 1 - i : i;
  if (mode == CheckMode::kShuffle) {
    // one generator for the process: every launch a new permutation, the same run to run
    static std::mt19937_64 rng(0x5eed);
    static std::mutex lock;
    const std::lock_guard<std::mutex> guard(lock);
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

}  // namespace cpu

int CpuThreads(const Backend& backend) {
  CONDSIM_CHECK(backend.kind() == BackendKind::kCpu, "CpuThreads: not a cpu backend");
  return static_cast<const CpuBackend&>(backend).threads();
}

}  // namespace condsim
