// Device operations of cable-link detection (models/collision/link_detector.h): link a of one
// cable against link b of another (or the same) cable, segment against segment with radii. The
// narrow phase (LinkNarrow) is the host's former arithmetic (DetectStage::CableLinks), so the
// downloaded contacts are the ones the host made. One source for the CPU and the GPU (CONDSIM_HD functors).
#pragma once

#include <cstdint>

#include "condsim/core.h"
#include "condsim/math.h"
#include "models/collision/detect_ops.h"
#include "models/collision/primitives.h"

namespace condsim {

// the closest points of links (p0, p1) and (q0, q1) (radii ra, rb; the centres' velocities vp0,
// vp1, vq0, vq1): weights st, the point pp on p's axis, the normal n from q to p and the gap
// dist - ra - rb; false when the axes cross (no normal) or the gap is out of reach,
// gap > |v_p - v_q| t + margin (contact_rule.h InReach)
struct LinkContact {
  SegmentParams st;
  Vec3 pp, n;
  Scalar gap;
};
CONDSIM_HD_INLINE bool LinkNarrow(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1, const Vec3& vp0, const Vec3& vp1,
                                  const Vec3& vq0, const Vec3& vq1, Scalar ra, Scalar rb, Scalar dt, Scalar margin, LinkContact* c) {
  const SegmentParams st = ClosestOnSegments(p0, p1, q0, q1);
  const Vec3 pp = p0 + st.s * (p1 - p0), qq = q0 + st.t * (q1 - q0);
  const Vec3 d = pp - qq;
  const Scalar dist = Norm(d);
  Vec3 n = dist > 1e-12 ? (1 / dist) * d : Cross(p1 - p0, q1 - q0);
  if (!(Norm(n) > 0)) return false;
  n = Normalized(n);
  const Scalar gap = dist - ra - rb;
  const Vec3 vp = (1 - st.s) * vp0 + st.s * vp1;
  const Vec3 vq = (1 - st.t) * vq0 + st.t * vq1;
  if (gap > Norm(vp - vq) * dt + margin) return false;
  c->st = st;
  c->pp = pp;
  c->n = n;
  c->gap = gap;
  return true;
}

// the two cables as the link ops see them: links (first centres), centres' positions (3 each)
// and nodes' velocities (3 each, centre s at node 2s)
struct LinkCables {
  const Index* link_a;
  const Index* link_b;
  const Scalar* xa;
  const Scalar* va;
  const Scalar* xb;
  const Scalar* vb;
  // LinkNarrow of a's link from centre s and b's link from centre u
  CONDSIM_HD_INLINE bool Narrow(Index s, Index u, Scalar ra, Scalar rb, Scalar dt, Scalar margin, LinkContact* lc) const {
    return LinkNarrow(LoadVec3(xa, s), LoadVec3(xa, s + 1), LoadVec3(xb, u), LoadVec3(xb, u + 1), LoadVec3(va, 2 * s),
                      LoadVec3(va, 2 * s + 2), LoadVec3(vb, 2 * u), LoadVec3(vb, 2 * u + 2), ra, rb, dt, margin, lc);
  }
};

// |v| of cable centre s (its velocity at node 2s)
struct LinkSpeedOp {
  const Scalar* v;
  Scalar* speed;
  CONDSIM_HD_INLINE void operator()(Index s) const { speed[s] = Norm(LoadVec3(v, 2 * s)); }
};

// per link k of cable b (centres link[k], link[k] + 1): its box grown by `reach` (as
// broad_phase.h Aabb: Grow by both centres, then Inflate), lo/hi 3 each, ext its largest side
struct LinkBoxOp {
  const Index* link;
  const Scalar* x;
  Scalar reach;
  Scalar* lo;
  Scalar* hi;
  Scalar* ext;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Vec3 p0 = LoadVec3(x, link[k]), p1 = LoadVec3(x, link[k] + 1);
    Vec3 a = p0, b = p0;
    for (int d = 0; d < 3; ++d) {
      a[d] = p1[d] < a[d] ? p1[d] : a[d];
      b[d] = p1[d] > b[d] ? p1[d] : b[d];
    }
    ext[k] = GrowBox(reach, &a, &b);
    StoreVec3(lo, k, a);
    StoreVec3(hi, k, b);
  }
};

// per link i of cable a (centres s = link_a[i], s + 1): the links u = link_b[k] of cable b whose
// grown box holds the link's midpoint (the grid's cell of the midpoint, candidates ascending),
// skipping u < s + skip in self-contact, that LinkNarrow accepts; count pass (offset null): their
// number; fill pass: (i, k) from offset[i] on, in ascending k
struct LinkPairOp {
  static constexpr Index kGrain = 1024;  // items per CPU thread at least (cpu/parallel.h)
  LinkCables c;
  const Scalar* box_lo;
  const Scalar* box_hi;
  const std::uint64_t* keys;
  const Index* items;
  Index num_pairs;
  DetectGrid grid;
  Index skip;  // self-contact: links closer along the cable are neighbours; 0: two cables
  int self;
  Scalar ra, rb, dt, margin;
  const Index* offset;  // null: count
  Index* count;
  Index* out_a;
  Index* out_b;
  CONDSIM_HD void operator()(Index i) const {
    const Index s = c.link_a[i];
    const Vec3 p0 = LoadVec3(c.xa, s), p1 = LoadVec3(c.xa, s + 1);
    const Vec3 mid = Scalar(0.5) * (p0 + p1);
    const std::uint64_t key = DetectKey(DetectCell(mid[0], grid), DetectCell(mid[1], grid), DetectCell(mid[2], grid), 0, grid);
    Index lo = 0, hi = num_pairs;
    while (lo < hi) {
      const Index m = lo + (hi - lo) / 2;
      if (keys[m] < key) lo = m + 1; else hi = m;
    }
    Index n = 0, at = offset != nullptr ? offset[i] : 0;
    for (Index j = lo; j < num_pairs && keys[j] == key; ++j) {
      const Index k = items[j];
      if (j > lo && items[j - 1] == k) continue;  // a box listed twice in one cell (clamped cells)
      const std::int64_t b3 = 3 * std::int64_t(k);
      if (!(mid[0] >= box_lo[b3] && mid[0] <= box_hi[b3] && mid[1] >= box_lo[b3 + 1] && mid[1] <= box_hi[b3 + 1] &&
            mid[2] >= box_lo[b3 + 2] && mid[2] <= box_hi[b3 + 2]))
        continue;
      const Index u = c.link_b[k];
      if (self && u < s + skip) continue;  // each pair once, neighbours never
      LinkContact lc;
      if (!c.Narrow(s, u, ra, rb, dt, margin, &lc)) continue;
      if (offset != nullptr) {
        out_a[at + n] = i;
        out_b[at + n] = k;
      }
      ++n;
    }
    if (offset == nullptr) count[i] = n;
  }
};

// per hit h: its contact (LinkNarrow again, the same arithmetic as the pass that found it) to
// the host, 9 values: s, t, gap, n (3), pp (3)
struct LinkGatherOp {
  LinkCables c;
  const Index* hit_a;
  const Index* hit_b;
  Scalar ra, rb, dt, margin;
  Scalar* out;  // 9 per hit
  CONDSIM_HD_INLINE void operator()(Index h) const {
    const Index s = c.link_a[hit_a[h]], u = c.link_b[hit_b[h]];
    LinkContact lc;
    lc.st = {0, 0};
    lc.gap = 0;
    c.Narrow(s, u, ra, rb, dt, margin, &lc);
    Scalar* o = out + 9 * std::int64_t(h);
    o[0] = lc.st.s;
    o[1] = lc.st.t;
    o[2] = lc.gap;
    for (int d = 0; d < 3; ++d) {
      o[3 + d] = lc.n[d];
      o[6 + d] = lc.pp[d];
    }
  }
};

}  // namespace condsim
