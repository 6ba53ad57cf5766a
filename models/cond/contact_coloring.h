// The contacts' colors made on the backend from the contacts' nodes there (contact_color_ops.h):
// the order of ColorContacts (core/contacts.cpp), bitwise, with nothing uploaded and, when
// kBlindRounds rounds color every contact (rounds: the longest chain of contacts that share
// nodes) in at most kReadSlots colors, one read: the colors' bounds (kReadSlots + 1 indices).
// Otherwise one more index read per round until none waits, and all the bounds again.
#pragma once

#include <cstdint>
#include <vector>

#include "condsim/backend.h"

namespace condsim {

class CondKernels;

class ContactColoringDevice {
 public:
  // rounds run before anything is read; colors whose bounds the first read holds
  static constexpr int kBlindRounds = 4;
  static constexpr Index kReadSlots = 32;
  ContactColoringDevice(Backend* backend, CondKernels* kernels) : backend_(backend), kernels_(kernels) {}
  // capacity for `contacts` contacts on `nodes` nodes (Array::Reserve)
  void Reserve(Index contacts, Index nodes);
  // colors the contacts of node_i / node_j (n each, nodes below `nodes`): order gets the
  // contacts color by color (n entries), color_ptr the colors' bounds (colors + 1)
  void Color(const Array<Index>& node_i, const Array<Index>& node_j, Index n, Index nodes, Array<Index>* order,
             std::vector<Index>* color_ptr);
  // rounds of the last Color (kBlindRounds, or more when its contacts needed more)
  int rounds() const { return rounds_; }
  // the last Color's nodes: node k's contacts are node_contact()[node_ptr()[k] .. node_ptr()[k + 1])
  // for k below covered() (its `nodes`; 0 without contacts)
  const Array<Index>& node_ptr() const { return node_ptr_; }
  const Array<Index>& node_contact() const { return node_contact_; }
  Index covered() const { return covered_; }

 private:
  Backend* backend_;
  CondKernels* kernels_;
  Array<std::uint64_t> keys_;           // the nodes' keys (2 per contact), then the colors'
  Array<Index> node_contact_, node_ptr_;  // each node's contacts, ascending
  Array<Index> color_[2], pending_;      // per contact
  Array<Index> color_ptr_;               // the colors' bounds
  int rounds_ = 0;
  Index covered_ = 0;
};

}  // namespace condsim
