// HDF5 helpers shared by the run output (output.cpp) and the batch files (batch_file.cpp): errors
// name the file and the object, and no object stores creation times (files are bitwise
// reproducible). HDF5 builds only.
#pragma once

#include "condsim/build_info.h"

#if CONDSIM_HAVE_HDF5
#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

namespace condsim::hdf5 {

// no library shutdown at exit (after a failed write, a full disk, HDF5's shutdown crashes on the
// file it could not close) and no error printing: errors become one message each (Reason)
void Quiet();
// why the last HDF5 call failed, in a few words: with `system` and errno set, the system's reason
// (a failed write: HDF5's own text then carries the whole request), else the innermost message
// of HDF5's error stack, which is cleared
std::string Reason(bool system = true);
// a dataset of the given dims written at once (nothing written when it holds no value)
void WriteData(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* data,
               const std::string& file);
// a group without creation times (the caller closes it)
hid_t MakeGroup(hid_t loc, const std::string& name, const std::string& file);
// a string attribute, replacing one of the same name
void WriteStringAttr(hid_t loc, const std::string& name, const std::string& value, const std::string& file);
// a scalar numeric attribute
void WriteScalarAttr(hid_t loc, const std::string& name, hid_t type, const void* value, const std::string& file);

// a chunked dataset whose first dimension grows by Append (rows of `row` values each; a chunk
// holds about 8192 values)
class Appendable {
 public:
  Appendable() = default;
  Appendable(hid_t loc, const std::string& name, hid_t type, std::vector<hsize_t> row, const std::string& file);
  ~Appendable();
  Appendable(Appendable&& o) noexcept { *this = std::move(o); }
  Appendable& operator=(Appendable&& o) noexcept;
  // appends n rows from data
  void Append(hsize_t n, const void* data);

 private:
  hid_t id_ = -1;
  hid_t type_ = -1;
  std::vector<hsize_t> row_;
  hsize_t rows_ = 0;
  std::string name_, file_;
};

}  // namespace condsim::hdf5
#endif
