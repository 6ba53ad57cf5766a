// The world: scene building, body access, and the step as a sequence of stages.
#include "models/world/world.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "condsim/error.h"
#include "condsim/profile.h"
#include "models/world/integrate.h"

namespace condsim {

World::World(Backend* backend, const WorldParams& params) {
  w_.backend = backend;
  w_.params = params;
  w_.params.Validate();
}

World::~World() = default;

Index World::AddEnvironment() {
  CONDSIM_CHECK(!finalized_, "world: environments must be added before the first step");
  w_.env_first_body.push_back(num_bodies());
  return w_.current_env();
}

Index World::environment(Index body) const {
  CONDSIM_CHECK(body >= 0 && std::size_t(body) < w_.ids.size(), "world: body " << body << " does not exist");
  return w_.body_env[std::size_t(body)];
}

Index World::first_body(Index env) const {
  CONDSIM_CHECK(env >= 0 && env < num_envs(), "world: environment " << env << " does not exist (" << num_envs() << " environments)");
  return w_.env_first_body[std::size_t(env)];
}

bool World::env_failed(Index env) const {
  CONDSIM_CHECK(env >= 0 && env < num_envs(), "world: environment " << env << " does not exist (" << num_envs() << " environments)");
  return std::size_t(env) < w_.env_failed.size() && w_.env_failed[std::size_t(env)] != 0;
}

StepStats EnvironmentStats(const StepStats& stats, Index env) {
  CONDSIM_CHECK(env >= 0 && std::size_t(env) < stats.envs.size(), "EnvironmentStats: environment " << env << " is not in the step's statistics");
  const EnvStepStats& e = stats.envs[std::size_t(env)];
  StepStats out = stats;
  out.envs.clear();
  out.cond.iterations = e.iterations;
  out.cond.residual = e.residual;
  out.cond.momentum_error = e.momentum_error;
  out.cond.converged = e.converged;
  out.cond.env_iterations = {e.iterations};
  out.cond.env_residual = {e.residual};
  out.cond.env_momentum_error = {e.momentum_error};
  out.cond.failed_envs.clear();
  if (e.failed) out.cond.failed_envs.push_back(0);
  out.cond.num_contacts = e.contacts;
  out.contacts = e.contacts;
  out.max_penetration = e.max_penetration;
  out.health = e.health;
  return out;
}

void World::AddBodyId(BodyKind kind, Index k) {
  w_.kind_ids[int(kind)].push_back(num_bodies());
  w_.ids.push_back({kind, k});
  w_.body_env.push_back(w_.current_env());
}

Index World::AddStatic(const StaticShape& shape) {
  CONDSIM_CHECK(!finalized_, "world: shapes must be added before the first step");
  shape.Validate("static shape " + std::to_string(w_.statics.size()));
  w_.statics.push_back(shape);
  w_.static_env.push_back(w_.current_env());
  return static_cast<Index>(w_.statics.size()) - 1;
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
  w_.meshes.push_back(std::move(m));
  w_.mesh_env.push_back(w_.current_env());
  return static_cast<Index>(w_.meshes.size()) - 1;
}

Index World::AddRigid(const RigidBody& body) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  body.Validate("rigid body " + std::to_string(w_.ids.size()));
  AddBodyId(BodyKind::kRigid, static_cast<Index>(w_.rigid_init.size()));
  w_.rigid_init.push_back(body);
  if (!w_.rigid_wrench.empty()) w_.rigid_wrench.resize(6 * w_.rigid_init.size(), 0);
  return static_cast<Index>(w_.ids.size()) - 1;
}

Index World::AddJoint(const Joint& joint) {
  CONDSIM_CHECK(!finalized_, "world: joints must be added before the first step");
  const std::string where = "joint " + std::to_string(w_.joints.size());
  Joint j = joint;
  w_.CheckBody(joint.body_i, BodyKind::kRigid);
  j.body_i = w_.ids[joint.body_i].second;
  if (joint.body_j >= 0) {
    w_.CheckBody(joint.body_j, BodyKind::kRigid);
    CONDSIM_CHECK(w_.body_env[joint.body_i] == w_.body_env[joint.body_j],
                  where << ": bodies " << joint.body_i << " and " << joint.body_j << " are in different environments");
    j.body_j = w_.ids[joint.body_j].second;
  } else {
    j.body_j = -1;
  }
  j.Validate(where);
  w_.joints.push_back(j);
  if (j.body_j >= 0) {
    // kept sorted for Jointed's binary search
    const std::pair<Index, Index> pair{std::min(j.body_i, j.body_j), std::max(j.body_i, j.body_j)};
    w_.jointed.insert(std::upper_bound(w_.jointed.begin(), w_.jointed.end(), pair), pair);
  }
  return static_cast<Index>(w_.joints.size()) - 1;
}

void World::CheckJoint(Index joint) const {
  CONDSIM_CHECK(joint >= 0 && std::size_t(joint) < w_.joints.size(), "world: joint " << joint << " does not exist");
}

void World::SetJointDrive(Index joint, const JointDrive& drive) {
  CheckJoint(joint);
  if (!finalized_) Finalize();
  w_.rigid.SetJointDrive(joint, drive);
}

Scalar World::JointPosition(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? w_.rigid.JointPosition(joint) : 0;
}

Scalar World::JointRate(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? w_.rigid.JointRate(joint) : 0;
}

JointError World::JointConstraintError(Index joint) const {
  CheckJoint(joint);
  return finalized_ ? w_.rigid.JointConstraintError(joint) : JointError();
}

Index World::AddFem(const TetMesh& mesh, const FemMaterial& material, const std::string& name, Scalar mu, bool self_contact) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, "world: " << name << ": friction mu must be >= 0, got " << mu);
  Backend* backend = w_.backend;
  auto body = std::make_unique<FemBody>();
  body->mu = mu;
  body->self_contact = self_contact;
  body->name = name;
  body->model = std::make_unique<FemModel>(backend, mesh, material, name);
  body->x = Array<Scalar>(backend, mesh.x);
  body->v = Array<Scalar>(backend, std::vector<Scalar>(mesh.x.size(), 0));
  body->b = Array<Scalar>(backend, Index(mesh.x.size()));
  body->vhat = Array<Scalar>(backend, Index(mesh.x.size()));
  body->predictor = Array<Scalar>(backend, Index(mesh.x.size()));
  body->a = backend->CreateMatrix(body->model->pattern());
  body->surface = SurfaceNodes(mesh);
  body->tris = SurfaceTriangles(mesh);
  body->mass = body->model->lumped_mass();
  // node adjacency through elements (self-contact skips triangles touching a vertex's neighbours)
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
  body->depth_limit = DepthLimit(mesh.x.data(), body->tris);
  AddBodyId(BodyKind::kFem, static_cast<Index>(w_.fem.size()));
  w_.fem.push_back(std::move(body));
  return static_cast<Index>(w_.ids.size()) - 1;
}

Index World::AddRod(const RodGeometry& geometry, const RodMaterial& material, const RodEnd& start, const RodEnd& finish,
                    const std::string& name, Scalar mu, bool self_contact) {
  CONDSIM_CHECK(!finalized_, "world: bodies must be added before the first step");
  CONDSIM_CHECK(std::isfinite(mu) && mu >= 0, "world: " << name << ": friction mu must be >= 0, got " << mu);
  Backend* backend = w_.backend;
  auto body = std::make_unique<RodBody>();
  body->name = name;
  body->mu = mu;
  body->self_contact = self_contact;
  body->model = std::make_unique<RodModel>(backend, geometry, material, start, finish, name);
  const Index dofs = body->model->num_dofs();
  body->v = Array<Scalar>(backend, std::vector<Scalar>(std::size_t(dofs), 0));
  body->b = Array<Scalar>(backend, dofs);
  body->vhat = Array<Scalar>(backend, dofs);
  body->a = backend->CreateMatrix(body->model->pattern());
  AddBodyId(BodyKind::kRod, static_cast<Index>(w_.rods.size()));
  w_.rods.push_back(std::move(body));
  return static_cast<Index>(w_.ids.size()) - 1;
}

RodModel& World::rod_model(Index body) {
  w_.CheckBody(body, BodyKind::kRod);
  return *w_.rods[w_.ids[body].second]->model;
}

std::vector<Scalar> World::RodPositions(Index body) const {
  w_.CheckBody(body, BodyKind::kRod);
  return w_.rods[w_.ids[body].second]->model->positions().ToHost();
}

std::vector<Scalar> World::RodVelocities(Index body) const {
  w_.CheckBody(body, BodyKind::kRod);
  const std::vector<Scalar> vw = w_.rods[w_.ids[body].second]->v.ToHost();  // (v, w) per segment
  std::vector<Scalar> v;
  for (std::size_t s = 0; s + 5 < vw.size(); s += 6) v.insert(v.end(), {vw[s], vw[s + 1], vw[s + 2]});
  return v;
}

std::vector<Scalar> World::RodAngularVelocities(Index body) const {
  w_.CheckBody(body, BodyKind::kRod);
  const std::vector<Scalar> vw = w_.rods[w_.ids[body].second]->v.ToHost();
  std::vector<Scalar> w;
  for (std::size_t s = 0; s + 5 < vw.size(); s += 6) w.insert(w.end(), {vw[s + 3], vw[s + 4], vw[s + 5]});
  return w;
}

void World::SetRodVelocities(Index body, const std::vector<Scalar>& vw) {
  w_.CheckBody(body, BodyKind::kRod);
  RodBody& r = *w_.rods[w_.ids[body].second];
  CONDSIM_CHECK(Index(vw.size()) == r.v.size(), "world: SetRodVelocities of '" << r.name << "': needs " << r.v.size()
                                                    << " values (v, w per segment), got " << vw.size());
  for (Scalar c : vw) CONDSIM_CHECK(std::isfinite(c), "world: SetRodVelocities of '" << r.name << "': velocities must be finite");
  r.v.CopyFromHost(vw);
}

namespace {

// checks external forces (size n, finite) and stores them on the backend (empty: none)
void SetForces(Backend* backend, const std::string& what, const std::vector<Scalar>& f, Index n, Array<Scalar>* out) {
  CONDSIM_CHECK(f.empty() || Index(f.size()) == n, what << ": needs " << n << " values, got " << f.size());
  for (std::size_t i = 0; i < f.size(); ++i) CONDSIM_CHECK(std::isfinite(f[i]), what << ": value " << i << " is not finite");
  *out = f.empty() ? Array<Scalar>() : Array<Scalar>(backend, f);
}

}  // namespace

void World::SetFemForces(Index body, const std::vector<Scalar>& f) {
  w_.CheckBody(body, BodyKind::kFem);
  FemBody& b = *w_.fem[w_.ids[body].second];
  SetForces(w_.backend, "world: SetFemForces of '" + b.name + "' (3 per node [N])", f, b.v.size(), &b.f_ext);
}

void World::SetRodForces(Index body, const std::vector<Scalar>& f) {
  w_.CheckBody(body, BodyKind::kRod);
  RodBody& r = *w_.rods[w_.ids[body].second];
  SetForces(w_.backend, "world: SetRodForces of '" + r.name + "' (force, torque per segment)", f, r.v.size(), &r.f_ext);
}

std::vector<BodyMomentum> World::BodyMomenta() {
  if (!finalized_) Finalize();
  std::vector<BodyMomentum> out(w_.ids.size());
  const std::vector<BodyMomentum> deformable = momenta_.Run(w_);
  for (std::size_t b = 0; b < w_.ids.size(); ++b) {
    const Index k = w_.ids[b].second;
    switch (w_.ids[b].first) {
      case BodyKind::kFem:
        out[b] = deformable[std::size_t(k)];
        break;
      case BodyKind::kRod:
        out[b] = deformable[w_.fem.size() + std::size_t(k)];
        break;
      case BodyKind::kRigid: {
        const RigidBody& rb = w_.rigid.body(k);
        out[b] = w_.RigidMomentum(k, rb.v, rb.omega);
        break;
      }
      case BodyKind::kStatic:
        break;
    }
  }
  return out;
}

FemModel& World::fem_model(Index body) {
  w_.CheckBody(body, BodyKind::kFem);
  return *w_.fem[w_.ids[body].second]->model;
}

const RigidBody& World::rigid_body(Index body) const {
  w_.CheckBody(body, BodyKind::kRigid);
  return finalized_ ? w_.rigid.body(w_.ids[body].second) : w_.rigid_init[w_.ids[body].second];
}

void World::SetRigidWrench(Index body, const Vec3& force, const Vec3& torque) {
  w_.CheckBody(body, BodyKind::kRigid);
  if (w_.rigid_wrench.empty()) w_.rigid_wrench.assign(6 * w_.rigid_init.size(), 0);
  const Index k = w_.ids[body].second;
  StoreVec3(w_.rigid_wrench.data(), 2 * k, force);
  StoreVec3(w_.rigid_wrench.data(), 2 * k + 1, torque);
}

void World::SetPoseDrive(Index body, const PoseDrive& drive) {
  w_.CheckBody(body, BodyKind::kRigid);
  if (!finalized_) Finalize();
  w_.rigid.SetPoseDrive(w_.ids[body].second, drive);
}

std::vector<Scalar> World::FemPositions(Index body) const {
  w_.CheckBody(body, BodyKind::kFem);
  return w_.fem[w_.ids[body].second]->x.ToHost();
}

const Array<Scalar>& World::fem_positions(Index body) const {
  w_.CheckBody(body, BodyKind::kFem);
  return w_.fem[w_.ids[body].second]->x;
}

std::vector<Scalar> World::FemVelocities(Index body) const {
  w_.CheckBody(body, BodyKind::kFem);
  return w_.fem[w_.ids[body].second]->v.ToHost();
}

void World::SetFemVelocities(Index body, const std::vector<Scalar>& v) {
  w_.CheckBody(body, BodyKind::kFem);
  for (Scalar c : v) CONDSIM_CHECK(std::isfinite(c), "world: SetFemVelocities of body " << body << ": velocities must be finite");
  w_.fem[w_.ids[body].second]->v.CopyFromHost(v);
}

Index World::num_dofs() const {
  Index n = 6 * static_cast<Index>(w_.rigid_init.size());
  for (const auto& f : w_.fem) n += 3 * f->model->num_nodes();
  for (const auto& r : w_.rods) n += r->model->num_dofs();
  return n;
}

void World::Finalize() {
  CONDSIM_CHECK(num_bodies() > 0, "world: nothing to step (no rigid body, FEM body or cable was added)");
  for (Index e = 0; e < num_envs(); ++e)
    CONDSIM_CHECK(first_body(e) < (e + 1 < num_envs() ? first_body(e + 1) : num_bodies()),
                  "world: environment " << e << " has no rigid body, FEM body or cable");
  // the global system's parts: FEM bodies, cables, then the rigid bodies
  w_.rigid = RigidModel(w_.rigid_init, "rigid bodies", w_.joints);
  w_.system = std::make_unique<SystemMatrix>(w_.backend);
  for (auto& f : w_.fem) {
    f->part = w_.system->num_parts();  // AddPart returns the first node, not the part index
    w_.system->AddPart(f->model->pattern());
  }
  for (auto& r : w_.rods) {
    r->part = w_.system->num_parts();
    w_.system->AddPart(r->model->pattern());
  }
  w_.rigid_part = w_.system->num_parts();
  w_.system->AddPart(w_.rigid.pattern());
  assemble_.Build(w_);
  solve_.Build(w_);
  inelastic_.Build(w_);
  health_.Build(w_);
  detect_.Build(&w_);
  finalized_ = true;
}

void World::ReserveForContacts() {
  // a bound from the potential contact points P, O(P): a point makes at most contact_reserve
  // (default 4) contacts a step (the detector keeps at most 4 owners per query; a cable link
  // touches a few links), each with the virtual nodes its kind of point can make
  // (DetectStage::PotentialContacts). Beyond it the arrays still grow (Array::Resize), so the
  // bound is capacity, not a limit
  if (w_.params.contact_reserve == 0) return;
  const ContactBounds bounds = detect_.PotentialContacts(w_, Index(w_.params.contact_reserve));
  w_.system->Reserve(bounds, &w_.v);
  solve_.Reserve(bounds, w_.system->num_base_nodes() + bounds.virtual_nodes);
  detect_.Reserve(bounds.contacts);
  inelastic_.Reserve(w_.backend, bounds.contacts);
}

namespace {

// one stage of a step: its profiler range (NVTX on CUDA builds) and its wall time, written to
// *seconds when it ends (End, or the scope's end)
class StepStage {
 public:
  StepStage(const char* name, double* seconds) : range_(name), seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~StepStage() { End(); }
  StepStage(const StepStage&) = delete;
  StepStage& operator=(const StepStage&) = delete;
  void End() {
    if (seconds_ == nullptr) return;
    *seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    seconds_ = nullptr;
    range_.End();
  }

 private:
  ProfileRange range_;
  double* seconds_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

StepStats World::Step() {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  // profiler ranges (NVTX on CUDA builds): the step, and its stages inside it
  ProfileRange step_range("step " + std::to_string(steps_));
  if (!finalized_) Finalize();
  // the last step's records go (a step that throws leaves none)
  records_.clear();
  records_stale_ = false;
  StepStats stats;
  const std::size_t ne = std::size_t(num_envs());
  stats.envs.resize(ne);
  contacts_ = ContactSet();
  ContactSet& contacts = contacts_;
  const BackendCounters detect_start = w_.backend->counters();
  StepStage detect_stage("detect", &stats.detect_seconds);
  detect_.Run(w_, &nodes_, &contacts);
  // the solver uploads the whole set unless the detection writes its record (then the S-contacts'
  // frames against static shapes can stay on the backend: DetectStage::Deferred)
  if (!detect_.remakes()) detect_.Complete();
  stats.detect_counters = w_.backend->counters() - detect_start;
  for (Index m = 0; m < contacts.size(); ++m) {
    const Scalar pen = detect_.Penetration(contacts, m);
    EnvStepStats& e = stats.envs[std::size_t(contacts.env[m])];
    stats.max_penetration = std::max(stats.max_penetration, pen);
    e.max_penetration = std::max(e.max_penetration, pen);
    ++e.contacts;
  }
  detect_stage.End();
  StepStage assemble_stage("assemble", &stats.assemble_seconds);
  const std::vector<Scalar>& rigid_values = assemble_.Run(&w_, nodes_.virtual_nodes(), steps_ > 0 && w_.params.warm_start);
  stats.pattern_counters = assemble_.pattern_counters();
  assemble_stage.End();
  StepStage solve_stage("solve", &stats.solve_seconds);
  const BackendCounters c_nodes = w_.backend->counters();
  const RigidGroups groups = nodes_.BuildRigidGroups(w_, rigid_values);
  const BodyModes modes = nodes_.BuildBodyModes(&w_);
  stats.modes_counters = w_.backend->counters() - c_nodes;
  VhatSummary vhat;
  std::vector<EnvFailure> failures;
  stats.cond = solve_.Run(&w_, nodes_, groups, modes, contacts, detect_.remakes() ? &detect_ : nullptr, steps_, time_, &vhat, &failures);
  stats.solver_counters = solve_.solver_counters();
  solve_stage.End();
  ProfileRange finish_range("health, integrate, record");
  stats.matrix_rows = w_.system->matrix().pattern().rows();
  stats.matrix_blocks = w_.system->matrix().pattern().nnz_blocks();
  stats.contacts = contacts.size();
  stats.virtual_nodes = nodes_.virtual_nodes().size();
  // a failed solve: an error, or (isolating failures) the environment frozen
  std::vector<unsigned char> failed_before = w_.env_failed;
  w_.env_failed.resize(ne, 0);
  failed_before.resize(ne, 0);
  auto take = [&](std::size_t first) {
    for (std::size_t f = first; f < failures.size(); ++f) {
      const EnvFailure& fl = failures[f];
      if (!isolate_failures_) {
        w_.env_failed = failed_before;
        throw DivergenceError(fl.what, fl.env, fl.body, steps_);
      }
      w_.env_failed[std::size_t(fl.env)] = 1;
      EnvStepStats& e = stats.envs[std::size_t(fl.env)];
      e.failed = true;
      e.failed_body = fl.body;
      e.failure = fl.what;
    }
  };
  take(0);
  const std::size_t solve_failures = failures.size();
  std::vector<HealthReport> env_health;
  stats.health = health_.Run(w_, vhat, steps_, time_, &env_health, &failures);
  take(solve_failures);
  // frozen environments: v-hat 0 (they keep their positions), velocities 0
  if (std::find(w_.env_failed.begin(), w_.env_failed.end(), 1) != w_.env_failed.end()) solve_.ZeroFailed(&w_, &vhat);
  Integrate(&w_, vhat.rigid);
  if (w_.params.inelastic && contacts.size() > 0) {
    StepStage inelastic_stage("inelastic", &stats.inelastic_seconds);
    inelastic_.Run(&w_, contacts, vhat.rigid, solve_.contact_record(), solve_.impulses_on_backend(), &detect_);
  }
  for (std::size_t e = 0; e < ne; ++e)
    if (w_.env_failed[e] && !failed_before[e]) FreezeEnvironment(Index(e));
  // the contact records are made when first asked for (contacts(), BodyWrench): the impulses
  // come to the host only then
  records_stale_ = true;
  if (body_momenta_) stats.bodies = BodyMomenta();
  // per environment: the solve and the health report (a failed environment: 0 iterations)
  for (std::size_t e = 0; e < ne; ++e) {
    EnvStepStats& es = stats.envs[e];
    if (failed_before[e]) {
      es.contacts = 0;
      continue;
    }
    es.iterations = stats.cond.env_iterations[e];
    es.residual = stats.cond.env_residual[e];
    es.momentum_error = stats.cond.env_momentum_error[e];
    es.converged = !es.failed && stats.cond.env_converged[e] != 0;
    es.health = env_health[e];
  }
  if (steps_ == 0) ReserveForContacts();
  time_ += w_.params.dt;
  ++steps_;
  stats.step_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  return stats;
}

void World::FreezeEnvironment(Index env) {
  // its bodies at rest where they are (their positions are the step's start: v-hat was 0)
  for (std::size_t b = 0; b < w_.ids.size(); ++b) {
    if (w_.body_env[b] != env) continue;
    const Index k = w_.ids[b].second;
    switch (w_.ids[b].first) {
      case BodyKind::kFem:
        w_.backend->Fill(0, &w_.fem[std::size_t(k)]->v);
        break;
      case BodyKind::kRod:
        w_.backend->Fill(0, &w_.rods[std::size_t(k)]->v);
        break;
      case BodyKind::kRigid: {
        RigidBody& rb = w_.rigid.mutable_body(k);
        rb.v = Vec3();
        rb.omega = Vec3();
        break;
      }
      case BodyKind::kStatic:
        break;
    }
  }
}

const ContactSet& World::HostContacts() const {
  detect_.Complete();
  return contacts_;
}

const std::vector<ContactRecord>& World::contacts() const {
  if (records_stale_) {
    Record(HostContacts(), solve_.Impulses());
    records_stale_ = false;
  }
  return records_;
}

void World::Record(const ContactSet& contacts, const std::vector<Scalar>& lambda) const {
  const std::vector<ContactMeta>& meta = detect_.meta();
  records_.clear();
  for (Index m = 0; m < contacts.size(); ++m) {
    const Mat3 r = contacts.Frame(m);
    ContactRecord rec;
    rec.position = meta[m].position;
    rec.normal = r.Row(0);
    rec.lambda = LoadVec3(lambda.data(), m);
    rec.force = Transpose(r) * rec.lambda;
    rec.body_i = meta[m].body_i;
    rec.body_j = meta[m].body_j;
    rec.shape = meta[m].shape;
    rec.mesh = meta[m].mesh;
    rec.env = meta[m].env;
    records_.push_back(rec);
  }
}

Wrench World::BodyWrench(Index body) const {
  Wrench w;
  Vec3 ref;
  if (body >= 0 && std::size_t(body) < w_.ids.size() && w_.ids[body].first == BodyKind::kRigid) ref = rigid_body(body).x;
  for (const ContactRecord& r : contacts()) AddContactWrench(r, body, ref, &w);
  return w;
}

void AddContactWrench(const ContactRecord& c, Index body, const Vec3& ref, Wrench* w) {
  if (c.body_i == body) {
    w->force += c.force;
    w->torque += Cross(c.position - ref, c.force);
  }
  if (c.body_j == body) {
    w->force -= c.force;
    w->torque -= Cross(c.position - ref, c.force);
  }
}

}  // namespace condsim
