// Scene-file JSON access for the parsers (io/scene.cpp, io/scene_items.cpp): a value with its JSON
// pointer, so every error names the file and the path (`box.json: /rigid_bodies/0/mass: ...`).
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "condsim/error.h"
#include "condsim/math.h"

namespace condsim {
namespace scene_json {

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

// a file path relative to the scene's directory
inline std::string Join(const std::string& dir, const std::string& file) {
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
inline void AddName(const Value& item, const std::string& name, std::map<std::string, Index>* names) {
  if (!names->emplace(name, static_cast<Index>(names->size())).second) item.At("name").Fail("duplicate name");
}

// the index of the item the string value names, or an error naming the value
inline Index Lookup(const Value& v, const std::map<std::string, Index>& names, const char* what) {
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

}  // namespace scene_json
}  // namespace condsim
