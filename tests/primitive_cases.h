// Runs every backend primitive on one set of random inputs, each output poisoned with NaN
// first so that an entry an op fails to write is caught. Shared by the CPU reference test and
// the CUDA-vs-CPU parity test.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "condsim/backend.h"
#include "test_util.h"

namespace condsim::test {

struct PrimitiveInputs {
  BlockMatrix a;
  std::vector<Scalar> x, y, w;  // x, y: size a.cols() == a.rows(); w: weights
  std::vector<Index> offsets;    // segments over [0, n), some empty
  Scalar alpha = 0.75, beta = -1.25;
};

inline PrimitiveInputs MakePrimitiveInputs(std::mt19937_64& rng, Index block_dim, Index block_rows) {
  PrimitiveInputs in;
  in.a = BlockMatrix(RandomPattern(rng, block_dim, block_rows, 7.0));
  in.a.values = RandomVector(rng, Index(in.a.pattern.nnz()));
  const Index n = in.a.pattern.rows();
  in.x = RandomVector(rng, n);
  in.y = RandomVector(rng, n, -10, 10);
  in.w = RandomVector(rng, n, 0.1, 2);
  // segment boundaries: sorted random cuts, including repeated cuts (empty segments)
  std::uniform_int_distribution<Index> cut(0, n);
  in.offsets = {0};
  std::vector<Index> cuts;
  for (int s = 0; s < 12; ++s) cuts.push_back(cut(rng));
  cuts.push_back(cuts[3]);
  std::sort(cuts.begin(), cuts.end());
  in.offsets.insert(in.offsets.end(), cuts.begin(), cuts.end());
  in.offsets.push_back(n);
  return in;
}

struct PrimitiveResults {
  std::vector<Scalar> fill, copy, axpby, axpby_beta0, multiply, spmv, spmv_beta0, seg_dot, seg_max;
  Scalar dot = 0, norm = 0, max_abs = 0;
};

inline PrimitiveResults RunPrimitives(Backend& b, const PrimitiveInputs& in) {
  const Index n = Index(in.x.size());
  const Scalar nan = std::numeric_limits<Scalar>::quiet_NaN();
  const std::vector<Scalar> poison(in.x.size(), nan);
  Array<Scalar> x(&b, in.x), y(&b, in.y), w(&b, in.w), out(&b, poison);
  Array<Index> offsets(&b, in.offsets);
  const Index segs = Index(in.offsets.size()) - 1;
  PrimitiveResults r;
  auto reset = [&](Array<Scalar>* a, const std::vector<Scalar>& v) { a->CopyFromHost(v); };

  reset(&out, poison);
  b.Fill(3.5, &out);
  r.fill = out.ToHost();
  reset(&out, poison);
  b.Copy(x, &out);
  r.copy = out.ToHost();
  reset(&out, in.y);
  b.Axpby(in.alpha, x, in.beta, &out);
  r.axpby = out.ToHost();
  reset(&out, poison);
  b.Axpby(in.alpha, x, 0, &out);  // must not read the NaN in out
  r.axpby_beta0 = out.ToHost();
  reset(&out, poison);
  b.Multiply(x, w, &out);
  r.multiply = out.ToHost();
  r.dot = b.Dot(x, y);
  r.norm = b.Norm2(y);
  r.max_abs = b.MaxAbs(y);
  Array<Scalar> seg(&b, std::vector<Scalar>(std::size_t(segs), nan));
  b.SegmentedDot(x, y, offsets, &seg);
  r.seg_dot = seg.ToHost();
  seg.CopyFromHost(std::vector<Scalar>(std::size_t(segs), nan));
  b.SegmentedMaxAbs(y, offsets, &seg);
  r.seg_max = seg.ToHost();
  auto a = b.CreateMatrix(in.a.pattern);
  a->SetValues(in.a.values);
  reset(&out, in.y);
  a->Multiply(in.alpha, x, in.beta, &out);
  r.spmv = out.ToHost();
  reset(&out, poison);
  a->Multiply(in.alpha, x, 0, &out);
  r.spmv_beta0 = out.ToHost();
  (void)n;
  return r;
}

}  // namespace condsim::test
