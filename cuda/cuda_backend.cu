// The CUDA backend: device memory, the shared functors through cuda::ParallelFor, CUB
// reductions, and cuSPARSE SpMV (CSR or BSR) or condsim's own row-loop SpMV.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cusparse.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "condsim/build_info.h"
#include "condsim/chunk_reduce.h"
#include "condsim/vector_ops.h"
#include "cuda/cuda_backend.h"
#include "cuda/parallel.cuh"

#define CONDSIM_CUSPARSE_CHECK(expr)                                                       \
  do {                                                                                    \
    const cusparseStatus_t condsim_sp_status_ = (expr);                                   \
    if (condsim_sp_status_ != CUSPARSE_STATUS_SUCCESS) {                                  \
      throw ::condsim::Error(std::string("cuSPARSE error in ") + #expr + " at " + __FILE__ + \
                             ":" + std::to_string(__LINE__) + ": " +                      \
                             cusparseGetErrorString(condsim_sp_status_));                 \
    }                                                                                     \
  } while (0)

namespace condsim {
namespace {

#if defined(CONDSIM_FLOAT) && CONDSIM_FLOAT
constexpr cudaDataType kCudaScalar = CUDA_R_32F;
#else
constexpr cudaDataType kCudaScalar = CUDA_R_64F;
#endif

// ---- reduction terms (device functors over an element index)
struct DotTerm {
  const Scalar* x;
  const Scalar* y;
  CONDSIM_HD_INLINE Scalar operator()(Index i) const { return x[i] * y[i]; }
};
struct AbsTerm {
  const Scalar* x;
  CONDSIM_HD_INLINE Scalar operator()(Index i) const { return std::fabs(x[i]); }
};
struct SumOp {
  CONDSIM_HD_INLINE Scalar operator()(Scalar a, Scalar b) const { return a + b; }
};
struct NanMaxOp {
  CONDSIM_HD_INLINE Scalar operator()(Scalar a, Scalar b) const { return NanMax(a, b); }
};

// dst[k] = src[map[k]]: refreshes the scalar-CSR copy of BSR values
struct GatherOp {
  const Index* map;
  const Scalar* src;
  Scalar* dst;
  CONDSIM_HD_INLINE void operator()(Index k) const { dst[k] = src[map[k]]; }
};

// writes a known value: proves that this binary's kernels run on the device
struct ProbeOp {
  int* out;
  CONDSIM_HD_INLINE void operator()(Index) const { *out = 42; }
};

// ---- segmented reductions in chunk_reduce.h's order (independent of the number of segments)
// per segment its chunk count; 0 at num_segments, so the exclusive sum ends with the total
struct ChunkCountOp {
  const Index* offsets;
  Index num_segments;
  Index* count;
  CONDSIM_HD_INLINE void operator()(Index s) const {
    count[s] = s < num_segments ? ReduceChunks(offsets[s + 1] - offsets[s]) : 0;
  }
};

// one block per chunk (grid-stride over the total): the threads' strided folds, then the tree
template <class Term, class Op>
__global__ void __launch_bounds__(kReduceThreads) ChunkPartialKernel(Term term, const Index* offsets, const Index* chunk_first,
                                                                     Index num_segments, Op op, Scalar init, Scalar* partial) {
  __shared__ Scalar lane[kReduceThreads];
  const Index total = chunk_first[num_segments];
  const int t = static_cast<int>(threadIdx.x);
  for (Index c = blockIdx.x; c < total; c += gridDim.x) {
    const Index s = ChunkSegment(chunk_first, num_segments, c);
    const Index begin = offsets[s] + (c - chunk_first[s]) * kReduceChunk;
    const Index n = offsets[s + 1] - begin < kReduceChunk ? offsets[s + 1] - begin : kReduceChunk;
    Scalar acc = init;
    for (Index k = t; k < n; k += kReduceThreads) acc = op(acc, term(begin + k));
    lane[t] = acc;
    __syncthreads();
    for (int stride = kReduceThreads / 2; stride > 0; stride /= 2) {
      if (t < stride) lane[t] = op(lane[t], lane[t + stride]);
      __syncthreads();
    }
    if (t == 0) partial[c] = lane[0];
    __syncthreads();
  }
}

// per segment its chunks' values folded in order from init
template <class Op>
struct ChunkFoldOp {
  const Index* chunk_first;
  const Scalar* partial;
  Op op;
  Scalar init;
  Scalar* out;
  CONDSIM_HD_INLINE void operator()(Index s) const {
    Scalar acc = init;
    for (Index c = chunk_first[s]; c < chunk_first[s + 1]; ++c) acc = op(acc, partial[c]);
    out[s] = acc;
  }
};

template <class Term>
thrust::transform_iterator<Term, thrust::counting_iterator<Index>> TermIterator(Term term) {
  return thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), term);
}

std::string VersionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

class CudaBackend;

class CudaBlockMatrix final : public DeviceBlockMatrix {
 public:
  CudaBlockMatrix(CudaBackend* backend, const BlockPattern& pattern, SpmvFormat format);
  ~CudaBlockMatrix() override;

 protected:
  void OnValuesChanged() override;
  void OnPatternChanged() override { BuildPattern(); }
  void OnReserve(Index block_rows, Index nnz_blocks) override;
  void DoMultiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y, const unsigned char* row_active) override;

 private:
  CudaBackend* cuda_;
  // the CSR expansion and the cuSPARSE descriptor of pattern_ (the arrays keep their memory)
  void BuildPattern();

  SpmvFormat format_;
  cusparseSpMatDescr_t descr_ = nullptr;
  // scalar CSR expansion (format kCsr only)
  Array<Index> csr_row_ptr_;
  Array<Index> csr_col_;
  Array<Index> csr_from_bsr_;
  Array<Scalar> csr_values_;
  void* spmv_buffer_ = nullptr;
  std::size_t spmv_buffer_bytes_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options)
      : device_(options.cuda_device), format_(options.spmv_format) {
    CONDSIM_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    CONDSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = prop.name;
    CONDSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CONDSIM_CUSPARSE_CHECK(cusparseCreate(&sparse_));
    CONDSIM_CUSPARSE_CHECK(cusparseSetStream(sparse_, stream_));
    CONDSIM_CUDA_CHECK(cudaMalloc(&result_, 2 * sizeof(Scalar)));
    // the device's stream-ordered pool (cudaMallocAsync) where it has one, keeping what is freed
    // (no release to the driver at synchronizations): an array freed and allocated again costs
    // no synchronization and no driver allocation
    int pools = 0;
    CONDSIM_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_));
    pooled_ = pools != 0;
    if (pooled_) {
      cudaMemPool_t pool = nullptr;
      CONDSIM_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_));
      std::uint64_t keep = UINT64_MAX;
      CONDSIM_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    cudaFree(scratch_);
    cudaFree(chunk_index_);
    cudaFree(chunk_partial_);
    cudaFree(result_);
    cusparseDestroy(sparse_);
    cudaStreamDestroy(stream_);
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string Describe() const override {
    return "cuda (device " + std::to_string(device_) + ": " + name_ + ", SpMV " +
           ToString(format_) + ")";
  }

  void* DoAllocate(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t err = pooled_ ? cudaMallocAsync(&p, bytes, stream_) : cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw Error("cuda backend: cudaMalloc of " + std::to_string(bytes) +
                  " bytes failed: " + cudaGetErrorString(err));
    }
    return p;
  }
  void DoFree(void* ptr) noexcept override {
    // pending work may still read the buffer: freed in stream order (pool), or after it
    if (pooled_) {
      cudaFreeAsync(ptr, stream_);
      return;
    }
    cudaStreamSynchronize(stream_);
    cudaFree(ptr);
  }
  void DoCopyFromHost(void* dst, const void* src, std::size_t bytes) override {
    CONDSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    CONDSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void DoCopyToHost(void* dst, const void* src, std::size_t bytes) override {
    CONDSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    CONDSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void DoCopyWithin(void* dst, const void* src, std::size_t bytes) override {
    CONDSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void Synchronize() override { CONDSIM_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  std::unique_ptr<DeviceBlockMatrix> CreateMatrix(const BlockPattern& pattern) override {
    return std::make_unique<CudaBlockMatrix>(this, pattern, format_);
  }

  cudaStream_t stream() const { return stream_; }
  cusparseHandle_t sparse() const { return sparse_; }

 protected:
  void DoFill(Index n, Scalar value, Scalar* y) override {
    cuda::ParallelFor(n, FillOp{value, y}, stream_);
  }
  void DoAxpby(Index n, Scalar a, const Scalar* x, Scalar b, Scalar* y) override {
    cuda::ParallelFor(n, AxpbyOp{a, x, b, y}, stream_);
  }
  void DoMultiply(Index n, const Scalar* x, const Scalar* y, Scalar* z) override {
    cuda::ParallelFor(n, MultiplyOp{x, y, z}, stream_);
  }
  Scalar DoDot(Index n, const Scalar* x, const Scalar* y) override {
    return Reduce(n, TermIterator(DotTerm{x, y}), SumOp{}, Scalar(0));
  }
  Scalar DoMaxAbs(Index n, const Scalar* x) override {
    return Reduce(n, TermIterator(AbsTerm{x}), NanMaxOp{}, Scalar(0));
  }
  void DoSegmentedDot(Index num_segments, const Index* offsets, Index end, const Scalar* x, const Scalar* y,
                      Scalar* out) override {
    SegmentedReduce(num_segments, offsets, end, DotTerm{x, y}, SumOp{}, Scalar(0), out);
  }
  void DoSegmentedMaxAbs(Index num_segments, const Index* offsets, Index end, const Scalar* x,
                         Scalar* out) override {
    SegmentedReduce(num_segments, offsets, end, AbsTerm{x}, NanMaxOp{}, Scalar(0), out);
  }
  Index DoExclusiveScan(Index n, const Index* in, Index* out, bool total) override {
    // the total is the last input plus its prefix; read the input first (out may alias it)
    Index last = 0, prefix = 0;
    if (total) DoCopyToHost(&last, in + (n - 1), sizeof(Index));
    std::size_t bytes = 0;
    CONDSIM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream_));
    void* tmp = Scratch(bytes);
    CONDSIM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, n, stream_));
    if (!total) return 0;
    DoCopyToHost(&prefix, out + (n - 1), sizeof(Index));
    return prefix + last;
  }
  void DoSortPairs(Index n, std::uint64_t* keys, Index* values) override {
    // CUB's radix sort (stable) into the kept scratch buffer, copied back in stream order: no
    // allocation once the buffer holds n pairs (Thrust's sort allocated its temporaries per call)
    const std::size_t key_bytes = Aligned(sizeof(std::uint64_t) * std::size_t(n));
    const std::size_t value_bytes = Aligned(sizeof(Index) * std::size_t(n));
    std::size_t bytes = 0;
    CONDSIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys, values, values, n, 0, 64, stream_));
    char* tmp = static_cast<char*>(Scratch(key_bytes + value_bytes + bytes));
    auto* keys_out = reinterpret_cast<std::uint64_t*>(tmp);
    auto* values_out = reinterpret_cast<Index*>(tmp + key_bytes);
    CONDSIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp + key_bytes + value_bytes, bytes, keys, keys_out, values, values_out, n, 0,
                                                       64, stream_));
    CONDSIM_CUDA_CHECK(cudaMemcpyAsync(keys, keys_out, sizeof(std::uint64_t) * std::size_t(n), cudaMemcpyDeviceToDevice, stream_));
    CONDSIM_CUDA_CHECK(cudaMemcpyAsync(values, values_out, sizeof(Index) * std::size_t(n), cudaMemcpyDeviceToDevice, stream_));
  }
  // bytes rounded up to 256 (the alignment CUB wants of its temporary storage)
  static std::size_t Aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

 private:
  void* Scratch(std::size_t bytes) { return Buffer(&scratch_, &scratch_bytes_, bytes); }

  // CUB device-wide reduction (no atomics: run-to-run deterministic on one device)
  template <class It, class Op>
  void ReduceInto(Index n, It in, Op op, Scalar init, Scalar* out) {
    std::size_t bytes = 0;
    CONDSIM_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, in, out, n, op, init, stream_));
    void* tmp = Scratch(bytes);
    CONDSIM_CUDA_CHECK(cub::DeviceReduce::Reduce(tmp, bytes, in, out, n, op, init, stream_));
  }
  template <class It, class Op>
  Scalar Reduce(Index n, It in, Op op, Scalar init) {
    ReduceInto(n, in, op, init, result_);
    Scalar host = 0;
    DoCopyToHost(&host, result_, sizeof(Scalar));
    return host;
  }

  // chunk_reduce.h's order, the same for a segment whatever the other segments (a batch
  // environment reduces as alone): per segment its chunk count and their exclusive sum (the
  // total at num_segments; one thread for a few segments), a block per chunk, then per segment its
  // chunks in order; no host read
  template <class Term, class Op>
  void SegmentedReduce(Index num_segments, const Index* offsets, Index end, Term term, Op op, Scalar init, Scalar* out) {
    const Index n1 = num_segments + 1;
    // chunks at most: end / kReduceChunk + one partial chunk per segment
    const Index bound = end / kReduceChunk + num_segments;
    Index* count = static_cast<Index*>(Buffer(&chunk_index_, &chunk_index_bytes_, 2 * sizeof(Index) * std::size_t(n1)));
    Index* first = count + n1;
    Scalar* partial = static_cast<Scalar*>(Buffer(&chunk_partial_, &chunk_partial_bytes_, sizeof(Scalar) * std::size_t(bound)));
    if (num_segments <= kSerialChunkLayout) {
      cuda::ParallelFor(1, ChunkFirstOp{offsets, num_segments, first}, stream_);
    } else {
      cuda::ParallelFor(n1, ChunkCountOp{offsets, num_segments, count}, stream_);
      std::size_t bytes = 0;
      CONDSIM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, count, first, n1, stream_));
      void* tmp = Scratch(bytes);
      CONDSIM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, bytes, count, first, n1, stream_));
    }
    const unsigned blocks = static_cast<unsigned>(bound < 65535 ? (bound > 0 ? bound : 1) : 65535);
    ChunkPartialKernel<<<blocks, kReduceThreads, 0, stream_>>>(term, offsets, first, num_segments, op, init, partial);
    CONDSIM_CUDA_CHECK(cudaGetLastError());
    cuda::ParallelFor(num_segments, ChunkFoldOp<Op>{first, partial, op, init, out}, stream_);
  }

  // a device buffer kept between calls, grown (the old one freed in stream order) when too small
  void* Buffer(void** ptr, std::size_t* have, std::size_t bytes) {
    if (bytes > *have) {
      if (*ptr != nullptr) Free(*ptr);
      *ptr = nullptr;
      *have = 0;
      *ptr = Allocate(bytes);  // clears the error state when it throws
      *have = bytes;
    }
    return *ptr;
  }

  int device_;
  SpmvFormat format_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cusparseHandle_t sparse_ = nullptr;
  Scalar* result_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  bool pooled_ = false;            // DoAllocate / DoFree through the stream-ordered pool
  void* chunk_index_ = nullptr;    // SegmentedReduce: chunk counts and their exclusive sum
  std::size_t chunk_index_bytes_ = 0;
  void* chunk_partial_ = nullptr;  // SegmentedReduce: the chunks' values
  std::size_t chunk_partial_bytes_ = 0;
};

CudaBlockMatrix::CudaBlockMatrix(CudaBackend* backend, const BlockPattern& pattern,
                                 SpmvFormat format)
    : DeviceBlockMatrix(backend, pattern), cuda_(backend), format_(format) {
  BuildPattern();
}

// the scalar CSR expansion's room for a reserved pattern (DeviceBlockMatrix::Reserve; BuildPattern
// then refills it in place)
void CudaBlockMatrix::OnReserve(Index block_rows, Index nnz_blocks) {
  if (format_ != SpmvFormat::kCsr) return;
  const Index bd = pattern_.block_dim;
  const std::int64_t nnz = std::int64_t(nnz_blocks) * bd * bd;
  if (nnz > INT32_MAX) return;  // BuildPattern rejects such a pattern
  csr_row_ptr_.Reserve(cuda_, block_rows * bd + 1);
  csr_col_.Reserve(cuda_, static_cast<Index>(nnz));
  csr_from_bsr_.Reserve(cuda_, static_cast<Index>(nnz));
  csr_values_.Reserve(cuda_, static_cast<Index>(nnz));
}

void CudaBlockMatrix::BuildPattern() {
  const BlockPattern& pattern = pattern_;
  const Index bd = pattern.block_dim;
  if (descr_ != nullptr) {
    cusparseDestroySpMat(descr_);  // host-side: the arrays it named stay
    descr_ = nullptr;
  }
  if (format_ == SpmvFormat::kCsr) {
    // scalar CSR: row (r, i) lists block k's row i for each block k of block row r (ExpandToCsr)
    const std::int64_t nnz = pattern.nnz();
    const CsrExpansion csr = ExpandToCsr(pattern);
    csr_row_ptr_.Assign(cuda_, csr.row_ptr);
    csr_col_.Assign(cuda_, csr.col);
    csr_from_bsr_.Assign(cuda_, csr.map);
    csr_values_.Resize(cuda_, static_cast<Index>(nnz));
    CONDSIM_CUSPARSE_CHECK(cusparseCreateCsr(
        &descr_, pattern.rows(), pattern.cols(), nnz, csr_row_ptr_.data(), csr_col_.data(),
        csr_values_.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
        kCudaScalar));
  } else if (format_ == SpmvFormat::kBsr) {
    CONDSIM_CUSPARSE_CHECK(cusparseCreateBsr(
        &descr_, pattern.block_rows, pattern.block_cols, pattern.nnz_blocks(), bd, bd,
        row_ptr_.data(), col_idx_.data(), values_.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
        CUSPARSE_INDEX_BASE_ZERO, kCudaScalar, CUSPARSE_ORDER_ROW));
  }
}

CudaBlockMatrix::~CudaBlockMatrix() {
  cudaStreamSynchronize(cuda_->stream());
  if (descr_ != nullptr) cusparseDestroySpMat(descr_);
  cudaFree(spmv_buffer_);
}

void CudaBlockMatrix::OnValuesChanged() {
  if (format_ == SpmvFormat::kCsr) {
    cuda::ParallelFor(csr_values_.size(),
                      GatherOp{csr_from_bsr_.data(), values_.data(), csr_values_.data()},
                      cuda_->stream());
  }
}

void CudaBlockMatrix::DoMultiply(Scalar alpha, const Scalar* x, Scalar beta, Scalar* y, const unsigned char* row_active) {
  // cuSPARSE computes every row (row_active only lets rows be skipped)
  if (format_ == SpmvFormat::kRowLoop) {
    const BsrRowSpmvOp op{pattern_.block_dim, row_ptr_.data(), col_idx_.data(),
                          values_.data(), alpha, x, beta, y, row_active};
    DispatchBsrRowSpmv(op, [&](const auto& f) { cuda::ParallelFor(pattern_.block_rows, f, cuda_->stream()); });
    return;
  }
  // beta == 0 must not read y (it may hold NaN): clear it, so cuSPARSE's beta*y is 0
  if (beta == Scalar(0)) {
    CONDSIM_CUDA_CHECK(cudaMemsetAsync(y, 0, sizeof(Scalar) * std::size_t(pattern_.rows()),
                                       cuda_->stream()));
  }
  // the vector descriptors are destroyed on every way out, also when a call below throws
  struct DnVec {
    cusparseDnVecDescr_t d = nullptr;
    ~DnVec() {
      if (d != nullptr) cusparseDestroyDnVec(d);
    }
  } dx, dy;
  CONDSIM_CUSPARSE_CHECK(cusparseCreateDnVec(&dx.d, pattern_.cols(), const_cast<Scalar*>(x), kCudaScalar));
  CONDSIM_CUSPARSE_CHECK(cusparseCreateDnVec(&dy.d, pattern_.rows(), y, kCudaScalar));
  const cusparseDnVecDescr_t vx = dx.d, vy = dy.d;
  // CSR_ALG2 gives bitwise run-to-run identical results (cuSPARSE documentation)
  const cusparseSpMVAlg_t alg =
      format_ == SpmvFormat::kCsr ? CUSPARSE_SPMV_CSR_ALG2 : CUSPARSE_SPMV_BSR_ALG1;
  std::size_t bytes = 0;
  CONDSIM_CUSPARSE_CHECK(cusparseSpMV_bufferSize(cuda_->sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 &alpha, descr_, vx, &beta, vy, kCudaScalar, alg,
                                                 &bytes));
  if (bytes > spmv_buffer_bytes_) {
    if (spmv_buffer_ != nullptr) cuda_->Free(spmv_buffer_);  // in stream order
    spmv_buffer_ = nullptr;
    spmv_buffer_bytes_ = 0;
    spmv_buffer_ = cuda_->Allocate(bytes);  // clears the error state when it throws
    spmv_buffer_bytes_ = bytes;
  }
  CONDSIM_CUSPARSE_CHECK(cusparseSpMV(cuda_->sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                      descr_, vx, &beta, vy, kCudaScalar, alg, spmv_buffer_));
}

}  // namespace

CudaProbe ProbeCuda(int device) {
  CudaProbe probe;
  probe.compiled = true;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  probe.runtime_version = VersionString(runtime);
  probe.driver_version = driver > 0 ? VersionString(driver) : "none";
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    probe.reason = std::string("no usable CUDA driver/device: cudaGetDeviceCount returned ") +
                   cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
    return probe;
  }
  probe.device_count = count;
  if (count == 0) {
    probe.reason = "no CUDA device present";
    return probe;
  }
  if (device < 0 || device >= count) {
    probe.reason = "device " + std::to_string(device) + " requested, but only " +
                   std::to_string(count) + " CUDA device(s) present";
    return probe;
  }
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) {
    probe.reason = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(err);
    return probe;
  }
  probe.device_name = prop.name;
  probe.total_memory = prop.totalGlobalMem;
  probe.compute_major = prop.major;
  probe.compute_minor = prop.minor;
  // run one kernel: fails with "no kernel image" when the device's architecture was not built;
  // the caller's current device is restored (a backend on another device keeps its own)
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  if (!restore) cudaGetLastError();  // no stale error for the launch below
  struct RestoreDevice {
    bool on;
    int device;
    ~RestoreDevice() {
      if (on) cudaSetDevice(device);
    }
  } restore_device{restore, previous};
  try {
    CONDSIM_CUDA_CHECK(cudaSetDevice(device));
    cuda::DeviceBuffer<int> flag(1);
    CONDSIM_CUDA_CHECK(cudaMemset(flag.get(), 0, sizeof(int)));
    cuda::ParallelFor(1, ProbeOp{flag.get()});
    int host = 0;
    CONDSIM_CUDA_CHECK(cudaMemcpy(&host, flag.get(), sizeof(int), cudaMemcpyDeviceToHost));
    if (host != 42) {
      probe.reason = "a test kernel did not run on " + probe.device_name;
      return probe;
    }
  } catch (const Error& e) {
    cudaGetLastError();
    probe.reason = std::string("kernels of this build (architectures " +
                               std::string(CONDSIM_CUDA_ARCHITECTURES) + ") fail on " +
                               probe.device_name + " (sm_" + std::to_string(prop.major) +
                               std::to_string(prop.minor) + "): ") +
                   e.what();
    return probe;
  }
  probe.usable = true;
  return probe;
}

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options) {
  const CudaProbe probe = ProbeCuda(options.cuda_device);
  if (!probe.usable) throw Error("the cuda backend is not usable: " + probe.reason);
  return std::make_unique<CudaBackend>(options);
}

cudaStream_t CudaStream(const Backend& backend) {
  CONDSIM_CHECK(backend.kind() == BackendKind::kCuda, "CudaStream: not a cuda backend");
  return static_cast<const CudaBackend&>(backend).stream();
}

}  // namespace condsim
