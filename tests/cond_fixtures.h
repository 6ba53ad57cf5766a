// Shared fixtures of the COND tests: a one-call solve on a chosen backend, diagonal and
// random SPD systems with contacts.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "condsim/backend.h"
#include "condsim/batch.h"
#include "models/cond/cond_solver.h"
#include "fixtures/mass_spring.h"
#include "test_util.h"

#include <Eigen/Dense>

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

// parameters converging far (theta_th = theta, up to 200000 iterations)
inline CondParams Tight(double theta = 1e-12) {
  CondParams p;
  p.theta_threshold = theta;
  p.max_iterations = 200000;
  return p;
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

inline Eigen::MatrixXd DenseA(const BlockMatrix& a) {
  const BlockPattern& p = a.pattern;
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(p.rows(), p.cols());
  for (Index r = 0; r < p.block_rows; ++r)
    for (Index k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) d(3 * r + i, 3 * p.col_idx[k] + j) = a.Block(k)[3 * i + j];
  return d;
}

inline Eigen::MatrixXd DenseJc(const ContactSet& c, Index nodes) {
  Eigen::MatrixXd j = Eigen::MatrixXd::Zero(3 * c.size(), 3 * nodes);
  for (Index m = 0; m < c.size(); ++m) {
    const Mat3 r = c.Frame(m);
    for (int x = 0; x < 3; ++x)
      for (int y = 0; y < 3; ++y) {
        j(3 * m + x, 3 * c.node_i[m] + y) = r(x, y);
        if (c.node_j[m] >= 0) j(3 * m + x, 3 * c.node_j[m] + y) = -r(x, y);
      }
  }
  return j;
}

// random problems packed block-diagonally in one system (PackBlockDiagonal): environment e's
// nodes after the earlier environments' ones, its contacts shifted with them
struct PackedProblems {
  PackedBatch packed;
  std::vector<Scalar> b;
  std::vector<Index> node_env;
  ContactSet contacts;
};

inline PackedProblems PackProblems(const std::vector<RandomProblem>& envs) {
  PackedProblems out;
  std::vector<BlockMatrix> mats;
  Index first = 0;
  for (std::size_t e = 0; e < envs.size(); ++e) {
    mats.push_back(envs[e].a);
    out.b.insert(out.b.end(), envs[e].b.begin(), envs[e].b.end());
    const Index nodes = static_cast<Index>(envs[e].b.size() / 3);
    for (Index k = 0; k < nodes; ++k) out.node_env.push_back(Index(e));
    const ContactSet& c = envs[e].contacts;
    for (Index m = 0; m < c.size(); ++m)
      out.contacts.Add(c.node_i[m] + first, c.node_j[m] < 0 ? -1 : c.node_j[m] + first, c.Frame(m), c.phi[m], c.mu1[m], c.mu2[m],
                       Index(e));
    first += nodes;
  }
  out.packed = PackBlockDiagonal(mats);
  return out;
}

// projected Gauss-Seidel with the strict operator on the Delassus operator: its fixed points
// satisfy eq. 11 (the reference of the acceptance criteria), run to 1e-13
inline std::vector<Scalar> ReferencePgs(const Eigen::MatrixXd& delassus, const Eigen::VectorXd& free, const ContactSet& c) {
  const Index nc = c.size();
  Eigen::VectorXd l = Eigen::VectorXd::Zero(3 * nc);
  for (int sweep = 0; sweep < 200000; ++sweep) {
    double change = 0;
    for (Index m = 0; m < nc; ++m) {
      const Eigen::VectorXd zeta = delassus.middleRows(3 * m, 3) * l + free.segment(3 * m, 3);
      const double d = delassus.block(3 * m, 3 * m, 3, 3).eigenvalues().real().maxCoeff();
      const Vec3 trial(l[3 * m] - zeta[0] / d, l[3 * m + 1] - zeta[1] / d, l[3 * m + 2] - zeta[2] / d);
      const Vec3 p = ProjectStrict(trial, c.mu1[m]);
      for (int x = 0; x < 3; ++x) {
        change = std::max(change, std::fabs(p[x] - l[3 * m + x]));
        l[3 * m + x] = p[x];
      }
    }
    if (change < 1e-14) break;
  }
  return std::vector<Scalar>(l.data(), l.data() + l.size());
}

}  // namespace condsim::test
