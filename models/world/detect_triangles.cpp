// Points against triangles on the backend: the detector's scene and this step's contacts.
#include "models/world/detect_triangles.h"

#include <algorithm>

namespace condsim {

void TriangleDetection::AddFemSurfaces(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj) {
  // every surface vertex is a query (radius 0) and a triangle vertex
  for (std::size_t f = 0; f < w.fem.size(); ++f) {
    const FemBody& fb = *w.fem[f];
    const Index owner = w.BodyId(BodyKind::kFem, static_cast<Index>(f)), first = sc->num_vertices();
    sc->self_contact[owner] = fb.self_contact ? 1 : 0;
    sc->depth_limit[owner] = fb.depth_limit;
    std::vector<Index> vertex_of(std::size_t(fb.model->num_nodes()), -1);
    for (std::size_t k = 0; k < fb.surface.size(); ++k) vertex_of[fb.surface[k]] = first + static_cast<Index>(k);
    for (std::size_t k = 0; k < fb.surface.size(); ++k) {
      const Index i = fb.surface[k];
      sc->vertex_owner.push_back(owner);
      sc->query.push_back(first + static_cast<Index>(k));
      sc->radius.push_back(0);
      q_kind_.push_back(BodyKind::kFem);
      q_body_.push_back(static_cast<Index>(f));
      q_local_.push_back(i);
      // element neighbours on the surface (self-contact skips their triangles)
      std::vector<Index> nb;
      for (Index a = fb.adj_ptr[i]; a < fb.adj_ptr[i + 1]; ++a)
        if (vertex_of[fb.adj[a]] >= 0) nb.push_back(vertex_of[fb.adj[a]]);
      std::sort(nb.begin(), nb.end());
      adj->push_back(nb);
    }
    for (std::size_t t = 0; t < fb.tris.size(); t += 3) {
      for (int k = 0; k < 3; ++k) {
        sc->tri.push_back(vertex_of[fb.tris[t + k]]);
        t_nodes_.push_back(fb.tris[t + k]);
      }
      sc->tri_owner.push_back(owner);
      t_owner_kind_.push_back(BodyKind::kFem);
      t_body_.push_back(static_cast<Index>(f));
    }
    gather_offset_.push_back(first);
    gather_x_.emplace_back(w.backend, fb.surface);
    gather_v_.emplace_back(w.backend, fb.surface);
  }
}

void TriangleDetection::AddCables(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj) {
  // cable centres: queries with the cable radius
  for (std::size_t c = 0; c < w.rods.size(); ++c) {
    const RodModel& m = *w.rods[c]->model;
    const Index owner = w.BodyId(BodyKind::kRod, static_cast<Index>(c)), first = sc->num_vertices();
    std::vector<Index> ix, iv;
    for (Index k = 0; k < m.num_segments(); ++k) {
      sc->vertex_owner.push_back(owner);
      sc->query.push_back(first + k);
      sc->radius.push_back(m.radius());
      q_kind_.push_back(BodyKind::kRod);
      q_body_.push_back(static_cast<Index>(c));
      q_local_.push_back(k);
      adj->emplace_back();
      ix.push_back(k);
      iv.push_back(2 * k);
    }
    gather_offset_.push_back(first);
    gather_x_.emplace_back(w.backend, ix);
    gather_v_.emplace_back(w.backend, iv);
  }
}

void TriangleDetection::AddRigidSamples(const WorldBodies& w, DetectScene* sc, std::vector<std::vector<Index>>* adj) {
  // queries with their radii (positions uploaded every step); a mesh body's samples are its
  // vertices, and its triangles join the detector
  rigid_vertex_offset_ = sc->num_vertices();
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const RigidBody& body = w.rigid.body(k);
    rigid_samples_.push_back(ContactSamples(body));
    const std::vector<SurfacePoint>& samples = rigid_samples_.back();
    const Index first = sc->num_vertices(), owner = w.BodyId(BodyKind::kRigid, k);
    rigid_sample_first_.push_back(first - rigid_vertex_offset_);
    if (body.shape == ShapeType::kMesh) {
      const std::vector<Index>& mt = body.mesh->tri;
      for (std::size_t t = 0; t < mt.size(); t += 3) {
        for (int a = 0; a < 3; ++a) {
          sc->tri.push_back(first + mt[t + a]);
          t_nodes_.push_back(mt[t + a]);
        }
        sc->tri_owner.push_back(owner);
        t_owner_kind_.push_back(BodyKind::kRigid);
        t_body_.push_back(k);
      }
      sc->depth_limit[owner] = DepthLimit(body.mesh->x.data(), mt);
    }
    for (std::size_t s = 0; s < samples.size(); ++s) {
      sc->query.push_back(sc->num_vertices());
      sc->vertex_owner.push_back(owner);
      sc->radius.push_back(samples[s].radius);
      q_kind_.push_back(BodyKind::kRigid);
      q_body_.push_back(k);
      q_local_.push_back(static_cast<Index>(s));
      adj->emplace_back();
    }
  }
}

void TriangleDetection::Build(WorldBodies* w) {
  // owners: the bodies (their ids), then the meshes
  DetectScene sc;
  const Index num_bodies = static_cast<Index>(w->ids.size());
  sc.self_contact.assign(w->ids.size() + w->meshes.size(), 0);
  sc.depth_limit.assign(w->ids.size() + w->meshes.size(), 0);
  sc.owner_env = w->body_env;
  sc.owner_env.insert(sc.owner_env.end(), w->mesh_env.begin(), w->mesh_env.end());
  std::vector<std::vector<Index>> adj;  // per vertex
  AddFemSurfaces(*w, &sc, &adj);
  AddCables(*w, &sc, &adj);
  AddRigidSamples(*w, &sc, &adj);
  // static meshes: triangle vertices only
  const Index mesh_first = sc.num_vertices();
  std::vector<Scalar> mesh_x;
  for (std::size_t m = 0; m < w->meshes.size(); ++m) {
    const StaticMesh& mesh = w->meshes[m];
    const Index owner = num_bodies + static_cast<Index>(m), first = sc.num_vertices();
    sc.depth_limit[owner] = mesh.depth_limit;
    for (std::size_t i = 0; i < mesh.x.size() / 3; ++i) {
      sc.vertex_owner.push_back(owner);
      adj.emplace_back();
    }
    for (std::size_t t = 0; t < mesh.tri.size(); t += 3) {
      for (int k = 0; k < 3; ++k) {
        sc.tri.push_back(first + mesh.tri[t + k]);
        t_nodes_.push_back(mesh.tri[t + k]);
      }
      sc.tri_owner.push_back(owner);
      t_owner_kind_.push_back(BodyKind::kStatic);
      t_body_.push_back(static_cast<Index>(m));
    }
    mesh_x.insert(mesh_x.end(), mesh.x.begin(), mesh.x.end());
  }
  sc.adj_ptr.assign(1, 0);
  for (const auto& a : adj) {
    sc.adj.insert(sc.adj.end(), a.begin(), a.end());
    sc.adj_ptr.push_back(static_cast<Index>(sc.adj.size()));
  }
  detector_ = std::make_unique<Detector>(w->backend, sc);
  detector_->Upload(mesh_first, mesh_x, std::vector<Scalar>(mesh_x.size(), 0));
}

void TriangleDetection::Gather(const WorldBodies& w, const std::vector<Scalar>& rx, const std::vector<Scalar>& rv) {
  // FEM surfaces and cable centres on the backend (no host copy), rigid samples uploaded
  for (std::size_t f = 0; f < w.fem.size(); ++f) detector_->Gather(gather_offset_[f], gather_x_[f], gather_v_[f], w.fem[f]->x, w.fem[f]->v);
  for (std::size_t c = 0; c < w.rods.size(); ++c) {
    const std::size_t g = w.fem.size() + c;
    detector_->Gather(gather_offset_[g], gather_x_[g], gather_v_[g], w.rods[c]->model->positions(), w.rods[c]->v);
  }
  detector_->Upload(rigid_vertex_offset_, rx, rv);
}

void TriangleDetection::SetShapes(const WorldBodies& w, const std::vector<std::vector<Index>>& env_statics,
                                  const std::vector<std::vector<Index>>& env_rigid) {
  // the static shapes, then one per rigid body (posed every step); per environment its static
  // shapes, then its analytic rigid bodies, in the host's order (DetectStage::NodeContacts)
  num_statics_ = static_cast<Index>(w.statics.size());
  std::vector<NodeShape> shapes(w.statics.size() + std::size_t(w.rigid.num_bodies()));
  for (std::size_t s = 0; s < w.statics.size(); ++s) {
    shapes[s].shape = w.statics[s];
    shapes[s].moving = 0;
  }
  std::vector<Index> env_ptr(1, 0), list;
  for (std::size_t e = 0; e < env_statics.size(); ++e) {
    list.insert(list.end(), env_statics[e].begin(), env_statics[e].end());
    for (const Index k : env_rigid[e])
      if (w.rigid.body(k).shape != ShapeType::kMesh) list.push_back(num_statics_ + k);  // meshes: the triangles
    env_ptr.push_back(static_cast<Index>(list.size()));
  }
  detector_->SetShapes(shapes, env_ptr, list);
}

const NodeCandidates& TriangleDetection::ShapeCandidates(const WorldBodies& w, bool positions) {
  // the rigid bodies' shapes at this step's poses (host state: one record per body)
  std::vector<NodeShape> rigid(std::size_t(w.rigid.num_bodies()));
  for (Index k = 0; k < w.rigid.num_bodies(); ++k) {
    const RigidBody& body = w.rigid.body(k);
    NodeShape& sh = rigid[std::size_t(k)];
    sh.shape = w.rigid.ShapeAt(k);
    sh.x = body.x;
    sh.v = body.v;
    sh.omega = body.omega;
    sh.moving = 1;
  }
  detector_->UpdateShapes(num_statics_, rigid);
  return detector_->ShapeCandidates(rigid_vertex_offset_, w.params.dt, w.params.contact_margin, positions);
}

void TriangleDetection::Detect(const WorldBodies& w, Nodalizer* nodes, ContactWriter* out) {
  const DetectResult& hits = detector_->Detect(w.params.dt, w.params.contact_margin);
  for (Index h = 0; h < hits.size(); ++h) {
    const Index q = hits.query[h], t = hits.tri[h];
    const Vec3 n = LoadVec3(hits.n.data(), h), wt = LoadVec3(hits.w.data(), h);
    const Scalar gap = hits.gap[h];
    // the query's side: an FEM node, a cable centre node, or a rigid virtual node at p - r n
    const BodyKind kind = q_kind_[q];
    const Index qb = q_body_[q], ql = q_local_[q], body_i = w.BodyId(kind, qb);
    if (w.Failed(w.body_env[std::size_t(body_i)])) continue;  // a failed environment is frozen
    Index node_i = -1;
    ContactSide side_i;
    if (kind == BodyKind::kFem) {
      node_i = w.system->part_offset(w.fem[qb]->part) + ql;
      side_i = BodySide(kind, body_i, w.fem[qb]->mu);
    } else if (kind == BodyKind::kRod) {
      node_i = w.system->part_offset(w.rods[qb]->part) + 2 * ql;
      side_i = BodySide(kind, body_i, w.rods[qb]->mu);
    } else {
      side_i = BodySide(kind, body_i, w.rigid.body(qb).mu1);
    }
    // contact point on the triangle, and the query's point
    const Index* tn = t_nodes_.data() + 3 * std::size_t(t);
    const BodyKind tkind = t_owner_kind_[t];
    const Index tb = t_body_[t];
    // two jointed rigid bodies never touch
    if (tkind == BodyKind::kRigid && kind == BodyKind::kRigid && w.Jointed(qb, tb)) continue;
    // the triangle's vertices as the detector held them (FEM positions, rigid samples, mesh)
    Vec3 tri_x[3];
    for (int k = 0; k < 3; ++k) tri_x[k] = LoadVec3(hits.tx.data(), 3 * h + k);
    const Vec3 qpt = wt[0] * tri_x[0] + wt[1] * tri_x[1] + wt[2] * tri_x[2];
    const Scalar radius = detector_->scene().radius[q];
    const Vec3 pos = qpt + (gap + radius) * n;  // the query point p
    const Vec3 contact = pos - radius * n;
    if (kind == BodyKind::kRigid) node_i = nodes->RigidPoint(w, qb, contact);
    const Mat3 frame = ContactFrame(n);
    if (tkind == BodyKind::kRigid) {
      // D-contact with a rigid virtual node at the closest point of the body's mesh
      const RigidBody& other = w.rigid.body(tb);
      const Index body_j = w.BodyId(BodyKind::kRigid, tb);
      const Index node_j = nodes->RigidPoint(w, tb, qpt);
      out->Add(node_i, node_j, frame, gap, MixFriction(side_i, BodySide(tkind, body_j, other.mu1)),
               {contact, body_i, body_j, -1});
    } else if (tkind == BodyKind::kFem) {
      // D-contact with a barycentric virtual node on the FEM triangle
      const Index off = w.system->part_offset(w.fem[tb]->part);
      const Index hosts[3] = {off + tn[0], off + tn[1], off + tn[2]};
      const Scalar weights[3] = {wt[0], wt[1], wt[2]};
      const Index node_j = nodes->Barycentric(w, 3, hosts, weights);
      const Index body_j = w.BodyId(BodyKind::kFem, tb);
      out->Add(node_i, node_j, frame, gap, MixFriction(side_i, BodySide(tkind, body_j, w.fem[tb]->mu)),
               {contact, body_i, body_j, -1});
    } else {
      // S-contact against the static mesh
      const StaticMesh& m = w.meshes[tb];
      ContactMeta meta{contact, body_i, -1, -1};
      meta.mesh = tb;
      out->Add(node_i, -1, frame, gap, MixFriction(side_i, StaticSide(m.mu, m.mu)), meta);
    }
  }
}

}  // namespace condsim
