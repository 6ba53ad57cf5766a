// Shared fixtures of the COND tests: a one-call solve on a chosen backend, diagonal and
// random SPD systems with contacts.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "condsim/backend.h"
#include "models/cond/cond_solver.h"
#include "models/mass_spring/mass_spring.h"
#include "test_util.h"

namespace condsim::test {

struct Result {
  std::vector<Scalar> v, lambda;
  CondStats stats;
  double consistency = 0;
};

inline Result Solve(const BlockMatrix& a, const std::vector<Scalar>& b, const ContactSet& contacts,
             const CondParams& params, std::vector<Scalar> v0 = {},
             const std::vector<Index>& node_env = {}, int threads = 0,
             BackendChoice choice = BackendChoice::kCpu) {
  BackendOptions o;
  o.cpu_threads = threads;
  auto backend = MakeBackend(choice, o).backend;
  auto da = backend->CreateMatrix(a.pattern);
  da->SetValues(a.values);
  if (v0.empty()) v0.assign(b.size(), 0);
  Array<Scalar> db(backend.get(), b), dv(backend.get(), v0);
  CondSolver solver(backend.get(), params);
  if (!node_env.empty()) solver.SetNodeEnvironments(node_env);
  solver.SetContacts(contacts);
  Result r;
  r.stats = solver.Solve(*da, db, &dv);
  r.v = dv.ToHost();
  r.lambda = solver.Impulses();
  r.consistency = solver.ConsistencyResidual(*da, db, dv);
  return r;
}

inline BlockMatrix DiagonalMatrix(Index nodes, Scalar d) {
  std::vector<std::pair<Index, Index>> coords;
  for (Index i = 0; i < nodes; ++i) coords.push_back({i, i});
  BlockMatrix a(BlockPattern::FromCoordinates(3, nodes, nodes, coords));
  for (Index i = 0; i < nodes; ++i) {
    const Scalar blk[9] = {d, 0, 0, 0, d, 0, 0, 0, d};
    a.AddToBlock(i, i, blk);
  }
  return a;
}

struct RandomProblem {
  BlockMatrix a;
  std::vector<Scalar> b;
  ContactSet contacts;
};

// random SPD A = 2M + random spring network, random b, S-contacts on distinct nodes and
// D-contacts between further distinct pairs (one contact per node: Prop. 3's case)
inline RandomProblem MakeRandomProblem(std::mt19937_64& rng, Index nodes, Index s_contacts, Index d_contacts, Scalar mu) {
  std::uniform_int_distribution<Index> pick(0, nodes - 1);
  std::vector<std::pair<Index, Index>> springs, coords;
  for (Index i = 0; i < nodes; ++i) {
    coords.push_back({i, i});
    for (int k = 0; k < 2; ++k) {
      const Index j = pick(rng);
      if (j != i) springs.push_back({i, j});
    }
  }
  for (auto [i, j] : springs) {
    coords.push_back({i, j});
    coords.push_back({j, i});
  }
  RandomProblem p;
  p.a = BlockMatrix(BlockPattern::FromCoordinates(3, nodes, nodes, coords));
  const auto masses = RandomVector(rng, nodes, 0.5, 2);
  for (Index i = 0; i < nodes; ++i) {
    const Scalar d = 2 * masses[i];
    const Scalar blk[9] = {d, 0, 0, 0, d, 0, 0, 0, d};
    p.a.AddToBlock(i, i, blk);
  }
  for (auto [i, j] : springs) {
    // spring block k d d^T (anisotropic coupling), assembled as [K -K; -K K]
    const auto r = RandomVector(rng, 4);
    const Vec3 d = Normalized(Vec3(r[0], r[1], r[2]));
    const Scalar k = 0.5 + 0.5 * std::fabs(r[3]);
    Scalar blk[9], neg[9];
    for (int x = 0; x < 3; ++x)
      for (int y = 0; y < 3; ++y) {
        blk[3 * x + y] = k * d[x] * d[y];
        neg[3 * x + y] = -blk[3 * x + y];
      }
    p.a.AddToBlock(i, i, blk);
    p.a.AddToBlock(j, j, blk);
    p.a.AddToBlock(i, j, neg);
    p.a.AddToBlock(j, i, neg);
  }
  p.b = RandomVector(rng, 3 * nodes, -1, 1);
  // contacts on a random permutation of the nodes, pushing b against the normals
  std::vector<Index> perm(static_cast<std::size_t>(nodes));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  Index next = 0;
  for (Index s = 0; s < s_contacts; ++s) {
    const auto r = RandomVector(rng, 4);
    const Vec3 n = Normalized(Vec3(r[0], r[1], r[2]));
    const Index i = perm[next++];
    for (int c = 0; c < 3; ++c) p.b[3 * i + c] -= 1.5 * n[c];  // pressed into the contact
    p.contacts.Add(i, -1, ContactFrame(n), 0.1 * r[3], mu, mu);
  }
  for (Index s = 0; s < d_contacts; ++s) {
    const auto r = RandomVector(rng, 4);
    const Vec3 n = Normalized(Vec3(r[0], r[1], r[2]));
    const Index i = perm[next++], j = perm[next++];
    for (int c = 0; c < 3; ++c) {
      p.b[3 * i + c] -= 1.0 * n[c];
      p.b[3 * j + c] += 1.0 * n[c];
    }
    p.contacts.Add(i, j, ContactFrame(n), 0.1 * r[3], mu, mu);
  }
  return p;
}

}  // namespace condsim::test
