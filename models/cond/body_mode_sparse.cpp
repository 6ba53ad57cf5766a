// COND body modes: the sparse coarse solve of bodies of many patches (docs/solver.md, "Sparse
// coarse solve"): the block-sparse Z^T A Z's order and factor structure made on the host, its
// factor and the solve each iteration on the backend (BodyModeSparseFactorOp, BodyModeSparseSolveOp).
#include "models/cond/cond_body_modes.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCore>

#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

void AnalyzeCoarseBlocks(Index m, const std::vector<Index>& ptr, const std::vector<Index>& col, SparseCoarseFactor* f) {
  // the patch order: AMD on the block pattern (Eigen's ordering gives, per new position, the old
  // index)
  std::vector<Eigen::Triplet<Scalar>> pattern;
  for (Index r = 0; r < m; ++r)
    for (Index k = ptr[std::size_t(r)]; k < ptr[std::size_t(r) + 1]; ++k) pattern.emplace_back(int(r), int(col[std::size_t(k)]), Scalar(1));
  Eigen::SparseMatrix<Scalar> p(m, m);
  p.setFromTriplets(pattern.begin(), pattern.end());
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> perm;
  Eigen::AMDOrdering<int>()(p, perm);
  f->order.assign(perm.indices().data(), perm.indices().data() + m);
  std::vector<Index> pos(static_cast<std::size_t>(m));
  for (Index k = 0; k < m; ++k) pos[std::size_t(f->order[std::size_t(k)])] = k;
  // A_c's block at (r, c) (original patches), or -1; per patch its neighbours in either triangle
  const auto find = [&](Index r, Index c) {
    const auto first = col.begin() + ptr[std::size_t(r)], last = col.begin() + ptr[std::size_t(r) + 1];
    const auto it = std::lower_bound(first, last, c);
    return it != last && *it == c ? Index(it - col.begin()) : Index(-1);
  };
  std::vector<std::vector<Index>> adjacent(static_cast<std::size_t>(m));
  for (Index r = 0; r < m; ++r)
    for (Index k = ptr[std::size_t(r)]; k < ptr[std::size_t(r) + 1]; ++k) {
      adjacent[std::size_t(r)].push_back(col[std::size_t(k)]);
      adjacent[std::size_t(col[std::size_t(k)])].push_back(r);
    }
  // L's pattern, column by column: the rows of A_c below the diagonal and those of the columns
  // whose parent (first row below) this column is (the elimination tree)
  std::vector<std::vector<Index>> below(static_cast<std::size_t>(m)), children(static_cast<std::size_t>(m));
  std::vector<Index> mark(std::size_t(m), -1);
  for (Index c = 0; c < m; ++c) {
    std::vector<Index>& b = below[std::size_t(c)];
    const auto add = [&](Index r) {
      if (r > c && mark[std::size_t(r)] != c) {
        mark[std::size_t(r)] = c;
        b.push_back(r);
      }
    };
    for (const Index q : adjacent[std::size_t(f->order[std::size_t(c)])]) add(pos[std::size_t(q)]);
    for (const Index child : children[std::size_t(c)])
      for (const Index r : below[std::size_t(child)]) add(r);
    std::sort(b.begin(), b.end());
    if (!b.empty()) children[std::size_t(b.front())].push_back(c);
  }
  // blocks numbered row by row, each row's in column order
  f->row_ptr.assign(std::size_t(m) + 1, 0);
  for (Index c = 0; c < m; ++c)
    for (const Index r : below[std::size_t(c)]) ++f->row_ptr[std::size_t(r) + 1];
  for (Index r = 0; r < m; ++r) f->row_ptr[std::size_t(r) + 1] += f->row_ptr[std::size_t(r)];
  const std::size_t blocks = std::size_t(f->row_ptr.back());
  f->row_col.assign(blocks, 0);
  f->a_blk.assign(blocks, -1);
  f->a_blk_t.assign(blocks, -1);
  f->col_ptr.assign(1, 0);
  f->col_row.clear();
  f->col_blk.clear();
  f->col_of.clear();
  std::vector<Index> fill(f->row_ptr.begin(), f->row_ptr.end() - 1);
  for (Index c = 0; c < m; ++c) {
    for (const Index r : below[std::size_t(c)]) {
      const Index e = fill[std::size_t(r)]++;
      f->row_col[std::size_t(e)] = c;
      f->a_blk[std::size_t(e)] = find(f->order[std::size_t(r)], f->order[std::size_t(c)]);
      f->a_blk_t[std::size_t(e)] = find(f->order[std::size_t(c)], f->order[std::size_t(r)]);
      f->col_row.push_back(r);
      f->col_blk.push_back(e);
      f->col_of.push_back(c);
    }
    f->col_ptr.push_back(static_cast<Index>(f->col_row.size()));
  }
  f->a_diag.assign(std::size_t(m), -1);
  for (Index k = 0; k < m; ++k) {
    f->a_diag[std::size_t(k)] = find(f->order[std::size_t(k)], f->order[std::size_t(k)]);
    CONDSIM_CHECK(f->a_diag[std::size_t(k)] >= 0, "body modes: the coarse block pattern lacks patch " << f->order[std::size_t(k)] << "'s diagonal block");
  }
  // the level schedules: a row's forward level follows those of its blocks' columns, its backward
  // level those of the rows below it in its column; per forward level also the column entries of
  // its rows (the blocks the factorization makes there)
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
  f->fac_ptr.assign(1, 0);
  f->fac_ent.clear();
  for (std::size_t l = 0; l + 1 < f->fwd_ptr.size(); ++l) {
    for (Index t = f->fwd_ptr[l]; t < f->fwd_ptr[l + 1]; ++t) {
      const Index k = f->fwd_row[std::size_t(t)];
      for (Index u = f->col_ptr[std::size_t(k)]; u < f->col_ptr[std::size_t(k) + 1]; ++u) f->fac_ent.push_back(u);
    }
    f->fac_ptr.push_back(static_cast<Index>(f->fac_ent.size()));
  }
  level.assign(std::size_t(m), 0);
  for (Index k = m - 1; k >= 0; --k)
    for (Index e = f->col_ptr[std::size_t(k)]; e < f->col_ptr[std::size_t(k) + 1]; ++e)
      level[std::size_t(k)] = std::max(level[std::size_t(k)], level[std::size_t(f->col_row[std::size_t(e)])] + 1);
  schedule(level, &f->bwd_ptr, &f->bwd_row);
}

void AppendCoarseFactor(const SparseCoarseFactor& f, Index p0, BodyModeFactorHost* host) {
  if (host->row_ptr.empty()) {
    for (std::vector<Index>* v : {&host->row_ptr, &host->col_ptr, &host->fwd_ptr, &host->bwd_ptr, &host->fac_ptr}) v->push_back(0);
  }
  const Index m = static_cast<Index>(f.order.size());
  const Index row0 = static_cast<Index>(host->patch.size()), blk0 = static_cast<Index>(host->row_col.size());
  const Index ent0 = static_cast<Index>(host->col_row.size());
  const Index fwd0 = static_cast<Index>(host->fwd_ptr.size()) - 1, bwd0 = static_cast<Index>(host->bwd_ptr.size()) - 1;
  const Index fwd = static_cast<Index>(f.fwd_ptr.size()) - 1, bwd = static_cast<Index>(f.bwd_ptr.size()) - 1;
  host->body.insert(host->body.end(), {row0, row0 + m, fwd0, fwd0 + fwd, bwd0, bwd0 + bwd});
  for (Index k = 0; k < m; ++k) host->patch.push_back(p0 + f.order[std::size_t(k)]);
  const auto shifted = [](std::vector<Index>* out, const std::vector<Index>& in, std::size_t from, Index by) {
    for (std::size_t k = from; k < in.size(); ++k) out->push_back(in[k] + by);
  };
  shifted(&host->row_ptr, f.row_ptr, 1, blk0);
  shifted(&host->row_col, f.row_col, 0, row0);
  shifted(&host->col_ptr, f.col_ptr, 1, ent0);
  shifted(&host->col_row, f.col_row, 0, row0);
  shifted(&host->col_blk, f.col_blk, 0, blk0);
  shifted(&host->col_of, f.col_of, 0, row0);
  shifted(&host->fwd_ptr, f.fwd_ptr, 1, static_cast<Index>(host->fwd_row.size()));
  shifted(&host->fwd_row, f.fwd_row, 0, row0);
  shifted(&host->bwd_ptr, f.bwd_ptr, 1, static_cast<Index>(host->bwd_row.size()));
  shifted(&host->bwd_row, f.bwd_row, 0, row0);
  shifted(&host->fac_ptr, f.fac_ptr, 1, static_cast<Index>(host->fac_ent.size()));
  shifted(&host->fac_ent, f.fac_ent, 0, ent0);
  // (A_c's block indices stay the body's own, -1 included: its blocks are their own array)
  host->a_blk.insert(host->a_blk.end(), f.a_blk.begin(), f.a_blk.end());
  host->a_blk_t.insert(host->a_blk_t.end(), f.a_blk_t.begin(), f.a_blk_t.end());
  host->a_diag.insert(host->a_diag.end(), f.a_diag.begin(), f.a_diag.end());
}

void CondBodyModes::FactorSparse(const BlockPattern& pattern, const BodyModeHost& used, const std::vector<unsigned char>& refresh_body) {
  Backend* b = ctx_->backend;
  const BodyModeView view = arrays_.view();
  std::vector<Index> mark(std::size_t(num_patches_), -1);
  bool restructure = sparse_used_ != factored_used_;
  std::vector<unsigned char> refactor(sparse_used_.size(), 0);
  for (std::size_t s = 0; s < sparse_used_.size(); ++s) {
    const auto& [p0, p1, src] = sparse_used_[s];
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
    // a new block pattern: the order and L's structure again (host), the record again
    if (ptr != f.ptr || col != f.col) {
      AnalyzeCoarseBlocks(p1 - p0, ptr, col, &f);
      f.c_ptr.Assign(b, ptr);
      f.c_col.Assign(b, col);
      f.ptr = std::move(ptr);
      f.col = std::move(col);
      restructure = true;
    }
    f.blocks.Resize(b, 36 * static_cast<Index>(f.col.size()));
    ctx_->kernels->BodyModeSparseMatrix(p1 - p0, BodyModeSparseMatrixOp{view, t_.data(), p0, f.c_ptr.data(), f.c_col.data(), f.blocks.data()});
    refactor[s] = 1;
  }
  // the structure of this solve's sparse bodies to the backend when it changed; then every body
  // is factorized again, a kept body from its own A_c blocks (the same bits as before)
  if (restructure) {
    BodyModeFactorHost host;
    for (const auto& [p0, p1, src] : sparse_used_) {
      CONDSIM_CHECK(sparse_coarse_[std::size_t(src)] != nullptr, "body modes: a sparse body without a coarse matrix");
      AppendCoarseFactor(*sparse_coarse_[std::size_t(src)], p0, &host);
    }
    factor_.Upload(b, host);
    const Index rows = static_cast<Index>(host.patch.size()), blocks = static_cast<Index>(host.row_col.size());
    factor_scale_.Resize(b, 6 * rows);
    factor_diag_.Resize(b, 36 * rows);
    factor_val_.Resize(b, 36 * blocks);
    factor_ok_.Resize(b, static_cast<Index>(sparse_used_.size()));
    factor_y_.Resize(b, 6 * rows);
    factored_used_ = sparse_used_;
    refactor.assign(sparse_used_.size(), 1);
  }
  for (std::size_t s = 0; s < sparse_used_.size(); ++s)
    if (refactor[s])
      ctx_->kernels->BodyModeSparseFactor(1, BodyModeSparseFactorOp{factor_.view(), FactorValues(), sparse_coarse_[std::size_t(sparse_used_[s][2])]->blocks.data(),
                                                                    static_cast<Index>(s), Scalar(kPatchRegularization)});
}

BodyModeFactorValues CondBodyModes::FactorValues() {
  return BodyModeFactorValues{factor_scale_.data(), factor_diag_.data(), factor_val_.data(), factor_ok_.data()};
}

void CondBodyModes::SolveSparse() {
  if (sparse_used_.empty()) return;
  ctx_->kernels->BodyModeSparseSolve(static_cast<Index>(sparse_used_.size()),
                                     BodyModeSparseSolveOp{factor_.view(), FactorValues(), g_.data(), factor_y_.data(), dv_.data()});
}
}  // namespace condsim
