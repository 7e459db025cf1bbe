// The typed calls of k8s.hpp that are not templates.
#include "kube/k8s.hpp"

#include <httplib.h>

namespace api {
std::string QueryEscape(const std::string& v) { return httplib::detail::encode_query_param(v); }
}  // namespace api

Status KubeApi::CreateVolume(const Volume& v) {
  return Check(conn_->Request("POST", api::kVolumes, VolumeToJson(v)), "create PersistentVolume " + v.meta.name);
}

Result<Volume> KubeApi::GetVolume(const std::string& name) {
  auto r = conn_->Request("GET", std::string(api::kVolumes) + "/" + name);
  if (Status s = Check(r, "get PersistentVolume " + name); !s.ok()) return s;
  return FromJsonText<Volume>(r->body);
}

Result<Claim> KubeApi::GetClaim(const std::string& ns, const std::string& name) {
  auto r = conn_->Request("GET", "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name);
  if (Status s = Check(r, "get PersistentVolumeClaim " + ns + "/" + name); !s.ok()) return s;
  return FromJsonText<Claim>(r->body);
}

Status KubeApi::SetVolumeFinalizers(const Volume& v, const std::vector<std::string>& finalizers) {
  auto r = conn_->Request("PATCH", std::string(api::kVolumes) + "/" + v.meta.name,
                          FinalizersPatchJson(v.meta.resource_version, finalizers), "application/merge-patch+json");
  return Check(r, "remove finalizer of PersistentVolume " + v.meta.name);
}

Status KubeApi::SetVolumeAnnotation(const Volume& v, const std::string& key, const std::string& value) {
  auto r = conn_->Request("PATCH", std::string(api::kVolumes) + "/" + v.meta.name,
                          SetAnnotationJson(v.meta.resource_version, key, value), "application/merge-patch+json");
  return Check(r, "annotate PersistentVolume " + v.meta.name);
}

Status KubeApi::SetVolumeLabel(const Volume& v, const std::string& key, const std::string& value) {
  auto r = conn_->Request("PATCH", std::string(api::kVolumes) + "/" + v.meta.name, SetLabelJson(v.meta.uid, key, value),
                          "application/merge-patch+json");
  return Check(r, "label PersistentVolume " + v.meta.name);
}

Status KubeApi::SetClaimLabel(const Claim& c, const std::string& key, const std::string& value) {
  auto r = conn_->Request("PATCH", "/api/v1/namespaces/" + c.meta.namespace_ + "/persistentvolumeclaims/" + c.meta.name,
                          SetLabelJson(c.meta.uid, key, value), "application/merge-patch+json");
  return Check(r, "label PersistentVolumeClaim " + c.meta.namespace_ + "/" + c.meta.name);
}

Status KubeApi::MayPatchClaims(const std::string& ns, const std::string& name) {
  auto r = conn_->Request("PATCH", "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name + "?dryRun=All", "{}",
                          "application/merge-patch+json");
  if (!r.ok()) return r.status();
  // Forbidden, or not answered (flow control's 429, a server error): said as such.
  if (r->status == 403 || r->status == 429 || r->status >= 500) return Check(r, "patch PersistentVolumeClaims in " + ns);
  return Status::Ok();
}

Status KubeApi::DeleteVolume(const std::string& name, const std::string& uid) {
  auto r = conn_->Request("DELETE", std::string(api::kVolumes) + "/" + name, DeleteIfUidJson(uid));
  if (r.ok() && r->status == 404) return Status::Ok();
  return Check(r, "delete PersistentVolume " + name);
}

Status KubeApi::RemoveClaimAnnotation(const Claim& c, const std::string& key) {
  auto r = conn_->Request("PATCH", "/api/v1/namespaces/" + c.meta.namespace_ + "/persistentvolumeclaims/" + c.meta.name,
                          RemoveAnnotationJson(c.meta.uid, key), "application/merge-patch+json");
  return Check(r, "remove annotation " + key + " from PersistentVolumeClaim " + c.meta.namespace_ + "/" + c.meta.name);
}

Result<std::string> KubeApi::PatchClaimStatus(const Claim& c, const std::string& patch) {
  auto r = conn_->Request("PATCH", "/api/v1/namespaces/" + c.meta.namespace_ + "/persistentvolumeclaims/" + c.meta.name +
                          "/status", patch, "application/strategic-merge-patch+json");
  if (Status s = Check(r, "update the status of PersistentVolumeClaim " + c.meta.namespace_ + "/" + c.meta.name); !s.ok())
    return s;
  Result<Claim> now = FromJsonText<Claim>(r->body);
  if (!now.ok()) return now.status();
  return now->meta.resource_version;
}

Status KubeApi::SetVolumeCapacity(const Volume& v, const std::string& capacity) {
  auto r = conn_->Request("PATCH", std::string(api::kVolumes) + "/" + v.meta.name,
                          CapacityPatchJson(v.meta.uid, v.meta.resource_version, capacity),
                          "application/merge-patch+json");
  return Check(r, "set the capacity of PersistentVolume " + v.meta.name);
}

Result<int> KubeApi::CountNodes() {
  Result<ListPage> page = List<Node>(api::kNodes, "", 1, [](Result<Node>) {});
  if (!page.ok()) return page.status();
  if (page->continue_token.empty()) return static_cast<int>(page->items);  // every node listed
  // More nodes, but how many the server does not say: a guess (such as none) could call a
  // large cluster small.
  if (page->remaining < 0)
    return Status(Status::kUnavailable, "the API server's list of nodes gives no remainingItemCount (its "
                                        "RemainingItemCount feature gate off, or a server older than 1.15): how many "
                                        "nodes there are is unknown");
  return static_cast<int>(page->items) + page->remaining;
}

Result<Node> KubeApi::GetNode(const std::string& name) {
  auto r = conn_->Request("GET", std::string(api::kNodes) + "/" + name, "", "application/json", std::chrono::seconds(0),
                          kMaxObjectBytes);
  if (Status s = Check(r, "get Node " + name); !s.ok()) return s;
  return FromJsonText<Node>(r->body);
}

Status KubeApi::DeleteClaim(const std::string& ns, const std::string& name, const std::string& uid) {
  auto r = conn_->Request("DELETE", "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name, DeleteIfUidJson(uid));
  if (r.ok() && r->status == 404) return Status::Ok();
  return Check(r, "delete PersistentVolumeClaim " + ns + "/" + name);
}

Status KubeApi::CreateEvent(const Event& e) {
  return Check(conn_->Request("POST", api::Events(e.meta.namespace_), EventToJson(e)), "create Event " + e.meta.name);
}

Status KubeApi::BumpEvent(const Event& e) {
  auto r = conn_->Request("PATCH", api::Events(e.meta.namespace_) + "/" + e.meta.name, EventBumpJson(e),
                          "application/merge-patch+json");
  return Check(r, "update Event " + e.meta.name);
}

Result<Lease> KubeApi::GetLease(const std::string& ns, const std::string& name, std::chrono::seconds timeout) {
  auto r = conn_->Request("GET", api::Leases(ns) + "/" + name, "", "application/json", timeout);
  if (Status s = Check(r, "get lease " + ns + "/" + name); !s.ok()) return s;
  return FromJsonText<Lease>(r->body);
}

Result<Lease> KubeApi::CreateLease(const Lease& l) {
  auto r = conn_->Request("POST", api::Leases(l.meta.namespace_), LeaseToJson(l));
  if (Status s = Check(r, "create lease " + l.meta.namespace_ + "/" + l.meta.name); !s.ok()) return s;
  return FromJsonText<Lease>(r->body);
}

Result<Lease> KubeApi::UpdateLease(const Lease& l, std::chrono::seconds timeout) {
  auto r = conn_->Request("PUT", api::Leases(l.meta.namespace_) + "/" + l.meta.name, LeaseToJson(l), "application/json",
                          timeout);
  if (Status s = Check(r, "update lease " + l.meta.namespace_ + "/" + l.meta.name); !s.ok()) return s;
  return FromJsonText<Lease>(r->body);
}

Result<StorageCapacity> KubeApi::CreateStorageCapacity(const StorageCapacity& c) {
  auto r = conn_->Request("POST", api::StorageCapacities(c.meta.namespace_), StorageCapacityToJson(c));
  if (Status s = Check(r, "create CSIStorageCapacity " + c.meta.namespace_ + "/" + c.meta.name); !s.ok()) return s;
  return FromJsonText<StorageCapacity>(r->body);
}

Result<StorageCapacity> KubeApi::UpdateStorageCapacity(const StorageCapacity& c) {
  auto r = conn_->Request("PUT", api::StorageCapacities(c.meta.namespace_) + "/" + c.meta.name, StorageCapacityToJson(c));
  if (Status s = Check(r, "update CSIStorageCapacity " + c.meta.namespace_ + "/" + c.meta.name); !s.ok()) return s;
  return FromJsonText<StorageCapacity>(r->body);
}

Status KubeApi::DeleteStorageCapacity(const std::string& ns, const std::string& name) {
  auto r = conn_->Request("DELETE", api::StorageCapacities(ns) + "/" + name);
  if (r.ok() && r->status == 404) return Status::Ok();
  return Check(r, "delete CSIStorageCapacity " + ns + "/" + name);
}

Result<CsiDriver> KubeApi::GetCsiDriver(const std::string& name) {
  auto r = conn_->Request("GET", std::string(api::kCsiDrivers) + "/" + name);
  if (Status s = Check(r, "get CSIDriver " + name); !s.ok()) return s;
  return FromJsonText<CsiDriver>(r->body);
}
