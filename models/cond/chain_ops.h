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

}  // namespace condsim
