// The detection stage: the host's contact making, the backend's candidate points and triangles.
#include "models/world/detect.h"

#include <algorithm>
#include <bitset>
#include <cmath>

#include "models/collision/primitives.h"

namespace condsim {

void DetectStage::Build(WorldBodies* w) {
  triangles_.Build(w);
  // per environment its static shapes and rigid bodies (detection never crosses environments)
  env_statics_.assign(std::size_t(w->num_envs()), {});
  env_rigid_.assign(std::size_t(w->num_envs()), {});
  for (std::size_t s = 0; s < w->statics.size(); ++s) env_statics_[std::size_t(w->static_env[s])].push_back(Index(s));
  for (Index k = 0; k < w->rigid.num_bodies(); ++k) env_rigid_[std::size_t(w->Env(BodyKind::kRigid, k))].push_back(k);
  triangles_.SetShapes(*w, env_statics_, env_rigid_);
  // the cable pairs of one environment (self-contact: a cable with itself); links: consecutive
  // centres of one cable
  auto links = [](const RodModel& m) {
    std::vector<Index> l;
    for (Index c = 0; c < m.num_cables(); ++c)
      for (Index s = m.cable_start()[c]; s + 1 < m.cable_start()[c + 1]; ++s) l.push_back(s);
    return l;
  };
  cable_pairs_.clear();
  for (std::size_t a = 0; a < w->rods.size(); ++a)
    for (std::size_t b = a; b < w->rods.size(); ++b) {
      if (!((a != b || w->rods[a]->self_contact) && w->Env(BodyKind::kRod, Index(b)) == w->Env(BodyKind::kRod, Index(a)))) continue;
      CablePair pair;
      pair.a = a;
      pair.b = b;
      pair.links_a = links(*w->rods[a]->model);
      pair.links_b = links(*w->rods[b]->model);
      pair.detector = std::make_unique<LinkDetector>(w->backend, pair.links_a, pair.links_b, w->rods[a]->model->num_segments(),
                                                     w->rods[b]->model->num_segments(), a == b);
      cable_pairs_.push_back(std::move(pair));
    }
}

ContactBounds DetectStage::PotentialContacts(const WorldBodies& w, Index per_point) const {
  // the points by kind: FEM surface nodes and cable centres (their contacts put a virtual node on
  // the other side only, and only where a rigid body or a triangle can be that side), the links
  // of cables in a cable pair (a barycentric node of 2 hosts on each side), rigid surface samples
  // (a rigid point of their own, 2 hosts, and one on the other side, at most a triangle's 3)
  std::size_t nodes = 0, links = 0, paired = 0, samples = 0;
  for (const auto& fb : w.fem) nodes += fb->surface.size();
  for (std::size_t a = 0; a < w.rods.size(); ++a) {
    const RodModel& m = *w.rods[a]->model;
    const std::size_t rod_links = std::size_t(m.num_segments() - m.num_cables());
    nodes += std::size_t(m.num_segments());
    links += rod_links;
    if (std::any_of(cable_pairs_.begin(), cable_pairs_.end(), [&](const CablePair& p) { return p.a == a || p.b == a; })) paired += rod_links;
  }
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) samples += triangles_.samples(k).size();
  const bool other_side = w.rigid.num_bodies() > 0 || !w.fem.empty();
  const std::size_t r = std::size_t(per_point), side = other_side ? nodes : 0;
  // (h + 1)^2 terms per virtual node of h hosts (eq. 15)
  ContactBounds b;
  b.contacts = CheckedIndex(r * (nodes + links + samples), "potential contacts");
  b.virtual_nodes = CheckedIndex(r * (side + 2 * paired + 2 * samples), "potential virtual nodes");
  b.virtual_entries = CheckedIndex(r * (3 * side + 4 * paired + 5 * samples), "potential virtual-node hosts");
  b.terms = CheckedIndex(r * (16 * side + 18 * paired + 25 * samples), "potential virtual-node terms");
  b.rigid_bodies = w.rigid.num_bodies();
  return b;
}

void DetectStage::Run(const WorldBodies& w, Nodalizer* nodes, ContactSet* contacts) {
  meta_.clear();
  nodes->Reset();
  dt_ = w.params.dt;
  sources_.source.clear();
  sources_.slot.clear();
  runs_.clear();
  in_run_.clear();
  deferred_.clear();
  deferred_point_.clear();
  target_ = contacts;
  statics_ = &w.statics;
  ContactWriter out(w.params.dt, tangent_rotation_, &w.body_env, contacts, &meta_, &sources_);
  // this step's rigid surface samples (world positions and velocities, 3 each per sample, bodies
  // in order)
  std::vector<Scalar> rx, rv;
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const RigidBody& body = w.rigid.body(k);
    const Mat3 rot = ToMatrix(body.q);
    for (const SurfacePoint& sp : triangles_.samples(k)) {
      const Vec3 p = body.x + rot * sp.local, vp = body.v + Cross(body.omega, p - body.x);
      for (int d = 0; d < 3; ++d) {
        rx.push_back(p[d]);
        rv.push_back(vp[d]);
      }
    }
  }
  RigidContacts(w, rx, rv, nodes, &out);
  // this step's detector vertices on the backend; the FEM surface nodes and cable centres within
  // reach of an analytic shape (flagged on the backend, only they come to the host), in query
  // order: FEM bodies' surfaces, then cables
  triangles_.Gather(w, rx, rv);
  const NodeCandidates& cand = FlaggedPoints(w);
  Index c = 0;
  // FEM surface nodes against the static world and the rigid bodies
  for (; c < cand.size() && triangles_.query_kind(cand.query[c]) == BodyKind::kFem; ++c) {
    const Index q = cand.query[c], f = triangles_.query_body(q);
    const FemBody& fb = *w.fem[std::size_t(f)];
    if (w.Failed(w.Env(BodyKind::kFem, f))) continue;
    const ContactSide side = BodySide(BodyKind::kFem, w.BodyId(BodyKind::kFem, f), fb.mu);
    NodeContacts(w, cand, c, w.system->part_offset(fb.part) + triangles_.query_local(q), 0, side, nodes, &out);
  }
  // points against triangles on the backend
  triangles_.Detect(w, nodes, &out);
  // cable segment centres (radius r) against the static world and the rigid bodies
  for (; c < cand.size(); ++c) {
    const Index q = cand.query[c], rod = triangles_.query_body(q), seg = triangles_.query_local(q);
    const RodBody& rb = *w.rods[std::size_t(rod)];
    if (w.Failed(w.Env(BodyKind::kRod, rod))) continue;
    const ContactSide side = BodySide(BodyKind::kRod, w.BodyId(BodyKind::kRod, rod), rb.mu);
    NodeContacts(w, cand, c, w.system->part_offset(rb.part) + 2 * seg, rb.model->radius(), side, nodes, &out);
  }
  // cable links against each other (pairs found on the backend)
  for (CablePair& pair : cable_pairs_)
    if (!w.Failed(w.Env(BodyKind::kRod, Index(pair.a)))) CableLinks(w, &pair, nodes, &out);
  if (!deferred_.empty()) deferred_point_.resize(std::size_t(contacts->size()), -1);
  MakeRuns(w, cand, *contacts);
}

void DetectStage::MakeRuns(const WorldBodies& w, const NodeCandidates& cand, const ContactSet& contacts) {
  const Index n = contacts.size();
  in_run_.assign(std::size_t(n), 0);
  if (cand.reach.empty()) return;
  // a flagged point's S-contacts with static shapes follow each other, one per static bit in bit
  // order (NodeContacts); consecutive points whose blocks follow each other make one run
  const std::vector<Index>& source = sources_.source;
  for (Index m = 0; m < n;) {
    const Index c = source[std::size_t(m)];
    if (c < 0) {
      ++m;
      continue;
    }
    const std::size_t statics = StaticShapes(w, cand.query[std::size_t(c)]);
    const std::uint64_t bits = cand.reach[std::size_t(c)] & (statics >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << statics) - 1);
    const Index len = static_cast<Index>(std::bitset<64>(bits).count());
    bool block = m + len <= n;
    for (Index k = m; k < m + len && block; ++k) block = source[std::size_t(k)] == c;
    if (!block) {
      ++m;
      continue;
    }
    if (!runs_.empty() && runs_.back().point_end == c && runs_.back().first + runs_.back().count == m) {
      runs_.back().point_end = c + 1;
      runs_.back().count += len;
    } else {
      runs_.push_back({m, len, c, c + 1});
    }
    std::fill(in_run_.begin() + m, in_run_.begin() + m + len, 1);
    m += len;
  }
  if (runs_.empty()) return;
  // the flagged points' nodes (the solver's numbering, as NodeContacts gives them)
  const Index points = triangles_.num_point_queries();
  query_node_.resize(std::size_t(points));
  for (Index q = 0; q < points; ++q) {
    const Index b = triangles_.query_body(q), local = triangles_.query_local(q);
    query_node_[std::size_t(q)] = triangles_.query_kind(q) == BodyKind::kFem
                                      ? w.system->part_offset(w.fem[std::size_t(b)]->part) + local
                                      : w.system->part_offset(w.rods[std::size_t(b)]->part) + 2 * local;
  }
}

const NodeCandidates& DetectStage::FlaggedPoints(const WorldBodies& w) {
  // their indices and shapes in reach first; the positions only when some point reaches an
  // analytic rigid body (its D-contact's virtual node is made here), else the penetrations (the
  // step's statistic: with one environment their maximum alone) and the S-contacts' frames stay
  // on the backend
  max_penetration_ = -1;
  const NodeCandidates& cand = triangles_.ShapeCandidates(w, false);
  if (!cand.x.empty() || cand.size() == 0) return cand;
  bool positions = false;
  for (Index c = 0; c < cand.size() && !positions; ++c) {
    const std::size_t statics = StaticShapes(w, cand.query[c]);
    positions = statics < 64 && (cand.reach[std::size_t(c)] >> statics) != 0;
  }
  if (positions) return triangles_.detector().CandidatePositions();
  if (w.num_envs() > 1) return triangles_.detector().CandidatePenetrations();
  max_penetration_ = triangles_.detector().CandidateMaxPenetration();
  return cand;
}

std::size_t DetectStage::StaticShapes(const WorldBodies& w, Index q) const {
  return env_statics_[std::size_t(w.Env(triangles_.query_kind(q), triangles_.query_body(q)))].size();
}

bool DetectStage::Deferred(Index m) const { return std::size_t(m) < deferred_point_.size() && deferred_point_[std::size_t(m)] >= 0; }

Scalar DetectStage::Penetration(const ContactSet& contacts, Index m) const {
  if (!Deferred(m)) return -contacts.phi[std::size_t(m)] * dt_;
  // (one environment: the points' deepest, or 0, stands for each; the step's maximum is the same)
  if (max_penetration_ >= 0) return max_penetration_;
  return triangles_.detector().candidates().pen[std::size_t(deferred_point_[std::size_t(m)])];
}

void DetectStage::Complete() {
  if (deferred_.empty()) return;
  const NodeCandidates& cand = triangles_.detector().CandidatePositions();
  ContactWriter out(dt_, tangent_rotation_, nullptr, target_, &meta_);
  for (const DeferredContact& d : deferred_) {
    const StaticShape& shape = (*statics_)[std::size_t(d.shape)];
    const Vec3 p = LoadVec3(cand.x.data(), d.point);
    const ShapeContact sc = MakeShapeContact(shape, ShapeProximity(shape, p), p, d.radius);
    out.Fill(d.m, sc.frame, sc.gap, sc.position);
  }
  deferred_.clear();
  deferred_point_.clear();
}

void DetectStage::RigidContacts(const WorldBodies& w, const std::vector<Scalar>& rx, const std::vector<Scalar>& rv, Nodalizer* nodes,
                                ContactWriter* out) {
  const Scalar dt = w.params.dt, margin = w.params.contact_margin;
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const RigidBody& body = w.rigid.body(k);
    const Index id = w.BodyId(BodyKind::kRigid, k), env = w.body_env[std::size_t(id)];
    if (w.Failed(env)) continue;
    const ContactSide side = BodySide(BodyKind::kRigid, id, body.mu1);
    const std::vector<SurfacePoint>& samples = triangles_.samples(k);
    for (std::size_t sample = 0; sample < samples.size(); ++sample) {
      const SurfacePoint& s = samples[sample];
      const Index at = triangles_.sample_first(k) + static_cast<Index>(sample);
      const Vec3 p = LoadVec3(rx.data(), at), vp = LoadVec3(rv.data(), at);
      // against the static shapes
      for (const Index si : env_statics_[std::size_t(env)]) {
        const StaticShape& shape = w.statics[std::size_t(si)];
        const Proximity prox = ShapeProximity(shape, p);
        const Scalar gap = prox.distance - s.radius;
        if (!InReach(gap, vp, dt, margin)) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index node = nodes->RigidPoint(w, k, c);
        out->Add(node, -1, ShapeFrame(shape, prox.normal), gap, MixFriction(side, StaticSide(shape.mu1, shape.mu2)),
                 {c, id, -1, Index(si)});
      }
      // against the other rigid bodies' analytic shapes (mesh bodies: through the detector)
      for (const Index k2 : env_rigid_[std::size_t(env)]) {
        if (k2 == k || w.Jointed(k, k2) || w.rigid.body(k2).shape == ShapeType::kMesh) continue;
        const RigidBody& other = w.rigid.body(k2);
        const Proximity prox = ShapeProximity(w.rigid.ShapeAt(k2), p);
        const Scalar gap = prox.distance - s.radius;
        const Vec3 vq = other.v + Cross(other.omega, prox.point - other.x);
        if (!InReach(gap, vp - vq, dt, margin)) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index ni = nodes->RigidPoint(w, k, c), nj = nodes->RigidPoint(w, k2, prox.point);
        const Index id2 = w.BodyId(BodyKind::kRigid, k2);
        out->Add(ni, nj, ContactFrame(prox.normal), gap, MixFriction(side, BodySide(BodyKind::kRigid, id2, other.mu1)),
                 {c, id, id2, -1});
      }
    }
  }
}

void DetectStage::NodeContacts(const WorldBodies& w, const NodeCandidates& cand, Index c, Index node, Scalar radius, const ContactSide& side,
                               Nodalizer* nodes, ContactWriter* out) {
  const Scalar dt = w.params.dt, margin = w.params.contact_margin;
  const std::size_t env = std::size_t(w.body_env[std::size_t(side.body)]);
  // without the position (FlaggedPoints) the S-contacts are deferred: the backend makes them
  const bool deferred = cand.x.empty();
  const Vec3 p = deferred ? Vec3() : LoadVec3(cand.x.data(), c);
  // the backend's reach decisions, bit k for the environment's k-th shape (the static shapes,
  // then the analytic rigid bodies: TriangleDetection::SetShapes' list), or the host's from the
  // velocity (the same rule, InReach)
  const bool bits = !cand.reach.empty();
  const Vec3 vp = bits ? Vec3() : LoadVec3(cand.v.data(), c);
  Index bit = 0;
  // S-contacts with the static shapes
  for (const Index si : env_statics_[env]) {
    const StaticShape& shape = w.statics[std::size_t(si)];
    const Friction mu = MixFriction(side, StaticSide(shape.mu1, shape.mu2));
    if (deferred) {
      if (((cand.reach[std::size_t(c)] >> bit++) & 1) == 0) continue;
      const Index m = target_->size();
      deferred_.push_back({m, c, si, radius});
      deferred_point_.resize(std::size_t(m), -1);
      deferred_point_.push_back(c);
      out->AddDeferred(node, mu, {Vec3(), side.body, -1, Index(si)}, c, si);
      continue;
    }
    const Proximity prox = ShapeProximity(shape, p);
    const Scalar gap = prox.distance - radius;
    const bool reach = bits ? ((cand.reach[std::size_t(c)] >> bit) & 1) != 0 : InReach(gap, vp, dt, margin);
    ++bit;
    if (!reach) continue;
    // the detector's analytic shapes start with the static shapes (TriangleDetection::SetShapes)
    const ShapeContact sc = MakeShapeContact(shape, prox, p, radius);
    out->Add(node, -1, sc.frame, sc.gap, mu, {sc.position, side.body, -1, Index(si)}, c, si);
  }
  // D-contacts with the rigid bodies' analytic shapes
  for (const Index k : env_rigid_[env]) {
    const RigidBody& other = w.rigid.body(k);
    if (other.shape == ShapeType::kMesh) continue;  // through the detector
    const Proximity prox = ShapeProximity(w.rigid.ShapeAt(k), p);
    const Scalar gap = prox.distance - radius;
    const bool reach = bits ? ((cand.reach[std::size_t(c)] >> bit) & 1) != 0
                            : InReach(gap, vp - (other.v + Cross(other.omega, prox.point - other.x)), dt, margin);
    ++bit;
    if (!reach) continue;
    const Index nj = nodes->RigidPoint(w, k, prox.point);
    const Index id = w.BodyId(BodyKind::kRigid, k);
    out->Add(node, nj, ContactFrame(prox.normal), gap, MixFriction(side, BodySide(BodyKind::kRigid, id, other.mu1)),
             {p - radius * prox.normal, side.body, id, -1});
  }
}

Index DetectStage::remade_contacts() const {
  return static_cast<Index>(std::count_if(sources_.source.begin(), sources_.source.end(), [](Index c) { return c >= 0; }));
}

bool DetectStage::remakes() const {
  // bytes: the plan's six indices per explicit row and 12 numbers per contact made here, against
  // the set's 3 indices and 12 numbers per contact
  const std::size_t total = sources_.source.size(), remade = std::size_t(remade_contacts());
  const std::size_t rows = total - std::size_t(std::count(in_run_.begin(), in_run_.end(), 1));
  const std::size_t plan = 6 * sizeof(Index) * rows + 12 * sizeof(Scalar) * (total - remade);
  return remade > 0 && plan < (3 * sizeof(Index) + 12 * sizeof(Scalar)) * total;
}

void DetectStage::Write(const ContactSet& contacts, const ContactOutView& out) {
  const std::size_t n = sources_.source.size();
  CONDSIM_CHECK(n == contacts.node_i.size(), "detection: Write takes the last Run's contacts (" << n << "), got " << contacts.size());
  // the explicit rows: the contacts outside the runs; the numbers of those made here, in order
  for (std::vector<Index>* f : {&plan_.index, &plan_.node_i, &plan_.node_j, &plan_.env, &plan_.source, &plan_.slot}) f->clear();
  plan_.data.clear();
  Index k = 0;
  for (std::size_t m = 0; m < n; ++m) {
    if (in_run_[m]) continue;
    const Index c = sources_.source[m];
    plan_.index.push_back(Index(m));
    plan_.node_i.push_back(contacts.node_i[m]);
    plan_.node_j.push_back(contacts.node_j[m]);
    plan_.env.push_back(contacts.env[m]);
    plan_.source.push_back(c);
    plan_.slot.push_back(c >= 0 ? sources_.slot[m] : k++);
    if (c >= 0) continue;
    plan_.data.insert(plan_.data.end(), contacts.frame.begin() + 9 * std::ptrdiff_t(m), contacts.frame.begin() + 9 * std::ptrdiff_t(m) + 9);
    plan_.data.push_back(contacts.phi[m]);
    plan_.data.push_back(contacts.mu1[m]);
    plan_.data.push_back(contacts.mu2[m]);
  }
  plan_.runs = runs_;
  plan_.contacts = Index(n);
  if (!runs_.empty()) triangles_.detector().SetQueryNodes(query_node_);
  triangles_.detector().WriteContacts(plan_, dt_, tangent_rotation_, out);
}

void DetectStage::Reserve(Index contacts) {
  if (triangles_.has_detector()) triangles_.detector().ReservePlan(contacts);
}

void DetectStage::CableLinks(const WorldBodies& w, CablePair* pair, Nodalizer* nodes, ContactWriter* out) {
  const std::size_t a = pair->a, b = pair->b;
  const RodModel& ma = *w.rods[a]->model;
  const RodModel& mb = *w.rods[b]->model;
  const Scalar dt = w.params.dt, margin = w.params.contact_margin;
  const Scalar ra = ma.radius(), rb = mb.radius();
  const Index off_a = w.system->part_offset(w.rods[a]->part), off_b = w.system->part_offset(w.rods[b]->part);
  const ContactSide side_a = BodySide(BodyKind::kRod, w.BodyId(BodyKind::kRod, static_cast<Index>(a)), w.rods[a]->mu);
  const ContactSide side_b = BodySide(BodyKind::kRod, w.BodyId(BodyKind::kRod, static_cast<Index>(b)), w.rods[b]->mu);
  if (pair->links_a.empty() || pair->links_b.empty()) return;
  // in self-contact, links closer along the cable than 2 + (ra + rb) / L links are neighbours,
  // never contacts; the broad phase grows b's link boxes by what two links can close within the
  // step (LinkDetector: per link of a ascending, its candidates ascending)
  const Index skip = a == b ? 2 + static_cast<Index>(std::ceil((ra + rb) / ma.segment_length())) : 0;
  const LinkHits& hits = pair->detector->Detect(w.rods[a]->model->positions(), w.rods[a]->v, w.rods[b]->model->positions(), w.rods[b]->v, ra, rb,
                                                Scalar(0.5) * ma.segment_length(), skip, dt, margin);
  const Friction mu = MixFriction(side_a, side_b);
  for (Index h = 0; h < hits.size(); ++h) {
    const Index s = pair->links_a[std::size_t(hits.a[h])], u = pair->links_b[std::size_t(hits.b[h])];
    // the pair's contact as the backend's narrow phase made it (LinkNarrow)
    const Scalar* d = hits.data.data() + 9 * std::size_t(h);
    LinkContact lc;
    lc.st = {d[0], d[1]};
    lc.gap = d[2];
    lc.n = Vec3(d[3], d[4], d[5]);
    lc.pp = Vec3(d[6], d[7], d[8]);
    const Index hp[2] = {off_a + 2 * s, off_a + 2 * s + 2}, hq[2] = {off_b + 2 * u, off_b + 2 * u + 2};
    const Scalar wp[2] = {1 - lc.st.s, lc.st.s}, wq[2] = {1 - lc.st.t, lc.st.t};
    const Index ni = nodes->Barycentric(w, 2, hp, wp), nj = nodes->Barycentric(w, 2, hq, wq);
    out->Add(ni, nj, ContactFrame(lc.n), lc.gap, mu, {lc.pp - ra * lc.n, side_a.body, side_b.body, -1});
  }
}

}  // namespace condsim
