// Episode files and manifests of `condsim batch` (HDF5).
#include "io/batch_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "condsim/build_info.h"
#include "condsim/error.h"

#include "io/hdf5_util.h"

namespace condsim {

#if CONDSIM_HAVE_HDF5
namespace {

using hdf5::Quiet;
using hdf5::WriteScalarAttr;
using hdf5::WriteStringAttr;

bool HasAttr(hid_t loc, const char* name) { return H5Aexists(loc, name) > 0; }

std::string ReadStringAttr(hid_t loc, const char* name, const std::string& file) {
  const hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0) throw Error(file + ": no attribute " + name);
  const hid_t type = H5Aget_type(a);
  std::string out;
  if (H5Tget_class(type) == H5T_STRING && !H5Tis_variable_str(type)) {
    std::vector<char> buf(H5Tget_size(type) + 1, '\0');
    if (H5Aread(a, type, buf.data()) >= 0) out = buf.data();
  }
  H5Tclose(type);
  H5Aclose(a);
  return out;
}

template <class T>
T ReadNumberAttr(hid_t loc, const char* name, hid_t mem_type, const std::string& file) {
  T v{};
  const hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, mem_type, &v) < 0) {
    if (a >= 0) H5Aclose(a);
    throw Error(file + ": cannot read attribute " + name + " (" + hdf5::Reason(false) + ")");
  }
  H5Aclose(a);
  return v;
}

// a 1-D dataset of n values
void WriteColumn(hid_t loc, const char* name, hid_t type, hsize_t n, const void* data, const std::string& file) {
  hdf5::WriteData(loc, name, type, {n}, data, file);
}

// a column of fixed-length strings (the longest + 1 bytes each, NUL-padded)
void WriteStringColumn(hid_t loc, const char* name, const std::vector<std::string>& values, const std::string& file) {
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size() + 1);
  std::vector<char> buf(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) std::copy(values[i].begin(), values[i].end(), buf.begin() + long(i * width));
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, width);
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  WriteColumn(loc, name, type, values.size(), buf.data(), file);
  H5Tclose(type);
}

// the length of a dataset's first dimension (-1: none)
long long Rows(hid_t loc, const char* name) {
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return -1;
  const hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return -1;
  const hid_t space = H5Dget_space(ds);
  hsize_t dims[8] = {0};
  const int rank = H5Sget_simple_extent_dims(space, dims, nullptr);
  H5Sclose(space);
  H5Dclose(ds);
  return rank >= 1 ? (long long)dims[0] : -1;
}

template <class T>
std::vector<T> ReadColumn(hid_t loc, const char* name, hid_t mem_type, const std::string& file) {
  const long long n = Rows(loc, name);
  if (n < 0) throw Error(file + ": no dataset " + name);
  std::vector<T> out(static_cast<std::size_t>(n));
  const hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  const herr_t rc = n == 0 ? 0 : H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  H5Dclose(ds);
  if (rc < 0) throw Error(file + ": cannot read dataset " + name + " (" + hdf5::Reason(false) + ")");
  return out;
}

std::vector<std::string> ReadStringColumn(hid_t loc, const char* name, const std::string& file) {
  const long long n = Rows(loc, name);
  if (n < 0) throw Error(file + ": no dataset " + name);
  const hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  const hid_t type = H5Dget_type(ds);
  const std::size_t width = H5Tget_size(type);
  std::vector<char> buf(std::size_t(n) * width + 1, '\0');
  const herr_t rc = n == 0 ? 0 : H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
  H5Tclose(type);
  H5Dclose(ds);
  if (rc < 0) throw Error(file + ": cannot read dataset " + name + " (" + hdf5::Reason(false) + ")");
  std::vector<std::string> out;
  for (long long i = 0; i < n; ++i) {
    const char* s = buf.data() + std::size_t(i) * width;
    out.emplace_back(s, strnlen(s, width));
  }
  return out;
}

}  // namespace

EpisodeFileInfo ReadEpisodeFile(const std::string& path) {
  Quiet();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": cannot open the episode file (" + hdf5::Reason(false) + ")");
  EpisodeFileInfo info;
  try {
    info.scene_hash = HasAttr(f, "scene_hash") ? ReadStringAttr(f, "scene_hash", path) : "";
    info.status = HasAttr(f, "status") ? ReadStringAttr(f, "status", path) : "";
    if (HasAttr(f, "failure")) info.failure = ReadStringAttr(f, "failure", path);
    info.has_seed = HasAttr(f, "seed");
    if (info.has_seed) info.seed = ReadNumberAttr<std::uint64_t>(f, "seed", H5T_NATIVE_UINT64, path);
    if (HasAttr(f, "episode")) info.episode = ReadNumberAttr<long long>(f, "episode", H5T_NATIVE_LLONG, path);
    if (HasAttr(f, "steps")) info.steps = ReadNumberAttr<long long>(f, "steps", H5T_NATIVE_LLONG, path);
    info.steps_done = std::max(0LL, Rows(f, "stats/iterations"));
  } catch (...) {
    H5Fclose(f);
    throw;
  }
  H5Fclose(f);
  return info;
}

void WriteManifest(const std::string& path, const Manifest& m) {
  Quiet();
  const std::string tmp = path + ".part";
  const hid_t f = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": cannot create " + tmp + " (" + hdf5::Reason(false) + ")");
  try {
    WriteStringAttr(f, "scene", m.scene, path);
    WriteStringAttr(f, "scene_path", m.scene_path, path);
    WriteStringAttr(f, "scene_hash", m.scene_hash, path);
    WriteStringAttr(f, "commit", m.commit, path);
    WriteScalarAttr(f, "batch_seed", H5T_NATIVE_UINT64, &m.batch_seed, path);
    WriteScalarAttr(f, "envs", H5T_NATIVE_LLONG, &m.envs, path);
    WriteScalarAttr(f, "steps", H5T_NATIVE_LLONG, &m.steps, path);
    WriteScalarAttr(f, "episodes", H5T_NATIVE_LLONG, &m.episodes, path);
    WriteScalarAttr(f, "shard", H5T_NATIVE_LLONG, &m.shard, path);
    WriteScalarAttr(f, "shards", H5T_NATIVE_LLONG, &m.shards, path);
    // the table: one row per episode of this manifest
    std::vector<long long> index, steps;
    std::vector<std::uint64_t> seed;
    std::vector<std::string> status, failure, file;
    for (const ManifestEntry& e : m.entries) {
      index.push_back(e.index);
      seed.push_back(e.seed);
      status.push_back(e.status);
      failure.push_back(e.failure);
      steps.push_back(e.steps_done);
      file.push_back(e.file);
    }
    const hsize_t n = m.entries.size();
    WriteColumn(f, "episode", H5T_NATIVE_LLONG, n, index.data(), path);
    WriteColumn(f, "seed", H5T_NATIVE_UINT64, n, seed.data(), path);
    WriteStringColumn(f, "status", status, path);
    WriteStringColumn(f, "failure", failure, path);
    WriteColumn(f, "steps_done", H5T_NATIVE_LLONG, n, steps.data(), path);
    WriteStringColumn(f, "file", file, path);
    // /episodes/<index, 6 digits>: an external link to the episode file's root (no data copied)
    const hid_t g = hdf5::MakeGroup(f, "episodes", path);
    for (const ManifestEntry& e : m.entries) {
      if (e.file.empty()) continue;
      char name[32];
      std::snprintf(name, sizeof(name), "%06lld", e.index);
      if (H5Lcreate_external(e.file.c_str(), "/", g, name, H5P_DEFAULT, H5P_DEFAULT) < 0) {
        H5Gclose(g);
        throw Error(path + ": cannot link episode " + name + " (" + hdf5::Reason(false) + ")");
      }
    }
    H5Gclose(g);
  } catch (...) {
    H5Fclose(f);
    std::filesystem::remove(tmp);
    throw;
  }
  if (H5Fclose(f) < 0) {
    std::filesystem::remove(tmp);
    throw Error(path + ": cannot close " + tmp + " (" + hdf5::Reason(false) + ")");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(path + ": cannot rename " + tmp + " (" + ec.message() + ")");
}

Manifest ReadManifest(const std::string& path) {
  Quiet();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": cannot open the manifest (" + hdf5::Reason(false) + ")");
  Manifest m;
  try {
    m.scene = ReadStringAttr(f, "scene", path);
    m.scene_path = ReadStringAttr(f, "scene_path", path);
    m.scene_hash = ReadStringAttr(f, "scene_hash", path);
    m.commit = ReadStringAttr(f, "commit", path);
    m.batch_seed = ReadNumberAttr<std::uint64_t>(f, "batch_seed", H5T_NATIVE_UINT64, path);
    m.envs = ReadNumberAttr<long long>(f, "envs", H5T_NATIVE_LLONG, path);
    m.steps = ReadNumberAttr<long long>(f, "steps", H5T_NATIVE_LLONG, path);
    m.episodes = ReadNumberAttr<long long>(f, "episodes", H5T_NATIVE_LLONG, path);
    m.shard = ReadNumberAttr<long long>(f, "shard", H5T_NATIVE_LLONG, path);
    m.shards = ReadNumberAttr<long long>(f, "shards", H5T_NATIVE_LLONG, path);
    const auto index = ReadColumn<long long>(f, "episode", H5T_NATIVE_LLONG, path);
    const auto seed = ReadColumn<std::uint64_t>(f, "seed", H5T_NATIVE_UINT64, path);
    const auto status = ReadStringColumn(f, "status", path);
    const auto failure = ReadStringColumn(f, "failure", path);
    const auto steps = ReadColumn<long long>(f, "steps_done", H5T_NATIVE_LLONG, path);
    const auto file = ReadStringColumn(f, "file", path);
    const std::size_t n = index.size();
    if (seed.size() != n || status.size() != n || failure.size() != n || steps.size() != n || file.size() != n)
      throw Error(path + ": the manifest's columns differ in length");
    for (std::size_t i = 0; i < n; ++i) m.entries.push_back({index[i], seed[i], status[i], failure[i], steps[i], file[i]});
  } catch (...) {
    H5Fclose(f);
    throw;
  }
  H5Fclose(f);
  return m;
}
#else
EpisodeFileInfo ReadEpisodeFile(const std::string& path) { throw Error(path + ": condsim was built without HDF5"); }
void WriteManifest(const std::string& path, const Manifest&) { throw Error(path + ": condsim was built without HDF5"); }
Manifest ReadManifest(const std::string& path) { throw Error(path + ": condsim was built without HDF5"); }
#endif

}  // namespace condsim
