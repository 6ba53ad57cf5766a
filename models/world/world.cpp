// The world stepper: detection, nodalization with virtual nodes, the COND solve, the update.
#include "models/world/world.h"

#include <Eigen/Dense>
#include <cmath>
#include <sstream>

#include "condsim/error.h"
#include "models/integrate/midpoint.h"

namespace condsim {

struct World::FemBody {
  std::string name;
  std::unique_ptr<FemModel> model;
  std::unique_ptr<DeviceBlockMatrix> a;
  Array<Scalar> x, v, b, vhat;
  std::vector<Index> surface;  // boundary nodes
  Index part = -1;
};

namespace {

// contact frame against a shape: rows (n, t1, t2); an anisotropic shape (mu1 != mu2) puts t1
// along its local x axis projected on the tangent plane, so mu1 acts along that axis
Mat3 ShapeFrame(const StaticShape& s, const Vec3& n) {
  if (s.mu1 == s.mu2) return ContactFrame(n);
  const Vec3 ax = ToMatrix(s.orientation).Col(0);
  Vec3 t1 = ax - Dot(ax, n) * n;
  if (Norm(t1) < 1e-9) return ContactFrame(n);
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

Index World::AddRigid(const RigidBody& body) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  body.Validate("rigid body " + std::to_string(bodies_.size()));
  bodies_.push_back({0, static_cast<Index>(rigid_init_.size())});
  rigid_init_.push_back(body);
  if (!rigid_wrench_.empty()) rigid_wrench_.resize(6 * rigid_init_.size(), 0);
  return static_cast<Index>(bodies_.size()) - 1;
}

Index World::AddFem(const TetMesh& mesh, const FemMaterial& material, const std::string& name) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  auto body = std::make_unique<FemBody>();
  body->name = name;
  body->model = std::make_unique<FemModel>(backend_, mesh, material, name);
  body->x = Array<Scalar>(backend_, mesh.x);
  body->v = Array<Scalar>(backend_, std::vector<Scalar>(mesh.x.size(), 0));
  body->b = Array<Scalar>(backend_, Index(mesh.x.size()));
  body->vhat = Array<Scalar>(backend_, Index(mesh.x.size()));
  body->a = backend_->CreateMatrix(body->model->pattern());
  body->surface = SurfaceNodes(mesh);
  bodies_.push_back({1, static_cast<Index>(fem_.size())});
  fem_.push_back(std::move(body));
  return static_cast<Index>(bodies_.size()) - 1;
}

void World::CheckBody(Index body, int kind) const {
  CONDSIM_CHECK(body >= 0 && std::size_t(body) < bodies_.size() && bodies_[body].first == kind,
                "world: body " << body << " is not " << (kind == 0 ? "a rigid" : "an FEM") << " body");
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
  fem_[bodies_[body].second]->v.CopyFromHost(v);
}

void World::Finalize() {
  rigid_ = RigidModel(rigid_init_, "rigid bodies");
  system_ = std::make_unique<SystemMatrix>(backend_);
  for (auto& f : fem_) f->part = system_->AddPart(f->model->pattern());
  rigid_part_ = system_->num_parts();
  system_->AddPart(rigid_.pattern());
  rigid_a_ = backend_->CreateMatrix(rigid_.pattern());
  rigid_b_ = Array<Scalar>(backend_, 3 * rigid_.num_nodes());
  rigid_v_ = Array<Scalar>(backend_, 3 * rigid_.num_nodes());
  solver_ = std::make_unique<CondSolver>(backend_, params_.cond);
  finalized_ = true;
}

void World::Detect(ContactSet* contacts, VirtualNodeSet* vn) {
  const Scalar dt = params_.dt, margin0 = params_.contact_margin, kv = params_.kv;
  const Index base = system_->num_base_nodes();
  const Index rigid_offset = system_->part_offset(rigid_part_);
  meta_.clear();
  auto body_of_rigid = [&](Index k) {
    for (std::size_t b = 0; b < bodies_.size(); ++b)
      if (bodies_[b].first == 0 && bodies_[b].second == k) return static_cast<Index>(b);
    return Index(-1);
  };
  auto body_of_fem = [&](Index k) {
    for (std::size_t b = 0; b < bodies_.size(); ++b)
      if (bodies_[b].first == 1 && bodies_[b].second == k) return static_cast<Index>(b);
    return Index(-1);
  };
  auto add_rigid_point = [&](Index k, const Vec3& p) {
    const Vec3 arm = p - rigid_.body(k).x;
    return base + vn->AddRigidPoint(rigid_offset + 2 * k, rigid_offset + 2 * k + 1, arm, kv);
  };
  // rigid surface samples against the static world and the other rigid bodies
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    const RigidBody& body = rigid_.body(k);
    const Mat3 rot = ToMatrix(body.q);
    for (const SurfacePoint& s : ContactSamples(body)) {
      const Vec3 p = body.x + rot * s.local;
      const Vec3 vp = body.v + Cross(body.omega, p - body.x);
      for (std::size_t si = 0; si < statics_.size(); ++si) {
        const StaticShape& shape = statics_[si];
        const Proximity prox = ShapeProximity(shape, p);
        const Scalar gap = prox.distance - s.radius;
        if (gap > Norm(vp) * dt + margin0) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index node = add_rigid_point(k, c);
        contacts->Add(node, -1, RotateTangents(ShapeFrame(shape, prox.normal), tangent_rotation_), gap / dt,
                      std::sqrt(shape.mu1 * body.mu1), std::sqrt(shape.mu2 * body.mu1));
        meta_.push_back({c, body_of_rigid(k), -1, Index(si), k, -1, c - body.x, Vec3()});
      }
      for (Index k2 = 0; k2 < rigid_.num_bodies(); ++k2) {
        if (k2 == k) continue;
        const RigidBody& other = rigid_.body(k2);
        const Proximity prox = ShapeProximity(rigid_.ShapeAt(k2), p);
        const Scalar gap = prox.distance - s.radius;
        const Vec3 vq = other.v + Cross(other.omega, prox.point - other.x);
        if (gap > Norm(vp - vq) * dt + margin0) continue;
        const Vec3 c = p - s.radius * prox.normal;
        const Index ni = add_rigid_point(k, c), nj = add_rigid_point(k2, prox.point);
        const Scalar mu = std::sqrt(body.mu1 * other.mu1);
        contacts->Add(ni, nj, RotateTangents(ContactFrame(prox.normal), tangent_rotation_), gap / dt, mu, mu);
        meta_.push_back({c, body_of_rigid(k), body_of_rigid(k2), -1, k, k2, c - body.x, prox.point - other.x});
      }
    }
  }
  // FEM surface nodes against the static world and the rigid bodies
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    const FemBody& fb = *fem_[f];
    const std::vector<Scalar> x = fb.x.ToHost(), v = fb.v.ToHost();
    const Index offset = system_->part_offset(fb.part);
    const Index body_id = body_of_fem(static_cast<Index>(f));
    for (Index i : fb.surface) {
      const Vec3 p = LoadVec3(x.data(), i), vp = LoadVec3(v.data(), i);
      for (std::size_t si = 0; si < statics_.size(); ++si) {
        const StaticShape& shape = statics_[si];
        const Proximity prox = ShapeProximity(shape, p);
        if (prox.distance > Norm(vp) * dt + margin0) continue;
        contacts->Add(offset + i, -1, RotateTangents(ShapeFrame(shape, prox.normal), tangent_rotation_), prox.distance / dt,
                      shape.mu1, shape.mu2);
        meta_.push_back({p, body_id, -1, Index(si), -1, -1, Vec3(), Vec3()});
      }
      for (Index k = 0; k < rigid_.num_bodies(); ++k) {
        const RigidBody& body = rigid_.body(k);
        const Proximity prox = ShapeProximity(rigid_.ShapeAt(k), p);
        const Vec3 vq = body.v + Cross(body.omega, prox.point - body.x);
        if (prox.distance > Norm(vp - vq) * dt + margin0) continue;
        const Index nj = add_rigid_point(k, prox.point);
        const Scalar mu = body.mu1;
        contacts->Add(offset + i, nj, RotateTangents(ContactFrame(prox.normal), tangent_rotation_), prox.distance / dt, mu, mu);
        meta_.push_back({p, body_id, body_of_rigid(k), -1, -1, k, Vec3(), prox.point - body.x});
      }
    }
  }
}

StepStats World::Step() {
  if (!finalized_) Finalize();
  const Scalar dt = params_.dt;
  StepStats stats;
  // detection and nodalization
  ContactSet contacts;
  VirtualNodeSet vn;
  Detect(&contacts, &vn);
  system_->SetVirtualNodes(vn);
  // parts: FEM bodies on the backend, rigid bodies on the host
  std::vector<const DeviceBlockMatrix*> parts_a;
  std::vector<const Array<Scalar>*> parts_b, parts_v;
  for (auto& f : fem_) {
    f->model->Assemble(f->x, f->v, dt, params_.gravity, nullptr, f->a.get(), &f->b);
    parts_a.push_back(f->a.get());
    parts_b.push_back(&f->b);
    parts_v.push_back(&f->v);
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
  rigid_v_.CopyFromHost(rigid_v);
  parts_a.push_back(rigid_a_.get());
  parts_b.push_back(&rigid_b_);
  parts_v.push_back(&rigid_v_);
  system_->Assemble(parts_a, parts_b);
  system_->GatherVelocity(parts_v, &v_);
  // rigid groups: each body with its virtual nodes, A_o^-1 from the body's own blocks
  RigidGroups groups;
  {
    const Index rigid_offset = system_->part_offset(rigid_part_);
    std::vector<std::vector<Index>> per_body(std::size_t(rigid_.num_bodies()));
    for (Index k = 0; k < vn.size(); ++k) {
      const Index host = vn.host[vn.ptr[k]];
      if (host >= rigid_offset && host < rigid_offset + rigid_.num_nodes() && vn.ptr[k + 1] - vn.ptr[k] == 2)
        per_body[(host - rigid_offset) / 2].push_back(k);
    }
    for (Index b = 0; b < rigid_.num_bodies(); ++b) {
      groups.trans.push_back(rigid_offset + 2 * b);
      groups.rot.push_back(rigid_offset + 2 * b + 1);
      Eigen::Matrix<Scalar, 6, 6> ao;
      for (int blk = 0; blk < 4; ++blk)
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 3; ++c) ao(3 * (blk / 2) + r, 3 * (blk % 2) + c) = values[9 * (4 * std::size_t(b) + blk) + 3 * r + c];
      const Eigen::Matrix<Scalar, 6, 6> inv = ao.inverse();
      for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c) groups.ao_inv.push_back(inv(r, c));
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
  }
  solver_->SetRigidGroups(groups);
  // the COND solve (Alg. 1)
  solver_->SetNodeEnvironments(std::vector<Index>(std::size_t(system_->num_nodes()), 0));
  solver_->SetContacts(contacts);
  stats.cond = solver_->Solve(system_->matrix(), system_->rhs(), &v_);
  stats.contacts = contacts.size();
  stats.virtual_nodes = vn.size();
  // divergence: report and leave the state untouched
  const std::vector<Scalar> vhat = v_.ToHost();
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    const Index offset = bodies_[b].first == 0 ? system_->part_offset(rigid_part_) + 2 * bodies_[b].second
                                               : system_->part_offset(fem_[bodies_[b].second]->part);
    const Index count = bodies_[b].first == 0 ? 2 : fem_[bodies_[b].second]->model->num_nodes();
    for (Index d = 3 * offset; d < 3 * (offset + count); ++d)
      CONDSIM_CHECK(std::isfinite(vhat[d]), "world: environment 0, body " << b << " diverged (NaN/Inf velocity) at step "
                                                                          << steps_ << " (t = " << time_ << " s)");
  }
  // advance: rigid bodies on the host, FEM bodies on the backend
  std::vector<Scalar> rigid_vhat(vhat.begin() + 3 * std::int64_t(system_->part_offset(rigid_part_)),
                                 vhat.begin() + 3 * std::int64_t(system_->part_offset(rigid_part_) + rigid_.num_nodes()));
  const std::vector<Scalar> lambda = solver_->Impulses();
  rigid_.Advance(dt, rigid_vhat);
  std::vector<Scalar> rigid_next(rigid_vhat.size());
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    StoreVec3(rigid_next.data(), 2 * k, rigid_.body(k).v);
    StoreVec3(rigid_next.data(), 2 * k + 1, rigid_.body(k).omega);
  }
  std::vector<std::vector<Scalar>> fem_next(fem_.size());
  for (std::size_t f = 0; f < fem_.size(); ++f) {
    FemBody& fb = *fem_[f];
    system_->ScatterVelocity(fb.part, v_, &fb.vhat);
    backend_->Axpby(dt, fb.vhat, 1, &fb.x);   // x += t v-hat
    backend_->Axpby(2, fb.vhat, -1, &fb.v);   // v = 2 v-hat - v
    if (params_.inelastic && contacts.size() > 0) fem_next[f] = fb.v.ToHost();
  }
  if (params_.inelastic && contacts.size() > 0) {
    ApplyInelastic(contacts, lambda, vhat, &rigid_next, &fem_next);
    for (std::size_t f = 0; f < fem_.size(); ++f) fem_[f]->v.CopyFromHost(fem_next[f]);
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
    records_.push_back(rec);
  }
  time_ += dt;
  ++steps_;
  return stats;
}

void World::ApplyInelastic(const ContactSet& contacts, const std::vector<Scalar>& lambda, const std::vector<Scalar>& vhat,
                           std::vector<Scalar>* rigid_next, std::vector<std::vector<Scalar>>* fem_next) {
  // rows of the per-body velocity targets: n^T J dv = n^T J (v-hat - v_next) for rigid sides
  std::vector<std::vector<std::pair<Eigen::Matrix<Scalar, 1, 6>, Scalar>>> rows(std::size_t(rigid_.num_bodies()));
  const Index rigid_offset = system_->part_offset(rigid_part_);
  for (Index m = 0; m < contacts.size(); ++m) {
    if (!(lambda[3 * std::size_t(m)] > 0)) continue;
    const Mat3 r = contacts.Frame(m);
    const int axes = IsSticking(contacts, lambda, m) ? 3 : 1;
    for (int side = 0; side < 2; ++side) {
      const Index node = side == 0 ? contacts.node_i[m] : contacts.node_j[m];
      if (node < 0) continue;
      const Index rigid = side == 0 ? meta_[m].rigid_i : meta_[m].rigid_j;
      if (rigid >= 0) {
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
        continue;
      }
      // an FEM node: its own mid-step components
      for (std::size_t f = 0; f < fem_.size(); ++f) {
        const Index offset = system_->part_offset(fem_[f]->part);
        const Index local = node - offset;
        if (local < 0 || local >= fem_[f]->model->num_nodes()) continue;
        std::vector<Scalar>& vn = (*fem_next)[f];
        const Vec3 now = LoadVec3(vn.data(), local), mid = LoadVec3(vhat.data(), node);
        Vec3 target = r * now;
        const Vec3 mid_c = r * mid;
        for (int a = 0; a < axes; ++a) target[a] = mid_c[a];
        StoreVec3(vn.data(), local, Transpose(r) * target);
      }
    }
  }
  // per rigid body: the smallest kinetic-energy change meeting the targets (least squares when
  // the rows are dependent, e.g. four corners of a box on a plane)
  for (Index k = 0; k < rigid_.num_bodies(); ++k) {
    if (rows[k].empty()) continue;
    const RigidBody& body = rigid_.body(k);
    const Index m = static_cast<Index>(rows[k].size());
    Eigen::Matrix<Scalar, Eigen::Dynamic, 6> c(m, 6);
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> d(m);
    for (Index i = 0; i < m; ++i) {
      c.row(i) = rows[k][i].first;
      d[i] = rows[k][i].second;
    }
    Eigen::Matrix<Scalar, 6, 6> minv = Eigen::Matrix<Scalar, 6, 6>::Zero();
    const Mat3 iw_inv = Inverse(rigid_.WorldInertia(k));
    for (int i = 0; i < 3; ++i) {
      minv(i, i) = 1 / body.mass;
      for (int j = 0; j < 3; ++j) minv(3 + i, 3 + j) = iw_inv(i, j);
    }
    const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> s = c * minv * c.transpose();
    const Eigen::Matrix<Scalar, Eigen::Dynamic, 1> y = s.completeOrthogonalDecomposition().solve(d);
    const Eigen::Matrix<Scalar, 6, 1> dv = minv * c.transpose() * y;
    AddVec3(rigid_next->data(), 2 * k, Vec3(dv[0], dv[1], dv[2]));
    AddVec3(rigid_next->data(), 2 * k + 1, Vec3(dv[3], dv[4], dv[5]));
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
