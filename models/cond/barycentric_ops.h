// COND barycentric virtual nodes on deformable hosts (docs/solver.md, "Barycentric nodes"), shared by both backends.
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"
#include "models/cond/cond_ops.h"

namespace condsim {

// A virtual node inside a triangle or on a segment of deformable hosts (J_a = w_a I, eq. 14).
// The step uses the exact inverse of A's restriction with the hosts' scalar W_o (Frobenius of
// A_o, the rows without the eq. 15 terms):
//   [[W_o^-1 + kv J^T J, -kv J^T], [-kv J, kv I]]^-1 = [[W_o, W_o J^T], [J W_o, J W_o J^T + I/kv]]
// so the hosts move with A_o and the virtual forces (v_o -= W_o (A_o v_o - b_o - J^T f)) and
// each virtual node takes J v_o + f / kv: convergence no longer depends on kv. The contact on a
// virtual node keeps a diagonal Gamma = 1/kv + sum_a w_a w_a-bar L_a (L_a: the sum of host a's
// weights over its virtual nodes plus its direct contacts), a row-sum majorant of the coupled
// J W_o J^T + I / kv.
#define CONDSIM_BARYCENTRIC_FIELDS(X)                                                    \
  X(Index, node)    /* per virtual node k: its global node */                             \
  X(Index, ptr)     /* hosts of k: entries ptr[k] .. ptr[k+1) */                          \
  X(Index, host)    /* per entry: host node */                                            \
  X(Scalar, weight) /* per entry: w_a */                                                  \
  X(Index, slot)    /* per entry: the host's index h below */                             \
  X(Scalar, kv)     /* per virtual node [N s/m] */                                        \
  X(Index, hnode)   /* per host h: its global node */                                     \
  X(Index, hptr)    /* virtual nodes of host h: incidences hptr[h] .. hptr[h+1) */        \
  X(Index, hvn)     /* per incidence: virtual node k */                                   \
  X(Scalar, hw)     /* per incidence: host h's weight in k */                             \
  X(Scalar, hload)  /* per host h: L_h, its incidence weights plus its direct contacts */
CONDSIM_RECORD_VIEW(BarycentricView, CONDSIM_BARYCENTRIC_FIELDS)
CONDSIM_RECORD_OUT_VIEW(BarycentricOutView, CONDSIM_BARYCENTRIC_FIELDS)

// per host: A_o's row sums for the Frobenius W (A's row less its eq. 15 terms: kv w_a w_c I in
// host blocks, -kv w_a I in virtual-node columns)
struct BarycentricFrobeniusOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  BarycentricView g;
  const Index* row_ptr;
  const Index* col_idx;
  const Scalar* values;
  Scalar* diag_sum;
  Scalar* row_norm2;
  Scalar* row_abs;
  CONDSIM_HD_INLINE void operator()(Index h) const {
    const Index a = g.hnode[h];
    Scalar d = 0, s = 0, abs_sum[3] = {0, 0, 0};
    for (Index k = row_ptr[a]; k < row_ptr[a + 1]; ++k) {
      const Index c = col_idx[k];
      Scalar extra = 0;
      bool virtual_column = false;
      for (Index e = g.hptr[h]; e < g.hptr[h + 1] && !virtual_column; ++e) {
        const Index vk = g.hvn[e];
        if (g.node[vk] == c) virtual_column = true;
        for (Index q = g.ptr[vk]; q < g.ptr[vk + 1]; ++q)
          if (g.host[q] == c) extra += g.kv[vk] * g.hw[e] * g.weight[q];
      }
      if (virtual_column) continue;
      const Scalar* blk = values + 9 * std::int64_t(k);
      for (int e = 0; e < 9; ++e) {
        const Scalar x = blk[e] - (e % 4 == 0 ? extra : Scalar(0));
        s += x * x;
        abs_sum[e / 3] += x < 0 ? -x : x;
        if (c == a && e % 4 == 0) d += x;
      }
    }
    diag_sum[a] = d;
    row_norm2[a] = s;
    row_abs[a] = LargestOf3(abs_sum);
  }
};

// per virtual node: Gamma = 1/kv + sum_a w_a w_a-bar L_a on its 3 DOFs of w
struct BarycentricGammaOp {
  BarycentricView g;
  Scalar* w;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Scalar d = 1 / g.kv[k];
    for (Index q = g.ptr[k]; q < g.ptr[k + 1]; ++q) d += g.weight[q] * w[3 * std::int64_t(g.host[q])] * g.hload[g.slot[q]];
    Scalar* p = w + 3 * std::int64_t(g.node[k]);
    p[0] = p[1] = p[2] = d;
  }
};

// per host. Before the sweeps (u = v - W r from the full A): u_a -= w_a-bar sum_k w_a (r_k - f_k),
// turning A's row into A_o's with the virtual forces f (the eq. 15 rows give r_k = kv (v_k -
// J v_o)); after them: u_a += w_a-bar sum_k w_a (f_new_k - f_k)
struct BarycentricHostOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  BarycentricView g;
  const Scalar* r;
  const Scalar* f;
  const Scalar* f_new;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index h) const {
    const Index a = g.hnode[h];
    Vec3 sum;
    for (Index e = g.hptr[h]; e < g.hptr[h + 1]; ++e) {
      const Index n = g.node[g.hvn[e]];
      const Vec3 d = before_sweep ? LoadVec3(f, n) - LoadVec3(r, n) : LoadVec3(f_new, n) - LoadVec3(f, n);
      sum += g.hw[e] * d;
    }
    AddVec3(u, a, w[3 * std::int64_t(a)] * sum);
  }
};

// per virtual node: u_k = J u_o + f_k / kv (before the sweeps less Gamma f_k, which the sweep
// setup adds back)
struct BarycentricNodeOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  BarycentricView g;
  const Scalar* f;
  const Scalar* w;
  bool before_sweep;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index n = g.node[k];
    const Vec3 fk = LoadVec3(f, n);
    Vec3 vk = (1 / g.kv[k]) * fk;
    for (Index q = g.ptr[k]; q < g.ptr[k + 1]; ++q) vk += g.weight[q] * LoadVec3(u, g.host[q]);
    if (before_sweep) vk -= w[3 * std::int64_t(n)] * fk;
    StoreVec3(u, n, vk);
  }
};

// The record made on the backend from the system's virtual nodes (VirtualNodesOnBackend: hosts,
// compact Jacobians, gains), bitwise the host's CondBarycentric::Set and OnContacts: the
// barycentric virtual nodes are those whose blocks are all w I (a rigid point's second is
// -[r]x), in their order; the hosts' side is the entries sorted by host (stably: each host's
// incidences in virtual-node order).

// per virtual node k: 1 when it is barycentric (in pick) and its host count when so (in count);
// item `count` writes 0 to both, so that their scans end with the totals
struct BarycentricPickOp {
  const Index* vn_ptr;
  const unsigned char* kind;
  Index count;
  Index* pick;
  Index* entries;
  CONDSIM_HD void operator()(Index k) const {
    bool bary = k < count;
    for (Index e = bary ? vn_ptr[k] : 0; bary && e < vn_ptr[k + 1]; ++e) bary = kind[e] == 0;
    pick[k] = bary ? 1 : 0;
    entries[k] = bary ? vn_ptr[k + 1] - vn_ptr[k] : 0;
  }
};

// per virtual node k (pick and entries scanned): its record entries node, kv, ptr, host, weight
// and per entry its sort key (the host) and index; item `count` closes ptr
struct BarycentricFillOp {
  const Index* vn_ptr;
  const Index* vn_host;
  const Index* param_offset;  // per entry its w in param
  const Scalar* param;
  const Scalar* vn_kv;
  Index base_nodes;
  Index count;
  const Index* pick;     // scanned: k's place among the barycentric nodes
  const Index* entries;  // scanned: its first entry
  BarycentricOutView g;
  Index* owner;          // per entry: its barycentric node
  std::uint64_t* key;
  Index* order;
  CONDSIM_HD void operator()(Index k) const {
    const Index b = pick[k], first = entries[k];
    if (k == count) {
      g.ptr[b] = first;
      return;
    }
    if (pick[k + 1] == b) return;
    g.node[b] = base_nodes + k;
    g.kv[b] = vn_kv[k];
    g.ptr[b] = first;
    for (Index e = vn_ptr[k]; e < vn_ptr[k + 1]; ++e) {
      const Index q = first + e - vn_ptr[k];
      g.host[q] = vn_host[e];
      g.weight[q] = param[param_offset[e]];
      owner[q] = b;
      key[q] = std::uint64_t(vn_host[e]);
      order[q] = q;
    }
  }
};

// per sorted entry j (item `entries` writes 0): 1 where a host's run starts
struct BarycentricHeadOp {
  const std::uint64_t* key;
  Index entries;
  Index* head;
  CONDSIM_HD void operator()(Index j) const { head[j] = j < entries && (j == 0 || key[j] != key[j - 1]) ? 1 : 0; }
};

// per sorted entry j (head scanned): the host side, hnode, hptr, hvn, hw, and each entry's slot;
// item `entries` closes hptr
struct BarycentricTransposeOp {
  const std::uint64_t* key;
  const Index* order;
  const Index* head;  // scanned: the hosts before j's run (j's own when it starts one)
  const Index* owner;
  Index entries;
  BarycentricOutView g;
  CONDSIM_HD void operator()(Index j) const {
    if (j == entries) {
      g.hptr[head[j]] = entries;
      return;
    }
    const bool starts = head[j + 1] != head[j];
    const Index h = starts ? head[j] : head[j] - 1;
    if (starts) {
      g.hnode[h] = static_cast<Index>(key[j]);
      g.hptr[h] = j;
    }
    const Index q = order[j];
    g.slot[q] = h;
    g.hvn[j] = owner[q];
    g.hw[j] = g.weight[q];
  }
};

// per contact m: its two nodes as sort keys (an S-contact's missing node j sorts last)
struct BarycentricContactKeyOp {
  const Index* node_i;
  const Index* node_j;
  std::uint64_t* key;
  Index* order;
  CONDSIM_HD void operator()(Index m) const {
    key[2 * m] = std::uint64_t(node_i[m]);
    key[2 * m + 1] = node_j[m] >= 0 ? std::uint64_t(node_j[m]) : ~std::uint64_t(0);
    order[2 * m] = 2 * m;
    order[2 * m + 1] = 2 * m + 1;
  }
};

// per host h: L_h, its incidence weights summed in virtual-node order plus one per contact
// node that is h (the contacts' nodes sorted), added one by one as the host adds them
struct BarycentricLoadOp {
  BarycentricOutView g;
  const std::uint64_t* contact_key;
  Index contact_keys;
  CONDSIM_HD void operator()(Index h) const {
    Scalar load = 0;
    for (Index j = g.hptr[h]; j < g.hptr[h + 1]; ++j) load += g.hw[j];
    const std::uint64_t a = std::uint64_t(g.hnode[h]);
    const Index lo = LowerBound(contact_key, Index(0), contact_keys, a);
    const Index hi = LowerBound(contact_key, lo, contact_keys, a + 1);
    for (Index c = lo; c < hi; ++c) load += 1;
    g.hload[h] = load;
  }
};
}  // namespace condsim
