// The contacts' colors on the backend: sort, rounds, sort.
#include "models/cond/contact_coloring.h"

#include <algorithm>

#include "models/cond/cond_kernels.h"

namespace condsim {

void ContactColoringDevice::Reserve(Index contacts, Index nodes) {
  Backend* b = backend_;
  keys_.Reserve(b, 2 * contacts);
  node_contact_.Reserve(b, 2 * contacts);
  node_ptr_.Reserve(b, nodes + 1);
  for (Array<Index>* a : {&color_[0], &color_[1], &pending_}) a->Reserve(b, contacts);
  color_ptr_.Reserve(b, std::max(contacts, kReadSlots) + 1);
}

void ContactColoringDevice::Color(const Array<Index>& node_i, const Array<Index>& node_j, Index n, Index nodes,
                                  Array<Index>* order, std::vector<Index>* color_ptr) {
  Backend* b = backend_;
  CONDSIM_CHECK(n >= 0 && n <= node_i.size() && n <= node_j.size(), "contact coloring: " << n << " contacts exceed the node arrays");
  order->Resize(b, n);
  rounds_ = 0;
  covered_ = n > 0 ? nodes : 0;
  if (n == 0) {
    color_ptr->assign(1, 0);
    return;
  }
  // each node's contacts: the contacts' nodes sorted, bounds per node
  keys_.Resize(b, 2 * n);
  node_contact_.Resize(b, 2 * n);
  node_ptr_.Resize(b, nodes + 1);
  kernels_->ContactNodeKey(n, ContactNodeKeyOp{node_i.data(), node_j.data(), keys_.data(), node_contact_.data()});
  b->SortPairs(2 * n, &keys_, &node_contact_);
  kernels_->ContactKeyPtr(nodes + 1, ContactKeyPtrOp{keys_.data(), 2 * n, node_ptr_.data()});
  // kBlindRounds rounds of the greedy coloring, nothing read
  for (Array<Index>* a : {&color_[0], &color_[1], &pending_}) a->Resize(b, n);
  int in = 0;
  auto round = [&] {
    const Index* color_in = rounds_ == 0 ? nullptr : color_[in].data();
    kernels_->ContactColorRound(n, ContactColorRoundOp{node_i.data(), node_j.data(), node_ptr_.data(), node_contact_.data(), color_in,
                                                       color_[1 - in].data(), pending_.data()});
    in = 1 - in;
    ++rounds_;
  };
  while (rounds_ < kBlindRounds) round();
  // the contacts sorted by color (a contact still waiting, color -1, sorts after all) and the
  // bounds of the first kReadSlots colors, read at once: done when they hold every contact
  Index slots = kReadSlots;
  for (;;) {
    kernels_->ContactColorKey(n, ContactColorKeyOp{color_[in].data(), keys_.data(), order->data()});
    b->SortPairs(n, &keys_, order);
    color_ptr_.Resize(b, slots + 1);
    kernels_->ContactKeyPtr(slots + 1, ContactKeyPtrOp{keys_.data(), n, color_ptr_.data()});
    *color_ptr = color_ptr_.ToHost();
    if (color_ptr->back() == n) break;
    // contacts still waiting, or more colors: rounds until none waits (one index read each),
    // then the bounds of every color (at most one per contact)
    for (Index waiting = b->ExclusiveScan(n, pending_, &pending_); waiting > 0; waiting = b->ExclusiveScan(n, pending_, &pending_))
      round();
    slots = n;
  }
  // the colors: up to the first bound at n
  const auto end = std::find(color_ptr->begin(), color_ptr->end(), n);
  color_ptr->erase(end + 1, color_ptr->end());
}

}  // namespace condsim
