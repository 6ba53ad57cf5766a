// Device functors of the world's stages (models/world/): v-hat's per-node checks after the solve,
// the bodies' momentum terms and the gathers/scatters of the inelastic stage's few nodes.
#pragma once

#include "condsim/core.h"
#include "condsim/contacts.h"
#include "condsim/math.h"
#include "models/integrate/midpoint.h"

namespace condsim {

// per base node i of v-hat (3 per node): terms[i] = |v_i| on a node with mass (else 0), terms[n +
// i] = 0 when v_i is finite and NaN otherwise (x - x), ke[i] = (m_i v_i) . v_i / 2 (as
// BodyMomentumTermsOp); reduced per body by SegmentedMaxAbs and SegmentedDot
struct VhatTermsOp {
  const Scalar* v;
  const Scalar* mass;
  Index n;
  Scalar* terms;
  Scalar* ke;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    const Vec3 vi = LoadVec3(v, i);
    const Vec3 p = mass[i] * vi;
    terms[i] = mass[i] > 0 ? Norm(vi) : Scalar(0);
    terms[n + i] = (vi[0] - vi[0]) + (vi[1] - vi[1]) + (vi[2] - vi[2]);
    ke[i] = Scalar(0.5) * Dot(p, vi);
  }
};

// per point i of a deformable body (an FEM node: v stride 3; a cable segment: (v, w), stride 6,
// with its orientation q): the terms of the body's kinetic energy, linear and angular momentum
// about the world origin, terms[k n + i] for k = 0 (m v.v / 2), 1-3 (m v), 4-6 (x × m v); a
// cable segment adds its spin (w_b = R^T w, L_b = diag(I) w_b: w_b.L_b / 2 and R L_b, i.e.
// w^T I_w w / 2 and I_w w with I_w = R diag(I) R^T). Summed per body and term by one SegmentedDot
struct BodyMomentumTermsOp {
  const Scalar* x;     // 3 per point
  const Scalar* v;     // stride per point
  const Scalar* mass;  // per point [kg]
  const Scalar* q;     // 4 per segment (cables), else nullptr
  Vec3 inertia;        // a cable segment's principal inertia [kg m^2]
  Index stride;
  Index n;
  Scalar* terms;  // 7 n
  CONDSIM_HD_INLINE void operator()(Index i) const {
    const std::int64_t k = std::int64_t(stride) * i;
    const Vec3 vi(v[k], v[k + 1], v[k + 2]);
    const Vec3 p = mass[i] * vi;
    Scalar ke = Scalar(0.5) * Dot(p, vi);
    Vec3 l = Cross(LoadVec3(x, i), p);
    if (q != nullptr) {
      const Mat3 rot = ToMatrix(Quat(q[4 * std::int64_t(i)], q[4 * std::int64_t(i) + 1], q[4 * std::int64_t(i) + 2], q[4 * std::int64_t(i) + 3]));
      const Vec3 wb = Transpose(rot) * Vec3(v[k + 3], v[k + 4], v[k + 5]);
      const Vec3 lb(inertia[0] * wb[0], inertia[1] * wb[1], inertia[2] * wb[2]);
      ke += Scalar(0.5) * Dot(wb, lb);
      l += rot * lb;
    }
    terms[i] = ke;
    for (int d = 0; d < 3; ++d) {
      terms[(1 + d) * std::int64_t(n) + i] = p[d];
      terms[(4 + d) * std::int64_t(n) + i] = l[d];
    }
  }
};

// the inelastic correction (midpoint.h ApplyInelasticContacts, its arithmetic) of pressed
// S-contacts on base nodes no other pressed contact touches, one part's: per item k, contact m =
// item[k] on node i (global; i - first in the part's velocity v), every corrected axis d (the
// normal; the tangents too when it sticks): v_i += (y / m_i) d, y = d.(v-hat_i - v_i) / (1 / m_i)
struct InelasticNodeOp {
  ContactView c;          // the solve's contact record
  const Scalar* lambda;   // its impulses, 3 per contact
  const Scalar* mass;     // per base node [kg]
  const Scalar* vhat;     // v-hat, 3 per base node (the global layout)
  const Index* item;
  Index first;
  Scalar* v;              // the part's velocity after the update, 3 per node
  CONDSIM_HD_INLINE void operator()(Index k) const {
    const Index m = item[k], node = c.node_i[m], local = node - first;
    const int axes = ImpulseSticks(lambda + 3 * m, c.mu1[m], c.mu2[m]) ? 3 : 1;
    const Vec3 vh = LoadVec3(vhat, node);
    const Scalar cn = 1, mn = mass[node];
    for (int a = 0; a < axes; ++a) {
      const Vec3 d(c.frame[9 * m + 3 * a], c.frame[9 * m + 3 * a + 1], c.frame[9 * m + 3 * a + 2]);
      Scalar delta = 0, den = 0;
      delta += cn * Dot(d, vh - LoadVec3(v, local));
      den += cn * cn / mn;
      if (!(den > 0)) continue;
      const Scalar y = delta / den;
      AddVec3(v, local, (cn * y / mn) * d);
    }
  }
};

// per contact m: pressed[m] = 1 when its normal impulse is positive (lambda 3 per contact)
struct PressedFlagOp {
  const Scalar* lambda;
  unsigned char* pressed;
  CONDSIM_HD_INLINE void operator()(Index m) const { pressed[m] = lambda[3 * m] > 0 ? 1 : 0; }
};

// dst node k = src node idx[k] (3 per node)
struct GatherVec3Op {
  const Scalar* src;
  const Index* idx;
  Scalar* dst;
  CONDSIM_HD_INLINE void operator()(Index k) const { StoreVec3(dst, k, LoadVec3(src, idx[k])); }
};

// dst node idx[k] = src node k (3 per node; idx without repeats)
struct ScatterVec3Op {
  const Scalar* src;
  const Index* idx;
  Scalar* dst;
  CONDSIM_HD_INLINE void operator()(Index k) const { StoreVec3(dst, idx[k], LoadVec3(src, k)); }
};

// The inelastic stage's lone contacts chosen on the backend (InelasticStage; the host's rule on
// the same pressed flags, so no index goes up): the pressed contacts' sides with the base nodes
// they move with (a node: itself; a virtual node: its hosts, eq. 14), those with mass or rigid
struct InelasticSides {
  ContactView c;
  const unsigned char* pressed;
  const Scalar* mass;  // per base node [kg]
  const Index* vn_ptr;
  const Index* vn_host;
  Index base;
  Index rigid_first, rigid_end;  // the rigid nodes
  CONDSIM_HD_INLINE bool Rigid(Index node) const { return node >= rigid_first && node < rigid_end; }
  CONDSIM_HD_INLINE bool Carries(Index node) const { return mass[node] > 0 || Rigid(node); }
  // emit(host) for each host of contact m's sides, in the host's order (Correction::ForEachHost)
  template <class Emit>
  CONDSIM_HD_INLINE void Hosts(Index m, Emit& emit) const {
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? c.node_i[m] : c.node_j[m];
      if (node < 0) continue;
      if (node < base) {
        if (Carries(node)) emit(node);
        continue;
      }
      for (Index q = vn_ptr[node - base]; q < vn_ptr[node - base + 1]; ++q)
        if (Carries(vn_host[q])) emit(vn_host[q]);
    }
  }
};

// per contact m: how many hosts its sides have when it is pressed (else 0); item `contacts`
// writes 0, so that the scan ends with the total
struct InelasticHostCountOp {
  InelasticSides s;
  Index contacts;
  Index* count;
  struct Counter {
    Index n = 0;
    CONDSIM_HD_INLINE void operator()(Index /*host*/) { ++n; }
  };
  CONDSIM_HD_INLINE void operator()(Index m) const {
    Counter k;
    if (m < contacts && s.pressed[m]) s.Hosts(m, k);
    count[m] = k.n;
  }
};

// per pressed contact m: its hosts as sort keys from offset[m] (the counts scanned)
struct InelasticHostKeyOp {
  InelasticSides s;
  const Index* offset;
  std::uint64_t* key;
  Index* order;
  struct Writer {
    std::uint64_t* key;
    Index* order;
    Index at;
    CONDSIM_HD_INLINE void operator()(Index host) {
      key[at] = std::uint64_t(host);
      order[at] = at;
      ++at;
    }
  };
  CONDSIM_HD_INLINE void operator()(Index m) const {
    if (!s.pressed[m]) return;
    Writer w{key, order, offset[m]};
    s.Hosts(m, w);
  }
};

// per contact m: its node as the sort key when it is a lone contact (a pressed S-contact on a
// deformable node with mass that no other pressed contact's side moves: its node once among the
// sorted hosts), else the largest key; sorted, the lone contacts come first in node order
struct InelasticLoneKeyOp {
  InelasticSides s;
  const std::uint64_t* host_key;  // sorted
  Index hosts;
  std::uint64_t* key;
  Index* order;
  CONDSIM_HD_INLINE void operator()(Index m) const {
    const Index i = s.c.node_i[m];
    bool lone = s.pressed[m] && s.c.node_j[m] < 0 && i >= 0 && i < s.base && !s.Rigid(i) && s.mass[i] > 0;
    if (lone) {
      const Index lo = LowerBound(host_key, Index(0), hosts, std::uint64_t(i));
      lone = LowerBound(host_key, lo, hosts, std::uint64_t(i) + 1) - lo == 1;
    }
    key[m] = lone ? std::uint64_t(i) : ~std::uint64_t(0);
    order[m] = m;
  }
};

}  // namespace condsim
