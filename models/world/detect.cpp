// The detection stage: the host's contact making, the backend's candidate points and triangles.
#include "models/world/detect.h"

#include <algorithm>
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
  plan_.source.clear();
  plan_.slot.clear();
  ContactWriter out(w.params.dt, tangent_rotation_, &w.body_env, contacts, &meta_, &plan_);
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
  const NodeCandidates& cand = triangles_.ShapeCandidates(w);
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
  const Vec3 p = LoadVec3(cand.x.data(), c);
  // the backend's reach decisions, bit k for the environment's k-th shape (the static shapes,
  // then the analytic rigid bodies: TriangleDetection::SetShapes' list), or the host's from the
  // velocity (the same rule, InReach)
  const bool bits = !cand.reach.empty();
  const Vec3 vp = bits ? Vec3() : LoadVec3(cand.v.data(), c);
  Index bit = 0;
  // S-contacts with the static shapes
  for (const Index si : env_statics_[env]) {
    const StaticShape& shape = w.statics[std::size_t(si)];
    const Proximity prox = ShapeProximity(shape, p);
    const Scalar gap = prox.distance - radius;
    const bool reach = bits ? ((cand.reach[std::size_t(c)] >> bit) & 1) != 0 : InReach(gap, vp, dt, margin);
    ++bit;
    if (!reach) continue;
    // the detector's analytic shapes start with the static shapes (TriangleDetection::SetShapes)
    out->Add(node, -1, ShapeFrame(shape, prox.normal), gap, MixFriction(side, StaticSide(shape.mu1, shape.mu2)),
             {p - radius * prox.normal, side.body, -1, Index(si)}, c, si);
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
  return static_cast<Index>(std::count_if(plan_.source.begin(), plan_.source.end(), [](Index c) { return c >= 0; }));
}

bool DetectStage::remakes() const {
  // bytes: the plan's five indices per contact and 12 numbers per contact made here, against the
  // set's 3 indices and 12 numbers per contact
  const std::size_t total = plan_.source.size(), remade = std::size_t(remade_contacts());
  const std::size_t plan = 5 * sizeof(Index) * total + 12 * sizeof(Scalar) * (total - remade);
  return remade > 0 && plan < (3 * sizeof(Index) + 12 * sizeof(Scalar)) * total;
}

void DetectStage::Write(const ContactSet& contacts, const ContactOutView& out) {
  CONDSIM_CHECK(plan_.source.size() == contacts.node_i.size(), "detection: Write takes the last Run's contacts (" << plan_.source.size()
                                                                  << "), got " << contacts.size());
  plan_.node_i = contacts.node_i;
  plan_.node_j = contacts.node_j;
  plan_.env = contacts.env;
  // the contacts the backend cannot remake: their 12 numbers, in order
  plan_.data.clear();
  Index k = 0;
  for (std::size_t m = 0; m < plan_.source.size(); ++m) {
    if (plan_.source[m] >= 0) continue;
    plan_.slot[m] = k++;
    plan_.data.insert(plan_.data.end(), contacts.frame.begin() + 9 * std::ptrdiff_t(m), contacts.frame.begin() + 9 * std::ptrdiff_t(m) + 9);
    plan_.data.push_back(contacts.phi[m]);
    plan_.data.push_back(contacts.mu1[m]);
    plan_.data.push_back(contacts.mu2[m]);
  }
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
