// The informers' cache holds each object packed into one string: its fields one after another,
// each string and count prefixed with its length. A struct of std::strings, maps and vectors
// costs several hundred bytes and a heap block per field before any data; a packed claim is one
// block of about its text's size. Objects are unpacked on each read (one per event or sync).
//
// One visitor per type lists the fields in order; Pack and Unpack both walk it, so they
// cannot disagree about the layout.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "objects.hpp"

namespace packed_detail {

class Writer {
 public:
  void operator()(const std::string& s) {
    Size(s.size());
    out_.append(s);
  }
  void operator()(bool b) { out_.push_back(b ? 1 : 0); }
  void operator()(const std::vector<std::string>& v) {
    Size(v.size());
    for (const auto& s : v) (*this)(s);
  }
  void operator()(const std::map<std::string, std::string>& m) {
    Size(m.size());
    for (const auto& [k, v] : m) {
      (*this)(k);
      (*this)(v);
    }
  }
  std::string Take() { return std::string(out_.data(), out_.size()); }  // a copy sized exactly

 private:
  // LEB128: 7 bits a byte, so lengths under 128 take one byte.
  void Size(size_t n) {
    while (n >= 0x80) {
      out_.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out_.push_back(static_cast<char>(n));
  }
  std::string out_;
};

// Reads what Writer wrote. The input comes from this process's own Writer, so a short or
// malformed record is a bug; it reads as empty fields rather than past the end.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  void operator()(std::string& s) {
    size_t n = Size();
    if (n > in_.size() - pos_) n = in_.size() - pos_;
    s.assign(in_, pos_, n);
    pos_ += n;
  }
  void operator()(bool& b) { b = pos_ < in_.size() && in_[pos_++] != 0; }
  void operator()(std::vector<std::string>& v) {
    size_t n = Size();
    v.clear();
    for (size_t i = 0; i < n && pos_ < in_.size(); ++i) (*this)(v.emplace_back());
  }
  void operator()(std::map<std::string, std::string>& m) {
    size_t n = Size();
    m.clear();
    for (size_t i = 0; i < n && pos_ < in_.size(); ++i) {
      std::string k;
      (*this)(k);
      (*this)(m[k]);
    }
  }

 private:
  size_t Size() {
    size_t n = 0;
    for (int shift = 0; pos_ < in_.size() && shift < 64; shift += 7) {
      const auto byte = static_cast<unsigned char>(in_[pos_++]);
      n |= static_cast<size_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    return n;
  }
  const std::string& in_;
  size_t pos_ = 0;
};

// The visitors: every field of objects.hpp's structs, in a fixed order. `M` is const or not.
template <class A, class M>
void Fields(A& a, M& m, ObjectMeta*) {
  a(m.name), a(m.namespace_), a(m.uid), a(m.resource_version), a(m.annotations), a(m.labels), a(m.finalizers),
      a(m.deleting);
}
template <class A, class C>
void Fields(A& a, C& c, Claim*) {
  Fields(a, c.meta, static_cast<ObjectMeta*>(nullptr));
  a(c.has_storage_class_name), a(c.storage_class_name), a(c.access_modes), a(c.volume_mode), a(c.storage_request),
      a(c.volume_name), a(c.has_selector), a(c.has_data_source), a(c.phase);
}
template <class A, class V>
void Fields(A& a, V& v, Volume*) {
  Fields(a, v.meta, static_cast<ObjectMeta*>(nullptr));
  a(v.capacity), a(v.access_modes), a(v.volume_mode), a(v.storage_class_name), a(v.reclaim_policy), a(v.mount_options),
      a(v.has_claim_ref), a(v.claim_ref.namespace_), a(v.claim_ref.name), a(v.claim_ref.uid), a(v.host_path),
      a(v.host_path_type), a(v.phase);
}
template <class A, class S>
void Fields(A& a, S& s, StorageClass*) {
  Fields(a, s.meta, static_cast<ObjectMeta*>(nullptr));
  a(s.provisioner), a(s.reclaim_policy), a(s.volume_binding_mode), a(s.parameters), a(s.mount_options);
}

}  // namespace packed_detail

// The packed form of obj (Claim, Volume, StorageClass).
template <class T>
std::string Pack(const T& obj) {
  packed_detail::Writer w;
  packed_detail::Fields(w, obj, static_cast<T*>(nullptr));
  return w.Take();
}

// The object Pack packed.
template <class T>
T Unpack(const std::string& record) {
  T obj;
  packed_detail::Reader r(record);
  packed_detail::Fields(r, obj, static_cast<T*>(nullptr));
  return obj;
}
