// The CUDA backend's segmented reductions in an order that does not depend on the number of
// segments (docs/architecture.md "Determinism"), so that an environment of a batch reduces its
// vectors exactly as it does alone: each segment is cut into chunks of kReduceChunk terms from its
// own start; a chunk is reduced by kReduceThreads threads, thread t folding the chunk's terms t,
// t + kReduceThreads, ... from init, then the threads' values by a fixed tree (stride
// kReduceThreads / 2 down to 1); a segment folds its chunks' values in order from init (an empty
// segment gives init). SegmentedReduceHost is the same order on the host: the reference of
// tests/chunk_reduce_test.cpp, and bitwise the CUDA result (sums and NaN-propagating maxima, no
// fused multiply-add).
#pragma once

#include <vector>

#include "condsim/core.h"

namespace condsim {

constexpr Index kReduceChunk = 4096;
constexpr int kReduceThreads = 256;

// chunks of a segment of `length` terms
CONDSIM_HD_INLINE Index ReduceChunks(Index length) { return (length + kReduceChunk - 1) / kReduceChunk; }

// segments up to this many get their chunk layout from one thread (ChunkFirstOp: one launch, where
// the chunk counts and cub's exclusive scan of them take three)
constexpr Index kSerialChunkLayout = 64;

// first[s], s = 0 .. num_segments: the exclusive sum of the segments' chunk counts (the total at
// num_segments), by one thread in segment order (run on one item)
struct ChunkFirstOp {
  const Index* offsets;  // num_segments + 1
  Index num_segments;
  Index* first;          // num_segments + 1
  CONDSIM_HD_INLINE void operator()(Index) const {
    Index total = 0;
    for (Index s = 0; s < num_segments; ++s) {
      first[s] = total;
      total += ReduceChunks(offsets[s + 1] - offsets[s]);
    }
    first[num_segments] = total;
  }
};

// the segment of chunk c: the last s < num_segments with chunk_first[s] <= c (chunk_first: the
// exclusive sum of the segments' chunk counts; an empty segment shares its start with the next)
CONDSIM_HD_INLINE Index ChunkSegment(const Index* chunk_first, Index num_segments, Index c) {
  Index lo = 0, hi = num_segments;
  while (lo < hi) {
    const Index mid = lo + (hi - lo) / 2;
    if (chunk_first[mid] <= c) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo - 1;
}

// one chunk, terms term(begin) .. term(begin + n - 1) (n <= kReduceChunk), in the threads' order
template <class Term, class Op, class T>
T ChunkValueHost(const Term& term, Index begin, Index n, const Op& op, T init) {
  T lane[kReduceThreads];
  for (int t = 0; t < kReduceThreads; ++t) {
    T acc = init;
    for (Index k = t; k < n; k += kReduceThreads) acc = op(acc, term(begin + k));
    lane[t] = acc;
  }
  for (int stride = kReduceThreads / 2; stride > 0; stride /= 2)
    for (int t = 0; t < stride; ++t) lane[t] = op(lane[t], lane[t + stride]);
  return lane[0];
}

// per segment [offsets[s], offsets[s + 1]): its chunks' values folded in order from init
template <class Term, class Op, class T>
std::vector<T> SegmentedReduceHost(const Term& term, const std::vector<Index>& offsets, const Op& op, T init) {
  std::vector<T> out;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    T acc = init;
    for (Index begin = offsets[s]; begin < offsets[s + 1]; begin += kReduceChunk) {
      const Index n = offsets[s + 1] - begin < kReduceChunk ? offsets[s + 1] - begin : kReduceChunk;
      acc = op(acc, ChunkValueHost(term, begin, n, op, init));
    }
    out.push_back(acc);
  }
  return out;
}

}  // namespace condsim
