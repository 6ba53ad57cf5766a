// OpenMP execution for the CPU backend: ParallelFor over a CONDSIM_HD functor, and chunked
// reductions whose result does not depend on the number of threads.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "condsim/backend.h"
#include "condsim/core.h"
#include "condsim/lanes.h"
#include "cpu/guarded_memory.h"

namespace condsim::cpu {

// items per thread below which a launch does not fork (the fork, join and, on a loaded machine,
// the wait for a descheduled thread cost more than the work): a functor may declare its own
// `static constexpr Index kGrain` (heavy items: a tetrahedron, a cable's banded solve); plain
// per-DOF functors take kDefaultGrain. docs/performance.md, "Threads on a busy machine".
constexpr Index kDefaultGrain = 131072;

template <class F, class = void>
struct GrainOf {
  static constexpr Index value = kDefaultGrain;
};
template <class F>
struct GrainOf<F, std::void_t<decltype(F::kGrain)>> {
  static constexpr Index value = F::kGrain;
};

// checks of GPU semantics on the CPU (scripts/gpu-semantics.sh), read once from the environment:
// CONDSIM_CPU_ORDER=reverse|shuffle runs every launch's items in reversed or shuffled order (a GPU
// promises no order: a result that changes shows a dependence between items; a lane functor's
// items lane by lane, the lanes of every phase in one permutation per launch: RunLanes), and
// CONDSIM_CPU_GRAIN=N replaces every grain (1: every launch forks, for race checkers),
// CONDSIM_CPU_GUARD=1 runs the backend in guarded memory (cpu/guarded_memory.h), and
// CONDSIM_CPU_KERNEL_LOG=FILE appends the name of each functor type the process launches, once
// per type (scripts/ci-excludes.sh: the kernels of the tests a CI stage leaves out)
struct CheckMode {
  enum Order { kForward, kReverse, kShuffle } order = kForward;
  Index grain = 0;        // 0: the functors' own
  bool guard = false;     // guarded memory
  std::string kernel_log;  // empty: no log
};
const CheckMode& Checks();
// appends the demangled type name and a newline to the kernel log in one write(2) (O_APPEND:
// several processes, e.g. ctest -j, may share the file)
void LogKernelType(const std::type_info& type);
// the kernel log's entry for F, the first time F is launched in this process
template <class F>
void LogKernel() {
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) LogKernelType(typeid(F));
}
// the item order of one launch under CheckMode (the next permutation of a fixed sequence)
std::vector<Index> CheckedOrder(Index n);

// a lane functor (F::kLanes, F::kPhases, f.Lane(item, lane, phase); models/cond/chain_ops.h): the
// CUDA backend runs an item on a warp (or a block of kLanes threads), phase by phase
template <class F, class = void>
struct IsLaneFunctor : std::false_type {};
template <class F>
struct IsLaneFunctor<F, std::void_t<decltype(F::kLanes)>> : std::true_type {};

// one item of a lane functor as a warp runs it: phase by phase, each phase's lanes in the order
// lanes[0 .. F::kLanes) (a warp promises none)
template <class F>
void RunLanes(const F& f, Index item, const Index* lanes) {
  const int phases = LanePhases(f, item);
  for (int phase = 0; phase < phases; ++phase)
    for (int k = 0; k < F::kLanes; ++k) f.Lane(item, static_cast<int>(lanes[k]), phase);
}

// runs f(i) for i in [0, n) on up to `threads` OpenMP threads (0 = OpenMP's default), static
// schedule, at least `grain` items per thread (serial when n < 2 grain)
template <class F>
void ParallelFor(int threads, Index n, const F& f, Index grain = GrainOf<F>::value) {
  const CheckMode& check = Checks();
  if (check.grain > 0) grain = check.grain;
  const Index t = std::min<Index>(threads > 0 ? threads : omp_get_max_threads(), n / std::max<Index>(grain, 1));
  if (check.order != CheckMode::kForward) {
    const std::vector<Index> order = CheckedOrder(n);
    if constexpr (IsLaneFunctor<F>::value) {
      // a lane functor's items lane by lane, the lanes of each phase permuted too
      const std::vector<Index> lanes = CheckedOrder(F::kLanes);
#pragma omp parallel for schedule(static) num_threads(int(std::max<Index>(t, 1))) if (t > 1)
      for (Index k = 0; k < n; ++k) RunLanes(f, order[k], lanes.data());
    } else {
#pragma omp parallel for schedule(static) num_threads(int(std::max<Index>(t, 1))) if (t > 1)
      for (Index k = 0; k < n; ++k) f(order[k]);
    }
    return;
  }
  if (t <= 1) {
    for (Index i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(int(t))
  for (Index i = 0; i < n; ++i) f(i);
}

// the guard's scan of a launched functor for host pointers (cpu/guarded_memory.h), on a copy whose
// padding bytes are zeroed where the compiler can (GCC >= 11): padding holds stale stack bytes,
// e.g. a bool followed by the 7 upper bytes of an old pointer
template <class F>
void CheckFunctor(const F& f) {
#if defined(__has_builtin)
#if __has_builtin(__builtin_clear_padding)
  if constexpr (std::is_trivially_copyable_v<F>) {
    alignas(F) unsigned char copy[sizeof(F)];
    std::memcpy(copy, &f, sizeof(F));
    __builtin_clear_padding(reinterpret_cast<F*>(copy));
    CheckFunctorPointers(copy, sizeof(F), typeid(F));
    return;
  }
#endif
#endif
  CheckFunctorPointers(&f, sizeof(F), typeid(F));
}

// before a launch of the device functor f: its kernel-log entry and, in guarded memory, its scan
// for host pointers
template <class F>
void InspectFunctor(const F& f) {
  const CheckMode& check = Checks();
  if (!check.kernel_log.empty()) LogKernel<F>();
  if (check.guard) CheckFunctor(f);
}

// a launch of a device functor (a model kernel, a backend primitive): ParallelFor, after
// InspectFunctor, and in guarded memory with the region open
template <class F>
void Launch(int threads, Index n, const F& f) {
  InspectFunctor(f);
  if (Checks().guard) {
    const GuardScope open;
    ParallelFor(threads, n, f);
    return;
  }
  ParallelFor(threads, n, f);
}

// the executor that model kernel sets are instantiated with (models/kernel_set.h)
struct Exec {
  int threads;
  BackendCounters* counters;  // launches counted here
  template <class F>
  void For(Index n, const F& f) const {
    ++counters->launches;
    Launch(threads, n, f);
  }
};

// elements per reduction chunk: a chunk is summed sequentially, chunks are combined in order
constexpr Index kReductionChunk = 4096;

// reduces term(i) over each segment [offsets[s], offsets[s+1]) into out[s]. The segment is cut
// into fixed chunks of kReductionChunk elements, each folded left to right from `identity`;
// the chunk results are then folded in chunk order. The grouping depends only on the
// offsets, so 1 and N threads give bitwise-identical results.
template <class Term, class Combine>
void SegmentedReduce(int threads, Index num_segments, const Index* offsets, Scalar identity,
                     const Term& term, const Combine& combine, Scalar* out) {
  // the term is the device functor (the chunk loop below is this backend's own machinery)
  InspectFunctor(term);
  const GuardScope open;
  // chunk c covers [chunk_begin[c], chunk_begin[c+1]) within one segment
  std::vector<Index> chunk_begin, chunk_end, first_chunk(std::size_t(num_segments) + 1);
  for (Index s = 0; s < num_segments; ++s) {
    first_chunk[s] = static_cast<Index>(chunk_begin.size());
    for (Index b = offsets[s]; b < offsets[s + 1]; b += kReductionChunk) {
      chunk_begin.push_back(b);
      chunk_end.push_back(std::min<Index>(b + kReductionChunk, offsets[s + 1]));
    }
  }
  first_chunk[num_segments] = static_cast<Index>(chunk_begin.size());
  std::vector<Scalar> partial(chunk_begin.size());
  ParallelFor(
      threads, static_cast<Index>(partial.size()),
      [&](Index c) {
        Scalar acc = identity;
        for (Index i = chunk_begin[c]; i < chunk_end[c]; ++i) acc = combine(acc, term(i));
        partial[c] = acc;
      },
      kDefaultGrain / kReductionChunk);
  for (Index s = 0; s < num_segments; ++s) {
    Scalar acc = identity;
    for (Index c = first_chunk[s]; c < first_chunk[s + 1]; ++c) acc = combine(acc, partial[c]);
    out[s] = acc;
  }
}

}  // namespace condsim::cpu
