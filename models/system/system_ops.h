// Device functors of the global system (models/system/system_matrix.h).
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

// copies block k of a part's matrix to block dst_block[k] of the global matrix
struct ScatterBlocksOp {
  const Scalar* src;
  const Index* dst_block;
  Scalar* dst;
  CONDSIM_HD void operator()(Index k) const {
    const Scalar* s = src + 9 * std::int64_t(k);
    Scalar* d = dst + 9 * std::int64_t(dst_block[k]);
    for (int e = 0; e < 9; ++e) d[e] = s[e];
  }
};

// kinds of virtual-node terms of eq. 15 added to a global block
enum VirtualTerm : int { kJtJ = 0, kMinusJt = 1, kMinusJ = 2, kIdentity = 3 };

// adds the eq. 15 terms to target block t: the sum, in a fixed order, of
//   kv J_a^T J_b (host-host), -kv J_a^T (host row, virtual column), -kv J_a (virtual row, host
//   column) and kv I (virtual diagonal) over the contributions term_ptr[t] .. term_ptr[t+1)
struct VirtualBlocksOp {
  const Index* target_block;
  const Index* term_ptr;
  const int* term_kind;
  const Index* term_a;   // entry index (Jacobian block) a, or the virtual node for kIdentity
  const Index* term_b;   // entry index b (kJtJ only)
  const Index* term_vn;  // virtual node of the term (its gain)
  const Scalar* jac;
  const Scalar* kv;
  Scalar* dst;
  CONDSIM_HD void operator()(Index t) const {
    Mat3 sum;
    for (Index e = term_ptr[t]; e < term_ptr[t + 1]; ++e) {
      const Scalar k = kv[term_vn[e]];
      switch (term_kind[e]) {
        case kJtJ:
          sum = sum + k * (Transpose(LoadMat3(jac, term_a[e])) * LoadMat3(jac, term_b[e]));
          break;
        case kMinusJt:
          sum = sum - k * Transpose(LoadMat3(jac, term_a[e]));
          break;
        case kMinusJ:
          sum = sum - k * LoadMat3(jac, term_a[e]);
          break;
        default:
          sum = sum + k * Mat3::Identity();
          break;
      }
    }
    Scalar* d = dst + 9 * std::int64_t(target_block[t]);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) d[3 * i + j] += sum(i, j);
  }
};

// v_v = Jv v_o for every virtual node (the warm start of Sec. V-A5); virtual node k is global
// node first_virtual + k
struct VirtualWarmStartOp {
  const Index* ptr;
  const Index* host;
  const Scalar* jac;
  Index first_virtual;
  Scalar* v;
  CONDSIM_HD void operator()(Index k) const {
    Vec3 sum;
    for (Index e = ptr[k]; e < ptr[k + 1]; ++e) sum += LoadMat3(jac, e) * LoadVec3(v, host[e]);
    StoreVec3(v, first_virtual + k, sum);
  }
};

// ---- the merged pattern and the eq. 15 term lists made on the backend from the virtual nodes'
// hosts (SystemMatrix::SetVirtualNodes), bitwise the host's: when every host-host term lies on a
// block of the base pattern, the merge only appends columns (the virtual nodes, numbered after
// the base nodes) to the base rows and adds the virtual rows. Keys are row * nodes + col.

// per Jacobian entry e (item `entries` writes 0): its number of compact parameters, 1 for w I
// (kind 0), 3 for -[r]x (kind 1); scanned, each entry's first
struct VirtualParamCountOp {
  const unsigned char* kind;
  Index entries;
  Index* count;
  CONDSIM_HD void operator()(Index e) const { count[e] = e == entries ? 0 : kind[e] == 0 ? 1 : 3; }
};

// a virtual node's Jacobian blocks from their compact form (eq. 14): kind 0, J = w I (a point
// with barycentric weight w, or a rigid body's v node with w = 1); kind 1, J = -[r]x (its omega
// node): the host's expressions (VirtualNodeSet::AddBarycentric, AddRigidPoint), so the same bits
struct VirtualJacobianOp {
  const unsigned char* kind;
  const Index* offset;  // per entry its first parameter
  const Scalar* param;  // w (kind 0) or r
  Scalar* jac;          // 9 per entry
  CONDSIM_HD void operator()(Index e) const {
    const Scalar* q = param + offset[e];
    const Mat3 j = kind[e] == 0 ? q[0] * Mat3::Identity() : Scalar(-1) * Skew(Vec3(q[0], q[1], q[2]));
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) jac[9 * std::int64_t(e) + 3 * r + c] = j(r, c);
  }
};

// per virtual node k its number of terms, (h + 1)^2 for h hosts
// (item `virtual_nodes` writes 0, so that the scan's last entry is the total)
struct VirtualTermCountOp {
  const Index* ptr;
  Index virtual_nodes;
  Index* count;
  CONDSIM_HD void operator()(Index k) const {
    if (k == virtual_nodes) {
      count[k] = 0;
      return;
    }
    const Index h = ptr[k + 1] - ptr[k];
    count[k] = (h + 1) * (h + 1);
  }
};

// virtual node k's terms from offset[k] in the host's order: per host a, J_a^T J_b for every host
// b, then -J_a^T and -J_a; then kv I. Each term: its key, its index (the sort's value), kind,
// a, b and node
struct VirtualTermFillOp {
  const Index* ptr;
  const Index* host;
  const Index* offset;
  Index base_nodes;
  std::int64_t nodes;  // the merged system's
  std::uint64_t* key;
  Index* order;
  int* kind;
  Index* a;
  Index* b;
  Index* vn;
  CONDSIM_HD void Put(Index o, std::int64_t row, std::int64_t col, int k, Index ta, Index tb, Index v) const {
    key[o] = std::uint64_t(row * nodes + col);
    order[o] = o;
    kind[o] = k;
    a[o] = ta;
    b[o] = tb;
    vn[o] = v;
  }
  CONDSIM_HD void operator()(Index k) const {
    const Index vk = base_nodes + k;
    Index o = offset[k];
    for (Index ea = ptr[k]; ea < ptr[k + 1]; ++ea) {
      for (Index eb = ptr[k]; eb < ptr[k + 1]; ++eb) Put(o++, host[ea], host[eb], kJtJ, ea, eb, k);
      Put(o++, host[ea], vk, kMinusJt, ea, 0, k);
      Put(o++, vk, host[ea], kMinusJ, ea, 0, k);
    }
    Put(o, vk, vk, kIdentity, k, 0, k);
  }
};

// the terms in key order (order: the sorted terms' original indices) and whether each starts a
// target block (its key differs from the one before)
struct VirtualTermSortedOp {
  const std::uint64_t* key;
  const Index* order;
  const int* kind_in;
  const Index* a_in;
  const Index* b_in;
  const Index* vn_in;
  int* kind;
  Index* a;
  Index* b;
  Index* vn;
  Index* head;
  CONDSIM_HD void operator()(Index i) const {
    const Index o = order[i];
    kind[i] = kind_in[o];
    a[i] = a_in[o];
    b[i] = b_in[o];
    vn[i] = vn_in[o];
    head[i] = i == 0 || key[i] != key[i - 1] ? 1 : 0;
  }
};

// per term that starts a target block (target[i], the heads' scan): the target's first term and
// its key; item `terms` closes term_ptr
struct VirtualTargetOp {
  const std::uint64_t* key;
  const Index* head;
  const Index* target;
  Index terms;
  Index targets;
  Index* term_ptr;
  std::uint64_t* target_key;
  CONDSIM_HD void operator()(Index i) const {
    if (i == terms) {
      term_ptr[targets] = terms;
      return;
    }
    if (!head[i]) return;
    term_ptr[target[i]] = i;
    target_key[target[i]] = key[i];
  }
};

// per merged row r: its blocks (the base row's and the new columns: the targets of row r past the
// base columns) and its first new target (item `nodes` writes 0, so that the scan's last entry is
// the total)
struct VirtualRowCountOp {
  const Index* base_row_ptr;
  Index base_nodes;
  std::int64_t nodes;
  const std::uint64_t* target_key;
  Index targets;
  Index* count;
  Index* first_new;
  CONDSIM_HD void operator()(Index r) const {
    if (r == nodes) {
      count[r] = 0;
      return;
    }
    const std::int64_t from = r < base_nodes ? base_nodes : 0;
    const Index lo = LowerBound(target_key, 0, targets, std::uint64_t(r * nodes + from));
    const Index hi = LowerBound(target_key, 0, targets, std::uint64_t((r + 1) * nodes));
    first_new[r] = lo;
    count[r] = (r < base_nodes ? base_row_ptr[r + 1] - base_row_ptr[r] : 0) + hi - lo;
  }
};

// what the last two launches read: the base pattern, the targets' keys and the merged rows
// (row_ptr: the counts' scan; first_new: each row's first new target)
struct VirtualMergeView {
  const Index* base_row_ptr;
  const Index* base_col;
  Index base_nodes;
  std::int64_t nodes;
  const std::uint64_t* target_key;
  const Index* row_ptr;
  const Index* first_new;
  // a base row's blocks (0 for a virtual row)
  CONDSIM_HD_INLINE Index BaseBlocks(Index r) const { return r < base_nodes ? base_row_ptr[r + 1] - base_row_ptr[r] : 0; }
};

// per merged row r: its columns, the base blocks' places (block_map) and the new columns in key
// order
struct VirtualRowFillOp {
  VirtualMergeView m;
  Index* col;
  Index* block_map;
  CONDSIM_HD void operator()(Index r) const {
    Index pos = m.row_ptr[r];
    if (r < m.base_nodes)
      for (Index kb = m.base_row_ptr[r]; kb < m.base_row_ptr[r + 1]; ++kb) {
        col[pos] = m.base_col[kb];
        block_map[kb] = pos++;
      }
    for (Index t = m.first_new[r]; pos < m.row_ptr[r + 1]; ++t) col[pos++] = Index(std::int64_t(m.target_key[t] % std::uint64_t(m.nodes)));
  }
};

// per target its block in the merged pattern: a base block through block_map (a binary search of
// the base row), a new column after the row's base blocks
struct VirtualTargetBlockOp {
  VirtualMergeView m;
  const Index* block_map;
  Index* target_block;
  CONDSIM_HD void operator()(Index t) const {
    const Index r = Index(std::int64_t(m.target_key[t] / std::uint64_t(m.nodes)));
    const Index c = Index(std::int64_t(m.target_key[t] % std::uint64_t(m.nodes)));
    if (r < m.base_nodes && c < m.base_nodes) {
      target_block[t] = block_map[FindBlock(m.base_row_ptr, m.base_col, r, c)];
      return;
    }
    target_block[t] = m.row_ptr[r] + m.BaseBlocks(r) + (t - m.first_new[r]);
  }
};

}  // namespace condsim
