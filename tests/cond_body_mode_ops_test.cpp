// The body-mode ops on their own (models/cond/body_mode_ops.h), against host references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/cond/cond_body_modes.h"
#include "models/cond/cond_kernels.h"
#include "test_util.h"

namespace condsim {
namespace {

// g = Z^T r per patch from kBodyModeChunk-node chunks summed in parallel (BodyModeResidualChunkOp,
// BodyModeResidualOp): against the long-double sum over each patch's nodes within 1e-11 of the
// largest term (about 800 terms), the same on 1 and 2 threads, a patch of one chunk bitwise its
// nodes' sum in order, and a stopped environment's patch 0; the chunks cut by CutBodyModeChunks,
// as CondBodyModes::Prepare cuts them
TEST(CondBodyModes, ChunkedPatchSumsMatchTheSumOverTheNodes) {
  auto rng = test::Rng();
  const std::vector<Index> sizes = {3 * kBodyModeChunk + 17, kBodyModeChunk, 5, 2 * kBodyModeChunk};
  BodyModeHost h;
  h.ptr.assign(1, 0);
  for (Index n : sizes) h.ptr.push_back(h.ptr.back() + n);
  CutBodyModeChunks(h.ptr, &h.chunk_ptr, &h.chunk_begin);
  const Index listed = h.ptr.back(), nodes = listed + 10, patches = Index(sizes.size());
  // the cut: 4 + 1 + 1 + 2 chunks, each from its patch's start
  EXPECT_EQ(h.chunk_ptr, (std::vector<Index>{0, 4, 5, 6, 8}));
  EXPECT_EQ(h.chunk_begin, (std::vector<Index>{0, 256, 512, 768, 785, 1041, 1046, 1302, 1558}));
  std::vector<Index> perm(static_cast<std::size_t>(nodes));
  for (Index i = 0; i < nodes; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  h.node.assign(perm.begin(), perm.begin() + listed);
  h.arm = test::RandomVector(rng, 3 * listed);
  const std::vector<Scalar> r = test::RandomVector(rng, 3 * nodes, -1e3, 1e3);
  // the last patch's nodes in a stopped environment
  std::vector<Index> node_env(static_cast<std::size_t>(nodes), 0);
  for (Index q = h.ptr[patches - 1]; q < listed; ++q) node_env[h.node[q]] = 1;
  const std::vector<unsigned char> env_active = {1, 0};
  std::vector<std::vector<Scalar>> results;
  for (int threads : {1, 2}) {
    BackendOptions o;
    o.cpu_threads = threads;
    auto backend = MakeBackend(BackendChoice::kCpu, o).backend;
    Backend* b = backend.get();
    auto kernels = MakeKernels<CondKernels>(*b);
    BodyModeArrays arrays;
    arrays.Upload(b, h);
    Array<Scalar> r_d(b, r), partial(b, std::vector<Scalar>(6 * h.chunk_begin.size(), 0)), g(b, std::vector<Scalar>(6 * patches, 7));
    Array<Index> env_d(b, node_env);
    Array<unsigned char> active_d(b, env_active);
    kernels->BodyModeResidualChunk(Index(h.chunk_begin.size()) - 1,
                                   BodyModeResidualChunkOp{arrays.view(), r_d.data(), env_d.data(), active_d.data(), partial.data()});
    kernels->BodyModeResidual(patches, BodyModeResidualOp{arrays.view(), partial.data(), env_d.data(), active_d.data(), g.data()});
    results.push_back(g.ToHost());
  }
  EXPECT_EQ(results[0], results[1]);
  const std::vector<Scalar>& g = results[0];
  for (Index p = 0; p < patches; ++p) {
    long double ref[6] = {0, 0, 0, 0, 0, 0}, scale = 0;
    Vec3 lin, rot;  // the sum in node order, as one thread
    for (Index q = h.ptr[p]; q < h.ptr[p + 1]; ++q) {
      const Vec3 arm(h.arm[3 * q], h.arm[3 * q + 1], h.arm[3 * q + 2]);
      const Index i = h.node[q];
      const Vec3 x(r[3 * i], r[3 * i + 1], r[3 * i + 2]);
      ModeTranspose(arm, x, &lin, &rot);
      const Vec3 c = Cross(arm, x);
      for (int d = 0; d < 3; ++d) {
        ref[d] += x[d];
        ref[3 + d] += c[d];
        scale = std::max(scale, std::fabs(static_cast<long double>(x[d])) * 1000);
      }
    }
    for (int d = 0; d < 6; ++d) {
      if (p == patches - 1) {
        EXPECT_EQ(g[6 * p + d], 0) << "stopped environment, patch " << p;
      } else {
        EXPECT_LE(std::fabs(static_cast<long double>(g[6 * p + d]) - ref[d]), 1e-14 * scale) << "patch " << p << " component " << d;
      }
    }
    // one chunk: the nodes' sum in order, bitwise
    if (h.ptr[p + 1] - h.ptr[p] <= kBodyModeChunk && p != patches - 1)
      for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(g[6 * p + d], lin[d]);
        EXPECT_EQ(g[6 * p + 3 + d], rot[d]);
      }
  }
}

}  // namespace
}  // namespace condsim
