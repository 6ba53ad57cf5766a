// COND body modes: the sparse coarse solve of bodies of many patches (docs/solver.md, "Sparse
// coarse solve"): the block-sparse Z^T A Z factorized on the host, solved each iteration.
#include "models/cond/cond_body_modes.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void CondBodyModes::FactorSparse(const BlockPattern& pattern, const BodyModeHost& used, const std::vector<unsigned char>& refresh_body) {
  sparse_begin_ = sparse_end_ = 0;
  if (sparse_used_.empty()) return;
  sparse_begin_ = sparse_used_.front()[0];
  sparse_end_ = sparse_used_.back()[1];
  Backend* b = ctx_->backend;
  const BodyModeView view = arrays_.view();
  std::vector<Index> mark(std::size_t(num_patches_), -1);
  for (const auto& [p0, p1, src] : sparse_used_) {
    if (!refresh_body[std::size_t(used.patch_body[p0])]) continue;
    if (!sparse_coarse_[std::size_t(src)]) sparse_coarse_[std::size_t(src)] = std::make_unique<SparseCoarse>();
    SparseCoarse& f = *sparse_coarse_[std::size_t(src)];
    // the block pattern: patch P couples to the body's patches that the rows of A of its listed
    // nodes reach (the columns of T's listed rows), sorted
    std::vector<Index> ptr(1, 0), col;
    for (Index p = p0; p < p1; ++p) {
      const std::size_t row_begin = col.size();
      for (Index q = used.ptr[p]; q < used.ptr[p + 1]; ++q) {
        const Index i = used.node[q];
        for (Index k = pattern.row_ptr[i]; k < pattern.row_ptr[i + 1]; ++k) {
          const Index pq = used.node_patch[pattern.col_idx[k]];
          if (pq < p0 || pq >= p1 || mark[std::size_t(pq)] == p) continue;
          mark[std::size_t(pq)] = p;
          col.push_back(pq - p0);
        }
      }
      std::sort(col.begin() + std::ptrdiff_t(row_begin), col.end());
      ptr.push_back(static_cast<Index>(col.size()));
    }
    if (ptr != c_ptr_up_) {
      c_ptr_.Assign(b, ptr);
      c_ptr_up_ = ptr;
    }
    if (col != c_col_up_) {
      c_col_.Assign(b, col);
      c_col_up_ = col;
    }
    c_val_.Resize(b, 36 * static_cast<Index>(col.size()));
    ctx_->kernels->BodyModeSparseMatrix(p1 - p0, BodyModeSparseMatrixOp{view, t_.data(), p0, c_ptr_.data(), c_col_.data(), c_val_.data()});
    const std::vector<Scalar> values = c_val_.ToHost();
    // D^-1/2 from A_c's diagonal, then S + shift I (its lower triangle, sym(A_c) scaled), as
    // BodyModeInvertOp; a diagonal entry <= 0, a non-finite entry or a failed factor: no correction
    const Index m = p1 - p0, n = 6 * m;
    f.scale.assign(std::size_t(n), 0);
    f.ok = true;
    for (Index r = 0; r < m && f.ok; ++r)
      for (Index k = ptr[r]; k < ptr[r + 1]; ++k)
        if (col[k] == r)
          for (int d = 0; d < 6; ++d) {
            const Scalar a = values[36 * std::size_t(k) + 7 * std::size_t(d)];
            if (!(a > 0) || !std::isfinite(a)) f.ok = false;
            else f.scale[std::size_t(6 * r + d)] = 1 / std::sqrt(a);
          }
    if (!f.ok) continue;
    std::vector<Eigen::Triplet<Scalar>> entries;
    entries.reserve(36 * col.size() / 2 + std::size_t(n));
    for (Index r = 0; r < m; ++r)
      for (Index k = ptr[r]; k < ptr[r + 1]; ++k) {
        const Index c = col[k];
        if (c > r) continue;
        // the transposed block (c, r) for sym(A_c)
        const Index kt = Index(std::lower_bound(col.begin() + ptr[c], col.begin() + ptr[c + 1], r) - col.begin());
        const bool has_t = kt < ptr[c + 1] && col[kt] == r;
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) {
            const Index gi = 6 * r + i, gj = 6 * c + j;
            if (gj > gi) continue;
            const Scalar at = has_t ? values[36 * std::size_t(kt) + 6 * std::size_t(j) + std::size_t(i)] : Scalar(0);
            const Scalar v = Scalar(0.5) * (values[36 * std::size_t(k) + 6 * std::size_t(i) + std::size_t(j)] + at);
            const Scalar sv = f.scale[std::size_t(gi)] * v * f.scale[std::size_t(gj)] + (gi == gj ? Scalar(kPatchRegularization) : Scalar(0));
            if (!std::isfinite(sv)) f.ok = false;
            entries.emplace_back(int(gi), int(gj), sv);
          }
      }
    if (!f.ok) continue;
    Eigen::SparseMatrix<Scalar> s(n, n);
    s.setFromTriplets(entries.begin(), entries.end());
    if (ptr != f.ptr || col != f.col) {
      f.llt.analyzePattern(s);
      f.ptr = std::move(ptr);
      f.col = std::move(col);
    }
    f.llt.factorize(s);
    f.ok = f.llt.info() == Eigen::Success;
  }
}

void CondBodyModes::SolveSparse() {
  if (sparse_used_.empty()) return;
  // one read of the sparse bodies' rows of g, one write of dv there (a dense body in between
  // gets 0, then its own rows from BodyModeSolveOp); a stopped environment's g is 0, so its dv too
  Backend* b = ctx_->backend;
  const std::size_t begin = 6 * std::size_t(sparse_begin_), count = 6 * std::size_t(sparse_end_ - sparse_begin_);
  g_host_.resize(count);
  dv_host_.assign(count, 0);
  b->CopyToHost(g_host_.data(), g_.data() + begin, sizeof(Scalar) * count);
  for (const auto& [p0, p1, src] : sparse_used_) {
    const SparseCoarse* f = sparse_coarse_[std::size_t(src)].get();
    if (f == nullptr || !f->ok) continue;
    const Index n = 6 * (p1 - p0);
    const std::size_t off = 6 * std::size_t(p0 - sparse_begin_);
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> y(n);
    for (Index k = 0; k < n; ++k) y[k] = f->scale[std::size_t(k)] * g_host_[off + std::size_t(k)];
    // dv = -D^-1/2 (S + shift I)^-1 D^-1/2 g
    const Eigen::Matrix<Scalar, Eigen::Dynamic, 1> x = f->llt.solve(y);
    for (Index k = 0; k < n; ++k) dv_host_[off + std::size_t(k)] = -f->scale[std::size_t(k)] * x[k];
  }
  b->CopyFromHost(dv_.data() + begin, dv_host_.data(), sizeof(Scalar) * count);
}
}  // namespace condsim
