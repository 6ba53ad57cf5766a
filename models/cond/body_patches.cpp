// Body-mode patches of deformable bodies from their nodes' positions (cond_body_modes.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>

#include "condsim/error.h"
#include "models/cond/cond_body_modes.h"
#include "models/cond/cond_kernels.h"

namespace condsim {
namespace {
// GridPatches makes patches of at least 8 points, and at most one per 16 points
constexpr Index kMinPatchPoints = 8;
}  // namespace

std::vector<Index> GridPatches(const std::vector<Scalar>& x, Index target) {
  const std::size_t n = x.size() / 3;
  std::vector<Index> patch(n, 0);
  target = std::min<Index>(target, static_cast<Index>(n) / (2 * kMinPatchPoints));
  if (target <= 1) return patch;
  Vec3 lo = LoadVec3(x.data(), 0), hi = lo;
  for (std::size_t i = 1; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], x[3 * i + d]);
      hi[d] = std::max(hi[d], x[3 * i + d]);
    }
  // cells of size h from lo; the number of non-empty ones
  using Key = std::array<std::int64_t, 3>;
  auto key_of = [&](std::size_t i, Scalar h) {
    Key key;
    for (int d = 0; d < 3; ++d) key[d] = static_cast<std::int64_t>(std::floor((x[3 * i + d] - lo[d]) / h));
    return key;
  };
  std::map<Key, Index> cells;  // cell -> its point count
  auto assign = [&](Scalar h) {
    cells.clear();
    for (std::size_t i = 0; i < n; ++i) ++cells[key_of(i, h)];
    return static_cast<Index>(cells.size());
  };
  // bisection on h: hi_h leaves at most target cells (one cell spans the box), lo_h more
  Scalar hi_h = Scalar(1.001) * std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], Scalar(1e-30)});
  Scalar lo_h = hi_h / Scalar(2 * target);
  while (assign(lo_h) <= target && lo_h > Scalar(1e-12) * hi_h) lo_h /= 2;
  while (hi_h - lo_h > Scalar(1e-3) * hi_h) {
    const Scalar mid = (lo_h + hi_h) / 2;
    (assign(mid) <= target ? hi_h : lo_h) = mid;
  }
  assign(hi_h);
  // cells with fewer than kMinPatchPoints points join the nearest larger cell (the first in cell
  // order on ties); the rest are numbered in cell order
  std::vector<Key> keys;
  std::vector<Index> size;
  for (const auto& [key, count] : cells) {
    keys.push_back(key);
    size.push_back(count);
  }
  std::vector<Index> id(keys.size(), -1);
  Index next = 0;
  for (std::size_t c = 0; c < keys.size(); ++c)
    if (size[c] >= kMinPatchPoints) id[c] = next++;
  if (next == 0) return patch;
  for (std::size_t c = 0; c < keys.size(); ++c) {
    if (id[c] >= 0 || size[c] >= kMinPatchPoints) continue;
    std::int64_t best = -1;
    std::size_t best_cell = 0;
    for (std::size_t o = 0; o < keys.size(); ++o) {
      if (size[o] < kMinPatchPoints) continue;
      std::int64_t dist = 0;
      for (int d = 0; d < 3; ++d) dist += (keys[o][d] - keys[c][d]) * (keys[o][d] - keys[c][d]);
      if (best < 0 || dist < best) {
        best = dist;
        best_cell = o;
      }
    }
    id[c] = id[best_cell];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Key key = key_of(i, hi_h);
    patch[i] = id[std::size_t(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin())];
  }
  return patch;
}

void AppendBodyPatchNodes(const std::vector<Index>& patch, Index first, BodyModes* modes) {
  if (modes->body_ptr.empty()) modes->body_ptr.push_back(0);
  const Index count = static_cast<Index>(patch.size());
  const Index num_patches = count == 0 ? 0 : *std::max_element(patch.begin(), patch.end()) + 1;
  // nodes grouped by patch (counting sort keeps node order within a patch)
  std::vector<Index> start(std::size_t(num_patches) + 1, 0);
  for (Index p : patch) {
    CONDSIM_CHECK(p >= 0, "AppendBodyPatches: negative patch " << p);
    ++start[std::size_t(p) + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<Index> order(static_cast<std::size_t>(count));
  std::vector<Index> fill(start.begin(), start.end() - 1);
  for (Index i = 0; i < count; ++i) order[std::size_t(fill[std::size_t(patch[i])]++)] = i;
  for (Index p = 0; p < num_patches; ++p) {
    for (Index k = start[p]; k < start[p + 1]; ++k) modes->node.push_back(first + order[k]);
    modes->ptr.push_back(static_cast<Index>(modes->node.size()));
  }
  modes->body_ptr.push_back(modes->size());
}

void AppendBodyPatches(const std::vector<Index>& patch, const std::vector<Scalar>& x, Index first, BodyModes* modes) {
  CONDSIM_CHECK(x.size() == 3 * patch.size(), "AppendBodyPatches: " << x.size() << " coordinates for " << patch.size() << " nodes");
  const Index p0 = modes->size();
  AppendBodyPatchNodes(patch, first, modes);
  // the body's mean position for the free-body arms
  const Index count = static_cast<Index>(patch.size());
  Vec3 body_centre;
  for (Index i = 0; i < count; ++i) body_centre += LoadVec3(x.data(), i);
  body_centre = body_centre / Scalar(std::max<Index>(count, 1));
  for (Index p = p0; p < modes->size(); ++p) {
    Vec3 centre;
    for (Index q = modes->ptr[p]; q < modes->ptr[p + 1]; ++q) centre += LoadVec3(x.data(), modes->node[q] - first);
    centre = centre / Scalar(std::max<Index>(modes->ptr[p + 1] - modes->ptr[p], 1));
    for (Index q = modes->ptr[p]; q < modes->ptr[p + 1]; ++q) {
      const Vec3 arm = LoadVec3(x.data(), modes->node[q] - first) - centre;
      for (int d = 0; d < 3; ++d) modes->arm.push_back(arm[d]);
      const Vec3 body_arm = LoadVec3(x.data(), modes->node[q] - first) - body_centre;
      for (int d = 0; d < 3; ++d) modes->body_arm.push_back(body_arm[d]);
    }
  }
}

BodyPatchArms::BodyPatchArms(Backend* backend) : backend_(backend), kernels_(MakeKernels<CondKernels>(*backend)) {}

BodyPatchArms::~BodyPatchArms() = default;

void BodyPatchArms::SetPatches(const BodyModes& modes, const std::vector<Index>& first) {
  CONDSIM_CHECK(!modes.body_ptr.empty() && first.size() + 1 == modes.body_ptr.size(),
                "BodyPatchArms: " << first.size() << " first nodes for " << Index(modes.body_ptr.size()) - 1 << " bodies");
  if (modes.ptr == ptr_ && modes.node == node_ && modes.body_ptr == body_ptr_ && first == first_) return;
  ptr_ = modes.ptr;
  node_ = modes.node;
  body_ptr_ = modes.body_ptr;
  first_ = first;
  // per entry: its node of its body and its patch
  std::vector<Index> local(node_.size()), entry_patch(node_.size());
  for (std::size_t k = 0; k < first_.size(); ++k)
    for (Index p = body_ptr_[k]; p < body_ptr_[k + 1]; ++p)
      for (Index q = ptr_[p]; q < ptr_[p + 1]; ++q) {
        local[std::size_t(q)] = node_[std::size_t(q)] - first_[k];
        entry_patch[std::size_t(q)] = p;
      }
  ptr_d_.Assign(backend_, ptr_);
  local_.Assign(backend_, local);
  entry_patch_.Assign(backend_, entry_patch);
  const Index entries = static_cast<Index>(node_.size());
  centre_.Resize(backend_, 3 * modes.size());
  body_centre_.Resize(backend_, 3 * static_cast<Index>(first_.size()));
  arm_.Resize(backend_, 3 * entries);
  body_arm_.Resize(backend_, 3 * entries);
}

void BodyPatchArms::Compute(const std::vector<const Array<Scalar>*>& x) {
  CONDSIM_CHECK(x.size() == first_.size(), "BodyPatchArms: positions of " << x.size() << " bodies for " << first_.size());
  for (std::size_t k = 0; k < first_.size(); ++k) {
    const Index p0 = body_ptr_[k], patches = body_ptr_[k + 1] - p0;
    const Index q0 = ptr_[std::size_t(p0)], count = ptr_[std::size_t(p0 + patches)] - q0;
    CONDSIM_CHECK(x[k]->size() == 3 * count,
                  "BodyPatchArms: body " << k << " has " << x[k]->size() << " coordinates for " << count << " nodes");
    if (count == 0) continue;
    Scalar* body_centre = body_centre_.data() + 3 * k;
    kernels_->BodyPatchCentre(patches + 1, BodyPatchCentreOp{x[k]->data(), ptr_d_.data(), local_.data(), p0, patches, count,
                                                            centre_.data(), body_centre});
    kernels_->BodyPatchArm(count, BodyPatchArmOp{x[k]->data(), local_.data(), entry_patch_.data(), centre_.data(), body_centre, q0,
                                                 arm_.data(), body_arm_.data()});
  }
}

}  // namespace condsim
