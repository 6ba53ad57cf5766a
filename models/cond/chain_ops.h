// COND chains: exact W on banded sub-systems (docs/solver.md, "Chains"), shared by both backends.
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"

namespace condsim {

// A chain is an ordered list of nodes whose part of A is block-banded (a rod: t0 r0 t1 r1 ...,
// node k coupled to k +- band). Its W is the inverse of A restricted to the chain's nodes that
// carry no contact (banded Cholesky, one thread per chain); contact nodes keep the scalar
// Frobenius w, so Gamma stays diagonal (Prop. 3).
#define CONDSIM_CHAIN_FIELDS(X)                                                              \
  X(Index, ptr)           /* chain c owns nodes[ptr[c] .. ptr[c+1]) */                         \
  X(Index, nodes)                                                                              \
  X(Index, band_block)    /* per chain node p and d = 0..band: block (node_p, node_{p-d}) or -1 */ \
  X(Index, factor_offset) /* start of chain c's band factor (scalars) */
CONDSIM_RECORD_VIEW(ChainRecord, CONDSIM_CHAIN_FIELDS)

struct ChainView {
  ChainRecord chain;
  const unsigned char* in_contact;  // per node
  Index band;                       // coupling reach in nodes
};

// per chain position g and reach d = 0..band (item g (band + 1) + d): the block of A at
// (node_g, node_{g-d}), or -1 outside g's chain or A's pattern: MakeChainHost's band_block, made
// on the backend from A's pattern there when only the pattern changed (the chains kept)
struct ChainBandBlockOp {
  const Index* ptr;  // chains + 1
  Index chains;
  const Index* nodes;
  Index band;
  const Index* row_ptr;  // A's pattern
  const Index* col_idx;
  Index* band_block;
  CONDSIM_HD void operator()(Index i) const {
    const Index g = i / (band + 1), d = i % (band + 1);
    const Index c = LowerBound(ptr, 0, chains + 1, g + 1) - 1;
    band_block[i] = g - d >= ptr[c] ? FindBlock(row_ptr, col_idx, nodes[g], nodes[g - d]) : -1;
  }
};

CONDSIM_HD_INLINE Index ChainBandwidth(Index band) { return 3 * band + 2; }

// A's entry (i, j), j <= i, of chain c's sub-system (scalar indices local to the chain)
CONDSIM_HD_INLINE Scalar ChainEntry(const ChainView& ch, const Scalar* values, Index c, Index i, Index j) {
  const Index p = i / 3, q = j / 3, d = p - q;
  if (d > ch.band) return 0;
  const Index base = ch.chain.ptr[c];
  if (ch.in_contact[ch.chain.nodes[base + p]] || ch.in_contact[ch.chain.nodes[base + q]]) return i == j ? Scalar(1) : Scalar(0);
  const Index blk = ch.chain.band_block[(base + p) * (ch.band + 1) + d];
  if (blk < 0) return 0;
  return values[9 * std::int64_t(blk) + 3 * (i % 3) + (j % 3)];
}

// banded Cholesky of each chain's sub-system into factor (row-band storage L(i, i-k) at
// i * (bw + 1) + k); ok[c] = 0 when a pivot is not positive (the chain then falls back to w)
struct ChainFactorOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  ChainView ch;
  const Scalar* values;
  Scalar* factor;
  unsigned char* ok;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    const Index n = 3 * (ch.chain.ptr[c + 1] - ch.chain.ptr[c]), bw = ChainBandwidth(ch.band);
    Scalar* l = factor + ch.chain.factor_offset[c];
    ok[c] = 1;
    for (Index i = 0; i < n; ++i) {
      const Index j0 = i > bw ? i - bw : 0;
      for (Index j = j0; j <= i; ++j) {
        Scalar s = ChainEntry(ch, values, c, i, j);
        const Index k0 = (j > bw ? j - bw : 0) > j0 ? (j > bw ? j - bw : 0) : j0;
        for (Index k = k0; k < j; ++k) s -= l[i * (bw + 1) + (i - k)] * l[j * (bw + 1) + (j - k)];
        if (i == j) {
          if (!(s > 0)) {
            ok[c] = 0;
            return;
          }
          l[i * (bw + 1)] = std::sqrt(s);
        } else {
          l[i * (bw + 1) + (i - j)] = s / l[j * (bw + 1)];
        }
      }
    }
  }
};

// d = W r on the chains' contact-free nodes: solves L L^T d = r (forward, then backward); the
// entries of contact nodes (and of chains whose factorization failed) keep d = w r
struct ChainApplyOp {
  static constexpr Index kGrain = 4;  // items per CPU thread at least (cpu/parallel.h)
  ChainView ch;
  const Scalar* factor;
  const unsigned char* ok;
  const Scalar* w;
  const Scalar* r;
  const Index* node_env;            // a chain of a stopped environment is skipped (its iterate is
  const unsigned char* env_active;  // not committed)
  Scalar* d;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    if (!ok[c] || !env_active[node_env[ch.chain.nodes[ch.chain.ptr[c]]]]) return;
    const Index n = 3 * (ch.chain.ptr[c + 1] - ch.chain.ptr[c]), bw = ChainBandwidth(ch.band), base = ch.chain.ptr[c];
    const Scalar* l = factor + ch.chain.factor_offset[c];
    auto dof = [&](Index i) { return 3 * std::int64_t(ch.chain.nodes[base + i / 3]) + i % 3; };
    auto free_node = [&](Index i) { return !ch.in_contact[ch.chain.nodes[base + i / 3]]; };
    // forward: L y = r (contact rows are identity rows with a zero right-hand side)
    for (Index i = 0; i < n; ++i) {
      Scalar s = free_node(i) ? r[dof(i)] : Scalar(0);
      for (Index k = (i > bw ? i - bw : 0); k < i; ++k) s -= l[i * (bw + 1) + (i - k)] * d[dof(k)];
      // y is kept in d for the chain's free entries; contact entries hold 0 during the solve
      const Scalar y = s / l[i * (bw + 1)];
      if (free_node(i)) d[dof(i)] = y; else d[dof(i)] = 0;
    }
    // backward: L^T x = y
    for (Index i = n - 1; i >= 0; --i) {
      Scalar s = d[dof(i)];
      const Index k1 = i + bw < n - 1 ? i + bw : n - 1;
      for (Index k = i + 1; k <= k1; ++k) s -= l[k * (bw + 1) + (k - i)] * d[dof(k)];
      d[dof(i)] = s / l[i * (bw + 1)];
    }
    for (Index i = 0; i < n; ++i)
      if (!free_node(i)) d[dof(i)] = w[dof(i)] * r[dof(i)];
  }
};

// ---- the same solve spread over the lanes of a warp (partitioned banded substitution) ----------
//
// A chain's n unknowns are cut into p <= kChainLanes consecutive blocks of m >= bw rows (bw the
// band of L). Forward, L y = r: block j's rows reach back only into the last bw rows of block
// j-1, its tail t_{j-1}, so y_j = L_jj^-1 (r_j - C_j t_{j-1}). Each lane solves its block alone
// (z_j = L_jj^-1 r_j); one lane chains the tails t_j = tail(z_j) - T_j t_{j-1} with the bw x bw
// spikes T_j = tail(L_jj^-1 C_j) made at factor time (ChainSpikeOp); then each lane solves its
// block again with the exact t_{j-1}. Backward, L^T x = y, the same with the heads h_{j+1} of the
// next block and S_j = head(L_jj^-T D_j). This is the partitioned ("SPIKE") scheme of Polizzi &
// Sameh (2006) applied to the two triangular factors of the banded Cholesky, with the reduced
// system solved serially (p steps of a bw x bw product instead of n steps of a bw dot product).
// Work per lane ~ 2 n bw / p per triangle; exact up to rounding (tests/cond_chain_test.cpp
// checks it against ChainApplyOp and a dense Eigen solve).
//
// Lane functors: Lane(item, lane, phase) runs for lane = 0 .. kLanes-1 of an item, phase by
// phase; the lanes of one phase are independent and see every write of the earlier phases. The
// CUDA launcher gives an item a warp when kLanes is 32 (__syncwarp between phases) and a block of
// kLanes threads when it is a larger multiple of 32 (__syncthreads; cuda/parallel.cuh); the CPU runs
// operator()(item), the same arithmetic item by item, and under CONDSIM_CPU_ORDER the phases lane
// by lane in permuted lane order (cpu/parallel.h RunLanes), as a warp would.
constexpr int kChainLanes = 32;

// the blocks of a chain of n scalars with band bw: p blocks of m rows, the last one longer
struct ChainPartition {
  Index n, bw, p, m;
  CONDSIM_HD_INLINE ChainPartition(Index n_, Index bw_) : n(n_), bw(bw_) {
    const Index most = bw > 0 ? n / bw : n;
    p = most < kChainLanes ? (most > 1 ? most : 1) : kChainLanes;
    m = n / p;
  }
  CONDSIM_HD_INLINE Index Begin(Index j) const { return j * m; }
  CONDSIM_HD_INLINE Index End(Index j) const { return j == p - 1 ? n : (j + 1) * m; }
};

// spike storage per chain: T_j and S_j (bw x bw each, kChainLanes of each), row-major
CONDSIM_HD_INLINE std::int64_t ChainSpikeStride(Index bw) { return 2 * std::int64_t(kChainLanes) * bw * bw; }
// tails and heads per chain (bw each per block)
CONDSIM_HD_INLINE std::int64_t ChainEdgeStride(Index bw) { return 2 * std::int64_t(kChainLanes) * bw; }

// L(i, k), k <= i (row-band storage of ChainFactorOp)
CONDSIM_HD_INLINE Scalar ChainL(const Scalar* l, Index bw, Index i, Index k) { return l[i * (bw + 1) + (i - k)]; }

// the spikes T_j (j >= 1) and S_j (j <= p - 2) of each chain's factor, one lane per block; `work`
// holds 3 scalars per chain node (the lanes' local solves)
struct ChainSpikeOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = kChainLanes;
  static constexpr int kPhases = 1;
  ChainView ch;
  const Scalar* factor;
  const unsigned char* ok;
  Scalar* spike;
  Scalar* work;
  CONDSIM_HD_INLINE void Lane(Index c, int lane, int) const {
    const Index n = 3 * (ch.chain.ptr[c + 1] - ch.chain.ptr[c]), bw = ChainBandwidth(ch.band);
    const ChainPartition part(n, bw);
    if (!ok[c] || lane >= part.p) return;
    const Scalar* l = factor + ch.chain.factor_offset[c];
    Scalar* wk = work + 3 * std::int64_t(ch.chain.ptr[c]);
    Scalar* t = spike + c * ChainSpikeStride(bw) + std::int64_t(lane) * bw * bw;
    Scalar* sj = spike + c * ChainSpikeStride(bw) + std::int64_t(kChainLanes + lane) * bw * bw;
    const Index s = part.Begin(lane), e = part.End(lane);
    for (Index q = 0; q < bw; ++q) {
      if (lane > 0) {
        // column q of C_j: L(i, s - bw + q) for the first rows of the block
        const Index col = s - bw + q;
        for (Index i = s; i < e; ++i) {
          Scalar v = i - col <= bw ? ChainL(l, bw, i, col) : Scalar(0);
          for (Index k = (i - bw > s ? i - bw : s); k < i; ++k) v -= ChainL(l, bw, i, k) * wk[k];
          wk[i] = v / ChainL(l, bw, i, i);
        }
        for (Index i = 0; i < bw; ++i) t[i * bw + q] = wk[e - bw + i];
      }
      if (lane < part.p - 1) {
        // column q of D_j: L(e + q, i) for the last rows of the block
        const Index row = e + q;
        for (Index i = e - 1; i >= s; --i) {
          Scalar v = row - i <= bw ? ChainL(l, bw, row, i) : Scalar(0);
          const Index k1 = i + bw < e - 1 ? i + bw : e - 1;
          for (Index k = i + 1; k <= k1; ++k) v -= ChainL(l, bw, k, i) * wk[k];
          wk[i] = v / ChainL(l, bw, i, i);
        }
        for (Index i = 0; i < bw; ++i) sj[i * bw + q] = wk[s + i];
      }
    }
  }
  CONDSIM_HD_INLINE void operator()(Index c) const {
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, 0);
  }
};

// d = W r on the chains (ChainApplyOp's result) by the partitioned substitution above. The two
// reduced systems run a block per phase on a warp, the bw rows of a block's tail (head) one per
// lane: 2 (p - 1) short phases instead of two serial loops of (p - 1) bw rows on one lane. Every
// row is summed as the serial loops sum it (operator(), the CPU's path), so both paths give the
// same bits
struct ChainLaneApplyOp {
  static constexpr Index kGrain = 1;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr int kLanes = kChainLanes;
  // 0: local forward solves; 1 .. kLanes-1: tail of block `phase`; kLanes: y; kLanes+1: local
  // backward solves; kLanes+2 .. 2 kLanes: head of block p-2 .. 0; 2 kLanes+1: x; then contacts
  static constexpr int kTailFirst = 1, kForward = kChainLanes, kBackward = kChainLanes + 1, kHeadFirst = kChainLanes + 2,
                       kSolve = 2 * kChainLanes + 1, kContacts = 2 * kChainLanes + 2;
  static constexpr int kPhases = 2 * kChainLanes + 3;
  ChainView ch;
  const Scalar* factor;
  const unsigned char* ok;
  const Scalar* spike;
  Scalar* edge;  // tails and heads, ChainEdgeStride per chain
  Scalar* work;  // 3 per chain node
  const Scalar* w;
  const Scalar* r;
  const Index* node_env;            // a chain of a stopped environment is skipped (its iterate is
  const unsigned char* env_active;  // not committed)
  Scalar* d;
  // row i of a reduced system's step at block b: t_b = tail(z_b) - T_b t_{b-1} (forward, b >= 1)
  // or h_b = head(u_b) - S_b h_{b+1} (backward, b <= p - 2)
  CONDSIM_HD_INLINE void ReducedRow(Index c, Index bw, Index b, Index i, bool backward) const {
    const Scalar* m = spike + c * ChainSpikeStride(bw) + ((backward ? kChainLanes : 0) + b) * bw * bw;
    Scalar* x = edge + c * ChainEdgeStride(bw) + (backward ? std::int64_t(kChainLanes) * bw : 0);
    const Index from = backward ? b + 1 : b - 1;
    Scalar v = x[b * bw + i];
    for (Index q = 0; q < bw; ++q) v -= m[i * bw + q] * x[from * bw + q];
    x[b * bw + i] = v;
  }
  CONDSIM_HD_INLINE void Lane(Index c, int lane, int phase) const {
    const Index base = ch.chain.ptr[c];
    if (!ok[c] || !env_active[node_env[ch.chain.nodes[base]]]) return;
    const Index n = 3 * (ch.chain.ptr[c + 1] - base), bw = ChainBandwidth(ch.band);
    const ChainPartition part(n, bw);
    if ((phase >= kTailFirst && phase < kForward) || (phase >= kHeadFirst && phase < kSolve)) {
      // a block of a reduced system, its rows over the lanes: tails b = phase; heads from the
      // last block back, b = p - 2 - (phase - kHeadFirst)
      const bool backward = phase >= kHeadFirst;
      const Index b = backward ? part.p - 2 - (phase - kHeadFirst) : phase;
      if (backward ? b >= 0 : b < part.p)
        for (Index i = lane; i < bw; i += kLanes) ReducedRow(c, bw, b, i, backward);
      return;
    }
    const Index j = lane;
    if (j >= part.p) return;
    const Scalar* l = factor + ch.chain.factor_offset[c];
    Scalar* tails = edge + c * ChainEdgeStride(bw);
    Scalar* heads = tails + std::int64_t(kChainLanes) * bw;
    Scalar* wk = work + 3 * std::int64_t(base);
    const Index s = part.Begin(j), e = part.End(j);
    auto dof = [&](Index i) { return 3 * std::int64_t(ch.chain.nodes[base + i / 3]) + i % 3; };
    auto free_node = [&](Index i) { return !ch.in_contact[ch.chain.nodes[base + i / 3]]; };
    // contact rows are identity rows with a zero right-hand side (as in ChainApplyOp)
    auto rhs = [&](Index i) { return free_node(i) ? r[dof(i)] : Scalar(0); };
    if (phase == 0) {
      // z_j = L_jj^-1 r_j; its tail
      for (Index i = s; i < e; ++i) {
        Scalar v = rhs(i);
        for (Index k = (i - bw > s ? i - bw : s); k < i; ++k) v -= ChainL(l, bw, i, k) * wk[k];
        wk[i] = v / ChainL(l, bw, i, i);
      }
      if (j < part.p - 1)
        for (Index q = 0; q < bw; ++q) tails[j * bw + q] = wk[e - bw + q];
    } else if (phase == kForward) {
      // y_j = L_jj^-1 (r_j - C_j t_{j-1}) into d
      for (Index i = s; i < e; ++i) {
        Scalar v = rhs(i);
        for (Index k = (i > bw ? i - bw : 0); k < i; ++k) v -= ChainL(l, bw, i, k) * (k < s ? tails[(j - 1) * bw + (k - (s - bw))] : d[dof(k)]);
        d[dof(i)] = free_node(i) ? v / ChainL(l, bw, i, i) : Scalar(0);
      }
    } else if (phase == kBackward) {
      // u_j = L_jj^-T y_j; its head
      for (Index i = e - 1; i >= s; --i) {
        Scalar v = d[dof(i)];
        const Index k1 = i + bw < e - 1 ? i + bw : e - 1;
        for (Index k = i + 1; k <= k1; ++k) v -= ChainL(l, bw, k, i) * wk[k];
        wk[i] = v / ChainL(l, bw, i, i);
      }
      if (j > 0)
        for (Index q = 0; q < bw; ++q) heads[j * bw + q] = wk[s + q];
    } else if (phase == kSolve) {
      // x_j = L_jj^-T (y_j - D_j h_{j+1}) in place
      for (Index i = e - 1; i >= s; --i) {
        Scalar v = d[dof(i)];
        const Index k1 = i + bw < n - 1 ? i + bw : n - 1;
        for (Index k = i + 1; k <= k1; ++k) v -= ChainL(l, bw, k, i) * (k >= e ? heads[(j + 1) * bw + (k - e)] : d[dof(k)]);
        d[dof(i)] = v / ChainL(l, bw, i, i);
      }
    } else if (phase == kContacts) {
      // contact nodes keep d = w r
      for (Index i = s; i < e; ++i)
        if (!free_node(i)) d[dof(i)] = w[dof(i)] * r[dof(i)];
    }
  }
  // the CPU's path: the reduced systems as plain loops over the blocks' rows
  CONDSIM_HD_INLINE void operator()(Index c) const {
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, 0);
    const Index base = ch.chain.ptr[c];
    const bool run = ok[c] && env_active[node_env[ch.chain.nodes[base]]];
    const Index bw = ChainBandwidth(ch.band);
    const ChainPartition part(3 * (ch.chain.ptr[c + 1] - base), bw);
    if (run)
      for (Index b = 1; b < part.p; ++b)
        for (Index i = 0; i < bw; ++i) ReducedRow(c, bw, b, i, false);
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, kForward);
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, kBackward);
    if (run)
      for (Index b = part.p - 2; b >= 0; --b)
        for (Index i = 0; i < bw; ++i) ReducedRow(c, bw, b, i, true);
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, kSolve);
    for (int lane = 0; lane < kLanes; ++lane) Lane(c, lane, kContacts);
  }
};

// ---- Gauss-Seidel coupling of a chain's free nodes to its contact nodes -----------------------
//
// After the contact nodes' step (their new u), the free nodes solve with the contact nodes'
// new velocities instead of the old ones: u_C = start_C - A_CC^-1 y,
// y = r_C + A_CN (u_N - start_N) (block Gauss-Seidel, contact nodes first). The iteration on the
// contact nodes is then the projected step on the Schur complement
// S = A_NN - A_NC A_CC^-1 A_CN <= A_NN, which the scalar w's safeguard bounds (docs/solver.md
// "Order of the chain step"); the fixed point is unchanged (u_N = start_N there).

// y = r + A_CN (u_N - start_N) on the free chain nodes (one item per chain position), and
// d = w y there (the fallback of chains whose factorization failed); y = 0 on contact nodes (the
// lane solve reads it there)
struct ChainCouplingOp {
  static constexpr Index kGrain = 256;  // items per CPU thread at least (cpu/parallel.h)
  ChainView ch;
  Index positions;  // chain nodes in all chains
  const Scalar* values;
  const Scalar* start;
  const Scalar* u;
  const Scalar* r;
  const Scalar* w;
  Scalar* y;
  Scalar* d;
  CONDSIM_HD_INLINE void operator()(Index g) const {
    const std::int64_t node = ch.chain.nodes[g];
    if (ch.in_contact[node]) {
      for (int i = 0; i < 3; ++i) y[3 * node + i] = 0;
      return;
    }
    Scalar acc[3] = {r[3 * node], r[3 * node + 1], r[3 * node + 2]};
    // acc += A(node, q) (u_q - start_q) for a contact node q of the band; the block (g, g - s) is
    // stored at g, the block (g + s, g) at g + s (A is symmetric: its transpose)
    auto add = [&](Index blk, Index h, bool transposed) {
      const std::int64_t q = ch.chain.nodes[h];
      if (blk < 0 || !ch.in_contact[q]) return;
      const Scalar* a = values + 9 * std::int64_t(blk);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) acc[i] += a[transposed ? 3 * j + i : 3 * i + j] * (u[3 * q + j] - start[3 * q + j]);
    };
    for (Index s = 1; s <= ch.band; ++s) {
      if (g - s >= 0) add(ch.chain.band_block[g * (ch.band + 1) + s], g - s, false);
      if (g + s < positions) add(ch.chain.band_block[(g + s) * (ch.band + 1) + s], g + s, true);
    }
    for (int i = 0; i < 3; ++i) {
      y[3 * node + i] = acc[i];
      d[3 * node + i] = w[3 * node + i] * acc[i];
    }
  }
};

// u = start - d on the free chain nodes (one item per chain position)
struct ChainFinishOp {
  static constexpr Index kGrain = 256;  // items per CPU thread at least (cpu/parallel.h)
  ChainView ch;
  const Scalar* start;
  const Scalar* d;
  Scalar* u;
  CONDSIM_HD_INLINE void operator()(Index g) const {
    const std::int64_t node = ch.chain.nodes[g];
    if (ch.in_contact[node]) return;
    for (int i = 0; i < 3; ++i) u[3 * node + i] = start[3 * node + i] - d[3 * node + i];
  }
};

}  // namespace condsim
