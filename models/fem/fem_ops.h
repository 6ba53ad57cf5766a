// Per-element, per-node and per-block functors of the co-rotational linear FEM (paper Sec. II-A,
// eq. 7-9): element rotation by polar decomposition, elastic force, and assembly of A and b by
// gathers in a fixed order (no atomics).
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

// gradient of shape function a (0..3) of an element from its Bm
CONDSIM_HD_INLINE Vec3 ShapeGradient(const Mat3& bm, int a) {
  if (a > 0) return bm.Row(a - 1);
  return -(bm.Row(0) + bm.Row(1) + bm.Row(2));
}

// the part of the corotated element Hessian that the rotated linear stiffness R K0 R^T omits
// (the rotation derivative, "geometric stiffness"): for F = U S V^T (Svd3), dR = U W V^T with
// W_ij = (M_ij - M_ji) / (s_i + s_j), M = U^T dF V, and
//   dP - dP_lin = mu (dF - R dF^T R) - 2 mu dR + lambda (tr(R^T F) - 3) dR.
// Returns G (12 x 12, row-major, node-major rows a*3+c) = V (dP - dP_lin) contracted with the
// shape gradients.
struct Mat12 {
  Scalar m[144];
};

// what every column of GeometricStiffness shares: the SVD of F, R = U V^T, tr(R^T F) - 3 and
// the shape gradients
struct GeometricStiffnessBasis {
  Svd3 svd;
  Mat3 r;
  Scalar tr;
  Vec3 g[4];
};
CONDSIM_HD_INLINE GeometricStiffnessBasis MakeGeometricStiffnessBasis(const Mat3& f, const Mat3& bm) {
  GeometricStiffnessBasis k;
  k.svd = ComputeSvd(f);
  k.r = k.svd.u * Transpose(k.svd.v);
  k.tr = Trace(Transpose(k.r) * f) - 3;
  for (int a = 0; a < 4; ++a) k.g[a] = ShapeGradient(bm, a);
  return k;
}

// column 3 b + d of G: dF for a unit displacement of node b along axis d is e_d g_b^T
CONDSIM_HD_INLINE void GeometricStiffnessColumn(const GeometricStiffnessBasis& k, int b, int d, Scalar volume, Scalar mu,
                                                Scalar lambda, Scalar* column) {
  const Svd3& svd = k.svd;
  Mat3 df;
  for (int j = 0; j < 3; ++j) df(d, j) = k.g[b][j];
  const Mat3 m = Transpose(svd.u) * df * svd.v;
  Mat3 w;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      if (i == j) continue;
      Scalar den = svd.sigma[i] + svd.sigma[j];
      // degenerate (sigma_i + sigma_j -> 0): the rotation is undetermined; drop the term
      const Scalar floor = Scalar(1e-12) * (std::fabs(svd.sigma[0]) + kTinyScalar);
      if (std::fabs(den) < floor) continue;
      w(i, j) = (m(i, j) - m(j, i)) / den;
    }
  const Mat3 dr = svd.u * w * Transpose(svd.v);
  const Mat3 dp = mu * (df - k.r * Transpose(df) * k.r) + (lambda * k.tr - 2 * mu) * dr;
  for (int a = 0; a < 4; ++a) {
    const Vec3 row = volume * (dp * k.g[a]);
    for (int c = 0; c < 3; ++c) column[3 * a + c] = row[c];
  }
}

// the whole 12 x 12 G (host tests; the kernels use it column by column, FemGeoDiagOp)
CONDSIM_HD_INLINE Mat12 GeometricStiffness(const Mat3& f, const Mat3& bm, Scalar volume, Scalar mu, Scalar lambda) {
  const GeometricStiffnessBasis k = MakeGeometricStiffnessBasis(f, bm);
  Mat12 out;
  for (int col = 0; col < 12; ++col) {
    Scalar column[12];
    GeometricStiffnessColumn(k, col / 3, col % 3, volume, mu, lambda, column);
    for (int i = 0; i < 12; ++i) out.m[12 * i + col] = column[i];
  }
  return out;
}

// one tetrahedron: F = Ds Bm, F = R S (polar), strain S - I, first Piola stress of the
// corotated linear material P = R (2 mu (S - I) + lambda tr(S - I) I) (= dPsi/dF of
// Psi = mu |S - I|^2 + lambda/2 tr(S - I)^2, the energy whose rotated-linear stiffness is eq. 8's
// Je^T K Je), nodal forces f_a = -V P g_a with g_a = row a-1 of Bm (a = 1..3), f_0 = -sum
struct FemElementOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* tets;
  const Scalar* x;
  const Scalar* bm;      // 9 per element: inverse of the rest edge matrix
  const Scalar* volume;  // rest volume [m^3]
  const Scalar* mu;      // Lame parameters [Pa] per element
  const Scalar* lambda;
  Scalar* rotation;      // 9 per element
  Scalar* force;         // 12 per element [N]
  Scalar* energy;        // 1 per element [J] (may be null)
  CONDSIM_HD_INLINE void operator()(Index e) const {
    const Index* t = tets + 4 * std::int64_t(e);
    const Vec3 x0 = LoadVec3(x, t[0]);
    const Mat3 ds = Mat3::FromColumns(LoadVec3(x, t[1]) - x0, LoadVec3(x, t[2]) - x0, LoadVec3(x, t[3]) - x0);
    const Mat3 b = LoadMat3(bm, e);
    const Polar3 polar = ComputePolar(ds * b);
    const Mat3 strain = polar.s - Mat3::Identity();
    const Scalar tr = Trace(strain);
    const Mat3 stress = 2 * mu[e] * strain + lambda[e] * tr * Mat3::Identity();
    const Mat3 p = polar.r * stress;
    // H = -V P Bm^T: column a-1 is the force on node a
    const Mat3 h = (-volume[e]) * (p * Transpose(b));
    Scalar* f = force + 12 * std::int64_t(e);
    const Vec3 f1 = h.Col(0), f2 = h.Col(1), f3 = h.Col(2);
    const Vec3 f0 = -(f1 + f2 + f3);
    const Vec3 fs[4] = {f0, f1, f2, f3};
    for (int a = 0; a < 4; ++a)
      for (int c = 0; c < 3; ++c) f[3 * a + c] = fs[a][c];
    StoreMat3(rotation, e, polar.r);
    if (energy != nullptr) {
      Scalar ss = 0;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) ss += strain(i, j) * strain(i, j);
      energy[e] = volume[e] * (mu[e] * ss + lambda[e] / 2 * tr * tr);
    }
  }
};

// the paper's SPD diagonal projection of the geometric stiffness (Sec. II-A) per element: the
// absolute row sums of GeometricStiffness, accumulated column by column (the same sums in the same
// order as over the whole 12 x 12 matrix). Its own launch, apart from FemElementOp, so that
// neither kernel holds both the polar decomposition's and this one's state (registers/stack,
// docs/performance.md "Kernel resources").
struct FemGeoDiagOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* tets;
  const Scalar* x;
  const Scalar* bm;      // 9 per element
  const Scalar* volume;  // rest volume [m^3]
  const Scalar* mu;      // Lame parameters [Pa] per element
  const Scalar* lambda;
  Scalar* geo_diag;      // 12 per element
  CONDSIM_HD_INLINE void operator()(Index e) const {
    const Index* t = tets + 4 * std::int64_t(e);
    const Vec3 x0 = LoadVec3(x, t[0]);
    const Mat3 ds = Mat3::FromColumns(LoadVec3(x, t[1]) - x0, LoadVec3(x, t[2]) - x0, LoadVec3(x, t[3]) - x0);
    const Mat3 b = LoadMat3(bm, e);
    const GeometricStiffnessBasis k = MakeGeometricStiffnessBasis(ds * b, b);
    Scalar sum[12];
    for (int i = 0; i < 12; ++i) sum[i] = 0;
    CONDSIM_UNROLL
    for (int col = 0; col < 12; ++col) {
      Scalar column[12];
      GeometricStiffnessColumn(k, col / 3, col % 3, volume[e], mu[e], lambda[e], column);
      for (int i = 0; i < 12; ++i) sum[i] += std::fabs(column[i]);
    }
    for (int i = 0; i < 12; ++i) geo_diag[12 * std::int64_t(e) + i] = sum[i];
  }
};

// b of eq. 9 per node: b = (2 m / t) v_k + sum of element forces + m g + f_ext; the element
// contributions of node i are refs[ptr[i] .. ptr[i+1]) = element * 4 + local node
struct FemNodeRhsOp {
  static constexpr Index kGrain = 8192;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;
  const Index* refs;
  const Scalar* force;
  const Scalar* mass;
  const Scalar* v;
  const Scalar* f_ext;  // may be null
  Vec3 gravity;
  Scalar two_over_dt;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    Vec3 f(0, 0, 0);
    for (Index k = ptr[i]; k < ptr[i + 1]; ++k) f += LoadVec3(force, refs[k]);
    const Vec3 vi = LoadVec3(v, i);
    Vec3 out = (two_over_dt * mass[i]) * vi + f + mass[i] * gravity;
    if (f_ext != nullptr) out += LoadVec3(f_ext, i);
    StoreVec3(b, i, out);
  }
};

// block (a, k) of the projector onto the complement of an element's six rigid motions,
// P = I - Z (Z^T Z)^-1 Z^T with Z = [translations, rotations about the centroid]: the two sets
// are orthogonal, so P_ak = delta_ak I - I/4 - [r_a]x J^-1 [r_k]x^T, J = sum_k [r_k]x^T [r_k]x
// (r_k = x_k - centroid); jinv = 0 for a degenerate (collinear) element keeps translations only
CONDSIM_HD_INLINE Mat3 RigidComplementBlock(const Vec3* r, const Mat3& jinv, int a, int k) {
  Mat3 p = Skew(r[a]) * jinv * Transpose(Skew(r[k]));
  p = Scalar(-1) * p - Scalar(0.25) * Mat3::Identity();
  if (a == k) p = p + Mat3::Identity();
  return p;
}

// block (a, c) of an element's rigid-invariant geometric damping P D P (eq. 9's E): D the
// diagonal of absolute row sums of the geometric stiffness (12 per element), projected onto the
// complement of the element's rigid motions at positions x, so that E resists deformation rates
// only and never a translation or rotation of the body (PSD, as D is)
CONDSIM_HD_INLINE Mat3 ProjectedGeometricBlock(const Index* tet, const Scalar* x, const Scalar* d, int a, int c) {
  Vec3 r[4];
  Vec3 centroid(0, 0, 0);
  for (int k = 0; k < 4; ++k) {
    r[k] = LoadVec3(x, tet[k]);
    centroid += Scalar(0.25) * r[k];
  }
  Mat3 j;
  Scalar scale = 0;
  for (int k = 0; k < 4; ++k) {
    r[k] -= centroid;
    const Scalar rr = Dot(r[k], r[k]);
    j = j + rr * Mat3::Identity() - Outer(r[k], r[k]);
    scale += rr;
  }
  // J is singular only for collinear nodes (a collapsed element)
  const Scalar det = Determinant(j);
  const Mat3 jinv = std::fabs(det) > Scalar(1e-12) * scale * scale * scale ? Inverse(j) : Mat3();
  Mat3 out;
  for (int k = 0; k < 4; ++k) {
    const Mat3 pak = RigidComplementBlock(r, jinv, a, k);
    const Mat3 pck = RigidComplementBlock(r, jinv, c, k);
    out = out + pak * Mat3::Diagonal(LoadVec3(d, k)) * Transpose(pck);
  }
  return out;
}

// one 3x3 block (r, c) of A = (2/t + alpha) M + (t/2 + beta) K (eq. 9 with Rayleigh damping
// alpha M + beta K): K_rc = sum over elements of V R [lambda g_a g_b^T + mu g_b g_a^T +
// mu (g_a . g_b) I] R^T, the rotated linear-elastic stiffness; refs = element * 16 + a * 4 + b
struct FemBlockOp {
  static constexpr Index kGrain = 32768;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;
  const Index* refs;
  const Index* block_row;
  const Index* col_idx;
  const Scalar* bm;
  const Scalar* volume;
  const Scalar* mu;
  const Scalar* lambda;
  const Scalar* rotation;
  const Scalar* mass;
  Scalar mass_coeff;
  Scalar stiffness_coeff;
  Scalar* values;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Mat3 sum;
    for (Index q = ptr[k]; q < ptr[k + 1]; ++q) {
      const Index ref = refs[q];
      const Index e = ref / 16;
      const int a = (ref / 4) % 4, c = ref % 4;
      const Mat3 bme = LoadMat3(bm, e);
      const Vec3 ga = ShapeGradient(bme, a), gb = ShapeGradient(bme, c);
      const Mat3 local = lambda[e] * Outer(ga, gb) + mu[e] * Outer(gb, ga) + (mu[e] * Dot(ga, gb)) * Mat3::Identity();
      const Mat3 r = LoadMat3(rotation, e);
      sum = sum + volume[e] * (r * local * Transpose(r));
    }
    Mat3 out = stiffness_coeff * sum;
    if (block_row[k] == col_idx[k]) out = out + (mass_coeff * mass[block_row[k]]) * Mat3::Identity();
    StoreMat3(values, k, out);
  }
};

// adds coeff * (P D P)_rc, the projected geometric damping (ProjectedGeometricBlock), to the 3x3
// block k of A; the same refs as FemBlockOp (a separate launch, only with geometric_stiffness)
struct FemGeometricBlockOp {
  static constexpr Index kGrain = 32768;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;
  const Index* refs;
  const Index* tets;
  const Scalar* x;         // the positions the elements were computed at
  const Scalar* geo_diag;  // 12 per element
  Scalar coeff;
  Scalar* values;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Mat3 sum;
    for (Index q = ptr[k]; q < ptr[k + 1]; ++q) {
      const Index ref = refs[q];
      const Index e = ref / 16;
      sum = sum + ProjectedGeometricBlock(tets + 4 * std::int64_t(e), x, geo_diag + 12 * std::int64_t(e), (ref / 4) % 4, ref % 4);
    }
    StoreMat3(values, k, LoadMat3(values, k) + coeff * sum);
  }
};

// x_mid = x + (t/2) v-hat per DOF: the midpoint at which a Newton iteration linearizes (eq. 10)
struct MidpointOp {
  const Scalar* x;
  const Scalar* vhat;
  Scalar half_dt;
  Scalar* x_mid;
  CONDSIM_HD_INLINE void operator()(Index k) const { x_mid[k] = x[k] + half_dt * vhat[k]; }
};

// the rigid predictor's per-node terms (FemModel::RigidPredictor): entry k n + i holds term k of
// node i, summed against the node masses by one segmented dot per pass. Pass 1: v_i (terms 0-2)
// and x_i (3-5), giving the momentum and the mass moment
struct RigidMomentTermsOp {
  const Scalar* x;
  const Scalar* v;
  Index n;
  Scalar* terms;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    for (int d = 0; d < 3; ++d) {
      terms[d * n + i] = v[3 * i + d];
      terms[(3 + d) * n + i] = x[3 * i + d];
    }
  }
};

// pass 2, about the centre of mass c (r = x_i - c): r x v_i (terms 0-2, the angular momentum)
// and (r.r I - r r^T) row-major (terms 3-11, the inertia tensor)
struct RigidInertiaTermsOp {
  const Scalar* x;
  const Scalar* v;
  Vec3 c;
  Index n;
  Scalar* terms;
  CONDSIM_HD_INLINE void operator()(Index i) const {
    const Vec3 r = LoadVec3(x, i) - c;
    const Vec3 l = Cross(r, LoadVec3(v, i));
    const Mat3 j = Dot(r, r) * Mat3::Identity() - Outer(r, r);
    for (int d = 0; d < 3; ++d) terms[d * n + i] = l[d];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) terms[(3 + 3 * a + b) * n + i] = j(a, b);
  }
};

// the rigid motion's mean velocity over the step at node i: out_i = V + chord (x_i - c)
struct RigidPredictorOp {
  const Scalar* x;
  Vec3 velocity;
  Mat3 chord;
  Vec3 c;
  Scalar* out;
  CONDSIM_HD_INLINE void operator()(Index i) const { StoreVec3(out, i, velocity + chord * (LoadVec3(x, i) - c)); }
};

// the Newton right-hand side (eq. 10): b += s (A v-hat - c_M M v-hat), which adds (t/2) K v-hat
// given A = c_M M + (t/2 + beta) K and s = (t/2) / (t/2 + beta); r = A v-hat
struct NewtonRhsOp {
  const Scalar* mass;
  const Scalar* vhat;
  const Scalar* r;
  Scalar mass_coeff;
  Scalar scale;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    b[k] += scale * (r[k] - mass_coeff * mass[k / 3] * vhat[k]);
  }
};

// prescribed nodes carried rigidly (a handle): prescribed node q reaches p + R (X_q - o) at the
// step's end, so its mid-step velocity is (p + R (X_q - o) - x_q) / t (eq. 4: x += t v-hat)
struct CarryPrescribedOp {
  const Index* nodes;       // the prescribed nodes
  const Scalar* reference;  // X_q, 3 per prescribed node [m]
  Mat3 r;                   // R
  Vec3 p, origin;           // p(t_{k+1}) and o [m]
  Scalar inv_dt;            // 1 / t [1/s]
  const Scalar* x;
  Scalar* v_prescribed;     // 3 per node of the mesh
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = nodes[q];
    const Vec3 target = p + r * (LoadVec3(reference, q) - origin);
    StoreVec3(v_prescribed, i, inv_dt * (target - LoadVec3(x, i)));
  }
};

// prescribed mid-step velocities (pinned nodes: 0; driven nodes: (p(t_{k+1}) - x_k) / t),
// eliminated symmetrically so that A stays SPD: a prescribed block row becomes s I with
// b = s v (s = mean diagonal of its diagonal block); a free row moves its blocks in prescribed
// columns to the right-hand side, b_r -= A_rc v_c, and zeroes them
struct DirichletRowOp {
  const Index* row_ptr;
  const Index* col_idx;
  const unsigned char* prescribed;
  const Scalar* v_prescribed;
  Scalar* values;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index r) const {
    for (Index k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
      const Index c = col_idx[k];
      Scalar* a = values + 9 * std::int64_t(k);
      if (prescribed[r]) {
        if (c == r) {
          const Scalar s = (a[0] + a[4] + a[8]) / 3;
          const Vec3 v = LoadVec3(v_prescribed, r);
          for (int e = 0; e < 9; ++e) a[e] = (e % 4 == 0) ? s : Scalar(0);
          StoreVec3(b, r, s * v);
        } else {
          for (int e = 0; e < 9; ++e) a[e] = 0;
        }
      } else if (prescribed[c]) {
        const Vec3 v = LoadVec3(v_prescribed, c);
        const Vec3 av = LoadMat3(values, k) * v;
        AddVec3(b, r, -av);
        for (int e = 0; e < 9; ++e) a[e] = 0;
      }
    }
  }
};

// a node attached to a moving target point by the constraint potential of eq. 7,
// psi = k/2 |x - p|^2: eq. 8-9 add (t/2) k I to the node's diagonal block of A and
// -k (x_k - p_k) + (t/2) k v_p to b (v_p = the target's mid-step velocity)
struct AttachOp {
  const Index* nodes;
  const Index* diag_block;  // index of the node's diagonal block in the pattern
  const Scalar* stiffness;  // k [N/m] per attachment
  const Scalar* target;     // p_k, 3 per attachment
  const Scalar* target_v;   // v_p, 3 per attachment
  const Scalar* x;
  Scalar half_dt;
  Scalar* values;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index q) const {
    const Index i = nodes[q];
    const Scalar k = stiffness[q];
    Scalar* a = values + 9 * std::int64_t(diag_block[q]);
    a[0] += half_dt * k;
    a[4] += half_dt * k;
    a[8] += half_dt * k;
    const Vec3 f = (-k) * (LoadVec3(x, i) - LoadVec3(target, q)) + (half_dt * k) * LoadVec3(target_v, q);
    AddVec3(b, i, f);
  }
};

// links between two nodes (two bodies meshed in one model, or a body and itself) by the
// constraint potential psi = k/2 |x_i - x_j|^2 (eq. 7): A gains (t/2) k [I -I; -I I], b gains
// -k (x_i - x_j) at node i and the opposite at node j. Gathers: per block, refs = link * 2 +
// (1 for -k); per node, refs = link * 2 + (1 when the node is the link's j)
struct LinkBlockOp {
  const Index* ptr;
  const Index* refs;
  const Scalar* stiffness;
  Scalar half_dt;
  Scalar* values;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    if (ptr[k] == ptr[k + 1]) return;
    Scalar sum = 0;
    for (Index q = ptr[k]; q < ptr[k + 1]; ++q) sum += (refs[q] % 2 ? -1 : 1) * stiffness[refs[q] / 2];
    Scalar* a = values + 9 * std::int64_t(k);
    a[0] += half_dt * sum;
    a[4] += half_dt * sum;
    a[8] += half_dt * sum;
  }
};

struct LinkRhsOp {
  const Index* ptr;
  const Index* refs;
  const Index* link_i;
  const Index* link_j;
  const Scalar* stiffness;
  const Scalar* x;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index node) const {
    Vec3 f(0, 0, 0);
    for (Index q = ptr[node]; q < ptr[node + 1]; ++q) {
      const Index l = refs[q] / 2;
      const Vec3 d = LoadVec3(x, link_i[l]) - LoadVec3(x, link_j[l]);
      f += (refs[q] % 2 ? stiffness[l] : -stiffness[l]) * d;
    }
    AddVec3(b, node, f);
  }
};

}  // namespace condsim
