// The body-mode set-up ops that make the record on the backend (models/cond/body_mode_setup_ops.h:
// BodyModeNodeMapOp, BodyModeCouplingOp), against the host loops that made them before.
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

// the rows of T and the patches each reaches made on the backend (BodyModeCouplingOp, a count, the
// backend's exclusive scan, a fill; CondBodyModes::Prepare) against the host loop that made them
// before (each row's patches in the order A's row first reaches them, a listed node's only
// within its body), bitwise, on 1 and 2 threads: random rows of 1 to 30 blocks over 3000 nodes,
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
  for (int threads : {1, 2}) {
    OpsOnThreads ops(threads, h);
    Backend* b = ops.backend.get();
    Array<Index> row_ptr_d(b, row_ptr), col_idx_d(b, col_idx), t_ptr_d(b, rows + 1), t_patch_d(b, Index(t_patch.size()));
    BodyModeCouplingOp op{ops.arrays.view(), listed, rows, row_ptr_d.data(), col_idx_d.data(), false, t_ptr_d.data(), nullptr};
    ops.kernels->BodyModeCoupling(rows + 1, op);
    EXPECT_EQ(b->ExclusiveScan(rows + 1, t_ptr_d, &t_ptr_d), Index(t_patch.size()));
    op.fill = true;
    op.t_patch = t_patch_d.data();
    ops.kernels->BodyModeCoupling(rows, op);
    EXPECT_EQ(t_ptr_d.ToHost(), t_ptr) << threads << " threads";
    EXPECT_EQ(t_patch_d.ToHost(), t_patch) << threads << " threads";
  }
}

}  // namespace
}  // namespace condsim
