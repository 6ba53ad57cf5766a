// One functor evaluating the shared math on a batch of inputs; the CUDA math test runs it on
// the host and inside a CUDA kernel and compares.
#pragma once

#include <vector>

#include "condsim/math.h"

namespace condsim::test {

struct MathCase {
  Mat3 f;
  Quat q;
  Vec3 v;
};

struct MathResult {
  Polar3 polar;
  Vec3 sigma;
  Vec3 eigenvalues;
  Mat3 inverse;
  Scalar det;
  Mat3 q_matrix;
  Vec3 rotated;
  Quat from_matrix;
  Quat from_rotation_vector;
};

struct MathOp {
  const MathCase* in;
  MathResult* out;
  CONDSIM_HD void operator()(Index i) const {
    const MathCase& c = in[i];
    MathResult r;
    r.polar = ComputePolar(c.f);
    r.sigma = ComputeSvd(c.f).sigma;
    r.eigenvalues = ComputeSymmetricEigen(c.f + Transpose(c.f)).values;
    r.inverse = Inverse(c.f);
    r.det = Determinant(c.f);
    const Quat q = Normalized(c.q);
    r.q_matrix = ToMatrix(q);
    r.rotated = Rotate(q, c.v);
    r.from_matrix = FromMatrix(r.q_matrix);
    r.from_rotation_vector = FromRotationVector(c.v);
    out[i] = r;
  }
};

// runs MathOp over all cases on CUDA device 0 (defined in cuda_math_kernels.cu)
std::vector<MathResult> RunMathOnDevice(const std::vector<MathCase>& cases);

}  // namespace condsim::test
