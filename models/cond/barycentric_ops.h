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
}  // namespace condsim
