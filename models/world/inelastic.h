// The inelastic stage (restitution 0, models/integrate/midpoint.h): after the midpoint update,
// every pressed contact gets back its mid-step relative velocity along the normal (and, when it
// sticks, along the tangents). One correction for every pair of body kinds: the contact rows
// (relative velocity of the two sides on the base nodes they move with: deformable nodes and the
// hosts of barycentric nodes with their weights, a rigid body's v and omega through the arm)
// join the units they touch (a deformable node; a rigid group's bodies) into components. A
// component with a rigid body takes the least kinetic-energy change dv = M^-1 C^T y meeting all
// its rows at once, the joints' rows with target 0 (least squares when rows are dependent, e.g.
// four corners of a box on a plane); a component of deformable nodes only, the per-contact closed
// form of ApplyInelasticContacts. Equal and opposite impulses on the two sides of every contact:
// the total linear momentum is kept (tests/world_momentum_test.cpp).
#pragma once

#include <memory>
#include <vector>

#include "condsim/contacts.h"
#include "models/world/bodies.h"
#include "models/world/world_kernels.h"

namespace condsim {

class InelasticStage {
 public:
  // the node masses of the deformable parts (once, at the first step)
  void Build(const WorldBodies& w);
  // after Integrate: the step's solution v-hat in w->v (backend) and its rigid part on the host
  // (3 per rigid node); contacts: the step's contacts, record and lambda: the same on the backend
  // with their impulses (3 per contact). Reads back which contacts are pressed (1 B per contact,
  // PressedFlagOp). A pressed S-contact on a deformable node no other pressed contact touches is
  // corrected on the backend (InelasticNodeOp; chosen there by the host's rule, nothing uploaded); for the other pressed
  // contacts their impulses (24 B each, 4 B of indices up; every contact's in one read when they
  // are over half the contacts) and their deformable hosts are read back and written (24 B per
  // node each way, plus 16 B of indices per node uploaded). maker: when some contacts' frames are
  // on the backend only (ContactRecordWriter::Deferred), it completes `contacts` before a pressed
  // one of them is corrected here
  void Run(WorldBodies* w, const ContactSet& contacts, const std::vector<Scalar>& rigid_vhat, const ContactView& record,
           const Scalar* lambda, ContactRecordWriter* maker = nullptr);
  // capacity for the flags and impulses of up to `contacts` contacts
  void Reserve(Backend* backend, Index contacts);
  // tests: every correction on the host (the reference of the backend's)
  void set_host_only(bool on) { host_only_ = on; }
  // how many contacts the last Run corrected on the backend
  Index backend_contacts() const { return static_cast<Index>(buf_.items_host.size()); }

  // the backend side of a step: the touched nodes' indices and velocities
  struct Buffers {
    std::unique_ptr<WorldKernels> kernels;
    Array<Index> idx;        // global node (into w->v), then local node (into its part), per touched node
    Array<Scalar> values;    // gathered v-hat, then v_next (3 each per touched node); v_next back
    std::vector<Index> idx_host;
    std::vector<Scalar> values_host;
    Array<Scalar> mass;      // per base node [kg]
    Array<Index> items;      // per contact, sorted: first those corrected on the backend, by node
    std::vector<Index> items_host, item_part;  // and per part its first item (one more entry)
    // their choice on the backend: per contact its hosts' offset and sort key, the hosts sorted
    Array<Index> host_offset, host_order;
    Array<std::uint64_t> host_key, lone_key;
    Array<unsigned char> pressed;              // per contact: pressed (PressedFlagOp)
    std::vector<unsigned char> pressed_host;
    Array<Index> lambda_idx;                   // the host's pressed contacts
    Array<Scalar> lambda_values;               // and their impulses (3 each)
    std::vector<Index> lambda_idx_host;
    std::vector<Scalar> lambda_values_host;
  };

 private:
  std::vector<Scalar> mass_;  // per base node: lumped mass [kg]; 0 on rigid and rotation nodes
  Buffers buf_;
  bool host_only_ = false;
};

}  // namespace condsim
