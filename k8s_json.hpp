// The one JSON mapping of the program's objects: Kubernetes API JSON ⇄ the plain structs of
// objects.hpp, bounded JSON parsing, watch-stream line splitting, list pages, and error bodies.
// Nothing here throws: picojson's exceptions are caught here, and every field is type-checked
// before it is read (picojson's get<T>() throws on a wrong type).
#pragma once
#include <picojson.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "objects.hpp"
#include "status.hpp"

namespace k8s_json_detail {

constexpr size_t kMaxJsonBytes = size_t{64} << 20;
constexpr int kMaxJsonDepth = 256;

inline const char* TypeName(const picojson::value& v) {
  if (v.is<picojson::null>()) return "null";
  if (v.is<bool>()) return "boolean";
  if (v.is<double>()) return "number";
  if (v.is<std::string>()) return "string";
  if (v.is<picojson::array>()) return "array";
  return "object";
}

inline Status WrongType(const std::string& path, const char* want, const picojson::value& got) {
  return Status::Invalid("field " + path + ": expected " + want + ", got " + TypeName(got));
}

inline std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The member `key` of `obj`, or nullptr if absent or null (both mean "not set" to the API).
inline const picojson::value* Member(const picojson::object& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->second.is<picojson::null>()) return nullptr;
  return &it->second;
}

// Reads typed members of one JSON object, naming the field (`path.key`) in every error.
// Absent or null members leave the output empty and are not errors.
class Fields {
 public:
  Fields(const picojson::object& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  bool Has(const std::string& key) const { return Member(obj_, key) != nullptr; }

  // Sets *out to the member object, or to nullptr if absent.
  Status Object(const std::string& key, const picojson::object** out) const {
    *out = nullptr;
    const picojson::value* v = Member(obj_, key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<picojson::object>()) return WrongType(Join(path_, key), "an object", *v);
    *out = &v->get<picojson::object>();
    return Status::Ok();
  }

  Status String(const std::string& key, std::string* out) const {
    out->clear();
    const picojson::value* v = Member(obj_, key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<std::string>()) return WrongType(Join(path_, key), "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }

  // A quantity: a string, or a JSON number written out in its shortest exact form.
  Status QuantityText(const std::string& key, std::string* out) const;

  Status Int(const std::string& key, int* out) const {
    *out = 0;
    const picojson::value* v = Member(obj_, key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<double>()) return WrongType(Join(path_, key), "an integer", *v);
    double d = v->get<double>();
    if (d != std::floor(d) || d < -2147483648.0 || d > 2147483647.0)
      return Status::Invalid("field " + Join(path_, key) + ": expected a 32-bit integer, got " + v->to_str());
    *out = static_cast<int>(d);
    return Status::Ok();
  }

  Status StringList(const std::string& key, std::vector<std::string>* out) const {
    out->clear();
    const picojson::value* v = Member(obj_, key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<picojson::array>()) return WrongType(Join(path_, key), "an array of strings", *v);
    const picojson::array& a = v->get<picojson::array>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is<std::string>()) return WrongType(Join(path_, key) + "[" + std::to_string(i) + "]", "a string", a[i]);
      out->push_back(a[i].get<std::string>());
    }
    return Status::Ok();
  }

  Status StringMap(const std::string& key, std::map<std::string, std::string>* out) const {
    out->clear();
    const picojson::value* v = Member(obj_, key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<picojson::object>()) return WrongType(Join(path_, key), "an object of strings", *v);
    for (const auto& kv : v->get<picojson::object>()) {
      if (!kv.second.is<std::string>())
        return WrongType(Join(path_, key) + "[\"" + kv.first + "\"]", "a string", kv.second);
      (*out)[kv.first] = kv.second.get<std::string>();
    }
    return Status::Ok();
  }

 private:
  const picojson::object& obj_;
  std::string path_;
};

// The shortest decimal text that reads back as exactly `d` ("10", "1.5", "0.1", "1e+21").
inline std::string NumberText(double d) {
  char buf[64];
  if (std::fabs(d) < 9007199254740992.0 && d == std::floor(d)) {
    std::snprintf(buf, sizeof buf, "%.0f", d);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

inline Status Fields::QuantityText(const std::string& key, std::string* out) const {
  out->clear();
  const picojson::value* v = Member(obj_, key);
  if (v == nullptr) return Status::Ok();
  if (v->is<double>()) {
    *out = NumberText(v->get<double>());
    return Status::Ok();
  }
  if (!v->is<std::string>()) return WrongType(Join(path_, key), "a quantity string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

// Returns the Status of `expr` from the enclosing function if it is an error (local to this file).
#define K8S_JSON_TRY(expr)             \
  do {                                 \
    Status k8s_json_status_ = (expr);  \
    if (!k8s_json_status_.ok()) return k8s_json_status_; \
  } while (0)

// The top-level object of `v`, checking `kind` when the JSON states one.
inline Status TopObject(const picojson::value& v, const std::string& kind, const picojson::object** out) {
  if (!v.is<picojson::object>()) return Status::Invalid(kind + ": expected a JSON object, got " + TypeName(v));
  *out = &v.get<picojson::object>();
  std::string got;
  K8S_JSON_TRY(Fields(**out, "").String("kind", &got));
  if (!got.empty() && got != kind) return Status::Invalid("expected kind " + kind + ", got " + got);
  return Status::Ok();
}

inline Status ReadMeta(const picojson::object& top, ObjectMeta* m) {
  const picojson::object* meta = nullptr;
  K8S_JSON_TRY(Fields(top, "").Object("metadata", &meta));
  if (meta == nullptr) return Status::Ok();
  Fields f(*meta, "metadata");
  K8S_JSON_TRY(f.String("name", &m->name));
  K8S_JSON_TRY(f.String("namespace", &m->namespace_));
  K8S_JSON_TRY(f.String("uid", &m->uid));
  K8S_JSON_TRY(f.String("resourceVersion", &m->resource_version));
  K8S_JSON_TRY(f.StringMap("annotations", &m->annotations));
  K8S_JSON_TRY(f.StringMap("labels", &m->labels));
  K8S_JSON_TRY(f.StringList("finalizers", &m->finalizers));
  m->deleting = f.Has("deletionTimestamp");
  return Status::Ok();
}

// "PersistentVolumeClaim ns/name" for error context, as far as the name is known.
inline std::string Describe(const std::string& kind, const ObjectMeta& m) {
  if (m.name.empty()) return kind;
  return kind + " " + (m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name);
}

inline Status ReadClaim(const picojson::object& top, Claim* c) {
  K8S_JSON_TRY(ReadMeta(top, &c->meta));
  const picojson::object* spec = nullptr;
  const picojson::object* status = nullptr;
  K8S_JSON_TRY(Fields(top, "").Object("spec", &spec));
  K8S_JSON_TRY(Fields(top, "").Object("status", &status));
  if (spec != nullptr) {
    Fields f(*spec, "spec");
    c->has_storage_class_name = f.Has("storageClassName");
    K8S_JSON_TRY(f.String("storageClassName", &c->storage_class_name));
    K8S_JSON_TRY(f.StringList("accessModes", &c->access_modes));
    K8S_JSON_TRY(f.String("volumeMode", &c->volume_mode));
    K8S_JSON_TRY(f.String("volumeName", &c->volume_name));
    const picojson::object* ignored = nullptr;
    K8S_JSON_TRY(f.Object("selector", &ignored));
    c->has_selector = ignored != nullptr;
    K8S_JSON_TRY(f.Object("dataSource", &ignored));
    c->has_data_source = ignored != nullptr;
    K8S_JSON_TRY(f.Object("dataSourceRef", &ignored));
    c->has_data_source = c->has_data_source || ignored != nullptr;
    const picojson::object* resources = nullptr;
    const picojson::object* requests = nullptr;
    K8S_JSON_TRY(f.Object("resources", &resources));
    if (resources != nullptr) K8S_JSON_TRY(Fields(*resources, "spec.resources").Object("requests", &requests));
    if (requests != nullptr)
      K8S_JSON_TRY(Fields(*requests, "spec.resources.requests").QuantityText("storage", &c->storage_request));
  }
  if (status != nullptr) K8S_JSON_TRY(Fields(*status, "status").String("phase", &c->phase));
  return Status::Ok();
}

inline Status ReadVolume(const picojson::object& top, Volume* v) {
  K8S_JSON_TRY(ReadMeta(top, &v->meta));
  const picojson::object* spec = nullptr;
  const picojson::object* status = nullptr;
  K8S_JSON_TRY(Fields(top, "").Object("spec", &spec));
  K8S_JSON_TRY(Fields(top, "").Object("status", &status));
  if (spec != nullptr) {
    Fields f(*spec, "spec");
    const picojson::object* capacity = nullptr;
    K8S_JSON_TRY(f.Object("capacity", &capacity));
    if (capacity != nullptr) K8S_JSON_TRY(Fields(*capacity, "spec.capacity").QuantityText("storage", &v->capacity));
    K8S_JSON_TRY(f.StringList("accessModes", &v->access_modes));
    K8S_JSON_TRY(f.String("volumeMode", &v->volume_mode));
    K8S_JSON_TRY(f.String("storageClassName", &v->storage_class_name));
    K8S_JSON_TRY(f.String("persistentVolumeReclaimPolicy", &v->reclaim_policy));
    K8S_JSON_TRY(f.StringList("mountOptions", &v->mount_options));
    const picojson::object* claim_ref = nullptr;
    K8S_JSON_TRY(f.Object("claimRef", &claim_ref));
    v->has_claim_ref = claim_ref != nullptr;
    if (claim_ref != nullptr) {
      Fields r(*claim_ref, "spec.claimRef");
      K8S_JSON_TRY(r.String("namespace", &v->claim_ref.namespace_));
      K8S_JSON_TRY(r.String("name", &v->claim_ref.name));
      K8S_JSON_TRY(r.String("uid", &v->claim_ref.uid));
    }
    const picojson::object* host_path = nullptr;
    K8S_JSON_TRY(f.Object("hostPath", &host_path));
    if (host_path != nullptr) {
      Fields h(*host_path, "spec.hostPath");
      K8S_JSON_TRY(h.String("path", &v->host_path));
      K8S_JSON_TRY(h.String("type", &v->host_path_type));
    }
  }
  if (status != nullptr) K8S_JSON_TRY(Fields(*status, "status").String("phase", &v->phase));
  return Status::Ok();
}

inline Status ReadStorageClass(const picojson::object& top, StorageClass* sc) {
  K8S_JSON_TRY(ReadMeta(top, &sc->meta));
  Fields f(top, "");
  K8S_JSON_TRY(f.String("provisioner", &sc->provisioner));
  K8S_JSON_TRY(f.String("reclaimPolicy", &sc->reclaim_policy));
  K8S_JSON_TRY(f.String("volumeBindingMode", &sc->volume_binding_mode));
  K8S_JSON_TRY(f.StringMap("parameters", &sc->parameters));
  K8S_JSON_TRY(f.StringList("mountOptions", &sc->mount_options));
  return Status::Ok();
}

inline Status ReadEvent(const picojson::object& top, Event* e) {
  K8S_JSON_TRY(ReadMeta(top, &e->meta));
  Fields f(top, "");
  const picojson::object* involved = nullptr;
  K8S_JSON_TRY(f.Object("involvedObject", &involved));
  static const picojson::object kEmpty;
  Fields io(involved != nullptr ? *involved : kEmpty, "involvedObject");
  K8S_JSON_TRY(io.String("kind", &e->involved_kind));
  K8S_JSON_TRY(io.String("namespace", &e->involved_namespace));
  K8S_JSON_TRY(io.String("name", &e->involved_name));
  K8S_JSON_TRY(io.String("uid", &e->involved_uid));
  K8S_JSON_TRY(io.String("apiVersion", &e->involved_api_version));
  K8S_JSON_TRY(io.String("resourceVersion", &e->involved_resource_version));
  K8S_JSON_TRY(f.String("type", &e->type));
  K8S_JSON_TRY(f.String("reason", &e->reason));
  K8S_JSON_TRY(f.String("message", &e->message));
  K8S_JSON_TRY(f.Int("count", &e->count));
  K8S_JSON_TRY(f.String("firstTimestamp", &e->first_timestamp));
  K8S_JSON_TRY(f.String("lastTimestamp", &e->last_timestamp));
  const picojson::object* source = nullptr;
  K8S_JSON_TRY(f.Object("source", &source));
  if (source != nullptr) K8S_JSON_TRY(Fields(*source, "source").String("component", &e->source_component));
  if (e->source_component.empty()) K8S_JSON_TRY(f.String("reportingComponent", &e->source_component));
  return Status::Ok();
}

// Maps one object with `read`, adding "<Kind> <ns/name>" to any error.
template <class T>
Result<T> FromJson(const picojson::value& v, const std::string& kind, Status (*read)(const picojson::object&, T*)) {
  const picojson::object* top = nullptr;
  Status s = TopObject(v, kind, &top);
  if (!s.ok()) return s;
  T out;
  s = read(*top, &out);
  if (!s.ok()) return s.Wrap(Describe(kind, out.meta));
  return out;
}

inline picojson::value StringArray(const std::vector<std::string>& items) {
  picojson::array a;
  for (const auto& s : items) a.emplace_back(s);
  return picojson::value(std::move(a));
}

inline picojson::value StringObject(const std::map<std::string, std::string>& items) {
  picojson::object o;
  for (const auto& kv : items) o[kv.first] = picojson::value(kv.second);
  return picojson::value(std::move(o));
}

// Sets o[key] = value unless value is empty.
inline void SetIfNotEmpty(picojson::object* o, const char* key, const std::string& value) {
  if (!value.empty()) (*o)[key] = picojson::value(value);
}

// `text` made one line: control characters become spaces.
inline std::string OneLine(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

// The first `max` bytes of `text`, not splitting a UTF-8 sequence.
inline std::string CutUtf8(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0u) == 0x80u) --end;
  return text.substr(0, end);
}

// Length of the UTF-8 sequence starting at s[i] if it is well formed (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), else 0.
inline size_t Utf8SequenceLength(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  const unsigned b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned b1 = byte(i + 1);
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // overlong
    if (b0 == 0xED && b1 > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned b1 = byte(i + 1);
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Checks what picojson does not: UTF-8 validity, nesting depth (picojson recurses) and numbers
// beyond double's range (picojson throws on them). Returns the first problem's offset in *at.
inline bool PreScan(const std::string& text, size_t* at, std::string* why) {
  int depth = 0;
  bool in_string = false;
  const size_t size = text.size();
  for (size_t i = 0; i < size;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(text, i);
      if (n == 0) {
        *at = i;
        *why = "invalid UTF-8";
        return false;
      }
      i += n;
      continue;
    }
    if (in_string) {  // the common case: plain ASCII inside a string
      if (c == '"') in_string = false;
      i += c == '\\' ? 2 : 1;  // an escape: skip the escaped character
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = text.find_first_not_of("0123456789+-.eE", i);
      if (end == std::string::npos) end = size;
      const std::string number = text.substr(i, end - i);
      if (std::isinf(std::strtod(number.c_str(), nullptr))) {
        *at = i;
        *why = "number " + CutUtf8(number, 40) + " is beyond the range of a double";
        return false;
      }
      i = end;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        *at = i;
        *why = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
        return false;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
    ++i;
  }
  return true;
}

// Runs picojson's parser with `ctx` over the whole of `text` (see ParseJson for the checks
// and the errors). Never throws.
template <class Context>
Status ParseJsonWith(const std::string& text, Context& ctx) {
  auto fail = [](size_t at, const std::string& why) {
    return Status::Invalid("invalid JSON at byte " + std::to_string(at) + ": " + why);
  };
  if (text.size() > kMaxJsonBytes)
    return Status::Invalid("invalid JSON: " + std::to_string(text.size()) + " bytes is over the 64 MiB limit");
  size_t at = 0;
  std::string why;
  if (!PreScan(text, &at, &why)) return fail(at, why);
  std::string::const_iterator end;
  try {
    picojson::input<std::string::const_iterator> in(text.begin(), text.end());
    bool parsed = picojson::_parse(ctx, in);
    end = in.cur();
    if (!parsed) {
      const size_t at = static_cast<size_t>(end - text.begin());
      if (at >= text.size()) return fail(at, "unexpected end of input");
      return fail(at, "syntax error near \"" + OneLine(CutUtf8(text.substr(at > 0 ? at - 1 : 0, 20), 20)) + "\"");
    }
  } catch (...) {  // PreScan rules out the overflow picojson throws on; this is a backstop
    return Status::Invalid("invalid JSON: the parser failed");
  }
  for (auto it = end; it != text.end(); ++it) {
    if (*it != ' ' && *it != '\t' && *it != '\n' && *it != '\r')
      return fail(static_cast<size_t>(it - text.begin()), "unexpected data after the value");
  }
  return Status::Ok();
}

#undef K8S_JSON_TRY

}  // namespace k8s_json_detail

// Parses JSON text. Errors (kInvalid) say "invalid JSON at byte N: why" for bad syntax,
// trailing data, invalid UTF-8, nesting deeper than 256 levels, or a number beyond double's
// range; text over 64 MiB is refused unread. Never throws.
inline Result<picojson::value> ParseJson(const std::string& text) {
  picojson::value v;
  picojson::default_parse_context ctx(&v, k8s_json_detail::kMaxJsonDepth);
  Status s = k8s_json_detail::ParseJsonWith(text, ctx);
  if (!s.ok()) return s;
  return v;
}

// A PersistentVolumeClaim. Absent or null fields stay empty; a field of the wrong JSON type,
// a non-object, or a different "kind" is an error (kInvalid) naming the field and the claim.
inline Result<Claim> ClaimFromJson(const picojson::value& v) {
  return k8s_json_detail::FromJson<Claim>(v, "PersistentVolumeClaim", k8s_json_detail::ReadClaim);
}

// A PersistentVolume; errors as for ClaimFromJson.
inline Result<Volume> VolumeFromJson(const picojson::value& v) {
  return k8s_json_detail::FromJson<Volume>(v, "PersistentVolume", k8s_json_detail::ReadVolume);
}

// A storage.k8s.io/v1 StorageClass; errors as for ClaimFromJson.
inline Result<StorageClass> StorageClassFromJson(const picojson::value& v) {
  return k8s_json_detail::FromJson<StorageClass>(v, "StorageClass", k8s_json_detail::ReadStorageClass);
}

// A core/v1 Event; errors as for ClaimFromJson. Absent count reads as 0; the source
// component falls back to reportingComponent.
inline Result<Event> EventFromJson(const picojson::value& v) {
  return k8s_json_detail::FromJson<Event>(v, "Event", k8s_json_detail::ReadEvent);
}

// The PV to POST to /api/v1/persistentvolumes: apiVersion, kind, metadata (name, and
// annotations, labels, finalizers when present), spec (capacity.storage, accessModes,
// volumeMode and storageClassName and mountOptions when set, persistentVolumeReclaimPolicy,
// claimRef when has_claim_ref, hostPath when host_path is set). Status is the server's.
inline picojson::value VolumeToJson(const Volume& v) {
  using namespace k8s_json_detail;
  picojson::object meta;
  meta["name"] = picojson::value(v.meta.name);
  if (!v.meta.annotations.empty()) meta["annotations"] = StringObject(v.meta.annotations);
  if (!v.meta.labels.empty()) meta["labels"] = StringObject(v.meta.labels);
  if (!v.meta.finalizers.empty()) meta["finalizers"] = StringArray(v.meta.finalizers);

  picojson::object spec;
  picojson::object capacity;
  capacity["storage"] = picojson::value(v.capacity);
  spec["capacity"] = picojson::value(std::move(capacity));
  spec["accessModes"] = StringArray(v.access_modes);
  SetIfNotEmpty(&spec, "volumeMode", v.volume_mode);
  SetIfNotEmpty(&spec, "storageClassName", v.storage_class_name);
  SetIfNotEmpty(&spec, "persistentVolumeReclaimPolicy", v.reclaim_policy);
  if (!v.mount_options.empty()) spec["mountOptions"] = StringArray(v.mount_options);
  if (v.has_claim_ref) {
    picojson::object ref;
    ref["kind"] = picojson::value("PersistentVolumeClaim");
    ref["apiVersion"] = picojson::value("v1");
    ref["namespace"] = picojson::value(v.claim_ref.namespace_);
    ref["name"] = picojson::value(v.claim_ref.name);
    SetIfNotEmpty(&ref, "uid", v.claim_ref.uid);
    spec["claimRef"] = picojson::value(std::move(ref));
  }
  if (!v.host_path.empty()) {
    picojson::object host_path;
    host_path["path"] = picojson::value(v.host_path);
    SetIfNotEmpty(&host_path, "type", v.host_path_type);
    spec["hostPath"] = picojson::value(std::move(host_path));
  }

  picojson::object pv;
  pv["apiVersion"] = picojson::value("v1");
  pv["kind"] = picojson::value("PersistentVolume");
  pv["metadata"] = picojson::value(std::move(meta));
  pv["spec"] = picojson::value(std::move(spec));
  return picojson::value(std::move(pv));
}

// The core/v1 Event to POST to /api/v1/namespaces/<ns>/events. Empty strings are left out
// (e.g. involvedObject.namespace of a cluster-scoped object, unset timestamps);
// reportingComponent repeats source.component.
inline picojson::value EventToJson(const Event& e) {
  using namespace k8s_json_detail;
  picojson::object meta;
  meta["name"] = picojson::value(e.meta.name);
  SetIfNotEmpty(&meta, "namespace", e.meta.namespace_);

  picojson::object involved;
  SetIfNotEmpty(&involved, "kind", e.involved_kind);
  SetIfNotEmpty(&involved, "namespace", e.involved_namespace);
  SetIfNotEmpty(&involved, "name", e.involved_name);
  SetIfNotEmpty(&involved, "uid", e.involved_uid);
  SetIfNotEmpty(&involved, "apiVersion", e.involved_api_version);
  SetIfNotEmpty(&involved, "resourceVersion", e.involved_resource_version);

  picojson::object ev;
  ev["apiVersion"] = picojson::value("v1");
  ev["kind"] = picojson::value("Event");
  ev["metadata"] = picojson::value(std::move(meta));
  ev["involvedObject"] = picojson::value(std::move(involved));
  SetIfNotEmpty(&ev, "reason", e.reason);
  SetIfNotEmpty(&ev, "message", e.message);
  SetIfNotEmpty(&ev, "type", e.type);
  ev["count"] = picojson::value(static_cast<double>(e.count));
  SetIfNotEmpty(&ev, "firstTimestamp", e.first_timestamp);
  SetIfNotEmpty(&ev, "lastTimestamp", e.last_timestamp);
  if (!e.source_component.empty()) {
    picojson::object source;
    source["component"] = picojson::value(e.source_component);
    ev["source"] = picojson::value(std::move(source));
    ev["reportingComponent"] = picojson::value(e.source_component);
  }
  return picojson::value(std::move(ev));
}

// One line for logs and events from an error answer. A metav1.Status body gives
// "<message> (<reason>, <http_code>)", e.g. `persistentvolumes "x" already exists
// (AlreadyExists, 409)`; any other body gives its first 200 bytes and " (<http_code>)";
// an empty body gives "empty response (<http_code>)". Control characters become spaces.
inline std::string StatusMessage(int http_code, const std::string& body) {
  using namespace k8s_json_detail;
  const std::string code = std::to_string(http_code);
  Result<picojson::value> json = ParseJson(body);
  if (json.ok() && json->is<picojson::object>()) {
    Fields f(json->get<picojson::object>(), "");
    std::string kind, message, reason;
    if (f.String("kind", &kind).ok() && f.String("message", &message).ok() && f.String("reason", &reason).ok() &&
        (!message.empty() || (kind == "Status" && !reason.empty()))) {
      const std::string text = message.empty() ? reason : message;
      const std::string tail = message.empty() || reason.empty() ? code : reason + ", " + code;
      return OneLine(CutUtf8(text, 1000) + " (" + CutUtf8(tail, 200) + ")");
    }
  }
  if (body.empty()) return "empty response (" + code + ")";
  return OneLine(CutUtf8(body, 200)) + " (" + code + ")";
}

// Splits a watch stream into lines as its chunks arrive, in pieces of any size. Not thread-safe.
class WatchLineSplitter {
 public:
  // Lines longer than max_line bytes (without the "\n") are an error.
  explicit WatchLineSplitter(size_t max_line = size_t{16} << 20) : max_line_(max_line) {}

  // Appends n bytes and calls on_line for each line completed, without its "\n" (empty lines
  // are skipped; a trailing "\r" is kept). Returns an error (kInvalid) as soon as a line
  // grows beyond max_line; the stream must then be dropped, and every later Feed fails too.
  Status Feed(const char* data, size_t n, const std::function<void(const std::string&)>& on_line) {
    if (!failed_.ok()) return failed_;
    size_t start = 0;
    while (start < n) {
      const void* nl = std::memchr(data + start, '\n', n - start);
      const size_t end = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - data) : n;
      if (pending_.size() + (end - start) > max_line_) {
        failed_ = Status::Invalid("watch line longer than " + std::to_string(max_line_) + " bytes");
        pending_.clear();
        return failed_;
      }
      pending_.append(data + start, end - start);
      if (nl == nullptr) break;
      if (!pending_.empty()) {
        std::string line;
        line.swap(pending_);
        on_line(line);
      }
      start = end + 1;
    }
    return Status::Ok();
  }

  // Bytes received after the last "\n" (an incomplete line).
  size_t pending() const { return pending_.size(); }

 private:
  size_t max_line_;
  std::string pending_;
  Status failed_;
};

// One watch event: type ADDED | MODIFIED | DELETED | BOOKMARK | ERROR, and its object (for
// ERROR, a metav1.Status).
struct WatchEvent {
  std::string type;
  picojson::value object;
};

// Parses one watch line. Errors (kInvalid): bad JSON, no string "type", no object "object".
inline Result<WatchEvent> ParseWatchEvent(const std::string& line) {
  Result<picojson::value> json = ParseJson(line);
  if (!json.ok()) return json.status().Wrap("watch event");
  if (!json->is<picojson::object>()) return Status::Invalid("watch event: expected a JSON object");
  picojson::object& o = json->get<picojson::object>();
  WatchEvent ev;
  Status s = k8s_json_detail::Fields(o, "").String("type", &ev.type);
  if (!s.ok()) return s.Wrap("watch event");
  if (ev.type.empty()) return Status::Invalid("watch event: no type");
  auto it = o.find("object");
  if (it == o.end() || !it->second.is<picojson::object>())
    return Status::Invalid("watch event " + ev.type + ": expected an object in field object");
  ev.object = std::move(it->second);  // not a copy: a claim's tree is hundreds of allocations
  return ev;
}

// One page of a list answer: metadata.resourceVersion, metadata.continue, and how many items
// it held (each went to ParseList's callback).
struct ListPage {
  std::string resource_version;
  std::string continue_token;
  size_t items = 0;
};

namespace k8s_json_detail {

// picojson parse contexts for a list answer that never hold the whole page as one tree (500
// PVs are megabytes of small allocations): the top object's other members are kept (they are
// small), and each element of "items" is parsed alone, handed to a callback and dropped. A
// value of the wrong JSON type stops the parse with *error set.
class TypedContext : public picojson::deny_parse_context {
 public:
  TypedContext(const char* what, const char* want, Status* error) : what_(what), want_(want), error_(error) {}
  bool set_bool(bool) { return Wrong("boolean"); }
#ifdef PICOJSON_USE_INT64
  bool set_int64(int64_t) { return Wrong("number"); }
#endif
  bool set_number(double) { return Wrong("number"); }
  template <class Iter>
  bool parse_string(picojson::input<Iter>&) { return Wrong("string"); }
  bool parse_object_stop() { return true; }  // deny_parse_context lacks it

 protected:
  bool Wrong(const char* got) {
    *error_ = Status::Invalid((*what_ ? std::string(what_) + ": " : std::string()) + "expected " + want_ + ", got " + got);
    return false;
  }
  const char *what_, *want_;
  Status* error_;
};

class ListItemsContext : public TypedContext {
 public:
  ListItemsContext(const std::function<void(const picojson::value&)>& on_item, size_t* count, Status* error)
      : TypedContext("field items", "an array", error), on_item_(on_item), count_(count) {}
  bool set_null() { return true; }  // the same as no items
  bool parse_array_start() { return true; }
  template <class Iter>
  bool parse_array_item(picojson::input<Iter>& in, size_t) {
    picojson::value item;
    picojson::default_parse_context ctx(&item, kMaxJsonDepth - 2);
    if (!picojson::_parse(ctx, in)) return false;
    ++*count_;
    on_item_(item);
    return true;
  }
  bool parse_array_stop(size_t) { return true; }
  bool parse_object_start() { return Wrong("object"); }

 private:
  const std::function<void(const picojson::value&)>& on_item_;
  size_t* count_;
};

class ListContext : public TypedContext {
 public:
  ListContext(const std::function<void(const picojson::value&)>& on_item, size_t* count, Status* error)
      : TypedContext("", "a JSON object", error), on_item_(on_item), count_(count) {}
  bool set_null() { return Wrong("null"); }
  bool parse_array_start() { return Wrong("array"); }
  bool parse_object_start() { return true; }
  template <class Iter>
  bool parse_object_item(picojson::input<Iter>& in, const std::string& key) {
    if (key != "items") {
      picojson::default_parse_context ctx(&others_[key], kMaxJsonDepth - 1);
      return picojson::_parse(ctx, in);
    }
    if (seen_items_) {
      *error_ = Status::Invalid("field items appears twice");
      return false;
    }
    seen_items_ = true;
    ListItemsContext ctx(on_item_, count_, error_);
    return picojson::_parse(ctx, in);
  }
  // The members other than items.
  const picojson::object& others() const { return others_; }

 private:
  const std::function<void(const picojson::value&)>& on_item_;
  size_t* count_;
  picojson::object others_;
  bool seen_items_ = false;
};

}  // namespace k8s_json_detail

// Reads a list answer, calling on_item with each element of items as it is parsed, in order.
// Errors (kInvalid): bad JSON (as ParseJson), not an object, wrong field types, items not an
// array; items may already have been handed over when an error is found later in the text.
// Absent or null items is an empty list.
inline Result<ListPage> ParseList(const std::string& text, const std::function<void(const picojson::value&)>& on_item) {
  using namespace k8s_json_detail;
  ListPage page;
  Status typed;
  ListContext ctx(on_item, &page.items, &typed);
  Status s = ParseJsonWith(text, ctx);
  if (!typed.ok()) return typed.Wrap("list");
  if (!s.ok()) return s.Wrap("list");
  const picojson::object* meta = nullptr;
  s = Fields(ctx.others(), "").Object("metadata", &meta);
  if (s.ok() && meta != nullptr) s = Fields(*meta, "metadata").String("resourceVersion", &page.resource_version);
  if (s.ok() && meta != nullptr) s = Fields(*meta, "metadata").String("continue", &page.continue_token);
  if (!s.ok()) return s.Wrap("list");
  return page;
}
