// Discrete Cosserat rod (cable) functors: rigid segments joined by 6-D springs in the
// constraint-potential form of eq. 7, linearized implicitly as in eq. 8-9. A segment s owns two
// 3-DOF nodes: translation (block row 2s, its centre: the contact node) and rotation (block row
// 2s+1, world-frame angular velocity). Orientation perturbations are world-frame:
// R <- exp([d theta]) R.
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

CONDSIM_HD_INLINE Quat LoadQuat(const Scalar* q, Index s) {
  const Scalar* p = q + 4 * std::int64_t(s);
  return Quat(p[0], p[1], p[2], p[3]);
}
CONDSIM_HD_INLINE void StoreQuat(Scalar* q, Index s, const Quat& v) {
  Scalar* p = q + 4 * std::int64_t(s);
  p[0] = v.w;
  p[1] = v.x;
  p[2] = v.y;
  p[3] = v.z;
}

// world-frame inertia R diag(I_body) R^T of segment s
CONDSIM_HD_INLINE Mat3 WorldInertia(const Scalar* inertia, const Scalar* q, Index s) {
  const Mat3 r = ToMatrix(LoadQuat(q, s));
  return r * Mat3::Diagonal(LoadVec3(inertia, s)) * Transpose(r);
}

// inverse right Jacobian of SO(3): d log(Q exp(eta)) = Jr^-1(log Q) eta
CONDSIM_HD_INLINE Mat3 InverseRightJacobian(const Vec3& phi) {
  const Scalar theta2 = SquaredNorm(phi);
  const Mat3 k = Skew(phi);
  Scalar c;
  if (theta2 < Scalar(1e-8)) {
    c = Scalar(1) / 12 + theta2 / 720;  // series of 1/th^2 - (1 + cos th) / (2 th sin th)
  } else {
    const Scalar theta = std::sqrt(theta2);
    c = 1 / theta2 - (1 + std::cos(theta)) / (2 * theta * std::sin(theta));
  }
  return Mat3::Identity() + Scalar(0.5) * k + c * (k * k);
}

// the state of one joint side: centre x, rotation R, arm a (body frame) from the centre to
// the joint point
struct JointSide {
  Vec3 x;
  Mat3 r;
  Vec3 arm;
};

// joint error e = (e_t, e_r) and its Jacobian J (6 x 12, columns [dx_l, dth_l, dx_r, dth_r]):
//   e_t = R_l^T (p_r - p_l),  p = x + R a                       (shear x, y and stretch z)
//   e_r = log(R0^T R_l^T R_r)                                   (bending x, y and twist z)
//   J_t = R_l^T [-I, [d]x + [R_l a_l]x, I, -[R_r a_r]x],  d = p_r - p_l
//   J_r = Jr^-1(e_r) R_r^T [0, -I, 0, I]
// J is held as its four distinct 3x3 blocks (36 numbers, not 72: a kernel keeps two of these in
// registers, RodGeoColumnOp) and read entry by entry with J(i, a)
struct JointKinematics {
  Scalar e[6];
  Mat3 rlt;  // R_l^T: J_t block 2, and block 0 negated
  Mat3 t1;   // J_t block 1
  Mat3 t3;   // J_t block 3
  Mat3 jr;   // Jr^-1(e_r) R_r^T: J_r block 3, and block 1 negated
  // entry (i, a) of J; constant i and a (unrolled loops) select the block at compile time
  CONDSIM_HD_INLINE Scalar J(int i, int a) const {
    const int b = a / 3, c = a % 3;
    if (i < 3) {
      if (b == 0) return -rlt(i, c);
      if (b == 1) return t1(i, c);
      if (b == 2) return rlt(i, c);
      return t3(i, c);
    }
    if (b == 1) return -jr(i - 3, c);
    if (b == 3) return jr(i - 3, c);
    return Scalar(0);
  }
};

CONDSIM_HD_INLINE JointKinematics ComputeJoint(const JointSide& l, const JointSide& r, const Mat3& rest) {
  JointKinematics k;
  const Vec3 al = l.r * l.arm, ar = r.r * r.arm;
  const Vec3 d = (r.x + ar) - (l.x + al);
  const Mat3 rlt = Transpose(l.r);
  const Vec3 et = rlt * d;
  const Vec3 er = LogRotation(Transpose(rest) * rlt * r.r);
  for (int i = 0; i < 3; ++i) {
    k.e[i] = et[i];
    k.e[3 + i] = er[i];
  }
  k.rlt = rlt;
  k.t1 = rlt * (Skew(d) + Skew(al));
  k.t3 = (-1) * (rlt * Skew(ar));
  k.jr = InverseRightJacobian(er) * Transpose(r.r);
  return k;
}

// the two sides of joint jt: segment centres and rotations, or the kinematic pose p >= 0 on the left
struct RodJointInputs {
  const Index* left;
  const Index* right;
  const Index* pose;
  const Scalar* arm_l;
  const Scalar* arm_r;
  const Scalar* x;
  const Scalar* q;
  const Scalar* pose_x;
  const Scalar* pose_q;
  CONDSIM_HD_INLINE void Load(Index jt, Index p, JointSide* l, JointSide* r) const {
    if (p >= 0) {
      l->x = LoadVec3(pose_x, p);
      l->r = ToMatrix(LoadQuat(pose_q, p));
    } else {
      l->x = LoadVec3(x, left[jt]);
      l->r = ToMatrix(LoadQuat(q, left[jt]));
    }
    r->x = LoadVec3(x, right[jt]);
    r->r = ToMatrix(LoadQuat(q, right[jt]));
    l->arm = LoadVec3(arm_l, jt);
    r->arm = LoadVec3(arm_r, jt);
  }
};

// per joint: J^T K J (12 x 12), the generalized force -J^T K e (12) and the energy e^T K e / 2.
// A joint whose left side is a kinematic pose (pose >= 0) also moves the right side through the
// pose's mid-step velocity: its force gains -(t/2) J^T K J_l v_pose (eq. 8 along the pose path).
// With geometric stiffness, RodGeoColumnOp and RodGeoDiagOp then add eq. 8-9's E (separate
// launches: one thread holding J three times spilled, docs/performance.md "Kernel resources").
struct RodJointOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  RodJointInputs in;     // left: segment or -1 for a kinematic pose; pose: its slot or -1
  const Scalar* rest;    // 9 per joint: rest relative rotation R0 = R_l^T R_r at rest
  const Scalar* k;       // 6 per joint: shear1, shear2, stretch, bend1, bend2, twist stiffness
  const Scalar* pose_v;  // kinematic poses' mid-step velocity (v, w)
  Scalar half_dt;
  Scalar* jkj;           // 144 per joint
  Scalar* force;         // 12 per joint
  Scalar* energy;        // 1 per joint (may be null)
  CONDSIM_HD_INLINE void operator()(Index jt) const {
    const Index p = in.pose[jt];
    JointSide l, r;
    in.Load(jt, p, &l, &r);
    const JointKinematics kin = ComputeJoint(l, r, LoadMat3(rest, jt));
    const Scalar* kd = k + 6 * std::int64_t(jt);
    Scalar ke[6];
    Scalar e_energy = 0;
    for (int i = 0; i < 6; ++i) {
      ke[i] = kd[i] * kin.e[i];
      e_energy += Scalar(0.5) * kd[i] * kin.e[i] * kin.e[i];
    }
    // K J_l v_pose for a kinematic left side
    Scalar kjv[6] = {0, 0, 0, 0, 0, 0};
    if (p >= 0) {
      const Scalar* vp = pose_v + 6 * std::int64_t(p);
      for (int i = 0; i < 6; ++i) {
        Scalar s = 0;
        for (int c = 0; c < 6; ++c) s += kin.J(i, c) * vp[c];
        kjv[i] = kd[i] * s;
      }
    }
    Scalar* out = jkj + 144 * std::int64_t(jt);
    Scalar* f = force + 12 * std::int64_t(jt);
    CONDSIM_UNROLL
    for (int a = 0; a < 12; ++a) {
      Scalar fa = 0;
      for (int i = 0; i < 6; ++i) fa -= kin.J(i, a) * (ke[i] + half_dt * kjv[i]);
      f[a] = fa;
      CONDSIM_UNROLL
      for (int b = 0; b < 12; ++b) {
        Scalar s = 0;
        for (int i = 0; i < 6; ++i) s += kin.J(i, a) * kd[i] * kin.J(i, b);
        out[12 * a + b] = s;
      }
    }
    if (energy != nullptr) energy[jt] = e_energy;
  }
};

// the geometric term of a joint (the paper's E, eq. 8-9), column c of H_geo = d(J^T y)/dq with
// y = K e held fixed, by central differences of J (world-frame rotation perturbations, step 1e-6
// of the joint's length scale); one item per joint and column (item = 12 jt + c), written to geo
// (144 per joint, row-major). A kinematic left side (pose >= 0) has no columns 0..5 (zeros).
struct RodGeoColumnOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  RodJointInputs in;
  const Scalar* rest;
  const Scalar* k;
  Scalar* geo;  // 144 per joint
  CONDSIM_HD_INLINE void operator()(Index item) const {
    const Index jt = item / 12;
    const int c = static_cast<int>(item % 12);
    const Index p = in.pose[jt];
    Scalar* g = geo + 144 * std::int64_t(jt);
    if (c < (p >= 0 ? 6 : 0)) {
      for (int a = 0; a < 12; ++a) g[12 * a + c] = 0;
      return;
    }
    JointSide l, r;
    in.Load(jt, p, &l, &r);
    const Mat3 rest_jt = LoadMat3(rest, jt);
    Scalar ke[6];
    {
      const JointKinematics kin = ComputeJoint(l, r, rest_jt);
      for (int i = 0; i < 6; ++i) ke[i] = k[6 * std::int64_t(jt) + i] * kin.e[i];
    }
    const Scalar h = Scalar(1e-6);
    JointSide lp = l, lm = l, rp = r, rm = r;
    const int axis = c % 3;
    const Vec3 step(axis == 0 ? h : Scalar(0), axis == 1 ? h : Scalar(0), axis == 2 ? h : Scalar(0));
    // (no references to the side: a selected reference puts both sides on the stack)
    if ((c / 3) % 2 == 0) {
      if (c < 6) {
        lp.x += step;
        lm.x -= step;
      } else {
        rp.x += step;
        rm.x -= step;
      }
    } else {
      const Mat3 plus = ToMatrix(FromRotationVector(step)), minus = ToMatrix(FromRotationVector(-step));
      if (c < 6) {
        lp.r = plus * lp.r;
        lm.r = minus * lm.r;
      } else {
        rp.r = plus * rp.r;
        rm.r = minus * rm.r;
      }
    }
    const JointKinematics kp = ComputeJoint(lp, rp, rest_jt);
    const JointKinematics km = ComputeJoint(lm, rm, rest_jt);
    CONDSIM_UNROLL
    for (int a = 0; a < 12; ++a) {
      Scalar s = 0;
      for (int i = 0; i < 6; ++i) s += (kp.J(i, a) - km.J(i, a)) * ke[i];
      g[12 * a + c] = s / (2 * h);
    }
  }
};

// adds the diagonal of absolute row sums of the symmetrized geometric term (RodGeoColumnOp), times
// `scale`, to J^T K J (SPD, eq. 8-9's E), per joint. Rotation rows only: on a segment centre's translation a
// diagonal damps absolute velocity (a falling cable fell 2 % short of g t^2 / 2 in 0.2 s and lost
// linear momentum in impacts), while the rotation rows alone keep the stiff cable passive
struct RodGeoDiagOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* pose;
  const Scalar* geo;  // 144 per joint
  Scalar scale;       // RodMaterial::geometric_stiffness_scale
  Scalar* jkj;        // 144 per joint
  CONDSIM_HD_INLINE void operator()(Index jt) const {
    const int first = pose[jt] >= 0 ? 6 : 0;
    const Scalar* g = geo + 144 * std::int64_t(jt);
    Scalar* out = jkj + 144 * std::int64_t(jt);
    for (int a = first; a < 12; ++a) {
      if ((a / 3) % 2 == 0) continue;
      Scalar sum = 0;
      for (int c = first; c < 12; ++c) sum += std::fabs(Scalar(0.5) * (g[12 * a + c] + g[12 * c + a]));
      out[12 * a + a] += scale * sum;
    }
  }
};

// b per node (block row n; segment s = n / 2): translation (2m/t) v + m g + f_ext, rotation
// (2/t) I_w w - w x (I_w w) + tau_ext (explicit gyroscopic term, eq. 9's C v), plus the gathered
// joint forces refs = joint * 4 + side-block (0..3)
struct RodRhsOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;
  const Index* refs;
  const Scalar* force;
  const Scalar* mass;      // per segment
  const Scalar* inertia;   // 3 per segment: body-frame principal moments
  const Scalar* q;
  const Scalar* v;         // 6 per segment: (v, w)
  const Scalar* f_ext;     // 6 per segment (may be null)
  Vec3 gravity;
  Scalar two_over_dt;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index n) const {
    const Index s = n / 2;
    Vec3 out(0, 0, 0);
    for (Index k = ptr[n]; k < ptr[n + 1]; ++k) out += LoadVec3(force, refs[k]);
    const Vec3 vn = LoadVec3(v, n);
    if (n % 2 == 0) {
      out += (two_over_dt * mass[s]) * vn + mass[s] * gravity;
    } else {
      const Vec3 iww = WorldInertia(inertia, q, s) * vn;
      out += two_over_dt * iww - Cross(vn, iww);
    }
    if (f_ext != nullptr) out += LoadVec3(f_ext, n);
    StoreVec3(b, n, out);
  }
};

// one 3x3 block of A = (2/t + alpha) M + (t/2 + beta) sum J^T K J: refs = joint * 16 +
// a * 4 + c (a, c the 3x3 sub-blocks of the joint's 12 x 12)
struct RodBlockOp {
  static constexpr Index kGrain = 4096;  // items per CPU thread at least (cpu/parallel.h)
  const Index* ptr;
  const Index* refs;
  const Index* block_row;
  const Index* col_idx;
  const Scalar* jkj;
  const Scalar* mass;
  const Scalar* inertia;
  const Scalar* q;
  Scalar mass_coeff;
  Scalar stiffness_coeff;
  Scalar* values;
  CONDSIM_HD_INLINE void operator()(Index k) const {
    Mat3 sum;
    for (Index p = ptr[k]; p < ptr[k + 1]; ++p) {
      const Index ref = refs[p];
      const Index jt = ref / 16;
      const int a = (ref / 4) % 4, c = ref % 4;
      const Scalar* m = jkj + 144 * std::int64_t(jt);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) sum(i, j) += m[12 * (3 * a + i) + 3 * c + j];
    }
    Mat3 out = stiffness_coeff * sum;
    const Index n = block_row[k];
    if (n == col_idx[k]) {
      const Index s = n / 2;
      if (n % 2 == 0) {
        out = out + (mass_coeff * mass[s]) * Mat3::Identity();
      } else {
        out = out + mass_coeff * WorldInertia(inertia, q, s);
      }
    }
    StoreMat3(values, k, out);
  }
};

// the state after a step of length h with mid-step velocity v (6 per segment):
// x' = x + h v, R' = exp(h w) R (world-frame angular velocity)
struct RodAdvanceOp {
  const Scalar* x;
  const Scalar* q;
  const Scalar* v;
  Scalar h;
  Scalar* x_out;
  Scalar* q_out;
  CONDSIM_HD_INLINE void operator()(Index s) const {
    StoreVec3(x_out, s, LoadVec3(x, s) + h * LoadVec3(v, 2 * s));
    const Quat dq = FromRotationVector(h * LoadVec3(v, 2 * s + 1));
    StoreQuat(q_out, s, Normalized(dq * LoadQuat(q, s)));
  }
};

// the Newton right-hand side (eq. 10) per node: b += s (r - c_M M v-hat) with r = A v-hat,
// which adds (t/2) K v-hat; M is m I on translation nodes and I_w on rotation nodes
struct RodNewtonRhsOp {
  const Scalar* mass;
  const Scalar* inertia;
  const Scalar* q;
  const Scalar* vhat;
  const Scalar* r;
  Scalar mass_coeff;
  Scalar scale;
  Scalar* b;
  CONDSIM_HD_INLINE void operator()(Index n) const {
    const Index s = n / 2;
    const Vec3 vn = LoadVec3(vhat, n);
    Vec3 mv;
    if (n % 2 == 0) {
      mv = mass[s] * vn;
    } else {
      mv = WorldInertia(inertia, q, s) * vn;
    }
    AddVec3(b, n, scale * (LoadVec3(r, n) - mass_coeff * mv));
  }
};

}  // namespace condsim
