// Barycentric virtual nodes of the COND loop (docs/solver.md, "Barycentric nodes"): virtual nodes
// inside a triangle or on a segment of deformable hosts (J_a = w_a I, eq. 14-15). The hosts take
// W_o from A without the eq. 15 terms and move with the virtual nodes' contact forces directly;
// each virtual node takes the velocity J v_o + f / kv its hosts give it. Convergence is then
// independent of kv, where a plain diagonal W needs ~kv / (2m/t) iterations.
#pragma once

#include <vector>

#include "models/cond/barycentric_ops.h"
#include "models/cond/cond_context.h"

namespace condsim {

// the virtual nodes as given to CondSolver::SetBarycentricNodes
struct BarycentricNodes {
  std::vector<Index> node;       // the virtual node's global index
  std::vector<Index> ptr{0};     // hosts of virtual node k: host[ptr[k] .. ptr[k+1])
  std::vector<Index> host;
  std::vector<Scalar> weight;    // w_a >= 0, summing to 1 per virtual node
  std::vector<Scalar> kv;        // per virtual node [N s/m]
  Index size() const { return static_cast<Index>(node.size()); }
};

CONDSIM_RECORD_HOST(BarycentricHost, CONDSIM_BARYCENTRIC_FIELDS)
CONDSIM_RECORD_ARRAYS(BarycentricArrays, BarycentricView, CONDSIM_BARYCENTRIC_FIELDS)

class CondBarycentric : public CondComponent {
 public:
  using CondComponent::CondComponent;
  // hosts must not be rigid-group nodes or virtual nodes themselves; returns whether the virtual
  // nodes or their hosts changed (not only the weights and kv). With `source` (the system's
  // virtual nodes on the backend) the record is made there when `nodes` are its barycentric ones
  // (all blocks w I) in its order, else uploaded
  bool Set(const BarycentricNodes& nodes, const VirtualNodesOnBackend* source = nullptr);
  // capacity for the virtual nodes of `bounds` (Array::Reserve)
  void Reserve(const ContactBounds& bounds);
  bool active() const override { return num_nodes_ > 0; }
  // the record on the backend, read back (tests)
  BarycentricHost Download() const {
    BarycentricHost h;
    arrays_.Download(&h);
    return h;
  }
  void Check() const override;
  void MarkOwnGamma(std::vector<unsigned char>* own) const override;
  void MarkContactNodes(std::vector<unsigned char>* contact) const override;
  void MarkContactNodesOnBackend(Array<unsigned char>* contact) const override;
  void OnContacts() override;
  void RowSums(DeviceBlockMatrix& a, const FrobeniusSums& sums) override;
  void SetGamma() override;
  void BeforeSweep(const Array<Scalar>& /*b*/) override { Respond(true); }
  void AfterSweep(const Array<Scalar>& /*b*/) override { Respond(false); }

 private:
  void Respond(bool before_sweep);
  // whether `source` holds nodes as its barycentric virtual nodes (checked on the host's copies)
  static bool Derivable(const BarycentricNodes& nodes, const VirtualNodesOnBackend& source);
  // the record's arrays from `source` on the backend (BarycentricPickOp ... BarycentricTransposeOp)
  void MakeOnBackend(const VirtualNodesOnBackend& source);

  Index num_nodes_ = 0, num_hosts_ = 0, max_node_ = -1;
  BarycentricHost host_;  // hload is made on the backend (OnContacts)
  BarycentricArrays arrays_;
  // MakeOnBackend's and OnContacts' scratch: per virtual node its pick and entries (scanned), per
  // entry its node, sort key and index, the hosts' run heads; the contacts' nodes sorted
  Array<Index> pick_, entries_, owner_, order_, head_, contact_order_;
  Array<std::uint64_t> key_, contact_key_;
};

}  // namespace condsim
