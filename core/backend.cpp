// Backend-independent parts of the backend interface: argument checks, parsing, the factory.
#include "condsim/backend.h"

#include <cmath>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"

namespace condsim {

const char* ToString(BackendKind kind) { return kind == BackendKind::kCpu ? "cpu" : "cuda"; }

const char* ToString(SpmvFormat format) {
  switch (format) {
    case SpmvFormat::kCsr:
      return "csr";
    case SpmvFormat::kBsr:
      return "bsr";
    case SpmvFormat::kRowLoop:
      return "rowloop";
  }
  return "?";
}

BackendChoice ParseBackendChoice(const std::string& name) {
  if (name == "cpu") return BackendChoice::kCpu;
  if (name == "cuda") return BackendChoice::kCuda;
  if (name == "auto") return BackendChoice::kAuto;
  throw Error("unknown backend '" + name + "' (valid: cpu, cuda, auto)");
}

SpmvFormat ParseSpmvFormat(const std::string& name) {
  if (name == "csr") return SpmvFormat::kCsr;
  if (name == "bsr") return SpmvFormat::kBsr;
  if (name == "rowloop") return SpmvFormat::kRowLoop;
  throw Error("unknown SpMV format '" + name + "' (valid: csr, bsr, rowloop)");
}

namespace {
void CheckSameBackend(const Backend* self, const void* array_backend, const char* what) {
  CONDSIM_CHECK(array_backend == self, what << " belongs to a different backend");
}
}  // namespace

BackendCounters BackendCounters::operator+(const BackendCounters& more) const {
  BackendCounters d;
  d.allocations = allocations + more.allocations;
  d.allocated_bytes = allocated_bytes + more.allocated_bytes;
  d.frees = frees + more.frees;
  d.uploads = uploads + more.uploads;
  d.upload_bytes = upload_bytes + more.upload_bytes;
  d.downloads = downloads + more.downloads;
  d.download_bytes = download_bytes + more.download_bytes;
  d.launches = launches + more.launches;
  d.read_ns = read_ns + more.read_ns;
  return d;
}

BackendCounters BackendCounters::operator-(const BackendCounters& since) const {
  BackendCounters d;
  d.allocations = allocations - since.allocations;
  d.allocated_bytes = allocated_bytes - since.allocated_bytes;
  d.frees = frees - since.frees;
  d.uploads = uploads - since.uploads;
  d.upload_bytes = upload_bytes - since.upload_bytes;
  d.downloads = downloads - since.downloads;
  d.download_bytes = download_bytes - since.download_bytes;
  d.launches = launches - since.launches;
  d.read_ns = read_ns - since.read_ns;
  return d;
}

void Backend::Fill(Scalar value, Array<Scalar>* y) {
  CheckSameBackend(this, y->backend(), "Fill: y");
  if (y->size() > 0) {
    ++counters_.launches;
    DoFill(y->size(), value, y->data());
  }
}

void Backend::Copy(const Array<Scalar>& x, Array<Scalar>* y) {
  CheckSameBackend(this, x.backend(), "Copy: x");
  CheckSameBackend(this, y->backend(), "Copy: y");
  CONDSIM_CHECK(x.size() == y->size(), "Copy: sizes differ (" << x.size() << " vs " << y->size() << ")");
  if (x.size() > 0 && x.data() != y->data())
    CopyWithin(y->data(), x.data(), sizeof(Scalar) * std::size_t(x.size()));
}

void Backend::Axpby(Scalar a, const Array<Scalar>& x, Scalar b, Array<Scalar>* y) {
  CheckSameBackend(this, x.backend(), "Axpby: x");
  CheckSameBackend(this, y->backend(), "Axpby: y");
  CONDSIM_CHECK(x.size() == y->size(), "Axpby: sizes differ (" << x.size() << " vs " << y->size() << ")");
  if (x.size() > 0) {
    ++counters_.launches;
    DoAxpby(x.size(), a, x.data(), b, y->data());
  }
}

void Backend::Multiply(const Array<Scalar>& x, const Array<Scalar>& y, Array<Scalar>* z) {
  CheckSameBackend(this, x.backend(), "Multiply: x");
  CheckSameBackend(this, y.backend(), "Multiply: y");
  CheckSameBackend(this, z->backend(), "Multiply: z");
  CONDSIM_CHECK(x.size() == y.size() && y.size() == z->size(),
                "Multiply: sizes differ (" << x.size() << ", " << y.size() << ", " << z->size() << ")");
  if (x.size() > 0) {
    ++counters_.launches;
    DoMultiply(x.size(), x.data(), y.data(), z->data());
  }
}

Scalar Backend::Dot(const Array<Scalar>& x, const Array<Scalar>& y) {
  CheckSameBackend(this, x.backend(), "Dot: x");
  CheckSameBackend(this, y.backend(), "Dot: y");
  CONDSIM_CHECK(x.size() == y.size(), "Dot: sizes differ (" << x.size() << " vs " << y.size() << ")");
  if (x.size() == 0) return 0;
  ++counters_.launches;
  CountRead(sizeof(Scalar));
  const ReadTimer timer(&counters_.read_ns);
  return DoDot(x.size(), x.data(), y.data());
}

Scalar Backend::Norm2(const Array<Scalar>& x) { return std::sqrt(Dot(x, x)); }

Index Backend::ExclusiveScan(Index n, const Array<Index>& in, Array<Index>* out) {
  CheckSameBackend(this, in.backend(), "ExclusiveScan: in");
  CheckSameBackend(this, out->backend(), "ExclusiveScan: out");
  CONDSIM_CHECK(n >= 0 && n <= in.size() && n <= out->size(), "ExclusiveScan: n = " << n << " exceeds the arrays");
  if (n == 0) return 0;
  ++counters_.launches;
  CountRead(sizeof(Index));
  const ReadTimer timer(&counters_.read_ns);
  return DoExclusiveScan(n, in.data(), out->data(), true);
}

void Backend::ExclusiveScanOnBackend(Index n, const Array<Index>& in, Array<Index>* out) {
  CheckSameBackend(this, in.backend(), "ExclusiveScan: in");
  CheckSameBackend(this, out->backend(), "ExclusiveScan: out");
  CONDSIM_CHECK(n >= 0 && n <= in.size() && n <= out->size(), "ExclusiveScan: n = " << n << " exceeds the arrays");
  if (n == 0) return;
  ++counters_.launches;
  DoExclusiveScan(n, in.data(), out->data(), false);
}

void Backend::SortPairs(Index n, Array<std::uint64_t>* keys, Array<Index>* values) {
  CheckSameBackend(this, keys->backend(), "SortPairs: keys");
  CheckSameBackend(this, values->backend(), "SortPairs: values");
  CONDSIM_CHECK(n >= 0 && n <= keys->size() && n <= values->size(), "SortPairs: n = " << n << " exceeds the arrays");
  if (n > 1) {
    ++counters_.launches;
    DoSortPairs(n, keys->data(), values->data());
  }
}

Scalar Backend::MaxAbs(const Array<Scalar>& x) {
  CheckSameBackend(this, x.backend(), "MaxAbs: x");
  if (x.size() == 0) return 0;
  ++counters_.launches;
  CountRead(sizeof(Scalar));
  const ReadTimer timer(&counters_.read_ns);
  return DoMaxAbs(x.size(), x.data());
}

Index Backend::CheckSegments(const Array<Index>& offsets, Index n, Index out_size) const {
  CheckSameBackend(this, offsets.backend(), "segment offsets");
  CONDSIM_CHECK(offsets.size() >= 1, "segment offsets must hold at least one entry");
  CONDSIM_CHECK(out_size == offsets.size() - 1, "segmented reduction: output has "
                                                    << out_size << " entries for "
                                                    << offsets.size() - 1 << " segments");
  // offsets are small (one per environment): validate a host copy
  return CheckSegments(offsets.ToHost(), n, out_size);
}

namespace {
// nondecreasing from 0
void CheckOffsetOrder(const std::vector<Index>& host) {
  CONDSIM_CHECK(!host.empty(), "segment offsets must hold at least one entry");
  CONDSIM_CHECK(host[0] == 0, "segment offsets must start at 0, got " << host[0]);
  for (std::size_t s = 1; s < host.size(); ++s) CONDSIM_CHECK(host[s - 1] <= host[s], "segment offsets decrease at segment " << s - 1);
}
}  // namespace

Index Backend::CheckSegments(const std::vector<Index>& host, Index n, Index out_size) const {
  CheckOffsetOrder(host);
  CONDSIM_CHECK(out_size == Index(host.size()) - 1, "segmented reduction: output has " << out_size << " entries for " << host.size() - 1
                                                                                      << " segments");
  CONDSIM_CHECK(host.back() <= n, "segment offsets end at " << host.back() << " beyond the vector size " << n);
  return host.back();
}

SegmentOffsets::SegmentOffsets(Backend* backend, const std::vector<Index>& host) : host_(host) {
  CheckOffsetOrder(host_);
  array_ = Array<Index>(backend, host_);
}

void SegmentOffsets::Assign(Backend* backend, const std::vector<Index>& host) {
  if (host == host_ && array_.backend() == backend && array_.size() == Index(host.size())) return;
  CheckOffsetOrder(host);
  host_ = host;
  array_.Assign(backend, host_);
}

namespace {
// the checks of a reduction over checked offsets (x and out on `backend`, one output per segment);
// returns the offsets' end
Index CheckedSegmentsEnd(const Backend* backend, const Array<Scalar>& x, const SegmentOffsets& offsets, const Array<Scalar>& out,
                         const char* what) {
  CheckSameBackend(backend, x.backend(), (std::string(what) + ": x").c_str());
  CheckSameBackend(backend, out.backend(), (std::string(what) + ": out").c_str());
  CheckSameBackend(backend, offsets.array().backend(), "segment offsets");
  CONDSIM_CHECK(out.size() == offsets.num_segments(), "segmented reduction: output has " << out.size() << " entries for "
                                                                                         << offsets.num_segments() << " segments");
  const Index end = offsets.host().back();
  CONDSIM_CHECK(end <= x.size(), "segment offsets end at " << end << " beyond the vector size " << x.size());
  return end;
}
}  // namespace

void Backend::SegmentedDot(const Array<Scalar>& x, const Array<Scalar>& y, const SegmentOffsets& offsets, Array<Scalar>* out) {
  const Index end = CheckedSegmentsEnd(this, x, offsets, *out, "SegmentedDot");
  CheckSameBackend(this, y.backend(), "SegmentedDot: y");
  CONDSIM_CHECK(x.size() == y.size(), "SegmentedDot: sizes differ (" << x.size() << " vs " << y.size() << ")");
  if (out->size() > 0) {
    ++counters_.launches;
    DoSegmentedDot(out->size(), offsets.array().data(), end, x.data(), y.data(), out->data());
  }
}

void Backend::SegmentedMaxAbs(const Array<Scalar>& x, const SegmentOffsets& offsets, Array<Scalar>* out) {
  const Index end = CheckedSegmentsEnd(this, x, offsets, *out, "SegmentedMaxAbs");
  if (out->size() > 0) {
    ++counters_.launches;
    DoSegmentedMaxAbs(out->size(), offsets.array().data(), end, x.data(), out->data());
  }
}

void Backend::SegmentedDot(const Array<Scalar>& x, const Array<Scalar>& y,
                           const Array<Index>& offsets, Array<Scalar>* out) {
  CheckSameBackend(this, x.backend(), "SegmentedDot: x");
  CheckSameBackend(this, y.backend(), "SegmentedDot: y");
  CheckSameBackend(this, out->backend(), "SegmentedDot: out");
  CONDSIM_CHECK(x.size() == y.size(), "SegmentedDot: sizes differ (" << x.size() << " vs " << y.size() << ")");
  const Index end = CheckSegments(offsets, x.size(), out->size());
  if (out->size() > 0) {
    ++counters_.launches;
    DoSegmentedDot(out->size(), offsets.data(), end, x.data(), y.data(), out->data());
  }
}

void Backend::SegmentedMaxAbs(const Array<Scalar>& x, const Array<Index>& offsets,
                              Array<Scalar>* out) {
  CheckSameBackend(this, x.backend(), "SegmentedMaxAbs: x");
  CheckSameBackend(this, out->backend(), "SegmentedMaxAbs: out");
  const Index end = CheckSegments(offsets, x.size(), out->size());
  if (out->size() > 0) {
    ++counters_.launches;
    DoSegmentedMaxAbs(out->size(), offsets.data(), end, x.data(), out->data());
  }
}

DeviceBlockMatrix::DeviceBlockMatrix(Backend* backend, const BlockPattern& pattern)
    : pattern_(pattern),
      row_ptr_(backend, pattern.row_ptr),
      col_idx_(backend, pattern.col_idx),
      values_(backend, CheckedIndex(std::size_t(pattern.nnz()), "matrix: scalar entries")) {
  pattern_.Validate();
}

void DeviceBlockMatrix::SetValues(const std::vector<Scalar>& host_values) {
  CONDSIM_CHECK(host_values.size() == std::size_t(pattern_.nnz()),
                "SetValues: got " << host_values.size() << " values, the pattern holds "
                                  << pattern_.nnz());
  mutable_values().CopyFromHost(host_values);
}

void DeviceBlockMatrix::SetPattern(const BlockPattern& pattern, const Array<Index>* row_ptr, const Array<Index>* col_idx) {
  CONDSIM_CHECK(pattern.block_dim == pattern_.block_dim,
                "SetPattern: block size " << pattern.block_dim << ", the matrix has " << pattern_.block_dim);
  ++generation_;
  if (pattern.block_rows == pattern_.block_rows && pattern.block_cols == pattern_.block_cols &&
      pattern.row_ptr == pattern_.row_ptr && pattern.col_idx == pattern_.col_idx)
    return;
  pattern.Validate();
  pattern_ = pattern;
  if (row_ptr != nullptr && col_idx != nullptr) {
    CONDSIM_CHECK(row_ptr->size() >= pattern_.block_rows + 1 && col_idx->size() >= pattern_.nnz_blocks(),
                  "SetPattern: the backend's arrays hold fewer entries than the pattern");
    row_ptr_.Resize(nullptr, pattern_.block_rows + 1);
    col_idx_.Resize(nullptr, pattern_.nnz_blocks());
    Backend* b = values_.backend();
    b->CopyWithin(row_ptr_.data(), row_ptr->data(), sizeof(Index) * std::size_t(row_ptr_.size()));
    if (col_idx_.size() > 0) b->CopyWithin(col_idx_.data(), col_idx->data(), sizeof(Index) * std::size_t(col_idx_.size()));
  } else {
    row_ptr_.Assign(nullptr, pattern_.row_ptr);
    col_idx_.Assign(nullptr, pattern_.col_idx);
  }
  values_.Resize(CheckedIndex(std::size_t(pattern_.nnz()), "matrix: scalar entries"));
  values_changed_ = true;
  ++pattern_version_;
  OnPatternChanged();
}

void DeviceBlockMatrix::Reserve(Index block_rows, Index nnz_blocks) {
  const Index bd = pattern_.block_dim;
  row_ptr_.Reserve(nullptr, block_rows + 1);
  col_idx_.Reserve(nullptr, nnz_blocks);
  values_.Reserve(nullptr, CheckedIndex(std::size_t(nnz_blocks) * std::size_t(bd * bd), "matrix: reserved entries"));
  OnReserve(block_rows, nnz_blocks);
  // what the backend derived from the arrays names their memory, which may have moved
  OnPatternChanged();
  values_changed_ = true;
}

void DeviceBlockMatrix::Multiply(Scalar alpha, const Array<Scalar>& x, Scalar beta, Array<Scalar>* y,
                                 const Array<unsigned char>* row_active) {
  CONDSIM_CHECK(x.backend() == values_.backend() && y->backend() == values_.backend(),
                "SpMV: x and y must live on the matrix's backend");
  CONDSIM_CHECK(x.size() == pattern_.cols(),
                "SpMV: x has " << x.size() << " entries, the matrix has " << pattern_.cols() << " columns");
  CONDSIM_CHECK(y->size() == pattern_.rows(),
                "SpMV: y has " << y->size() << " entries, the matrix has " << pattern_.rows() << " rows");
  CONDSIM_CHECK(x.data() != y->data() || x.size() == 0, "SpMV: y may not alias x");
  CONDSIM_CHECK(row_active == nullptr || (row_active->backend() == values_.backend() && row_active->size() == pattern_.block_rows),
                "SpMV: row_active needs one flag per block row (" << pattern_.block_rows << ") on the matrix's backend");
  if (values_changed_) {
    OnValuesChanged();
    values_changed_ = false;
  }
  if (pattern_.rows() > 0) {
    ++y->backend()->mutable_counters()->launches;
    DoMultiply(alpha, x.data(), beta, y->data(), row_active ? row_active->data() : nullptr);
  }
}

BackendSelection MakeBackend(BackendChoice choice, const BackendOptions& options) {
  BackendSelection sel;
  if (choice == BackendChoice::kCpu) {
    sel.backend = MakeCpuBackend(options);
    sel.reason = "cpu requested";
    return sel;
  }
  const CudaProbe probe = ProbeCuda(options.cuda_device);
  if (probe.usable) {
    sel.backend = MakeCudaBackend(options);
    sel.reason = std::string(choice == BackendChoice::kAuto ? "auto: " : "") + "CUDA device " +
                 std::to_string(options.cuda_device) + " (" + probe.device_name + ") is usable";
    return sel;
  }
  if (choice == BackendChoice::kCuda) {
    throw Error("the cuda backend is not usable: " + probe.reason);
  }
  sel.backend = MakeCpuBackend(options);
  sel.reason = "auto: cuda not usable (" + probe.reason + "), using cpu";
  return sel;
}

}  // namespace condsim
