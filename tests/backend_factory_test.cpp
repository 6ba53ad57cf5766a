// Backend selection: parsing, auto = CUDA when usable else CPU with the reason, and errors
// naming why a requested backend cannot be used. The expectation is derived from ProbeCuda,
// so the test checks the rule on machines with and without a GPU.
#include <gtest/gtest.h>

#include "condsim/backend.h"
#include "condsim/error.h"

namespace condsim {
namespace {

TEST(BackendFactory, ParsesNamesAndRejectsUnknownOnes) {
  EXPECT_EQ(ParseBackendChoice("cpu"), BackendChoice::kCpu);
  EXPECT_EQ(ParseBackendChoice("cuda"), BackendChoice::kCuda);
  EXPECT_EQ(ParseBackendChoice("auto"), BackendChoice::kAuto);
  EXPECT_EQ(ParseSpmvFormat("bsr"), SpmvFormat::kBsr);
  try {
    ParseBackendChoice("gpu");
    FAIL() << "no error for 'gpu'";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown backend 'gpu' (valid: cpu, cuda, auto)");
  }
  EXPECT_THROW(ParseSpmvFormat("coo"), Error);
}

TEST(BackendFactory, AutoPicksCudaOnlyWhenUsableAndSaysWhy) {
  const CudaProbe probe = ProbeCuda(0);
  EXPECT_EQ(probe.usable, probe.reason.empty()) << probe.reason;
  const BackendSelection sel = MakeBackend(BackendChoice::kAuto);
  if (probe.usable) {
    EXPECT_EQ(sel.backend->kind(), BackendKind::kCuda);
    EXPECT_NE(sel.reason.find(probe.device_name), std::string::npos) << sel.reason;
  } else {
    EXPECT_EQ(sel.backend->kind(), BackendKind::kCpu);
    EXPECT_NE(sel.reason.find(probe.reason), std::string::npos) << sel.reason;
  }
}

TEST(BackendFactory, ExplicitCudaFailsLoudlyWhenNotUsable) {
  const CudaProbe probe = ProbeCuda(0);
  if (probe.usable) {
    EXPECT_EQ(MakeBackend(BackendChoice::kCuda).backend->kind(), BackendKind::kCuda);
  } else {
    try {
      MakeBackend(BackendChoice::kCuda);
      FAIL() << "no error although CUDA is not usable";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(probe.reason), std::string::npos) << e.what();
    }
  }
  // an out-of-range device ordinal is never usable
  const CudaProbe bad = ProbeCuda(4096);
  EXPECT_FALSE(bad.usable);
  EXPECT_FALSE(bad.reason.empty());
}

TEST(BackendFactory, CpuIsAlwaysAvailable) {
  const BackendSelection sel = MakeBackend(BackendChoice::kCpu);
  EXPECT_EQ(sel.backend->kind(), BackendKind::kCpu);
  EXPECT_NE(sel.backend->Describe().find("OpenMP"), std::string::npos);
}

}  // namespace
}  // namespace condsim
