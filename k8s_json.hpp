// The one JSON mapping of the program's objects: Kubernetes API JSON ⇄ the plain structs of
// objects.hpp, watch-stream line splitting, list pages, and error bodies. Reading goes through
// JsonDoc (json_doc.hpp), straight from the text into the structs. The PVs and events the
// program POSTs are written straight to text (JsonObjectWriter); other writes build picojson
// values. Nothing here throws, and every field is type-checked before it is read.
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
#include <string_view>
#include <utility>
#include <vector>

#include "json_doc.hpp"
#include "json_write.hpp"
#include "objects.hpp"
#include "status.hpp"

// What the readers keep of an object's annotations and labels: all of them (the default), or
// only the annotations named and no labels (for the informers' caches, which keep no more:
// maps built only to be thrown away were 4 % of the provisioner's instructions; callgrind).
// Every annotation and label is type-checked either way.
struct MetaKeep {
  bool all = true;
  std::vector<std::string_view> annotations;  // when !all
};

namespace k8s_json_detail {

using json_text::CutUtf8;
using json_text::OneLine;

// "path.key", or "key" at the top.
inline std::string FieldName(std::string_view path, std::string_view key) {
  std::string field(path);
  if (!field.empty()) field += '.';
  return field += key;
}

inline Status WrongType(std::string_view path, std::string_view key, const char* want, JsonRef got) {
  return Status::Invalid("field " + FieldName(path, key) + ": expected " + want + ", got " + JsonTypeName(got.type()));
}

// Reads typed members of one JSON object, naming the field (`path.key`) in every error.
// Absent or null members leave the output empty and are not errors; so does an absent object.
class Fields {
 public:
  Fields(JsonRef obj, std::string_view path) : obj_(obj), path_(path) {}

  bool Has(std::string_view key) const { return !obj_.Get(key).unset(); }

  // Sets *out to the member object, or to an absent JsonRef if unset.
  Status Object(std::string_view key, JsonRef* out) const {
    *out = JsonRef();
    JsonRef v = obj_.Get(key);
    if (v.unset()) return Status::Ok();
    if (!v.is(JsonType::kObject)) return WrongType(path_, key, "an object", v);
    *out = v;
    return Status::Ok();
  }

  Status String(std::string_view key, std::string* out) const {
    out->clear();
    JsonRef v = obj_.Get(key);
    if (v.unset()) return Status::Ok();
    if (!v.is(JsonType::kString)) return WrongType(path_, key, "a string", v);
    *out = v.String();
    return Status::Ok();
  }

  // A quantity: a string, or a JSON number written out in its shortest exact form.
  Status QuantityText(std::string_view key, std::string* out) const;

  Status Int(std::string_view key, int* out) const {
    *out = 0;
    JsonRef v = obj_.Get(key);
    if (v.unset()) return Status::Ok();
    if (!v.is(JsonType::kNumber)) return WrongType(path_, key, "an integer", v);
    double d = v.Number();
    if (d != std::floor(d) || d < -2147483648.0 || d > 2147483647.0)
      return Status::Invalid("field " + FieldName(path_, key) + ": expected a 32-bit integer, got " + std::string(v.Text()));
    *out = static_cast<int>(d);
    return Status::Ok();
  }

  Status StringList(std::string_view key, std::vector<std::string>* out) const {
    out->clear();
    JsonRef v = obj_.Get(key);
    if (v.unset()) return Status::Ok();
    if (!v.is(JsonType::kArray)) return WrongType(path_, key, "an array of strings", v);
    Status s;
    v.ForEachItem([&](size_t i, JsonRef item) {
      if (!s.ok()) return;
      if (!item.is(JsonType::kString)) s = WrongType(path_, std::string(key) + "[" + std::to_string(i) + "]", "a string", item);
      else out->push_back(item.String());
    });
    return s;
  }

  Status StringMap(std::string_view key, std::map<std::string, std::string>* out) const {
    return StringMap(key, out, nullptr);
  }
  // StringMap keeping only the members named in *only (all when null); every member is
  // type-checked either way.
  Status StringMap(std::string_view key, std::map<std::string, std::string>* out,
                   const std::vector<std::string_view>* only) const {
    out->clear();
    JsonRef v = obj_.Get(key);
    if (v.unset()) return Status::Ok();
    if (!v.is(JsonType::kObject)) return WrongType(path_, key, "an object of strings", v);
    Status s;
    v.ForEachMemberRef([&](JsonRef name, JsonRef item) {
      if (!s.ok()) return;
      if (!item.is(JsonType::kString)) {
        s = WrongType(path_, std::string(key) + "[\"" + name.String() + "\"]", "a string", item);
      } else if (only == nullptr) {
        (*out)[name.String()] = item.String();
      } else {
        for (std::string_view k : *only)
          if (name.StringIs(k)) (*out)[std::string(k)] = item.String();
      }
    });
    return s;
  }

 private:
  JsonRef obj_;
  std::string_view path_;
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

inline Status Fields::QuantityText(std::string_view key, std::string* out) const {
  out->clear();
  JsonRef v = obj_.Get(key);
  if (v.unset()) return Status::Ok();
  if (v.is(JsonType::kNumber)) {
    *out = NumberText(v.Number());
    return Status::Ok();
  }
  if (!v.is(JsonType::kString)) return WrongType(path_, key, "a quantity string", v);
  *out = v.String();
  return Status::Ok();
}

// Returns the Status of `expr` from the enclosing function if it is an error (local to this file).
#define K8S_JSON_TRY(expr)             \
  do {                                 \
    Status k8s_json_status_ = (expr);  \
    if (!k8s_json_status_.ok()) return k8s_json_status_; \
  } while (0)

// The top-level object of `v`, checking `kind` when the JSON states one.
inline Status TopObject(JsonRef v, const std::string& kind) {
  if (!v.is(JsonType::kObject))
    return Status::Invalid(kind + ": expected a JSON object, got " + (v.absent() ? "nothing" : JsonTypeName(v.type())));
  std::string got;
  K8S_JSON_TRY(Fields(v, "").String("kind", &got));
  if (!got.empty() && got != kind) return Status::Invalid("expected kind " + kind + ", got " + got);
  return Status::Ok();
}

inline Status ReadMeta(JsonRef top, ObjectMeta* m, const MetaKeep& keep = MetaKeep()) {
  JsonRef meta;
  K8S_JSON_TRY(Fields(top, "").Object("metadata", &meta));
  if (meta.absent()) return Status::Ok();
  Fields f(meta, "metadata");
  K8S_JSON_TRY(f.String("name", &m->name));
  K8S_JSON_TRY(f.String("namespace", &m->namespace_));
  K8S_JSON_TRY(f.String("uid", &m->uid));
  K8S_JSON_TRY(f.String("resourceVersion", &m->resource_version));
  static const std::vector<std::string_view> kNone;
  K8S_JSON_TRY(f.StringMap("annotations", &m->annotations, keep.all ? nullptr : &keep.annotations));
  K8S_JSON_TRY(f.StringMap("labels", &m->labels, keep.all ? nullptr : &kNone));
  K8S_JSON_TRY(f.StringList("finalizers", &m->finalizers));
  m->deleting = f.Has("deletionTimestamp");
  return Status::Ok();
}

// "PersistentVolumeClaim ns/name" for error context, as far as the name is known.
inline std::string Describe(const std::string& kind, const ObjectMeta& m) {
  if (m.name.empty()) return kind;
  return kind + " " + (m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name);
}

inline Status ReadClaim(JsonRef top, Claim* c, const MetaKeep& keep) {
  K8S_JSON_TRY(ReadMeta(top, &c->meta, keep));
  JsonRef spec;
  JsonRef status;
  K8S_JSON_TRY(Fields(top, "").Object("spec", &spec));
  K8S_JSON_TRY(Fields(top, "").Object("status", &status));
  if (!spec.absent()) {
    Fields f(spec, "spec");
    c->has_storage_class_name = f.Has("storageClassName");
    K8S_JSON_TRY(f.String("storageClassName", &c->storage_class_name));
    K8S_JSON_TRY(f.StringList("accessModes", &c->access_modes));
    K8S_JSON_TRY(f.String("volumeMode", &c->volume_mode));
    K8S_JSON_TRY(f.String("volumeName", &c->volume_name));
    JsonRef ignored;
    K8S_JSON_TRY(f.Object("selector", &ignored));
    c->has_selector = !ignored.absent();
    K8S_JSON_TRY(f.Object("dataSource", &ignored));
    c->has_data_source = !ignored.absent();
    K8S_JSON_TRY(f.Object("dataSourceRef", &ignored));
    c->has_data_source = c->has_data_source || !ignored.absent();
    JsonRef resources, requests;
    K8S_JSON_TRY(f.Object("resources", &resources));
    if (!resources.absent()) K8S_JSON_TRY(Fields(resources, "spec.resources").Object("requests", &requests));
    if (!requests.absent())
      K8S_JSON_TRY(Fields(requests, "spec.resources.requests").QuantityText("storage", &c->storage_request));
  }
  if (!status.absent()) K8S_JSON_TRY(Fields(status, "status").String("phase", &c->phase));
  return Status::Ok();
}

inline Status ReadVolume(JsonRef top, Volume* v, const MetaKeep& keep) {
  K8S_JSON_TRY(ReadMeta(top, &v->meta, keep));
  JsonRef spec;
  JsonRef status;
  K8S_JSON_TRY(Fields(top, "").Object("spec", &spec));
  K8S_JSON_TRY(Fields(top, "").Object("status", &status));
  if (!spec.absent()) {
    Fields f(spec, "spec");
    JsonRef capacity;
    K8S_JSON_TRY(f.Object("capacity", &capacity));
    if (!capacity.absent()) K8S_JSON_TRY(Fields(capacity, "spec.capacity").QuantityText("storage", &v->capacity));
    K8S_JSON_TRY(f.StringList("accessModes", &v->access_modes));
    K8S_JSON_TRY(f.String("volumeMode", &v->volume_mode));
    K8S_JSON_TRY(f.String("storageClassName", &v->storage_class_name));
    K8S_JSON_TRY(f.String("persistentVolumeReclaimPolicy", &v->reclaim_policy));
    K8S_JSON_TRY(f.StringList("mountOptions", &v->mount_options));
    JsonRef claim_ref;
    K8S_JSON_TRY(f.Object("claimRef", &claim_ref));
    v->has_claim_ref = !claim_ref.absent();
    if (!claim_ref.absent()) {
      Fields r(claim_ref, "spec.claimRef");
      K8S_JSON_TRY(r.String("namespace", &v->claim_ref.namespace_));
      K8S_JSON_TRY(r.String("name", &v->claim_ref.name));
      K8S_JSON_TRY(r.String("uid", &v->claim_ref.uid));
    }
    JsonRef host_path;
    K8S_JSON_TRY(f.Object("hostPath", &host_path));
    if (!host_path.absent()) {
      Fields h(host_path, "spec.hostPath");
      K8S_JSON_TRY(h.String("path", &v->host_path));
      K8S_JSON_TRY(h.String("type", &v->host_path_type));
    }
  }
  if (!status.absent()) K8S_JSON_TRY(Fields(status, "status").String("phase", &v->phase));
  return Status::Ok();
}

inline Status ReadStorageClass(JsonRef top, StorageClass* sc) {
  K8S_JSON_TRY(ReadMeta(top, &sc->meta));
  Fields f(top, "");
  K8S_JSON_TRY(f.String("provisioner", &sc->provisioner));
  K8S_JSON_TRY(f.String("reclaimPolicy", &sc->reclaim_policy));
  K8S_JSON_TRY(f.String("volumeBindingMode", &sc->volume_binding_mode));
  K8S_JSON_TRY(f.StringMap("parameters", &sc->parameters));
  K8S_JSON_TRY(f.StringList("mountOptions", &sc->mount_options));
  return Status::Ok();
}

inline Status ReadEvent(JsonRef top, Event* e) {
  K8S_JSON_TRY(ReadMeta(top, &e->meta));
  Fields f(top, "");
  JsonRef involved;
  K8S_JSON_TRY(f.Object("involvedObject", &involved));
  Fields io(involved, "involvedObject");
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
  JsonRef source;
  K8S_JSON_TRY(f.Object("source", &source));
  if (!source.absent()) K8S_JSON_TRY(Fields(source, "source").String("component", &e->source_component));
  if (e->source_component.empty()) K8S_JSON_TRY(f.String("reportingComponent", &e->source_component));
  return Status::Ok();
}

// Maps one object with read(v, &out), adding "<Kind> <ns/name>" to any error.
template <class T, class Read>
Result<T> FromJson(JsonRef v, const std::string& kind, Read read) {
  Status s = TopObject(v, kind);
  if (!s.ok()) return s;
  T out;
  s = read(v, &out);
  if (!s.ok()) return s.Wrap(Describe(kind, out.meta));
  return out;
}

#undef K8S_JSON_TRY

// The picojson value of a read JSON value (for the few places that edit and write JSON back).
inline picojson::value ToPicojson(JsonRef v) {
  switch (v.absent() ? JsonType::kNull : v.type()) {
    case JsonType::kNull: return picojson::value();
    case JsonType::kBool: return picojson::value(v.Bool());
    case JsonType::kNumber: return picojson::value(v.Number());
    case JsonType::kString: return picojson::value(v.String());
    case JsonType::kArray: {
      picojson::array a;
      v.ForEachItem([&](size_t, JsonRef item) { a.push_back(ToPicojson(item)); });
      return picojson::value(std::move(a));
    }
    case JsonType::kObject: {
      picojson::object o;
      v.ForEachMember([&](std::string key, JsonRef item) { o[std::move(key)] = ToPicojson(item); });
      return picojson::value(std::move(o));
    }
  }
  return picojson::value();
}

}  // namespace k8s_json_detail

// Parses JSON text into a picojson value, with JsonDoc::Read's checks and errors. Never
// throws. For the cold paths that edit JSON; the hot paths read JsonDoc directly.
inline Result<picojson::value> ParseJson(const std::string& text) {
  JsonDoc doc;
  if (Status s = doc.Read(text); !s.ok()) return s;
  return k8s_json_detail::ToPicojson(doc.root());
}

// A PersistentVolumeClaim. Absent or null fields stay empty; a field of the wrong JSON type,
// a non-object, or a different "kind" is an error (kInvalid) naming the field and the claim.
// `keep`: which annotations and labels are kept (all by default; every one is type-checked).
inline Result<Claim> ClaimFromJson(JsonRef v, const MetaKeep& keep = MetaKeep()) {
  return k8s_json_detail::FromJson<Claim>(v, "PersistentVolumeClaim",
                                          [&](JsonRef t, Claim* c) { return k8s_json_detail::ReadClaim(t, c, keep); });
}

// A PersistentVolume; errors and `keep` as for ClaimFromJson.
inline Result<Volume> VolumeFromJson(JsonRef v, const MetaKeep& keep = MetaKeep()) {
  return k8s_json_detail::FromJson<Volume>(v, "PersistentVolume",
                                           [&](JsonRef t, Volume* o) { return k8s_json_detail::ReadVolume(t, o, keep); });
}

// A storage.k8s.io/v1 StorageClass; errors as for ClaimFromJson.
inline Result<StorageClass> StorageClassFromJson(JsonRef v) {
  return k8s_json_detail::FromJson<StorageClass>(v, "StorageClass", &k8s_json_detail::ReadStorageClass);
}

// A core/v1 Event; errors as for ClaimFromJson. Absent count reads as 0; the source
// component falls back to reportingComponent.
inline Result<Event> EventFromJson(JsonRef v) {
  return k8s_json_detail::FromJson<Event>(v, "Event", &k8s_json_detail::ReadEvent);
}

// The PV to POST to /api/v1/persistentvolumes, as JSON text: apiVersion, kind, metadata
// (name, and annotations, labels, finalizers when present), spec (capacity.storage,
// accessModes, volumeMode and storageClassName and mountOptions when set,
// persistentVolumeReclaimPolicy, claimRef when has_claim_ref, hostPath when host_path is set).
// Status is the server's. Members in name order (JsonObjectWriter).
inline std::string VolumeToJson(const Volume& v) {
  std::string out;
  out.reserve(1024);  // one allocation
  JsonObjectWriter pv(&out);
  pv.String("apiVersion", "v1");
  pv.String("kind", "PersistentVolume");
  JsonObjectWriter meta = pv.Object("metadata");
  if (!v.meta.annotations.empty()) meta.StringMap("annotations", v.meta.annotations);
  if (!v.meta.finalizers.empty()) meta.Strings("finalizers", v.meta.finalizers);
  if (!v.meta.labels.empty()) meta.StringMap("labels", v.meta.labels);
  meta.String("name", v.meta.name);
  meta.End();

  JsonObjectWriter spec = pv.Object("spec");
  spec.Strings("accessModes", v.access_modes);
  JsonObjectWriter capacity = spec.Object("capacity");
  capacity.String("storage", v.capacity);
  capacity.End();
  if (v.has_claim_ref) {
    JsonObjectWriter ref = spec.Object("claimRef");
    ref.String("apiVersion", "v1");
    ref.String("kind", "PersistentVolumeClaim");
    ref.String("name", v.claim_ref.name);
    ref.String("namespace", v.claim_ref.namespace_);
    ref.StringIfSet("uid", v.claim_ref.uid);
    ref.End();
  }
  if (!v.host_path.empty()) {
    JsonObjectWriter host_path = spec.Object("hostPath");
    host_path.String("path", v.host_path);
    host_path.StringIfSet("type", v.host_path_type);
    host_path.End();
  }
  if (!v.mount_options.empty()) spec.Strings("mountOptions", v.mount_options);
  spec.StringIfSet("persistentVolumeReclaimPolicy", v.reclaim_policy);
  spec.StringIfSet("storageClassName", v.storage_class_name);
  spec.StringIfSet("volumeMode", v.volume_mode);
  spec.End();
  pv.End();
  return out;
}

// The core/v1 Event to POST to /api/v1/namespaces/<ns>/events, as JSON text. Empty strings
// are left out (e.g. involvedObject.namespace of a cluster-scoped object, unset timestamps);
// reportingComponent repeats source.component. Members in name order (JsonObjectWriter).
inline std::string EventToJson(const Event& e) {
  std::string out;
  out.reserve(1024);
  JsonObjectWriter ev(&out);
  ev.String("apiVersion", "v1");
  ev.Integer("count", e.count);
  ev.StringIfSet("firstTimestamp", e.first_timestamp);
  JsonObjectWriter involved = ev.Object("involvedObject");
  involved.StringIfSet("apiVersion", e.involved_api_version);
  involved.StringIfSet("kind", e.involved_kind);
  involved.StringIfSet("name", e.involved_name);
  involved.StringIfSet("namespace", e.involved_namespace);
  involved.StringIfSet("resourceVersion", e.involved_resource_version);
  involved.StringIfSet("uid", e.involved_uid);
  involved.End();
  ev.String("kind", "Event");
  ev.StringIfSet("lastTimestamp", e.last_timestamp);
  ev.StringIfSet("message", e.message);
  JsonObjectWriter meta = ev.Object("metadata");
  meta.String("name", e.meta.name);
  meta.StringIfSet("namespace", e.meta.namespace_);
  meta.End();
  ev.StringIfSet("reason", e.reason);
  if (!e.source_component.empty()) {
    ev.String("reportingComponent", e.source_component);
    JsonObjectWriter source = ev.Object("source");
    source.String("component", e.source_component);
    source.End();
  }
  ev.StringIfSet("type", e.type);
  ev.End();
  return out;
}

// One line for logs and events from an error answer. A metav1.Status body gives
// "<message> (<reason>, <http_code>)", e.g. `persistentvolumes "x" already exists
// (AlreadyExists, 409)`; any other body gives its first 200 bytes and " (<http_code>)";
// an empty body gives "empty response (<http_code>)". Control characters become spaces.
inline std::string StatusMessage(int http_code, const std::string& body) {
  using namespace k8s_json_detail;
  const std::string code = std::to_string(http_code);
  JsonDoc doc;
  if (doc.Read(body).ok() && doc.root().is(JsonType::kObject)) {
    Fields f(doc.root(), "");
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
// ERROR, a metav1.Status), which points into the JsonDoc the event was read with.
struct WatchEvent {
  std::string type;
  JsonRef object;
};

// Parses one watch line into *doc (which must outlive the event, as must the line). Errors
// (kInvalid): bad JSON, no string "type", no object "object".
inline Result<WatchEvent> ParseWatchEvent(const std::string& line, JsonDoc* doc) {
  if (Status s = doc->Read(line); !s.ok()) return s.Wrap("watch event");
  if (!doc->root().is(JsonType::kObject)) return Status::Invalid("watch event: expected a JSON object");
  WatchEvent ev;
  Status s = k8s_json_detail::Fields(doc->root(), "").String("type", &ev.type);
  if (!s.ok()) return s.Wrap("watch event");
  if (ev.type.empty()) return Status::Invalid("watch event: no type");
  ev.object = doc->root().Get("object");
  if (!ev.object.is(JsonType::kObject))
    return Status::Invalid("watch event " + ev.type + ": expected an object in field object");
  return ev;
}

// One page of a list answer: metadata.resourceVersion, metadata.continue, and how many items
// it held (each went to ParseList's callback).
struct ListPage {
  std::string resource_version;
  std::string continue_token;
  size_t items = 0;
};

// Reads a list answer, then calls on_item with each element of items, in order (each points
// into `text`, and is good only during the call). Errors (kInvalid): bad JSON (as JsonDoc),
// not an object, wrong field types, items not an array or given twice; no item is handed over
// then. Absent or null items is an empty list.
inline Result<ListPage> ParseList(const std::string& text, const std::function<void(JsonRef)>& on_item) {
  using namespace k8s_json_detail;
  JsonDoc doc;
  if (Status s = doc.Read(text); !s.ok()) return s.Wrap("list");
  const JsonRef top = doc.root();
  if (!top.is(JsonType::kObject)) return Status::Invalid(std::string("list: expected a JSON object, got ") + JsonTypeName(top.type()));
  int seen = 0;
  JsonRef items;
  top.ForEachMember([&](const std::string& key, JsonRef value) {
    if (key != "items") return;
    ++seen;
    items = value;
  });
  if (seen > 1) return Status::Invalid("list: field items appears twice");
  if (!items.unset() && !items.is(JsonType::kArray))
    return Status::Invalid(std::string("list: field items: expected an array, got ") + JsonTypeName(items.type()));
  ListPage page;
  JsonRef meta;
  Status s = Fields(top, "").Object("metadata", &meta);
  if (s.ok()) s = Fields(meta, "metadata").String("resourceVersion", &page.resource_version);
  if (s.ok()) s = Fields(meta, "metadata").String("continue", &page.continue_token);
  if (!s.ok()) return s.Wrap("list");
  items.ForEachItem([&](size_t, JsonRef item) {
    ++page.items;
    on_item(item);
  });
  return page;
}
