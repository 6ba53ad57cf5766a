// The scene file's items (world, solver, static shapes, rigid and FEM bodies, joints, trajectories,
// cables, drives, grippers), each parsed with the JSON pointer of every value in its errors.
#include "io/scene_items.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "io/mesh_io.h"
#include "models/fem/tet_mesh.h"

namespace condsim {
namespace scene_json {

void ParseWorld(const Value& v, WorldParams* w) {
  v.Object({"dt", "gravity", "kv", "contact_margin", "inelastic", "warm_start", "contact_reserve", "health"});
  w->dt = v.Number("dt", w->dt, 0, 1, true);
  w->gravity = v.Vector("gravity", w->gravity);
  w->kv = v.Number("kv", w->kv, 0, kInf, true);
  w->contact_margin = v.Number("contact_margin", w->contact_margin, 0, kInf);
  w->inelastic = v.Bool("inelastic", w->inelastic);
  w->warm_start = v.Bool("warm_start", w->warm_start);
  if (v.Has("contact_reserve")) w->contact_reserve = int(v.At("contact_reserve").Integer(0, 64));
  if (v.Has("health")) {
    const Value h = v.At("health");
    h.Object({"max_speed", "max_distance", "max_energy_growth"});
    w->health.max_speed = h.Number("max_speed", w->health.max_speed, 0, kInf, true);
    w->health.max_distance = h.Number("max_distance", w->health.max_distance, 0, kInf, true);
    w->health.max_energy_growth = h.Number("max_energy_growth", w->health.max_energy_growth, 1, kInf, true);
  }
}

void ParseSolver(const Value& v, CondParams* c) {
  v.Object({"theta_threshold", "max_iterations", "projection", "step_size", "chebyshev", "chebyshev_start", "chebyshev_relax", "chebyshev_safeguard",
            "w_reuse_solves", "w_safeguard", "body_modes", "body_mode_patches", "body_mode_patch_nodes", "body_mode_dense_patches", "body_mode_refresh", "rigid_sweeps", "stop_rule",
            "momentum_factor", "free_body_modes", "truncated_modes", "chain_gauss_seidel", "check_every"});
  c->theta_threshold = v.Number("theta_threshold", c->theta_threshold, 0, kInf, true);
  if (v.Has("max_iterations")) c->max_iterations = int(v.At("max_iterations").Integer(1, 100000000));
  if (v.Has("check_every")) c->check_every = int(v.At("check_every").Integer(1, 100000000));
  if (v.Has("projection")) c->projection = Checked(v.At("projection"), [&] { return ParseProjection(v.At("projection").String()); });
  if (v.Has("step_size")) c->step_size = Checked(v.At("step_size"), [&] { return ParseStepSize(v.At("step_size").String()); });
  c->chebyshev = v.Bool("chebyshev", c->chebyshev);
  if (v.Has("chebyshev_start")) c->chebyshev_start = int(v.At("chebyshev_start").Integer(2, 1000000));
  c->chebyshev_relax = v.Number("chebyshev_relax", c->chebyshev_relax, 0, 1, true);
  if (v.Has("chebyshev_safeguard"))
    c->chebyshev_safeguard = Checked(v.At("chebyshev_safeguard"), [&] { return ParseChebyshevSafeguard(v.At("chebyshev_safeguard").String()); });
  if (v.Has("w_reuse_solves")) c->w_reuse_solves = int(v.At("w_reuse_solves").Integer(1, 1000000));
  c->w_safeguard = v.Number("w_safeguard", c->w_safeguard, 0, 2, false, true);
  c->body_modes = v.Bool("body_modes", c->body_modes);
  if (v.Has("body_mode_patches")) c->body_mode_patches = int(v.At("body_mode_patches").Integer(1, kMaxBodyModePatches));
  if (v.Has("body_mode_patch_nodes")) c->body_mode_patch_nodes = int(v.At("body_mode_patch_nodes").Integer(0, 100000000));
  if (v.Has("body_mode_dense_patches")) c->body_mode_dense_patches = int(v.At("body_mode_dense_patches").Integer(0, kMaxDenseBodyModePatches));
  if (v.Has("body_mode_refresh")) c->body_mode_refresh = int(v.At("body_mode_refresh").Integer(1, 1000000));
  if (v.Has("rigid_sweeps")) c->rigid_sweeps = int(v.At("rigid_sweeps").Integer(0, 100));
  if (v.Has("stop_rule")) c->stop_rule = Checked(v.At("stop_rule"), [&] { return ParseStopRule(v.At("stop_rule").String()); });
  c->momentum_factor = v.Number("momentum_factor", c->momentum_factor, 1, kInf);
  c->free_body_modes = v.Bool("free_body_modes", c->free_body_modes);
  c->truncated_modes = v.Bool("truncated_modes", c->truncated_modes);
  c->chain_gauss_seidel = v.Bool("chain_gauss_seidel", c->chain_gauss_seidel);
}

// friction: a number, or [mu1, mu2] (anisotropic: along the shape's local x, y)
void ParseMu(const Value& v, Scalar* mu1, Scalar* mu2) {
  if (v.json().is_array()) {
    if (v.Array() != 2) v.Fail("expected a number or an array of 2 numbers (mu1, mu2)");
    *mu1 = v.At(0).Number(0, kInf);
    *mu2 = v.At(1).Number(0, kInf);
  } else {
    *mu1 = *mu2 = v.Number(0, kInf);
  }
}

ShapeType ParseShapeType(const Value& v, bool rigid) {
  const std::string t = v.String();
  if (t == "plane" && !rigid) return ShapeType::kPlane;
  if (t == "sphere") return ShapeType::kSphere;
  if (t == "box") return ShapeType::kBox;
  if (t == "capsule") return ShapeType::kCapsule;
  if (t == "mesh" && rigid) return ShapeType::kMesh;
  v.Fail("'" + t + "' is not a shape (valid: " + std::string(rigid ? "box, sphere, capsule, mesh" : "plane, box, sphere, capsule") + ")");
}

// a box's "half_extents": three lengths > 0 [m]
Vec3 HalfExtents(const Value& v) {
  const Vec3 h = v.At("half_extents").Vector();
  for (int a = 0; a < 3; ++a)
    if (!(h[a] > 0)) v.At("half_extents").Fail("half extents must be > 0 [m]");
  return h;
}

// a waypoint's "t" [s]: >= 0 and after the trajectory's last sample
double WaypointTime(const Value& w, const SceneTrajectory& tr) {
  const double t = w.At("t").Number(0, kInf);
  if (!tr.t.empty() && !(t > tr.t.back())) w.At("t").Fail("waypoint times must increase");
  return t;
}

// the elastic fields FEM and rod materials share (defaults: the material's own)
template <class Material>
void ParseElastic(const Value& m, Material* x) {
  x->young = m.Number("young", x->young, 0, kInf, true);
  x->poisson = m.Number("poisson", x->poisson, -1, 0.5, true, true);
  x->density = m.Number("density", x->density, 0, kInf, true);
  x->rayleigh_alpha = m.Number("rayleigh_alpha", x->rayleigh_alpha, 0, kInf);
  x->rayleigh_beta = m.Number("rayleigh_beta", x->rayleigh_beta, 0, kInf);
  x->geometric_stiffness = m.Bool("geometric_stiffness", x->geometric_stiffness);
}

StaticShape ParseStatic(const Value& v) {
  v.Object({"type", "center", "rotation", "quaternion", "radius", "half_extents", "half_length", "mu"});
  StaticShape s;
  s.type = ParseShapeType(v.At("type"), false);
  s.center = v.Vector("center", Vec3());
  s.orientation = v.Orientation();
  if (s.type == ShapeType::kSphere || s.type == ShapeType::kCapsule) s.size[0] = v.At("radius").Number(0, kInf, true);
  if (s.type == ShapeType::kCapsule) s.size[1] = v.At("half_length").Number(0, kInf);
  if (s.type == ShapeType::kBox) s.size = HalfExtents(v);
  if (v.Has("mu")) ParseMu(v.At("mu"), &s.mu1, &s.mu2);
  return s;
}

SceneRigid ParseRigid(const Value& v, const std::string& dir, std::size_t index) {
  v.Object({"name", "shape", "half_extents", "radius", "half_length", "file", "mass", "position", "rotation", "quaternion",
            "velocity", "angular_velocity", "mu", "force", "torque"});
  SceneRigid r;
  r.name = v.String("name", "rigid " + std::to_string(index));
  const ShapeType type = ParseShapeType(v.At("shape"), true);
  const Scalar mass = v.At("mass").Number(0, kInf, true);
  switch (type) {
    case ShapeType::kBox:
      r.body = MakeRigidBox(HalfExtents(v), mass);
      break;
    case ShapeType::kSphere:
      r.body = MakeRigidSphere(v.At("radius").Number(0, kInf, true), mass);
      break;
    case ShapeType::kCapsule:
      r.body = MakeRigidCapsule(v.At("radius").Number(0, kInf, true), v.At("half_length").Number(0, kInf), mass);
      break;
    case ShapeType::kMesh: {
      // a closed surface in world coordinates at its initial pose
      const Value f = v.At("file");
      const SurfaceMesh m = Checked(f, [&] { return ReadSurface(Join(dir, f.String())); });
      r.body = Checked(f, [&] { return MakeRigidMesh(std::vector<Scalar>(m.x.begin(), m.x.end()), m.triangles, mass, f.String()); });
      if (v.Has("position") || v.Has("rotation") || v.Has("quaternion"))
        v.Fail("a mesh body is placed by its file's coordinates (no position or rotation)");
      break;
    }
    case ShapeType::kPlane:
      break;
  }
  if (type != ShapeType::kMesh) {
    r.body.x = v.At("position").Vector();
    r.body.q = v.Orientation();
  }
  r.body.v = v.Vector("velocity", Vec3());
  r.body.omega = v.Vector("angular_velocity", Vec3());
  if (v.Has("mu")) ParseMu(v.At("mu"), &r.body.mu1, &r.body.mu2);
  r.force = v.Vector("force", Vec3());
  r.torque = v.Vector("torque", Vec3());
  Checked(v, [&] {
    r.body.Validate(r.name);
    return 0;
  });
  return r;
}

TetMesh ParseMesh(const Value& v, const std::string& dir) {
  v.Object({"generator", "file", "origin", "size", "cells", "center", "radius", "element_size"});
  if (v.Has("file")) {
    if (v.Has("generator")) v.Fail("give either file or generator, not both");
    const Value f = v.At("file");
    return Checked(f, [&] { return ReadTetMesh(Join(dir, f.String())).mesh; });
  }
  const Value g = v.At("generator");
  const std::string kind = g.String();
  if (kind == "box") {
    const Vec3 size = v.At("size").Vector();
    for (int a = 0; a < 3; ++a)
      if (!(size[a] > 0)) v.At("size").Fail("sizes must be > 0 [m]");
    const Value cells = v.At("cells");
    if (cells.Array() != 3) cells.Fail("expected 3 cell counts");
    return MakeBoxMesh(v.Vector("origin", Vec3()), size, Index(cells.At(0).Integer(1, 1000)), Index(cells.At(1).Integer(1, 1000)),
                       Index(cells.At(2).Integer(1, 1000)));
  }
  if (kind == "sphere") {
    const Scalar radius = v.At("radius").Number(0, kInf, true);
    return MakeSphereMesh(v.Vector("center", Vec3()), radius, v.At("element_size").Number(0, radius, true));
  }
  g.Fail("'" + kind + "' is not a mesh generator (valid: box, sphere)");
}

// the nodes of a mesh inside a box [[x0, y0, z0], [x1, y1, z1]] (at least one)
std::vector<Index> BoxNodes(const Value& box, const TetMesh& mesh) {
  if (box.Array() != 2) box.Fail("expected two corners [[x0, y0, z0], [x1, y1, z1]]");
  const Vec3 lo = box.At(0).Vector(), hi = box.At(1).Vector();
  std::vector<Index> nodes;
  for (Index i = 0; i < mesh.num_nodes(); ++i) {
    const Vec3 p = mesh.Node(i);
    if (p[0] >= lo[0] && p[0] <= hi[0] && p[1] >= lo[1] && p[1] <= hi[1] && p[2] >= lo[2] && p[2] <= hi[2]) nodes.push_back(i);
  }
  if (nodes.empty()) box.Fail("the box holds no node of the mesh");
  return nodes;
}

// a list of indices in [0, n) (`what`: "node", "segment"), at least one
std::vector<Index> IndexList(const Value& list, Index n, const std::string& what) {
  std::vector<Index> out;
  for (std::size_t i = 0, m = list.Array(); i < m; ++i) out.push_back(Index(list.At(i).Integer(0, n - 1)));
  if (out.empty()) list.Fail("needs at least one " + what);
  return out;
}

SceneFem ParseFem(const Value& v, const std::string& dir, std::size_t index) {
  v.Object({"name", "mesh", "material", "mu", "self_contact", "velocity", "angular_velocity", "force", "node_forces", "handle"});
  SceneFem f;
  f.name = v.String("name", "fem " + std::to_string(index));
  f.mesh = ParseMesh(v.At("mesh"), dir);
  const Value m = v.At("material");
  m.Object({"young", "poisson", "density", "rayleigh_alpha", "rayleigh_beta", "geometric_stiffness"});
  ParseElastic(m, &f.material);
  f.mu = v.Number("mu", 0.5, 0, kInf);
  f.self_contact = v.Bool("self_contact", true);
  f.velocity = v.Vector("velocity", Vec3());
  f.angular_velocity = v.Vector("angular_velocity", Vec3());
  const std::vector<std::string> problems = ValidateMesh(f.mesh, f.name);
  if (!problems.empty()) v.At("mesh").Fail(problems.front());
  // external loads: a total force [N] spread by mass; forces [N] on each node of a set (node
  // indices, or the nodes in a box like a handle's)
  f.force = v.Vector("force", Vec3());
  ForEach(v, "node_forces", [&](const Value& item, std::size_t) {
    item.Object({"nodes", "box", "force"});
    SceneNodeForce nf;
    if (item.Has("nodes") == item.Has("box")) item.Fail("give either nodes (indices) or box, not both");
    nf.nodes = item.Has("nodes") ? IndexList(item.At("nodes"), f.mesh.num_nodes(), "node") : BoxNodes(item.At("box"), f.mesh);
    nf.force = item.At("force").Vector();
    f.node_forces.push_back(std::move(nf));
  });
  // a handle: {"box": [[x0, y0, z0], [x1, y1, z1]], "trajectory": {...}}
  if (v.Has("handle")) {
    const Value h = v.At("handle");
    h.Object({"box", "trajectory"});
    f.handle_nodes = BoxNodes(h.At("box"), f.mesh);
    f.handle_trajectory = ParseTrajectory(h.At("trajectory"), dir);
  }
  return f;
}

SceneJoint ParseJoint(const Value& v, const std::map<std::string, Index>& rigid_names) {
  v.Object({"type", "body", "base", "anchor", "axis", "k_lin", "k_ang", "damping", "drive"});
  SceneJoint j;
  const std::string type = v.At("type").String();
  if (type == "fixed") {
    j.joint.type = JointType::kFixed;
  } else if (type == "prismatic") {
    j.joint.type = JointType::kPrismatic;
  } else if (type == "revolute") {
    j.joint.type = JointType::kRevolute;
  } else {
    v.At("type").Fail("'" + type + "' is not a joint type (valid: fixed, prismatic, revolute)");
  }
  j.joint.body_i = Lookup(v.At("body"), rigid_names, "rigid body");
  j.joint.body_j = v.Has("base") ? Lookup(v.At("base"), rigid_names, "rigid body") : -1;
  if (j.joint.body_i == j.joint.body_j) v.At("base").Fail("a joint needs two different bodies");
  j.joint.anchor = v.At("anchor").Vector();
  j.joint.axis = v.Vector("axis", Vec3(0, 0, 1));
  if (!(Norm(j.joint.axis) > 0)) v.At("axis").Fail("the axis must be nonzero");
  j.joint.k_lin = v.Number("k_lin", 0, 0, kInf);
  j.joint.k_ang = v.Number("k_ang", 0, 0, kInf);
  j.joint.damping = v.Number("damping", 1, 0, kInf);
  if (v.Has("drive")) {
    const Value d = v.At("drive");
    d.Object({"k", "d", "target", "target_rate", "force"});
    if (j.joint.type == JointType::kFixed) d.Fail("a fixed joint has no coordinate to drive");
    j.driven = true;
    j.drive.k = d.Number("k", 0, 0, kInf);
    j.drive.d = d.Number("d", 0, 0, kInf);
    j.drive.target = d.Number("target", 0);
    j.drive.target_rate = d.Number("target_rate", 0);
    j.drive.force = d.Number("force", 0);
  }
  return j;
}

namespace {

// the numbers of a file as long as its size and modification time stay the same
struct NumberFile {
  std::string path;
  std::uintmax_t size;
  std::filesystem::file_time_type time;
  std::vector<double> numbers;
};
constexpr std::size_t kNumberFilesKept = 16;

}  // namespace

// numbers from a text file, whitespace separated (trajectory samples). The last files read are
// kept, so a batch that loads its scene once per episode reads each file once
std::vector<double> ReadNumbers(const Value& v, const std::string& path) {
  static std::mutex lock;
  static std::deque<NumberFile> kept;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  const std::filesystem::file_time_type time = ec ? std::filesystem::file_time_type() : std::filesystem::last_write_time(path, ec);
  if (!ec) {
    const std::lock_guard<std::mutex> hold(lock);
    for (const NumberFile& f : kept)
      if (f.path == path && f.size == size && f.time == time) return f.numbers;
  }
  std::ifstream in(path);
  if (!in) v.Fail("cannot open '" + path + "'");
  std::vector<double> out;
  std::string tok;
  while (in >> tok) {
    char* end = nullptr;
    const double x = std::strtod(tok.c_str(), &end);
    if (end == tok.c_str() || *end != '\0' || !std::isfinite(x))
      v.Fail("'" + path + "': value " + std::to_string(out.size()) + " ('" + tok + "') is not a finite number");
    out.push_back(x);
  }
  if (!ec) {
    const std::lock_guard<std::mutex> hold(lock);
    kept.push_back({path, size, time, out});
    if (kept.size() > kNumberFilesKept) kept.pop_front();
  }
  return out;
}

SceneTrajectory ParseTrajectory(const Value& v, const std::string& dir) {
  v.Object({"positions_file", "rotations_file", "dt", "offset", "waypoints"});
  SceneTrajectory tr;
  if (v.Has("waypoints")) {
    if (v.Has("positions_file")) v.Fail("give either waypoints or positions_file, not both");
    const Value list = v.At("waypoints");
    for (std::size_t i = 0, n = list.Array(); i < n; ++i) {
      const Value w = list.At(i);
      w.Object({"t", "position", "rotation", "quaternion"});
      tr.t.push_back(WaypointTime(w, tr));
      tr.p.push_back(w.At("position").Vector());
      tr.q.push_back(w.Orientation());
    }
    if (tr.t.empty()) list.Fail("needs at least one waypoint");
  } else {
    // samples every dt: x y z per position; 9 numbers (row-major rotation matrix) per rotation
    const double dt = v.At("dt").Number(0, kInf, true);
    const Value pf = v.At("positions_file");
    const std::vector<double> p = ReadNumbers(pf, Join(dir, pf.String()));
    if (p.empty() || p.size() % 3 != 0) pf.Fail("needs 3 numbers per position, got " + std::to_string(p.size()));
    const Vec3 offset = v.Vector("offset", Vec3());
    std::vector<double> r;
    if (v.Has("rotations_file")) {
      const Value rf = v.At("rotations_file");
      r = ReadNumbers(rf, Join(dir, rf.String()));
      if (r.size() != 3 * p.size()) rf.Fail("needs 9 numbers per position (" + std::to_string(p.size() / 3) + " positions)");
    }
    for (std::size_t k = 0; k < p.size() / 3; ++k) {
      tr.t.push_back(dt * double(k));
      tr.p.push_back(Vec3(p[3 * k], p[3 * k + 1], p[3 * k + 2]) + offset);
      if (r.empty()) {
        tr.q.push_back(Quat());
      } else {
        const double* m = r.data() + 9 * k;
        const Mat3 rot(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]);
        if (FrobeniusNorm(rot * Transpose(rot) - Mat3::Identity()) > 1e-3 || Determinant(rot) < 0)
          v.At("rotations_file").Fail("rotation " + std::to_string(k) + " is not a rotation matrix");
        tr.q.push_back(FromMatrix(rot));
      }
    }
  }
  return tr;
}

RodMaterial ParseRodMaterial(const Value& m) {
  m.Object({"radius", "young", "poisson", "density", "rayleigh_alpha", "rayleigh_beta", "geometric_stiffness",
            "geometric_stiffness_scale"});
  RodMaterial r;
  r.radius = m.Number("radius", r.radius, 0, kInf, true);
  ParseElastic(m, &r);
  r.geometric_stiffness_scale = m.Number("geometric_stiffness_scale", r.geometric_stiffness_scale, 0, kInf, true);
  return r;
}

RodEnd ParseRodEnd(const Value& v) {
  v.Object({"attached", "stiffness_scale"});
  RodEnd e;
  e.attached = v.Bool("attached", false);
  e.stiffness_scale = v.Number("stiffness_scale", 1, 0, kInf, true);
  return e;
}

SceneRod ParseRod(const Value& v, std::size_t index) {
  v.Object({"name", "points", "segments", "material", "start", "finish", "mu", "self_contact", "velocity", "angular_velocity", "force",
            "segment_forces"});
  SceneRod r;
  r.name = v.String("name", "rod " + std::to_string(index));
  const Value pts = v.At("points");
  std::vector<Vec3> points;
  for (std::size_t i = 0, n = pts.Array(); i < n; ++i) points.push_back(pts.At(i).Vector());
  if (points.size() < 2) pts.Fail("a cable needs at least 2 points");
  const Index segments = Index(v.At("segments").Integer(2, 10000000));
  r.geometry = Checked(pts, [&] { return MakePolylineRod(points, segments); });
  r.material = v.Has("material") ? ParseRodMaterial(v.At("material")) : RodMaterial();
  if (v.Has("start")) r.start = ParseRodEnd(v.At("start"));
  if (v.Has("finish")) r.finish = ParseRodEnd(v.At("finish"));
  r.mu = v.Number("mu", 0.5, 0, kInf);
  r.self_contact = v.Bool("self_contact", true);
  r.velocity = v.Vector("velocity", Vec3());
  r.angular_velocity = v.Vector("angular_velocity", Vec3());
  // external loads: a total force [N] spread equally over the segments; force [N] and torque
  // [N m] on each segment of a set
  r.force = v.Vector("force", Vec3());
  ForEach(v, "segment_forces", [&](const Value& item, std::size_t) {
    item.Object({"segments", "force", "torque"});
    SceneNodeForce sf;
    sf.nodes = IndexList(item.At("segments"), segments, "segment");
    if (!item.Has("force") && !item.Has("torque")) item.Fail("give a force, a torque or both");
    sf.force = item.Vector("force", Vec3());
    sf.torque = item.Vector("torque", Vec3());
    r.segment_forces.push_back(std::move(sf));
  });
  return r;
}

// a pose drive's gains and trajectory (the caller checks the object's keys)
ScenePoseDrive ParsePoseDrive(const Value& d, const std::string& dir) {
  ScenePoseDrive drive;
  drive.gains.k_lin = d.Number("k_lin", 0, 0, kInf);
  drive.gains.d_lin = d.Number("d_lin", 0, 0, kInf);
  drive.gains.k_ang = d.Number("k_ang", 0, 0, kInf);
  drive.gains.d_ang = d.Number("d_ang", 0, 0, kInf);
  drive.trajectory = ParseTrajectory(d.At("trajectory"), dir);
  return drive;
}

SceneGripper ParseGripper(const Value& v, const std::string& dir, std::size_t index) {
  v.Object({"name", "position", "rotation", "quaternion", "palm_half", "finger_half", "palm_mass", "finger_mass", "opening", "mu",
            "drive_k", "drive_d", "width", "palm_drive"});
  SceneGripper g;
  g.name = v.String("name", "gripper " + std::to_string(index));
  GripperParams& p = g.params;
  p.position = v.At("position").Vector();
  p.orientation = v.Orientation();
  p.palm_half = v.Vector("palm_half", p.palm_half);
  p.finger_half = v.Vector("finger_half", p.finger_half);
  p.palm_mass = v.Number("palm_mass", p.palm_mass, 0, kInf, true);
  p.finger_mass = v.Number("finger_mass", p.finger_mass, 0, kInf, true);
  p.opening = v.Number("opening", p.opening, 0, kInf, true);
  p.mu = v.Number("mu", p.mu, 0, kInf);
  p.drive_k = v.Number("drive_k", p.drive_k, 0, kInf);
  p.drive_d = v.Number("drive_d", p.drive_d, 0, kInf);
  Checked(v, [&] {
    p.Validate();
    return 0;
  });
  // width waypoints: [{"t": 0, "width": 0.09}, ...]; without them the gripper stays open
  ForEach(v, "width", [&](const Value& w, std::size_t) {
    w.Object({"t", "width"});
    g.width.t.push_back(WaypointTime(w, g.width));
    g.width.p.push_back(Vec3(w.At("width").Number(0, kInf), 0, 0));
    g.width.q.push_back(Quat());
  });
  if (v.Has("palm_drive")) {
    const Value d = v.At("palm_drive");
    d.Object({"k_lin", "d_lin", "k_ang", "d_ang", "trajectory"});
    g.palm_driven = true;
    g.palm = ParsePoseDrive(d, dir);
  }
  return g;
}

}  // namespace scene_json
}  // namespace condsim
