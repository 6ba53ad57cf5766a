// Device functors of the global system (models/system/system_matrix.h).
#pragma once

#include "condsim/core.h"
#include "condsim/math.h"

namespace condsim {

// copies block k of a part's matrix to block dst_block[k] of the global matrix
struct ScatterBlocksOp {
  const Scalar* src;
  const Index* dst_block;
  Scalar* dst;
  CONDSIM_HD void operator()(Index k) const {
    const Scalar* s = src + 9 * std::int64_t(k);
    Scalar* d = dst + 9 * std::int64_t(dst_block[k]);
    for (int e = 0; e < 9; ++e) d[e] = s[e];
  }
};

// kinds of virtual-node terms of eq. 15 added to a global block
enum VirtualTerm : int { kJtJ = 0, kMinusJt = 1, kMinusJ = 2, kIdentity = 3 };

// adds the eq. 15 terms to target block t: the sum, in a fixed order, of
//   kv J_a^T J_b (host-host), -kv J_a^T (host row, virtual column), -kv J_a (virtual row, host
//   column) and kv I (virtual diagonal) over the contributions term_ptr[t] .. term_ptr[t+1)
struct VirtualBlocksOp {
  const Index* target_block;
  const Index* term_ptr;
  const int* term_kind;
  const Index* term_a;   // entry index (Jacobian block) a, or the virtual node for kIdentity
  const Index* term_b;   // entry index b (kJtJ only)
  const Index* term_vn;  // virtual node of the term (its gain)
  const Scalar* jac;
  const Scalar* kv;
  Scalar* dst;
  CONDSIM_HD void operator()(Index t) const {
    Mat3 sum;
    for (Index e = term_ptr[t]; e < term_ptr[t + 1]; ++e) {
      const Scalar k = kv[term_vn[e]];
      switch (term_kind[e]) {
        case kJtJ:
          sum = sum + k * (Transpose(LoadMat3(jac, term_a[e])) * LoadMat3(jac, term_b[e]));
          break;
        case kMinusJt:
          sum = sum - k * Transpose(LoadMat3(jac, term_a[e]));
          break;
        case kMinusJ:
          sum = sum - k * LoadMat3(jac, term_a[e]);
          break;
        default:
          sum = sum + k * Mat3::Identity();
          break;
      }
    }
    Scalar* d = dst + 9 * std::int64_t(target_block[t]);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) d[3 * i + j] += sum(i, j);
  }
};

// v_v = Jv v_o for every virtual node (the warm start of Sec. V-A5); virtual node k is global
// node first_virtual + k
struct VirtualWarmStartOp {
  const Index* ptr;
  const Index* host;
  const Scalar* jac;
  Index first_virtual;
  Scalar* v;
  CONDSIM_HD void operator()(Index k) const {
    Vec3 sum;
    for (Index e = ptr[k]; e < ptr[k + 1]; ++e) sum += LoadMat3(jac, e) * LoadVec3(v, host[e]);
    StoreVec3(v, first_virtual + k, sum);
  }
};

}  // namespace condsim
