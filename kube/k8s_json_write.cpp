// The JSON the program writes (k8s_json.hpp): the objects it creates and the patches it
// sends, over picojson. Hand-written, as the rest of kube/ (k8s_json.cpp reads).
#include "kube/k8s_json.hpp"

#include <picojson.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace k8s_json_detail {
namespace {

using Value = picojson::value;
using Object = picojson::object;

Value Str(const std::string& s) { return Value(s); }
Value Strings(const std::vector<std::string>& list) {
  picojson::array a;
  for (const auto& s : list) a.emplace_back(s);
  return Value(std::move(a));
}
Value StringMapValue(const std::map<std::string, std::string>& m) {
  Object o;
  for (const auto& [k, v] : m) o[k] = Value(v);
  return Value(std::move(o));
}
// Sets o[key] to `s` unless it is empty.
void SetIfSet(Object* o, const char* key, const std::string& s) {
  if (!s.empty()) (*o)[key] = Value(s);
}

Value MetaValue(const ObjectMeta& m) {
  Object meta;
  if (!m.annotations.empty()) meta["annotations"] = StringMapValue(m.annotations);
  if (!m.finalizers.empty()) meta["finalizers"] = Strings(m.finalizers);
  if (!m.labels.empty()) meta["labels"] = StringMapValue(m.labels);
  meta["name"] = Str(m.name);
  SetIfSet(&meta, "namespace", m.namespace_);
  SetIfSet(&meta, "resourceVersion", m.resource_version);
  return Value(std::move(meta));
}

}  // namespace
}  // namespace k8s_json_detail

std::string VolumeToJson(const Volume& v) {
  using namespace k8s_json_detail;
  Object spec;
  spec["accessModes"] = Strings(v.access_modes);
  spec["capacity"] = Value(Object{{"storage", Str(v.capacity)}});
  if (v.has_claim_ref) {
    Object ref{{"apiVersion", Str("v1")}, {"kind", Str("PersistentVolumeClaim")}, {"name", Str(v.claim_ref.name)},
               {"namespace", Str(v.claim_ref.namespace_)}};
    SetIfSet(&ref, "uid", v.claim_ref.uid);
    spec["claimRef"] = Value(std::move(ref));
  }
  if (!v.host_path.empty()) {
    Object host{{"path", Str(v.host_path)}};
    if (!v.local) SetIfSet(&host, "type", v.host_path_type);
    spec[v.local ? "local" : "hostPath"] = Value(std::move(host));
  }
  if (!v.node.empty()) {
    Object expr{{"key", Str(ann::kHostnameLabel)}, {"operator", Str("In")}, {"values", Strings({v.node})}};
    Object term{{"matchExpressions", Value(picojson::array{Value(std::move(expr))})}};
    Object required{{"nodeSelectorTerms", Value(picojson::array{Value(std::move(term))})}};
    spec["nodeAffinity"] = Value(Object{{"required", Value(std::move(required))}});
  }
  if (!v.mount_options.empty()) spec["mountOptions"] = Strings(v.mount_options);
  SetIfSet(&spec, "persistentVolumeReclaimPolicy", v.reclaim_policy);
  SetIfSet(&spec, "storageClassName", v.storage_class_name);
  SetIfSet(&spec, "volumeMode", v.volume_mode);
  Object pv{{"apiVersion", Str("v1")}, {"kind", Str("PersistentVolume")}, {"metadata", MetaValue(v.meta)},
            {"spec", Value(std::move(spec))}};
  return Value(std::move(pv)).serialize();
}

std::string EventToJson(const Event& e) {
  using namespace k8s_json_detail;
  Object involved;
  SetIfSet(&involved, "apiVersion", e.involved_api_version);
  SetIfSet(&involved, "kind", e.involved_kind);
  SetIfSet(&involved, "name", e.involved_name);
  SetIfSet(&involved, "namespace", e.involved_namespace);
  SetIfSet(&involved, "resourceVersion", e.involved_resource_version);
  SetIfSet(&involved, "uid", e.involved_uid);
  Object ev{{"apiVersion", Str("v1")}, {"kind", Str("Event")}, {"count", Value(static_cast<double>(e.count))},
            {"involvedObject", Value(std::move(involved))}, {"metadata", MetaValue(e.meta)}};
  SetIfSet(&ev, "firstTimestamp", e.first_timestamp);
  SetIfSet(&ev, "lastTimestamp", e.last_timestamp);
  SetIfSet(&ev, "message", e.message);
  SetIfSet(&ev, "reason", e.reason);
  SetIfSet(&ev, "type", e.type);
  if (!e.source_component.empty()) {
    ev["reportingComponent"] = Str(e.source_component);
    ev["source"] = Value(Object{{"component", Str(e.source_component)}});
  }
  return Value(std::move(ev)).serialize();
}

std::string EventBumpJson(const Event& e) {
  using namespace k8s_json_detail;
  return Value(Object{{"count", Value(static_cast<double>(e.count))}, {"lastTimestamp", Str(e.last_timestamp)},
                      {"message", Str(e.message)}})
      .serialize();
}

std::string FinalizersPatchJson(const std::string& resource_version, const std::vector<std::string>& finalizers) {
  using namespace k8s_json_detail;
  return Value(Object{{"metadata", Value(Object{{"finalizers", Strings(finalizers)},
                                                {"resourceVersion", Str(resource_version)}})}})
      .serialize();
}

std::string RemoveAnnotationJson(const std::string& uid, const std::string& key) {
  using namespace k8s_json_detail;
  return Value(Object{{"metadata", Value(Object{{"annotations", Value(Object{{key, Value()}})}, {"uid", Str(uid)}})}})
      .serialize();
}

std::string SetLabelJson(const std::string& uid, const std::string& key, const std::string& value) {
  using namespace k8s_json_detail;
  const Value label = value.empty() ? Value() : Str(value);  // null: removed
  return Value(Object{{"metadata", Value(Object{{"labels", Value(Object{{key, label}})}, {"uid", Str(uid)}})}}).serialize();
}

std::string SetAnnotationJson(const std::string& resource_version, const std::string& key, const std::string& value) {
  using namespace k8s_json_detail;
  return Value(Object{{"metadata", Value(Object{{"annotations", Value(Object{{key, Str(value)}})},
                                                {"resourceVersion", Str(resource_version)}})}})
      .serialize();
}

std::string ResizingPatchJson(const std::string& resource_version, const std::string& now,
                              const std::string& capacity) {
  using namespace k8s_json_detail;
  Object cond{{"type", Str("Resizing")}, {"status", Str("True")}, {"lastTransitionTime", Str(now)}, {"lastProbeTime", Value()}};
  return Value(Object{{"metadata", Value(Object{{"resourceVersion", Str(resource_version)}})},
                      {"status", Value(Object{{"conditions", Value(picojson::array{Value(cond)})},
                                              {"allocatedResources", Value(Object{{"storage", Str(capacity)}})}})}})
      .serialize();
}

std::string ResizedPatchJson(const std::string& resource_version, const std::string& capacity) {
  using namespace k8s_json_detail;
  picojson::array drop;
  for (const char* type : {"Resizing", "FileSystemResizePending"})
    drop.push_back(Value(Object{{"$patch", Str("delete")}, {"type", Str(type)}}));
  return Value(Object{{"metadata", Value(Object{{"resourceVersion", Str(resource_version)}})},
                      {"status", Value(Object{{"capacity", Value(Object{{"storage", Str(capacity)}})},
                                              {"conditions", Value(drop)}})}})
      .serialize();
}

std::string CapacityPatchJson(const std::string& uid, const std::string& resource_version,
                              const std::string& capacity) {
  using namespace k8s_json_detail;
  return Value(Object{{"metadata", Value(Object{{"uid", Str(uid)}, {"resourceVersion", Str(resource_version)}})},
                      {"spec", Value(Object{{"capacity", Value(Object{{"storage", Str(capacity)}})}})}})
      .serialize();
}

std::string DeleteIfUidJson(const std::string& uid) {
  using namespace k8s_json_detail;
  return Value(Object{{"apiVersion", Str("v1")}, {"kind", Str("DeleteOptions")},
                      {"preconditions", Value(Object{{"uid", Str(uid)}})}})
      .serialize();
}

std::string LeaseToJson(const Lease& l) {
  using namespace k8s_json_detail;
  Object spec{{"holderIdentity", Str(l.holder)}, {"leaseDurationSeconds", Value(static_cast<double>(l.duration_seconds))},
              {"leaseTransitions", Value(static_cast<double>(l.transitions))}};
  SetIfSet(&spec, "acquireTime", l.acquire_time);
  SetIfSet(&spec, "renewTime", l.renew_time);
  return Value(Object{{"apiVersion", Str("coordination.k8s.io/v1")}, {"kind", Str("Lease")},
                      {"metadata", MetaValue(l.meta)}, {"spec", Value(std::move(spec))}})
      .serialize();
}

std::string StorageCapacityToJson(const StorageCapacity& c) {
  using namespace k8s_json_detail;
  Value meta = MetaValue(c.meta);
  if (!c.owner_node_uid.empty())
    meta.get<Object>()["ownerReferences"] = Value(picojson::array{Value(Object{
        {"apiVersion", Str("v1")}, {"kind", Str("Node")}, {"name", Str(c.node)}, {"uid", Str(c.owner_node_uid)}})});
  Object out{{"apiVersion", Str("storage.k8s.io/v1")}, {"kind", Str("CSIStorageCapacity")}, {"metadata", std::move(meta)},
             {"storageClassName", Str(c.storage_class)},
             {"nodeTopology", Value(Object{{"matchLabels", Value(Object{{ann::kHostnameLabel, Str(c.node)}})}})}};
  SetIfSet(&out, "capacity", c.capacity);
  SetIfSet(&out, "maximumVolumeSize", c.maximum_volume_size);
  return Value(std::move(out)).serialize();
}
