// The world a scene builds, and the scene's run-time controls (drives along trajectories).
#include "models/world/scene.h"

#include <algorithm>
#include <string>
#include <utility>

#include "condsim/error.h"

namespace condsim {

PoseDrive ScenePoseDrive::At(Scalar time) const {
  PoseDrive drive = gains;
  trajectory.Sample(time, &drive.p, &drive.q, &drive.v, &drive.omega);
  return drive;
}

void SceneTrajectory::Sample(Scalar time, Vec3* position, Quat* orientation, Vec3* v, Vec3* w) const {
  *v = Vec3();
  *w = Vec3();
  if (time <= t.front() || t.size() == 1) {
    *position = p.front();
    *orientation = q.front();
    return;
  }
  if (time >= t.back()) {
    *position = p.back();
    *orientation = q.back();
    return;
  }
  const std::size_t k = std::size_t(std::upper_bound(t.begin(), t.end(), time) - t.begin()) - 1;
  const Scalar h = t[k + 1] - t[k], s = (time - t[k]) / h;
  *position = (1 - s) * p[k] + s * p[k + 1];
  // the relative rotation q_{k+1} q_k^-1 as a rotation vector, scaled
  const Vec3 rel = LogRotation(ToMatrix(q[k + 1]) * Transpose(ToMatrix(q[k])));
  *orientation = Normalized(FromRotationVector(s * rel) * q[k]);
  *v = (1 / h) * (p[k + 1] - p[k]);
  *w = (1 / h) * rel;
}

std::vector<Scalar> RigidVelocityField(const SceneFem& f) {
  // the centre of volume: sum V_e c_e / sum V_e (the centre of mass of a uniform body, and of its
  // lumped node masses)
  Vec3 centre;
  Scalar volume = 0;
  for (Index e = 0; e < f.mesh.num_tets(); ++e) {
    const Scalar ve = TetVolume(f.mesh, e);
    Vec3 c;
    for (int a = 0; a < 4; ++a) c += Scalar(0.25) * f.mesh.Node(f.mesh.tets[4 * std::size_t(e) + a]);
    centre += ve * c;
    volume += ve;
  }
  centre = (1 / volume) * centre;
  std::vector<Scalar> v;
  for (Index i = 0; i < f.mesh.num_nodes(); ++i) {
    const Vec3 vi = f.velocity + Cross(f.angular_velocity, f.mesh.Node(i) - centre);
    v.insert(v.end(), {vi[0], vi[1], vi[2]});
  }
  return v;
}

std::vector<Scalar> RodVelocityField(const SceneRod& r) {
  // the centre of mass: the segments have equal masses (MakePolylineRod: equal lengths, one radius)
  const std::vector<Vec3>& xs = r.geometry.centers;
  Vec3 centre;
  for (const Vec3& x : xs) centre += x;
  centre = (Scalar(1) / Scalar(xs.size())) * centre;
  std::vector<Scalar> vw;
  for (const Vec3& x : xs) {
    const Vec3 v = r.velocity + Cross(r.angular_velocity, x - centre);
    vw.insert(vw.end(), {v[0], v[1], v[2], r.angular_velocity[0], r.angular_velocity[1], r.angular_velocity[2]});
  }
  return vw;
}

std::vector<Scalar> FemForces(const SceneFem& f, const std::vector<Scalar>& mass) {
  if (Norm(f.force) == 0 && f.node_forces.empty()) return {};
  std::vector<Scalar> out(3 * mass.size(), 0);
  Scalar total = 0;
  for (Scalar m : mass) total += m;
  // the total force by mass: f_i = F m_i / m (every node accelerates by F / m)
  for (std::size_t i = 0; i < mass.size(); ++i) StoreVec3(out.data(), Index(i), (mass[i] / total) * f.force);
  for (const SceneNodeForce& nf : f.node_forces)
    for (Index i : nf.nodes) StoreVec3(out.data(), i, LoadVec3(out.data(), i) + nf.force);
  return out;
}

std::vector<Scalar> RodForces(const SceneRod& r) {
  if (Norm(r.force) == 0 && r.segment_forces.empty()) return {};
  const Index n = Index(r.geometry.centers.size());
  std::vector<Scalar> out(6 * std::size_t(n), 0);
  // equal segment masses: F / n on each
  for (Index s = 0; s < n; ++s) StoreVec3(out.data(), 2 * s, (Scalar(1) / Scalar(n)) * r.force);
  for (const SceneNodeForce& sf : r.segment_forces)
    for (Index s : sf.nodes) {
      StoreVec3(out.data(), 2 * s, LoadVec3(out.data(), 2 * s) + sf.force);
      StoreVec3(out.data(), 2 * s + 1, LoadVec3(out.data(), 2 * s + 1) + sf.torque);
    }
  return out;
}

namespace {

// the scene's items added to the world's current environment
void AddScene(const Scene& scene, SceneWorld* sw) {
  SceneWorld& out = *sw;
  World& w = *out.world;
  out.env = w.num_envs() - 1;
  out.first_body = w.num_bodies();
  for (const StaticShape& s : scene.statics) w.AddStatic(s);
  for (const SceneMesh& m : scene.meshes) w.AddStaticMesh(m.mesh, m.mu, m.name);
  for (const SceneRigid& r : scene.rigid) out.rigid_ids.push_back(w.AddRigid(r.body));
  for (const SceneFem& f : scene.fem) out.fem_ids.push_back(w.AddFem(f.mesh, f.material, f.name, f.mu, f.self_contact));
  for (std::size_t k = 0; k < scene.fem.size(); ++k) {
    const SceneFem& f = scene.fem[k];
    if (!f.handle_nodes.empty()) {
      // the handle's nodes, carried from their mesh positions (ApplyControls)
      FemModel& m = w.fem_model(out.fem_ids[k]);
      m.SetPrescribedNodes(f.handle_nodes);
      std::vector<Scalar> reference;
      for (Index i : f.handle_nodes) {
        const Vec3 x = f.mesh.Node(i);
        reference.insert(reference.end(), {x[0], x[1], x[2]});
      }
      m.SetPrescribedReference(reference);
    }
    if (Norm(f.velocity) > 0 || Norm(f.angular_velocity) > 0) w.SetFemVelocities(out.fem_ids[k], RigidVelocityField(f));
    const std::vector<Scalar> forces = FemForces(f, w.fem_model(out.fem_ids[k]).lumped_mass());
    if (!forces.empty()) w.SetFemForces(out.fem_ids[k], forces);
  }
  for (const SceneRod& r : scene.rods) {
    const Index id = w.AddRod(r.geometry, r.material, r.start, r.finish, r.name, r.mu, r.self_contact);
    out.rod_ids.push_back(id);
    if (Norm(r.velocity) > 0 || Norm(r.angular_velocity) > 0) w.SetRodVelocities(id, RodVelocityField(r));
    const std::vector<Scalar> forces = RodForces(r);
    if (!forces.empty()) w.SetRodForces(id, forces);
  }
  // a driven cable end keeps its pose in the frame of the trajectory's first pose
  for (const SceneRodEndDrive& d : scene.rod_end_drives) {
    const RodGeometry& g = scene.rods[d.rod].geometry;
    const std::size_t s = d.end == 0 ? 0 : g.centers.size() - 1;
    const Mat3 frame = ToMatrix(g.frames[s]);
    const Vec3 tip = g.centers[s] + Scalar(d.end == 0 ? -0.5 : 0.5) * Scalar(g.segment_length) * frame.Col(2);
    const Mat3 r0t = Transpose(ToMatrix(d.trajectory.q.front()));
    out.end_offset.push_back(r0t * (tip - d.trajectory.p.front()));
    out.end_rotation.push_back(FromMatrix(r0t * frame));
  }
  for (const SceneGripper& g : scene.grippers) out.grippers.push_back(AddParallelGripper(&w, g.params));
  std::vector<Index> joint_ids;
  for (const SceneJoint& j : scene.joints) {
    Joint jt = j.joint;
    jt.body_i = out.rigid_ids[jt.body_i];
    jt.body_j = jt.body_j >= 0 ? out.rigid_ids[jt.body_j] : -1;
    joint_ids.push_back(w.AddJoint(jt));
  }
  for (std::size_t k = 0; k < scene.rigid.size(); ++k) {
    const SceneRigid& r = scene.rigid[k];
    if (Norm(r.force) > 0 || Norm(r.torque) > 0) w.SetRigidWrench(out.rigid_ids[k], r.force, r.torque);
  }
  for (std::size_t k = 0; k < scene.joints.size(); ++k)
    if (scene.joints[k].driven) w.SetJointDrive(joint_ids[k], scene.joints[k].drive);
}

// the first /world parameter in which b differs from a ("" when none does)
std::string ParamsDiffer(const WorldParams& a, const WorldParams& b) {
  const CondParams &x = a.cond, &y = b.cond;
  const std::pair<const char*, bool> fields[] = {
      {"dt", a.dt != b.dt},
      {"gravity", !(a.gravity[0] == b.gravity[0] && a.gravity[1] == b.gravity[1] && a.gravity[2] == b.gravity[2])},
      {"kv", a.kv != b.kv},
      {"contact_margin", a.contact_margin != b.contact_margin},
      {"inelastic", a.inelastic != b.inelastic},
      {"warm_start", a.warm_start != b.warm_start},
      {"health", a.health.max_speed != b.health.max_speed || a.health.max_distance != b.health.max_distance ||
                     a.health.max_energy_growth != b.health.max_energy_growth},
      {"solver", x.projection != y.projection || x.step_size != y.step_size || x.w_reuse_solves != y.w_reuse_solves ||
                     x.w_safeguard != y.w_safeguard || x.theta_threshold != y.theta_threshold || x.stop_rule != y.stop_rule ||
                     x.momentum_factor != y.momentum_factor || x.max_iterations != y.max_iterations || x.check_every != y.check_every ||
                     x.chebyshev != y.chebyshev ||
                     x.chebyshev_start != y.chebyshev_start || x.chebyshev_relax != y.chebyshev_relax || x.omega != y.omega ||
                     x.body_modes != y.body_modes || x.free_body_modes != y.free_body_modes || x.truncated_modes != y.truncated_modes ||
                     x.chain_gauss_seidel != y.chain_gauss_seidel ||
                     x.body_mode_refresh != y.body_mode_refresh ||
                     x.body_mode_patches != y.body_mode_patches || x.body_mode_patch_nodes != y.body_mode_patch_nodes ||
                     x.body_mode_dense_patches != y.body_mode_dense_patches || x.rigid_sweeps != y.rigid_sweeps},
  };
  for (const auto& [name, differs] : fields)
    if (differs) return name;
  return "";
}

}  // namespace

SceneWorld BuildWorld(const Scene& scene, Backend* backend) {
  SceneWorld out;
  out.world = std::make_shared<World>(backend, scene.world);
  AddScene(scene, &out);
  return out;
}

std::vector<SceneWorld> BuildBatch(const std::vector<Scene>& scenes, Backend* backend) {
  CONDSIM_CHECK(!scenes.empty(), "batch: no scenes");
  auto world = std::make_shared<World>(backend, scenes[0].world);
  std::vector<SceneWorld> out(scenes.size());
  for (std::size_t e = 0; e < scenes.size(); ++e) {
    const std::string differs = ParamsDiffer(scenes[0].world, scenes[e].world);
    CONDSIM_CHECK(differs.empty(), scenes[e].source << ": environment " << e << " of a batch has other /world/" << differs
                                                    << " than environment 0 (the environments of a batch share the world's parameters; "
                                                       "randomize bodies, materials and drives, not /world)");
    if (e > 0) world->AddEnvironment();
    out[e].world = world;
    AddScene(scenes[e], &out[e]);
  }
  return out;
}

void ApplyControls(const Scene& scene, SceneWorld* sw) {
  World& w = *sw->world;
  const Scalar tm = w.time() + scene.world.dt / 2;
  for (std::size_t k = 0; k < scene.rod_end_drives.size(); ++k) {
    const SceneRodEndDrive& d = scene.rod_end_drives[k];
    Vec3 p, v, om;
    Quat q;
    d.trajectory.Sample(tm, &p, &q, &v, &om);
    const Mat3 r = ToMatrix(q);
    const Vec3 arm = r * sw->end_offset[k];
    w.rod_model(sw->rod_ids[d.rod]).SetEndPose(d.end, p + arm, Normalized(q * sw->end_rotation[k]), v + Cross(om, arm), om);
  }
  for (const ScenePoseDrive& d : scene.pose_drives) w.SetPoseDrive(sw->rigid_ids[d.body], d.At(tm));
  // FEM handles: each node's velocity takes it to its carried position at the step's end
  for (std::size_t k = 0; k < scene.fem.size(); ++k) {
    const SceneFem& f = scene.fem[k];
    if (f.handle_nodes.empty()) continue;
    const SceneTrajectory& tr = f.handle_trajectory;
    Vec3 p, v, om;
    Quat q;
    tr.Sample(w.time() + scene.world.dt, &p, &q, &v, &om);
    const Mat3 r = ToMatrix(q) * Transpose(ToMatrix(tr.q.front()));
    w.fem_model(sw->fem_ids[k]).CarryPrescribed(w.fem_positions(sw->fem_ids[k]), r, p, tr.p.front(), scene.world.dt);
  }
  for (std::size_t k = 0; k < scene.grippers.size(); ++k) {
    const SceneGripper& g = scene.grippers[k];
    if (g.palm_driven) w.SetPoseDrive(sw->grippers[k].palm, g.palm.At(tm));
    if (g.width.t.empty()) continue;
    // the pad gap: linear between waypoints, held outside (the trajectory's x)
    Vec3 width, rate, unused;
    Quat q;
    g.width.Sample(tm, &width, &q, &rate, &unused);
    SetGripperWidth(&w, sw->grippers[k], width[0], rate[0]);
  }
}

}  // namespace condsim
