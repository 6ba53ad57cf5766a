// Virtual nodes (paper Sec. III-A2, eq. 14-15): a massless node tied to host nodes by the damper
//   f_v = -kv (Jv v-hat - v-hat_v),   Jv = [J_1 .. J_k]  (one 3x3 block per host node)   (eq. 14)
// so that a contact at a point that is not a node (a point on a rigid body: J = [I, -[r]x];
// a point inside a triangle or segment: J_a = w_a I) becomes a plain nodal contact. The system
// grows to eq. 15:  A = [[A_o + kv Jv^T Jv, -kv Jv^T], [-kv Jv, kv I]],  b = [b_o; 0].
#pragma once

#include <vector>

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

// what one step's contacts can need at most, known at the first step (World::Step: from the
// scene's potential contact points), so that the arrays sized by the contacts reserve it once
// (Array::Reserve) and no later step allocates
struct ContactBounds {
  Index contacts = 0;         // contacts of a step
  Index virtual_nodes = 0;    // virtual nodes (at most 2 per contact)
  Index virtual_entries = 0;  // their hosts (2 for a rigid point or a link's point, 3 for a triangle's)
  Index terms = 0;            // their entries in the system's eq. 15 terms, (h + 1)^2 for h hosts:
                              // J^T J (h x h), -J^T, -J, I
  Index rigid_bodies = 0;     // rigid bodies (the rigid groups' size)
};

struct VirtualNodeSet {
  std::vector<Index> ptr{0};     // virtual node k's hosts are entries ptr[k] .. ptr[k+1)
  std::vector<Index> host;       // host node of an entry (global node numbering)
  std::vector<Scalar> jac;       // 9 per entry: J_a, row-major
  std::vector<Scalar> kv;        // gain per virtual node [N s/m]
  std::vector<Index> env;        // environment per virtual node

  Index size() const { return static_cast<Index>(kv.size()); }
  Index num_entries() const { return static_cast<Index>(host.size()); }
  void Clear() { *this = VirtualNodeSet(); }
  // appends a virtual node with hosts h[0..n) and blocks j[0..n); returns its index
  Index Add(Index n, const Index* h, const Mat3* j, Scalar gain, Index env_id = 0);
  // a point p on a rigid body with velocity nodes `trans` (v) and `rot` (omega, world frame),
  // r = p - x_com: the point moves with v + omega x r, so J = [I, -[r]x]
  Index AddRigidPoint(Index trans, Index rot, const Vec3& r, Scalar gain, Index env_id = 0);
  // a point with barycentric weights w over n nodes (triangle, segment): J_a = w_a I
  Index AddBarycentric(Index n, const Index* nodes, const Scalar* w, Scalar gain, Index env_id = 0);
};

// a virtual node set as the backend holds it (SystemMatrix::virtual_nodes_on_backend, valid until
// its next SetVirtualNodes or Reserve): the hosts, each entry's Jacobian block in its compact form (kind 0:
// J = w I with w = param[offset[e]]; kind 1: J = -[r]x with r = param[offset[e] ..]; null when
// the blocks went up whole) and the gains; `set` is the host's copy of the same set and the
// *_host vectors the compact form there (what the arrays hold, to check against without a read)
struct VirtualNodesOnBackend {
  const VirtualNodeSet* set = nullptr;
  const std::vector<unsigned char>* kind_host = nullptr;
  const std::vector<Index>* offset_host = nullptr;
  const std::vector<Scalar>* param_host = nullptr;
  Index base_nodes = 0;
  const Index* ptr = nullptr;
  const Index* host = nullptr;
  const unsigned char* kind = nullptr;
  const Index* offset = nullptr;
  const Scalar* param = nullptr;
  const Scalar* kv = nullptr;
};

}  // namespace condsim
