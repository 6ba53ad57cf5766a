// HDF5 helpers shared by the run output and the batch files.
#include "io/hdf5_util.h"

#if CONDSIM_HAVE_HDF5
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "condsim/error.h"

namespace condsim::hdf5 {

void Quiet() {
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string Reason(bool system) {
  const int err = system ? errno : 0;
  std::string desc;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD,
           [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
             if (static_cast<std::string*>(out)->empty() && e->desc != nullptr) *static_cast<std::string*>(out) = e->desc;
             return 0;
           },
           &desc);
  H5Eclear2(H5E_DEFAULT);
  if (err != 0) return std::strerror(err);
  desc = desc.substr(0, desc.find_first_of(":\n"));
  return desc.empty() ? "HDF5 error" : desc;
}

namespace {

// dataset creation properties without creation times (the caller closes them)
hid_t NoTimesDcpl() {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  return dcpl;
}

// a chunk of an appendable dataset holds about this many values
constexpr std::size_t kChunkValues = 8192;

}  // namespace

void WriteData(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* data,
               const std::string& file) {
  hsize_t values = 1;
  for (hsize_t d : dims) values *= d;
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t dcpl = NoTimesDcpl();
  errno = 0;
  const hid_t ds = H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  herr_t rc = -1;
  if (ds >= 0) rc = values == 0 ? 0 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (ds >= 0) H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (ds < 0 || rc < 0) throw Error(file + ": cannot write dataset " + name + " (" + Reason() + ")");
}

hid_t MakeGroup(hid_t loc, const std::string& name, const std::string& file) {
  errno = 0;
  const hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl, 0);
  const hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose(gcpl);
  if (g < 0) throw Error(file + ": cannot create group " + name + " (" + Reason() + ")");
  return g;
}

void WriteStringAttr(hid_t loc, const std::string& name, const std::string& value, const std::string& file) {
  errno = 0;
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size() + 1);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t rc = a >= 0 ? H5Awrite(a, type, value.c_str()) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
  if (rc < 0) throw Error(file + ": cannot write attribute " + name + " (" + Reason() + ")");
}

void WriteScalarAttr(hid_t loc, const std::string& name, hid_t type, const void* value, const std::string& file) {
  errno = 0;
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t rc = a >= 0 ? H5Awrite(a, type, value) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  if (rc < 0) throw Error(file + ": cannot write attribute " + name + " (" + Reason() + ")");
}

Appendable::Appendable(hid_t loc, const std::string& name, hid_t type, std::vector<hsize_t> row, const std::string& file)
    : type_(type), row_(std::move(row)), name_(name), file_(file) {
  std::vector<hsize_t> dims{0}, max{H5S_UNLIMITED}, chunk{1};
  hsize_t per_row = 1;
  for (hsize_t d : row_) {
    dims.push_back(d);
    max.push_back(d);
    chunk.push_back(std::max<hsize_t>(d, 1));
    per_row *= std::max<hsize_t>(d, 1);
  }
  chunk[0] = std::max<hsize_t>(1, kChunkValues / per_row);
  errno = 0;
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), max.data());
  const hid_t dcpl = NoTimesDcpl();
  H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
  id_ = H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (id_ < 0) throw Error(file_ + ": cannot create dataset " + name_ + " (" + Reason() + ")");
}

Appendable::~Appendable() {
  if (id_ >= 0) H5Dclose(id_);
}

Appendable& Appendable::operator=(Appendable&& o) noexcept {
  std::swap(id_, o.id_);
  type_ = o.type_;
  row_ = o.row_;
  rows_ = o.rows_;
  name_ = o.name_;
  file_ = o.file_;
  return *this;
}

void Appendable::Append(hsize_t n, const void* data) {
  if (n == 0) return;
  std::vector<hsize_t> dims{rows_ + n}, start{rows_}, count{n};
  for (hsize_t d : row_) {
    dims.push_back(d);
    start.push_back(0);
    count.push_back(d);
  }
  errno = 0;
  herr_t rc = H5Dset_extent(id_, dims.data());
  if (rc >= 0) {
    const hid_t fspace = H5Dget_space(id_);
    const hid_t mspace = H5Screate_simple(int(count.size()), count.data(), nullptr);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
    rc = H5Dwrite(id_, type_, mspace, fspace, H5P_DEFAULT, data);
    H5Sclose(mspace);
    H5Sclose(fspace);
  }
  if (rc < 0) throw Error(file_ + ": cannot write dataset " + name_ + " (" + Reason() + ")");
  rows_ += n;
}

}  // namespace condsim::hdf5
#endif
