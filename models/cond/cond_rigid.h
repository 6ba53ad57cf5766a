// Rigid groups of the COND loop (docs/solver.md, "Rigid groups"): the velocity nodes (v, omega)
// of rigid bodies coupled by joints (one body when it has none) and the virtual nodes on them
// (eq. 15, J = [I, -[r]x], gain kv). The group's contact-free nodes take the exact answer to the
// current contact forces, v_o = A_o^-1 (b_o + J^T f), and each virtual node the velocity it then
// has, J v_o + f / kv; the contact step stays diagonal with Gamma = d_v, the largest absolute row
// sum of the group's J A_o^-1 J^T + I / kv (a majorant, so the contacts of one group converge
// like a projected Jacobi on its Delassus operator, at a rate independent of kv and of the joint
// stiffness). A plain diagonal W would need ~kv / (2m/t) iterations to move a body with its
// virtual nodes. With CondParams::rigid_sweeps, a group whose contacts all go to deformable
// bodies or the static world solves the deformable ones by repeated Gauss-Seidel sweeps with v_o
// kept exact (RigidContactSweepOp), which removes that Jacobi rate.
#pragma once

#include <utility>
#include <vector>

#include "models/cond/cond_context.h"
#include "models/cond/rigid_ops.h"

namespace condsim {

// the groups as given to CondSolver::SetRigidGroups
struct RigidGroups {
  std::vector<Index> trans, rot;   // velocity nodes of each body
  std::vector<Index> body_ptr{0};  // group g: bodies body_ptr[g] .. body_ptr[g+1) (at most
                                   // kMaxRigidGroupBodies)
  std::vector<Scalar> ao_inv;      // per group, (6 n_g)^2: inverse of the group's block of A (A
                                   // without the virtual-node terms; v, omega per body), row-major
  std::vector<Index> ptr{0};       // virtual nodes of body k: node[ptr[k] .. ptr[k+1])
  std::vector<Index> node;
  std::vector<Scalar> arm;         // 3 per virtual node: contact point - centre of mass [m]
  std::vector<Scalar> kv;          // per virtual node [N s/m]
  Index size() const { return static_cast<Index>(body_ptr.size()) - 1; }
  Index num_bodies() const { return static_cast<Index>(trans.size()); }
};

CONDSIM_RECORD_HOST(RigidGroupHost, CONDSIM_RIGID_GROUP_FIELDS)
CONDSIM_RECORD_ARRAYS(RigidGroupArrays, RigidGroupView, CONDSIM_RIGID_GROUP_FIELDS)
CONDSIM_RECORD_HOST(RigidContactHost, CONDSIM_RIGID_CONTACT_FIELDS)
CONDSIM_RECORD_ARRAYS(RigidContactArrays, RigidContactView, CONDSIM_RIGID_CONTACT_FIELDS)

class CondRigidGroups : public CondComponent {
 public:
  using CondComponent::CondComponent;
  // the virtual nodes must not be in chains. With `source` (the system's virtual nodes on the
  // backend) the groups' virtual nodes, arms and gains are made there when they are its rigid
  // points (RigidPointKeyOp, RigidPointFillOp), the rest uploaded; else all uploaded
  void Set(const RigidGroups& groups, const VirtualNodesOnBackend* source = nullptr);
  // tests: the record on the backend, read back
  RigidGroupHost Download() const {
    RigidGroupHost h;
    arrays_.Download(&h);
    return h;
  }
  // capacity for the contacts and virtual nodes of `bounds` (Array::Reserve)
  void Reserve(const ContactBounds& bounds);
  bool active() const override { return num_groups_ > 0; }
  void Check() const override;
  void MarkOwnGamma(std::vector<unsigned char>* own) const override;
  // the groups' own contacts, d_v, and the diagonal solve's order of the other contacts
  void OnContacts() override;
  void SetGamma() override;
  void BeforeSweep(const Array<Scalar>& b) override { Respond(b, true); }
  void AfterSweep(const Array<Scalar>& b) override { Respond(b, false); }
  // the contacts the diagonal solve takes: every color less the groups' own contacts
  bool has_own_contacts() const { return num_groups_ > 0 && num_own_contacts_ > 0; }
  const std::vector<Index>& sweep_color_ptr() const { return sweep_color_ptr_; }
  const Array<Index>& sweep_order() const { return sweep_order_; }
  // Gauss-Seidel over the groups' own contacts after the diagonal solve (RigidContactSweepOp)
  void SweepOwnContacts(const Array<Scalar>& b);

 private:
  // per group: (contact, virtual-node slot) of the contacts its sweeps take
  std::vector<std::vector<std::pair<Index, Index>>> ClaimOwnContacts() const;
  // d_v of every virtual node (Gamma on its contacts), given which nodes the sweeps take
  void GammaBounds(const std::vector<unsigned char>& swept);
  void Respond(const Array<Scalar>& b, bool before_sweep);
  // whether the backend's rule (RigidPointKeyOp) gives the groups' virtual nodes, arms and gains
  // from `source`, checked on the host's copies; sets the slot map (slot_of_host_, slot_first_)
  bool Derivable(const RigidGroups& g, const VirtualNodesOnBackend& source);

  Index num_groups_ = 0, max_node_ = -1;
  RigidGroupHost host_;
  RigidGroupArrays arrays_;
  std::vector<Index> slot_body_, slot_group_;  // per virtual-node slot: its body in the group, its group
  Array<Scalar> d_;                            // d_v per virtual node
  Array<Scalar> v_o_;                          // 6 per body: RigidContactSweepOp's scratch
  RigidContactArrays own_;
  Index num_own_contacts_ = 0;
  std::vector<Index> sweep_color_ptr_;
  Array<Index> sweep_order_;
  // the virtual nodes made on the backend: per node from slot_first_ the body slot whose v node
  // it is (uploaded when it changes), per virtual node its sort key and index
  std::vector<Index> slot_of_host_, slot_of_uploaded_;
  Index slot_first_ = 0;
  Array<Index> slot_of_, point_order_;
  Array<std::uint64_t> point_key_;
};

}  // namespace condsim
