// The contacts' coloring made on the backend (ContactColoring, models/cond/contact_coloring.h):
// each node's contacts from a sort of the contacts' nodes, then the greedy coloring in contact
// order in rounds, then the contacts sorted by color. Bitwise the host's ColorContacts.
#pragma once

#include <cstdint>

#include "condsim/contacts.h"
#include "condsim/core.h"

namespace condsim {

// sort keys of the contacts' nodes: item m writes node_i << 32 | m and node_j << 32 | m (an
// S-contact's missing j: a key past every node's), each with value m; sorted, a node's keys are
// contiguous and its contacts ascending
struct ContactNodeKeyOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr std::uint64_t kNone = ~std::uint64_t(0);
  const Index* node_i;
  const Index* node_j;
  std::uint64_t* keys;  // 2 per contact
  Index* values;        // 2 per contact
  CONDSIM_HD_INLINE static std::uint64_t Key(Index high, Index low) {
    return std::uint64_t(std::uint32_t(high)) << 32 | std::uint64_t(std::uint32_t(low));
  }
  CONDSIM_HD_INLINE void operator()(Index m) const {
    keys[2 * m] = Key(node_i[m], m);
    keys[2 * m + 1] = node_j[m] >= 0 ? Key(node_j[m], m) : kNone;
    values[2 * m] = m;
    values[2 * m + 1] = m;
  }
};

// ptr[k] = the first of the n sorted keys whose high word is at least k (items: k = 0 .. slots,
// both included): node k's contacts are values[ptr[k] .. ptr[k + 1]) after ContactNodeKeyOp's
// sort, and color c's are [ptr[c] .. ptr[c + 1]) after ContactColorKeyOp's
struct ContactKeyPtrOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const std::uint64_t* keys;
  Index n;
  Index* ptr;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    ptr[k] = LowerBound(keys, 0, n, ContactNodeKeyOp::Key(k, 0));
  }
};

// one round of the greedy coloring in contact order (ColorContacts): a contact not yet colored
// whose earlier contacts at its nodes all are takes the least color none of them has; the others
// wait (pending 1). The round reads color_in and writes color_out (null color_in: the first
// round, nothing colored), so that a contact never sees a color of its own round; the earliest
// waiting contact is always colored, and each color is the one the sequential loop gives
struct ContactColorRoundOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node_i;
  const Index* node_j;
  const Index* node_ptr;  // ContactKeyPtrOp over the nodes
  const Index* node_contact;
  const Index* color_in;
  Index* color_out;
  Index* pending;
  CONDSIM_HD_INLINE Index In(Index m) const { return color_in == nullptr ? -1 : color_in[m]; }
  // whether a contact before m at node k has color c (c = -1: is not colored yet)
  CONDSIM_HD_INLINE bool Has(Index k, Index m, Index c) const {
    if (k < 0) return false;
    for (Index e = node_ptr[k]; e < node_ptr[k + 1] && node_contact[e] < m; ++e)
      if (In(node_contact[e]) == c) return true;
    return false;
  }
  CONDSIM_HD_INLINE void operator()(Index m) const {
    const Index i = node_i[m], j = node_j[m], own = In(m);
    if (own >= 0 || Has(i, m, -1) || Has(j, m, -1)) {
      color_out[m] = own;
      pending[m] = own >= 0 ? 0 : 1;
      return;
    }
    Index c = 0;
    while (Has(i, m, c) || Has(j, m, c)) ++c;
    color_out[m] = c;
    pending[m] = 0;
  }
};

// the contact step's node flags on the backend (CondContext::in_contact): `mark` false, items all
// nodes: 1 where a contact holds node k (node_ptr over the `covered` nodes, ContactKeyPtrOp; none
// beyond), else 0; `mark` true, items the listed nodes: 1 at node[k] when it is one of the
// `nodes` (a component's extra nodes, CondComponent::MarkContactNodesOnBackend; listed once each)
struct ContactNodeFlagOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* node_ptr;
  Index covered;
  const Index* node;  // `mark`: the listed nodes
  Index nodes;
  bool mark;
  unsigned char* flag;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (mark) {
      if (node[k] < nodes) flag[node[k]] = 1;
      return;
    }
    flag[k] = k < covered && node_ptr[k + 1] > node_ptr[k] ? 1 : 0;
  }
};

// sort keys of the colored contacts: color << 32 | m with value m; sorted, the values are the
// contacts color by color, ascending within a color (ColorContacts' order)
struct ContactColorKeyOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* color;
  std::uint64_t* keys;
  Index* values;
  CONDSIM_HD_INLINE void operator()(Index m) const {
    keys[m] = ContactNodeKeyOp::Key(color[m], m);
    values[m] = m;
  }
};

}  // namespace condsim
