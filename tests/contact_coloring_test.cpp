// The contacts' coloring made on the backend (models/cond/contact_coloring.h) against the host's
// greedy coloring in contact order (ColorContacts, core/contacts.cpp), bitwise, and what it moves.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "condsim/backend.h"
#include "condsim/contacts.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"
#include "models/cond/contact_coloring.h"
#include "test_util.h"

namespace condsim {
namespace {

// the contacts' nodes only (the coloring reads nothing else)
ContactSet Nodes(const std::vector<Index>& i, const std::vector<Index>& j) {
  ContactSet c;
  for (std::size_t m = 0; m < i.size(); ++m) c.Add(i[m], j[m], Mat3::Identity(), 0, 0, 0);
  return c;
}

// the rounds the greedy coloring needs in parallel: the longest chain of contacts, each sharing a
// node with the one before and numbered after it
int Depth(const ContactSet& c, Index nodes) {
  std::vector<int> at(std::size_t(nodes), 0);  // per node: the deepest contact so far
  int depth = 0;
  for (Index m = 0; m < c.size(); ++m) {
    const Index i = c.node_i[m], j = c.node_j[m];
    const int d = 1 + std::max(at[std::size_t(i)], j >= 0 ? at[std::size_t(j)] : 0);
    at[std::size_t(i)] = d;
    if (j >= 0) at[std::size_t(j)] = d;
    depth = std::max(depth, d);
  }
  return depth;
}

// colors `c` on a CPU backend of `threads` threads and compares order and bounds with
// ColorContacts; the coloring uploads nothing and, when kBlindRounds rounds suffice and the
// colors fit kReadSlots, reads the bounds once (kReadSlots + 1 indices); else one index more
// per further round (and one to see that none waits) and all the bounds again. Returns the rounds
int ExpectHostColoring(const ContactSet& c, Index nodes, int threads, BackendChoice backend = BackendChoice::kCpu) {
  BackendOptions o;
  o.cpu_threads = threads;
  const std::unique_ptr<Backend> b = MakeBackend(backend, o).backend;
  const std::unique_ptr<CondKernels> k = MakeKernels<CondKernels>(*b);
  const Array<Index> node_i(b.get(), c.node_i), node_j(b.get(), c.node_j);
  ContactColoringDevice coloring(b.get(), k.get());
  Array<Index> order(b.get(), 0);
  std::vector<Index> color_ptr;
  const BackendCounters c0 = b->counters();
  coloring.Color(node_i, node_j, c.size(), nodes, &order, &color_ptr);
  const BackendCounters moved = b->counters() - c0;
  const ContactColoring host = ColorContacts(c, nodes);
  EXPECT_EQ(color_ptr, host.color_ptr) << threads << " threads";
  EXPECT_EQ(order.ToHost(), host.order) << threads << " threads";
  const int depth = Depth(c, nodes), blind = ContactColoringDevice::kBlindRounds;
  const Index slots = ContactColoringDevice::kReadSlots;
  EXPECT_EQ(coloring.rounds(), c.size() == 0 ? 0 : std::max(depth, blind));
  EXPECT_EQ(moved.uploads, 0);
  std::int64_t reads = 0, indices = 0;
  if (c.size() > 0) {
    reads = 1;
    indices = slots + 1;
    if (depth > blind || host.num_colors() > slots) {
      reads += 1 + std::max(depth - blind, 0) + 1;
      indices += 1 + std::max(depth - blind, 0) + c.size() + 1;
    }
  }
  EXPECT_EQ(moved.downloads, reads);
  EXPECT_EQ(moved.download_bytes, std::int64_t(sizeof(Index)) * indices);
  return coloring.rounds();
}

// 3000 random S- and D-contacts on `nodes` nodes, each contact's nodes distinct
ContactSet RandomContacts(std::mt19937_64& rng, Index nodes) {
  std::uniform_int_distribution<Index> node(0, nodes - 1);
  std::bernoulli_distribution s_contact(0.4);
  std::vector<Index> i, j;
  for (Index m = 0; m < 3000; ++m) {
    const Index a = node(rng);
    Index other = node(rng);
    while (other == a) other = node(rng);
    i.push_back(a);
    j.push_back(s_contact(rng) ? -1 : other);
  }
  return Nodes(i, j);
}

// random contacts on few nodes (60: up to ~20 contacts a node, many colors, several rounds), on
// 1 and 2 threads
TEST(ContactColoring, BackendColorsEqualTheHostGreedyColoring) {
  auto rng = test::Rng();
  for (const Index nodes : {60, 400, 5000}) {
    const ContactSet c = RandomContacts(rng, nodes);
    for (int threads : {1, 2}) {
      const int rounds = ExpectHostColoring(c, nodes, threads);
      if (nodes == 60) {
        EXPECT_GT(rounds, ContactColoringDevice::kBlindRounds);  // the case is not trivial
      }
    }
  }
}

// the edge cases: no contacts (nothing read); a chain of 2 (within the blind rounds: one read);
// one node with 40 contacts (40 colors, past the first read's kReadSlots; 40 rounds); a chain
// where each contact shares a node with the one before (every round colors one contact);
// contacts numbered against the nodes' order
TEST(ContactColoring, StarsChainsAndNoContacts) {
  for (int threads : {1, 2}) {
    EXPECT_EQ(ExpectHostColoring(ContactSet(), 1, threads), 0);
    EXPECT_EQ(ExpectHostColoring(Nodes({0, 2, 1}, {1, 3, 2}), 4, threads), ContactColoringDevice::kBlindRounds);
    std::vector<Index> i, j;
    for (Index m = 0; m < 40; ++m) {
      i.push_back(7);
      j.push_back(m % 3 == 0 ? -1 : 8 + m);
    }
    EXPECT_EQ(ExpectHostColoring(Nodes(i, j), 60, threads), 40);
    i.clear();
    j.clear();
    for (Index m = 0; m < 30; ++m) {
      i.push_back(100 - m);
      j.push_back(99 - m);
    }
    EXPECT_EQ(ExpectHostColoring(Nodes(i, j), 101, threads), 30);
  }
}

// the same on the CUDA backend (its radix sort and launches): ColorContacts' order, bitwise, and
// the same transfers
TEST(ContactColoring, CudaColorsEqualTheHostGreedyColoring) {
  CONDSIM_REQUIRE_CUDA_OR_SKIP();
  auto rng = test::Rng();
  for (const Index nodes : {60, 400, 5000}) ExpectHostColoring(RandomContacts(rng, nodes), nodes, 1, BackendChoice::kCuda);
  ExpectHostColoring(ContactSet(), 1, 1, BackendChoice::kCuda);
}

// the contact step's node flags made on the backend from the coloring's nodes (ContactNodeFlagOp,
// CondSolver::PrepareContacts) against the host's loop over the contacts plus a component's listed
// nodes (barycentric hosts), bitwise, on 1 and 2 threads; nodes past the contacts' and listed
// nodes past A's nodes included
TEST(ContactColoring, ContactNodeFlagsEqualTheHostFlags) {
  auto rng = test::Rng();
  const Index covered = 700, nodes = 900;
  std::uniform_int_distribution<Index> node(0, covered - 1);
  std::vector<Index> i, j;
  for (Index m = 0; m < 400; ++m) {
    const Index a = node(rng);
    i.push_back(a);
    j.push_back(m % 3 == 0 ? -1 : (a + 1 + node(rng) % (covered - 1)) % covered);
  }
  const ContactSet c = Nodes(i, j);
  const std::vector<Index> listed{3, 650, 720, 899, 950};  // 950: not a node of A
  std::vector<unsigned char> host(std::size_t(nodes), 0);
  for (Index m = 0; m < c.size(); ++m) {
    host[std::size_t(i[std::size_t(m)])] = 1;
    if (j[std::size_t(m)] >= 0) host[std::size_t(j[std::size_t(m)])] = 1;
  }
  for (Index k : listed)
    if (k < nodes) host[std::size_t(k)] = 1;
  for (int threads : {1, 2}) {
    BackendOptions o;
    o.cpu_threads = threads;
    const std::unique_ptr<Backend> b = MakeBackend(BackendChoice::kCpu, o).backend;
    const std::unique_ptr<CondKernels> k = MakeKernels<CondKernels>(*b);
    const Array<Index> node_i(b.get(), c.node_i), node_j(b.get(), c.node_j), listed_d(b.get(), listed);
    ContactColoringDevice coloring(b.get(), k.get());
    Array<Index> order(b.get(), 0);
    std::vector<Index> color_ptr;
    coloring.Color(node_i, node_j, c.size(), covered, &order, &color_ptr);
    Array<unsigned char> flag(b.get(), nodes);
    k->ContactNodeFlag(nodes, ContactNodeFlagOp{coloring.node_ptr().data(), coloring.covered(), nullptr, 0, false, flag.data()});
    k->ContactNodeFlag(Index(listed.size()), ContactNodeFlagOp{nullptr, 0, listed_d.data(), nodes, true, flag.data()});
    EXPECT_EQ(flag.ToHost(), host) << threads << " threads";
  }
}

// the solver's SetContacts moves the contact record (one upload) and reads the colors' bounds
// (one download of kReadSlots + 1 indices); before, it also uploaded the colored order made on
// the host (4 B per contact)
TEST(ContactColoring, SetContactsUploadsTheRecordOnly) {
  // 300 contacts on 200 nodes i (100 of them with two: two colors, two rounds), the D-contacts'
  // nodes j apart
  std::vector<Index> i, j;
  for (Index m = 0; m < 300; ++m) {
    i.push_back(m % 200);
    j.push_back(m % 2 == 0 ? -1 : 1000 + m);
  }
  const ContactSet c = Nodes(i, j);
  const std::unique_ptr<Backend> b = MakeBackend(BackendChoice::kCpu, BackendOptions()).backend;
  CondSolver solver(b.get(), CondParams());
  solver.SetContacts(c);  // the first call sizes the arrays
  const BackendCounters c0 = b->counters();
  solver.SetContacts(c);
  const BackendCounters moved = b->counters() - c0;
  EXPECT_EQ(moved.uploads, 1);
  EXPECT_EQ(moved.allocations, 0);
  EXPECT_EQ(moved.downloads, 1);
  EXPECT_EQ(moved.download_bytes, std::int64_t(sizeof(Index)) * (ContactColoringDevice::kReadSlots + 1));
}

}  // namespace
}  // namespace condsim
