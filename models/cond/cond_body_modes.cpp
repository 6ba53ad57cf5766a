// COND body modes: the exact correction of deformable bodies' patch motions (docs/solver.md,
// "Body modes").
#include "models/cond/cond_body_modes.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "condsim/error.h"
#include "models/cond/body_mode_internal.h"
#include "models/cond/cond_kernels.h"
#include "models/cond/cond_solver.h"

namespace condsim {

CondBodyModes::CondBodyModes(CondContext* ctx) : CondComponent(ctx) {}
CondBodyModes::~CondBodyModes() = default;

Index MakeRowsOfT(CondKernels& k, Backend* b, BodyModeArrays* arrays, Index listed, Index rows, Index nodes, const Index* row_ptr,
                  const Index* col_idx, const Index* node_row, Array<Index>* offset) {
  arrays->t_ptr.Resize(b, rows);
  arrays->t_end.Resize(b, rows);
  BodyModeCouplingOp coupling{arrays->view(), listed, rows, row_ptr, col_idx, false, arrays->t_end.data(), nullptr};
  k.BodyModeCoupling(rows, coupling);
  offset->Resize(b, nodes + 1);
  BodyModeRowOffsetOp place{arrays->view(), listed, nodes, node_row, true, offset->data(), arrays->t_ptr.data(), arrays->t_end.data()};
  k.BodyModeRowOffset(nodes + 1, place);
  const Index entries = b->ExclusiveScan(nodes + 1, *offset, offset);
  place.gather = false;
  k.BodyModeRowOffset(rows, place);
  arrays->t_patch.Resize(b, entries);
  coupling.m = arrays->view();
  coupling.fill = true;
  coupling.t_patch = arrays->t_patch.data();
  k.BodyModeCoupling(rows, coupling);
  return entries;
}

void CondBodyModes::Set(const BodyModes& modes) {
  const std::size_t arms = modes.device_arm != nullptr ? std::size_t(modes.device_arm->size()) : modes.arm.size();
  CONDSIM_CHECK(!modes.ptr.empty() && modes.ptr.front() == 0 && std::size_t(modes.ptr.back()) == modes.node.size() &&
                    arms == 3 * modes.node.size() && (modes.device_arm == nullptr || modes.arm.empty()),
                "SetBodyModes: inconsistent arrays");
  for (std::size_t p = 0; p + 1 < modes.ptr.size(); ++p)
    CONDSIM_CHECK(modes.ptr[p + 1] >= modes.ptr[p], "SetBodyModes: decreasing ptr at patch " << p);
  CONDSIM_CHECK(modes.body_ptr.empty() || (modes.body_ptr.front() == 0 && modes.body_ptr.back() == modes.size() &&
                                           std::is_sorted(modes.body_ptr.begin(), modes.body_ptr.end())),
                "SetBodyModes: body_ptr must run from 0 to the number of patches");
  // a node is listed once (the rows of T are placed per node: MakeRowsOfT)
  Index node_end = 0;
  for (std::size_t k = 0; k < modes.node.size(); ++k) {
    CONDSIM_CHECK(modes.node[k] >= 0, "SetBodyModes: negative node " << modes.node[k]);
    node_end = std::max(node_end, modes.node[k] + 1);
  }
  std::vector<unsigned char> listed(static_cast<std::size_t>(node_end), 0);
  for (const Index i : modes.node) {
    CONDSIM_CHECK(!listed[std::size_t(i)], "SetBodyModes: node " << i << " is listed twice (a node belongs to at most one patch)");
    listed[std::size_t(i)] = 1;
  }
  for (Scalar x : modes.arm) CONDSIM_CHECK(std::isfinite(x), "SetBodyModes: arms must be finite");
  CONDSIM_CHECK(modes.body_arm.empty() || modes.body_arm.size() == modes.arm.size(), "SetBodyModes: body_arm must be empty or 3 per node");
  CONDSIM_CHECK(modes.device_body_arm == nullptr ||
                    (modes.device_arm != nullptr && modes.device_body_arm->size() == modes.device_arm->size()),
                "SetBodyModes: device_body_arm must come with device_arm, 3 per node");
  // other patches: the next Prepare inverts (the World sets the same nodes every step, with arms
  // from their current positions)
  const bool other = modes.ptr != modes_.ptr || modes.node != modes_.node || modes.body_ptr != modes_.body_ptr;
  const bool new_source = modes.device_arm != nullptr && (other || source_.size() == 0);
  modes_ = modes;
  if (other) set_on_backend_ = false;
  if (new_source) {
    // per node of A its entry in modes_ (BodyModeGatherArmOp): up once per set of patches
    Index top = 0;
    for (Index i : modes_.node) top = std::max(top, i + 1);
    std::vector<Index> source(static_cast<std::size_t>(top), -1);
    for (std::size_t q = 0; q < modes_.node.size(); ++q) source[std::size_t(modes_.node[q])] = Index(q);
    source_.Assign(ctx_->backend, source);
  }
  if (other) {
    const Index bodies = modes_.body_ptr.empty() ? modes_.size() : Index(modes_.body_ptr.size()) - 1;
    slot_off_.assign(1, 0);
    for (Index body = 0; body < bodies; ++body) {
      // a body of more than kMaxDenseBodyModePatches patches is always sparse: no dense slot
      std::int64_t m = modes_.body_ptr.empty() ? 1 : modes_.body_ptr[body + 1] - modes_.body_ptr[body];
      if (m > kMaxDenseBodyModePatches) m = 0;
      CONDSIM_CHECK(slot_off_.back() + 36 * m * m < std::numeric_limits<Index>::max(),
                    "COND: the body modes' coarse matrices exceed " << std::numeric_limits<Index>::max() << " entries; lower body_mode_patches");
      slot_off_.push_back(slot_off_.back() + Index(36 * m * m));
    }
    sparse_coarse_.clear();
    sparse_coarse_.resize(std::size_t(bodies));
    coarse_key_.assign(std::size_t(bodies), {});
    coarse_age_.assign(std::size_t(bodies), -1);
  }
  free_ = false;
  num_patches_ = 0;  // until Prepare
}

void CondBodyModes::SetFreeBodies(const BodyModes& modes) {
  // one patch per body over all its listed nodes, arms from the body's mean position (on the
  // backend: these patches list the nodes of modes in their order, so device_body_arm as is)
  BodyModes whole;
  whole.device_arm = modes.device_body_arm;
  if (!modes.body_arm.empty() || modes.device_body_arm != nullptr) {
    const Index bodies = modes.body_ptr.empty() ? modes.size() : Index(modes.body_ptr.size()) - 1;
    whole.body_ptr.push_back(0);
    for (Index body = 0; body < bodies; ++body) {
      const Index p0 = modes.body_ptr.empty() ? body : modes.body_ptr[body];
      const Index p1 = modes.body_ptr.empty() ? body + 1 : modes.body_ptr[body + 1];
      for (Index q = modes.ptr[p0]; q < modes.ptr[p1]; ++q) {
        whole.node.push_back(modes.node[q]);
        if (whole.device_arm == nullptr)
          for (int d = 0; d < 3; ++d) whole.arm.push_back(modes.body_arm[3 * std::size_t(q) + d]);
      }
      whole.ptr.push_back(static_cast<Index>(whole.node.size()));
      whole.body_ptr.push_back(whole.size());
    }
  }
  Set(whole);
  free_ = true;
}

void CutBodyModeChunks(const std::vector<Index>& ptr, std::vector<Index>* chunk_ptr, std::vector<Index>* chunk_begin,
                       std::vector<Index>* chunk_patch) {
  chunk_ptr->assign(1, 0);
  chunk_begin->clear();
  if (chunk_patch != nullptr) chunk_patch->clear();
  for (std::size_t p = 0; p + 1 < ptr.size(); ++p) {
    const Index length = BodyModeChunkLength(ptr[p + 1] - ptr[p]);
    for (Index q = ptr[p]; q < ptr[p + 1]; q += length) {
      chunk_begin->push_back(q);
      if (chunk_patch != nullptr) chunk_patch->push_back(static_cast<Index>(p));
    }
    chunk_ptr->push_back(static_cast<Index>(chunk_begin->size()));
  }
  chunk_begin->push_back(ptr.empty() ? 0 : ptr.back());
}

void CondBodyModes::SelectPatches(BodyModeHost* used) const {
  const Index nodes = ctx_->nodes;
  // the patches less the nodes the contact step touches (contact nodes, barycentric hosts and
  // virtual nodes with their own Gamma): the modes then never move a contact node, so the
  // contact step (Alg. 2) is unchanged
  std::vector<unsigned char> excluded = ctx_->in_contact_host;
  for (Index k = 0; k < nodes; ++k) excluded[k] |= ctx_->own_gamma_host[k];
  // truncated modes: the contact nodes admitted at the last refresh are listed again
  for (std::size_t k = 0; k < admit_.size(); ++k)
    if (admit_[k]) excluded[k] = 0;
  // free bodies: only the bodies that have nodes of contacts (S-contacts, node-node or node -
  // rigid virtual node D-contacts) and no other node the contact step touches (barycentric
  // hosts: their kv coupling would pin the modes); their contact nodes stay in the patch
  std::vector<unsigned char> direct(std::size_t(nodes), 0);
  if (free_) {
    const ContactSet& c = ctx_->contacts_host;
    for (Index m = 0; m < c.size(); ++m) {
      direct[c.node_i[m]] = 1;
      if (c.node_j[m] >= 0) direct[c.node_j[m]] = 1;
    }
  }
  const Index num_bodies = modes_.body_ptr.empty() ? modes_.size() : Index(modes_.body_ptr.size()) - 1;
  used->ptr.assign(1, 0);
  used->body_ptr.assign(1, 0);
  used->node_patch.assign(std::size_t(nodes), -1);
  used->node_slot.assign(std::size_t(nodes), -1);
  std::vector<unsigned char> seen(std::size_t(nodes), 0);
  for (Index body = 0; body < num_bodies; ++body) {
    const Index p0 = modes_.body_ptr.empty() ? body : modes_.body_ptr[body];
    const Index p1 = modes_.body_ptr.empty() ? body + 1 : modes_.body_ptr[body + 1];
    if (free_) {
      bool touched = false, pinned = false;
      for (Index q = modes_.ptr[p0]; q < modes_.ptr[p1]; ++q) {
        const Index i = modes_.node[q];
        CONDSIM_CHECK(i < nodes, "SetBodyModes: node " << i << " is not a node of A (" << nodes << " nodes)");
        touched |= direct[i] != 0;
        pinned |= (excluded[i] && !direct[i]) || ctx_->own_gamma_host[i];
      }
      if (!touched || pinned) continue;
    }
    for (Index p = p0; p < p1; ++p) {
      const Index start = static_cast<Index>(used->node.size());
      for (Index q = modes_.ptr[p]; q < modes_.ptr[p + 1]; ++q) {
        const Index i = modes_.node[q];
        CONDSIM_CHECK(i < nodes, "SetBodyModes: node " << i << " is not a node of A (" << nodes << " nodes)");
        CONDSIM_CHECK(!seen[i], "SetBodyModes: node " << i << " is in more than one patch");
        seen[i] = 1;
        if (excluded[i] && !free_) continue;
        used->node.push_back(i);
        if (modes_.device_arm == nullptr)
          for (int d = 0; d < 3; ++d) used->arm.push_back(modes_.arm[3 * std::size_t(q) + d]);
      }
      // fewer than 4 nodes: rotations degenerate, left out
      if (static_cast<Index>(used->node.size()) - start < kMinPatchNodes) {
        used->node.resize(std::size_t(start));
        if (modes_.device_arm == nullptr) used->arm.resize(3 * std::size_t(start));
        continue;
      }
      const Index patch = static_cast<Index>(used->ptr.size()) - 1;
      for (Index q = start; q < static_cast<Index>(used->node.size()); ++q) {
        used->node_patch[used->node[q]] = patch;
        used->node_slot[used->node[q]] = q;
      }
      used->ptr.push_back(static_cast<Index>(used->node.size()));
      used->patch_body.push_back(static_cast<Index>(used->body_ptr.size()) - 1);
    }
    const Index patches = static_cast<Index>(used->ptr.size()) - 1;
    if (patches > used->body_ptr.back()) used->body_ptr.push_back(patches);
  }
}

bool CondBodyModes::Coupling(const BlockPattern& pattern, BodyModeHost* used) const {
  used->halo.clear();
  // rows of T: the listed nodes (to their own body's patches), then the halo: nodes left out
  // whose row reaches a patch (to every patch it reaches); the patches of each row are found on
  // the backend (BodyModeCouplingOp, Prepare)
  // halo candidates: nodes of contacts with the static world or between nodes without their own
  // Gamma; a node on a rigid or barycentric virtual node's contact, a barycentric host or a
  // virtual node keeps the old stale row (measured: the soft gripper's squeeze took 15-20 % more
  // iterations with those rows exact)
  const ContactSet& c = ctx_->contacts_host;
  std::vector<unsigned char> plain(std::size_t(ctx_->nodes), 0), other(std::size_t(ctx_->nodes), 0);
  for (Index m = 0; m < c.size(); ++m) {
    const Index i = c.node_i[m], j = c.node_j[m];
    const bool own = ctx_->own_gamma_host[i] || (j >= 0 && ctx_->own_gamma_host[j]);
    for (Index k : {i, j})
      if (k >= 0) (own ? other : plain)[k] = 1;
  }
  for (Index i = 0; i < ctx_->nodes; ++i) {
    if (used->node_patch[i] >= 0 || !plain[i] || other[i]) continue;
    for (Index k = pattern.row_ptr[i]; k < pattern.row_ptr[i + 1]; ++k)
      if (used->node_patch[pattern.col_idx[k]] >= 0) {
        used->halo.push_back(i);
        break;
      }
  }
  // (c_off: each body's slot, Prepare)
  used->c_off.assign(used->body_ptr.size(), 0);
  for (Index i = 0; i < ctx_->nodes; ++i)
    if (other[i] || plain[i] != ctx_->in_contact_host[i]) return false;
  return true;
}

void CondBodyModes::Reserve(const ContactBounds& bounds, Index max_nodes) {
  if (!active()) return;
  Backend* b = ctx_->backend;
  // the listed nodes' making (MakeListOnBackend): modes_' nodes and ptr, a flag per node
  set_node_.Reserve(b, static_cast<Index>(modes_.node.size()));
  set_ptr_.Reserve(b, modes_.size() + 1);
  keep_.Reserve(b, static_cast<Index>(modes_.node.size()) + 1, false);
  halo_flag_.Reserve(b, max_nodes + 1, false);
  gate_key_.Reserve(b, 2 * bounds.contacts, false);
  gate_order_.Reserve(b, 2 * bounds.contacts, false);
  arrays_.Reserve(b, 3 * max_nodes + bounds.contacts + 1);
  t_.Reserve(b, 18 * max_nodes);
  v_keep_.Reserve(b, 3 * max_nodes, false);  // written whole before each read (Corrected)
  node_row_.Reserve(b, max_nodes);
  node_arm_.Reserve(b, 3 * max_nodes, false);  // written at each Prepare before it is read
  // per node, per patch and per body of modes_ (a solve uses a selection), kept as the first step
  // made them: a level first prepared at a later step (the first contact) allocates nothing then
  t_offset_.Reserve(b, max_nodes + 1);
  const Index patches = modes_.size(), bodies = static_cast<Index>(coarse_age_.size());
  const Index slots = slot_off_.empty() ? 0 : slot_off_.back();
  for (Array<Scalar>* x : {&g_, &dv_, &coarse_scale_}) x->Reserve(b, 6 * patches);
  ac_.Reserve(b, slots);
  coarse_work_.Reserve(b, slots);
  coarse_ok_.Reserve(b, bodies);
  coarse_refresh_.Reserve(b, bodies);
  if (free_) loaded_.Reserve(b, patches);
  ReserveSelections();
  // gate entries: at most two per contact (a D-contact between two patches)
  const Index gate_chunks = 2 * bounds.contacts / kBodyModeMinChunk + modes_.size() + 1;
  gate_partial_.Reserve(b, 6 * gate_chunks, false);
  gate_alpha_.Reserve(b, gate_chunks, false);
  gate_hit_.Reserve(b, gate_chunks, false);
  if (truncating()) {
    alpha_.Reserve(b, modes_.size(), false);
    idle_.Reserve(b, bounds.contacts, false);
    blocked_.Reserve(b, bounds.contacts, false);
  }
}

void CondBodyModes::Prepare(DeviceBlockMatrix& a) {
  // with the Frobenius W only (a Barzilai-Borwein step reads r, which the correction changes)
  num_patches_ = 0;
  // a new solve lists no contact node until the first refresh (its impulses say nothing yet)
  if (!refreshing_) {
    admit_.clear();
    admitted_ = 0;
    refresh_due_.assign(std::size_t(ctx_->num_envs), 0);
    last_refresh_.assign(std::size_t(ctx_->num_envs), 0);
  }
  a_ = &a;
  if (!ctx_->params->body_modes || ctx_->params->step_size != StepSize::kFrobenius) return;
  if (free_ && !ctx_->params->free_body_modes) return;
  BodyModeHost used;
  SelectPatches(&used);
  num_patches_ = static_cast<Index>(used.ptr.size()) - 1;
  if (num_patches_ == 0) return;
  listed_ = static_cast<Index>(used.node.size());
  CutBodyModeChunks(used.ptr, &used.chunk_ptr, &used.chunk_begin);
  chunks_ = used.chunk_ptr.back();
  const bool halo_listable = Coupling(a.pattern(), &used);
  rows_ = listed_ + static_cast<Index>(used.halo.size());
  // free bodies: each patch's contacts, whose impulses gate its correction; truncated modes:
  // the contacts of its listed contact nodes (their forces and feasibility limits)
  used.gate_ptr.assign(std::size_t(num_patches_) + 1, 0);
  if (free_ || admitted_ > 0) {
    const ContactSet& c = ctx_->contacts_host;
    std::vector<std::vector<Index>> lists(static_cast<std::size_t>(num_patches_));
    for (Index m = 0; m < c.size(); ++m) {
      const Index pi = used.node_patch[c.node_i[m]];
      const Index pj = c.node_j[m] >= 0 ? used.node_patch[c.node_j[m]] : -1;
      if (pi >= 0) lists[pi].push_back(m);
      if (pj >= 0 && pj != pi) lists[pj].push_back(m);
    }
    for (Index p = 0; p < num_patches_; ++p) {
      used.gate_contact.insert(used.gate_contact.end(), lists[p].begin(), lists[p].end());
      used.gate_ptr[p + 1] = static_cast<Index>(used.gate_contact.size());
    }
  }
  CutBodyModeChunks(used.gate_ptr, &used.gate_chunk_ptr, &used.gate_chunk_begin, &used.gate_chunk_patch);
  gate_chunks_ = used.gate_chunk_ptr.back();
  const int refresh = ctx_->params->body_mode_refresh;
  CONDSIM_CHECK(refresh >= 1, "CondParams.body_mode_refresh must be >= 1 (solves), got " << refresh);
  // per body of this solve: its body of modes_, whether its inverse is made again (its listed
  // nodes changed, or body_mode_refresh solves passed), and its slot (c_off). The arms are not
  // compared: the World takes them from the current positions each step. A change of the listed
  // nodes (a contact node joins or leaves) always inverts again: the older inverse there made the
  // soft gripper and the ball diverge (docs/notes/solver-experiments.md)
  const Index bodies = static_cast<Index>(used.body_ptr.size()) - 1;
  std::vector<Index> patch_source(static_cast<std::size_t>(modes_.size()));
  const Index source_bodies = static_cast<Index>(coarse_age_.size());
  for (Index body = 0; body < source_bodies; ++body)
    for (Index p = modes_.body_ptr.empty() ? body : modes_.body_ptr[body]; p < (modes_.body_ptr.empty() ? body + 1 : modes_.body_ptr[body + 1]); ++p)
      patch_source[p] = body;
  std::vector<Index> node_source(static_cast<std::size_t>(ctx_->nodes), -1);
  for (Index p = 0; p < modes_.size(); ++p)
    for (Index q = modes_.ptr[p]; q < modes_.ptr[p + 1]; ++q) node_source[modes_.node[q]] = patch_source[p];
  std::vector<unsigned char> refresh_body(static_cast<std::size_t>(bodies), 0);
  sparse_used_.clear();
  for (Index body = 0; body < bodies; ++body) {
    const Index p0 = used.body_ptr[body], p1 = used.body_ptr[body + 1];
    const Index src = node_source[used.node[used.ptr[p0]]];
    std::vector<Index> key;
    for (Index p = p0; p < p1; ++p) key.push_back(used.ptr[p + 1] - used.ptr[p]);
    key.insert(key.end(), used.node.begin() + used.ptr[p0], used.node.begin() + used.ptr[p1]);
    // a body of more patches than body_mode_dense_patches: its A_c sparse (BodyModeSparseFactorOp)
    // (in the key: a body switched between the two is made again)
    const Index source_patches = modes_.body_ptr.empty() ? 1 : modes_.body_ptr[src + 1] - modes_.body_ptr[src];
    const bool sparse = source_patches > Index(ctx_->params->body_mode_dense_patches);
    key.push_back(sparse);
    // a refresh (truncated modes) rebuilds only the bodies of the environments whose listed nodes
    // changed; the others keep their coarse operators and ages, as they would alone
    const bool kept = refreshing_ && !env_changed_host_[std::size_t(ctx_->node_env_host[used.node[used.ptr[p0]]])];
    int& age = coarse_age_[std::size_t(src)];
    if (!kept && (age < 0 || age >= refresh || key != coarse_key_[std::size_t(src)])) {
      refresh_body[std::size_t(body)] = 1;
      coarse_key_[std::size_t(src)] = std::move(key);
      age = 0;
    }
    if (!kept) ++age;
    used.c_off[std::size_t(body)] = sparse ? -1 : slot_off_[std::size_t(src)];
    if (sparse) sparse_used_.push_back({p0, p1, src});
  }
  used.c_off[std::size_t(bodies)] = slot_off_.back();
  // the dense bodies' inverses: made for those due, the others kept
  bool any = false, all = true;
  for (Index body = 0; body < bodies; ++body)
    if (used.c_off[std::size_t(body)] >= 0) {
      any = any || refresh_body[std::size_t(body)];
      all = all && refresh_body[std::size_t(body)];
    }
  // the structure is uploaded only when it changed (halo and gates follow the contacts); host arms
  // alone when only they changed (the World takes them from the current positions); device arms
  // are gathered on the backend every solve
  // node_patch and node_slot (an entry per node of A) are made on the backend from node and ptr
  // (BodyModeNodeMapOp), t_ptr and t_patch from the record and A's pattern (BodyModeCouplingOp):
  // never uploaded
  // and the listed nodes from the contact step's flags when SelectPatches' rule is theirs
  // (BodyModeKeepOp, MakeListOnBackend)
  const bool list_here = list_on_backend_ && ListableOnBackend(), halo_here = list_on_backend_ && halo_listable;
  const bool gates_here = list_on_backend_ && (free_ || admitted_ > 0);
  const auto derived = [&used, list_here, halo_here, gates_here](const void* field) {
    return field == &used.node_patch || field == &used.node_slot || field == &used.t_ptr || field == &used.t_end ||
           field == &used.t_patch || (list_here && field == &used.node) || (halo_here && field == &used.halo) ||
           (gates_here && field == &used.gate_contact);
  };
  const bool node_changed = used.node != uploaded_.node, halo_changed = used.halo != uploaded_.halo;
  const bool gates_changed = used.gate_contact != uploaded_.gate_contact;
  bool same_structure = true;
#define CONDSIM_BODY_MODE_SAME(T, name)                                                                                    \
  same_structure = same_structure && (&used.name == static_cast<const void*>(&used.arm) || derived(&used.name) || \
                                      used.name == uploaded_.name);
  CONDSIM_BODY_MODE_FIELDS(CONDSIM_BODY_MODE_SAME)
#undef CONDSIM_BODY_MODE_SAME
  same_structure = same_structure && used.arm.size() == uploaded_.arm.size();
  bool remap = used.node != uploaded_.node || used.ptr != uploaded_.ptr || mapped_nodes_ != ctx_->nodes;
  // (A's pattern keyed as the chains key it, with its size as well)
  const std::array<std::uint64_t, 4> pattern_key{reinterpret_cast<std::uintptr_t>(&a), a.pattern_version(),
                                                 std::uint64_t(a.pattern().rows()), std::uint64_t(a.pattern().nnz_blocks())};
  bool recouple = remap || used.halo != uploaded_.halo || used.patch_body != uploaded_.patch_body || pattern_key != coupled_pattern_;
  Backend* b = ctx_->backend;
  if (!same_structure) {
    // the fields that changed go up alone when they are a small part of the record (the free
    // level's gates follow the contacts while its nodes stay), else the whole record in one upload
    std::size_t changed = 0, total = 0;
#define CONDSIM_BODY_MODE_CHANGED(T, name)                                   \
  if (!derived(&used.name)) {                                                \
    total += sizeof(T) * used.name.size();                                   \
    if (used.name != uploaded_.name) changed += sizeof(T) * used.name.size(); \
  }
    CONDSIM_BODY_MODE_FIELDS(CONDSIM_BODY_MODE_CHANGED)
#undef CONDSIM_BODY_MODE_CHANGED
    if (4 * changed < total) {
#define CONDSIM_BODY_MODE_ASSIGN(T, name) \
  if (!derived(&used.name) && used.name != uploaded_.name) arrays_.name.Assign(b, used.name);
      CONDSIM_BODY_MODE_FIELDS(CONDSIM_BODY_MODE_ASSIGN)
#undef CONDSIM_BODY_MODE_ASSIGN
    } else {
      // (the maps left empty there, made below; the host never makes t_ptr and t_patch)
      std::vector<Index> patch_map, slot_map, listed, halo, gates;
      patch_map.swap(used.node_patch);
      slot_map.swap(used.node_slot);
      if (list_here) listed.swap(used.node);
      if (halo_here) halo.swap(used.halo);
      if (gates_here) gates.swap(used.gate_contact);
      arrays_.Upload(b, used);
      patch_map.swap(used.node_patch);
      slot_map.swap(used.node_slot);
      if (list_here) listed.swap(used.node);
      if (halo_here) halo.swap(used.halo);
      if (gates_here) gates.swap(used.gate_contact);
      remap = true;
      recouple = true;
    }
    uploaded_ = used;
  } else if (used.arm != uploaded_.arm) {
    b->CopyFromHost(arrays_.arm.data(), used.arm.data(), sizeof(Scalar) * used.arm.size());
    uploaded_.arm = used.arm;
  }
  if (list_here && (node_changed || arrays_.node.size() != listed_)) {
    MakeListOnBackend();
    uploaded_.node = used.node;
  }
  if (remap) {
    arrays_.node_patch.Resize(b, ctx_->nodes);
    arrays_.node_slot.Resize(b, ctx_->nodes);
    const BodyModeNodeMapOp map{arrays_.ptr.data(), num_patches_, arrays_.node.data(), true, arrays_.node_patch.data(), arrays_.node_slot.data()};
    ctx_->kernels->BodyModeNodeMap(ctx_->nodes, map);
    BodyModeNodeMapOp listed = map;
    listed.clear = false;
    ctx_->kernels->BodyModeNodeMap(listed_, listed);
    mapped_nodes_ = ctx_->nodes;
  }
  // the halo and the gate contacts from the maps, the contact step's flags and the contacts' nodes
  if (halo_here && (halo_changed || arrays_.halo.size() != Index(used.halo.size()))) {
    MakeHaloOnBackend(a, Index(used.halo.size()));
    uploaded_.halo = used.halo;
  }
  if (gates_here && (gates_changed || arrays_.gate_contact.size() != Index(used.gate_contact.size()))) {
    MakeGatesOnBackend(Index(used.gate_contact.size()));
    uploaded_.gate_contact = used.gate_contact;
  }
  // per node its row of T (BodyModeApplyStepOp, and where T's rows are stored), from the record on
  // the backend (no upload)
  node_row_.Resize(b, ctx_->nodes);
  ctx_->kernels->BodyModeRow(ctx_->nodes, BodyModeRowOp{arrays_.view(), listed_, false, node_row_.data()});
  ctx_->kernels->BodyModeRow(rows_ - listed_, BodyModeRowOp{arrays_.view(), listed_, true, node_row_.data()});
  if (recouple) {
    t_entries_ = MakeRowsOfT(*ctx_->kernels, b, &arrays_, listed_, rows_, ctx_->nodes, a.row_ptr().data(), a.col_idx().data(),
                             node_row_.data(), &t_offset_);
    coupled_pattern_ = pattern_key;
  }
  if (modes_.device_arm != nullptr) {
    arrays_.arm.Resize(b, 3 * listed_);
    ctx_->kernels->BodyModeGatherArm(listed_,
                                     BodyModeGatherArmOp{arrays_.view(), source_.data(), modes_.device_arm->data(), arrays_.arm.data()});
  }
  // the arms in node order for the pass over the nodes
  node_arm_.Resize(b, 3 * ctx_->nodes);
  ctx_->kernels->BodyModeNodeArm(listed_, BodyModeNodeArmOp{arrays_.node.data(), arrays_.arm.data(), node_arm_.data()});
  if (t_.size() < 18 * t_entries_) t_.Resize(b, 18 * t_entries_);
  g_.Resize(b, 6 * num_patches_);
  ReserveSelections();
  partial_.Resize(b, 6 * chunks_);
  // the gate chunks of any contact set within the reservation fit too (Reserve)
  gate_partial_.Resize(b, 6 * gate_chunks_);
  gate_alpha_.Resize(b, gate_chunks_);
  gate_hit_.Resize(b, gate_chunks_);
  dv_.Resize(b, 6 * num_patches_);
  solve_lanes_.Resize(b, 6 * BodyModeSolveOp::kLanes * num_patches_);
  if (free_) loaded_.Assign(b, std::vector<unsigned char>(std::size_t(num_patches_), 0));
  // room for Corrected's copy of v (sized there, where it is written: no allocation in the loop)
  v_keep_.Reserve(b, 3 * ctx_->nodes, false);
  // T = A Z per listed node (every solve: the correction keeps r = A v - b with the current A)
  const BodyModeView view = arrays_.view();
  ctx_->kernels->BodyModeProduct(rows_, BodyModeProductOp{view, listed_, a.row_ptr().data(), a.col_idx().data(), a.values().data(), t_.data()});
  // A_c = Z^T A Z per body and its inverse on the backend, for the bodies chosen above; the others
  // keep their older inverse (any fixed coarse operator keeps the fixed point: the correction is
  // zero where r = 0; only the rate changes)
  if (ac_.size() != slot_off_.back()) ac_.Resize(b, slot_off_.back());  // the slots stay from solve to solve
  if (any) {
    coarse_work_.Resize(b, slot_off_.back());
    coarse_scale_.Resize(b, 6 * num_patches_);
    coarse_ok_.Resize(b, bodies);
    if (!all) coarse_refresh_.Assign(b, refresh_body);
    ctx_->kernels->BodyModeMatrix(num_patches_, BodyModeMatrixOp{view, t_.data(), coarse_work_.data()});
    ctx_->kernels->BodyModeInvert(bodies, BodyModeInvertOp{view, coarse_work_.data(), ac_.data(), coarse_scale_.data(), coarse_ok_.data(),
                                                           all ? nullptr : coarse_refresh_.data(), Scalar(kPatchRegularization)});
  }
  FactorSparse(a.pattern(), used, refresh_body);
}

void CondBodyModes::ReserveSelections() {
  // the chunks' sums of any selection of modes_' nodes and the warps' partial sums of
  // BodyModeSolveOp for any selection of its patches (no allocation when contact nodes leave)
  const Index patches = modes_.size();
  partial_.Reserve(ctx_->backend, 6 * (static_cast<Index>(modes_.node.size()) / kBodyModeMinChunk + patches + 1), false);
  solve_lanes_.Reserve(ctx_->backend, 6 * BodyModeSolveOp::kLanes * patches, false);
}

const Array<Scalar>& CondBodyModes::Corrected(const Array<Scalar>& v) {
  // sized here, where it is written: an unused v_keep_ stays empty, and a Reserve copies nothing
  // unwritten (compute-sanitizer's initcheck)
  CONDSIM_CHECK(v.size() == 3 * ctx_->nodes, "body modes: v has " << v.size() << " values for " << ctx_->nodes << " nodes");
  v_keep_.Resize(ctx_->backend, v.size());
  Correction(v);
  // the corrected copy of v and r + T dv in one pass over the nodes
  ctx_->kernels->BodyModeApplyStep(ctx_->nodes, BodyModeApplyStepOp{ApplyData(const_cast<Array<Scalar>*>(&v)), node_row_.data(), t_offset_.data(),
                                                                    node_arm_.data(), nullptr, ctx_->r.data(), v_keep_.data()});
  return v_keep_;
}

void CondBodyModes::CorrectedStep(const Array<Scalar>& v, const Array<Scalar>& w, bool keep_r, Array<Scalar>* u) {
  Correction(v);
  // (the op reads v and never writes it)
  ctx_->kernels->BodyModeApplyStep(ctx_->nodes, BodyModeApplyStepOp{ApplyData(const_cast<Array<Scalar>*>(&v)), node_row_.data(), t_offset_.data(), node_arm_.data(), w.data(),
                                                                    keep_r ? ctx_->r.data() : nullptr, u->data()});
}

void CondBodyModes::SetStillFlag(Scalar* slot) {
  still_flag_ = free_ && correcting() ? slot : nullptr;
  if (still_flag_ != nullptr) ctx_->kernels->BodyModeAllLoaded(BodyModeAllLoadedOp{nullptr, 0, still_flag_});
}

BodyModeCorrection CondBodyModes::ApplyData(Array<Scalar>* v) {
  return BodyModeCorrection{arrays_.view(), listed_, t_.data(), dv_.data(), ctx_->node_env.data(), ctx_->env_active.data(), v->data(),
                         ctx_->r.data()};
}

void CondBodyModes::Correction(const Array<Scalar>& v) {
  const BodyModeView view = arrays_.view();
  CondKernels& k = *ctx_->kernels;
  // a loaded free body's patch takes no correction for the rest of the solve: no sums
  const unsigned char* loaded = free_ ? loaded_.data() : nullptr;
  k.BodyModeResidualChunk(chunks_, BodyModeResidualChunkOp{view, ctx_->r.data(), ctx_->node_env.data(), ctx_->env_active.data(),
                                                           loaded, partial_.data()});
  k.BodyModeResidual(num_patches_,
                     BodyModeResidualOp{view, partial_.data(), ctx_->node_env.data(), ctx_->env_active.data(), loaded, g_.data()});
  if (free_) {
    k.BodyModeGateChunk(gate_chunks_, BodyModeGateChunkOp{view, ctx_->lambda.data(), loaded_.data(), gate_hit_.data()});
    k.BodyModeGate(num_patches_, BodyModeGateOp{view, gate_hit_.data(), loaded_.data(), g_.data()});
    if (still_flag_ != nullptr) k.BodyModeAllLoaded(BodyModeAllLoadedOp{loaded_.data(), num_patches_, still_flag_});
  }
  const bool limited = admitted_ > 0;
  const ContactView contacts = ctx_->contacts.view();
  if (limited) {
    k.BodyModeContactForceChunk(gate_chunks_, BodyModeContactForceChunkOp{view, contacts, ctx_->lambda.data(), gate_partial_.data()});
    k.BodyModeContactForce(num_patches_, BodyModeContactForceOp{view, gate_partial_.data(), ctx_->node_env.data(),
                                                                ctx_->env_active.data(), g_.data()});
  }
  SolveSparse();
  k.BodyModeSolve(6 * num_patches_, BodyModeSolveOp{view, ac_.data(), g_.data(), ctx_->node_env.data(), ctx_->env_active.data(),
                                                    solve_lanes_.data(), dv_.data()});
  // truncated modes: the step limited per body so no listed contact becomes violated
  if (limited) {
    if (alpha_.size() < num_patches_) alpha_.Resize(ctx_->backend, num_patches_);
    k.BodyModeLimitChunk(gate_chunks_, BodyModeLimitChunkOp{view, contacts, v.data(), dv_.data(), gate_alpha_.data(), blocked_.data()});
    k.BodyModeLimit(num_patches_, BodyModeLimitOp{view, gate_alpha_.data(), alpha_.data()});
    k.BodyModeScale(num_patches_, BodyModeScaleOp{view, alpha_.data(), dv_.data()});
    // a step cut short: contacts are closing, the iteration after the host's next check
    // re-chooses the patches (the request rides in the check's read, RefreshRequested)
    if (refresh_flag_ != nullptr)
      k.BodyModeRefreshFlag(BodyModeRefreshFlagOp{view, alpha_.data(), ctx_->node_env.data(), num_patches_, kRefreshAlpha, 0, false, refresh_flag_});
  }
}

}  // namespace condsim
