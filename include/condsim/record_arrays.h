// A device record (condsim/record.h) on a backend: CONDSIM_RECORD_ARRAYS(Name, View, FIELDS)
// declares struct Name with one Array<Type> per field, Upload(backend, host) copying every field
// from the same-named member of `host` (a std::vector<Type>), and view() giving the functors'
// View of the arrays.
#pragma once

#include "condsim/backend.h"
#include "condsim/record.h"

#define CONDSIM_RECORD_ARRAY_MEMBER(T, name) ::condsim::Array<T> name;
#define CONDSIM_RECORD_ARRAY_UPLOAD(T, name) this->name.Assign(record_backend_, record_host_.name);
#define CONDSIM_RECORD_ARRAY_VIEW(T, name) record_view_.name = this->name.data();
#define CONDSIM_RECORD_ARRAYS(Name, View, FIELDS)                       \
  struct Name {                                                         \
    FIELDS(CONDSIM_RECORD_ARRAY_MEMBER)                                 \
    template <class Host>                                               \
    void Upload(::condsim::Backend* record_backend_, const Host& record_host_) { \
      FIELDS(CONDSIM_RECORD_ARRAY_UPLOAD)                               \
    }                                                                   \
    View view() const {                                                 \
      View record_view_;                                                \
      FIELDS(CONDSIM_RECORD_ARRAY_VIEW)                                 \
      return record_view_;                                              \
    }                                                                   \
  };
