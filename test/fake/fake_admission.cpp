// The bodies of fake_admission.hpp (the contracts are there).
#include "test/fake/fake_admission.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace fake {

namespace admission_detail {
namespace {

void Append(std::vector<FieldError>& to, const std::vector<FieldError>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

const std::vector<std::string>& AccessModes() {
  static const std::vector<std::string> m = {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"};
  return m;
}

void CheckAccessModes(const Json& spec, const std::string& field, std::vector<FieldError>& errs,
                             const std::string& required_detail) {
  auto modes = StringList(spec, {"accessModes"});
  if (modes.empty()) errs.push_back(Required(field, required_detail));
  for (const auto& m : modes)
    if (std::find(AccessModes().begin(), AccessModes().end(), m) == AccessModes().end())
      errs.push_back(NotSupported(field, m, AccessModes()));
}

// validatePathNoBacksteps: no ".." path element.
bool HasBackstep(const std::string& path) {
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (path.compare(i, j - i, "..") == 0 && j - i == 2) return true;
    i = j + 1;
  }
  return false;
}

const Json& SpecOf(const Json& obj) {
  static const Json kEmpty{JsonObject()};
  const Json* spec = Path(obj, {"spec"});
  return spec != nullptr ? *spec : kEmpty;
}

// validateBasicResource over a map of quantities at `field`: a Value() (rounded up) below 0.
void CheckNotNegative(const Json* quantities, const std::string& field, std::vector<FieldError>& errs) {
  if (quantities == nullptr || !quantities->is<JsonObject>()) return;
  for (const auto& [name, v] : quantities->get<JsonObject>()) {
    int64_t bytes = 0;
    auto q = v.is<std::string>() ? ::ParseQuantity(v.get<std::string>()) : Result<Quantity>(Status::Invalid(""));
    if (q.ok() && IsNegative(*q) && QuantityBytes(*q, &bytes))
      errs.push_back({"FieldValueInvalid", field + "[" + name + "]",
                      "Invalid value: " + std::to_string(bytes) + ": must be a valid resource quantity"});
  }
}

void ValidatePv(const Json& pv, std::vector<FieldError>& errs) {
  const Json& spec = SpecOf(pv);
  CheckAccessModes(spec, "spec.accessModes", errs, "");
  const Json* cap = Member(spec, "capacity");
  if (cap == nullptr || !cap->is<JsonObject>() || cap->get<JsonObject>().empty()) {
    errs.push_back(Required("spec.capacity"));
  } else if (Member(*cap, "storage") == nullptr || cap->get<JsonObject>().size() > 1) {
    errs.push_back(NotSupported("spec.capacity", cap->get<JsonObject>().begin()->first, {"storage"}));
  }
  CheckNotNegative(cap, "spec.capacity", errs);
  std::string policy = Str(spec, {"persistentVolumeReclaimPolicy"});
  if (policy != "Retain" && policy != "Delete" && policy != "Recycle")
    errs.push_back(NotSupported("spec.persistentVolumeReclaimPolicy", policy, {"Delete", "Recycle", "Retain"}));
  // validateVolumeNodeAffinity
  const Json* affinity = Member(spec, "nodeAffinity");
  const bool has_affinity = affinity != nullptr && affinity->is<JsonObject>();
  if (has_affinity) {
    const Json* required = Member(*affinity, "required");
    if (required != nullptr && required->is<JsonObject>())
      ValidateNodeSelector(*required, "spec.nodeAffinity.required", errs);
    else
      errs.push_back(Required("spec.nodeAffinity.required", "must specify required node constraints"));
  }
  // The volume sources in ValidatePersistentVolumeSpec's order, each with the field its error
  // names; only the first is validated, the others are refused (flexVolume is counted but never
  // refused, as there).
  static const std::pair<const char*, const char*> kSources[] = {
      {"hostPath", "hostPath"}, {"gcePersistentDisk", "gcePersistentDisk"}, {"awsElasticBlockStore", "awsElasticBlockStore"},
      {"glusterfs", "glusterfs"}, {"flocker", "flocker"}, {"nfs", "nfs"}, {"rbd", "rbd"}, {"quobyte", "quobyte"},
      {"cephfs", "cephFS"}, {"iscsi", "iscsi"}, {"cinder", "cinder"}, {"fc", "fc"}, {"flexVolume", ""},
      {"azureFile", "azureFile"}, {"vsphereVolume", "vsphereVolume"}, {"photonPersistentDisk", "photonPersistentDisk"},
      {"portworxVolume", "portworxVolume"}, {"azureDisk", "azureDisk"}, {"scaleIO", "scaleIO"}, {"local", "local"},
      {"storageos", "storageos"}, {"csi", "csi"}};
  int sources = 0;
  for (const auto& [key, field] : kSources) {
    const Json* source = Member(spec, key);
    if (source == nullptr || source->is<JsonNull>()) continue;
    if (sources > 0 && *field != '\0') {
      errs.push_back(Forbidden(std::string("spec.") + field, "may not specify more than 1 volume type"));
      continue;
    }
    ++sources;
    const std::string path = Str(*source, {"path"});
    if (std::string(key) == "hostPath") {
      if (path.empty()) errs.push_back(Required("spec.hostPath.path"));
      if (HasBackstep(path)) errs.push_back(InvalidValue("spec.hostPath.path", path, "must not contain '..'"));
      std::string type = Str(*source, {"type"});
      static const std::vector<std::string> kTypes = {"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate",
                                                      "File", "FileOrCreate", "Socket"};
      if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
        errs.push_back(NotSupported("spec.hostPath.type", type, kTypes));
    } else if (std::string(key) == "local") {  // validateLocalVolumeSource, then the affinity it needs
      if (path.empty())
        errs.push_back(Required("spec.local.path"));
      else if (HasBackstep(path))
        errs.push_back(InvalidValue("spec.local.path", path, "must not contain '..'"));
      if (!has_affinity) errs.push_back(Required("spec.nodeAffinity", "Local volume requires node affinity"));
    }
  }
  if (sources == 0) errs.push_back(Required("spec", "must specify a volume type"));
  std::string sc = Str(spec, {"storageClassName"});
  if (!sc.empty()) Append(errs, CheckSubdomain("spec.storageClassName", sc));
}

void ValidatePvc(const Json& pvc, std::vector<FieldError>& errs) {
  const Json& spec = SpecOf(pvc);
  CheckAccessModes(spec, "spec.accessModes", errs, "at least 1 access mode is required");
  std::string storage = Str(spec, {"resources", "requests", "storage"});
  if (storage.empty()) {
    errs.push_back(Required("spec.resources[storage]"));
  } else if (std::isnan(ParseQuantity(storage)) || ParseQuantity(storage) <= 0) {
    errs.push_back(InvalidValue("spec.resources[storage]", storage, "must be greater than zero"));
  }
  std::string sc = Str(spec, {"storageClassName"});
  if (!sc.empty()) Append(errs, CheckSubdomain("spec.storageClassName", sc));
  ValidateClaimDataSources(spec, errs);  // fake_datasource.hpp
  CheckNotNegative(Path(pvc, {"status", "capacity"}), "status.capacity", errs);  // what /status may write
}

// legacyValidateEvent: involvedObject.namespace must match the event's namespace; an event
// about a cluster-scoped object lives in "default" (or has no namespace).
void ValidateEvent(const Json& ev, std::vector<FieldError>& errs) {
  std::string ns = Str(ev, {"metadata", "namespace"});
  std::string involved = Str(ev, {"involvedObject", "namespace"});
  if (involved.empty()) {
    if (!ns.empty() && ns != "default")
      errs.push_back(InvalidValue("involvedObject.namespace", involved, "does not match event.namespace"));
  } else if (involved != ns) {
    errs.push_back(InvalidValue("involvedObject.namespace", involved, "does not match event.namespace"));
  }
}

void ValidateStorageClass(const Json& sc, std::vector<FieldError>& errs) {
  if (Str(sc, {"provisioner"}).empty()) errs.push_back(Required("provisioner"));
  std::string mode = Str(sc, {"volumeBindingMode"});
  if (mode != "Immediate" && mode != "WaitForFirstConsumer")
    errs.push_back(NotSupported("volumeBindingMode", mode, {"Immediate", "WaitForFirstConsumer"}));
  std::string policy = Str(sc, {"reclaimPolicy"});
  if (policy != "Retain" && policy != "Delete")
    errs.push_back(NotSupported("reclaimPolicy", policy, {"Delete", "Retain"}));
}

}  // namespace
}  // namespace admission_detail

std::string MicroTimeError(const Json& v) {
  static const std::string kLayout = "2006-01-02T15:04:05.000000Z07:00";
  if (v.is<JsonNull>()) return "";
  if (!v.is<std::string>()) return "json: cannot unmarshal " + std::string(v.is<double>() ? "number" : v.is<bool>() ? "bool" : v.is<JsonArray>() ? "array" : "object") + " into Go value of type string";
  const std::string& t = v.get<std::string>();
  const std::string head = "parsing time " + ToText(v) + " as \"" + kLayout + "\"";
  size_t i = 0;
  auto rest = [&] { return ToText(Json(t.substr(std::min(i, t.size())))); };
  auto bad = [&](const std::string& elem) { return head + ": cannot parse " + rest() + " as \"" + elem + "\""; };
  auto digits = [&](size_t min, size_t max, int& out) {
    size_t n = 0;
    out = 0;
    while (n < max && i + n < t.size() && t[i + n] >= '0' && t[i + n] <= '9') out = out * 10 + (t[i + n++] - '0');
    if (n < min) return false;
    i += n;
    return true;
  };
  auto lit = [&](char c) {
    if (i >= t.size() || t[i] != c) return false;
    ++i;
    return true;
  };
  int year, month, day, hour, minute, second, frac;
  if (!digits(4, 4, year)) return bad("2006");
  if (!lit('-')) return bad("-");
  if (!digits(2, 2, month)) return bad("01");
  if (!lit('-')) return bad("-");
  if (!digits(2, 2, day)) return bad("02");
  if (!lit('T')) return bad("T");
  if (!digits(1, 2, hour)) return bad("15");
  if (!lit(':')) return bad(":");
  if (!digits(2, 2, minute)) return bad("04");
  if (!lit(':')) return bad(":");
  if (!digits(2, 2, second)) return bad("05");
  size_t frac_at = i;
  if (!lit('.') || !digits(6, 6, frac)) return i = frac_at, bad(".000000");
  if (i < t.size() && t[i] == 'Z') {
    ++i;
  } else {
    size_t zone_at = i;
    int zh, zm;
    if (!(lit('+') || lit('-')) || !digits(2, 2, zh) || !lit(':') || !digits(2, 2, zm)) return i = zone_at, bad("Z07:00");
    if (zh > 24) return head + ": time zone offset hour out of range";
    if (zm > 60) return head + ": time zone offset minute out of range";
  }
  if (i < t.size()) return "parsing time " + ToText(v) + ": extra text: " + rest();
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12) return head + ": month out of range";
  if (day < 1 || day > kDays[month - 1] || (month == 2 && day == 29 && !leap)) return head + ": day out of range";
  if (hour > 23) return head + ": hour out of range";
  if (minute > 59) return head + ": minute out of range";
  if (second > 59) return head + ": second out of range";
  return "";
}

namespace admission_detail {
namespace {

// Quantity.UnmarshalJSON of one value, written back as Quantity.String(); its error or "".
std::string CanonicalizeQuantity(Json& v) {
  if (!v.is<std::string>() && !v.is<double>()) return "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  auto q = ::ParseQuantity(v.is<std::string>() ? v.get<std::string>() : ToText(v));
  if (!q.ok())
    return q.status().message().find("unknown suffix") != std::string::npos
               ? "unable to parse quantity's suffix"
               : "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  v = Json(CanonicalQuantity(*q));
  return "";
}

}  // namespace
}  // namespace admission_detail

std::string CanonicalQuantities(const ResourceType& t, Json& obj) {
  if (t.plural == "csistoragecapacities" && obj.is<JsonObject>()) {  // two *resource.Quantity members, not maps
    JsonObject& o = obj.get<JsonObject>();
    for (const char* k : {"capacity", "maximumVolumeSize"}) {
      auto it = o.find(k);
      if (it == o.end()) continue;
      if (it->second.is<JsonNull>()) {  // a nil pointer: left out of every answer
        o.erase(it);
        continue;
      }
      if (std::string why = admission_detail::CanonicalizeQuantity(it->second); !why.empty()) return why;
    }
    return "";
  }
  std::vector<std::vector<std::string>> maps;
  if (t.plural == "persistentvolumes") maps = {{"spec", "capacity"}};
  if (t.plural == "persistentvolumeclaims")
    maps = {{"spec", "resources", "requests"}, {"spec", "resources", "limits"}, {"status", "capacity"}, {"status", "allocatedResources"}};
  for (const auto& path : maps) {
    Json* cur = &obj;
    for (const auto& k : path) {
      if (!cur->is<JsonObject>()) break;
      auto& o = cur->get<JsonObject>();
      auto it = o.find(k);
      cur = it == o.end() ? nullptr : &it->second;
      if (cur == nullptr) break;
    }
    if (cur == nullptr || !cur->is<JsonObject>()) continue;
    for (auto& [name, v] : cur->get<JsonObject>()) {
      if (v.is<JsonNull>()) continue;
      if (std::string why = admission_detail::CanonicalizeQuantity(v); !why.empty()) return why;
    }
  }
  return "";
}

void PruneUnknownFields(const ResourceType& t, Json& obj) {
  static const std::vector<std::string> kCommon = {"apiVersion", "kind", "metadata"};
  std::vector<std::string> known;
  if (t.plural == "events")
    known = {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
             "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"};
  else if (t.plural == "storageclasses")
    known = {"provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion", "volumeBindingMode",
             "allowedTopologies"};
  else if (t.plural == "leases" || t.plural == "csidrivers")
    known = {"spec"};
  else if (t.plural == "csistoragecapacities")
    known = {"nodeTopology", "storageClassName", "capacity", "maximumVolumeSize"};
  else
    known = {"spec", "status"};
  if (!obj.is<JsonObject>()) return;
  auto& o = obj.get<JsonObject>();
  for (auto it = o.begin(); it != o.end();) {
    bool keep = std::find(kCommon.begin(), kCommon.end(), it->first) != kCommon.end() ||
                std::find(known.begin(), known.end(), it->first) != known.end();
    it = keep ? std::next(it) : o.erase(it);
  }
}

bool KnownApiVersion(const ResourceType& t, const std::string& api_version) {
  if (api_version.empty() || api_version == t.ApiVersion()) return true;
  return !t.group.empty() && api_version == t.group + "/v1beta1";
}

std::string DecodeError(const ResourceType& t, Json& obj) {
  std::string api_version = Str(obj, {"apiVersion"});
  if (!KnownApiVersion(t, api_version)) {
    std::string version = api_version.substr(api_version.find('/') == std::string::npos ? 0 : api_version.find('/') + 1);
    return t.kind + " in version \"" + version + "\" cannot be handled as a " + t.kind + ": no kind \"" + t.kind +
           "\" is registered for version \"" + api_version + "\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"";
  }
  PruneUnknownFields(t, obj);
  std::string why = CanonicalQuantities(t, obj);
  if (t.plural == "leases") {
    for (const char* k : {"acquireTime", "renewTime"}) {
      const Json* v = Path(obj, {"spec", k});
      if (v != nullptr && why.empty()) why = MicroTimeError(*v);
    }
  }
  return why.empty() ? "" : t.kind + " in version \"" + t.version + "\" cannot be handled as a " + t.kind + ": " + why;
}

namespace admission_detail {
namespace {

// metadata.finalizers: apimachinery's ValidateFinalizers (IsQualifiedName, at the list's path)
// and core's validateKubeFinalizerName (at each item's path).
void ValidateFinalizers(const Json& obj, std::vector<FieldError>& errs) {
  auto fin = StringList(obj, {"metadata", "finalizers"});
  for (const auto& f : fin)
    for (const auto& msg : QualifiedNameErrors(f)) errs.push_back(InvalidValue("metadata.finalizers", f, msg));
  for (size_t i = 0; i < fin.size(); ++i) {
    const std::string& f = fin[i];
    if (f.find('/') == std::string::npos && f != "kubernetes" && f != "orphan" && f != "foregroundDeletion")
      errs.push_back(InvalidValue("metadata.finalizers[" + std::to_string(i) + "]", f,
                                  "name is neither a standard finalizer name nor is it fully qualified"));
  }
}

// coordination's ValidateLeaseSpec.
void ValidateLease(const Json& lease, std::vector<FieldError>& errs) {
  auto number = [&](const char* k) -> const Json* {
    const Json* v = Path(lease, {"spec", k});
    return v != nullptr && v->is<double>() ? v : nullptr;
  };
  auto text = [](double d) { return std::to_string(static_cast<long long>(d)); };
  if (const Json* d = number("leaseDurationSeconds"); d && d->get<double>() <= 0)
    errs.push_back({"FieldValueInvalid", "spec.leaseDurationSeconds", "Invalid value: " + text(d->get<double>()) + ": must be greater than 0"});
  if (const Json* n = number("leaseTransitions"); n && n->get<double>() < 0)
    errs.push_back({"FieldValueInvalid", "spec.leaseTransitions", "Invalid value: " + text(n->get<double>()) + ": must be greater than or equal to 0"});
}

}  // namespace
}  // namespace admission_detail

std::vector<FieldError> Validate(const ResourceType& t, const Json& obj) {
  using namespace admission_detail;
  std::vector<FieldError> errs;
  std::string name = Str(obj, {"metadata", "name"});
  if (name.empty()) {
    errs.push_back(Required("metadata.name", "name or generateName is required"));
  } else if (t.plural == "namespaces") {
    Append(errs, CheckLabel("metadata.name", name));
  } else {
    Append(errs, CheckSubdomain("metadata.name", name));
  }
  ValidateFinalizers(obj, errs);
  if (t.plural == "persistentvolumes") ValidatePv(obj, errs);
  if (t.plural == "persistentvolumeclaims") ValidatePvc(obj, errs);
  if (t.plural == "events") ValidateEvent(obj, errs);
  if (t.plural == "storageclasses") ValidateStorageClass(obj, errs);
  if (t.plural == "leases") ValidateLease(obj, errs);
  if (t.plural == "pods") ValidatePod(obj, errs);
  if (t.plural == "csidrivers") ValidateCsiDriver(obj, errs);  // fake_csi.hpp
  if (t.plural == "csistoragecapacities") ValidateCsiStorageCapacity(obj, errs);
  return errs;
}

double StorageRequest(const Json& claim) {
  const std::string& q = Str(claim, {"spec", "resources", "requests", "storage"});
  return q.empty() ? 0 : ParseQuantity(q);
}

std::vector<FieldError> ValidateUpdate(const ResourceType& t, const Json& old_obj, const Json& new_obj) {
  std::vector<FieldError> errs;
  if (t.plural == "pods") ValidatePodUpdate(old_obj, new_obj, errs);
  if (t.plural == "csidrivers") ValidateCsiDriverUpdate(old_obj, new_obj, errs);  // fake_csi.hpp
  if (t.plural == "csistoragecapacities") ValidateCsiStorageCapacityUpdate(old_obj, new_obj, errs);
  const Json& old_spec = admission_detail::SpecOf(old_obj);
  const Json& new_spec = admission_detail::SpecOf(new_obj);
  if (!old_spec.is<JsonObject>() || !new_spec.is<JsonObject>()) return errs;
  if (t.plural == "persistentvolumeclaims") {
    Json a = old_spec, b = new_spec;  // copies, without the members that may change
    NormalizeClaimDataSources(a);  // PrepareForUpdate normalizes the old claim too (fake_datasource.hpp)
    auto& ao = a.get<JsonObject>();
    auto& bo = b.get<JsonObject>();
    ao.erase("volumeAttributesClassName"), bo.erase("volumeAttributesClassName");
    if (Str(a, {"volumeName"}).empty()) ao.erase("volumeName"), bo.erase("volumeName");
    if (Member(a, "storageClassName") == nullptr) bo.erase("storageClassName");
    const Json* requests = Path(b, {"resources", "requests"});
    if (Str(new_obj, {"status", "phase"}) == "Bound" && requests != nullptr && requests->is<JsonObject>()) {
      const Json* was = Path(a, {"resources", "requests", "storage"});
      Obj(b, {"resources", "requests"})["storage"] = was != nullptr ? *was : Json("0");
    }
    if (!(a == b))
      errs.push_back(Forbidden("spec", "spec is immutable after creation except resources.requests and "
                                       "volumeAttributesClassName for bound claims"));
    if (StorageRequest(new_obj) < StorageRequest(old_obj))
      errs.push_back(Forbidden("spec.resources.requests.storage", "field can not be less than previous value"));
  } else if (t.plural == "persistentvolumes") {
    static const char* kSources[] = {"hostPath", "local", "nfs", "csi", "iscsi", "fc", "rbd", "cephfs"};
    for (const char* k : kSources) {
      const Json* x = Member(old_spec, k);
      const Json* y = Member(new_spec, k);
      if ((x == nullptr) != (y == nullptr) || (x != nullptr && !(*x == *y))) {
        errs.push_back(Forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"));
        break;
      }
    }
    // Node affinity may be set once, then never changed (ValidateImmutableField at "nodeAffinity";
    // the real message prints the new value as a Go struct, this one as JSON).
    const Json* old_affinity = Member(old_spec, "nodeAffinity");
    const Json* new_affinity = Member(new_spec, "nodeAffinity");
    const bool had = old_affinity != nullptr && !old_affinity->is<JsonNull>();
    const bool has = new_affinity != nullptr && !new_affinity->is<JsonNull>();
    if (had && (!has || !(*old_affinity == *new_affinity)))
      errs.push_back({"FieldValueInvalid", "nodeAffinity",
                      "Invalid value: " + (has ? ToText(*new_affinity) : std::string("null")) + ": field is immutable"});
  }
  return errs;
}

void ApplyDefaults(const ResourceType& t, Json& obj) {
  auto set_if_missing = [](JsonObject& o, const char* key, const char* value) {
    if (o.count(key) == 0) o[key] = Json(value);
  };
  if (t.plural == "persistentvolumes") {
    JsonObject& spec = Obj(obj, {"spec"});
    set_if_missing(spec, "persistentVolumeReclaimPolicy", "Retain");
    set_if_missing(spec, "volumeMode", "Filesystem");
  } else if (t.plural == "persistentvolumeclaims") {
    set_if_missing(Obj(obj, {"spec"}), "volumeMode", "Filesystem");
  } else if (t.plural == "storageclasses") {
    JsonObject& o = obj.get<JsonObject>();
    set_if_missing(o, "reclaimPolicy", "Delete");
    set_if_missing(o, "volumeBindingMode", "Immediate");
  } else if (t.plural == "pods") {
    DefaultPod(obj);
  } else if (t.plural == "csidrivers") {
    DefaultCsiDriver(obj);
  } else if (t.plural == "namespaces") {
    JsonObject& spec = Obj(obj, {"spec"});
    if (spec.count("finalizers") == 0) spec["finalizers"] = StringArray({"kubernetes"});
    set_if_missing(Obj(obj, {"status"}), "phase", "Active");
  }
}

void AddFinalizer(Json& obj, const std::string& finalizer) {
  auto fin = StringList(obj, {"metadata", "finalizers"});
  if (std::find(fin.begin(), fin.end(), finalizer) == fin.end()) fin.push_back(finalizer);
  Meta(obj)["finalizers"] = StringArray(fin);
}

bool RemoveFinalizer(Json& obj, const std::string& finalizer) {
  auto fin = StringList(obj, {"metadata", "finalizers"});
  auto it = std::find(fin.begin(), fin.end(), finalizer);
  if (it == fin.end()) return false;
  fin.erase(it);
  if (fin.empty())
    Meta(obj).erase("finalizers");
  else
    Meta(obj)["finalizers"] = StringArray(fin);
  return true;
}

std::string DefaultClassName(Store& s) {
  std::string best, best_time;
  for (const auto& [key, sc_ref] : s.bucket("storageclasses").objects) {
    const Json& sc = *sc_ref;
    if (Annotation(sc, kIsDefaultClass) != "true" && Annotation(sc, kBetaIsDefaultClass) != "true") continue;
    std::string created = Str(sc, {"metadata", "creationTimestamp"});
    if (best.empty() || created > best_time || (created == best_time && key < best)) {
      best = key;
      best_time = created;
    }
  }
  return best;
}

void AdmitCreate(Store& s, const ResourceType& t, Json& obj) {
  if (t.plural == "persistentvolumeclaims") {
    JsonObject status;
    status["phase"] = Json("Pending");
    obj.get<JsonObject>()["status"] = Json(status);
    AddFinalizer(obj, kPvcProtectionFinalizer);
    PrepareClaimDataSources(obj, nullptr);  // strategy.go PrepareForCreate (fake_datasource.hpp)
    JsonObject& spec = Obj(obj, {"spec"});
    if (spec.count("storageClassName") == 0 || spec["storageClassName"].is<JsonNull>()) {
      std::string def = DefaultClassName(s);
      if (!def.empty()) spec["storageClassName"] = Json(def);
    }
  } else if (t.plural == "persistentvolumes") {
    JsonObject status;
    status["phase"] = Json("Pending");
    status["lastPhaseTransitionTime"] = Json(NowRfc3339());
    obj.get<JsonObject>()["status"] = Json(status);
    AddFinalizer(obj, kPvProtectionFinalizer);
  } else if (t.plural == "pods") {
    ResetPodStatus(obj);
  } else if (t.plural == "csidrivers") {
    SetCsiDriverGeneration(nullptr, obj);
  } else if (t.plural == "nodes") {
    // TaintNodesByCondition (plugin/pkg/admission/nodetaint): a new Node is not-ready until the
    // node lifecycle controller (fake_nodelifecycle.hpp) sees it otherwise; one taint of that
    // key and effect (Taint.MatchTaint) is enough.
    JsonObject& spec = Obj(obj, {"spec"});
    JsonArray taints = spec.count("taints") && spec["taints"].is<JsonArray>() ? spec["taints"].get<JsonArray>() : JsonArray();
    bool has = false;
    for (const Json& taint : taints) has = has || (Str(taint, {"key"}) == kTaintNotReady && Str(taint, {"effect"}) == "NoSchedule");
    if (!has) {
      JsonObject taint;
      taint["key"] = Json(kTaintNotReady);
      taint["effect"] = Json("NoSchedule");
      taints.emplace_back(taint);
      spec["taints"] = Json(taints);
    }
  }
}

std::string ClaimClass(const Json& claim) {
  const Json* ann = Path(claim, {"metadata", "annotations", kBetaStorageClassAnn});
  if (ann != nullptr && ann->is<std::string>()) return ann->get<std::string>();
  return Str(claim, {"spec", "storageClassName"});
}

std::string ResizeRefusal(Store& s, const Json& old_claim, const Json& new_claim) {
  if (!(StorageRequest(new_claim) > StorageRequest(old_claim))) return "";
  if (Str(old_claim, {"status", "phase"}) != "Bound") return "Only bound persistent volume claims can be expanded";
  const std::string cls = ClaimClass(new_claim);
  const Json* sc = cls.empty() || cls != ClaimClass(old_claim) ? nullptr : s.Get("storageclasses", cls);
  const Json* allow = sc != nullptr ? Member(*sc, "allowVolumeExpansion") : nullptr;
  if (allow != nullptr && allow->is<bool>() && allow->get<bool>()) return "";
  return "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize";
}

void PrepareStatusUpdate(const ResourceType& t, const Json& cur, Json& next) {
  JsonObject& o = next.get<JsonObject>();
  if (const Json* spec = Member(cur, "spec"))
    o["spec"] = *spec;
  else
    o.erase("spec");
  if (t.plural == "pods") {
    if (const Json* refs = Path(cur, {"metadata", "ownerReferences"}))
      Meta(next)["ownerReferences"] = *refs;
    else
      Meta(next).erase("ownerReferences");
  }
  auto st = o.find("status");
  if (t.plural == "persistentvolumeclaims" && st != o.end() && st->second.is<JsonObject>())
    for (const char* k : {"allocatedResources", "resizeStatus"})
      if (Path(cur, {"status", k}) == nullptr) st->second.get<JsonObject>().erase(k);
}

}  // namespace fake
