// Lane functors (models/cond/chain_ops.h): an item runs on F::kLanes lanes, phase by phase, the
// lanes of a phase in any order. The phases are F::kPhases, or f.ItemPhases(item) for a functor
// that declares kItemPhases (a count known only at run time, the same for all lanes of an item).
#pragma once

#include <type_traits>

#include "condsim/core.h"

namespace condsim {

template <class F, class = void>
struct HasItemPhases : std::false_type {};
template <class F>
struct HasItemPhases<F, std::void_t<decltype(F::kItemPhases)>> : std::true_type {};

// the phases of `item`
template <class F>
CONDSIM_HD_INLINE int LanePhases(const F& f, Index item) {
  if constexpr (HasItemPhases<F>::value) {
    return f.ItemPhases(item);
  } else {
    (void)f;
    (void)item;
    return F::kPhases;
  }
}

}  // namespace condsim
