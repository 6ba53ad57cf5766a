// Test helpers: fresh-but-reproducible random inputs, the CUDA skip rule, error measures.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "condsim/backend.h"
#include "models/fem/tet_mesh.h"

namespace condsim::test {

// a new seed every run (printed, so a failure can be replayed), or CONDSIM_TEST_SEED if set
inline std::uint64_t TestSeed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("CONDSIM_TEST_SEED");
    const std::uint64_t s = env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::cout << "[ seed     ] CONDSIM_TEST_SEED=" << s << "\n";
    return s;
  }();
  return seed;
}

// per-test generator: the run seed mixed with the test's name
inline std::mt19937_64 Rng() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "";
  return std::mt19937_64(TestSeed() ^ std::hash<std::string>{}(name));
}

inline std::vector<Scalar> RandomVector(std::mt19937_64& rng, Index n, Scalar lo = -1, Scalar hi = 1) {
  std::uniform_real_distribution<Scalar> u(lo, hi);
  std::vector<Scalar> v(static_cast<std::size_t>(n));
  for (Scalar& x : v) x = u(rng);
  return v;
}

// random square block pattern: the diagonal plus about `per_row` random blocks per block row
inline BlockPattern RandomPattern(std::mt19937_64& rng, Index block_dim, Index block_rows, double per_row) {
  std::uniform_int_distribution<Index> col(0, block_rows - 1);
  std::poisson_distribution<int> count(per_row);
  std::vector<std::pair<Index, Index>> coords;
  for (Index r = 0; r < block_rows; ++r) {
    coords.push_back({r, r});
    for (int k = count(rng); k > 0; --k) coords.push_back({r, col(rng)});
  }
  return BlockPattern::FromCoordinates(block_dim, block_rows, block_rows, coords);
}

// max_i |a_i - b_i|: the largest absolute difference
inline double MaxDiff(const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

// max_i |a_i - b_i| / max(max_i |b_i|, tiny): error relative to the reference's scale
inline double RelativeError(const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return err / std::max(scale, 1e-300);
}

inline bool RequireCuda() {
  const char* env = std::getenv("CONDSIM_REQUIRE_CUDA");
  return env != nullptr && std::string(env) == "1";
}

// the surface of an n^3-cell box mesh of half extents h: vertices and outward triangles
inline void BoxSurface(const Vec3& h, Index n, std::vector<Scalar>* x, std::vector<Index>* tri) {
  const TetMesh mesh = MakeBoxMesh(Scalar(-1) * h, Scalar(2) * h, n, n, n);
  const std::vector<Index> surface = SurfaceNodes(mesh);
  std::vector<Index> id(std::size_t(mesh.num_nodes()), -1);
  for (std::size_t k = 0; k < surface.size(); ++k) {
    id[surface[k]] = static_cast<Index>(k);
    const Vec3 p = mesh.Node(surface[k]);
    x->insert(x->end(), {p[0], p[1], p[2]});
  }
  for (Index t : SurfaceTriangles(mesh)) tri->push_back(id[t]);
}

}  // namespace condsim::test

// skips the test when no usable CUDA device is present, with the reason; a failure instead
// when CONDSIM_REQUIRE_CUDA=1 (GPU runs must not silently skip)
#define CONDSIM_REQUIRE_CUDA_OR_SKIP()                                                   \
  do {                                                                                  \
    const ::condsim::CudaProbe condsim_probe_ = ::condsim::ProbeCuda(0);                \
    if (!condsim_probe_.usable) {                                                       \
      if (::condsim::test::RequireCuda()) {                                             \
        FAIL() << "CONDSIM_REQUIRE_CUDA=1 but CUDA is not usable: " << condsim_probe_.reason; \
      }                                                                                 \
      GTEST_SKIP() << "CUDA not usable: " << condsim_probe_.reason;                     \
    }                                                                                   \
  } while (0)
