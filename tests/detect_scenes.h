// The brute-force reference of the detection rule (every query against every triangle) for the
// random scenes of fixtures/random_scene.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "models/collision/detect_ops.h"
#include "models/collision/detector.h"
#include "models/collision/primitives.h"
#include "fixtures/random_scene.h"

namespace condsim::test {

using condsim::DetectSceneData;
using condsim::RandomDetectScene;

// the detection rule (detect_ops.h, PointQueryOp) by brute force: every query against every
// triangle, the nearest admissible per owner (least |p - q|; ties: lower triangle), the
// kDetectSlots nearest owners, sorted by owner
inline DetectResult BruteForceDetect(const DetectSceneData& d, Scalar dt, Scalar margin) {
  const DetectScene& s = d.scene;
  DetectResult out;
  auto at = [&](const std::vector<Scalar>& a, Index i) { return Vec3(a[3 * i], a[3 * i + 1], a[3 * i + 2]); };
  auto adjacent = [&](Index i, Index j) {
    return std::binary_search(s.adj.begin() + s.adj_ptr[i], s.adj.begin() + s.adj_ptr[i + 1], j);
  };
  const Index nt = static_cast<Index>(s.tri_owner.size());
  for (Index q = 0; q < static_cast<Index>(s.query.size()); ++q) {
    const Index vi = s.query[q], own = s.vertex_owner[vi];
    const Vec3 p = at(d.x, vi), vp = at(d.v, vi);
    // best per owner: (|p - q|, tri), and its gap, weights, normal
    std::vector<std::pair<Scalar, Index>> best(s.self_contact.size(), {1e300, -1});
    std::vector<Scalar> bgap(best.size());
    std::vector<Vec3> bw(best.size()), bn(best.size());
    for (Index t = 0; t < nt; ++t) {
      const Index* tv = s.tri.data() + 3 * t;
      const Index to = s.tri_owner[t];
      if (to == own) {
        if (!s.self_contact[own]) continue;
        bool near = false;
        for (int k = 0; k < 3; ++k) near = near || tv[k] == vi || adjacent(vi, tv[k]);
        if (near) continue;
      }
      const Vec3 a = at(d.x, tv[0]), b = at(d.x, tv[1]), c = at(d.x, tv[2]);
      const Vec3 nrm = Normalized(Cross(b - a, c - a));
      const Vec3 w = ClosestOnTriangle(p, a, b, c);
      const Vec3 dd = p - (w[0] * a + w[1] * b + w[2] * c);
      const Scalar sd = Dot(nrm, dd);
      Scalar gap;
      Vec3 n;
      const Scalar tol = 1e-9 * std::sqrt(Norm(Cross(b - a, c - a)));
      if (Norm(dd - sd * nrm) <= tol && (std::min(w[0], std::min(w[1], w[2])) > 1e-9 || sd >= -tol)) {
        if (sd < -s.depth_limit[to]) continue;
        gap = sd - s.radius[q];
        n = nrm;
      } else {
        const Scalar dist = Norm(dd);
        if (!(dist > 0) || sd < 0.5 * dist) continue;
        gap = dist - s.radius[q];
        n = (1 / dist) * dd;
      }
      const Vec3 vq = w[0] * at(d.v, tv[0]) + w[1] * at(d.v, tv[1]) + w[2] * at(d.v, tv[2]);
      if (gap > Norm(vp - vq) * dt + margin) continue;
      const Scalar dist = Norm(dd);
      if (dist < best[to].first || (dist == best[to].first && t < best[to].second)) {
        best[to] = {dist, t};
        bgap[to] = gap;
        bw[to] = w;
        bn[to] = n;
      }
    }
    // at most kDetectSlots owners per query: the closest ones
    std::vector<std::pair<Scalar, std::size_t>> order;
    for (std::size_t o = 0; o < best.size(); ++o)
      if (best[o].second >= 0) order.push_back({best[o].first, o});
    std::sort(order.begin(), order.end());
    std::vector<bool> keep(best.size(), false);
    for (std::size_t k = 0; k < order.size() && k < std::size_t(kDetectSlots); ++k) keep[order[k].second] = true;
    for (std::size_t o = 0; o < best.size(); ++o) {
      if (!keep[o]) continue;
      out.query.push_back(q);
      out.tri.push_back(best[o].second);
      out.gap.push_back(bgap[o]);
      for (int k = 0; k < 3; ++k) {
        out.w.push_back(bw[o][k]);
        out.n.push_back(bn[o][k]);
      }
    }
  }
  return out;
}

}  // namespace condsim::test
