// COND body modes: the sparse coarse solve of bodies of many patches (docs/solver.md, "Sparse
// coarse solve"): the block-sparse Z^T A Z factorized on the host by 6x6 blocks, solved each
// iteration on the backend (BodyModeSparseSolveOp).
#include "models/cond/cond_body_modes.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/OrderingMethods>

#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void FactorCoarseBlocks(Index m, const std::vector<Index>& ptr, const std::vector<Index>& col, const std::vector<Scalar>& values,
                        SparseCoarseFactor* f) {
  const Index n = 6 * m;
  // D^-1/2 from A_c's diagonal, as BodyModeInvertOp; a diagonal entry <= 0, a non-finite entry or
  // a failed factor: no correction
  std::vector<Scalar> scale(std::size_t(n), 0);
  f->ok = true;
  for (Index r = 0; r < m && f->ok; ++r)
    for (Index k = ptr[r]; k < ptr[r + 1]; ++k)
      if (col[k] == r)
        for (int d = 0; d < 6; ++d) {
          const Scalar a = values[36 * std::size_t(k) + 7 * std::size_t(d)];
          if (!(a > 0) || !std::isfinite(a)) f->ok = false;
          else scale[std::size_t(6 * r + d)] = 1 / std::sqrt(a);
        }
  if (!f->ok) return;
  // the patch order: AMD on the block pattern (kept while the pattern stays)
  if (ptr != f->ptr || col != f->col) {
    std::vector<Eigen::Triplet<Scalar>> pattern;
    for (Index r = 0; r < m; ++r)
      for (Index k = ptr[r]; k < ptr[r + 1]; ++k) pattern.emplace_back(int(r), int(col[k]), Scalar(1));
    Eigen::SparseMatrix<Scalar> p(m, m);
    p.setFromTriplets(pattern.begin(), pattern.end());
    Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> perm;
    Eigen::AMDOrdering<int>()(p, perm);
    // (Eigen's ordering gives, per new position, the old index)
    f->order.assign(perm.indices().data(), perm.indices().data() + m);
  }
  std::vector<Index> pos(static_cast<std::size_t>(m));
  for (Index k = 0; k < m; ++k) pos[std::size_t(f->order[std::size_t(k)])] = k;
  // S + shift I in factor order, its lower triangle: sym(A_c) scaled
  std::vector<Eigen::Triplet<Scalar>> entries;
  entries.reserve(18 * col.size() + std::size_t(n));
  for (Index r = 0; r < m; ++r)
    for (Index k = ptr[r]; k < ptr[r + 1]; ++k) {
      const Index c = col[k], pr = pos[std::size_t(r)], pc = pos[std::size_t(c)];
      if (pc > pr) continue;
      // the transposed block (c, r) for sym(A_c)
      const Index kt = Index(std::lower_bound(col.begin() + ptr[c], col.begin() + ptr[c + 1], r) - col.begin());
      const bool has_t = kt < ptr[c + 1] && col[kt] == r;
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          if (pr == pc && j > i) continue;
          const Scalar at = has_t ? values[36 * std::size_t(kt) + 6 * std::size_t(j) + std::size_t(i)] : Scalar(0);
          const Scalar v = Scalar(0.5) * (values[36 * std::size_t(k) + 6 * std::size_t(i) + std::size_t(j)] + at);
          const Index gi = 6 * r + i, gj = 6 * c + j;
          const Scalar sv = scale[std::size_t(gi)] * v * scale[std::size_t(gj)] + (gi == gj ? Scalar(kPatchRegularization) : Scalar(0));
          if (!std::isfinite(sv)) f->ok = false;
          entries.emplace_back(int(6 * pr + i), int(6 * pc + j), sv);
        }
    }
  if (!f->ok) return;
  Eigen::SparseMatrix<Scalar> s(n, n);
  s.setFromTriplets(entries.begin(), entries.end());
  if (ptr != f->ptr || col != f->col) {
    f->llt.analyzePattern(s);
    f->ptr = ptr;
    f->col = col;
  }
  f->llt.factorize(s);
  f->ok = f->llt.info() == Eigen::Success;
  if (!f->ok) return;
  f->scale.resize(std::size_t(n));
  for (Index k = 0; k < m; ++k)
    for (int d = 0; d < 6; ++d) f->scale[std::size_t(6 * k + d)] = scale[std::size_t(6 * f->order[std::size_t(k)] + d)];
  // L by blocks: per block column c the block rows below the diagonal (sorted); the blocks
  // numbered row by row, each row's in column order
  const Eigen::SparseMatrix<Scalar>& l = f->llt.matrixL().nestedExpression();
  std::vector<std::vector<Index>> below(static_cast<std::size_t>(m));
  std::vector<Index> mark(std::size_t(m), -1);
  for (Index c = 0; c < m; ++c) {
    for (Index j = 6 * c; j < 6 * c + 6; ++j)
      for (Eigen::SparseMatrix<Scalar>::InnerIterator it(l, j); it; ++it) {
        const Index r = Index(it.row()) / 6;
        if (r > c && mark[std::size_t(r)] != c) {
          mark[std::size_t(r)] = c;
          below[std::size_t(c)].push_back(r);
        }
      }
    std::sort(below[std::size_t(c)].begin(), below[std::size_t(c)].end());
  }
  f->row_ptr.assign(std::size_t(m) + 1, 0);
  for (Index c = 0; c < m; ++c)
    for (const Index r : below[std::size_t(c)]) ++f->row_ptr[std::size_t(r) + 1];
  for (Index r = 0; r < m; ++r) f->row_ptr[std::size_t(r) + 1] += f->row_ptr[std::size_t(r)];
  const std::size_t blocks = std::size_t(f->row_ptr.back());
  f->row_col.assign(blocks, 0);
  f->col_ptr.assign(1, 0);
  f->col_row.clear();
  f->col_blk.clear();
  std::vector<Index> fill(f->row_ptr.begin(), f->row_ptr.end() - 1);
  for (Index c = 0; c < m; ++c) {
    for (const Index r : below[std::size_t(c)]) {
      const Index e = fill[std::size_t(r)]++;
      f->row_col[std::size_t(e)] = c;
      f->col_row.push_back(r);
      f->col_blk.push_back(e);
    }
    f->col_ptr.push_back(static_cast<Index>(f->col_row.size()));
  }
  f->val.assign(36 * blocks, 0);
  std::vector<Scalar> lkk(36 * std::size_t(m), 0);
  for (Index j = 0; j < n; ++j) {
    const Index c = j / 6;
    for (Eigen::SparseMatrix<Scalar>::InnerIterator it(l, j); it; ++it) {
      const Index i = Index(it.row()), r = i / 6;
      const std::size_t within = 6 * std::size_t(i % 6) + std::size_t(j % 6);
      if (r == c) {
        lkk[36 * std::size_t(r) + within] = it.value();
      } else {
        const auto& rows = below[std::size_t(c)];
        const Index q = Index(std::lower_bound(rows.begin(), rows.end(), r) - rows.begin());
        f->val[36 * std::size_t(f->col_blk[std::size_t(f->col_ptr[std::size_t(c)] + q)]) + within] = it.value();
      }
    }
  }
  // L_kk^-1 (lower triangular) by columns
  f->diag.assign(36 * std::size_t(m), 0);
  for (Index k = 0; k < m; ++k) {
    const Scalar* a = lkk.data() + 36 * std::size_t(k);
    Scalar* x = f->diag.data() + 36 * std::size_t(k);
    for (int j = 0; j < 6; ++j) {
      x[6 * j + j] = 1 / a[6 * j + j];
      for (int i = j + 1; i < 6; ++i) {
        Scalar sum = 0;
        for (int t = j; t < i; ++t) sum += a[6 * i + t] * x[6 * t + j];
        x[6 * i + j] = -sum / a[6 * i + i];
      }
    }
  }
  // the level schedules: a row's forward level follows those of its blocks' columns, its backward
  // level those of the rows below it in its column
  const auto schedule = [m](const std::vector<Index>& level, std::vector<Index>* lptr, std::vector<Index>* rows) {
    const Index levels = m > 0 ? *std::max_element(level.begin(), level.end()) + 1 : 0;
    lptr->assign(std::size_t(levels) + 1, 0);
    for (const Index v : level) ++(*lptr)[std::size_t(v) + 1];
    for (Index v = 0; v < levels; ++v) (*lptr)[std::size_t(v) + 1] += (*lptr)[std::size_t(v)];
    std::vector<Index> next(lptr->begin(), lptr->end() - 1);
    rows->assign(std::size_t(m), 0);
    for (Index k = 0; k < m; ++k) (*rows)[std::size_t(next[std::size_t(level[std::size_t(k)])]++)] = k;
  };
  std::vector<Index> level(std::size_t(m), 0);
  for (Index k = 0; k < m; ++k)
    for (Index e = f->row_ptr[std::size_t(k)]; e < f->row_ptr[std::size_t(k) + 1]; ++e)
      level[std::size_t(k)] = std::max(level[std::size_t(k)], level[std::size_t(f->row_col[std::size_t(e)])] + 1);
  schedule(level, &f->fwd_ptr, &f->fwd_row);
  level.assign(std::size_t(m), 0);
  for (Index k = m - 1; k >= 0; --k)
    for (Index e = f->col_ptr[std::size_t(k)]; e < f->col_ptr[std::size_t(k) + 1]; ++e)
      level[std::size_t(k)] = std::max(level[std::size_t(k)], level[std::size_t(f->col_row[std::size_t(e)])] + 1);
  schedule(level, &f->bwd_ptr, &f->bwd_row);
}

void AppendCoarseFactor(const SparseCoarseFactor* f, Index p0, Index m, BodyModeFactorHost* host) {
  const bool ok = f != nullptr && f->ok && static_cast<Index>(f->order.size()) == m;
  if (host->row_ptr.empty()) host->row_ptr.push_back(0), host->col_ptr.push_back(0), host->fwd_ptr.push_back(0), host->bwd_ptr.push_back(0);
  const Index row0 = static_cast<Index>(host->patch.size()), blk0 = static_cast<Index>(host->row_col.size());
  const Index fwd0 = static_cast<Index>(host->fwd_ptr.size()) - 1, bwd0 = static_cast<Index>(host->bwd_ptr.size()) - 1;
  const Index fwd = ok ? static_cast<Index>(f->fwd_ptr.size()) - 1 : 0, bwd = ok ? static_cast<Index>(f->bwd_ptr.size()) - 1 : 0;
  host->body.insert(host->body.end(), {row0, row0 + m, fwd0, fwd0 + fwd, bwd0, bwd0 + bwd, Index(ok)});
  for (Index k = 0; k < m; ++k) host->patch.push_back(p0 + (ok ? f->order[std::size_t(k)] : k));
  if (!ok) {
    // rows without blocks or levels: the solve's last phase writes dv = 0
    host->row_ptr.insert(host->row_ptr.end(), std::size_t(m), host->row_ptr.back());
    host->col_ptr.insert(host->col_ptr.end(), std::size_t(m), host->col_ptr.back());
    host->scale.insert(host->scale.end(), 6 * std::size_t(m), Scalar(0));
    host->diag.insert(host->diag.end(), 36 * std::size_t(m), Scalar(0));
    return;
  }
  const auto shifted = [](std::vector<Index>* out, const std::vector<Index>& in, std::size_t from, Index by) {
    for (std::size_t k = from; k < in.size(); ++k) out->push_back(in[k] + by);
  };
  shifted(&host->row_ptr, f->row_ptr, 1, blk0);
  shifted(&host->row_col, f->row_col, 0, row0);
  shifted(&host->col_ptr, f->col_ptr, 1, static_cast<Index>(host->col_row.size()));
  shifted(&host->col_row, f->col_row, 0, row0);
  shifted(&host->col_blk, f->col_blk, 0, blk0);
  shifted(&host->fwd_ptr, f->fwd_ptr, 1, static_cast<Index>(host->fwd_row.size()));
  shifted(&host->fwd_row, f->fwd_row, 0, row0);
  shifted(&host->bwd_ptr, f->bwd_ptr, 1, static_cast<Index>(host->bwd_row.size()));
  shifted(&host->bwd_row, f->bwd_row, 0, row0);
  host->scale.insert(host->scale.end(), f->scale.begin(), f->scale.end());
  host->diag.insert(host->diag.end(), f->diag.begin(), f->diag.end());
  host->val.insert(host->val.end(), f->val.begin(), f->val.end());
}

void CondBodyModes::FactorSparse(const BlockPattern& pattern, const BodyModeHost& used, const std::vector<unsigned char>& refresh_body) {
  Backend* b = ctx_->backend;
  const BodyModeView view = arrays_.view();
  std::vector<Index> mark(std::size_t(num_patches_), -1);
  bool any = false;
  for (const auto& [p0, p1, src] : sparse_used_) {
    if (!refresh_body[std::size_t(used.patch_body[p0])]) continue;
    if (!sparse_coarse_[std::size_t(src)]) sparse_coarse_[std::size_t(src)] = std::make_unique<SparseCoarseFactor>();
    SparseCoarseFactor& f = *sparse_coarse_[std::size_t(src)];
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
    FactorCoarseBlocks(p1 - p0, ptr, col, c_val_.ToHost(), &f);
    any = true;
  }
  // the factors of this solve's sparse bodies to the backend: after a factorization, or when the
  // sparse bodies moved in the solve's patches
  if (!any && sparse_used_ == factored_used_) return;
  BodyModeFactorHost host;
  for (const auto& [p0, p1, src] : sparse_used_) AppendCoarseFactor(sparse_coarse_[std::size_t(src)].get(), p0, p1 - p0, &host);
  factor_.Upload(b, host);
  factor_y_.Resize(b, 6 * static_cast<Index>(host.patch.size()));
  factored_used_ = sparse_used_;
}

void CondBodyModes::SolveSparse() {
  if (sparse_used_.empty()) return;
  ctx_->kernels->BodyModeSparseSolve(static_cast<Index>(sparse_used_.size()),
                                     BodyModeSparseSolveOp{factor_.view(), g_.data(), factor_y_.data(), dv_.data()});
}
}  // namespace condsim
