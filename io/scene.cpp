// Scene files: JSON parsing with path-naming validation, and the world they build.
#include "io/scene.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "condsim/error.h"
#include "models/fem/tet_mesh.h"

namespace condsim {
namespace {

using Json = nlohmann::json;
constexpr double kInf = std::numeric_limits<double>::infinity();

// a JSON value with its pointer, for messages naming the file and the path
class Value {
 public:
  Value(const Json& j, std::string path, const std::string& source) : j_(j), path_(std::move(path)), source_(source) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(source_ + ": " + (path_.empty() ? "/" : path_) + ": " + what);
  }
  const std::string& path() const { return path_; }
  const Json& json() const { return j_; }
  bool Has(const std::string& key) const { return j_.contains(key); }
  Value At(const std::string& key) const {
    if (!j_.contains(key)) Value(j_, path_ + "/" + key, source_).Fail("missing (required)");
    return Value(j_.at(key), path_ + "/" + key, source_);
  }
  Value At(std::size_t i) const { return Value(j_.at(i), path_ + "/" + std::to_string(i), source_); }
  // an object whose keys must be among `allowed`
  void Object(const std::set<std::string>& allowed) const {
    if (!j_.is_object()) Fail("expected an object, got " + std::string(j_.type_name()));
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!allowed.count(it.key())) {
        std::string valid;
        for (const auto& k : allowed) valid += (valid.empty() ? "" : ", ") + k;
        Value(it.value(), path_ + "/" + it.key(), source_).Fail("unknown key (valid: " + valid + ")");
      }
  }
  std::size_t Array() const {
    if (!j_.is_array()) Fail("expected an array, got " + std::string(j_.type_name()));
    return j_.size();
  }
  double Number(double lo = -kInf, double hi = kInf, bool open_lo = false, bool open_hi = false) const {
    if (!j_.is_number()) Fail("expected a number, got " + std::string(j_.type_name()));
    const double v = j_.get<double>();
    const bool bad = !std::isfinite(v) || (open_lo ? v <= lo : v < lo) || (open_hi ? v >= hi : v > hi);
    if (bad) {
      std::ostringstream os;
      os << v << " is outside " << (open_lo ? "(" : "[") << lo << ", " << hi << (open_hi ? ")" : "]");
      Fail(os.str());
    }
    return v;
  }
  long long Integer(long long lo, long long hi) const {
    if (!j_.is_number_integer()) Fail("expected an integer, got " + std::string(j_.type_name()));
    const long long v = j_.get<long long>();
    if (v < lo || v > hi) Fail(std::to_string(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  bool Bool() const {
    if (!j_.is_boolean()) Fail("expected true or false, got " + std::string(j_.type_name()));
    return j_.get<bool>();
  }
  std::string String() const {
    if (!j_.is_string()) Fail("expected a string, got " + std::string(j_.type_name()));
    return j_.get<std::string>();
  }
  Vec3 Vector() const {
    if (!j_.is_array() || j_.size() != 3) Fail("expected an array of 3 numbers");
    return Vec3(At(0).Number(), At(1).Number(), At(2).Number());
  }
  // optional members with defaults
  double Number(const std::string& key, double fallback, double lo = -kInf, double hi = kInf, bool open_lo = false,
                bool open_hi = false) const {
    return Has(key) ? At(key).Number(lo, hi, open_lo, open_hi) : fallback;
  }
  Vec3 Vector(const std::string& key, const Vec3& fallback) const { return Has(key) ? At(key).Vector() : fallback; }
  bool Bool(const std::string& key, bool fallback) const { return Has(key) ? At(key).Bool() : fallback; }
  std::string String(const std::string& key, const std::string& fallback) const {
    return Has(key) ? At(key).String() : fallback;
  }
  // orientation: "rotation" (rotation vector [rad]) or "quaternion" (w, x, y, z; normalized)
  Quat Orientation() const {
    if (Has("rotation") && Has("quaternion")) Fail("give either rotation or quaternion, not both");
    if (Has("rotation")) return FromRotationVector(At("rotation").Vector());
    if (Has("quaternion")) {
      const Value q = At("quaternion");
      if (!q.json().is_array() || q.json().size() != 4) q.Fail("expected an array of 4 numbers (w, x, y, z)");
      const Quat r(q.At(0).Number(), q.At(1).Number(), q.At(2).Number(), q.At(3).Number());
      if (!(Norm(r) > 1e-12)) q.Fail("a zero quaternion is no rotation");
      return Normalized(r);
    }
    return Quat();
  }

 private:
  const Json& j_;
  std::string path_;
  const std::string& source_;
};

std::string Join(const std::string& dir, const std::string& file) {
  if (file.empty() || file[0] == '/' || dir.empty()) return file;
  return dir + "/" + file;
}

// f(item, index) for every item of the array v[key], when present
template <class F>
void ForEach(const Value& v, const std::string& key, F&& f) {
  if (!v.Has(key)) return;
  const Value list = v.At(key);
  for (std::size_t i = 0, n = list.Array(); i < n; ++i) f(list.At(i), i);
}

// registers an item's name (unique within its list) with its index
void AddName(const Value& item, const std::string& name, std::map<std::string, Index>* names) {
  if (!names->emplace(name, static_cast<Index>(names->size())).second) item.At("name").Fail("duplicate name");
}

// the index of the item the string value names, or an error naming the value
Index Lookup(const Value& v, const std::map<std::string, Index>& names, const char* what) {
  const auto it = names.find(v.String());
  if (it == names.end()) v.Fail(std::string("no ") + what + " named '" + v.String() + "'");
  return it->second;
}

// runs `f`, turning its condsim::Error into one naming the scene value
template <class F>
auto Checked(const Value& v, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    v.Fail(e.what());
  }
}

void ParseWorld(const Value& v, WorldParams* w) {
  v.Object({"dt", "gravity", "kv", "contact_margin", "inelastic", "warm_start"});
  w->dt = v.Number("dt", w->dt, 0, 1, true);
  w->gravity = v.Vector("gravity", w->gravity);
  w->kv = v.Number("kv", w->kv, 0, kInf, true);
  w->contact_margin = v.Number("contact_margin", w->contact_margin, 0, kInf);
  w->inelastic = v.Bool("inelastic", w->inelastic);
  w->warm_start = v.Bool("warm_start", w->warm_start);
}

void ParseSolver(const Value& v, CondParams* c) {
  v.Object({"theta_threshold", "max_iterations", "projection", "step_size", "chebyshev", "chebyshev_start", "chebyshev_relax",
            "w_reuse_solves", "w_safeguard", "body_modes", "body_mode_patches", "rigid_sweeps"});
  c->theta_threshold = v.Number("theta_threshold", c->theta_threshold, 0, kInf, true);
  if (v.Has("max_iterations")) c->max_iterations = int(v.At("max_iterations").Integer(1, 100000000));
  if (v.Has("projection")) c->projection = Checked(v.At("projection"), [&] { return ParseProjection(v.At("projection").String()); });
  if (v.Has("step_size")) c->step_size = Checked(v.At("step_size"), [&] { return ParseStepSize(v.At("step_size").String()); });
  c->chebyshev = v.Bool("chebyshev", c->chebyshev);
  if (v.Has("chebyshev_start")) c->chebyshev_start = int(v.At("chebyshev_start").Integer(2, 1000000));
  c->chebyshev_relax = v.Number("chebyshev_relax", c->chebyshev_relax, 0, 1, true);
  if (v.Has("w_reuse_solves")) c->w_reuse_solves = int(v.At("w_reuse_solves").Integer(1, 1000000));
  c->w_safeguard = v.Number("w_safeguard", c->w_safeguard, 0, 2, false, true);
  c->body_modes = v.Bool("body_modes", c->body_modes);
  if (v.Has("body_mode_patches")) c->body_mode_patches = int(v.At("body_mode_patches").Integer(1, kMaxBodyModePatches));
  if (v.Has("rigid_sweeps")) c->rigid_sweeps = int(v.At("rigid_sweeps").Integer(0, 100));
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

SceneTrajectory ParseTrajectory(const Value& v, const std::string& dir);

SceneFem ParseFem(const Value& v, const std::string& dir, std::size_t index) {
  v.Object({"name", "mesh", "material", "mu", "self_contact", "velocity", "handle"});
  SceneFem f;
  f.name = v.String("name", "fem " + std::to_string(index));
  f.mesh = ParseMesh(v.At("mesh"), dir);
  const Value m = v.At("material");
  m.Object({"young", "poisson", "density", "rayleigh_alpha", "rayleigh_beta", "geometric_stiffness"});
  ParseElastic(m, &f.material);
  f.mu = v.Number("mu", 0.5, 0, kInf);
  f.self_contact = v.Bool("self_contact", true);
  const Vec3 vel = v.Vector("velocity", Vec3());
  if (!(Norm(vel) == 0)) v.At("velocity").Fail("initial FEM velocities are not supported yet (give 0)");
  const std::vector<std::string> problems = ValidateMesh(f.mesh, f.name);
  if (!problems.empty()) v.At("mesh").Fail(problems.front());
  // a handle: {"box": [[x0, y0, z0], [x1, y1, z1]], "trajectory": {...}}
  if (v.Has("handle")) {
    const Value h = v.At("handle");
    h.Object({"box", "trajectory"});
    const Value box = h.At("box");
    if (box.Array() != 2) box.Fail("expected two corners [[x0, y0, z0], [x1, y1, z1]]");
    const Vec3 lo = box.At(0).Vector(), hi = box.At(1).Vector();
    for (Index i = 0; i < f.mesh.num_nodes(); ++i) {
      const Vec3 p = f.mesh.Node(i);
      if (p[0] >= lo[0] && p[0] <= hi[0] && p[1] >= lo[1] && p[1] <= hi[1] && p[2] >= lo[2] && p[2] <= hi[2]) f.handle_nodes.push_back(i);
    }
    if (f.handle_nodes.empty()) box.Fail("the box holds no node of the mesh");
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

// numbers from a text file, whitespace separated (trajectory samples)
std::vector<double> ReadNumbers(const Value& v, const std::string& path) {
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
  m.Object({"radius", "young", "poisson", "density", "rayleigh_alpha", "rayleigh_beta", "geometric_stiffness"});
  RodMaterial r;
  r.radius = m.Number("radius", r.radius, 0, kInf, true);
  ParseElastic(m, &r);
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
  v.Object({"name", "points", "segments", "material", "start", "finish", "mu", "self_contact"});
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

}  // namespace

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

namespace {

// the "randomization" list: each entry's path must name a number in the scene and its range
// must hold that number; with a seed the numbers are replaced by uniform draws
std::vector<SceneRandom> ParseRandomization(const Value& list, Json* root, const std::uint64_t* seed) {
  std::vector<SceneRandom> out;
  const std::size_t n = list.Array();
  for (std::size_t i = 0; i < n; ++i) {
    const Value e = list.At(i);
    e.Object({"path", "range"});
    SceneRandom r;
    // one pointer, or several sharing the draw (e.g. two fingers of one material)
    const Value path = e.At("path");
    std::vector<Value> items;
    if (path.json().is_array()) {
      if (path.Array() == 0) path.Fail("expected a pointer or a non-empty array of pointers");
      for (std::size_t k = 0; k < path.json().size(); ++k) items.push_back(path.At(k));
    } else {
      items.push_back(path);
    }
    for (const Value& item : items) {
      const std::string p = item.String();
      Json::json_pointer ptr;
      try {
        ptr = Json::json_pointer(p);
      } catch (const Json::exception&) {
        item.Fail("'" + p + "' is not a JSON pointer (e.g. /fem_bodies/0/material/young)");
      }
      bool found = false;
      try {
        found = root->contains(ptr);
      } catch (const Json::exception&) {
      }
      if (p.empty() || p.rfind("/randomization", 0) == 0 || !found) item.Fail("'" + p + "' names no value in the scene");
      const Json& number = root->at(ptr);
      if (!number.is_number()) item.Fail("'" + p + "' is not a number");
      if (r.paths.empty()) r.value = number.get<double>();  // the file's value (the first pointer's)
      r.paths.push_back(p);
    }
    const Value range = e.At("range");
    if (range.Array() != 2) range.Fail("expected [lo, hi]");
    r.lo = range.At(0).Number();
    r.hi = range.At(1).Number(r.lo, kInf);
    out.push_back(r);
  }
  if (seed != nullptr) {
    std::mt19937_64 rng(*seed);
    for (SceneRandom& r : out) {
      // 53 random bits to [0, 1): the same on every platform (std's distributions are not)
      const double u = double(rng() >> 11) * 0x1.0p-53;
      r.value = r.lo + (r.hi - r.lo) * u;
      for (const std::string& p : r.paths) (*root)[Json::json_pointer(p)] = r.value;
    }
  }
  return out;
}

}  // namespace

Scene ParseScene(const std::string& text, const std::string& source, const std::string& dir, const std::uint64_t* seed) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // line and column of the byte nlohmann names
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON (" + e.what() + ")");
  }
  Scene scene;
  scene.source = source;
  // randomized values are drawn first, so every value is then checked as if written in the file
  if (root.is_object() && root.contains("randomization")) {
    const Json list = root["randomization"];
    scene.randomization = ParseRandomization(Value(list, "/randomization", source), &root, seed);
  }
  scene.randomized = seed != nullptr;
  scene.seed = seed != nullptr ? *seed : 0;
  const Value v(root, "", source);
  v.Object({"name", "description", "duration", "world", "solver", "static", "static_meshes", "rigid_bodies", "fem_bodies",
            "joints", "rods", "rod_end_drives", "pose_drives", "grippers", "output", "randomization"});
  scene.name = v.String("name", source);
  scene.description = v.String("description", "");
  scene.duration = v.Number("duration", 1, 0, kInf, true);
  if (v.Has("world")) ParseWorld(v.At("world"), &scene.world);
  if (v.Has("output")) {
    const Value o = v.At("output");
    o.Object({"frame_rate"});
    scene.frame_rate = o.Number("frame_rate", 0, 0, 1e6);
  }
  if (v.Has("solver")) ParseSolver(v.At("solver"), &scene.world.cond);
  ForEach(v, "static", [&](const Value& item, std::size_t) { scene.statics.push_back(ParseStatic(item)); });
  ForEach(v, "static_meshes", [&](const Value& m, std::size_t i) {
    m.Object({"name", "file", "mu"});
    SceneMesh sm;
    sm.name = m.String("name", "static mesh " + std::to_string(i));
    const Value f = m.At("file");
    sm.mesh = Checked(f, [&] { return ReadSurface(Join(dir, f.String())); });
    sm.mu = m.Number("mu", 0.5, 0, kInf);
    scene.meshes.push_back(std::move(sm));
  });
  std::map<std::string, Index> rigid_names, rod_names;
  ForEach(v, "rigid_bodies", [&](const Value& item, std::size_t i) {
    scene.rigid.push_back(ParseRigid(item, dir, i));
    AddName(item, scene.rigid.back().name, &rigid_names);
  });
  ForEach(v, "fem_bodies", [&](const Value& item, std::size_t i) { scene.fem.push_back(ParseFem(item, dir, i)); });
  ForEach(v, "joints", [&](const Value& item, std::size_t) { scene.joints.push_back(ParseJoint(item, rigid_names)); });
  ForEach(v, "rods", [&](const Value& item, std::size_t i) {
    scene.rods.push_back(ParseRod(item, i));
    AddName(item, scene.rods.back().name, &rod_names);
  });
  ForEach(v, "rod_end_drives", [&](const Value& d, std::size_t) {
    d.Object({"rod", "end", "trajectory"});
    SceneRodEndDrive drive;
    drive.rod = Lookup(d.At("rod"), rod_names, "rod");
    const std::string end = d.String("end", "start");
    if (end != "start" && end != "finish") d.At("end").Fail("'" + end + "' is not an end (valid: start, finish)");
    drive.end = end == "start" ? 0 : 1;
    const SceneRod& rod = scene.rods[drive.rod];
    if (!(drive.end == 0 ? rod.start : rod.finish).attached) d.At("end").Fail("the rod's " + end + " end is not attached");
    drive.trajectory = ParseTrajectory(d.At("trajectory"), dir);
    scene.rod_end_drives.push_back(std::move(drive));
  });
  ForEach(v, "pose_drives", [&](const Value& d, std::size_t) {
    d.Object({"body", "k_lin", "d_lin", "k_ang", "d_ang", "trajectory"});
    ScenePoseDrive drive = ParsePoseDrive(d, dir);
    drive.body = Lookup(d.At("body"), rigid_names, "rigid body");
    scene.pose_drives.push_back(std::move(drive));
  });
  ForEach(v, "grippers", [&](const Value& item, std::size_t i) { scene.grippers.push_back(ParseGripper(item, dir, i)); });
  // every value checked again by its owner (e.g. the principal inertia of a body)
  Checked(v, [&] {
    scene.world.Validate();
    return 0;
  });
  // FNV-1a 64 of the text: summary.json names the scene's exact contents
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  scene.hash = h;
  return scene;
}

std::string HashHex(std::uint64_t hash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

Scene LoadScene(const std::string& path, const std::uint64_t* seed) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the scene file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::size_t slash = path.find_last_of('/');
  return ParseScene(ss.str(), path, slash == std::string::npos ? "" : path.substr(0, slash), seed);
}

SceneWorld BuildWorld(const Scene& scene, Backend* backend) {
  SceneWorld out;
  out.world = std::make_unique<World>(backend, scene.world);
  World& w = *out.world;
  for (const StaticShape& s : scene.statics) w.AddStatic(s);
  for (const SceneMesh& m : scene.meshes) w.AddStaticMesh(m.mesh, m.mu, m.name);
  for (const SceneRigid& r : scene.rigid) out.rigid_ids.push_back(w.AddRigid(r.body));
  for (const SceneFem& f : scene.fem) out.fem_ids.push_back(w.AddFem(f.mesh, f.material, f.name, f.mu, f.self_contact));
  for (std::size_t k = 0; k < scene.fem.size(); ++k)
    if (!scene.fem[k].handle_nodes.empty()) w.fem_model(out.fem_ids[k]).SetPrescribedNodes(scene.fem[k].handle_nodes);
  for (const SceneRod& r : scene.rods)
    out.rod_ids.push_back(w.AddRod(r.geometry, r.material, r.start, r.finish, r.name, r.mu, r.self_contact));
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
    const std::vector<Scalar> x = w.FemPositions(sw->fem_ids[k]);
    std::vector<Scalar> vel;
    for (Index i : f.handle_nodes) {
      const Vec3 target = p + r * (f.mesh.Node(i) - tr.p.front());
      const Vec3 u = (1 / scene.world.dt) * (target - LoadVec3(x.data(), i));
      vel.insert(vel.end(), {u[0], u[1], u[2]});
    }
    w.fem_model(sw->fem_ids[k]).SetPrescribedVelocities(vel);
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
