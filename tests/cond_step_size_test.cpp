// The Frobenius step size's row sums reused across solves (CondParams::w_reuse_solves, docs/solver.md
// "Step size W"): kept across new values of one matrix, made again for a new pattern, and the
// same fixed point as a fresh W.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "condsim/backend.h"
#include "cond_fixtures.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"
#include "test_util.h"

namespace condsim {
namespace {

using test::MakeRandomProblem;
using test::RandomProblem;
using test::Tight;

// w_reuse_solves (IV-C1: the paper recycles W over several steps, since it changes little and
// does not change the solution): the Frobenius row sums of a solve are kept for k solves of one
// matrix, also across new values, and the fixed point is that of a fresh W. Reference: the same
// sequence with k = 1 (a fresh W each solve: W = Frobenius of the current values, which scale as
// 1 / s when A does) and the tight solve of the new system; a new pattern recomputes at once.
// Before, the sums were keyed on the matrix's generation, which a World's SetPattern changes every
// step, so k had no effect in a World
TEST(CondStepSize, ReusedRowSumsOutliveNewValuesButNotANewPattern) {
  auto rng = test::Rng();
  const RandomProblem p = MakeRandomProblem(rng, 30, 6, 4, 0.3);
  auto backend = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  const auto run = [&](int k) {
    auto a = backend->CreateMatrix(p.a.pattern);
    a->SetValues(p.a.values);
    Array<Scalar> b(backend.get(), p.b), v(backend.get(), std::vector<Scalar>(p.b.size(), 0));
    CondParams params = Tight(1e-11);
    params.w_reuse_solves = k;
    CondSolver solver(backend.get(), params);
    solver.SetContacts(p.contacts);
    std::vector<std::vector<Scalar>> w, sol;
    // solves 1-3: A, then 1.2 A and 1.2 b (the same solution), twice; solve 4: the sums' age is k = 3
    for (int s = 0; s < 4; ++s) {
      if (s == 1) {
        // as a World's step: the system set again with the same pattern (a new generation), new values
        a->SetPattern(p.a.pattern);
        std::vector<Scalar> values = p.a.values, rhs = p.b;
        for (Scalar& x : values) x *= 1.2;
        for (Scalar& x : rhs) x *= 1.2;
        a->SetValues(values);
        b = Array<Scalar>(backend.get(), rhs);
      }
      v.CopyFromHost(std::vector<Scalar>(p.b.size(), 0));
      const CondStats st = solver.Solve(*a, b, &v);
      EXPECT_TRUE(st.converged) << "k " << k << " solve " << s;
      w.push_back(solver.step_weights().ToHost());
      sol.push_back(v.ToHost());
    }
    // a new pattern (one more coupling block, zero): recomputed whatever the age
    std::vector<std::pair<Index, Index>> coords;
    for (Index r = 0; r < p.a.pattern.block_rows; ++r)
      for (Index e = p.a.pattern.row_ptr[r]; e < p.a.pattern.row_ptr[r + 1]; ++e) coords.push_back({r, p.a.pattern.col_idx[e]});
    // the first pair of node 0 with no block yet
    Index c = 1;
    while (std::find(coords.begin(), coords.end(), std::make_pair(Index(0), c)) != coords.end()) ++c;
    EXPECT_LT(c, p.a.pattern.block_rows);
    coords.push_back({0, c});
    coords.push_back({c, 0});
    BlockMatrix wider(BlockPattern::FromCoordinates(3, p.a.pattern.block_rows, p.a.pattern.block_cols, coords));
    for (Index r = 0; r < p.a.pattern.block_rows; ++r)
      for (Index e = p.a.pattern.row_ptr[r]; e < p.a.pattern.row_ptr[r + 1]; ++e) wider.AddToBlock(r, p.a.pattern.col_idx[e], &p.a.values[9 * std::size_t(e)]);
    const std::uint64_t version = a->pattern_version();
    a->SetPattern(wider.pattern);
    EXPECT_NE(a->pattern_version(), version);
    a->SetValues(wider.values);
    b = Array<Scalar>(backend.get(), p.b);
    v.CopyFromHost(std::vector<Scalar>(p.b.size(), 0));
    solver.Solve(*a, b, &v);
    w.push_back(solver.step_weights().ToHost());
    return std::make_pair(w, sol);
  };
  const auto [w1, sol1] = run(1);
  const auto [w3, sol3] = run(3);
  // k = 1: W follows the values (1 / 1.2); k = 3: solves 2 and 3 keep solve 1's W bitwise, solve
  // 4 recomputes it (bitwise k = 1's), and so does the new pattern
  EXPECT_EQ(w3[0], w1[0]);
  EXPECT_EQ(w3[1], w3[0]);
  EXPECT_EQ(w3[2], w3[0]);
  EXPECT_NE(w1[1], w1[0]);
  EXPECT_NEAR(w1[1][0], w1[0][0] / 1.2, 1e-12 * w1[0][0]);
  EXPECT_EQ(w3[3], w1[3]);
  EXPECT_EQ(w3[4], w1[4]);
  // the same solution with the stale W (the tight solve of 1.2 A v = 1.2 b)
  for (int s = 1; s < 4; ++s) EXPECT_LT(test::RelativeError(sol3[std::size_t(s)], sol1[std::size_t(s)]), 1e-8) << "solve " << s;
}

// the Frobenius w per group (FrobeniusGroupOp) with every node its own group given as null arrays
// (CondStepSize::Group when no D-contact links two nodes: nothing uploaded) against the same
// singletons listed, and two nodes of one group listed: bitwise the same w; the pair's w is the
// group's d / s (safeguard off). Reference: the listed groups, exact
TEST(CondStepSize, SingletonGroupsNeedNoArrays) {
  auto rng = test::Rng();
  const Index nodes = 50;
  auto backend = MakeBackend(BackendChoice::kCpu, BackendOptions{1}).backend;
  Backend* be = backend.get();
  const std::vector<Scalar> diag = test::RandomVector(rng, nodes, 1, 2), norm2 = test::RandomVector(rng, nodes, 1, 3),
                            abs = test::RandomVector(rng, nodes, 1, 4);
  Array<Scalar> d(be, diag), n2(be, norm2), a(be, abs);
  auto kernels = MakeKernels<CondKernels>(*be);
  const auto w_of = [&](const std::vector<Index>& ptr, const std::vector<Index>& members, Scalar safeguard) {
    Array<Index> ptr_d(be, ptr), members_d(be, members);
    Array<Scalar> w(be, std::vector<Scalar>(3 * std::size_t(nodes), -1));
    const Index groups = ptr.empty() ? nodes : Index(ptr.size()) - 1;
    kernels->FrobeniusGroups(groups, ptr.empty() ? nullptr : ptr_d.data(), ptr.empty() ? nullptr : members_d.data(), d.data(), n2.data(),
                             a.data(), safeguard, w.data());
    return w.ToHost();
  };
  std::vector<Index> ptr(static_cast<std::size_t>(nodes) + 1), members(static_cast<std::size_t>(nodes));
  for (Index k = 0; k <= nodes; ++k) ptr[std::size_t(k)] = k;
  for (Index k = 0; k < nodes; ++k) members[std::size_t(k)] = k;
  for (Scalar safeguard : {Scalar(0), Scalar(1.9)}) EXPECT_EQ(w_of({}, {}, safeguard), w_of(ptr, members, safeguard)) << safeguard;
  // nodes 3 and 7 in one group: their w is (d3 + d7) / (s3 + s7), the others' unchanged
  std::vector<Index> pair_ptr, pair_members;
  pair_ptr.push_back(0);
  for (Index k = 0; k < nodes; ++k) {
    if (k == 7) continue;
    pair_members.push_back(k);
    if (k == 3) pair_members.push_back(7);
    pair_ptr.push_back(Index(pair_members.size()));
  }
  const std::vector<Scalar> single = w_of({}, {}, 0), pair = w_of(pair_ptr, pair_members, 0);
  for (Index k = 0; k < nodes; ++k) {
    const Scalar expect = k == 3 || k == 7 ? (diag[3] + diag[7]) / (norm2[3] + norm2[7]) : single[3 * std::size_t(k)];
    for (int c = 0; c < 3; ++c) EXPECT_EQ(pair[3 * std::size_t(k) + c], expect) << "node " << k;
  }
}

}  // namespace
}  // namespace condsim
