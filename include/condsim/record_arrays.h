// A device record (condsim/record.h) on a backend: CONDSIM_RECORD_ARRAYS(Name, View, FIELDS)
// declares struct Name with one Array<Type> per field, Upload(backend, host) copying every field
// from the same-named member of `host` (a std::vector<Type>), and view() giving the functors'
// View of the arrays. Upload packs the fields into one host buffer and moves it in one upload
// (then a copy on the backend per field), and the arrays keep their memory from call to call
// (Array::Resize): a record set every step costs one transfer and no allocation; Reserve
// gives every field the capacity of a bound known in advance.
#pragma once

#include <cstring>
#include <vector>

#include "condsim/backend.h"
#include "condsim/record.h"

namespace condsim {
// a field's bytes rounded up to 8, so that every field starts aligned in the packed buffer
inline std::size_t RecordPackedBytes(std::size_t bytes) { return (bytes + 7) / 8 * 8; }
}  // namespace condsim

#define CONDSIM_RECORD_ARRAY_MEMBER(T, name) ::condsim::Array<T> name;
#define CONDSIM_RECORD_ARRAY_BYTES(T, name) \
  record_bytes_ += ::condsim::RecordPackedBytes(sizeof(T) * record_host_.name.size());
#define CONDSIM_RECORD_ARRAY_PACK(T, name)                                                           \
  this->name.Resize(record_backend_, ::condsim::CheckedIndex(record_host_.name.size(), #name));      \
  if (!record_host_.name.empty())                                                                    \
    std::memcpy(record_packed_host_.data() + record_bytes_, record_host_.name.data(),                \
                sizeof(T) * record_host_.name.size());                                               \
  record_bytes_ += ::condsim::RecordPackedBytes(sizeof(T) * record_host_.name.size());
#define CONDSIM_RECORD_ARRAY_SPLIT(T, name)                                                          \
  if (this->name.size() > 0)                                                                         \
    record_backend_->CopyWithin(this->name.data(), record_packed_.data() + record_bytes_,            \
                                sizeof(T) * std::size_t(this->name.size()));                         \
  record_bytes_ += ::condsim::RecordPackedBytes(sizeof(T) * std::size_t(this->name.size()));
#define CONDSIM_RECORD_ARRAY_RESERVE(T, name)                   \
  this->name.Reserve(record_backend_, record_entries_);          \
  record_bytes_ += ::condsim::RecordPackedBytes(sizeof(T) * std::size_t(record_entries_));
#define CONDSIM_RECORD_ARRAY_RESIZE(T, name) \
  this->name.Resize(record_backend_, ::condsim::CheckedIndex(record_host_.name.size(), #name));
#define CONDSIM_RECORD_ARRAY_RESERVE_LIKE(T, name)                                            \
  this->name.Reserve(record_backend_, ::condsim::CheckedIndex(record_host_.name.size(), #name)); \
  record_bytes_ += ::condsim::RecordPackedBytes(sizeof(T) * record_host_.name.size());
#define CONDSIM_RECORD_ARRAY_VIEW(T, name) record_view_.name = this->name.data();
#define CONDSIM_RECORD_ARRAY_DOWNLOAD(T, name) record_host_->name = this->name.ToHost();
#define CONDSIM_RECORD_ARRAYS(Name, View, FIELDS)                                      \
  struct Name {                                                                        \
    FIELDS(CONDSIM_RECORD_ARRAY_MEMBER)                                                \
    template <class Host>                                                              \
    void Upload(::condsim::Backend* record_backend_, const Host& record_host_) {       \
      std::size_t record_bytes_ = 0;                                                   \
      FIELDS(CONDSIM_RECORD_ARRAY_BYTES)                                               \
      record_packed_host_.resize(record_bytes_);                                       \
      record_bytes_ = 0;                                                               \
      FIELDS(CONDSIM_RECORD_ARRAY_PACK)                                                \
      if (record_bytes_ == 0) return;                                                  \
      record_packed_.Assign(record_backend_, record_packed_host_);                     \
      record_bytes_ = 0;                                                               \
      FIELDS(CONDSIM_RECORD_ARRAY_SPLIT)                                               \
    }                                                                                  \
    /* every field sized as the same-named member of `record_host_`, nothing copied (a   \
       record its owner writes on the backend) */                                          \
    template <class Host>                                                              \
    void ResizeLike(::condsim::Backend* record_backend_, const Host& record_host_) {   \
      FIELDS(CONDSIM_RECORD_ARRAY_RESIZE)                                              \
    }                                                                                  \
    /* capacity for `record_entries_` entries in every field (a bound known in advance:    \
       the largest field's length), so that later uploads within it never allocate */      \
    void Reserve(::condsim::Backend* record_backend_, ::condsim::Index record_entries_) {  \
      std::size_t record_bytes_ = 0;                                                   \
      FIELDS(CONDSIM_RECORD_ARRAY_RESERVE)                                             \
      record_packed_.Reserve(record_backend_,                                          \
                             ::condsim::CheckedIndex(record_bytes_, "record bytes"));  \
      record_packed_host_.reserve(record_bytes_);                                      \
    }                                                                                  \
    /* capacity for a record whose fields are as long as those of `record_host_` (fields of    \
       different lengths) */                                                               \
    template <class Host>                                                              \
    void ReserveLike(::condsim::Backend* record_backend_, const Host& record_host_) {  \
      std::size_t record_bytes_ = 0;                                                   \
      FIELDS(CONDSIM_RECORD_ARRAY_RESERVE_LIKE)                                        \
      record_packed_.Reserve(record_backend_,                                          \
                             ::condsim::CheckedIndex(record_bytes_, "record bytes"));  \
      record_packed_host_.reserve(record_bytes_);                                      \
    }                                                                                  \
    View view() const {                                                                \
      View record_view_;                                                               \
      FIELDS(CONDSIM_RECORD_ARRAY_VIEW)                                                \
      return record_view_;                                                             \
    }                                                                                  \
    /* the same with writable fields (a CONDSIM_RECORD_OUT_VIEW of the same fields) */ \
    template <class OutView>                                                           \
    OutView out_view() {                                                               \
      OutView record_view_;                                                            \
      FIELDS(CONDSIM_RECORD_ARRAY_VIEW)                                                \
      return record_view_;                                                             \
    }                                                                                  \
    /* every field read back into the same-named member of `record_host_` */           \
    template <class Host>                                                              \
    void Download(Host* record_host_) const {                                          \
      FIELDS(CONDSIM_RECORD_ARRAY_DOWNLOAD)                                            \
    }                                                                                  \
                                                                                       \
   private:                                                                            \
    ::condsim::Array<unsigned char> record_packed_; /* the fields side by side */      \
    std::vector<unsigned char> record_packed_host_;                                    \
  };
