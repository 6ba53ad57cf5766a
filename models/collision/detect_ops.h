// Device operations of the point-vs-triangle detection (models/collision/detector.h): the
// uniform-grid broad phase over triangle boxes (cell keys, counts, fill; the backend sorts the
// (key, triangle) pairs) and the narrow phase per query point (nearest admissible triangle per
// owner, in a canonical order). One source for the CPU and the GPU (CONDSIM_HD functors).
#pragma once

#include <cfloat>
#include <cstdint>
#include <vector>

#include "condsim/core.h"
#include "condsim/math.h"
#include "condsim/record.h"
#include "models/collision/primitives.h"
#include "models/collision/static_world.h"

namespace condsim {

// at most this many owners (bodies, meshes) touched by one query point per step
constexpr int kDetectSlots = 4;

// the grid's cells: per axis `bits`-bit coordinates (21 for one environment; fewer leave the top
// bits of a key to the environment, so environments never share a cell)
struct DetectGrid {
  Scalar inv_h;  // 1 / cell edge [1/m]
  int bits;      // bits per axis
};

// cell coordinate: floor(x / h), clamped to `bits` bits around 0
CONDSIM_HD_INLINE std::int64_t DetectCell(Scalar x, const DetectGrid& g) {
  const Scalar c = std::floor(x * g.inv_h);
  const Scalar lim = Scalar((std::int64_t(1) << (g.bits - 1)) - 1);
  return static_cast<std::int64_t>(c < -lim ? -lim : (c > lim ? lim : c));
}

// a cell's key: the environment, then three `bits`-bit fields, offset to be non-negative
CONDSIM_HD_INLINE std::uint64_t DetectKey(std::int64_t ix, std::int64_t iy, std::int64_t iz, Index env, const DetectGrid& g) {
  const std::int64_t o = std::int64_t(1) << (g.bits - 1);
  return (std::uint64_t(env) << (3 * g.bits)) | (std::uint64_t(ix + o) << (2 * g.bits)) | (std::uint64_t(iy + o) << g.bits) |
         std::uint64_t(iz + o);
}

// the scene's topology as the kernels see it (one record, condsim/record.h; DetectScene on the
// host): vertices' owners, triangles (three vertices, owner), query points (a vertex and a
// radius), owners (self-contact flag, depth limit) and the adjacency of vertices that may not
// touch each other's triangles
#define CONDSIM_DETECT_SCENE_FIELDS(X)                                                          \
  X(Index, vertex_owner)         /* per vertex */                                            \
  X(Index, tri)                  /* 3 vertices per triangle, outward (counter-clockwise) */  \
  X(Index, tri_owner)            /* per triangle */                                          \
  X(Index, query)                /* per query point: its vertex */                           \
  X(Scalar, radius)              /* per query point [m] */                                   \
  X(unsigned char, self_contact) /* per owner: its queries may touch its own triangles */    \
  X(Scalar, depth_limit)         /* per owner: deepest face penetration detected [m] */      \
  X(Index, owner_env)            /* per owner: its environment (owners of two never touch) */ \
  X(Index, adj_ptr)              /* per vertex, sorted: vertices whose triangles it may */   \
  X(Index, adj)                  /* not touch (self-contact); empty: none */
CONDSIM_RECORD_VIEW(DetectSceneView, CONDSIM_DETECT_SCENE_FIELDS)

// the scene with the vertices' current positions and velocities
struct DetectView : DetectSceneView {
  const Scalar* x = nullptr;  // 3 per vertex [m]
  const Scalar* v = nullptr;  // 3 per vertex [m/s]
};

// the box [a, b] grown by `grow` on every side; returns its largest side
CONDSIM_HD_INLINE Scalar GrowBox(Scalar grow, Vec3* a, Vec3* b) {
  Scalar e = 0;
  for (int d = 0; d < 3; ++d) {
    (*a)[d] -= grow;
    (*b)[d] += grow;
    e = (*b)[d] - (*a)[d] > e ? (*b)[d] - (*a)[d] : e;
  }
  return e;
}

// per triangle: its box grown by `reach` (the detection reach of every query plus the largest
// radius) or its owner's depth limit plus that radius; lo/hi 3 each, ext = the largest side
struct TriangleBoxOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  DetectView s;
  Scalar reach, max_radius;
  Scalar* lo;
  Scalar* hi;
  Scalar* ext;
  CONDSIM_HD_INLINE void operator()(Index t) const {
    const Index* tv = s.tri + 3 * std::int64_t(t);
    Vec3 a = LoadVec3(s.x, tv[0]), b = a;
    for (int k = 1; k < 3; ++k) {
      const Vec3 p = LoadVec3(s.x, tv[k]);
      for (int d = 0; d < 3; ++d) {
        a[d] = p[d] < a[d] ? p[d] : a[d];
        b[d] = p[d] > b[d] ? p[d] : b[d];
      }
    }
    const Scalar dl = s.depth_limit[s.tri_owner[t]] + max_radius;
    ext[t] = GrowBox(reach > dl ? reach : dl, &a, &b);
    StoreVec3(lo, t, a);
    StoreVec3(hi, t, b);
  }
};

// per triangle: the number of cells its box covers
struct CellCountOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  const Scalar* lo;
  const Scalar* hi;
  DetectGrid grid;
  Index* count;
  CONDSIM_HD_INLINE void operator()(Index t) const {
    Index n = 1;
    for (int d = 0; d < 3; ++d)
      n *= Index(DetectCell(hi[3 * std::int64_t(t) + d], grid) - DetectCell(lo[3 * std::int64_t(t) + d], grid) + 1);
    count[t] = n;
  }
};

// per triangle: its (cell key, triangle) pairs from offset[t] on, in x-y-z cell order
struct CellFillOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  const Scalar* lo;
  const Scalar* hi;
  DetectGrid grid;
  const Index* tri_owner;
  const Index* owner_env;
  const Index* offset;
  std::uint64_t* keys;
  Index* items;
  CONDSIM_HD_INLINE void operator()(Index t) const {
    const std::int64_t b = 3 * std::int64_t(t);
    const Index env = owner_env[tri_owner[t]];
    Index k = offset[t];
    for (std::int64_t ix = DetectCell(lo[b], grid); ix <= DetectCell(hi[b], grid); ++ix)
      for (std::int64_t iy = DetectCell(lo[b + 1], grid); iy <= DetectCell(hi[b + 1], grid); ++iy)
        for (std::int64_t iz = DetectCell(lo[b + 2], grid); iz <= DetectCell(hi[b + 2], grid); ++iz) {
          keys[k] = DetectKey(ix, iy, iz, env, grid);
          items[k] = t;
          ++k;
        }
  }
};

// one query's contact with one owner: the nearest admissible triangle
// (the barycentric weights and the normal are made again for the kept triangles at the end: a
// slot of 24 bytes, not 72, keeps PointQueryOp's stack frame at 96 bytes on the GPU)
struct DetectSlot {
  Index tri;     // -1: empty
  Index owner;
  Scalar dist;   // |p - q|: the slot keeps the nearest triangle
  Scalar gap;    // distance less the query's radius [m] (negative: penetration)
};

// per query: the candidates in its cell (sorted keys: binary search), the narrow phase, and its
// slots (kDetectSlots per query, sorted by owner; tri = -1 when unused). A candidate is
// admissible when its owner is in the query's environment and differs from the query's owner, or equals it with self-contact on and no
// triangle vertex adjacent to the query's vertex. For p and a triangle with outward normal n_T
// and closest point q = sum w_a x_a: over the face (p projects into the triangle, min w_a > 1e-9,
// or onto its boundary from on or above its plane, to 1e-9 of its size) gap = n_T . (p - q) - r, down to
// -depth_limit - r; beyond an edge or corner gap = |p - q| - r, only from outside within 60 deg of
// n_T; a contact when gap <= |v_p - v_q| t + margin. Per owner the nearest triangle (least
// |p - q|: a point inside a solid belongs to its nearest face, not the deepest); ties break by
// the lower triangle index.
struct PointQueryOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  DetectView s;
  const Scalar* box_lo;  // the triangles' grown boxes (TriangleBoxOp): a point outside cannot touch
  const Scalar* box_hi;
  const std::uint64_t* keys;
  const Index* items;
  Index num_pairs;
  DetectGrid grid;
  Scalar dt, margin;
  Index* slot_tri;
  Scalar* slot_gap;
  Scalar* slot_w;   // 3 per slot
  Scalar* slot_n;   // 3 per slot
  Index* count;     // per query: used slots
  CONDSIM_HD_INLINE bool Adjacent(Index i, Index j) const {
    Index lo = s.adj_ptr[i], hi = s.adj_ptr[i + 1];
    while (lo < hi) {
      const Index mid = lo + (hi - lo) / 2;
      if (s.adj[mid] < j) lo = mid + 1; else hi = mid;
    }
    return lo < s.adj_ptr[i + 1] && s.adj[lo] == j;
  }
  // the narrow phase of query point p (radius r) against triangle t of owner `to`: false when
  // not a contact candidate by the rule above; else the closest point's weights w, the normal n,
  // the gap and |p - q|
  CONDSIM_HD_INLINE bool Narrow(const Vec3& p, Scalar r, Index t, Index to, Vec3* w, Vec3* n, Scalar* gap, Scalar* dist) const {
    const Index* tv = s.tri + 3 * std::int64_t(t);
    const Vec3 a = LoadVec3(s.x, tv[0]), b = LoadVec3(s.x, tv[1]), cc = LoadVec3(s.x, tv[2]);
    Vec3 nrm = Cross(b - a, cc - a);
    const Scalar area2 = Norm(nrm);
    if (!(area2 > 0)) return false;
    nrm = (Scalar(1) / area2) * nrm;
    *w = ClosestOnTriangle(p, a, b, cc);
    const Vec3 d = p - ((*w)[0] * a + (*w)[1] * b + (*w)[2] * cc);
    const Scalar sd = Dot(nrm, d);
    *dist = Norm(d);
    // over the face: p projects into the triangle, or onto its boundary (to 1e-9 of its size)
    // from on or above its plane (a point on a shared edge belongs to the faces, not to neither;
    // one behind a face whose edge it lies over belongs to the other face)
    const Scalar tol = Scalar(1e-9) * std::sqrt(area2), wmin = (*w)[0] < (*w)[1] ? ((*w)[0] < (*w)[2] ? (*w)[0] : (*w)[2]) : ((*w)[1] < (*w)[2] ? (*w)[1] : (*w)[2]);
    if (Norm(d - sd * nrm) <= tol && (wmin > Scalar(1e-9) || sd >= -tol)) {
      if (sd < -s.depth_limit[to]) return false;
      *gap = sd - r;
      *n = nrm;
    } else {
      if (!(*dist > 0) || sd < Scalar(0.5) * *dist) return false;
      *gap = *dist - r;
      *n = (Scalar(1) / *dist) * d;
    }
    return true;
  }
  CONDSIM_HD void operator()(Index q) const {
    const Index vi = s.query[q];
    const Vec3 p = LoadVec3(s.x, vi), vp = LoadVec3(s.v, vi);
    const Scalar r = s.radius[q];
    const Index own = s.vertex_owner[vi];
    DetectSlot slot[kDetectSlots];
    for (int k = 0; k < kDetectSlots; ++k) slot[k].tri = -1;
    // the candidates: pairs with the query's cell key (its environment's triangles only)
    const std::uint64_t key =
        DetectKey(DetectCell(p[0], grid), DetectCell(p[1], grid), DetectCell(p[2], grid), s.owner_env[own], grid);
    Index lo = 0, hi = num_pairs;
    while (lo < hi) {
      const Index mid = lo + (hi - lo) / 2;
      if (keys[mid] < key) lo = mid + 1; else hi = mid;
    }
    for (Index c = lo; c < num_pairs && keys[c] == key; ++c) {
      const Index t = items[c];
      const std::int64_t b3 = 3 * std::int64_t(t);
      if (p[0] < box_lo[b3] || p[0] > box_hi[b3] || p[1] < box_lo[b3 + 1] || p[1] > box_hi[b3 + 1] || p[2] < box_lo[b3 + 2] ||
          p[2] > box_hi[b3 + 2])
        continue;
      const Index* tv = s.tri + b3;
      const Index to = s.tri_owner[t];
      if (to == own && (!s.self_contact[own] || tv[0] == vi || tv[1] == vi || tv[2] == vi || Adjacent(vi, tv[0]) ||
                        Adjacent(vi, tv[1]) || Adjacent(vi, tv[2])))
        continue;
      Vec3 w, n;
      Scalar gap, dist;
      if (!Narrow(p, r, t, to, &w, &n, &gap, &dist)) continue;
      const Vec3 vq = w[0] * LoadVec3(s.v, tv[0]) + w[1] * LoadVec3(s.v, tv[1]) + w[2] * LoadVec3(s.v, tv[2]);
      if (gap > Norm(vp - vq) * dt + margin) continue;
      // the owner's slot: keep the nearer (then lower-index) triangle; a new owner takes a free
      // slot or displaces the farthest one
      int k = 0;
      while (k < kDetectSlots && slot[k].tri >= 0 && slot[k].owner != to) ++k;
      if (k == kDetectSlots) {
        k = 0;
        for (int m = 1; m < kDetectSlots; ++m)
          if (slot[m].dist > slot[k].dist || (slot[m].dist == slot[k].dist && slot[m].owner > slot[k].owner)) k = m;
        if (!(dist < slot[k].dist)) continue;
      } else if (slot[k].tri >= 0 && !(dist < slot[k].dist || (dist == slot[k].dist && t < slot[k].tri))) {
        continue;
      }
      slot[k].tri = t;
      slot[k].owner = to;
      slot[k].dist = dist;
      slot[k].gap = gap;
    }
    // canonical order within the query: used slots by owner
    for (int i = 1; i < kDetectSlots; ++i)
      for (int j = i; j > 0; --j) {
        const bool swap = slot[j].tri >= 0 && (slot[j - 1].tri < 0 || slot[j].owner < slot[j - 1].owner);
        if (!swap) break;
        const DetectSlot tmp = slot[j];
        slot[j] = slot[j - 1];
        slot[j - 1] = tmp;
      }
    Index used = 0;
    for (int k = 0; k < kDetectSlots; ++k) {
      const std::int64_t o = std::int64_t(q) * kDetectSlots + k;
      slot_tri[o] = slot[k].tri;
      slot_gap[o] = slot[k].gap;
      // the kept triangle's weights and normal, made again (the same arithmetic as in the loop)
      Vec3 w, n;
      if (slot[k].tri >= 0) {
        Scalar gap, dist;
        Narrow(p, r, slot[k].tri, slot[k].owner, &w, &n, &gap, &dist);
      }
      StoreVec3(slot_w, o, w);
      StoreVec3(slot_n, o, n);
      used += slot[k].tri >= 0 ? 1 : 0;
    }
    count[q] = used;
  }
};

// per query: its used slots to the compact list from offset[q] (query order, then owner order)
struct SlotCompactOp {
  const Index* tri;  // the scene's triangles (3 vertices each) and the vertices' positions
  const Scalar* x;
  const Index* slot_tri;
  const Scalar* slot_gap;
  const Scalar* slot_w;
  const Scalar* slot_n;
  const Index* offset;
  Index* out_query;
  Index* out_tri;
  Scalar* out_gap;
  Scalar* out_w;
  Scalar* out_n;
  Scalar* out_tx;  // 9 per contact: the triangle's vertex positions (the host's contact point)
  CONDSIM_HD_INLINE void operator()(Index q) const {
    Index k = offset[q];
    for (int m = 0; m < kDetectSlots; ++m) {
      const std::int64_t o = std::int64_t(q) * kDetectSlots + m;
      if (slot_tri[o] < 0) continue;
      out_query[k] = q;
      out_tri[k] = slot_tri[o];
      out_gap[k] = slot_gap[o];
      StoreVec3(out_w, k, LoadVec3(slot_w, o));
      StoreVec3(out_n, k, LoadVec3(slot_n, o));
      for (int a = 0; a < 3; ++a) StoreVec3(out_tx, 3 * std::int64_t(k) + a, LoadVec3(x, tri[3 * std::int64_t(slot_tri[o]) + a]));
      ++k;
    }
  }
};

// dst vertices [offset, offset + n) from a body's positions x[idx_x[k]] and velocities
// v[idx_v[k]] (3 each; a cable's centre k has its velocity at node 2k)
struct GatherVerticesOp {
  const Index* idx_x;
  const Index* idx_v;
  const Scalar* x;
  const Scalar* v;
  Index offset;
  Scalar* dst_x;
  Scalar* dst_v;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    StoreVec3(dst_x, offset + k, LoadVec3(x, idx_x[k]));
    StoreVec3(dst_v, offset + k, LoadVec3(v, idx_v[k]));
  }
};

// an analytic shape a deformable point may touch: a static shape (at rest) or a rigid body's
// shape at its pose, moving with the body (velocity v + omega x (q - x) at a point q)
struct NodeShape {
  StaticShape shape;
  Vec3 x, v, omega;  // the rigid body's centre [m], velocity [m/s], angular velocity [rad/s]
  int moving;        // 1: a rigid body's shape (v, omega used); 0: a static shape
};

// per query point q < num (the FEM surface nodes and cable centres, whose query point is vertex
// q): flag[q] = 1 when some analytic shape of its environment (shapes[list[env_ptr[e]] ..
// list[env_ptr[e + 1] - 1]]) is within reach, gap = distance - r <= |v_p - v_q| t + margin
// (contact_rule.h InReach, the same arithmetic as the host's DetectStage::NodeContacts, which
// makes the contacts of the flagged points), and reach[q] bit k = 1 when the environment's
// k-th shape is (k < kReachBits; the host takes these decisions and needs no velocity);
// pen[q]: the deepest penetration of its S-contacts with static shapes in reach, -phi t with
// phi = gap / t (the step's statistic, World::Step), or -DBL_MAX when there is none
struct NodeShapeFlagOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  static constexpr Index kReachBits = 64;
  DetectView s;
  const NodeShape* shapes;
  const Index* env_ptr;
  const Index* list;
  Scalar dt, margin;
  Index* flag;
  std::uint64_t* reach;
  Scalar* pen;
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Vec3 p = LoadVec3(s.x, q), vp = LoadVec3(s.v, q);
    const Scalar r = s.radius[q];
    const Index env = s.owner_env[s.vertex_owner[q]];
    Index hit = 0;
    std::uint64_t bits = 0;
    Scalar deepest = -DBL_MAX;
    for (Index j = env_ptr[env]; j < env_ptr[env + 1]; ++j) {
      const NodeShape& sh = shapes[list[j]];
      const Proximity prox = AnalyticProximity(sh.shape, p);
      const Scalar gap = prox.distance - r;
      const Vec3 vrel = sh.moving ? vp - (sh.v + Cross(sh.omega, prox.point - sh.x)) : vp;
      if (gap > Norm(vrel) * dt + margin) continue;
      hit = 1;
      const Index k = j - env_ptr[env];
      if (k < kReachBits) bits |= std::uint64_t(1) << k;
      const Scalar depth = -(gap / dt) * dt;
      if (!sh.moving && depth > deepest) deepest = depth;
    }
    flag[q] = hit;
    reach[q] = bits;
    pen[q] = deepest;
  }
};

// per flagged query point: its index, position, velocity, shapes in reach (and their low
// reach_bytes bytes, the host's copy: an environment of up to 8 reach_bytes shapes), deepest
// penetration (and that or 0, whichever is larger, for the maximum over the points) to the compact
// list from offset[q]
struct NodeShapeCompactOp {
  const Scalar* x;
  const Scalar* v;
  const Index* flag;
  const Index* offset;
  const std::uint64_t* reach;
  Index* out_query;
  Scalar* out_x;
  Scalar* out_v;
  std::uint64_t* out_reach;
  const Scalar* pen;
  Scalar* out_pen;
  Index reach_bytes;
  unsigned char* out_reach_bytes;
  Scalar* out_pen_clamped;
  CONDSIM_HD_INLINE void operator()(Index q) const {
    if (flag[q] == 0) return;
    const Index k = offset[q];
    out_query[k] = q;
    StoreVec3(out_x, k, LoadVec3(x, q));
    StoreVec3(out_v, k, LoadVec3(v, q));
    out_reach[k] = reach[q];
    for (Index b = 0; b < reach_bytes; ++b) out_reach_bytes[reach_bytes * k + b] = static_cast<unsigned char>(reach[q] >> (8 * b));
    out_pen[k] = pen[q];
    out_pen_clamped[k] = pen[q] > 0 ? pen[q] : Scalar(0);
  }
};

// a step's contact record on the backend is made in two passes: the rows (per contact its nodes,
// environment and source), then the fields (ContactPlanFillOp). A row's source = c >= 0: an
// S-contact of flagged point c (ShapeCandidates' list) against analytic shape `slot`, remade on
// the backend; source = -1: the host's 12 numbers (frame row-major, phi, mu1, mu2) at
// data[12 slot] of the plan
#define CONDSIM_CONTACT_ROW_FIELDS(X) \
  X(Index, node_i)                    \
  X(Index, node_j)                    \
  X(Index, env)                       \
  X(Index, source)                    \
  X(Index, slot)

CONDSIM_RECORD_VIEW(ContactRowView, CONDSIM_CONTACT_ROW_FIELDS)
CONDSIM_RECORD_OUT_VIEW(ContactRowOutView, CONDSIM_CONTACT_ROW_FIELDS)

// the host's plan of the rows (DetectStage): explicit rows, each with its contact's index, and
// runs of rows the backend makes from the flagged points alone (ContactRunOp); data as above
#define CONDSIM_CONTACT_PLAN_FIELDS(X) \
  X(Index, index)                      \
  CONDSIM_CONTACT_ROW_FIELDS(X)        \
  X(Scalar, data)

CONDSIM_RECORD_VIEW(ContactPlanView, CONDSIM_CONTACT_PLAN_FIELDS)

// the contacts [first, first + count) are the S-contacts of flagged points [point, point_end)
// against the static shapes in reach, point by point, each point's in the order of its
// environment's shapes (DetectStage::NodeContacts); count: the points' static reach bits
struct ContactRun {
  Index first, count, point, point_end;
};

struct ContactPlan {
  CONDSIM_CONTACT_PLAN_FIELDS(CONDSIM_RECORD_HOST_MEMBER)
  std::vector<ContactRun> runs;
  Index contacts = 0;  // rows in all
};

// bit k of a flagged point's reach bits names its environment's k-th shape: shapes[list[env_ptr[e] + k]]
struct ReachShapes {
  const NodeShape* shapes;
  const Index* env_ptr;
  const Index* list;
  const Index* vertex_owner;
  const Index* owner_env;
  // whether bit k of a point of environment e is a static shape (one the backend remakes against)
  CONDSIM_HD_INLINE bool Static(Index e, Index k) const {
    return env_ptr[e] + k < env_ptr[e + 1] && shapes[list[env_ptr[e] + k]].moving == 0;
  }
};

// per flagged point c: how many S-contacts with static shapes its reach bits make
struct StaticReachCountOp {
  ReachShapes rs;
  const Index* query;
  const std::uint64_t* reach;
  Index* count;
  CONDSIM_HD_INLINE void operator()(Index c) const {
    const Index e = rs.owner_env[rs.vertex_owner[query[c]]];
    Index n = 0;
    for (Index k = 0; k < 64; ++k)
      if (((reach[c] >> k) & 1) != 0 && rs.Static(e, k)) ++n;
    count[c] = n;
  }
};

// the rows of a run (ContactRun): flagged point c = point + k writes its S-contacts from row
// first + offset[c] - offset[point], node_i = its query point's node (query_node), node_j = -1, its
// environment, source c, slot = the shape
struct ContactRunOp {
  ReachShapes rs;
  const Index* query;
  const std::uint64_t* reach;
  const Index* offset;      // per flagged point: the exclusive scan of StaticReachCountOp
  const Index* query_node;  // per query point its node in the solver's numbering
  ContactRun run;
  ContactRowOutView rows;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index c = run.point + k, q = query[c], e = rs.owner_env[rs.vertex_owner[q]];
    Index m = run.first + offset[c] - offset[run.point];
    for (Index b = 0; b < 64; ++b) {
      if (((reach[c] >> b) & 1) == 0 || !rs.Static(e, b)) continue;
      rows.node_i[m] = query_node[q];
      rows.node_j[m] = -1;
      rows.env[m] = e;
      rows.source[m] = c;
      rows.slot[m] = rs.list[rs.env_ptr[e] + b];
      ++m;
    }
  }
};

// the plan's explicit rows to their contacts
struct ContactRowScatterOp {
  ContactPlanView plan;
  ContactRowOutView rows;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index m = plan.index[k];
    rows.node_i[m] = plan.node_i[k];
    rows.node_j[m] = plan.node_j[k];
    rows.env[m] = plan.env[k];
    rows.source[m] = plan.source[k];
    rows.slot[m] = plan.slot[k];
  }
};

// per contact m its record (ContactView) from its row; an S-contact of a flagged point p (query
// radius r) against a shape with the host's arithmetic (DetectStage::NodeContacts and
// ContactWriter::Add): gap = distance - r, the shape's frame with its tangents rotated by the
// angle whose cosine and sine are (c, s) when angle != 0, phi = gap / t (eq. 13), the shape's mu
struct ContactPlanFillOp {
  ContactRowView row;
  const Scalar* data;    // the plan's
  const NodeShape* shapes;
  const Index* query;    // per flagged point its query point
  const Scalar* x;       // per flagged point its position, 3 each
  const Scalar* radius;  // per query point [m]
  Scalar dt, angle, cos_a, sin_a;
  ContactOutView out;
  CONDSIM_HD_INLINE void operator()(Index m) const {
    out.node_i[m] = row.node_i[m];
    out.node_j[m] = row.node_j[m];
    out.env[m] = row.env[m];
    const Index c = row.source[m], k = row.slot[m];
    Scalar* f = out.frame + 9 * m;
    if (c < 0) {
      const Scalar* d = data + 12 * k;
      for (int e = 0; e < 9; ++e) f[e] = d[e];
      out.phi[m] = d[9];
      out.mu1[m] = d[10];
      out.mu2[m] = d[11];
      return;
    }
    const StaticShape& sh = shapes[k].shape;
    const Proximity prox = AnalyticProximity(sh, LoadVec3(x, c));
    const Scalar gap = prox.distance - radius[query[c]];
    Mat3 r = UncheckedShapeFrame(sh, prox.normal);
    if (angle != 0) r = RotateTangents(r, cos_a, sin_a);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) f[3 * a + b] = r(a, b);
    out.phi[m] = gap / dt;
    out.mu1[m] = sh.mu1;
    out.mu2[m] = sh.mu2;
  }
};

// |v| per vertex (the detection reach needs the largest speed)
struct SpeedOp {
  const Scalar* v;
  Scalar* speed;
  CONDSIM_HD_INLINE void operator()(Index i) const { speed[i] = Norm(LoadVec3(v, i)); }
};

}  // namespace condsim
