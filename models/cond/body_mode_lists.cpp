// COND body modes: the record's per-node and per-contact lists made on the backend from the
// contact step's node flags and the contacts' nodes (docs/architecture.md "Device-resident step"),
// bitwise CondBodyModes::SelectPatches' and Coupling's and Prepare's gate lists.
#include "models/cond/cond_body_modes.h"

#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"

namespace condsim {

bool CondBodyModes::ListableOnBackend() const {
  if (free_ || admitted_ > 0) return false;
  for (Index i : modes_.node)
    if (ctx_->own_gamma_host[std::size_t(i)]) return false;
  return true;
}

void CondBodyModes::MakeListOnBackend() {
  Backend* b = ctx_->backend;
  const Index entries = static_cast<Index>(modes_.node.size()), patches = modes_.size();
  if (!set_on_backend_) {
    set_node_.Assign(b, modes_.node);
    set_ptr_.Assign(b, modes_.ptr);
    set_on_backend_ = true;
  }
  keep_.Resize(b, entries + 1);
  ctx_->kernels->Run(patches + 1, BodyModeKeepOp{set_ptr_.data(), set_node_.data(), ctx_->in_contact.data(), patches, entries,
                                                 kMinPatchNodes, keep_.data()});
  b->ExclusiveScanOnBackend(entries + 1, keep_, &keep_);
  arrays_.node.Resize(b, listed_);
  ctx_->kernels->Run(entries, BodyModeListOp{set_node_.data(), keep_.data(), arrays_.node.data()});
}

void CondBodyModes::MakeHaloOnBackend(DeviceBlockMatrix& a, Index halo) {
  // per node a flag (BodyModeHaloFlagOp), its scan, the flagged nodes in node order
  Backend* b = ctx_->backend;
  halo_flag_.Resize(b, ctx_->nodes + 1);
  ctx_->kernels->Run(ctx_->nodes + 1, BodyModeHaloFlagOp{arrays_.node_patch.data(), ctx_->in_contact.data(), a.row_ptr().data(),
                                                         a.col_idx().data(), ctx_->nodes, halo_flag_.data()});
  b->ExclusiveScanOnBackend(ctx_->nodes + 1, halo_flag_, &halo_flag_);
  arrays_.halo.Resize(b, halo);
  ctx_->kernels->Run(ctx_->nodes, BodyModeHaloListOp{halo_flag_.data(), arrays_.halo.data()});
}

void CondBodyModes::MakeGatesOnBackend(Index entries) {
  // two keys per contact (BodyModeGateKeyOp), sorted: the first `entries` are the gates
  Backend* b = ctx_->backend;
  const Index contacts = ctx_->contacts_host.size();
  gate_key_.Resize(b, 2 * contacts);
  gate_order_.Resize(b, 2 * contacts);
  if (contacts > 0) {
    ctx_->kernels->Run(contacts, BodyModeGateKeyOp{ctx_->contacts.node_i.data(), ctx_->contacts.node_j.data(), arrays_.node_patch.data(),
                                                   gate_key_.data(), gate_order_.data()});
    b->SortPairs(2 * contacts, &gate_key_, &gate_order_);
  }
  arrays_.gate_contact.Resize(b, entries);
  ctx_->kernels->Run(entries, BodyModeGateListOp{gate_key_.data(), arrays_.gate_contact.data()});
}

}  // namespace condsim
