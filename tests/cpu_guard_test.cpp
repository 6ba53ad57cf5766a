// The guarded-memory mode of the CPU backend (CONDSIM_CPU_GUARD=1, cpu/guarded_memory.h): this
// binary turns the mode on for itself (unless CONDSIM_CPU_GUARD is already set), and checks that
// a host read or write of an Array's data() outside a launch dies with the guard's message, that
// a functor holding a host pointer (heap, stack, static) throws an Error naming it and the word,
// that fresh arrays are all NaN bytes (so an uninitialized read shows), and that clean launches,
// copies and every primitive give the references' results. Run with CONDSIM_CPU_GUARD=0, every
// test here fails (the checks need the mode).
#include "cpu/guarded_memory.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <vector>

#include "condsim/error.h"
#include "condsim/vector_ops.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "primitive_cases.h"
#include "test_util.h"

namespace condsim::cpu {
namespace {

// before main: the mode is read once, at the first launch or allocation
const bool kGuardRequested = setenv("CONDSIM_CPU_GUARD", "1", /*overwrite=*/0) == 0;

std::unique_ptr<Backend> Cpu(int threads = 1) {
  BackendOptions o;
  o.cpu_threads = threads;
  return MakeCpuBackend(o);
}

// a functor that forks on every launch (grain 1): y[i] = i
struct IotaOp {
  static constexpr Index kGrain = 1;
  Scalar* y;
  void operator()(Index i) const { y[i] = Scalar(i); }
};

class CpuGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kGuardRequested);
    // a fresh process per death test: OpenMP's threads make fork() unsafe
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(CpuGuard, ModeIsOn) { EXPECT_TRUE(GuardOn()) << "CONDSIM_CPU_GUARD=" << std::getenv("CONDSIM_CPU_GUARD"); }

// (a) host code touching backend memory outside a launch or copy: SIGSEGV, the guard's message
TEST_F(CpuGuard, HostReadOfArrayDataDies) {
  auto backend = Cpu();
  Array<Scalar> a(backend.get(), std::vector<Scalar>{1, 2, 3});
  EXPECT_DEATH(
      {
        volatile Scalar v = a.data()[1];
        (void)v;
      },
      "CONDSIM_CPU_GUARD: host access to backend memory at 0x");
}

TEST_F(CpuGuard, HostWriteAfterLaunchDies) {
  auto backend = Cpu();
  Array<Index> a(backend.get(), std::vector<Index>{4, 5, 6});
  Array<Index> sum(backend.get(), 3);
  EXPECT_EQ(backend->ExclusiveScan(3, a, &sum), 15);  // a primitive opens and closes the region
  EXPECT_DEATH({ *static_cast<volatile Index*>(sum.data()) = 7; }, "CONDSIM_CPU_GUARD: host access to backend memory");
}

// (b) a functor carrying a host pointer: an Error naming the type and the word
TEST_F(CpuGuard, FunctorWithHostPointerThrows) {
  auto backend = Cpu();
  const Exec exec{1, backend->mutable_counters()};
  std::vector<Scalar> heap(8, 0.0);
  Scalar stack[8] = {};
  static Scalar data_segment[8];
  for (Scalar* host : {heap.data(), &stack[0], &data_segment[0]}) {
    try {
      exec.For(8, FillOp{1.0, host});
      ADD_FAILURE() << "no error for the host pointer " << host;
    } catch (const Error& e) {
      // FillOp {Scalar value; Scalar* y;}: y is word 1
      EXPECT_NE(std::string(e.what()).find("condsim::FillOp holds a host pointer"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("in word 1 (byte offset 8)"), std::string::npos) << e.what();
    }
    // nothing ran
    EXPECT_EQ(heap[0] + stack[0] + data_segment[0], 0.0);
  }
  // a lambda capturing a host vector by reference holds a stack address
  EXPECT_THROW(exec.For(8, [&](Index i) { heap[std::size_t(i)] = 1; }), Error);
  EXPECT_EQ(heap[0], 0.0);
}

// (c) fresh memory is NaN bytes: an uninitialized read shows as NaN (Scalar) or -1 (Index)
TEST_F(CpuGuard, FreshArraysAreNaN) {
  auto backend = Cpu();
  for (int round = 0; round < 2; ++round) {
    // round 1 reuses the memory round 0 filled with zeros and freed
    Array<Scalar> x(backend.get(), 1000);
    Array<Index> k(backend.get(), 1000);
    for (Scalar v : x.ToHost()) ASSERT_TRUE(std::isnan(v)) << "round " << round;
    for (Index v : k.ToHost()) ASSERT_EQ(v, -1) << "round " << round;
    // a kernel reading the fresh array propagates the NaN
    Array<Scalar> y(backend.get(), std::vector<Scalar>(1000, 1.0));
    EXPECT_TRUE(std::isnan(backend->Dot(x, y)));
    backend->Fill(0, &x);
    k.CopyFromHost(std::vector<Index>(1000, 0));
  }
}

// an array resized within its capacity (Array::Resize keeps the allocation) has unspecified
// entries: the guard makes them NaN again, so code reading last step's values shows
TEST_F(CpuGuard, ResizedArraysAreNaN) {
  auto backend = Cpu();
  Array<Scalar> x;
  x.Resize(backend.get(), 100);
  backend->Fill(1, &x);
  const std::int64_t allocations = backend->counters().allocations;
  x.Resize(backend.get(), 50);
  EXPECT_EQ(backend->counters().allocations, allocations);  // reused, not reallocated
  for (Scalar v : x.ToHost()) ASSERT_TRUE(std::isnan(v));
}

// clean launches (on 4 threads, and nested in OpenMP threads) and copies pass with the references'
// results (the CPU backend's own test, cpu_backend_test, gives the reference tolerances: here
// the guarded run must equal the unguarded formulas exactly or within its bounds)
TEST_F(CpuGuard, CleanLaunchesAndCopiesPass) {
  auto backend = Cpu(4);
  const Exec exec{4, backend->mutable_counters()};
  constexpr Index n = 1000;
  Array<Scalar> y(backend.get(), n);
  exec.For(n, IotaOp{y.data()});
  std::vector<Scalar> host = y.ToHost();
  for (Index i = 0; i < n; ++i) ASSERT_EQ(host[std::size_t(i)], Scalar(i));

  // launches from 4 OpenMP threads at once, each on its quarter: the region stays open until the
  // last one closes it
  Array<Scalar> z(backend.get(), n);
  BackendCounters counted[4];  // one per thread (the backend's counters are not atomic)
#pragma omp parallel for num_threads(4)
  for (int q = 0; q < 4; ++q) Exec{1, &counted[q]}.For(n / 4, IotaOp{z.data() + q * (n / 4)});
  host = z.ToHost();
  for (Index i = 0; i < n; ++i) ASSERT_EQ(host[std::size_t(i)], Scalar(i % (n / 4)));

  // a launch inside an open scope leaves it open
  {
    const GuardScope open;
    exec.For(n, IotaOp{z.data()});
    EXPECT_EQ(z.data()[n - 1], Scalar(n - 1));
  }
  // copies: host -> backend -> backend -> host
  Array<Scalar> w(backend.get(), n);
  backend->Copy(y, &w);
  EXPECT_EQ(w.ToHost(), y.ToHost());

  // every primitive against references computed on the host, as in cpu_backend_test
  auto rng = test::Rng();
  const test::PrimitiveInputs in = test::MakePrimitiveInputs(rng, 3, 200);
  const test::PrimitiveResults r = test::RunPrimitives(*backend, in);
  long double dot = 0, sum_abs = 0;
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    EXPECT_EQ(r.fill[i], 3.5);
    EXPECT_EQ(r.copy[i], in.x[i]);
    EXPECT_EQ(r.multiply[i], in.x[i] * in.w[i]);
    EXPECT_EQ(r.axpby_beta0[i], in.alpha * in.x[i]);
    dot += (long double)in.x[i] * in.y[i];
    sum_abs += std::fabs((long double)in.x[i] * in.y[i]);
  }
  // summation error bound gamma_k sum |x_i y_i|, k < 5000 (cpu_backend_test)
  EXPECT_LE(std::fabs(r.dot - dot), 5000 * 1.2e-16 * sum_abs);
  for (Scalar v : r.spmv) EXPECT_FALSE(std::isnan(v));

  // index primitives: scan and stable sort
  std::vector<Index> counts(100);
  std::iota(counts.begin(), counts.end(), 0);
  Array<Index> c(backend.get(), counts), offsets(backend.get(), 100);
  EXPECT_EQ(backend->ExclusiveScan(100, c, &offsets), 4950);
  EXPECT_EQ(offsets.ToHost()[99], 4851);
  Array<std::uint64_t> keys(backend.get(), std::vector<std::uint64_t>{3, 1, 2, 1});
  Array<Index> values(backend.get(), std::vector<Index>{0, 1, 2, 3});
  backend->SortPairs(4, &keys, &values);
  EXPECT_EQ(values.ToHost(), (std::vector<Index>{1, 3, 2, 0}));
}

}  // namespace
}  // namespace condsim::cpu
