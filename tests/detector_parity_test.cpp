// The CUDA detector against the CPU one on random scenes (tests/detect_scenes.h): identical
// contact sets in the same canonical order, values to 1e-12 (FMA contraction may change the
// last bits). Skips when CUDA is not usable.
#include <gtest/gtest.h>

#include "detect_scenes.h"
#include "test_util.h"

namespace condsim {
namespace {

TEST(DetectorParity, CudaContactSetsMatchCpu) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  auto cpu = MakeBackend(BackendChoice::kCpu).backend, gpu = MakeBackend(BackendChoice::kCuda).backend;
  for (int trial = 0; trial < 4; ++trial) {
    const test::DetectSceneData d = test::RandomDetectScene(rng, 4, 4, 0.04, 0.05, 1.0, 0.004);
    Detector dc(cpu.get(), d.scene), dg(gpu.get(), d.scene);
    dc.Upload(0, d.x, d.v);
    dg.Upload(0, d.x, d.v);
    const DetectResult& rc = dc.Detect(0.01, 1e-3);
    const DetectResult& rg = dg.Detect(0.01, 1e-3);
    EXPECT_EQ(dc.num_pairs(), dg.num_pairs());
    ASSERT_EQ(rc.query, rg.query) << "trial " << trial;
    ASSERT_EQ(rc.tri, rg.tri) << "trial " << trial;
    for (Index k = 0; k < rc.size(); ++k) {
      EXPECT_NEAR(rc.gap[k], rg.gap[k], 1e-12);
      for (int a = 0; a < 3; ++a) EXPECT_NEAR(rc.n[3 * k + a], rg.n[3 * k + a], 1e-12);
    }
    std::printf("trial %d: %d contacts, %d grid pairs\n", trial, rc.size(), dc.num_pairs());
  }
}

}  // namespace
}  // namespace condsim
