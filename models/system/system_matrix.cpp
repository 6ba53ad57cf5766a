// The global system: parts side by side plus the virtual nodes of eq. 15.
#include "models/system/system_matrix.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "condsim/error.h"
#include "models/system/system_kernels.h"

namespace condsim {

SystemMatrix::SystemMatrix(Backend* backend) : backend_(backend), kernels_(MakeKernels<SystemKernels>(*backend)) {}

SystemMatrix::~SystemMatrix() = default;

Index SystemMatrix::AddPart(const BlockPattern& pattern) {
  CONDSIM_CHECK(pattern.block_dim == 3 && pattern.block_rows == pattern.block_cols,
                "system: a part needs a square pattern of 3x3 blocks");
  CONDSIM_CHECK(matrix_ == nullptr, "system: parts must be added before the first SetVirtualNodes");
  pattern.Validate();
  const Index offset = base_nodes_;
  parts_.push_back(pattern);
  part_offset_.push_back(offset);
  base_nodes_ = CheckedIndex(std::size_t(base_nodes_) + pattern.block_rows, "system: nodes");
  // the base pattern grows by the part, shifted to its offset
  base_.block_dim = 3;
  base_.block_rows = base_.block_cols = base_nodes_;
  part_block_offset_.push_back(base_.nnz_blocks());
  for (Index r = 0; r < pattern.block_rows; ++r) {
    for (Index k = pattern.row_ptr[r]; k < pattern.row_ptr[r + 1]; ++k) base_.col_idx.push_back(offset + pattern.col_idx[k]);
    base_.row_ptr.push_back(static_cast<Index>(base_.col_idx.size()));
  }
  return offset;
}

void SystemMatrix::SetVirtualNodes(const VirtualNodeSet& vn) {
  const Index nv = vn.size();
  CONDSIM_CHECK(vn.ptr.size() == std::size_t(nv) + 1 && vn.jac.size() == 9 * vn.host.size() && vn.env.size() == std::size_t(nv),
                "system: inconsistent virtual node set");
  for (Index h : vn.host)
    CONDSIM_CHECK(h >= 0 && h < base_nodes_, "system: virtual node host " << h << " is not a base node (0.." << base_nodes_ - 1 << ")");
  virtual_ = vn;
  const Index n = base_nodes_ + nv;
  // eq. 15 terms as (row, col, kind, a, b, virtual node) in a fixed order
  struct Term {
    Index row, col;
    int kind;
    Index a, b, vn;
  };
  std::vector<Term> terms;
  for (Index k = 0; k < nv; ++k) {
    const Index vk = base_nodes_ + k;
    for (Index ea = vn.ptr[k]; ea < vn.ptr[k + 1]; ++ea) {
      for (Index eb = vn.ptr[k]; eb < vn.ptr[k + 1]; ++eb) terms.push_back({vn.host[ea], vn.host[eb], kJtJ, ea, eb, k});
      terms.push_back({vn.host[ea], vk, kMinusJt, ea, 0, k});
      terms.push_back({vk, vn.host[ea], kMinusJ, ea, 0, k});
    }
    terms.push_back({vk, vk, kIdentity, k, 0, k});
  }
  std::stable_sort(terms.begin(), terms.end(), [](const Term& x, const Term& y) {
    return std::tie(x.row, x.col) < std::tie(y.row, y.col);
  });
  // merged pattern: base columns and term columns, row by row (`appended`: every host-host term
  // lies on a base block, so the merge only appends the virtual columns and rows)
  bool appended = true;
  BlockPattern p;
  p.block_dim = 3;
  p.block_rows = p.block_cols = n;
  p.row_ptr.assign(1, 0);
  std::vector<Index> map(base_.col_idx.size());
  std::vector<Index> target;
  std::vector<Index> term_ptr{0};
  std::vector<int> kind;
  std::vector<Index> ta, tb, tvn;
  std::size_t t = 0;
  for (Index r = 0; r < n; ++r) {
    Index kb = r < base_nodes_ ? base_.row_ptr[r] : 0;
    const Index kb_end = r < base_nodes_ ? base_.row_ptr[r + 1] : 0;
    while (kb < kb_end || (t < terms.size() && terms[t].row == r)) {
      const bool has_term = t < terms.size() && terms[t].row == r;
      const Index c = kb < kb_end && (!has_term || base_.col_idx[kb] <= terms[t].col) ? base_.col_idx[kb] : terms[t].col;
      const Index pos = static_cast<Index>(p.col_idx.size());
      p.col_idx.push_back(c);
      if (kb < kb_end && base_.col_idx[kb] == c)
        map[kb++] = pos;
      else if (r < base_nodes_ && c < base_nodes_)
        appended = false;  // a host-host term off the base pattern: the merge inserts a column
      if (t < terms.size() && terms[t].row == r && terms[t].col == c) {
        target.push_back(pos);
        for (; t < terms.size() && terms[t].row == r && terms[t].col == c; ++t) {
          kind.push_back(terms[t].kind);
          ta.push_back(terms[t].a);
          tb.push_back(terms[t].b);
          tvn.push_back(terms[t].vn);
        }
        term_ptr.push_back(static_cast<Index>(kind.size()));
      }
    }
    p.row_ptr.push_back(static_cast<Index>(p.col_idx.size()));
  }
  // the matrix and the arrays keep their memory from step to step (the matrix rebuilds its
  // pattern only when it changed: the CUDA CSR expansion and cuSPARSE descriptor stay otherwise)
  const bool first = matrix_ == nullptr;
  if (first) matrix_ = backend_->CreateMatrix(p);
  b_.Resize(backend_, 3 * n);
  num_targets_ = static_cast<Index>(target.size());
  // the index arrays depend on the pattern and the terms only: made again when those changed, on
  // the backend from the hosts (MakeOnBackend) when the merge only appends, else uploaded
  const bool changed = map != host_block_map_ || target != host_target_ || term_ptr != host_term_ptr_ || kind != host_kind_ ||
                       ta != host_ta_ || tb != host_tb_ || tvn != host_tvn_ || vn.ptr != host_vn_ptr_ || vn.host != host_vn_host_ ||
                       block_map_.size() != Index(map.size());
  if (changed) {
    host_block_map_ = std::move(map);
    host_target_ = std::move(target);
    host_term_ptr_ = std::move(term_ptr);
    host_kind_ = std::move(kind);
    host_ta_ = std::move(ta);
    host_tb_ = std::move(tb);
    host_tvn_ = std::move(tvn);
    host_vn_ptr_ = vn.ptr;
    host_vn_host_ = vn.host;
    vn_ptr_.Assign(backend_, host_vn_ptr_);
    vn_host_.Assign(backend_, host_vn_host_);
    if (appended && !first && make_on_backend_) {
      MakeOnBackend(p);
    } else {
      block_map_.Assign(backend_, host_block_map_);
      target_block_.Assign(backend_, host_target_);
      term_ptr_.Assign(backend_, host_term_ptr_);
      term_kind_.Assign(backend_, host_kind_);
      term_a_.Assign(backend_, host_ta_);
      term_b_.Assign(backend_, host_tb_);
      term_vn_.Assign(backend_, host_tvn_);
      matrix_->SetPattern(p);
    }
  } else {
    matrix_->SetPattern(p);
  }
  SetJacobians(vn);
  kv_.Assign(backend_, vn.kv);
  ViewOnBackend();
}

void SystemMatrix::ViewOnBackend() {
  on_backend_ = VirtualNodesOnBackend{&virtual_, nullptr, nullptr, nullptr, base_nodes_, vn_ptr_.data(), vn_host_.data(),
                                      nullptr,   nullptr, nullptr, kv_.data()};
  if (compact_) {
    on_backend_.kind_host = &jac_kind_host_;
    on_backend_.offset_host = &jac_offset_host_;
    on_backend_.param_host = &jac_param_host_;
    on_backend_.kind = jac_kind_.data();
    on_backend_.offset = jac_offset_.data();
    on_backend_.param = jac_param_.data();
  }
}

void SystemMatrix::MakeOnBackend(const BlockPattern& p) {
  Backend* b = backend_;
  const Index nv = static_cast<Index>(host_vn_ptr_.size()) - 1, n = base_nodes_ + nv;
  const Index terms = static_cast<Index>(host_kind_.size()), targets = num_targets_;
  if (base_row_ptr_.size() == 0) {
    base_row_ptr_.Assign(b, base_.row_ptr);
    base_col_.Assign(b, base_.col_idx);
  }
  // the terms in the host's order (each virtual node's from the scan of their counts), sorted by
  // key (stable: the host's order among a target's terms)
  term_offset_.Resize(b, nv + 1);
  kernels_->Run(nv + 1, VirtualTermCountOp{vn_ptr_.data(), nv, term_offset_.data()});
  b->ExclusiveScanOnBackend(nv + 1, term_offset_, &term_offset_);
  term_key_.Resize(b, terms);
  term_order_.Resize(b, terms);
  for (Array<Index>* x : {&fill_a_, &fill_b_, &fill_vn_, &term_a_, &term_b_, &term_vn_, &term_head_, &term_target_}) x->Resize(b, terms);
  fill_kind_.Resize(b, terms);
  term_kind_.Resize(b, terms);
  kernels_->Run(nv, VirtualTermFillOp{vn_ptr_.data(), vn_host_.data(), term_offset_.data(), base_nodes_, n, term_key_.data(),
                                      term_order_.data(), fill_kind_.data(), fill_a_.data(), fill_b_.data(), fill_vn_.data()});
  b->SortPairs(terms, &term_key_, &term_order_);
  kernels_->Run(terms, VirtualTermSortedOp{term_key_.data(), term_order_.data(), fill_kind_.data(), fill_a_.data(), fill_b_.data(),
                                           fill_vn_.data(), term_kind_.data(), term_a_.data(), term_b_.data(), term_vn_.data(),
                                           term_head_.data()});
  // the target blocks: a term whose key differs from the one before starts one
  b->ExclusiveScanOnBackend(terms, term_head_, &term_target_);
  term_ptr_.Resize(b, targets + 1);
  target_key_.Resize(b, targets);
  kernels_->Run(terms + 1, VirtualTargetOp{term_key_.data(), term_head_.data(), term_target_.data(), terms, targets, term_ptr_.data(),
                                           target_key_.data()});
  // the merged pattern: per row its blocks, their scan, then the columns and the base blocks' places
  row_ptr_.Resize(b, n + 1);
  first_new_.Resize(b, n);
  kernels_->Run(n + 1, VirtualRowCountOp{base_row_ptr_.data(), base_nodes_, n, target_key_.data(), targets, row_ptr_.data(),
                                         first_new_.data()});
  b->ExclusiveScanOnBackend(n + 1, row_ptr_, &row_ptr_);
  col_.Resize(b, p.nnz_blocks());
  block_map_.Resize(b, base_.nnz_blocks());
  const VirtualMergeView merge{base_row_ptr_.data(), base_col_.data(), base_nodes_, n, target_key_.data(), row_ptr_.data(), first_new_.data()};
  kernels_->Run(n, VirtualRowFillOp{merge, col_.data(), block_map_.data()});
  target_block_.Resize(b, targets);
  kernels_->Run(targets, VirtualTargetBlockOp{merge, block_map_.data(), target_block_.data()});
  matrix_->SetPattern(p, &row_ptr_, &col_);
}

void SystemMatrix::SetJacobians(const VirtualNodeSet& vn) {
  // the blocks go up in their compact form (eq. 14: a kind byte and w for w I, or r for -[r]x, a
  // rigid body's omega node: 9 or 25 bytes an entry against 72) when each is one of them bitwise,
  // and are made on the backend (each entry's first parameter from the scan of their counts)
  const std::size_t entries = vn.host.size();
  jac_kind_host_.resize(entries);
  jac_offset_host_.resize(entries);
  jac_param_host_.clear();
  bool compact = true;
  for (std::size_t e = 0; e < entries && compact; ++e) {
    Mat3 j;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) j(r, c) = vn.jac[9 * e + 3 * r + c];
    const Vec3 r(j(1, 2), j(2, 0), j(0, 1));
    const Mat3 scaled = j(0, 0) * Mat3::Identity(), skew = Scalar(-1) * Skew(r);
    const bool is_scaled = std::memcmp(&scaled, &j, sizeof(Mat3)) == 0;
    compact = is_scaled || std::memcmp(&skew, &j, sizeof(Mat3)) == 0;
    jac_kind_host_[e] = is_scaled ? 0 : 1;
    jac_offset_host_[e] = static_cast<Index>(jac_param_host_.size());
    if (is_scaled)
      jac_param_host_.push_back(j(0, 0));
    else
      jac_param_host_.insert(jac_param_host_.end(), {r[0], r[1], r[2]});
  }
  compact_ = compact && make_on_backend_;
  if (!compact_) {
    jac_.Assign(backend_, vn.jac);
    return;
  }
  jac_kind_.Assign(backend_, jac_kind_host_);
  jac_param_.Assign(backend_, jac_param_host_);
  jac_offset_.Resize(backend_, Index(entries) + 1);
  kernels_->Run(Index(entries) + 1, VirtualParamCountOp{jac_kind_.data(), Index(entries), jac_offset_.data()});
  backend_->ExclusiveScanOnBackend(Index(entries) + 1, jac_offset_, &jac_offset_);
  jac_.Resize(backend_, 9 * Index(entries));
  kernels_->Run(Index(entries), VirtualJacobianOp{jac_kind_.data(), jac_offset_.data(), jac_param_.data(), jac_.data()});
}

void SystemMatrix::Assemble(const std::vector<const DeviceBlockMatrix*>& a, const std::vector<const Array<Scalar>*>& b) {
  CONDSIM_CHECK(matrix_ != nullptr, "system: SetVirtualNodes must be called before Assemble");
  CONDSIM_CHECK(a.size() == parts_.size() && b.size() == parts_.size(), "system: one matrix and one rhs per part");
  Array<Scalar>& values = matrix_->mutable_values();
  backend_->Fill(0, &values);
  backend_->Fill(0, &b_);
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    CONDSIM_CHECK(a[p]->pattern().nnz_blocks() == parts_[p].nnz_blocks() && b[p]->size() == parts_[p].rows(),
                  "system: part " << p << " does not match its registered pattern");
    kernels_->Run(parts_[p].nnz_blocks(),
                  ScatterBlocksOp{a[p]->values().data(), block_map_.data() + part_block_offset_[p], values.data()});
    if (b[p]->size() > 0)
      backend_->CopyWithin(b_.data() + 3 * std::int64_t(part_offset_[p]), b[p]->data(), sizeof(Scalar) * std::size_t(b[p]->size()));
  }
  kernels_->Run(num_targets_, VirtualBlocksOp{target_block_.data(), term_ptr_.data(), term_kind_.data(), term_a_.data(),
                                              term_b_.data(), term_vn_.data(), jac_.data(), kv_.data(), values.data()});
}

void SystemMatrix::Reserve(const ContactBounds& bounds, Array<Scalar>* v) {
  CONDSIM_CHECK(matrix_ != nullptr, "system: SetVirtualNodes must be called before Reserve");
  const Index nv = bounds.virtual_nodes, n = base_nodes_ + nv;
  const Index terms = bounds.terms;
  matrix_->Reserve(n, base_.nnz_blocks() + terms);
  b_.Reserve(backend_, 3 * n);
  v->Reserve(backend_, 3 * n);
  for (Array<Index>* a : {&target_block_, &term_ptr_, &term_a_, &term_b_, &term_vn_}) a->Reserve(backend_, terms + 1);
  term_kind_.Reserve(backend_, terms);
  vn_ptr_.Reserve(backend_, nv + 1);
  vn_host_.Reserve(backend_, bounds.virtual_entries);
  jac_.Reserve(backend_, 9 * bounds.virtual_entries);
  kv_.Reserve(backend_, nv);
  // the compact Jacobians keep their entries (the solver's records read them), and the view of
  // the virtual nodes follows the arrays' new memory
  jac_kind_.Reserve(backend_, bounds.virtual_entries);
  jac_offset_.Reserve(backend_, bounds.virtual_entries + 1);
  jac_param_.Reserve(backend_, 3 * bounds.virtual_entries);
  ViewOnBackend();
  // MakeOnBackend's arrays (written whole before they are read)
  if (!make_on_backend_) return;
  if (base_row_ptr_.size() == 0) {
    base_row_ptr_.Assign(backend_, base_.row_ptr);
    base_col_.Assign(backend_, base_.col_idx);
  }
  term_offset_.Reserve(backend_, nv + 1, false);
  term_key_.Reserve(backend_, terms, false);
  target_key_.Reserve(backend_, terms, false);
  for (Array<Index>* a : {&term_order_, &fill_a_, &fill_b_, &fill_vn_, &term_head_, &term_target_}) a->Reserve(backend_, terms, false);
  fill_kind_.Reserve(backend_, terms, false);
  row_ptr_.Reserve(backend_, n + 1, false);
  first_new_.Reserve(backend_, n, false);
  col_.Reserve(backend_, base_.nnz_blocks() + terms, false);
}

void SystemMatrix::GatherVelocity(const std::vector<const Array<Scalar>*>& part_v, Array<Scalar>* v) {
  CONDSIM_CHECK(part_v.size() == parts_.size(), "system: one velocity per part");
  v->Resize(backend_, 3 * num_nodes());
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    CONDSIM_CHECK(part_v[p]->size() == parts_[p].rows(), "system: part " << p << " velocity has the wrong size");
    if (part_v[p]->size() > 0)
      backend_->CopyWithin(v->data() + 3 * std::int64_t(part_offset_[p]), part_v[p]->data(), sizeof(Scalar) * std::size_t(part_v[p]->size()));
  }
  kernels_->Run(virtual_.size(), VirtualWarmStartOp{vn_ptr_.data(), vn_host_.data(), jac_.data(), base_nodes_, v->data()});
}

void SystemMatrix::ScatterVelocity(Index part, const Array<Scalar>& v, Array<Scalar>* part_v) {
  const std::size_t p = static_cast<std::size_t>(part);
  CONDSIM_CHECK(part >= 0 && p < parts_.size() && part_v->size() == parts_[p].rows() && v.size() >= 3 * base_nodes_,
                "system: velocity scatter size mismatch");
  if (part_v->size() > 0)
    backend_->CopyWithin(part_v->data(), v.data() + 3 * std::int64_t(part_offset_[p]), sizeof(Scalar) * std::size_t(part_v->size()));
}

}  // namespace condsim
