// The backend interface: memory, vector primitives, reductions and block-sparse SpMV, with a
// CPU/OpenMP implementation (cpu/) and a CUDA implementation (cuda/). Calls are coarse-grained;
// arrays live on the backend, so no host<->device copy happens unless asked for.
#pragma once

#include <cstddef>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "condsim/block_sparse.h"
#include "condsim/core.h"
#include "condsim/error.h"

namespace condsim {

enum class BackendKind { kCpu, kCuda };
// what a user asks for: a backend, or auto = CUDA when a usable device exists, else CPU
enum class BackendChoice { kCpu, kCuda, kAuto };
// how the CUDA backend multiplies block-sparse matrices (the CPU backend always uses kRowLoop):
// kCsr = cuSPARSE SpMV on the scalar CSR expansion, kBsr = cuSPARSE SpMV on BSR blocks,
// kRowLoop = condsim's own BsrRowSpmvOp, one thread per block row (same arithmetic as the CPU; a
// row's sum does not depend on the other rows, so a batch member multiplies as it does alone, and
// the rows of stopped environments are skipped). The default: reproducible across batch sizes.
enum class SpmvFormat { kCsr, kBsr, kRowLoop };

const char* ToString(BackendKind kind);
const char* ToString(SpmvFormat format);
// parses "cpu" | "cuda" | "auto"; throws condsim::Error naming the valid values
BackendChoice ParseBackendChoice(const std::string& name);
// parses "csr" | "bsr" | "rowloop"
SpmvFormat ParseSpmvFormat(const std::string& name);

struct BackendOptions {
  int cpu_threads = 0;                     // 0 = OpenMP's default (OMP_NUM_THREADS or all cores)
  int cuda_device = 0;                     // CUDA device ordinal
  SpmvFormat spmv_format = SpmvFormat::kRowLoop;  // CUDA SpMV path (see docs/performance.md)
};

// what is known about the CUDA backend in this process
struct CudaProbe {
  bool compiled = false;  // the CUDA backend was built into this binary
  bool usable = false;    // a device is present, and this binary's kernels run on it
  std::string reason;     // why not usable (empty when usable)
  std::string device_name;
  std::size_t total_memory = 0;  // bytes
  int compute_major = 0;
  int compute_minor = 0;
  int device_count = 0;
  std::string runtime_version;
  std::string driver_version;
};
CudaProbe ProbeCuda(int device = 0);

template <class T>
class Array;
class DeviceBlockMatrix;
class SegmentOffsets;

// what a backend was asked to do, counted as the host sees it (the same counts on every backend,
// so a CPU run measures a GPU run's allocations, transfers and launches): reductions that return
// a value to the host (Dot, Norm2, MaxAbs, ExclusiveScan) count as one download of that value,
// a library call (CUB, cuSPARSE) as one launch
struct BackendCounters {
  std::int64_t allocations = 0, allocated_bytes = 0, frees = 0;
  std::int64_t uploads = 0, upload_bytes = 0;      // host -> backend
  std::int64_t downloads = 0, download_bytes = 0;  // backend -> host
  std::int64_t launches = 0;                       // kernels and primitives
  // host time blocked in reads (downloads, scalar reductions, scans) [ns]: on CUDA mostly the
  // wait for the queued work, on the CPU the reductions' own work
  std::int64_t read_ns = 0;
  // the counts from `since` to this; the sum of two counts
  BackendCounters operator-(const BackendCounters& since) const;
  BackendCounters operator+(const BackendCounters& more) const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual BackendKind kind() const = 0;
  // one line: the backend, its device/threads
  virtual std::string Describe() const = 0;

  // ---- raw memory (pointers are only dereferenceable by this backend's code); counted
  void* Allocate(std::size_t bytes) {
    ++counters_.allocations;
    counters_.allocated_bytes += std::int64_t(bytes);
    return DoAllocate(bytes);
  }
  void Free(void* ptr) noexcept {
    ++counters_.frees;
    DoFree(ptr);
  }
  void CopyFromHost(void* dst, const void* host_src, std::size_t bytes) {
    ++counters_.uploads;
    counters_.upload_bytes += std::int64_t(bytes);
    DoCopyFromHost(dst, host_src, bytes);
  }
  void CopyToHost(void* host_dst, const void* src, std::size_t bytes) {
    ++counters_.downloads;
    counters_.download_bytes += std::int64_t(bytes);
    const ReadTimer timer(&counters_.read_ns);
    DoCopyToHost(host_dst, src, bytes);
  }
  void CopyWithin(void* dst, const void* src, std::size_t bytes) {
    ++counters_.launches;
    DoCopyWithin(dst, src, bytes);
  }
  // marks memory whose contents are unspecified from now on (an array resized within its
  // capacity): the CPU's guarded mode fills it with NaN bytes, as new memory, so a read of stale
  // entries shows; a no-op otherwise (not counted)
  void Invalidate(void* ptr, std::size_t bytes) { DoInvalidate(ptr, bytes); }
  // allocations, transfers and launches so far
  const BackendCounters& counters() const { return counters_; }
  // kernel sets count their launches here
  BackendCounters* mutable_counters() { return &counters_; }
  // waits for all queued work (a no-op on the CPU)
  virtual void Synchronize() = 0;

  // ---- vector primitives; sizes are checked, and outputs never alias inputs unless stated
  void Fill(Scalar value, Array<Scalar>* y);
  void Copy(const Array<Scalar>& x, Array<Scalar>* y);
  // y = a x + b y (y may not alias x); y is not read when b == 0
  void Axpby(Scalar a, const Array<Scalar>& x, Scalar b, Array<Scalar>* y);
  // z = x .* y element-wise (z may alias x or y)
  void Multiply(const Array<Scalar>& x, const Array<Scalar>& y, Array<Scalar>* z);

  // ---- reductions, deterministic: a fixed order that depends on neither thread count nor
  // timing. MaxAbs propagates NaN.
  Scalar Dot(const Array<Scalar>& x, const Array<Scalar>& y);
  Scalar Norm2(const Array<Scalar>& x);
  Scalar MaxAbs(const Array<Scalar>& x);
  // per segment s = [offsets[s], offsets[s+1]) (e.g. one environment's DOFs): out[s] = x_s . y_s
  void SegmentedDot(const Array<Scalar>& x, const Array<Scalar>& y, const Array<Index>& offsets,
                    Array<Scalar>* out);
  // out[s] = max |x_s| (0 for an empty segment, NaN when the segment holds a NaN)
  void SegmentedMaxAbs(const Array<Scalar>& x, const Array<Index>& offsets, Array<Scalar>* out);
  // the same with offsets checked once (SegmentOffsets): no download to check them
  void SegmentedDot(const Array<Scalar>& x, const Array<Scalar>& y, const SegmentOffsets& offsets, Array<Scalar>* out);
  void SegmentedMaxAbs(const Array<Scalar>& x, const SegmentOffsets& offsets, Array<Scalar>* out);

  // ---- index primitives (the broad phase): exclusive prefix sum of in[0, n) into out[0, n)
  // (out may alias in); returns the total
  Index ExclusiveScan(Index n, const Array<Index>& in, Array<Index>* out);
  // the same without the total: nothing is read back (for a host that knows the total already)
  void ExclusiveScanOnBackend(Index n, const Array<Index>& in, Array<Index>* out);
  // sorts the first n (key, value) pairs by key, stably (equal keys keep their order)
  void SortPairs(Index n, Array<std::uint64_t>* keys, Array<Index>* values);

  // ---- block-sparse matrices with a fixed pattern and refreshable values
  virtual std::unique_ptr<DeviceBlockMatrix> CreateMatrix(const BlockPattern& pattern) = 0;

 protected:
  Backend() = default;
  virtual void* DoAllocate(std::size_t bytes) = 0;
  virtual void DoFree(void* ptr) noexcept = 0;
  virtual void DoCopyFromHost(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void DoCopyToHost(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void DoCopyWithin(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void DoInvalidate(void* /*ptr*/, std::size_t /*bytes*/) {}
  // adds the time from its construction to its destruction to *ns (BackendCounters::read_ns)
  class ReadTimer {
   public:
    explicit ReadTimer(std::int64_t* ns) : ns_(ns), start_(std::chrono::steady_clock::now()) {}
    ~ReadTimer() {
      *ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
    }
    ReadTimer(const ReadTimer&) = delete;
    ReadTimer& operator=(const ReadTimer&) = delete;

   private:
    std::int64_t* ns_;
    std::chrono::steady_clock::time_point start_;
  };
  // a value read back by the host (a reduction's result)
  void CountRead(std::size_t bytes) {
    ++counters_.downloads;
    counters_.download_bytes += std::int64_t(bytes);
  }
  virtual void DoFill(Index n, Scalar value, Scalar* y) = 0;
  virtual void DoAxpby(Index n, Scalar a, const Scalar* x, Scalar b, Scalar* y) = 0;
  virtual void DoMultiply(Index n, const Scalar* x, const Scalar* y, Scalar* z) = 0;
  virtual Scalar DoDot(Index n, const Scalar* x, const Scalar* y) = 0;
  virtual Scalar DoMaxAbs(Index n, const Scalar* x) = 0;
  // offsets already checked: nondecreasing, offsets[0] = 0, offsets[last] = end <= n (end: the
  // host's copy of offsets[last])
  virtual void DoSegmentedDot(Index num_segments, const Index* offsets, Index end, const Scalar* x,
                              const Scalar* y, Scalar* out) = 0;
  virtual void DoSegmentedMaxAbs(Index num_segments, const Index* offsets, Index end, const Scalar* x,
                                 Scalar* out) = 0;
  // returns the total when `total` (else 0, and nothing is read back)
  virtual Index DoExclusiveScan(Index n, const Index* in, Index* out, bool total) = 0;
  virtual void DoSortPairs(Index n, std::uint64_t* keys, Index* values) = 0;

 private:
  // returns offsets[last]
  Index CheckSegments(const Array<Index>& offsets, Index n, Index out_size) const;
  Index CheckSegments(const std::vector<Index>& host, Index n, Index out_size) const;
  BackendCounters counters_;
};

// a typed array owned by a backend (device memory for CUDA); move-only
template <class T>
class Array {
 public:
  Array() = default;
  Array(Backend* backend, Index n) : backend_(backend), size_(n) {
    CONDSIM_CHECK(n >= 0, "array size must be non-negative, got " << n);
    if (n > 0) data_ = static_cast<T*>(backend_->Allocate(sizeof(T) * std::size_t(n)));
    capacity_ = n;
  }
  Array(Backend* backend, const std::vector<T>& host)
      : Array(backend, CheckedIndex(host.size(), "array size")) {
    CopyFromHost(host);
  }
  ~Array() { Release(); }
  Array(Array&& other) noexcept { *this = std::move(other); }
  Array& operator=(Array&& other) noexcept {
    if (this != &other) {
      Release();
      backend_ = std::exchange(other.backend_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  // capacity-managed reuse (a step's arrays keep their memory from step to step): n entries on
  // `backend` (null: the array's own; an array on another backend is released first), keeping
  // the allocation when it holds n, else one allocation of max(1.5 n, 2 capacity, 16) entries
  // (headroom: sizes that change with the contacts grow a few times, then stay; the capacity
  // never shrinks). The entries are unspecified afterwards (not kept across a reallocation).
  void Resize(Backend* backend, Index n) {
    CONDSIM_CHECK(n >= 0, "array size must be non-negative, got " << n);
    if (backend != nullptr && backend != backend_) {
      Release();
      backend_ = backend;
    }
    CONDSIM_CHECK(backend_ != nullptr || n == 0, "Array::Resize: no backend");
    if (n > capacity_)
      Grow(n, 0);
    else if (n > 0)
      backend_->Invalidate(data_, sizeof(T) * std::size_t(n));
    size_ = n;
  }
  void Resize(Index n) { Resize(nullptr, n); }
  // Resize(backend, host.size()) and the host's entries uploaded (one upload when non-empty)
  void Assign(Backend* backend, const std::vector<T>& host) {
    Resize(backend, CheckedIndex(host.size(), "array size"));
    CopyFromHost(host);
  }
  // Assign(backend, host) for an array that holds `held` (its owner's copy of the entries): the
  // entries before the first that differs are kept (copied on the backend when the allocation
  // moves), the rest uploaded in one upload, none when nothing differs (a node array whose tail
  // alone changes: the virtual nodes')
  void AssignSuffix(Backend* backend, const std::vector<T>& host, const std::vector<T>& held) {
    CONDSIM_CHECK(held.size() == std::size_t(size_) && (backend == nullptr || backend == backend_ || size_ == 0),
                  "Array::AssignSuffix: the held copy has " << held.size() << " entries, the array " << size_);
    if (backend != nullptr && backend != backend_) {
      Release();
      backend_ = backend;
    }
    const Index n = CheckedIndex(host.size(), "array size");
    Index first = 0;
    while (first < n && first < size_ && host[std::size_t(first)] == held[std::size_t(first)]) ++first;
    if (n > capacity_) Grow(n, first);
    size_ = n;
    if (n > first) backend_->CopyFromHost(data_ + first, host.data() + first, sizeof(T) * std::size_t(n - first));
  }
  // capacity for n entries on `backend` (null: the array's own), from a bound known in advance
  // (e.g. the contacts a scene can make), so that later Resize calls within it never allocate:
  // one allocation of exactly n entries when n exceeds the capacity, else nothing; the size and
  // the entries are kept (copied on the backend when the allocation moves), or with `keep` false
  // the size only (a scratch array written before it is read: no copy of unwritten memory)
  void Reserve(Backend* backend, Index n, bool keep = true) {
    CONDSIM_CHECK(n >= 0, "array capacity must be non-negative, got " << n);
    if (backend != nullptr && backend != backend_) {
      Release();
      backend_ = backend;
    }
    if (n <= capacity_) return;
    CONDSIM_CHECK(backend_ != nullptr, "Array::Reserve: no backend");
    T* fresh = static_cast<T*>(backend_->Allocate(sizeof(T) * std::size_t(n)));
    if (keep && size_ > 0) backend_->CopyWithin(fresh, data_, sizeof(T) * std::size_t(size_));
    if (data_ != nullptr) backend_->Free(data_);
    data_ = fresh;
    capacity_ = n;
  }
  // entries the allocation holds (>= size())
  Index capacity() const { return capacity_; }

  Index size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  Backend* backend() const { return backend_; }

  void CopyFromHost(const std::vector<T>& host) {
    CONDSIM_CHECK(host.size() == std::size_t(size_),
                  "host vector has " << host.size() << " entries, array has " << size_);
    if (size_ > 0) backend_->CopyFromHost(data_, host.data(), sizeof(T) * std::size_t(size_));
  }
  std::vector<T> ToHost() const {
    std::vector<T> host(static_cast<std::size_t>(size_));
    if (size_ > 0) backend_->CopyToHost(host.data(), data_, sizeof(T) * std::size_t(size_));
    return host;
  }

 private:
  // a new allocation for at least n entries (headroom as Resize's), the first `keep` entries
  // copied into it
  void Grow(Index n, Index keep) {
    const Index big = std::numeric_limits<Index>::max() / 2;
    const Index grown = n > big || capacity_ > big / 2 ? n : std::max({n + n / 2, 2 * capacity_, Index(16)});
    T* fresh = static_cast<T*>(backend_->Allocate(sizeof(T) * std::size_t(grown)));
    if (keep > 0) backend_->CopyWithin(fresh, data_, sizeof(T) * std::size_t(keep));
    if (data_ != nullptr) backend_->Free(data_);
    data_ = fresh;
    capacity_ = grown;
  }
  void Release() noexcept {
    if (data_ != nullptr) backend_->Free(data_);
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
  }

  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  Index size_ = 0;
  Index capacity_ = 0;
};

// the segment offsets of segmented reductions (nondecreasing from 0), checked once and kept on
// the backend and the host, so that a reduction over them reads nothing back to check them
class SegmentOffsets {
 public:
  SegmentOffsets() = default;
  // throws condsim::Error naming the first bad entry
  SegmentOffsets(Backend* backend, const std::vector<Index>& host);
  // the same offsets again (checked), keeping the array's memory; nothing is uploaded when they
  // equal the current ones
  void Assign(Backend* backend, const std::vector<Index>& host);
  const Array<Index>& array() const { return array_; }
  const std::vector<Index>& host() const { return host_; }
  Index num_segments() const { return host_.empty() ? 0 : static_cast<Index>(host_.size()) - 1; }

 private:
  Array<Index> array_;
  std::vector<Index> host_;
};

// a block-sparse matrix on a backend: pattern fixed at creation, values refreshed in place
class DeviceBlockMatrix {
 public:
  virtual ~DeviceBlockMatrix() = default;

  const BlockPattern& pattern() const { return pattern_; }
  // block values on the backend: pattern order, each block row-major
  const Array<Scalar>& values() const { return values_; }
  // for writing values in place (e.g. by an assembly kernel); marks them changed
  Array<Scalar>& mutable_values() {
    values_changed_ = true;
    return values_;
  }
  void SetValues(const std::vector<Scalar>& host_values);
  // a new pattern (same block size) for the coming products; nothing happens when it equals
  // the current one, else the arrays keep their memory where it holds the new sizes (no
  // allocation when the pattern does not grow) and the backend rebuilds what it derives from the
  // pattern (OnPatternChanged). The values are unspecified afterwards.
  // With `row_ptr` and `col_idx` (arrays of this backend that hold the same pattern, made there)
  // the arrays are copied on the backend instead of uploaded.
  void SetPattern(const BlockPattern& pattern, const Array<Index>* row_ptr = nullptr, const Array<Index>* col_idx = nullptr);
  // capacity for patterns of up to block_rows rows and nnz_blocks blocks (Array::Reserve), so
  // that a SetPattern within it allocates nothing (the CUDA backend reserves its scalar CSR
  // expansion too; its SpMV buffer still grows when cuSPARSE asks for more); the pattern and the
  // values stay
  void Reserve(Index block_rows, Index nnz_blocks);
  // what caches of this matrix key on: pattern_version() changes when SetPattern changed the
  // pattern (positions of blocks), generation() on every SetPattern call (a new system, e.g. a
  // new step's: as a new matrix object would be)
  std::uint64_t pattern_version() const { return pattern_version_; }
  std::uint64_t generation() const { return generation_; }
  // y = alpha A x + beta y; y is not read when beta == 0; y may not alias x. With row_active
  // (one flag per block row), the rows of block rows flagged 0 need not be computed: the CPU and
  // the row-loop CUDA path leave them as they are, cuSPARSE computes them (batched solves skip
  // the rows of environments that stopped)
  void Multiply(Scalar alpha, const Array<Scalar>& x, Scalar beta, Array<Scalar>* y,
                const Array<unsigned char>* row_active = nullptr);
  const Array<Index>& row_ptr() const { return row_ptr_; }
  const Array<Index>& col_idx() const { return col_idx_; }

 protected:
  DeviceBlockMatrix(Backend* backend, const BlockPattern& pattern);
  // values_ changed since the last product (e.g. regather a CSR copy)
  virtual void OnValuesChanged() {}
  // pattern_, row_ptr_, col_idx_ and the size of values_ changed (SetPattern)
  virtual void OnPatternChanged() {}
  // Reserve: the backend's own pattern-sized arrays (called before OnPatternChanged)
  virtual void OnReserve(Index /*block_rows*/, Index /*nnz_blocks*/) {}
  // row_active: null, or one flag per block row (see Multiply)
  virtual void DoMultiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y, const unsigned char* row_active) = 0;

  BlockPattern pattern_;
  Array<Index> row_ptr_;
  Array<Index> col_idx_;
  Array<Scalar> values_;

 private:
  bool values_changed_ = true;
  std::uint64_t pattern_version_ = 0, generation_ = 0;
};

// a backend with the reason it was chosen (e.g. "auto: no CUDA device (…), using cpu")
struct BackendSelection {
  std::unique_ptr<Backend> backend;
  std::string reason;
};
// throws condsim::Error when the requested backend cannot be used, with the reason
BackendSelection MakeBackend(BackendChoice choice, const BackendOptions& options = {});

}  // namespace condsim
