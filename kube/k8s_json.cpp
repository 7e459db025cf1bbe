// The JSON mapping of k8s_json.hpp, over picojson: what the program reads (objects, lists,
// watch events, Status bodies); k8s_json_write.cpp has what it writes. Hand-written, as the
// rest of kube/: the program uses no Kubernetes client library, and maps only the fields it reads.
#include "kube/k8s_json.hpp"

#include <picojson.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <utility>

#include "base/text.hpp"

namespace k8s_json_detail {

// Parses JSON text. Errors (kInvalid): picojson's message (with its line), a number beyond a
// double's range (picojson throws for those), or data after the value (picojson stops at the
// end of the first value).
Status Parse(const std::string& text, picojson::value* out) {
  std::string err;
  std::string::const_iterator end;
  try {
    end = picojson::parse(*out, text.begin(), text.end(), &err);
  } catch (const std::exception&) {
    *out = picojson::value();
    return Status::Invalid("invalid JSON: a number beyond the range of a double");
  }
  if (!err.empty()) return Status::Invalid("invalid JSON: " + OneLine(err));
  if (text.find_first_not_of(" \t\r\n", static_cast<size_t>(end - text.begin())) != std::string::npos)
    return Status::Invalid("invalid JSON: unexpected data after the value");
  return Status::Ok();
}

namespace {

using Value = picojson::value;
using Object = picojson::object;

const char* TypeName(const Value& v) {
  if (v.is<picojson::null>()) return "null";
  if (v.is<bool>()) return "boolean";
  if (v.is<double>()) return "number";
  if (v.is<std::string>()) return "string";
  if (v.is<picojson::array>()) return "array";
  return "object";
}

// "path.key", or "key" at the top.
std::string FieldName(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Status WrongType(const std::string& path, const std::string& key, const char* want, const Value& got) {
  return Status::Invalid("field " + FieldName(path, key) + ": expected " + want + ", got " + TypeName(got));
}

// The shortest decimal text that reads back as exactly `d` ("10", "1.5", "0.1", "1e+21").
std::string NumberText(double d) {
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

// Reads typed members of one JSON object, naming the field (`path.key`) in every error.
// Absent or null members leave the output empty and are not errors; so does an absent object.
class Fields {
 public:
  Fields(const Value* obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  // The member, or null when it is absent or JSON null.
  const Value* Find(const std::string& key) const {
    if (obj_ == nullptr || !obj_->is<picojson::object>()) return nullptr;
    const picojson::object& o = obj_->get<picojson::object>();
    auto it = o.find(key);
    return it == o.end() || it->second.is<picojson::null>() ? nullptr : &it->second;
  }
  bool Has(const std::string& key) const { return Find(key) != nullptr; }

  // *out: the member object, or null when unset.
  Status Object(const std::string& key, const Value** out) const {
    *out = Find(key);
    if (*out != nullptr && !(*out)->is<picojson::object>()) return WrongType(path_, key, "an object", **out);
    return Status::Ok();
  }
  // The fields of a member object (unset: a Fields that finds nothing).
  Status Sub(const std::string& key, Fields* out) const {
    const Value* v = nullptr;
    Status s = Object(key, &v);
    *out = Fields(v, FieldName(path_, key));
    return s;
  }

  Status String(const std::string& key, std::string* out) const {
    out->clear();
    const Value* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<std::string>()) return WrongType(path_, key, "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }

  // A quantity: a string, or a JSON number written out in its shortest exact form.
  Status QuantityText(const std::string& key, std::string* out) const {
    const Value* v = Find(key);
    if (v != nullptr && v->is<double>()) {
      *out = NumberText(v->get<double>());
      return Status::Ok();
    }
    if (v != nullptr && !v->is<std::string>()) return WrongType(path_, key, "a quantity string", *v);
    return String(key, out);
  }

  Status Int(const std::string& key, int* out) const {
    *out = 0;
    const Value* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<double>()) return WrongType(path_, key, "an integer", *v);
    double d = v->get<double>();
    if (d != std::floor(d) || d < -2147483648.0 || d > 2147483647.0)
      return Status::Invalid("field " + FieldName(path_, key) + ": expected a 32-bit integer, got " + v->to_str());
    *out = static_cast<int>(d);
    return Status::Ok();
  }

  Status Bool(const std::string& key, bool* out) const {
    *out = false;
    const Value* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<bool>()) return WrongType(path_, key, "a boolean", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }

  Status StringList(const std::string& key, std::vector<std::string>* out) const {
    out->clear();
    const Value* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<picojson::array>()) return WrongType(path_, key, "an array of strings", *v);
    for (const Value& item : v->get<picojson::array>()) {
      if (!item.is<std::string>())
        return WrongType(path_, key + "[" + std::to_string(out->size()) + "]", "a string", item);
      out->push_back(item.get<std::string>());
    }
    return Status::Ok();
  }

  Status StringMap(const std::string& key, std::map<std::string, std::string>* out) const {
    out->clear();
    const Value* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is<picojson::object>()) return WrongType(path_, key, "an object of strings", *v);
    for (const auto& [name, item] : v->get<picojson::object>()) {
      if (!item.is<std::string>()) return WrongType(path_, key + "[\"" + name + "\"]", "a string", item);
      (*out)[name] = item.get<std::string>();
    }
    return Status::Ok();
  }

 private:
  const Value* obj_;
  std::string path_;
};

// Returns the Status of `expr` from the enclosing function if it is an error (local to this file).
#define K8S_JSON_TRY(expr)                                \
  do {                                                    \
    Status k8s_json_status_ = (expr);                     \
    if (!k8s_json_status_.ok()) return k8s_json_status_;  \
  } while (0)

Status ReadMeta(const Fields& top, ObjectMeta* m) {
  Fields f(nullptr, "");
  K8S_JSON_TRY(top.Sub("metadata", &f));
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

Status Read(const Fields& top, Claim* c) {
  K8S_JSON_TRY(ReadMeta(top, &c->meta));
  Fields spec(nullptr, ""), status(nullptr, ""), resources(nullptr, ""), requests(nullptr, "");
  K8S_JSON_TRY(top.Sub("spec", &spec));
  K8S_JSON_TRY(top.Sub("status", &status));
  c->has_storage_class_name = spec.Has("storageClassName");
  K8S_JSON_TRY(spec.String("storageClassName", &c->storage_class_name));
  K8S_JSON_TRY(spec.StringList("accessModes", &c->access_modes));
  K8S_JSON_TRY(spec.String("volumeMode", &c->volume_mode));
  K8S_JSON_TRY(spec.String("volumeName", &c->volume_name));
  const Value* present = nullptr;
  K8S_JSON_TRY(spec.Object("selector", &present));
  c->has_selector = present != nullptr;
  // The API server makes the two agree (1.24, AnyVolumeDataSource); dataSource wins if not.
  for (const char* key : {"dataSourceRef", "dataSource"}) {
    K8S_JSON_TRY(spec.Object(key, &present));
    if (present == nullptr) continue;
    Fields source(nullptr, "");
    K8S_JSON_TRY(spec.Sub(key, &source));
    c->has_data_source = true;
    K8S_JSON_TRY(source.String("apiGroup", &c->data_source.api_group));
    K8S_JSON_TRY(source.String("kind", &c->data_source.kind));
    K8S_JSON_TRY(source.String("name", &c->data_source.name));
  }
  K8S_JSON_TRY(spec.Sub("resources", &resources));
  K8S_JSON_TRY(resources.Sub("requests", &requests));
  K8S_JSON_TRY(requests.QuantityText("storage", &c->storage_request));
  Fields capacity(nullptr, "");
  K8S_JSON_TRY(status.Sub("capacity", &capacity));
  K8S_JSON_TRY(capacity.QuantityText("storage", &c->capacity));
  c->resizing = false;
  if (const Value* conditions = status.Find("conditions"); conditions != nullptr && conditions->is<picojson::array>()) {
    for (const Value& cond : conditions->get<picojson::array>()) {
      Fields f(&cond, "status.conditions[]");
      std::string type, state;
      K8S_JSON_TRY(f.String("type", &type));
      K8S_JSON_TRY(f.String("status", &state));
      c->resizing = c->resizing || (type == "Resizing" && state == "True");
    }
  }
  return status.String("phase", &c->phase);
}

Status Read(const Fields& top, Volume* v) {
  K8S_JSON_TRY(ReadMeta(top, &v->meta));
  Fields spec(nullptr, ""), status(nullptr, ""), capacity(nullptr, ""), ref(nullptr, ""), host(nullptr, "");
  K8S_JSON_TRY(top.Sub("spec", &spec));
  K8S_JSON_TRY(top.Sub("status", &status));
  K8S_JSON_TRY(spec.Sub("capacity", &capacity));
  K8S_JSON_TRY(capacity.QuantityText("storage", &v->capacity));
  K8S_JSON_TRY(spec.StringList("accessModes", &v->access_modes));
  K8S_JSON_TRY(spec.String("volumeMode", &v->volume_mode));
  K8S_JSON_TRY(spec.String("storageClassName", &v->storage_class_name));
  K8S_JSON_TRY(spec.String("persistentVolumeReclaimPolicy", &v->reclaim_policy));
  K8S_JSON_TRY(spec.StringList("mountOptions", &v->mount_options));
  v->has_claim_ref = spec.Has("claimRef");
  K8S_JSON_TRY(spec.Sub("claimRef", &ref));
  K8S_JSON_TRY(ref.String("namespace", &v->claim_ref.namespace_));
  K8S_JSON_TRY(ref.String("name", &v->claim_ref.name));
  K8S_JSON_TRY(ref.String("uid", &v->claim_ref.uid));
  K8S_JSON_TRY(spec.Sub("hostPath", &host));
  K8S_JSON_TRY(host.String("path", &v->host_path));
  K8S_JSON_TRY(host.String("type", &v->host_path_type));
  if (!spec.Has("hostPath") && spec.Has("local")) {
    v->local = true;
    K8S_JSON_TRY(spec.Sub("local", &host));
    K8S_JSON_TRY(host.String("path", &v->host_path));
  }
  return status.String("phase", &v->phase);
}

Status Read(const Fields& top, StorageClass* sc) {
  K8S_JSON_TRY(ReadMeta(top, &sc->meta));
  K8S_JSON_TRY(top.String("provisioner", &sc->provisioner));
  K8S_JSON_TRY(top.String("reclaimPolicy", &sc->reclaim_policy));
  K8S_JSON_TRY(top.String("volumeBindingMode", &sc->volume_binding_mode));
  K8S_JSON_TRY(top.StringMap("parameters", &sc->parameters));
  K8S_JSON_TRY(top.Bool("allowVolumeExpansion", &sc->allow_volume_expansion));
  return top.StringList("mountOptions", &sc->mount_options);
}

Status Read(const Fields& top, Event* e) {
  K8S_JSON_TRY(ReadMeta(top, &e->meta));
  Fields io(nullptr, ""), source(nullptr, "");
  K8S_JSON_TRY(top.Sub("involvedObject", &io));
  K8S_JSON_TRY(io.String("kind", &e->involved_kind));
  K8S_JSON_TRY(io.String("namespace", &e->involved_namespace));
  K8S_JSON_TRY(io.String("name", &e->involved_name));
  K8S_JSON_TRY(io.String("uid", &e->involved_uid));
  K8S_JSON_TRY(io.String("apiVersion", &e->involved_api_version));
  K8S_JSON_TRY(io.String("resourceVersion", &e->involved_resource_version));
  K8S_JSON_TRY(top.String("type", &e->type));
  K8S_JSON_TRY(top.String("reason", &e->reason));
  K8S_JSON_TRY(top.String("message", &e->message));
  K8S_JSON_TRY(top.Int("count", &e->count));
  K8S_JSON_TRY(top.String("firstTimestamp", &e->first_timestamp));
  K8S_JSON_TRY(top.String("lastTimestamp", &e->last_timestamp));
  K8S_JSON_TRY(top.Sub("source", &source));
  K8S_JSON_TRY(source.String("component", &e->source_component));
  if (e->source_component.empty()) K8S_JSON_TRY(top.String("reportingComponent", &e->source_component));
  return Status::Ok();
}

Status Read(const Fields& top, Node* n) { return ReadMeta(top, &n->meta); }

Status Read(const Fields& top, StorageCapacity* c) {
  K8S_JSON_TRY(ReadMeta(top, &c->meta));
  K8S_JSON_TRY(top.String("storageClassName", &c->storage_class));
  K8S_JSON_TRY(top.QuantityText("capacity", &c->capacity));
  K8S_JSON_TRY(top.QuantityText("maximumVolumeSize", &c->maximum_volume_size));
  Fields topology(nullptr, ""), meta(nullptr, "");
  K8S_JSON_TRY(top.Sub("nodeTopology", &topology));
  std::map<std::string, std::string> match;
  K8S_JSON_TRY(topology.StringMap("matchLabels", &match));
  if (auto it = match.find(ann::kHostnameLabel); it != match.end()) c->node = it->second;
  // The Node among its owners (the only owner this program gives it).
  K8S_JSON_TRY(top.Sub("metadata", &meta));
  if (const Value* refs = meta.Find("ownerReferences"); refs != nullptr && refs->is<picojson::array>())
    for (const Value& ref : refs->get<picojson::array>()) {
      Fields owner(&ref, "metadata.ownerReferences[]");
      std::string kind;
      K8S_JSON_TRY(owner.String("kind", &kind));
      if (kind == "Node") K8S_JSON_TRY(owner.String("uid", &c->owner_node_uid));
    }
  return Status::Ok();
}

Status Read(const Fields& top, CsiDriver* d) {
  K8S_JSON_TRY(ReadMeta(top, &d->meta));
  Fields spec(nullptr, "");
  K8S_JSON_TRY(top.Sub("spec", &spec));
  return spec.Bool("storageCapacity", &d->storage_capacity);
}

Status Read(const Fields& top, Lease* l) {
  K8S_JSON_TRY(ReadMeta(top, &l->meta));
  Fields spec(nullptr, "");
  K8S_JSON_TRY(top.Sub("spec", &spec));
  K8S_JSON_TRY(spec.String("holderIdentity", &l->holder));
  K8S_JSON_TRY(spec.Int("leaseDurationSeconds", &l->duration_seconds));
  K8S_JSON_TRY(spec.String("acquireTime", &l->acquire_time));
  K8S_JSON_TRY(spec.String("renewTime", &l->renew_time));
  return spec.Int("leaseTransitions", &l->transitions);
}

#undef K8S_JSON_TRY

const char* KindOf(const Claim*) { return "PersistentVolumeClaim"; }
const char* KindOf(const Volume*) { return "PersistentVolume"; }
const char* KindOf(const StorageClass*) { return "StorageClass"; }
const char* KindOf(const Event*) { return "Event"; }
const char* KindOf(const Lease*) { return "Lease"; }
const char* KindOf(const Node*) { return "Node"; }
const char* KindOf(const StorageCapacity*) { return "CSIStorageCapacity"; }
const char* KindOf(const CsiDriver*) { return "CSIDriver"; }

}  // namespace
}  // namespace k8s_json_detail

template <class T>
Result<T> FromJson(const picojson::value& v) {
  using namespace k8s_json_detail;
  const std::string kind = KindOf(static_cast<T*>(nullptr));
  if (!v.is<Object>()) return Status::Invalid(kind + ": expected a JSON object, got " + TypeName(v));
  Fields top(&v, "");
  std::string got;
  if (Status s = top.String("kind", &got); !s.ok()) return s.Wrap(kind);
  if (!got.empty() && got != kind) return Status::Invalid("expected kind " + kind + ", got " + got);
  T out;
  if (Status s = Read(top, &out); !s.ok()) {
    const ObjectMeta& m = out.meta;
    return s.Wrap(m.name.empty() ? kind : kind + " " + (m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name));
  }
  return out;
}

// The same from JSON text.
template <class T>
Result<T> FromJsonText(const std::string& text) {
  picojson::value v;
  if (Status s = k8s_json_detail::Parse(text, &v); !s.ok()) return s;
  return FromJson<T>(v);
}

std::string StatusMessage(int http_code, const std::string& body) {
  using namespace k8s_json_detail;
  const std::string code = std::to_string(http_code);
  Value v;
  if (Parse(body, &v).ok() && v.is<Object>()) {
    Fields f(&v, "");
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

Status WatchLineSplitter::Feed(const char* data, size_t n, const std::function<void(const std::string&)>& on_line) {
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

template <class T>
Result<WatchEvent<T>> ParseWatchEvent(const std::string& line) {
  using namespace k8s_json_detail;
  Value v;
  if (Status s = Parse(line, &v); !s.ok()) return s.Wrap("watch event");
  if (!v.is<Object>()) return Status::Invalid("watch event: expected a JSON object");
  WatchEvent<T> ev;
  Fields top(&v, "");
  if (Status s = top.String("type", &ev.type); !s.ok()) return s.Wrap("watch event");
  if (ev.type.empty()) return Status::Invalid("watch event: no type");
  const Value* object = top.Find("object");
  if (object == nullptr || !object->is<Object>())
    return Status::Invalid("watch event " + ev.type + ": expected an object in field object");
  if (ev.type == "ERROR") {
    Fields status(object, "object");
    const Value* code = status.Find("code");
    const double c = code != nullptr && code->is<double>() ? code->get<double>() : 0;
    ev.code = c >= 100 && c <= 599 ? static_cast<int>(c) : 0;
    ev.message = StatusMessage(ev.code, object->serialize());
  } else if (ev.type == "BOOKMARK") {
    Fields meta(nullptr, "");
    Status s = Fields(object, "object").Sub("metadata", &meta);
    if (s.ok()) s = meta.String("resourceVersion", &ev.resource_version);
    if (!s.ok()) return s.Wrap("watch event BOOKMARK");
  } else {
    ev.object = FromJson<T>(*object);
  }
  return ev;
}

template <class T>
Result<ListPage> ParseList(const std::string& text, const std::function<void(Result<T>)>& on_item) {
  using namespace k8s_json_detail;
  Value v;
  if (Status s = Parse(text, &v); !s.ok()) return s.Wrap("list");
  if (!v.is<Object>()) return Status::Invalid(std::string("list: expected a JSON object, got ") + TypeName(v));
  Fields top(&v, ""), meta(nullptr, "");
  ListPage page;
  Status s = top.Sub("metadata", &meta);
  if (s.ok()) s = meta.String("resourceVersion", &page.resource_version);
  if (s.ok()) s = meta.String("continue", &page.continue_token);
  if (s.ok() && meta.Has("remainingItemCount")) s = meta.Int("remainingItemCount", &page.remaining);
  const Value* items = top.Find("items");
  if (s.ok() && items != nullptr && !items->is<picojson::array>()) s = WrongType("", "items", "an array", *items);
  if (!s.ok()) return s.Wrap("list");
  if (items == nullptr) return page;
  for (const Value& item : items->get<picojson::array>()) {
    ++page.items;
    on_item(FromJson<T>(item));
  }
  return page;
}

// The kinds the program reads (see the header).
#define K8S_JSON_KIND(T)                                                                  \
  template Result<T> FromJson<T>(const picojson::value&);                                 \
  template Result<T> FromJsonText<T>(const std::string&);                                 \
  template Result<WatchEvent<T>> ParseWatchEvent<T>(const std::string&);                  \
  template Result<ListPage> ParseList<T>(const std::string&, const std::function<void(Result<T>)>&);
K8S_JSON_KIND(Claim)
K8S_JSON_KIND(Volume)
K8S_JSON_KIND(StorageClass)
K8S_JSON_KIND(Event)
K8S_JSON_KIND(Lease)
K8S_JSON_KIND(Node)
K8S_JSON_KIND(StorageCapacity)
K8S_JSON_KIND(CsiDriver)
#undef K8S_JSON_KIND
