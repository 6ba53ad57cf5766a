// OpenMP execution for the CPU backend: ParallelFor over a CONDSIM_HD functor, and chunked
// reductions whose result does not depend on the number of threads.
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

#include "condsim/core.h"

namespace condsim::cpu {

// runs f(i) for i in [0, n) on `threads` OpenMP threads (0 = OpenMP's default), static schedule
template <class F>
void ParallelFor(int threads, Index n, const F& f) {
  const int t = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(t)
  for (Index i = 0; i < n; ++i) f(i);
}

// the executor that model kernel sets are instantiated with (models/kernel_set.h)
struct Exec {
  int threads;
  template <class F>
  void For(Index n, const F& f) const {
    ParallelFor(threads, n, f);
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
  ParallelFor(threads, static_cast<Index>(partial.size()), [&](Index c) {
    Scalar acc = identity;
    for (Index i = chunk_begin[c]; i < chunk_end[c]; ++i) acc = combine(acc, term(i));
    partial[c] = acc;
  });
  for (Index s = 0; s < num_segments; ++s) {
    Scalar acc = identity;
    for (Index c = first_chunk[s]; c < first_chunk[s + 1]; ++c) acc = combine(acc, partial[c]);
    out[s] = acc;
  }
}

}  // namespace condsim::cpu
