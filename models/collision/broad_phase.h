// Broad phase: a uniform grid over axis-aligned boxes, queried by points (vertex vs triangle,
// node vs segment). Cells are hashed into sorted (cell, box) pairs, so a query returns candidate
// boxes in ascending id order whatever the threads did: detection built on it is canonical.
// Host code; the device version (same algorithm with a radix sort) is part of the collision issue.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

struct Aabb {
  static constexpr Scalar kHuge = std::numeric_limits<Scalar>::max();
  // empty: lo above hi (the largest finite Scalar, so float builds work too)
  Vec3 lo{kHuge, kHuge, kHuge}, hi{-kHuge, -kHuge, -kHuge};
  void Grow(const Vec3& p) {
    for (int d = 0; d < 3; ++d) {
      lo[d] = p[d] < lo[d] ? p[d] : lo[d];
      hi[d] = p[d] > hi[d] ? p[d] : hi[d];
    }
  }
  void Inflate(Scalar r) {
    for (int d = 0; d < 3; ++d) {
      lo[d] -= r;
      hi[d] += r;
    }
  }
  bool Contains(const Vec3& p) const {
    return p[0] >= lo[0] && p[0] <= hi[0] && p[1] >= lo[1] && p[1] <= hi[1] && p[2] >= lo[2] && p[2] <= hi[2];
  }
};

class AabbGrid {
 public:
  // boxes, and the cell edge [m] (<= 0: the largest box extent)
  void Build(const std::vector<Aabb>& boxes, Scalar cell = 0);
  // ids of the boxes containing p, ascending
  void Query(const Vec3& p, std::vector<Index>* out) const;
  Scalar cell() const { return cell_; }

 private:
  std::uint64_t Key(std::int64_t x, std::int64_t y, std::int64_t z) const;
  std::int64_t Coord(Scalar x) const;
  Scalar cell_ = 1;
  std::vector<Aabb> boxes_;
  std::vector<std::pair<std::uint64_t, Index>> entries_;  // (cell key, box), sorted
};

}  // namespace condsim
