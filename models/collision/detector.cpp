// Point-vs-triangle detection: grid build, candidate queries and compaction on the backend.
#include "models/collision/detector.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"
#include "models/collision/detect_kernels.h"

namespace condsim {

void DetectScene::Validate() const {
  const Index nv = num_vertices(), no = num_owners();
  CONDSIM_CHECK(tri.size() == 3 * tri_owner.size(), "detection: tri needs 3 vertices per triangle owner");
  CONDSIM_CHECK(radius.size() == query.size(), "detection: one radius per query point");
  CONDSIM_CHECK(depth_limit.size() == self_contact.size(), "detection: depth_limit and self_contact per owner");
  CONDSIM_CHECK(owner_env.empty() || owner_env.size() == self_contact.size(), "detection: owner_env per owner (or empty: all 0)");
  for (Index e : owner_env) CONDSIM_CHECK(e >= 0, "detection: owner environment " << e << " is negative");
  for (Index o : vertex_owner) CONDSIM_CHECK(o >= 0 && o < no, "detection: vertex owner " << o << " out of range");
  for (Index o : tri_owner) CONDSIM_CHECK(o >= 0 && o < no, "detection: triangle owner " << o << " out of range");
  for (Index v : tri) CONDSIM_CHECK(v >= 0 && v < nv, "detection: triangle vertex " << v << " out of range");
  for (Index v : query) CONDSIM_CHECK(v >= 0 && v < nv, "detection: query vertex " << v << " out of range");
  for (Scalar r : radius) CONDSIM_CHECK(std::isfinite(r) && r >= 0, "detection: query radius must be >= 0 [m]");
  for (Scalar d : depth_limit) CONDSIM_CHECK(std::isfinite(d) && d >= 0, "detection: depth limit must be >= 0 [m]");
  CONDSIM_CHECK(adj_ptr.empty() || (adj_ptr.size() == std::size_t(nv) + 1 && adj_ptr.front() == 0 &&
                                    std::size_t(adj_ptr.back()) == adj.size()),
                "detection: adj_ptr needs one entry per vertex plus one");
  for (std::size_t i = 0; i + 1 < adj_ptr.size(); ++i)
    CONDSIM_CHECK(std::is_sorted(adj.begin() + adj_ptr[i], adj.begin() + adj_ptr[i + 1]),
                  "detection: adjacency of vertex " << i << " must be sorted");
}

Detector::Detector(Backend* backend, const DetectScene& scene) : backend_(backend), scene_(scene) {
  scene_.Validate();
  if (scene_.adj_ptr.empty()) scene_.adj_ptr.assign(std::size_t(scene_.num_vertices()) + 1, 0);
  if (scene_.owner_env.empty()) scene_.owner_env.assign(scene_.self_contact.size(), 0);
  // bits per axis: 21, or what the environment's bits leave of 64
  Index max_env = 0;
  for (Index e : scene_.owner_env) max_env = std::max(max_env, e);
  int env_bits = 0;
  while (env_bits < 31 && (Index(1) << env_bits) <= max_env) ++env_bits;
  grid_bits_ = std::min(21, (64 - env_bits) / 3);
  kernels_ = MakeKernels<DetectKernels>(*backend);
  const Index nv = scene_.num_vertices(), nt = static_cast<Index>(scene_.tri_owner.size());
  const Index nq = static_cast<Index>(scene_.query.size());
  x_ = Array<Scalar>(backend, 3 * nv);
  v_ = Array<Scalar>(backend, std::vector<Scalar>(3 * std::size_t(nv), 0));
  speed_ = Array<Scalar>(backend, nv);
  arrays_.Upload(backend, scene_);
  lo_ = Array<Scalar>(backend, 3 * nt);
  hi_ = Array<Scalar>(backend, 3 * nt);
  ext_ = Array<Scalar>(backend, nt);
  count_ = Array<Index>(backend, nt);
  offset_ = Array<Index>(backend, nt);
  slot_tri_ = Array<Index>(backend, kDetectSlots * nq);
  slot_gap_ = Array<Scalar>(backend, kDetectSlots * nq);
  slot_w_ = Array<Scalar>(backend, 3 * kDetectSlots * nq);
  slot_n_ = Array<Scalar>(backend, 3 * kDetectSlots * nq);
  qcount_ = Array<Index>(backend, nq);
  qoffset_ = Array<Index>(backend, nq);
  // the compacted list holds at most every slot: sized once, a later step never allocates it
  const Index cap = kDetectSlots * nq;
  out_query_ = Array<Index>(backend, cap);
  out_tri_ = Array<Index>(backend, cap);
  out_gap_ = Array<Scalar>(backend, cap);
  out_w_ = Array<Scalar>(backend, 3 * cap);
  out_n_ = Array<Scalar>(backend, 3 * cap);
  out_tx_ = Array<Scalar>(backend, 9 * cap);
  for (Scalar r : scene_.radius) max_radius_ = std::max(max_radius_, r);
}

Detector::~Detector() = default;

void Detector::Gather(Index offset, const Array<Index>& idx_x, const Array<Index>& idx_v, const Array<Scalar>& x,
                      const Array<Scalar>& v) {
  CONDSIM_CHECK(idx_x.size() == idx_v.size(), "detection: gather needs as many velocity as position indices");
  CONDSIM_CHECK(offset >= 0 && offset + idx_x.size() <= scene_.num_vertices(), "detection: gather beyond the vertices");
  kernels_->Run(idx_x.size(), GatherVerticesOp{idx_x.data(), idx_v.data(), x.data(), v.data(), offset, x_.data(), v_.data()});
}

void Detector::Upload(Index offset, const std::vector<Scalar>& x, const std::vector<Scalar>& v) {
  CONDSIM_CHECK(x.size() == v.size() && x.size() % 3 == 0, "detection: upload needs 3 values per vertex for x and v");
  const Index n = static_cast<Index>(x.size() / 3);
  CONDSIM_CHECK(offset >= 0 && offset + n <= scene_.num_vertices(), "detection: upload beyond the vertices");
  if (n == 0) return;
  backend_->CopyFromHost(x_.data() + 3 * std::int64_t(offset), x.data(), sizeof(Scalar) * x.size());
  backend_->CopyFromHost(v_.data() + 3 * std::int64_t(offset), v.data(), sizeof(Scalar) * v.size());
}

const DetectResult& Detector::Detect(Scalar dt, Scalar margin) {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0 && std::isfinite(margin) && margin >= 0, "detection: dt > 0 and margin >= 0");
  // the result's vectors keep their capacity from step to step
  result_.query.clear();
  result_.tri.clear();
  result_.gap.clear();
  result_.w.clear();
  result_.n.clear();
  result_.tx.clear();
  num_pairs_ = 0;
  const Index nt = arrays_.tri_owner.size(), nq = arrays_.query.size(), nv = scene_.num_vertices();
  if (nt == 0 || nq == 0) return result_;
  DetectView view;
  static_cast<DetectSceneView&>(view) = arrays_.view();
  view.x = x_.data();
  view.v = v_.data();
  // reach: a contact needs gap <= |v_p - v_q| t + margin <= 2 max|v| t + margin
  CONDSIM_CHECK(std::isfinite(backend_->MaxAbs(x_)), "detection: a vertex position is NaN or infinite");
  kernels_->Run(nv, SpeedOp{v_.data(), speed_.data()});
  const Scalar vmax = backend_->MaxAbs(speed_);
  CONDSIM_CHECK(std::isfinite(vmax), "detection: a vertex velocity is NaN or infinite");
  const Scalar reach = margin + 2 * vmax * dt + max_radius_;
  kernels_->Run(nt, TriangleBoxOp{view, reach, max_radius_, lo_.data(), hi_.data(), ext_.data()});
  const Scalar largest = backend_->MaxAbs(ext_);
  // cell: the RMS box or a quarter of the largest, whichever is larger (a typical box covers at
  // most 2 cells per axis, the largest at most 5; one huge static triangle does not make the
  // grid a single cell)
  const Scalar rms = std::sqrt(backend_->Dot(ext_, ext_) / Scalar(nt));
  cell_ = std::max({largest / 4, rms, Scalar(1e-9)});
  const DetectGrid grid{1 / cell_, grid_bits_};
  // grid: (cell key, triangle) pairs sorted by key, triangles ascending within a cell
  kernels_->Run(nt, CellCountOp{lo_.data(), hi_.data(), grid, count_.data()});
  num_pairs_ = backend_->ExclusiveScan(nt, count_, &offset_);
  if (keys_.size() < num_pairs_) {
    keys_ = Array<std::uint64_t>(backend_, num_pairs_ + num_pairs_ / 2);
    items_ = Array<Index>(backend_, keys_.size());
  }
  kernels_->Run(nt, CellFillOp{lo_.data(), hi_.data(), grid, arrays_.view().tri_owner, arrays_.view().owner_env, offset_.data(), keys_.data(),
                               items_.data()});
  backend_->SortPairs(num_pairs_, &keys_, &items_);
  // narrow phase per query, then the used slots compacted in query order
  kernels_->Run(nq, PointQueryOp{view, lo_.data(), hi_.data(), keys_.data(), items_.data(), num_pairs_, grid, dt, margin, slot_tri_.data(),
                                 slot_gap_.data(), slot_w_.data(), slot_n_.data(), qcount_.data()});
  const Index total = backend_->ExclusiveScan(nq, qcount_, &qoffset_);
  if (total == 0) return result_;
  if (out_query_.size() < total) {
    const Index cap = total + total / 2;
    out_query_ = Array<Index>(backend_, cap);
    out_tri_ = Array<Index>(backend_, cap);
    out_gap_ = Array<Scalar>(backend_, cap);
    out_w_ = Array<Scalar>(backend_, 3 * cap);
    out_n_ = Array<Scalar>(backend_, 3 * cap);
    out_tx_ = Array<Scalar>(backend_, 9 * cap);
  }
  kernels_->Run(nq, SlotCompactOp{arrays_.view().tri, x_.data(), slot_tri_.data(), slot_gap_.data(), slot_w_.data(), slot_n_.data(),
                                  qoffset_.data(), out_query_.data(), out_tri_.data(), out_gap_.data(), out_w_.data(),
                                  out_n_.data(), out_tx_.data()});
  // download the compact list only
  result_.query.resize(total);
  result_.tri.resize(total);
  result_.gap.resize(total);
  result_.w.resize(3 * std::size_t(total));
  result_.n.resize(3 * std::size_t(total));
  result_.tx.resize(9 * std::size_t(total));
  backend_->CopyToHost(result_.query.data(), out_query_.data(), sizeof(Index) * std::size_t(total));
  backend_->CopyToHost(result_.tri.data(), out_tri_.data(), sizeof(Index) * std::size_t(total));
  backend_->CopyToHost(result_.gap.data(), out_gap_.data(), sizeof(Scalar) * std::size_t(total));
  backend_->CopyToHost(result_.w.data(), out_w_.data(), sizeof(Scalar) * 3 * std::size_t(total));
  backend_->CopyToHost(result_.n.data(), out_n_.data(), sizeof(Scalar) * 3 * std::size_t(total));
  backend_->CopyToHost(result_.tx.data(), out_tx_.data(), sizeof(Scalar) * 9 * std::size_t(total));
  return result_;
}

void Detector::SetShapes(const std::vector<NodeShape>& shapes, const std::vector<Index>& env_ptr, const std::vector<Index>& list) {
  CONDSIM_CHECK(!env_ptr.empty() && env_ptr.front() == 0 && std::size_t(env_ptr.back()) == list.size(),
                "detection: shape env_ptr needs one entry per environment plus one, ending at the list's size");
  for (std::size_t e = 0; e + 1 < env_ptr.size(); ++e)
    CONDSIM_CHECK(env_ptr[e] <= env_ptr[e + 1], "detection: shape env_ptr must be nondecreasing");
  for (Index j : list) CONDSIM_CHECK(j >= 0 && std::size_t(j) < shapes.size(), "detection: shape " << j << " out of range");
  Index max_env = 0;
  for (Index e : scene_.owner_env) max_env = std::max(max_env, e);
  CONDSIM_CHECK(env_ptr.size() >= std::size_t(max_env) + 2, "detection: shape env_ptr covers " << env_ptr.size() - 1
                                                                  << " environments, the scene " << max_env + 1);
  shapes_ = Array<NodeShape>(backend_, shapes);
  shape_env_ptr_ = Array<Index>(backend_, env_ptr);
  shape_list_ = Array<Index>(backend_, list);
  // the leading query points whose vertex is their index (the points ShapeCandidates may test)
  const Index nq = static_cast<Index>(scene_.query.size());
  shape_queries_ = 0;
  while (shape_queries_ < nq && scene_.query[shape_queries_] == shape_queries_) ++shape_queries_;
  // per query point its flag and offset; the compact list holds at most every point
  node_flag_ = Array<Index>(backend_, nq);
  node_offset_ = Array<Index>(backend_, nq);
  node_query_ = Array<Index>(backend_, nq);
  node_x_ = Array<Scalar>(backend_, 3 * nq);
  node_v_ = Array<Scalar>(backend_, 3 * nq);
  node_reach_ = Array<std::uint64_t>(backend_, nq);
  node_out_reach_ = Array<std::uint64_t>(backend_, nq);
  node_pen_ = Array<Scalar>(backend_, nq);
  node_out_pen_ = Array<Scalar>(backend_, nq);
  point_count_ = Array<Index>(backend_, nq);
  point_offset_ = Array<Index>(backend_, nq);
  query_node_.Reserve(backend_, nq, false);  // (SetQueryNodes, whenever the first runs come)
  reach_bits_ = true;
  Index most = 0;
  for (std::size_t e = 0; e + 1 < env_ptr.size(); ++e) {
    reach_bits_ = reach_bits_ && env_ptr[e + 1] - env_ptr[e] <= NodeShapeFlagOp::kReachBits;
    most = std::max(most, env_ptr[e + 1] - env_ptr[e]);
  }
  // the reach bits come down in as few bytes as the environment with the most shapes needs
  reach_bytes_ = std::min<Index>(8, std::max<Index>(1, (most + 7) / 8));
  node_reach_bytes_ = Array<unsigned char>(backend_, reach_bytes_ * nq);
  node_pen_clamped_ = Array<Scalar>(backend_, nq);
}

void Detector::UpdateShapes(Index first, const std::vector<NodeShape>& shapes) {
  CONDSIM_CHECK(first >= 0 && first + static_cast<Index>(shapes.size()) <= shapes_.size(), "detection: shape update beyond the shapes");
  if (shapes.empty()) return;
  backend_->CopyFromHost(shapes_.data() + first, shapes.data(), sizeof(NodeShape) * shapes.size());
}

const NodeCandidates& Detector::ShapeCandidates(Index n, Scalar dt, Scalar margin, bool positions) {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0 && std::isfinite(margin) && margin >= 0, "detection: dt > 0 and margin >= 0");
  CONDSIM_CHECK(n >= 0 && n <= shape_queries_, "detection: " << n << " shape queries, the detector has " << shape_queries_
                                                              << " whose vertex is their index (SetShapes first)");
  candidates_.query.clear();
  candidates_.x.clear();
  candidates_.reach.clear();
  candidates_.v.clear();
  candidates_.pen.clear();
  if (n == 0 || shape_list_.size() == 0) return candidates_;
  DetectView view;
  static_cast<DetectSceneView&>(view) = arrays_.view();
  view.x = x_.data();
  view.v = v_.data();
  // flag, scan, compact: only the flagged points come to the host
  kernels_->Run(n, NodeShapeFlagOp{view, shapes_.data(), shape_env_ptr_.data(), shape_list_.data(), dt, margin, node_flag_.data(),
                                   node_reach_.data(), node_pen_.data()});
  const Index total = backend_->ExclusiveScan(n, node_flag_, &node_offset_);
  if (total == 0) return candidates_;
  node_pen_clamped_.Resize(backend_, total);  // (within its capacity: the query points)
  kernels_->Run(n, NodeShapeCompactOp{x_.data(), v_.data(), node_flag_.data(), node_offset_.data(), node_reach_.data(), node_query_.data(),
                                      node_x_.data(), node_v_.data(), node_out_reach_.data(), node_pen_.data(), node_out_pen_.data(),
                                      reach_bytes_, node_reach_bytes_.data(), node_pen_clamped_.data()});
  candidates_.query.resize(std::size_t(total));
  backend_->CopyToHost(candidates_.query.data(), node_query_.data(), sizeof(Index) * std::size_t(total));
  if (positions || !reach_bits_) CandidatePositions();
  // the backend's reach decisions, or the velocities to take them on the host
  if (reach_bits_) {
    // (their low reach_bytes_ bytes: the others are 0)
    reach_host_.resize(std::size_t(reach_bytes_) * std::size_t(total));
    backend_->CopyToHost(reach_host_.data(), node_reach_bytes_.data(), reach_host_.size());
    candidates_.reach.assign(std::size_t(total), 0);
    for (std::size_t k = 0; k < std::size_t(total); ++k)
      for (std::size_t b = 0; b < std::size_t(reach_bytes_); ++b)
        candidates_.reach[k] |= std::uint64_t(reach_host_[std::size_t(reach_bytes_) * k + b]) << (8 * b);
  } else {
    candidates_.v.resize(3 * std::size_t(total));
    backend_->CopyToHost(candidates_.v.data(), node_v_.data(), sizeof(Scalar) * 3 * std::size_t(total));
  }
  return candidates_;
}

const NodeCandidates& Detector::CandidatePositions() {
  const std::size_t total = candidates_.query.size();
  if (candidates_.x.size() == 3 * total) return candidates_;
  candidates_.x.resize(3 * total);
  backend_->CopyToHost(candidates_.x.data(), node_x_.data(), sizeof(Scalar) * 3 * total);
  return candidates_;
}

Scalar Detector::CandidateMaxPenetration() {
  // (sized to the listed points by ShapeCandidates)
  return candidates_.size() == 0 ? Scalar(0) : backend_->MaxAbs(node_pen_clamped_);
}

const NodeCandidates& Detector::CandidatePenetrations() {
  const std::size_t total = candidates_.query.size();
  if (candidates_.pen.size() == total) return candidates_;
  candidates_.pen.resize(total);
  backend_->CopyToHost(candidates_.pen.data(), node_out_pen_.data(), sizeof(Scalar) * total);
  return candidates_;
}

void Detector::SetQueryNodes(const std::vector<Index>& nodes) {
  CONDSIM_CHECK(nodes.size() <= std::size_t(shape_queries_), "detection: " << nodes.size() << " query nodes for " << shape_queries_
                                                                            << " shape queries");
  if (nodes == query_node_host_) return;
  query_node_host_ = nodes;
  query_node_.Assign(backend_, nodes);
}

void Detector::WriteContacts(const ContactPlan& plan, Scalar dt, Scalar angle, const ContactOutView& out) {
  const Index n = plan.contacts, rows = static_cast<Index>(plan.index.size());
  CONDSIM_CHECK(plan.node_i.size() == plan.index.size() && plan.node_j.size() == plan.index.size() &&
                    plan.env.size() == plan.index.size() && plan.source.size() == plan.index.size() &&
                    plan.slot.size() == plan.index.size(),
                "detection: a contact plan needs index, node_i, node_j, env, source and slot per explicit row");
  // the explicit rows and the runs cover every contact once
  std::vector<unsigned char> covered(std::size_t(n), 0);
  auto cover = [&](Index m) {
    CONDSIM_CHECK(m >= 0 && m < n && covered[std::size_t(m)] == 0, "detection: contact " << m << " of a plan of " << n
                                                                                           << " is outside it or made twice");
    covered[std::size_t(m)] = 1;
  };
  for (Index k = 0; k < rows; ++k) {
    cover(plan.index[std::size_t(k)]);
    const Index c = plan.source[std::size_t(k)], s = plan.slot[std::size_t(k)];
    CONDSIM_CHECK(c < 0 ? s >= 0 && 12 * std::size_t(s) + 12 <= plan.data.size() : c < candidates_.size() && s >= 0 && s < shapes_.size(),
                  "detection: row " << k << " of the plan refers to point " << c << ", slot " << s << " beyond the lists");
  }
  for (const ContactRun& r : plan.runs) {
    CONDSIM_CHECK(reach_bits_ && r.point >= 0 && r.point <= r.point_end && r.point_end <= candidates_.size() && r.count >= 0,
                  "detection: a run of the plan refers to points " << r.point << ".." << r.point_end << " of " << candidates_.size());
    for (Index m = r.first; m < r.first + r.count; ++m) cover(m);
  }
  CONDSIM_CHECK(std::count(covered.begin(), covered.end(), 1) == n, "detection: the plan leaves contacts without a row");
  plan_.Upload(backend_, plan);
  if (n == 0) return;
#define CONDSIM_ROW_RESIZE(T, name) rows_.name.Resize(backend_, n);
  CONDSIM_CONTACT_ROW_FIELDS(CONDSIM_ROW_RESIZE)
#undef CONDSIM_ROW_RESIZE
  const ContactRowOutView row_out = rows_.out_view<ContactRowOutView>();
  if (rows > 0) kernels_->Run(rows, ContactRowScatterOp{plan_.view(), row_out});
  if (!plan.runs.empty()) {
    // per flagged point its rows' offset: the static shapes in reach, scanned
    CONDSIM_CHECK(query_node_.size() > 0, "detection: a plan with runs needs the query points' nodes (SetQueryNodes)");
    const ReachShapes rs{shapes_.data(), shape_env_ptr_.data(), shape_list_.data(), arrays_.view().vertex_owner, arrays_.view().owner_env};
    const Index points = candidates_.size();
    kernels_->Run(points, StaticReachCountOp{rs, node_query_.data(), node_out_reach_.data(), point_count_.data()});
    backend_->ExclusiveScanOnBackend(points, point_count_, &point_offset_);
    for (const ContactRun& r : plan.runs)
      if (r.point_end > r.point)
        kernels_->Run(r.point_end - r.point, ContactRunOp{rs, node_query_.data(), node_out_reach_.data(), point_offset_.data(),
                                                          query_node_.data(), r, row_out});
  }
  kernels_->Run(n, ContactPlanFillOp{rows_.view(), plan_.data.data(), shapes_.data(), node_query_.data(), node_x_.data(),
                                     arrays_.radius.data(), dt, angle, std::cos(angle), std::sin(angle), out});
}

void Detector::ReservePlan(Index contacts) {
  // the largest plan: every contact an explicit row made on the host (12 numbers each)
  ContactPlan bound;
  const std::size_t c = std::size_t(contacts);
  for (std::vector<Index>* f : {&bound.index, &bound.node_i, &bound.node_j, &bound.env, &bound.source, &bound.slot}) f->resize(c);
  bound.data.resize(12 * c);
  plan_.ReserveLike(backend_, bound);
  rows_.Reserve(backend_, contacts);
}

}  // namespace condsim
