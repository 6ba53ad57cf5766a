// What the COND loop and its components share (docs/solver.md, "Structure"): the backend and
// launches, the node and environment layout of the current A, the contacts with their colors
// and impulses, and the per-DOF vectors of an iteration. The solver owns it; each component
// (step size, chains, rigid groups, barycentric nodes, body modes) reads it and owns its own
// arrays.
#pragma once

#include <vector>

#include "condsim/backend.h"
#include "condsim/contacts.h"
#include "condsim/record_arrays.h"
#include "models/system/virtual_nodes.h"

namespace condsim {

class CondKernels;
struct CondParams;

CONDSIM_RECORD_ARRAYS(ContactArrays, ContactView, CONDSIM_CONTACT_FIELDS)

struct CondContext {
  Backend* backend = nullptr;
  CondKernels* kernels = nullptr;
  const CondParams* params = nullptr;
  // nodes of A and their environments; DOF ranges per environment in the DOF order grouped by
  // environment (env_perm: that order's DOFs, empty when the nodes are already grouped)
  Index nodes = 0;
  Index num_envs = 1;
  std::vector<Index> node_env_host;
  Array<Index> node_env, env_perm;
  SegmentOffsets dof_offsets;
  Array<Scalar> perm_x, perm_y;     // scratch of EnvDot
  Array<unsigned char> env_active;  // per environment: still iterating
  std::vector<unsigned char> env_enabled;  // per environment: iterated at all (SetEnabledEnvironments)
  // the contacts, colored (no two contacts of a color share a node: ColorContacts' order, made on
  // the backend; the colors' bounds on the host for the launches), and their impulses
  ContactSet contacts_host;
  // per contact 1 when its frame and phi are on the backend only (ContactRecordWriter::Deferred)
  std::vector<unsigned char> contacts_backend_only;
  ContactArrays contacts;
  std::vector<Index> color_ptr;
  Array<Index> order;
  Array<Scalar> lambda;  // 3 per contact (n, t1, t2)
  // per DOF: W (a diagonal), r = A v - b, the iterate u being built, and the contact forces
  // Jc^T lambda before (f) and after (f_new) the contact sweeps
  Array<Scalar> w, r, u, f, f_new;
  // per node: nodes the contact step touches (contact nodes and barycentric hosts): they keep
  // the scalar w (chains) and stay out of the body modes
  std::vector<unsigned char> in_contact_host;
  Array<unsigned char> in_contact;
  // per node: virtual nodes with their own Gamma (rigid groups, barycentric nodes)
  std::vector<unsigned char> own_gamma_host;

  // out[e] = x . y over environment e's DOFs, summed in DOF order (bitwise what one
  // environment alone gives)
  void EnvDot(const Array<Scalar>& x, const Array<Scalar>& y, Array<Scalar>* out);
  // out += Jc^T lambda (eq. 1), or W Jc^T lambda (eq. 24) with weights = w, color by color
  void AddContactForces(const Scalar* weights, const Array<Scalar>& lambda, Array<Scalar>* out);
};

// A's per-node sums of the Frobenius step size (per node: the diagonal, the squared row norms, the
// largest absolute row sum; FrobeniusNodeOp)
struct FrobeniusSums {
  Scalar* diag_sum;
  Scalar* row_norm2;
  Scalar* row_abs;
};

// a mechanism of the solver with its own arrays; the solver calls the hooks in this order
class CondComponent {
 public:
  explicit CondComponent(CondContext* ctx) : ctx_(ctx) {}
  virtual ~CondComponent() = default;
  CondComponent(const CondComponent&) = delete;
  CondComponent& operator=(const CondComponent&) = delete;

  // whether it has anything to do
  virtual bool active() const = 0;
  // checks against the prepared A (node ranges, the step size it needs); throws condsim::Error
  virtual void Check() const {}
  // per new contact set or node layout: virtual nodes with their own Gamma (never merged into
  // a Frobenius group), then nodes the contact step touches, then its own contact data
  virtual void MarkOwnGamma(std::vector<unsigned char>* /*own*/) const {}
  virtual void MarkContactNodes(std::vector<unsigned char>* /*contact*/) const {}
  // the same nodes in the backend's flags (CondContext::in_contact)
  virtual void MarkContactNodesOnBackend(Array<unsigned char>* /*contact*/) const {}
  virtual void OnContacts() {}
  // per new W: its nodes' rows of A in the Frobenius sums, then W (Gamma) on its own nodes
  virtual void RowSums(DeviceBlockMatrix& /*a*/, const FrobeniusSums& /*sums*/) {}
  virtual void SetGamma() {}
  // per solve, after W
  virtual void Prepare(DeviceBlockMatrix& /*a*/) {}
  // per iteration: answer the contact forces f before the contact sweeps, f_new after them
  virtual void BeforeSweep(const Array<Scalar>& /*b*/) {}
  virtual void AfterSweep(const Array<Scalar>& /*b*/) {}

 protected:
  CondContext* ctx_;
};

}  // namespace condsim
