// The uniform-grid broad phase.
#include "models/collision/broad_phase.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"

namespace condsim {

std::int64_t AabbGrid::Coord(Scalar x) const { return static_cast<std::int64_t>(std::floor(x / cell_)); }

// 21 bits per axis (cells wrap beyond +-1e6, which only adds candidates, never loses one)
std::uint64_t AabbGrid::Key(std::int64_t x, std::int64_t y, std::int64_t z) const {
  const std::uint64_t m = (std::uint64_t(1) << 21) - 1;
  return (std::uint64_t(x) & m) | ((std::uint64_t(y) & m) << 21) | ((std::uint64_t(z) & m) << 42);
}

void AabbGrid::Build(const std::vector<Aabb>& boxes, Scalar cell) {
  boxes_ = boxes;
  entries_.clear();
  if (cell <= 0) {
    cell = 0;
    for (const Aabb& b : boxes)
      for (int d = 0; d < 3; ++d) cell = std::max(cell, b.hi[d] - b.lo[d]);
  }
  cell_ = cell > 0 ? cell : Scalar(1);
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    const Aabb& b = boxes[k];
    for (int d = 0; d < 3; ++d)
      CONDSIM_CHECK(std::isfinite(b.lo[d]) && std::isfinite(b.hi[d]), "broad phase: box " << k << " is not finite");
    const std::int64_t x0 = Coord(b.lo[0]), x1 = Coord(b.hi[0]), y0 = Coord(b.lo[1]), y1 = Coord(b.hi[1]);
    const std::int64_t z0 = Coord(b.lo[2]), z1 = Coord(b.hi[2]);
    for (std::int64_t x = x0; x <= x1; ++x)
      for (std::int64_t y = y0; y <= y1; ++y)
        for (std::int64_t z = z0; z <= z1; ++z) entries_.push_back({Key(x, y, z), static_cast<Index>(k)});
  }
  std::sort(entries_.begin(), entries_.end());
  entries_.erase(std::unique(entries_.begin(), entries_.end()), entries_.end());
}

void AabbGrid::Query(const Vec3& p, std::vector<Index>* out) const {
  out->clear();
  const std::uint64_t key = Key(Coord(p[0]), Coord(p[1]), Coord(p[2]));
  auto it = std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(key, Index(-1)));
  for (; it != entries_.end() && it->first == key; ++it)
    if (boxes_[it->second].Contains(p)) out->push_back(it->second);
}

}  // namespace condsim
