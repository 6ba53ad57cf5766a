// Device functors of the world's stages (models/world/): v-hat's per-node checks after the solve
// and the gathers/scatters of the inelastic stage's few nodes.
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

// per base node i of v-hat (3 per node): terms[i] = |v_i| on a node with mass (else 0), terms[n +
// i] = 0 when v_i is finite and NaN otherwise (x - x), ke[i] = (m_i v_i) . v_i / 2 (as
// PointMomentum); reduced per body by SegmentedMaxAbs and SegmentedDot
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

}  // namespace condsim
