// Device records declared once (pbrt-v4's single field list per SoA record, as an X-macro). A
// record is a list FIELDS(X) of X(Type, name) entries, one flat array each. From that one list:
//   CONDSIM_RECORD_VIEW(Name, FIELDS)   struct Name { const Type* name; ... }: what a functor
//                                       reads (here: device-compilable, no dependencies)
//   CONDSIM_RECORD_HOST(Name, FIELDS)   struct Name { std::vector<Type> name; ... }
//   CONDSIM_RECORD_ARRAYS(Name, View, FIELDS)  (condsim/record_arrays.h) the record on a backend:
//                                       Array<Type> members, Upload(backend, host) from any struct
//                                       with those member names, and view()
#pragma once

#include <vector>

#include "condsim/core.h"

#define CONDSIM_RECORD_VIEW_MEMBER(T, name) const T* name = nullptr;
#define CONDSIM_RECORD_VIEW(Name, FIELDS) \
  struct Name {                           \
    FIELDS(CONDSIM_RECORD_VIEW_MEMBER)    \
  };

// the same with writable fields (a record a functor writes)
#define CONDSIM_RECORD_OUT_VIEW_MEMBER(T, name) T* name = nullptr;
#define CONDSIM_RECORD_OUT_VIEW(Name, FIELDS) \
  struct Name {                               \
    FIELDS(CONDSIM_RECORD_OUT_VIEW_MEMBER)    \
  };

#define CONDSIM_RECORD_HOST_MEMBER(T, name) std::vector<T> name;
#define CONDSIM_RECORD_HOST(Name, FIELDS) \
  struct Name {                           \
    FIELDS(CONDSIM_RECORD_HOST_MEMBER)    \
  };
