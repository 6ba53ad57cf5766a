// HDF5 + XDMF run output, streamed frame by frame.
#include "io/output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "condsim/build_commit.h"
#include "condsim/build_info.h"
#include "condsim/error.h"
#include "io/scene.h"
#include "io/hdf5_util.h"
#include "models/fem/tet_mesh.h"

namespace condsim {
bool HaveHdf5() { return CONDSIM_HAVE_HDF5 != 0; }

void WriteTextAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".part";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(path + ": cannot write " + tmp + " (" + std::strerror(errno) + ")");
    out << text;
    out.flush();
    if (!out) {
      const std::string reason = std::strerror(errno);
      out.close();
      std::filesystem::remove(tmp);
      throw Error(path + ": cannot write " + tmp + " (" + reason + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw Error(path + ": cannot rename " + tmp + " (" + ec.message() + ")");
  }
}

std::string EscapeXml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<std::string> UniqueGroupNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::map<std::string, int> used;
  for (const std::string& name : names) {
    std::string g = name;
    for (char& c : g)
      if (c == '/' || c == '.' || c == '|' || c == ':') c = '_';
    if (g.empty()) g = "_";
    std::string unique = g;
    for (int k = 2; used.count(unique); ++k) unique = g + "_" + std::to_string(k);
    used[unique] = 1;
    out.push_back(unique);
  }
  return out;
}

#if CONDSIM_HAVE_HDF5
namespace {

using hdf5::Appendable;
using hdf5::MakeGroup;
using hdf5::WriteData;
using hdf5::WriteScalarAttr;
using hdf5::WriteStringAttr;

}  // namespace

struct Recorder::File {
  hid_t id = -1;
  std::vector<hid_t> groups;  // closed before the file
  Appendable time;
  std::vector<Appendable> x, v, q;  // per track (q: rods and rigid bodies)
  std::vector<Appendable> energy, momentum, angular;  // per track, per step (/stats/bodies)
  Appendable contact_offset, contact_position, contact_normal, contact_impulse, contact_bodies;
  Appendable iterations, contacts, residual, penetration, converged, max_speed, kinetic_energy;
  std::vector<Appendable> contact_force, contact_torque;    // per track (extras)
  std::vector<Appendable> drive_position, drive_quaternion, drive_width;  // per drive (extras)
  std::int64_t contact_rows = 0;
  ~File() {
    x.clear();
    v.clear();
    q.clear();
    contact_force.clear();
    contact_torque.clear();
    drive_position.clear();
    drive_quaternion.clear();
    drive_width.clear();
    energy.clear();
    momentum.clear();
    angular.clear();
    time = Appendable();
    for (Appendable* a : {&contact_offset, &contact_position, &contact_normal, &contact_impulse, &contact_bodies, &iterations,
                          &contacts, &residual, &penetration, &converged, &max_speed, &kinetic_energy})
      *a = Appendable();
    for (hid_t g : groups) H5Gclose(g);
    if (id >= 0) H5Fclose(id);
  }
};
#else
struct Recorder::File {};
#endif

Recorder::Recorder(const std::string& path, const Scene& scene, const SceneWorld& world, const RecordEpisode& episode)
    : path_(path), scene_name_(scene.name), env_(world.env), first_body_(world.first_body) {
  // the bodies: FEM, cables, then the scene's rigid bodies and each gripper's parts
  for (std::size_t k = 0; k < scene.fem.size(); ++k) {
    const SceneFem& f = scene.fem[k];
    tracks_.push_back({f.name, "", "fem", f.mesh.num_nodes(), f.mesh.num_tets(), world.fem_ids[k]});
  }
  for (std::size_t k = 0; k < scene.rods.size(); ++k) {
    const SceneRod& r = scene.rods[k];
    tracks_.push_back({r.name, "", "rod", Index(r.geometry.centers.size()), 0, world.rod_ids[k]});
  }
  for (std::size_t k = 0; k < scene.rigid.size(); ++k) tracks_.push_back({scene.rigid[k].name, "", "rigid", 1, 0, world.rigid_ids[k]});
  for (std::size_t k = 0; k < scene.grippers.size(); ++k) {
    const Gripper& g = world.grippers[k];
    const std::string& n = scene.grippers[k].name;
    const std::pair<const char*, Index> parts[] = {{"_palm", g.palm}, {"_finger0", g.finger[0]}, {"_finger1", g.finger[1]}};
    for (const auto& [suffix, id] : parts) tracks_.push_back({n + suffix, "", "rigid", 1, 0, id});
  }
  std::vector<std::string> names;
  for (const Track& t : tracks_) names.push_back(t.name);
  const std::vector<std::string> groups = UniqueGroupNames(names);
  for (std::size_t k = 0; k < tracks_.size(); ++k) tracks_[k].group = groups[k];
  // the drives whose targets an episode records: pose drives (by body), cable ends, grippers
  extras_ = episode.extras;
  if (extras_) {
    std::vector<std::string> drive_names;
    for (const ScenePoseDrive& d : scene.pose_drives) {
      drives_.push_back({"", "pose", d.trajectory, {}, {}, {}});
      drive_names.push_back(scene.rigid[std::size_t(d.body)].name);
    }
    for (std::size_t k = 0; k < scene.rod_end_drives.size(); ++k) {
      const SceneRodEndDrive& d = scene.rod_end_drives[k];
      drives_.push_back({"", "rod_end", d.trajectory, {}, world.end_offset[k], world.end_rotation[k]});
      drive_names.push_back(scene.rods[std::size_t(d.rod)].name + (d.end == 0 ? "_start" : "_finish"));
    }
    for (const SceneGripper& g : scene.grippers) {
      drives_.push_back({"", "gripper", g.palm_driven ? g.palm.trajectory : SceneTrajectory{}, g.width, {}, {}});
      drive_names.push_back(g.name);
    }
    const std::vector<std::string> drive_groups = UniqueGroupNames(drive_names);
    for (std::size_t k = 0; k < drives_.size(); ++k) drives_[k].group = drive_groups[k];
  }
  body_rows_.resize(tracks_.size());
#if CONDSIM_HAVE_HDF5
  // every step's body momenta for /stats/bodies
  world.world->set_body_momenta(true);
  hdf5::Quiet();
  const std::string tmp = path + ".part";
  file_ = std::make_unique<File>();
  File& f = *file_;
  errno = 0;
  f.id = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f.id < 0) {
    file_.reset();
    throw Error(path + ": cannot create " + tmp + " (" + hdf5::Reason() + ")");
  }
  try {
    const hid_t dbl = sizeof(Scalar) == 8 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT, i32 = H5T_NATIVE_INT32;
    WriteStringAttr(f.id, "scene", scene.name, path);
    WriteStringAttr(f.id, "scene_hash", HashHex(scene.hash), path);
    WriteStringAttr(f.id, "commit", CONDSIM_GIT_COMMIT, path);
    WriteStringAttr(f.id, "status", "running", path);
    // a batch member: its seed, the values drawn (full precision), its episode
    if (scene.randomized) {
      WriteScalarAttr(f.id, "seed", H5T_NATIVE_UINT64, &scene.seed, path);
      nlohmann::json values = nlohmann::json::object();
      for (const SceneRandom& r : scene.randomization)
        for (const std::string& p : r.paths) values[p] = r.value;
      WriteStringAttr(f.id, "randomization", values.dump(), path);
    }
    if (episode.index >= 0) WriteScalarAttr(f.id, "episode", H5T_NATIVE_INT64, &episode.index, path);
    if (episode.steps >= 0) WriteScalarAttr(f.id, "steps", H5T_NATIVE_INT64, &episode.steps, path);
    f.time = Appendable(f.id, "time", dbl, {}, path);
    const hid_t bodies = MakeGroup(f.id, "bodies", path);
    f.groups.push_back(bodies);
    for (std::size_t k = 0; k < tracks_.size(); ++k) {
      const Track& t = tracks_[k];
      const hid_t g = MakeGroup(bodies, t.group, path);
      f.groups.push_back(g);
      WriteStringAttr(g, "kind", t.kind, path);
      f.x.emplace_back(g, "x", dbl, std::vector<hsize_t>{hsize_t(t.count), 3}, path);
      f.v.emplace_back(g, "v", dbl, std::vector<hsize_t>{hsize_t(t.count), 3}, path);
      f.q.emplace_back();
      if (t.kind != "fem") f.q.back() = Appendable(g, "q", dbl, {hsize_t(t.count), 4}, path);
      if (extras_) {
        f.contact_force.emplace_back(g, "contact_force", dbl, std::vector<hsize_t>{3}, path);
        f.contact_torque.emplace_back(g, "contact_torque", dbl, std::vector<hsize_t>{3}, path);
      }
      if (t.kind == "fem") {
        const TetMesh& mesh = scene.fem[k].mesh;
        WriteData(g, "tets", i32, {hsize_t(t.cells), 4}, mesh.tets.data(), path);
      } else if (t.kind == "rod") {
        std::vector<Index> line(std::size_t(t.count));
        for (Index i = 0; i < t.count; ++i) line[i] = i;
        WriteData(g, "line", i32, {hsize_t(t.count)}, line.data(), path);
      } else {
        // the contact shape in the body frame: type as /static/type, size as /static/size
        const RigidBody& b = world.world->rigid_body(t.body);
        const Index shape = static_cast<Index>(b.shape);
        const Scalar size[3] = {b.size[0], b.size[1], b.size[2]};
        WriteData(g, "shape", i32, {1}, &shape, path);
        WriteData(g, "size", dbl, {3}, size, path);
      }
    }
    // the static shapes (for pictures): type (0 plane, 1 sphere, 2 box, 3 capsule), pose, size
    if (!scene.statics.empty()) {
      const hid_t st = MakeGroup(f.id, "static", path);
      f.groups.push_back(st);
      std::vector<Index> type;
      std::vector<Scalar> centre, quat, size;
      for (const StaticShape& sh : scene.statics) {
        type.push_back(static_cast<Index>(sh.type));
        centre.insert(centre.end(), {sh.center[0], sh.center[1], sh.center[2]});
        quat.insert(quat.end(), {sh.orientation.w, sh.orientation.x, sh.orientation.y, sh.orientation.z});
        size.insert(size.end(), {sh.size[0], sh.size[1], sh.size[2]});
      }
      const hsize_t ns = scene.statics.size();
      WriteData(st, "type", i32, {ns}, type.data(), path);
      WriteData(st, "center", dbl, {ns, 3}, centre.data(), path);
      WriteData(st, "quaternion", dbl, {ns, 4}, quat.data(), path);
      WriteData(st, "size", dbl, {ns, 3}, size.data(), path);
    }
    // the drives' targets per frame: /drives/<kind>/<name>/position, quaternion (pose, cable
    // end, gripper palm), width (gripper)
    if (extras_ && !drives_.empty()) {
      const hid_t dg = MakeGroup(f.id, "drives", path);
      f.groups.push_back(dg);
      std::map<std::string, hid_t> kinds;
      for (const DriveTrack& d : drives_) {
        if (!kinds.count(d.kind)) {
          kinds[d.kind] = MakeGroup(dg, d.kind, path);
          f.groups.push_back(kinds[d.kind]);
        }
        const hid_t g = MakeGroup(kinds[d.kind], d.group, path);
        f.groups.push_back(g);
        f.drive_position.emplace_back();
        f.drive_quaternion.emplace_back();
        f.drive_width.emplace_back();
        if (!d.trajectory.t.empty()) {
          f.drive_position.back() = Appendable(g, "position", dbl, {3}, path);
          f.drive_quaternion.back() = Appendable(g, "quaternion", dbl, {4}, path);
        }
        if (!d.width.t.empty()) f.drive_width.back() = Appendable(g, "width", dbl, {}, path);
      }
    }
    const hid_t contacts = MakeGroup(f.id, "contacts", path);
    f.groups.push_back(contacts);
    f.contact_offset = Appendable(contacts, "offset", H5T_NATIVE_INT64, {}, path);
    f.contact_position = Appendable(contacts, "position", dbl, {3}, path);
    f.contact_normal = Appendable(contacts, "normal", dbl, {3}, path);
    f.contact_impulse = Appendable(contacts, "impulse", dbl, {3}, path);
    f.contact_bodies = Appendable(contacts, "bodies", i32, {2}, path);
    const std::int64_t zero = 0;
    f.contact_offset.Append(1, &zero);
    const hid_t stats = MakeGroup(f.id, "stats", path);
    f.groups.push_back(stats);
    f.iterations = Appendable(stats, "iterations", i32, {}, path);
    f.contacts = Appendable(stats, "contacts", i32, {}, path);
    f.residual = Appendable(stats, "residual", dbl, {}, path);
    f.penetration = Appendable(stats, "max_penetration", dbl, {}, path);
    f.converged = Appendable(stats, "converged", i32, {}, path);
    f.max_speed = Appendable(stats, "max_speed", dbl, {}, path);
    f.kinetic_energy = Appendable(stats, "kinetic_energy", dbl, {}, path);
    // per body and step: kinetic energy [J], momentum [kg m/s], angular momentum about the
    // origin [kg m^2/s] at the step's end
    const hid_t body_stats = MakeGroup(stats, "bodies", path);
    f.groups.push_back(body_stats);
    for (const Track& t : tracks_) {
      const hid_t g = MakeGroup(body_stats, t.group, path);
      f.groups.push_back(g);
      f.energy.emplace_back(g, "kinetic_energy", dbl, std::vector<hsize_t>{}, path);
      f.momentum.emplace_back(g, "momentum", dbl, std::vector<hsize_t>{3}, path);
      f.angular.emplace_back(g, "angular_momentum", dbl, std::vector<hsize_t>{3}, path);
    }
  } catch (...) {
    file_.reset();
    std::filesystem::remove(tmp);
    throw;
  }
#else
  (void)world;
  throw Error(path + ": condsim was built without HDF5 (install libhdf5-dev and reconfigure); summary.json is still written");
#endif
}

Recorder::~Recorder() {
  if (finished_ || !file_) return;
  // an error while writing: no file that could pass for a result
  file_.reset();
  std::error_code ec;
  std::filesystem::remove(path_ + ".part", ec);
}

void Recorder::AddStats(const StepStats& s) {
  KeepStats(s.cond.iterations, s.contacts, s.cond.residual, s.max_penetration, s.cond.converged, s.health.max_speed,
            s.health.kinetic_energy, s.bodies);
}

void Recorder::AddStats(const StepStats& s, Index env) {
  // the fields EnvironmentStats(s, env) takes from s.envs[env] (models/world/world.h)
  const EnvStepStats& e = s.envs.at(std::size_t(env));
  KeepStats(e.iterations, e.contacts, e.residual, e.max_penetration, e.converged, e.health.max_speed, e.health.kinetic_energy, s.bodies);
}

void Recorder::KeepStats(int iterations, Index contacts, double residual, Scalar penetration, bool converged, Scalar max_speed,
                         Scalar kinetic_energy, const std::vector<BodyMomentum>& bodies) {
  iterations_.push_back(iterations);
  contacts_.push_back(contacts);
  residual_.push_back(Scalar(residual));
  penetration_.push_back(penetration);
  converged_.push_back(converged ? 1 : 0);
  max_speed_.push_back(max_speed);
  kinetic_energy_.push_back(kinetic_energy);
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    std::vector<Scalar>& row = body_rows_[k];
    const Index b = tracks_[k].body;
    if (b >= 0 && std::size_t(b) < bodies.size()) {
      const BodyMomentum& m = bodies[b];
      row.insert(row.end(), {m.kinetic_energy, m.linear[0], m.linear[1], m.linear[2], m.angular[0], m.angular[1], m.angular[2]});
    } else {
      row.insert(row.end(), 7, std::numeric_limits<Scalar>::quiet_NaN());  // not measured
    }
  }
}

#if CONDSIM_HAVE_HDF5
void Recorder::WriteStats() {
  File& f = *file_;
  f.iterations.Append(iterations_.size(), iterations_.data());
  f.contacts.Append(contacts_.size(), contacts_.data());
  f.residual.Append(residual_.size(), residual_.data());
  f.penetration.Append(penetration_.size(), penetration_.data());
  f.converged.Append(converged_.size(), converged_.data());
  f.max_speed.Append(max_speed_.size(), max_speed_.data());
  f.kinetic_energy.Append(kinetic_energy_.size(), kinetic_energy_.data());
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    std::vector<Scalar>& row = body_rows_[k];
    const std::size_t n = row.size() / 7;
    std::vector<Scalar> e(n), p(3 * n), l(3 * n);
    for (std::size_t i = 0; i < n; ++i) {
      e[i] = row[7 * i];
      for (int a = 0; a < 3; ++a) {
        p[3 * i + a] = row[7 * i + 1 + a];
        l[3 * i + a] = row[7 * i + 4 + a];
      }
    }
    f.energy[k].Append(n, e.data());
    f.momentum[k].Append(n, p.data());
    f.angular[k].Append(n, l.data());
    row.clear();
  }
  for (auto* v : {&iterations_, &contacts_, &converged_}) v->clear();
  for (auto* v : {&residual_, &penetration_, &max_speed_, &kinetic_energy_}) v->clear();
}

void Recorder::AddFrame(const SceneWorld& sw, const std::vector<Index>* contact_ids) {
  File& f = *file_;
  World& w = *sw.world;
  const Scalar t = w.time();
  f.time.Append(1, &t);
  time_.push_back(t);
  for (std::size_t k = 0, fem = 0, rod = 0; k < tracks_.size(); ++k) {
    const Track& tr = tracks_[k];
    if (tr.kind == "fem") {
      const Index id = sw.fem_ids[fem++];
      f.x[k].Append(1, w.FemPositions(id).data());
      f.v[k].Append(1, w.FemVelocities(id).data());
    } else if (tr.kind == "rod") {
      const Index id = sw.rod_ids[rod++];
      f.x[k].Append(1, w.RodPositions(id).data());
      f.v[k].Append(1, w.RodVelocities(id).data());
      f.q[k].Append(1, w.rod_model(id).orientations().ToHost().data());
    } else {
      const RigidBody& b = w.rigid_body(tr.body);
      const Scalar x[3] = {b.x[0], b.x[1], b.x[2]}, v[3] = {b.v[0], b.v[1], b.v[2]}, q[4] = {b.q.w, b.q.x, b.q.y, b.q.z};
      f.x[k].Append(1, x);
      f.v[k].Append(1, v);
      f.q[k].Append(1, q);
    }
  }
  std::vector<Scalar> position, normal, impulse;
  std::vector<Index> bodies;
  // this environment's contacts, body ids local to its scene (-1, the static world, stays)
  const auto local = [&](Index id) { return id >= 0 ? id - first_body_ : id; };
  const std::vector<ContactRecord>& all = w.contacts();
  const std::size_t count = contact_ids ? contact_ids->size() : all.size();
  for (std::size_t m = 0; m < count; ++m) {
    const ContactRecord& c = all[contact_ids ? std::size_t((*contact_ids)[m]) : m];
    if (c.env != env_) continue;
    position.insert(position.end(), {c.position[0], c.position[1], c.position[2]});
    normal.insert(normal.end(), {c.normal[0], c.normal[1], c.normal[2]});
    impulse.insert(impulse.end(), {c.lambda[0], c.lambda[1], c.lambda[2]});
    bodies.insert(bodies.end(), {local(c.body_i), local(c.body_j)});
  }
  if (extras_) WriteExtras(sw, contact_ids);
  const hsize_t nc = bodies.size() / 2;
  f.contact_position.Append(nc, position.data());
  f.contact_normal.Append(nc, normal.data());
  f.contact_impulse.Append(nc, impulse.data());
  f.contact_bodies.Append(nc, bodies.data());
  f.contact_rows += std::int64_t(nc);
  f.contact_offset.Append(1, &f.contact_rows);
  // the statistics so far, then a flush (HDF5's buffers to the system: a reader of the .part
  // file, or one after a crash, sees every frame so far)
  WriteStats();
  errno = 0;
  if (H5Fflush(f.id, H5F_SCOPE_GLOBAL) < 0) throw Error(path_ + ": cannot flush " + path_ + ".part (" + hdf5::Reason() + ")");
}

void Recorder::WriteExtras(const SceneWorld& sw, const std::vector<Index>* contact_ids) {
  File& f = *file_;
  World& w = *sw.world;
  // each body's contact wrench: World::BodyWrench's sums (torque about a rigid body's centre of
  // mass, about the origin otherwise) over this environment's contacts
  std::vector<Wrench> wrench(tracks_.size());
  std::vector<Vec3> ref(tracks_.size());
  std::map<Index, std::size_t> track_of;
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    track_of[tracks_[k].body] = k;
    if (tracks_[k].kind == "rigid") ref[k] = w.rigid_body(tracks_[k].body).x;
  }
  const std::vector<ContactRecord>& all = w.contacts();
  const std::size_t count = contact_ids ? contact_ids->size() : all.size();
  for (std::size_t m = 0; m < count; ++m) {
    const ContactRecord& c = all[contact_ids ? std::size_t((*contact_ids)[m]) : m];
    if (c.env != env_) continue;
    for (const Index b : {c.body_i, c.body_j}) {
      const auto k = track_of.find(b);
      if (b < 0 || k == track_of.end() || (b == c.body_j && b == c.body_i)) continue;  // a self-contact once
      AddContactWrench(c, b, ref[k->second], &wrench[k->second]);
    }
  }
  for (std::size_t k = 0; k < tracks_.size(); ++k) {
    const Vec3 &fw = wrench[k].force, &tw = wrench[k].torque;
    const Scalar fv[3] = {fw[0], fw[1], fw[2]}, tv[3] = {tw[0], tw[1], tw[2]};
    f.contact_force[k].Append(1, fv);
    f.contact_torque[k].Append(1, tv);
  }
  // the drives' targets at the frame's time (their trajectories sampled as ApplyControls does)
  const Scalar t = w.time();
  for (std::size_t k = 0; k < drives_.size(); ++k) {
    const DriveTrack& d = drives_[k];
    if (!d.trajectory.t.empty()) {
      Vec3 p, v, om;
      Quat q;
      d.trajectory.Sample(t, &p, &q, &v, &om);
      if (d.kind == "rod_end") {
        p = p + ToMatrix(q) * d.offset;
        q = Normalized(q * d.rotation);
      }
      const Scalar pv[3] = {p[0], p[1], p[2]}, qv[4] = {q.w, q.x, q.y, q.z};
      f.drive_position[k].Append(1, pv);
      f.drive_quaternion[k].Append(1, qv);
    }
    if (!d.width.t.empty()) {
      Vec3 width, rate, unused;
      Quat q;
      d.width.Sample(t, &width, &q, &rate, &unused);
      const Scalar wv = width[0];
      f.drive_width[k].Append(1, &wv);
    }
  }
}

void Recorder::Finish(const std::string& status, const std::string& failure) {
  CONDSIM_CHECK(file_ != nullptr, path_ << ": the output file is already closed");
  File& f = *file_;
  WriteStats();
  WriteStringAttr(f.id, "status", status, path_);
  if (!failure.empty()) WriteStringAttr(f.id, "failure", failure, path_);
  const hid_t id = f.id;
  f.id = -1;
  for (hid_t g : f.groups) H5Gclose(g);
  f.groups.clear();
  f.x.clear();
  f.v.clear();
  f.q.clear();
  f.contact_force.clear();
  f.contact_torque.clear();
  f.drive_position.clear();
  f.drive_quaternion.clear();
  f.drive_width.clear();
  f.energy.clear();
  f.momentum.clear();
  f.angular.clear();
  file_.reset();  // closes the datasets
  errno = 0;
  if (H5Fclose(id) < 0) {
    std::filesystem::remove(path_ + ".part");
    throw Error(path_ + ": cannot close " + path_ + ".part (" + hdf5::Reason() + ")");
  }
  std::error_code ec;
  std::filesystem::rename(path_ + ".part", path_, ec);
  if (ec) throw Error(path_ + ": cannot rename " + path_ + ".part (" + ec.message() + ")");
  finished_ = true;
  WriteSidecar();
}
#else
void Recorder::WriteStats() {}
void Recorder::AddFrame(const SceneWorld&, const std::vector<Index>*) {}
void Recorder::WriteExtras(const SceneWorld&, const std::vector<Index>*) {}
void Recorder::Finish(const std::string&, const std::string&) {}
#endif

void Recorder::WriteSidecar() const {
  // a temporal collection of one spatial collection per frame, a uniform grid per body. A frame's
  // geometry selects it from the [frames, count, 3] dataset with the Xdmf3 form
  // file:/dataset|start:stride:count:dims (ParaView's default .xmf reader does not read
  // HyperSlab items), and point bodies list their one point id (no implicit cells)
  const std::string h5 = EscapeXml(std::filesystem::path(path_).filename().string());
  const std::size_t frames = time_.size();
  std::ostringstream x;
  x.precision(12);
  x << "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n<Domain>\n<Grid Name=\"" << EscapeXml(scene_name_)
    << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (std::size_t f = 0; f < frames; ++f) {
    x << "<Grid Name=\"frame " << f << "\" GridType=\"Collection\" CollectionType=\"Spatial\">\n<Time Value=\"" << time_[f]
      << "\"/>\n";
    for (const Track& t : tracks_) {
      const std::string g = h5 + ":/bodies/" + EscapeXml(t.group);
      x << "<Grid Name=\"" << EscapeXml(t.name) << "\" GridType=\"Uniform\">\n";
      if (t.kind == "fem") {
        x << "<Topology TopologyType=\"Tetrahedron\" NumberOfElements=\"" << t.cells << "\">\n<DataItem Dimensions=\"" << t.cells
          << " 4\" NumberType=\"Int\" Precision=\"4\" Format=\"HDF\">" << g << "/tets</DataItem>\n</Topology>\n";
      } else if (t.kind == "rod") {
        x << "<Topology TopologyType=\"Polyline\" NodesPerElement=\"" << t.count << "\" NumberOfElements=\"1\">\n<DataItem Dimensions=\""
          << t.count << "\" NumberType=\"Int\" Precision=\"4\" Format=\"HDF\">" << g << "/line</DataItem>\n</Topology>\n";
      } else {
        x << "<Topology TopologyType=\"Polyvertex\" NodesPerElement=\"1\" NumberOfElements=\"1\">\n<DataItem Dimensions=\"1\" "
             "NumberType=\"Int\" Precision=\"4\" Format=\"XML\">0</DataItem>\n</Topology>\n";
      }
      x << "<Geometry GeometryType=\"XYZ\">\n<DataItem Dimensions=\"" << t.count << " 3\" NumberType=\"Float\" Precision=\"" << sizeof(Scalar) << "\" "
        << "Format=\"HDF\">" << g << "/x|" << f << " 0 0:1 1 1:1 " << t.count << " 3:" << frames << " " << t.count
        << " 3</DataItem>\n</Geometry>\n</Grid>\n";
    }
    x << "</Grid>\n";
  }
  x << "</Grid>\n</Domain>\n</Xdmf>\n";
  std::filesystem::path xmf(path_);
  xmf.replace_extension(".xmf");
  WriteTextAtomically(xmf.string(), x.str());
}

}  // namespace condsim
