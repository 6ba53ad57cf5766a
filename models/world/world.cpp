// The world stepper: detection, nodalization with virtual nodes, the COND solve, the update.
#include "models/world/world.h"

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "condsim/error.h"
#include "models/collision/broad_phase.h"
#include "models/collision/primitives.h"
#include "models/integrate/midpoint.h"

namespace condsim {

struct World::FemBody {
  std::string name;
  std::unique_ptr<FemModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> x, v, b, vhat;
  std::vector<Index> surface;  // boundary nodes
  std::vector<Index> tris;     // boundary triangles, outward (3 nodes each)
  std::vector<Index> adj_ptr, adj;  // nodes sharing an element with a node (itself included)
  std::vector<Scalar> mass;    // lumped [kg]
  Scalar depth_limit = 0;      // deepest vertex-triangle penetration still detected [m]
  Scalar mu = 0.5;
  bool self_contact = true;
  Index part = -1;
  std::vector<Index> patch;    // body-mode patch of each node (from the first step's positions)
  bool Adjacent(Index i, Index j) const { return std::binary_search(adj.begin() + adj_ptr[i], adj.begin() + adj_ptr[i + 1], j); }
};

struct World::RodBody {
  std::string name;
  std::unique_ptr<RodModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> v, b, vhat;  // 6 per segment: (v, w)
  Scalar mu = 0.5;
  bool self_contact = true;
  Index part = -1;
};

namespace {

// a surface's depth limit: a quarter of its mean triangle edge (x: 3 per vertex; 0 without
// triangles). Deeper vertices are taken to be across a thin wall, not inside
Scalar DepthLimit(const Scalar* x, const std::vector<Index>& tri) {
  if (tri.empty()) return 0;
  Scalar sum = 0;
  for (std::size_t t = 0; t < tri.size(); t += 3)
    for (int k = 0; k < 3; ++k) sum += Norm(LoadVec3(x, tri[t + k]) - LoadVec3(x, tri[t + (k + 1) % 3]));
  return Scalar(0.25) * sum / Scalar(tri.size());
}

// contact frame against a shape: rows (n, t1, t2); an anisotropic shape (mu1 != mu2) puts t1
// along its local x axis projected on the tangent plane, so mu1 acts along that axis
Mat3 ShapeFrame(const StaticShape& s, const Vec3& n) {
  const Mat3 frame = ContactFrame(n);  // also rejects a zero or non-finite normal
  if (s.mu1 == s.mu2) return frame;
  const Vec3 ax = ToMatrix(s.orientation).Col(0);
  Vec3 t1 = ax - Dot(ax, n) * n;
  if (Norm(t1) < 1e-9) return frame;
  t1 = Normalized(t1);
  return Mat3::FromRows(n, t1, Cross(n, t1));
}

// rotates the tangent rows of a frame about its normal by angle
Mat3 RotateTangents(const Mat3& r, Scalar angle) {
  if (angle == 0) return r;
  const Scalar c = std::cos(angle), s = std::sin(angle);
  return Mat3::FromRows(r.Row(0), c * r.Row(1) + s * r.Row(2), -s * r.Row(1) + c * r.Row(2));
}

}  // namespace

void WorldParams::Validate() const {
  CONDSIM_CHECK(std::isfinite(dt) && dt > 0, "world: dt must be > 0 [s], got " << dt);
  CONDSIM_CHECK(std::isfinite(gravity[0]) && std::isfinite(gravity[1]) && std::isfinite(gravity[2]), "world: gravity must be finite");
  CONDSIM_CHECK(std::isfinite(kv) && kv > 0, "world: kv must be > 0 [N s/m], got " << kv);
  CONDSIM_CHECK(std::isfinite(contact_margin) && contact_margin >= 0, "world: contact_margin must be >= 0 [m], got " << contact_margin);
  cond.Validate();
}

World::World(Backend* backend, const WorldParams& params) : backend_(backend), params_(params) { params_.Validate(); }

World::~World() = default;

Index World::AddStatic(const StaticShape& shape) {
  CONDSIM_CHECK(!finalized_, "world: shapes must be added before the first step");
  shape.Validate("static shape " + std::to_string(statics_.size()));
  statics_.push_back(shape);
  return static_cast<Index>(statics_.size()) - 1;
}

Index World::AddStaticMesh(const SurfaceMesh& mesh, Scalar mu, const std::string& name) {
  CONDSIM_CHECK(!finalized_, "world: meshes must be added before the first step");
  const std::string where = "world: static mesh '" + name + "'";
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, where << ": friction mu must be >= 0, got " << mu);
  CONDSIM_CHECK(mesh.x.size() % 3 == 0 && !mesh.x.empty(), where << ": x needs 3 coordinates per vertex");
  CONDSIM_CHECK(mesh.triangles.size() % 3 == 0 && !mesh.triangles.empty(), where << ": triangles need 3 vertices each");
  for (double c : mesh.x) CONDSIM_CHECK(std::isfinite(c), where << ": vertex coordinates must be finite");
  const Index nv = static_cast<Index>(mesh.x.size() / 3);
  StaticMesh m;
  m.name = name;
  m.mu = mu;
  m.x.assign(mesh.x.begin(), mesh.x.end());
  m.tri = mesh.triangles;
  for (std::size_t t = 0; t < m.tri.size(); t += 3) {
    for (int k = 0; k < 3; ++k)
      CONDSIM_CHECK(m.tri[t + k] >= 0 && m.tri[t + k] < nv, where << ": triangle " << t / 3 << " has vertex " << m.tri[t + k]
                                                                   << " out of range [0, " << nv << ")");
    const Vec3 a = LoadVec3(m.x.data(), m.tri[t]), b = LoadVec3(m.x.data(), m.tri[t + 1]), c = LoadVec3(m.x.data(), m.tri[t + 2]);
    CONDSIM_CHECK(Norm(Cross(b - a, c - a)) > 0, where << ": triangle " << t / 3 << " is degenerate (zero area)");
  }
  m.depth_limit = DepthLimit(m.x.data(), m.tri);
  meshes_.push_back(std::move(m));
  return static_cast<Index>(meshes_.size()) - 1;
}

Index World::AddRigid(const RigidBody& body) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  body.Validate("rigid body " + std::to_string(bodies_.size()));
  bodies_.push_back({0, static_cast<Index>(rigid_init_.size())});
  rigid_init_.push_back(body);
  if (!rigid_wrench_.empty()) rigid_wrench_.resize(6 * rigid_init_.size(), 0);
  return static_cast<Index>(bodies_.size()) - 1;
}

Index World::AddJoint(const Joint& joint) {
  CONDSIM_CHECK(!finalized_, "world: joints must be added before the first step");
  const std::string where = "joint " + std::to_string(joints_.size());
  Joint j = joint;
  CheckBody(joint.body_i, 0);
  j.body_i = bodies_[joint.body_i].second;
  if (joint.body_j >= 0) {
    CheckBody(joint.body_j, 0);
    j.body_j = bodies_[joint.body_j].second;
  } else {
    j.body_j = -1;
  }
  j.Validate(where);
  joints_.push_back(j);
  if (j.body_j >= 0) {
    jointed_.push_back({std::min(j.body_i, j.body_j), std::max(j.body_i, j.body_j)});
    std::sort(jointed_.begin(), jointed_.end());
  }
  return static_cast<Index>(joints_.size()) - 1;
}

bool World::Jointed(Index a, Index b) const {
  return std::binary_search(jointed_.begin(), jointed_.end(), std::make_pair(std::min(a, b), std::max(a, b)));
}

void World::CheckJoint(Index joint) const {
  CONDSIM_CHECK(joint >= 0 && std::size_t(joint) < joints_.size(), "world: joint " << joint << " does not exist");
}

void World::SetJointDrive(Index joint, const JointDrive& drive) {
  CheckJoint(joint);
  if (!finalized_) Finalize();
  rigid_.SetJointDrive(joint, drive);
}

Scalar World::JointPosition(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? rigid_.JointPosition(joint) : 0;
}

Scalar World::JointRate(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? rigid_.JointRate(joint) : 0;
}

JointError World::JointConstraintError(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? rigid_.JointConstraintError(joint) : JointError();
}

Index World::AddFem(const TetMesh& mesh, const FemMaterial& material, const std::string& name, Scalar mu, bool self_contact) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, "world: " << name << ": friction mu must be >= 0, got " << mu);
  auto body = std::make_unique<FemBody>();
  body->mu = mu;
  body->self_contact = self_contact;
  body->name = name;
  body->model = std::make_unique<FemModel>(backend_, mesh, material, name);
  body->x = Array<Scalar>(backend_, mesh.x);
  body->v = Array<Scalar>(backend_, std::vector<Scalar>(mesh.x.size(), 0));
  body->b = Array<Scalar>(backend_, Index(mesh.x.size()));
  body->vhat = Array<Scalar>(backend_, Index(mesh.x.size()));
  body->a = backend_->CreateMatrix(body->model->pattern());
  body->surface = SurfaceNodes(mesh);
  body->tris = SurfaceTriangles(mesh);
  body->mass = body->model->lumped_mass();
  // node adjacency through elements (self-contact skips triangles touching a vertex's neighbours)
  {
    std::vector<std::vector<Index>> nb(std::size_t(mesh.num_nodes()));
    for (Index e = 0; e < mesh.num_tets(); ++e)
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) nb[mesh.tets[4 * std::size_t(e) + a]].push_back(mesh.tets[4 * std::size_t(e) + b]);
    body->adj_ptr.assign(1, 0);
    for (Index i = 0; i < mesh.num_nodes(); ++i) {
      std::vector<Index>& l = nb[i];
      l.push_back(i);
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
      body->adj.insert(body->adj.end(), l.begin(), l.end());
      body->adj_ptr.push_back(static_cast<Index>(body->adj.size()));
    }
  }
  body->depth_limit = DepthLimit(mesh.x.data(), body->tris);
  bodies_.push_back({1, static_cast<Index>(fem_.size())});
  fem_.push_back(std::move(body));
  return static_cast<Index>(bodies_.size()) - 1;
}

Index World::AddRod(const RodGeometry& geometry, const RodMaterial& material, const RodEnd& start, const RodEnd& finish,
                    const std::string& name, Scalar mu, bool self_contact) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, "world: " << name << ": friction mu must be >= 0, got " << mu);
  auto body = std::make_unique<RodBody>();
  body->name = name;
  body->mu = mu;
  body->self_contact = self_contact;
  body->model = std::make_unique<RodModel>(backend_, geometry, material, start, finish, name);
  const Index dofs = body->model->num_dofs();
  body->v = Array<Scalar>(backend_, std::vector<Scalar>(std::size_t(dofs), 0));
  body->b = Array<Scalar>(backend_, dofs);
  body->vhat = Array<Scalar>(backend_, dofs);
  body->a = backend_->CreateMatrix(body->model->pattern());
  bodies_.push_back({2, static_cast<Index>(rods_.size())});
  rods_.push_back(std::move(body));
  return static_cast<Index>(bodies_.size()) - 1;
}

RodModel& World::rod_model(Index body) {
  CheckBody(body, 2);
  return *rods_[bodies_[body].second]->model;
}

std::vector<Scalar> World::RodPositions(Index body) const {
  CheckBody(body, 2);
  return rods_[bodies_[body].second]->model->positions().ToHost();
}

Index World::DeformablePart(std::size_t d) const { return d < fem_.size() ? fem_[d]->part : rods_[d - fem_.size()]->part; }

Index World::DeformableNodes(std::size_t d) const {
  return d < fem_.size() ? fem_[d]->model->num_nodes() : 2 * rods_[d - fem_.size()]->model->num_segments();
}

Scalar World::DeformableMass(std::size_t d, Index local) const {
  if (d < fem_.size()) return fem_[d]->mass[local];
  return local % 2 == 0 ? Scalar(rods_[d - fem_.size()]->model->segment_mass()) : Scalar(0);
}

Array<Scalar>& World::DeformableVelocity(std::size_t d) { return d < fem_.size() ? fem_[d]->v : rods_[d - fem_.size()]->v; }

Index World::BodyId(int kind, Index k) const {
  for (std::size_t b = 0; b < bodies_.size(); ++b)
    if (bodies_[b].first == kind && bodies_[b].second == k) return static_cast<Index>(b);
  return -1;
}

void World::CheckBody(Index body, int kind) const {
  static const char* const kNames[3] = {"a rigid", "an FEM", "a rod"};
  CONDSIM_CHECK(body >= 0 && std::size_t(body) < bodies_.size() && bodies_[body].first == kind,
                "world: body " << body << " is not " << kNames[kind] << " body");
}

FemModel& World::fem_model(Index body) {
  CheckBody(body, 1);
  return *fem_[bodies_[body].second]->model;
}

const RigidBody& World::rigid_body(Index body) const {
  CheckBody(body, 0);
  return finalized_ ? rigid_.body(bodies_[body].second) : rigid_init_[bodies_[body].second];
}

void World::SetRigidWrench(Index body, const Vec3& force, const Vec3& torque) {
  CheckBody(body, 0);
  if (rigid_wrench_.empty()) rigid_wrench_.assign(6 * rigid_init_.size(), 0);
  const Index k = bodies_[body].second;
  StoreVec3(rigid_wrench_.data(), 2 * k, force);
  StoreVec3(rigid_wrench_.data(), 2 * k + 1, torque);
}

void World::SetPoseDrive(Index body, const PoseDrive& drive) {
  CheckBody(body, 0);
  if (!finalized_) Finalize();
  rigid_.SetPoseDrive(bodies_[body].second, drive);
}

std::vector<Scalar> World::FemPositions(Index body) const {
  CheckBody(body, 1);
  return fem_[bodies_[body].second]->x.ToHost();
}

std::vector<Scalar> World::FemVelocities(Index body) const {
  CheckBody(body, 1);
  return fem_[bodies_[body].second]->v.ToHost();
}

void World::SetFemVelocities(Index body, const std::vector<Scalar>& v) {
  CheckBody(body, 1);
  for (Scalar c : v) CONDSIM_CHECK(std::isfinite(c), "world: SetFemVelocities of body " << body << ": velocities must be finite");
  fem_[bodies_[body].second]->v.CopyFromHost(v);
}

void World::Finalize() {
  rigid_ = RigidModel(rigid_init_, "rigid bodies", joints_);
  system_ = std::make_unique<SystemMatrix>(backend_);
  for (auto& f : fem_) {
    f->part = system_->num_parts();  // AddPart returns the first node, not the part index
    system_->AddPart(f->model->pattern());
  }
  std::vector<Index> chain_ptr{0}, chain_nodes;
  for (auto& r : rods_) {
    r->part = system_->num_parts();
    const Index offset = system_->AddPart(r->model->pattern());
    // each cable a COND chain (exact W on its contact-free nodes)
    for (Index c = 0; c < r->model->num_cables(); ++c) {
      for (Index k = 2 * r->model->cable_start()[c]; k < 2 * r->model->cable_start()[c + 1]; ++k) chain_nodes.push_back(offset + k);
      chain_ptr.push_back(static_cast<Index>(chain_nodes.size()));
    }
  }
  rigid_part_ = system_->num_parts();
  system_->AddPart(rigid_.pattern());
  rigid_a_ = backend_->CreateMatrix(rigid_.pattern());
  rigid_b_ = Array<Scalar>(backend_, 3 * rigid_.num_nodes());
  rigid_v_ = Array<Scalar>(backend_, 3 * rigid_.num_nodes());
  solver_ = std::make_unique<CondSolver>(backend_, params_.cond);
  if (!rods_.empty()) solver_->SetChains(chain_ptr, chain_nodes, RodModel::kChainBand);
  BuildDetector();
  finalized_ = true;
}

void World::BuildDetector() {
  // owners: the bodies (their ids), then the meshes
  DetectScene sc;
  const Index num_bodies = static_cast<Index>(bodies_.size());
  sc.self_contact.assign(bodies_.size() + meshes_.size(), 0);
  sc.depth_limit.assign(bodies_.size() + meshes_.size(), 0);
  q_kind_.clear();
  q_body_.clear();
  q_local_.clear();
  t_owner_kind_.clear();
  t_body_.clear();
  t_nodes_.clear();
  gather_x_.clear();
  gather_v_.clear();
  gather_offset_.clear();
  std::vector<std::vector<Index>> adj;  // per vertex
  // FEM surfaces: every surface vertex is a query (radius 0) and a triangle vertex
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    const FemBody& fb = *fem_[f];
    const Index owner = BodyId(1, static_cast<Index>(f)), first = sc.num_vertices();
    sc.self_contact[owner] = fb.self_contact ? 1 : 0;
    sc.depth_limit[owner] = fb.depth_limit;
    std::vector<Index> vertex_of(std::size_t(fb.model->num_nodes()), -1);
    for (std::size_t k = 0; k < fb.surface.size(); ++k) vertex_of[fb.surface[k]] = first + static_cast<Index>(k);
    for (std::size_t k = 0; k < fb.surface.size(); ++k) {
      const Index i = fb.surface[k];
      sc.vertex_owner.push_back(owner);
      sc.query.push_back(first + static_cast<Index>(k));
      sc.radius.push_back(0);
      q_kind_.push_back(1);
      q_body_.push_back(static_cast<Index>(f));
      q_local_.push_back(i);
      // element neighbours on the surface (self-contact skips their triangles)
      std::vector<Index> nb;
      for (Index a = fb.adj_ptr[i]; a < fb.adj_ptr[i + 1]; ++a)
        if (vertex_of[fb.adj[a]] >= 0) nb.push_back(vertex_of[fb.adj[a]]);
      std::sort(nb.begin(), nb.end());
      adj.push_back(nb);
    }
    for (std::size_t t = 0; t < fb.tris.size(); t += 3) {
      for (int k = 0; k < 3; ++k) {
        sc.tri.push_back(vertex_of[fb.tris[t + k]]);
        t_nodes_.push_back(fb.tris[t + k]);
      }
      sc.tri_owner.push_back(owner);
      t_owner_kind_.push_back(1);
      t_body_.push_back(static_cast<Index>(f));
    }
    gather_offset_.push_back(first);
    gather_x_.emplace_back(backend_, fb.surface);
    gather_v_.emplace_back(backend_, fb.surface);
  }
  // cable centres: queries with the cable radius
  for (std::size_t c = 0; c < rods_.size(); ++c) {
    const RodModel& m = *rods_[c]->model;
    const Index owner = BodyId(2, static_cast<Index>(c)), first = sc.num_vertices();
    std::vector<Index> ix, iv;
    for (Index k = 0; k < m.num_segments(); ++k) {
      sc.vertex_owner.push_back(owner);
      sc.query.push_back(first + k);
      sc.radius.push_back(m.radius());
      q_kind_.push_back(2);
      q_body_.push_back(static_cast<Index>(c));
      q_local_.push_back(k);
      adj.emplace_back();
      ix.push_back(k);
      iv.push_back(2 * k);
    }
    gather_offset_.push_back(first);
    gather_x_.emplace_back(backend_, ix);
    gather_v_.emplace_back(backend_, iv);
  }
  // rigid surface samples: queries with their radii (positions uploaded every step); a mesh
  // body's samples are its vertices, and its triangles join the detector
  rigid_vertex_offset_ = sc.num_vertices();
  rigid_sample_first_.clear();
  rigid_samples_.clear();
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    const RigidBody& body = rigid_.body(k);
    rigid_samples_.push_back(ContactSamples(body));
    const std::vector<SurfacePoint>& samples = rigid_samples_.back();
    const Index first = sc.num_vertices();
    rigid_sample_first_.push_back(first - rigid_vertex_offset_);
    if (body.shape == ShapeType::kMesh) {
      const Index owner = BodyId(0, k);
      const std::vector<Index>& mt = body.mesh->tri;
      for (std::size_t t = 0; t < mt.size(); t += 3) {
        for (int a = 0; a < 3; ++a) {
          sc.tri.push_back(first + mt[t + a]);
          t_nodes_.push_back(mt[t + a]);
        }
        sc.tri_owner.push_back(owner);
        t_owner_kind_.push_back(0);
        t_body_.push_back(k);
      }
      sc.depth_limit[owner] = DepthLimit(body.mesh->x.data(), mt);
    }
    for (std::size_t s = 0; s < samples.size(); ++s) {
      sc.query.push_back(sc.num_vertices());
      sc.vertex_owner.push_back(BodyId(0, k));
      sc.radius.push_back(samples[s].radius);
      q_kind_.push_back(0);
      q_body_.push_back(k);
      q_local_.push_back(static_cast<Index>(s));
      adj.emplace_back();
    }
  }
  // static meshes: triangle vertices only
  const Index mesh_first = sc.num_vertices();
  std::vector<Scalar> mesh_x;
  for (std::size_t m = 0; m < meshes_.size(); ++m) {
    const Index owner = num_bodies + static_cast<Index>(m), first = sc.num_vertices();
    sc.depth_limit[owner] = meshes_[m].depth_limit;
    for (std::size_t i = 0; i < meshes_[m].x.size() / 3; ++i) {
      sc.vertex_owner.push_back(owner);
      adj.emplace_back();
    }
    for (std::size_t t = 0; t < meshes_[m].tri.size(); t += 3) {
      for (int k = 0; k < 3; ++k) {
        sc.tri.push_back(first + meshes_[m].tri[t + k]);
        t_nodes_.push_back(meshes_[m].tri[t + k]);
      }
      sc.tri_owner.push_back(owner);
      t_owner_kind_.push_back(3);
      t_body_.push_back(static_cast<Index>(m));
    }
    mesh_x.insert(mesh_x.end(), meshes_[m].x.begin(), meshes_[m].x.end());
  }
  sc.adj_ptr.assign(1, 0);
  for (const auto& a : adj) {
    sc.adj.insert(sc.adj.end(), a.begin(), a.end());
    sc.adj_ptr.push_back(static_cast<Index>(sc.adj.size()));
  }
  detector_ = std::make_unique<Detector>(backend_, sc);
  detector_->Upload(mesh_first, mesh_x, std::vector<Scalar>(mesh_x.size(), 0));
}

void World::DetectTriangles(const std::vector<std::vector<Scalar>>& fem_x, const std::vector<Scalar>& rx,
                            const std::vector<Scalar>& rv, ContactSet* contacts, VirtualNodeSet* vn) {
  const Scalar dt = params_.dt;
  // this step's vertices: FEM surfaces and cable centres on the backend, rigid samples uploaded
  for (std::size_t f = 0; f < fem_.size(); ++f) detector_->Gather(gather_offset_[f], gather_x_[f], gather_v_[f], fem_[f]->x, fem_[f]->v);
  for (std::size_t c = 0; c < rods_.size(); ++c) {
    const std::size_t g = fem_.size() + c;
    detector_->Gather(gather_offset_[g], gather_x_[g], gather_v_[g], rods_[c]->model->positions(), rods_[c]->v);
  }
  detector_->Upload(rigid_vertex_offset_, rx, rv);
  const DetectResult& hits = detector_->Detect(dt, params_.contact_margin);
  for (Index h = 0; h < hits.size(); ++h) {
    const Index q = hits.query[h], t = hits.tri[h];
    const Vec3 n = LoadVec3(hits.n.data(), h), w = LoadVec3(hits.w.data(), h);
    const Scalar gap = hits.gap[h];
    // the query's side: an FEM node, a cable centre node, or a rigid virtual node at p - r n
    const Index kind = q_kind_[q], qb = q_body_[q], ql = q_local_[q];
    Index node_i = -1, body_i = -1, rigid_i = -1;
    Vec3 pos, arm_i;
    Scalar mu_i = 0;
    if (kind == 1) {
      node_i = system_->part_offset(fem_[qb]->part) + ql;
      body_i = BodyId(1, qb);
      mu_i = fem_[qb]->mu;
    } else if (kind == 2) {
      node_i = system_->part_offset(rods_[qb]->part) + 2 * ql;
      body_i = BodyId(2, qb);
      mu_i = rods_[qb]->mu;
    } else {
      rigid_i = qb;
      body_i = BodyId(0, qb);
      mu_i = rigid_.body(qb).mu1;
    }
    // contact point on the triangle, and the query's point
    Vec3 tri_x[3];
    const Index* tn = t_nodes_.data() + 3 * std::size_t(t);
    const Index tkind = t_owner_kind_[t], tb = t_body_[t];
    const bool on_fem = tkind == 1;
    // two jointed rigid bodies never touch
    if (tkind == 0 && kind == 0 && Jointed(qb, tb)) continue;
    for (int k = 0; k < 3; ++k)
      tri_x[k] = tkind == 1   ? LoadVec3(fem_x[tb].data(), tn[k])
                 : tkind == 0 ? LoadVec3(rx.data(), rigid_sample_first_[tb] + tn[k])
                              : LoadVec3(meshes_[tb].x.data(), tn[k]);
    const Vec3 qpt = w[0] * tri_x[0] + w[1] * tri_x[1] + w[2] * tri_x[2];
    const Scalar radius = detector_->scene().radius[q];
    pos = qpt + (gap + radius) * n;  // the query point p
    const Vec3 contact = pos - radius * n;
    if (kind == 0) {
      const RigidBody& body = rigid_.body(qb);
      arm_i = contact - body.x;
      node_i = RigidPointNode(qb, contact, vn);
    }
    const Mat3 frame = RotateTangents(ContactFrame(n), tangent_rotation_);
    if (tkind == 0) {
      // D-contact with a rigid virtual node at the closest point of the body's mesh; friction:
      // an FEM node against a rigid body takes the body's mu, otherwise sqrt(mu_i mu_j)
      const RigidBody& other = rigid_.body(tb);
      const Vec3 arm_j = qpt - other.x;
      const Index node_j = RigidPointNode(tb, qpt, vn);
      const Scalar mu = kind == 1 ? other.mu1 : std::sqrt(mu_i * other.mu1);
      contacts->Add(node_i, node_j, frame, gap / dt, mu, mu);
      meta_.push_back({contact, body_i, BodyId(0, tb), -1, rigid_i, tb, arm_i, arm_j});
    } else if (on_fem) {
      // D-contact with a barycentric virtual node on the FEM triangle
      const Index fb = t_body_[t];
      const Index off = system_->part_offset(fem_[fb]->part);
      const Index hosts[3] = {off + tn[0], off + tn[1], off + tn[2]};
      const Scalar weights[3] = {w[0], w[1], w[2]};
      const Index node_j = AddBarycentricNode(3, hosts, weights, vn);
      // friction: self-contact the body's mu; FEM-rigid the rigid body's; else sqrt(mu_i mu_j)
      const Scalar mu = kind == 0 ? mu_i : (kind == 1 && qb == fb ? mu_i : std::sqrt(mu_i * fem_[fb]->mu));
      contacts->Add(node_i, node_j, frame, gap / dt, mu, mu);
      meta_.push_back({contact, body_i, BodyId(1, fb), -1, rigid_i, -1, arm_i, Vec3()});
    } else {
      // S-contact against the static mesh: its mu (rigid bodies: sqrt(mu_mesh mu_body))
      const StaticMesh& m = meshes_[t_body_[t]];
      const Scalar mu = kind == 0 ? std::sqrt(m.mu * mu_i) : m.mu;
      contacts->Add(node_i, -1, frame, gap / dt, mu, mu);
      ContactMeta meta{contact, body_i, -1, -1, rigid_i, -1, arm_i, Vec3()};
      meta.mesh = t_body_[t];
      meta_.push_back(meta);
    }
  }
}

void World::Detect(ContactSet* contacts, VirtualNodeSet* vn) {
  const Scalar dt = params_.dt, margin0 = params_.contact_margin;
  meta_.clear();
  // this step's rigid surface samples (world positions and velocities, 3 each per sample, bodies
  // in order): against the static world and the other rigid bodies here, against triangles in
  // DetectTriangles
  std::vector<Scalar> rx, rv;
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    const RigidBody& body = rigid_.body(k);
    const Mat3 rot = ToMatrix(body.q);
    for (const SurfacePoint& sp : rigid_samples_[std::size_t(k)]) {
      const Vec3 p = body.x + rot * sp.local, vp = body.v + Cross(body.omega, p - body.x);
      for (int d = 0; d < 3; ++d) {
        rx.push_back(p[d]);
        rv.push_back(vp[d]);
      }
    }
  }
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    const RigidBody& body = rigid_.body(k);
    const std::vector<SurfacePoint>& samples = rigid_samples_[std::size_t(k)];
    for (std::size_t sample = 0; sample < samples.size(); ++sample) {
      const SurfacePoint& s = samples[sample];
      const Index at = rigid_sample_first_[std::size_t(k)] + static_cast<Index>(sample);
      const Vec3 p = LoadVec3(rx.data(), at), vp = LoadVec3(rv.data(), at);
      for (std::size_t si = 0; si < statics_.size(); ++si) {
        const StaticShape& shape = statics_[si];
        const Proximity prox = ShapeProximity(shape, p);
        const Scalar gap = prox.distance - s.radius;
        if (gap > Norm(vp) * dt + margin0) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index node = RigidPointNode(k, c, vn);
        contacts->Add(node, -1, RotateTangents(ShapeFrame(shape, prox.normal), tangent_rotation_), gap / dt,
                      std::sqrt(shape.mu1 * body.mu1), std::sqrt(shape.mu2 * body.mu1));
        meta_.push_back({c, BodyId(0, k), -1, Index(si), k, -1, c - body.x, Vec3()});
      }
      for (Index k2 = 0; k2 < rigid_.num_bodies(); ++k2) {
        // mesh-shaped bodies are touched through the detector
        if (k2 == k || Jointed(k, k2) || rigid_.body(k2).shape == ShapeType::kMesh) continue;
        const RigidBody& other = rigid_.body(k2);
        const Proximity prox = ShapeProximity(rigid_.ShapeAt(k2), p);
        const Scalar gap = prox.distance - s.radius;
        const Vec3 vq = other.v + Cross(other.omega, prox.point - other.x);
        if (gap > Norm(vp - vq) * dt + margin0) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index ni = RigidPointNode(k, c, vn), nj = RigidPointNode(k2, prox.point, vn);
        const Scalar mu = std::sqrt(body.mu1 * other.mu1);
        contacts->Add(ni, nj, RotateTangents(ContactFrame(prox.normal), tangent_rotation_), gap / dt, mu, mu);
        meta_.push_back({c, BodyId(0, k), BodyId(0, k2), -1, k, k2, c - body.x, prox.point - other.x});
      }
    }
  }
  // FEM surface nodes against the static world and the rigid bodies
  std::vector<std::vector<Scalar>>& fem_x = fem_x_host_;
  std::vector<std::vector<Scalar>> fem_v(fem_.size());
  fem_x.resize(fem_.size());
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    fem_x[f] = fem_[f]->x.ToHost();
    fem_v[f] = fem_[f]->v.ToHost();
  }
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    const FemBody& fb = *fem_[f];
    const std::vector<Scalar>& x = fem_x[f];
    const std::vector<Scalar>& v = fem_v[f];
    const Index offset = system_->part_offset(fb.part);
    const Index body_id = BodyId(1, static_cast<Index>(f));
    for (Index i : fb.surface) {
      const Vec3 p = LoadVec3(x.data(), i), vp = LoadVec3(v.data(), i);
      NodeStaticContacts(offset + i, p, vp, 0, body_id, contacts);
      NodeRigidContacts(offset + i, p, vp, 0, body_id, -1, contacts, vn);  // FEM-rigid: the body's mu
    }
  }
  // points (FEM surface vertices, cable centres, rigid samples) against triangles (FEM surfaces,
  // static meshes) on the backend
  DetectTriangles(fem_x, rx, rv, contacts, vn);
  // cable segment centres (radius r) against the static world and the rigid bodies, cable links
  // against each other
  std::vector<std::vector<Scalar>> rod_x(rods_.size()), rod_v(rods_.size());
  for (std::size_t c = 0; c < rods_.size(); ++c) {
    const RodBody& rb = *rods_[c];
    rod_x[c] = rb.model->positions().ToHost();
    rod_v[c] = rb.v.ToHost();
    const Index offset = system_->part_offset(rb.part);
    const Index body_id = BodyId(2, static_cast<Index>(c));
    const Scalar radius = rb.model->radius();
    for (Index seg = 0; seg < rb.model->num_segments(); ++seg) {
      const Vec3 p = LoadVec3(rod_x[c].data(), seg), vp = LoadVec3(rod_v[c].data(), 2 * seg);
      NodeStaticContacts(offset + 2 * seg, p, vp, radius, body_id, contacts);
      NodeRigidContacts(offset + 2 * seg, p, vp, radius, body_id, rb.mu, contacts, vn);
    }
  }
  for (std::size_t a = 0; a < rods_.size(); ++a)
    for (std::size_t b = a; b < rods_.size(); ++b)
      if (a != b || rods_[a]->self_contact) DetectRodRod(a, b, rod_x, rod_v, contacts, vn);
}

void World::NodeStaticContacts(Index node, const Vec3& p, const Vec3& vp, Scalar radius, Index body, ContactSet* contacts) {
  const Scalar dt = params_.dt;
  for (std::size_t si = 0; si < statics_.size(); ++si) {
    const StaticShape& shape = statics_[si];
    const Proximity prox = ShapeProximity(shape, p);
    const Scalar gap = prox.distance - radius;
    if (gap > Norm(vp) * dt + params_.contact_margin) continue;
    contacts->Add(node, -1, RotateTangents(ShapeFrame(shape, prox.normal), tangent_rotation_), gap / dt, shape.mu1, shape.mu2);
    meta_.push_back({p - radius * prox.normal, body, -1, Index(si), -1, -1, Vec3(), Vec3()});
  }
}

Index World::RigidPointNode(Index k, const Vec3& p, VirtualNodeSet* vn) const {
  const Index trans = system_->part_offset(rigid_part_) + 2 * k;
  return system_->num_base_nodes() + vn->AddRigidPoint(trans, trans + 1, p - rigid_.body(k).x, params_.kv);
}

void World::NodeRigidContacts(Index node, const Vec3& p, const Vec3& vp, Scalar radius, Index body, Scalar mu, ContactSet* contacts,
                              VirtualNodeSet* vn) {
  const Scalar dt = params_.dt;
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    const RigidBody& other = rigid_.body(k);
    if (other.shape == ShapeType::kMesh) continue;  // through the detector
    const Proximity prox = ShapeProximity(rigid_.ShapeAt(k), p);
    const Scalar gap = prox.distance - radius;
    const Vec3 vq = other.v + Cross(other.omega, prox.point - other.x);
    if (gap > Norm(vp - vq) * dt + params_.contact_margin) continue;
    const Index nj = RigidPointNode(k, prox.point, vn);
    const Scalar m = mu < 0 ? other.mu1 : std::sqrt(mu * other.mu1);
    contacts->Add(node, nj, RotateTangents(ContactFrame(prox.normal), tangent_rotation_), gap / dt, m, m);
    meta_.push_back({p - radius * prox.normal, body, BodyId(0, k), -1, -1, k, Vec3(), prox.point - other.x});
  }
}

BodyModes World::FemBodyModes() {
  // each FEM body split into params_.cond.body_mode_patches patches of a grid on its first step's
  // positions (material patches: they follow the body), arms from each patch's mean node position
  // (any reference point spans the same modes; the mean keeps Z^T A Z well scaled); the solver
  // leaves out contact nodes
  BodyModes modes;
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    FemBody& body = *fem_[f];
    const std::vector<Scalar>& x = fem_x_host_[f];
    if (body.patch.size() != x.size() / 3) body.patch = GridPatches(x, params_.cond.body_mode_patches);
    AppendBodyPatches(body.patch, x, system_->part_offset(body.part), &modes);
  }
  return modes;
}

Index World::AddBarycentricNode(Index n, const Index* hosts, const Scalar* w, VirtualNodeSet* vn) {
  const Index node = system_->num_base_nodes() + vn->AddBarycentric(n, hosts, w, params_.kv);
  bary_.node.push_back(node);
  for (Index k = 0; k < n; ++k) {
    bary_.host.push_back(hosts[k]);
    bary_.weight.push_back(w[k]);
  }
  bary_.ptr.push_back(static_cast<Index>(bary_.host.size()));
  bary_.kv.push_back(params_.kv);
  return node;
}

void World::DetectRodRod(std::size_t a, std::size_t b, const std::vector<std::vector<Scalar>>& x,
                         const std::vector<std::vector<Scalar>>& v, ContactSet* contacts, VirtualNodeSet* vn) {
  const RodModel& ma = *rods_[a]->model;
  const RodModel& mb = *rods_[b]->model;
  const Scalar dt = params_.dt, margin0 = params_.contact_margin;
  const Scalar ra = ma.radius(), rb = mb.radius();
  const Index off_a = system_->part_offset(rods_[a]->part), off_b = system_->part_offset(rods_[b]->part);
  const Index body_a = BodyId(2, static_cast<Index>(a)), body_b = BodyId(2, static_cast<Index>(b));
  // links: consecutive centres of one cable; in self-contact, links closer along the cable than
  // 2 + (ra + rb) / L links are neighbours, never contacts
  auto links = [](const RodModel& m) {
    std::vector<Index> l;
    for (Index c = 0; c < m.num_cables(); ++c)
      for (Index s = m.cable_start()[c]; s + 1 < m.cable_start()[c + 1]; ++s) l.push_back(s);
    return l;
  };
  const std::vector<Index> la = links(ma), lb = links(mb);
  if (la.empty() || lb.empty()) return;
  const Index skip = a == b ? 2 + static_cast<Index>(std::ceil((ra + rb) / ma.segment_length())) : 0;
  Scalar speed = 0;
  for (Index s = 0; s < ma.num_segments(); ++s) speed = std::max(speed, Norm(LoadVec3(v[a].data(), 2 * s)));
  for (Index s = 0; s < mb.num_segments(); ++s) speed = std::max(speed, Norm(LoadVec3(v[b].data(), 2 * s)));
  const Scalar reach = ra + rb + margin0 + 2 * dt * speed + Scalar(0.5) * ma.segment_length();
  std::vector<Aabb> boxes(lb.size());
  for (std::size_t k = 0; k < lb.size(); ++k) {
    boxes[k].Grow(LoadVec3(x[b].data(), lb[k]));
    boxes[k].Grow(LoadVec3(x[b].data(), lb[k] + 1));
    boxes[k].Inflate(reach);
  }
  AabbGrid grid;
  grid.Build(boxes);
  std::vector<Index> candidates;
  const Scalar mu = a == b ? rods_[a]->mu : std::sqrt(rods_[a]->mu * rods_[b]->mu);
  for (Index s : la) {
    const Vec3 p0 = LoadVec3(x[a].data(), s), p1 = LoadVec3(x[a].data(), s + 1);
    grid.Query(Scalar(0.5) * (p0 + p1), &candidates);
    for (Index k : candidates) {
      const Index u = lb[k];
      if (a == b && u < s + skip) continue;  // each pair once, neighbours never
      const Vec3 q0 = LoadVec3(x[b].data(), u), q1 = LoadVec3(x[b].data(), u + 1);
      const SegmentParams st = ClosestOnSegments(p0, p1, q0, q1);
      const Vec3 pp = p0 + st.s * (p1 - p0), qq = q0 + st.t * (q1 - q0);
      const Vec3 d = pp - qq;
      const Scalar dist = Norm(d);
      Vec3 n = dist > 1e-12 ? (1 / dist) * d : Cross(p1 - p0, q1 - q0);
      if (!(Norm(n) > 0)) continue;
      n = Normalized(n);
      const Scalar gap = dist - ra - rb;
      const Vec3 vp = (1 - st.s) * LoadVec3(v[a].data(), 2 * s) + st.s * LoadVec3(v[a].data(), 2 * s + 2);
      const Vec3 vq = (1 - st.t) * LoadVec3(v[b].data(), 2 * u) + st.t * LoadVec3(v[b].data(), 2 * u + 2);
      if (gap > Norm(vp - vq) * dt + margin0) continue;
      const Index hp[2] = {off_a + 2 * s, off_a + 2 * s + 2}, hq[2] = {off_b + 2 * u, off_b + 2 * u + 2};
      const Scalar wp[2] = {1 - st.s, st.s}, wq[2] = {1 - st.t, st.t};
      const Index ni = AddBarycentricNode(2, hp, wp, vn), nj = AddBarycentricNode(2, hq, wq, vn);
      contacts->Add(ni, nj, RotateTangents(ContactFrame(n), tangent_rotation_), gap / dt, mu, mu);
      meta_.push_back({pp - ra * n, body_a, body_b, -1, -1, -1, Vec3(), Vec3()});
    }
  }
}

Index World::num_dofs() const {
  Index n = 6 * static_cast<Index>(rigid_init_.size());
  for (const auto& f : fem_) n += 3 * f->model->num_nodes();
  for (const auto& r : rods_) n += r->model->num_dofs();
  return n;
}

StepStats World::Step() {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  if (!finalized_) Finalize();
  const Scalar dt = params_.dt;
  StepStats stats;
  // detection and nodalization
  ContactSet contacts;
  VirtualNodeSet vn;
  bary_ = BarycentricNodes();
  Detect(&contacts, &vn);
  for (Index m = 0; m < contacts.size(); ++m) stats.max_penetration = std::max(stats.max_penetration, -contacts.phi[m] * dt);
  stats.detect_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  system_->SetVirtualNodes(vn);
  // parts: FEM bodies on the backend, rigid bodies on the host
  std::vector<const DeviceBlockMatrix*> parts_a;
  std::vector<const Array<Scalar>*> parts_b, parts_v;
  // the initial guess (paper Sec. V-A5): the previous step's v-hat (v at the first step; the
  // midpoint rule's v_k = 2 v-hat - v_{k-1} alternates about it); virtual nodes take J_v of it
  const bool warm = steps_ > 0 && params_.warm_start;
  for (auto& f : fem_) {
    f->model->Assemble(f->x, f->v, dt, params_.gravity, nullptr, f->a.get(), &f->b);
    parts_a.push_back(f->a.get());
    parts_b.push_back(&f->b);
    parts_v.push_back(warm ? &f->vhat : &f->v);
  }
  for (auto& r : rods_) {
    r->model->Assemble(r->v, dt, params_.gravity, nullptr, r->a.get(), &r->b);
    parts_a.push_back(r->a.get());
    parts_b.push_back(&r->b);
    parts_v.push_back(warm ? &r->vhat : &r->v);
  }
  std::vector<Scalar> values, rhs;
  rigid_.Assemble(dt, params_.gravity, rigid_wrench_, &values, &rhs);
  rigid_a_->SetValues(values);
  rigid_b_.CopyFromHost(rhs);
  std::vector<Scalar> rigid_v(6 * std::size_t(rigid_.num_bodies()));
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    StoreVec3(rigid_v.data(), 2 * k, rigid_.body(k).v);
    StoreVec3(rigid_v.data(), 2 * k + 1, rigid_.body(k).omega);
  }
  rigid_v_.CopyFromHost(warm ? rigid_vhat_prev_ : rigid_v);
  parts_a.push_back(rigid_a_.get());
  parts_b.push_back(&rigid_b_);
  parts_v.push_back(&rigid_v_);
  system_->Assemble(parts_a, parts_b);
  system_->GatherVelocity(parts_v, &v_);
  // rigid groups: jointed bodies with their virtual nodes, A_o^-1 from the group's own blocks
  RigidGroups groups;
  {
    const Index rigid_offset = system_->part_offset(rigid_part_);
    std::vector<std::vector<Index>> per_body(std::size_t(rigid_.num_bodies()));
    for (Index k = 0; k < vn.size(); ++k) {
      const Index host = vn.host[vn.ptr[k]];
      if (host >= rigid_offset && host < rigid_offset + rigid_.num_nodes() && vn.ptr[k + 1] - vn.ptr[k] == 2)
        per_body[(host - rigid_offset) / 2].push_back(k);
    }
    for (const std::vector<Index>& group : rigid_.groups()) {
      for (Index b : group) {
        groups.trans.push_back(rigid_offset + 2 * b);
        groups.rot.push_back(rigid_offset + 2 * b + 1);
        for (Index k : per_body[b]) {
          groups.node.push_back(system_->num_base_nodes() + k);
          // J_rot = -[r]x (row-major), so r = (J(1,2), J(2,0), J(0,1))
          const Scalar* j = vn.jac.data() + 9 * std::size_t(vn.ptr[k] + 1);
          groups.arm.push_back(j[5]);
          groups.arm.push_back(j[6]);
          groups.arm.push_back(j[1]);
          groups.kv.push_back(vn.kv[k]);
        }
        groups.ptr.push_back(static_cast<Index>(groups.node.size()));
      }
      groups.body_ptr.push_back(static_cast<Index>(groups.trans.size()));
      const Index dim = 6 * static_cast<Index>(group.size());
      const std::vector<Scalar> dense = rigid_.GroupMatrix(values, group);
      const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> inv =
          Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(dense.data(), dim, dim).inverse();
      for (Index r = 0; r < dim; ++r)
        for (Index c = 0; c < dim; ++c) groups.ao_inv.push_back(inv(r, c));
    }
  }
  solver_->SetRigidGroups(groups);
  solver_->SetBarycentricNodes(bary_);
  solver_->SetBodyModes(FemBodyModes());
  // the COND solve (Alg. 1)
  solver_->SetNodeEnvironments(std::vector<Index>(std::size_t(system_->num_nodes()), 0));
  solver_->SetContacts(contacts);
  stats.cond = solver_->Solve(system_->matrix(), system_->rhs(), &v_);
  stats.contacts = contacts.size();
  stats.virtual_nodes = vn.size();
  // divergence: report and leave the state untouched (the solver keeps a failed environment at
  // its last finite iterate, which is no solution either)
  CONDSIM_CHECK(stats.cond.failed_envs.empty(), "world: environment 0 diverged (the COND iteration became NaN/Inf) at step "
                                                    << steps_ << " (t = " << time_ << " s)");
  const std::vector<Scalar> vhat = v_.ToHost();
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    const std::size_t d = bodies_[b].first == 1 ? std::size_t(bodies_[b].second) : fem_.size() + std::size_t(bodies_[b].second);
    const Index offset = bodies_[b].first == 0 ? system_->part_offset(rigid_part_) + 2 * bodies_[b].second
                                               : system_->part_offset(DeformablePart(d));
    const Index count = bodies_[b].first == 0 ? 2 : DeformableNodes(d);
    for (Index k = 3 * offset; k < 3 * (offset + count); ++k)
      CONDSIM_CHECK(std::isfinite(vhat[k]), "world: environment 0, body " << b << " diverged (NaN/Inf velocity) at step "
                                                                          << steps_ << " (t = " << time_ << " s)");
  }
  // advance: rigid bodies on the host, FEM bodies on the backend
  std::vector<Scalar> rigid_vhat(vhat.begin() + 3 * std::int64_t(system_->part_offset(rigid_part_)),
                                 vhat.begin() + 3 * std::int64_t(system_->part_offset(rigid_part_) + rigid_.num_nodes()));
  const std::vector<Scalar> lambda = solver_->Impulses();
  rigid_.Advance(dt, rigid_vhat);
  rigid_vhat_prev_ = rigid_vhat;
  std::vector<Scalar> rigid_next(rigid_vhat.size());
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    StoreVec3(rigid_next.data(), 2 * k, rigid_.body(k).v);
    StoreVec3(rigid_next.data(), 2 * k + 1, rigid_.body(k).omega);
  }
  const bool inelastic = params_.inelastic && contacts.size() > 0;
  std::vector<std::vector<Scalar>> deformable_next(num_deformable());
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    FemBody& fb = *fem_[f];
    system_->ScatterVelocity(fb.part, v_, &fb.vhat);
    backend_->Axpby(dt, fb.vhat, 1, &fb.x);   // x += t v-hat
    backend_->Axpby(2, fb.vhat, -1, &fb.v);   // v = 2 v-hat - v
  }
  for (auto& r : rods_) {
    system_->ScatterVelocity(r->part, v_, &r->vhat);
    r->model->Advance(r->vhat, dt);          // x += t v, R <- exp(t w) R
    backend_->Axpby(2, r->vhat, -1, &r->v);
  }
  if (inelastic) {
    for (std::size_t d = 0; d < num_deformable(); ++d) deformable_next[d] = DeformableVelocity(d).ToHost();
    ApplyInelastic(contacts, lambda, vhat, &rigid_next, &deformable_next);
    for (std::size_t d = 0; d < num_deformable(); ++d) DeformableVelocity(d).CopyFromHost(deformable_next[d]);
    for (Index k = 0; k < rigid_.num_bodies(); ++k) {
      rigid_.mutable_body(k).v = LoadVec3(rigid_next.data(), 2 * k);
      rigid_.mutable_body(k).omega = LoadVec3(rigid_next.data(), 2 * k + 1);
    }
  }
  // contact records
  records_.clear();
  for (Index m = 0; m < contacts.size(); ++m) {
    const Mat3 r = contacts.Frame(m);
    ContactRecord rec;
    rec.position = meta_[m].position;
    rec.normal = r.Row(0);
    rec.lambda = LoadVec3(lambda.data(), m);
    rec.force = Transpose(r) * rec.lambda;
    rec.body_i = meta_[m].body_i;
    rec.body_j = meta_[m].body_j;
    rec.shape = meta_[m].shape;
    rec.mesh = meta_[m].mesh;
    records_.push_back(rec);
  }
  time_ += dt;
  ++steps_;
  stats.step_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  return stats;
}

void World::ApplyInelastic(const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                           std::vector<Scalar>* rigid_next, std::vector<std::vector<Scalar>>* deformable_next) {
  // rows of the per-body velocity targets: n^T J dv = n^T J (v-hat - v_next) for rigid sides
  std::vector<std::vector<std::pair<Eigen::Matrix<Scalar, 1, 6>, Scalar>>> rows(std::size_t(rigid_.num_bodies()));
  const Index rigid_offset = system_->part_offset(rigid_part_);
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Mat3 r = contacts.Frame(m);
    const int axes = IsSticking(contacts, lambda, m) ? 3 : 1;
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      const Index rigid = side == 0 ? meta_[m].rigid_i : meta_[m].rigid_j;
      if (node < 0 || rigid < 0) continue;
      const Vec3 arm = side == 0 ? meta_[m].arm_i : meta_[m].arm_j;
      const Index t = rigid_offset + 2 * rigid;
      const Vec3 mid = LoadVec3(vhat.data(), t) + Cross(LoadVec3(vhat.data(), t + 1), arm);
      const Vec3 now = LoadVec3(rigid_next->data(), 2 * rigid) + Cross(LoadVec3(rigid_next->data(), 2 * rigid + 1), arm);
      for (int a = 0; a < axes; ++a) {
        const Vec3 d = r.Row(a);
        Eigen::Matrix<Scalar, 1, 6> row;
        const Vec3 rd = Cross(arm, d);  // d . (w x arm) = (arm x d) . w
        row << d[0], d[1], d[2], rd[0], rd[1], rd[2];
        rows[rigid].push_back({row, Dot(d, mid - now)});
      }
    }
    // deformable sides (nodes, triangle and link points): restore the mid-step relative velocity
    // along the axes with the smallest kinetic-energy change, y = Delta / sum(c^2 / m)
    struct Term {
      std::size_t part;  // deformable part
      Index local;
      Scalar c;
    };
    Term terms[8];
    int count = 0;
    const VirtualNodeSet& vset = system_->virtual_nodes();
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      const Index rigid = side == 0 ? meta_[m].rigid_i : meta_[m].rigid_j;
      if (node < 0 || rigid >= 0) continue;
      const Scalar sign = side == 0 ? 1 : -1;
      auto add = [&](Index global, Scalar c) {
        for (std::size_t d = 0; d < num_deformable(); ++d) {
          const Index local = global - system_->part_offset(DeformablePart(d));
          if (local >= 0 && local < DeformableNodes(d) && DeformableMass(d, local) > 0 && count < 8) terms[count++] = {d, local, c};
        }
      };
      if (node < system_->num_base_nodes()) {
        add(node, sign);
      } else {
        const Index k = node - system_->num_base_nodes();
        for (Index q = vset.ptr[k]; q < vset.ptr[k + 1]; ++q) add(vset.host[q], sign * vset.jac[9 * std::size_t(q)]);
      }
    }
    if (count == 0) continue;
    for (int a = 0; a < axes; ++a) {
      const Vec3 d = r.Row(a);
      Scalar delta = 0, den = 0;
      for (int q = 0; q < count; ++q) {
        const Term& t = terms[q];
        const Index global = system_->part_offset(DeformablePart(t.part)) + t.local;
        delta += t.c * Dot(d, LoadVec3(vhat.data(), global) - LoadVec3((*deformable_next)[t.part].data(), t.local));
        den += t.c * t.c / DeformableMass(t.part, t.local);
      }
      if (!(den > 0)) continue;
      const Scalar y = delta / den;
      for (int q = 0; q < count; ++q) {
        const Term& t = terms[q];
        AddVec3((*deformable_next)[t.part].data(), t.local, (t.c * y / DeformableMass(t.part, t.local)) * d);
      }
    }
  }
  // per rigid group: the smallest kinetic-energy change meeting the targets (least squares when
  // the rows are dependent, e.g. four corners of a box on a plane) that keeps the joints' relative
  // velocities (their constraint rows as targets 0)
  std::vector<JointRow> jrows;
  std::vector<Index> jrow_joint;
  for (const std::vector<Index>& group : rigid_.groups()) {
    Index m = 0;
    for (Index b : group) m += static_cast<Index>(rows[b].size());
    if (m == 0) continue;
    const Index dim = 6 * static_cast<Index>(group.size());
    auto column = [&](Index body) { return 6 * Index(std::lower_bound(group.begin(), group.end(), body) - group.begin()); };
    jrows.clear();
    jrow_joint.clear();
    for (Index j = 0; j < rigid_.num_joints(); ++j) {
      if (!std::binary_search(group.begin(), group.end(), rigid_.joint(j).body_i)) continue;
      rigid_.ConstraintRows(j, params_.dt, &jrows);
      jrow_joint.resize(jrows.size(), j);
    }
    const Index total = m + static_cast<Index>(jrows.size());
    Eigen::MatrixXd c = Eigen::MatrixXd::Zero(total, dim);
    Eigen::VectorXd d = Eigen::VectorXd::Zero(total);
    Index i = 0;
    for (Index b : group)
      for (const auto& row : rows[b]) {
        c.block(i, column(b), 1, 6) = row.first.template cast<double>();
        d[i++] = row.second;
      }
    for (std::size_t r = 0; r < jrows.size(); ++r, ++i) {
      const JointState& js = rigid_.joint(jrow_joint[r]);
      for (int p = 0; p < 4; ++p) {
        const Index body = p < 2 ? js.body_i : js.body_j;
        if (body < 0) continue;
        for (int q = 0; q < 3; ++q) c(i, column(body) + 3 * (p % 2) + q) = jrows[r].g[p][q];
      }
    }
    Eigen::MatrixXd minv = Eigen::MatrixXd::Zero(dim, dim);
    for (std::size_t q = 0; q < group.size(); ++q) {
      const Mat3 iw_inv = Inverse(rigid_.WorldInertia(group[q]));
      for (int a = 0; a < 3; ++a) {
        minv(6 * q + a, 6 * q + a) = 1 / rigid_.body(group[q]).mass;
        for (int b = 0; b < 3; ++b) minv(6 * q + 3 + a, 6 * q + 3 + b) = iw_inv(a, b);
      }
    }
    const Eigen::MatrixXd sm = c * minv * c.transpose();
    const Eigen::VectorXd y = sm.completeOrthogonalDecomposition().solve(d);
    const Eigen::VectorXd dv = minv * c.transpose() * y;
    for (std::size_t q = 0; q < group.size(); ++q) {
      AddVec3(rigid_next->data(), 2 * group[q], Vec3(dv[6 * q], dv[6 * q + 1], dv[6 * q + 2]));
      AddVec3(rigid_next->data(), 2 * group[q] + 1, Vec3(dv[6 * q + 3], dv[6 * q + 4], dv[6 * q + 5]));
    }
  }
}

Wrench World::BodyWrench(Index body) const {
  Wrench w;
  Vec3 ref;
  if (body >= 0 && std::size_t(body) < bodies_.size() && bodies_[body].first == 0) ref = rigid_body(body).x;
  for (const ContactRecord& r : records_) {
    if (r.body_i == body) {
      w.force += r.force;
      w.torque += Cross(r.position - ref, r.force);
    }
    if (r.body_j == body) {
      w.force -= r.force;
      w.torque -= Cross(r.position - ref, r.force);
    }
  }
  return w;
}

}  // namespace condsim
