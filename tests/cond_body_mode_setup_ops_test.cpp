// The body-mode set-up ops that make the record on the backend (models/cond/body_mode_setup_ops.h:
// BodyModeNodeMapOp, BodyModeCouplingOp), against the host loops that made them before; the block-
// sparse coarse matrix (BodyModeSparseMatrixOp) against the dense one (BodyModeMatrixOp).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "body_mode_ops_fixture.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::OpsOnThreads;

// the record's per-node maps made on the backend (BodyModeNodeMapOp, CondBodyModes::Prepare):
// node_patch and node_slot of random patches (4 to 60 listed nodes each, drawn without
// repetition from 5000 nodes, most nodes in none) against the host's maps built as
// SelectPatches builds them, bitwise, on 1 and 2 threads
TEST(CondBodyModes, NodeMapsOnTheBackendEqualTheHostMaps) {
  auto rng = test::Rng();
  const Index nodes = 5000, patches = 40;
  std::vector<Index> all(static_cast<std::size_t>(nodes));
  for (Index i = 0; i < nodes; ++i) all[std::size_t(i)] = i;
  std::shuffle(all.begin(), all.end(), rng);
  std::uniform_int_distribution<Index> size(4, 60);
  std::vector<Index> ptr{0}, node;
  std::vector<Index> patch_map(std::size_t(nodes), -1), slot_map(std::size_t(nodes), -1);
  for (Index p = 0; p < patches; ++p) {
    const Index n = size(rng);
    for (Index k = 0; k < n; ++k) {
      const Index i = all[node.size()];
      patch_map[std::size_t(i)] = p;
      slot_map[std::size_t(i)] = Index(node.size());
      node.push_back(i);
    }
    ptr.push_back(Index(node.size()));
  }
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, BodyModeHost());
    Backend* b = ops.backend.get();
    Array<Index> ptr_d(b, ptr), node_d(b, node), patch_d(b, nodes), slot_d(b, nodes);
    BodyModeNodeMapOp op{ptr_d.data(), patches, node_d.data(), true, patch_d.data(), slot_d.data()};
    ops.kernels->BodyModeNodeMap(nodes, op);
    op.clear = false;
    ops.kernels->BodyModeNodeMap(Index(node.size()), op);
    EXPECT_EQ(patch_d.ToHost(), patch_map) << threads << " threads";
    EXPECT_EQ(slot_d.ToHost(), slot_map) << threads << " threads";
  }
}

// the rows of T and the patches each reaches made on the backend (MakeRowsOfT: BodyModeCouplingOp's
// count, BodyModeRowOffsetOp's placement by a scan over the nodes, the fill; CondBodyModes::Prepare)
// against the host loop that made them before (each row's patches in the order A's row first
// reaches them, a listed node's only within its body), bitwise per row, on 1 and 2 threads; the
// rows stored in their nodes' order without gaps. Random rows of 1 to 30 blocks over 3000 nodes,
// two bodies of 12 patches, 2000 listed nodes and 300 halo nodes
TEST(CondBodyModes, RowsOfTOnTheBackendEqualTheHostLoop) {
  auto rng = test::Rng();
  const Index nodes = 3000, patches = 24;
  std::uniform_int_distribution<Index> degree(1, 30), column(0, nodes - 1), patch(0, patches - 1);
  std::vector<Index> row_ptr{0}, col_idx;
  for (Index i = 0; i < nodes; ++i) {
    const Index d = degree(rng);
    for (Index k = 0; k < d; ++k) col_idx.push_back(column(rng));
    row_ptr.push_back(Index(col_idx.size()));
  }
  std::vector<Index> all(static_cast<std::size_t>(nodes));
  for (Index i = 0; i < nodes; ++i) all[std::size_t(i)] = i;
  std::shuffle(all.begin(), all.end(), rng);
  BodyModeHost h;
  h.node.assign(all.begin(), all.begin() + 2000);
  h.halo.assign(all.begin() + 2000, all.begin() + 2300);
  h.node_patch.assign(std::size_t(nodes), -1);
  for (Index i : h.node) h.node_patch[std::size_t(i)] = patch(rng);
  for (Index p = 0; p < patches; ++p) h.patch_body.push_back(p < patches / 2 ? 0 : 1);
  const Index listed = Index(h.node.size()), rows = listed + Index(h.halo.size());
  // the host loop
  std::vector<Index> t_ptr{0}, t_patch;
  for (Index q = 0; q < rows; ++q) {
    const Index i = q < listed ? h.node[q] : h.halo[q - listed];
    const Index body = q < listed ? h.patch_body[std::size_t(h.node_patch[i])] : -1;
    const Index first = t_ptr.back();
    for (Index k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const Index p = h.node_patch[col_idx[k]];
      if (p < 0 || (body >= 0 && h.patch_body[std::size_t(p)] != body)) continue;
      if (std::find(t_patch.begin() + first, t_patch.end(), p) == t_patch.end()) t_patch.push_back(p);
    }
    t_ptr.push_back(Index(t_patch.size()));
  }
  ASSERT_GT(t_patch.size(), 2 * std::size_t(rows));
  // per node its row (BodyModeRowOp's map)
  std::vector<Index> node_row(std::size_t(nodes), -1);
  for (Index q = 0; q < rows; ++q) node_row[std::size_t(q < listed ? h.node[q] : h.halo[q - listed])] = q;
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, h);
    Backend* b = ops.backend.get();
    Array<Index> row_ptr_d(b, row_ptr), col_idx_d(b, col_idx), node_row_d(b, node_row), offset;
    const Index entries = MakeRowsOfT(*ops.kernels, b, &ops.arrays, listed, rows, nodes, row_ptr_d.data(), col_idx_d.data(),
                                      node_row_d.data(), &offset);
    EXPECT_EQ(entries, Index(t_patch.size()));
    const std::vector<Index> first = ops.arrays.t_ptr.ToHost(), end = ops.arrays.t_end.ToHost(), got = ops.arrays.t_patch.ToHost();
    ASSERT_EQ(first.size(), std::size_t(rows));
    for (Index q = 0; q < rows; ++q) {
      const std::vector<Index> row(got.begin() + first[std::size_t(q)], got.begin() + end[std::size_t(q)]);
      const std::vector<Index> ref(t_patch.begin() + t_ptr[std::size_t(q)], t_patch.begin() + t_ptr[std::size_t(q) + 1]);
      ASSERT_EQ(row, ref) << "row " << q << ", " << threads << " threads";
    }
    // in node order, back to back: each node's row starts where the previous node's ended
    Index at = 0;
    for (Index i = 0; i < nodes; ++i) {
      const Index q = node_row[std::size_t(i)];
      if (q < 0) continue;
      ASSERT_EQ(first[std::size_t(q)], at) << "node " << i;
      at = end[std::size_t(q)];
    }
    EXPECT_EQ(at, entries);
  }
}

// a sparse body's coarse matrix (BodyModeSparseMatrixOp, 6x6 blocks at the patches its listed
// rows of T reach) against the dense rows of BodyModeMatrixOp on the same record: every block
// bitwise the dense entries (the same sums in the same order), every dense entry outside the
// blocks 0; random T (40 patches of 4 to 30 listed nodes, each row reaching its own patch and up
// to 5 others), on 1 and 2 threads
TEST(CondBodyModes, SparseCoarseBlocksEqualTheDenseRows) {
  auto rng = test::Rng();
  const Index patches = 40;
  std::uniform_int_distribution<Index> size(4, 30), reach(0, 5), other(0, patches - 1);
  std::uniform_real_distribution<Scalar> value(-1, 1);
  BodyModeHost h;
  h.ptr.push_back(0);
  h.t_ptr.push_back(0);
  for (Index p = 0; p < patches; ++p) {
    const Index n = size(rng);
    for (Index q = 0; q < n; ++q) {
      h.node.push_back(Index(h.node.size()));
      for (int d = 0; d < 3; ++d) h.arm.push_back(0.05 * value(rng));
      // the row's patches: its own first, then others, each once
      std::vector<Index> row{p};
      for (Index k = reach(rng); k > 0; --k) {
        const Index o = other(rng);
        if (std::find(row.begin(), row.end(), o) == row.end()) row.push_back(o);
      }
      h.t_patch.insert(h.t_patch.end(), row.begin(), row.end());
      h.t_ptr.push_back(Index(h.t_patch.size()));
    }
    h.ptr.push_back(Index(h.node.size()));
    h.patch_body.push_back(0);
  }
  h.body_ptr = {0, patches};
  h.c_off = {0, 36 * patches * patches};
  h.t_end.assign(h.t_ptr.begin() + 1, h.t_ptr.end());
  std::vector<Scalar> t(18 * h.t_patch.size());
  for (Scalar& x : t) x = value(rng);
  // the block pattern: per patch the sorted union of its rows' patches
  std::vector<Index> c_ptr{0}, c_col;
  for (Index p = 0; p < patches; ++p) {
    std::vector<Index> cols;
    for (Index q = h.ptr[p]; q < h.ptr[p + 1]; ++q) cols.insert(cols.end(), h.t_patch.begin() + h.t_ptr[q], h.t_patch.begin() + h.t_ptr[q + 1]);
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    c_col.insert(c_col.end(), cols.begin(), cols.end());
    c_ptr.push_back(Index(c_col.size()));
  }
  const Index ld = 6 * patches;
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, h);
    Backend* b = ops.backend.get();
    Array<Scalar> t_d(b, t), dense_d(b, ld * ld), blocks_d(b, 36 * Index(c_col.size()));
    Array<Index> c_ptr_d(b, c_ptr), c_col_d(b, c_col);
    ops.kernels->BodyModeMatrix(patches, BodyModeMatrixOp{ops.arrays.view(), t_d.data(), dense_d.data()});
    ops.kernels->BodyModeSparseMatrix(patches, BodyModeSparseMatrixOp{ops.arrays.view(), t_d.data(), 0, c_ptr_d.data(), c_col_d.data(), blocks_d.data()});
    const std::vector<Scalar> dense = dense_d.ToHost(), blocks = blocks_d.ToHost();
    std::vector<unsigned char> covered(dense.size(), 0);
    Index mismatches = 0;
    for (Index p = 0; p < patches; ++p)
      for (Index k = c_ptr[p]; k < c_ptr[p + 1]; ++k)
        for (int r = 0; r < 6; ++r)
          for (int c = 0; c < 6; ++c) {
            const std::size_t at = std::size_t(6 * p + r) * std::size_t(ld) + std::size_t(6 * c_col[k] + c);
            covered[at] = 1;
            mismatches += blocks[36 * std::size_t(k) + std::size_t(6 * r + c)] != dense[at];
          }
    EXPECT_EQ(mismatches, 0) << threads << " threads";
    Index outside = 0;
    for (std::size_t at = 0; at < dense.size(); ++at) outside += !covered[at] && dense[at] != 0;
    EXPECT_EQ(outside, 0) << threads << " threads";
  }
}

}  // namespace
}  // namespace condsim
