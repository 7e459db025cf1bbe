// The typed calls the controller makes (list, watch, create, patch, delete, events, leases)
// over an ApiConnection (api_connection.hpp). JSON mapping lives in k8s_json.hpp; policy
// lives elsewhere.
#pragma once
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "api_connection.hpp"
#include "json_write.hpp"
#include "k8s_json.hpp"
#include "kubeconfig.hpp"
#include "log.hpp"
#include "objects.hpp"
#include "status.hpp"

// Resource collection paths (cluster-wide).
namespace api {
inline constexpr const char* kClaims = "/api/v1/persistentvolumeclaims";
inline constexpr const char* kVolumes = "/api/v1/persistentvolumes";
inline constexpr const char* kClasses = "/apis/storage.k8s.io/v1/storageclasses";
inline std::string Events(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/events"; }
inline std::string Leases(const std::string& ns) { return "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"; }

// A value for a query string: all but unreserved characters percent-encoded (as Go's
// url.QueryEscape, with %20 for a space).
inline std::string QueryEscape(const std::string& v) {
  return httplib::detail::encode_query_param(v);
}
}  // namespace api

// The typed calls the controller makes, over one connection.
class KubeApi {
 public:
  explicit KubeApi(ApiConnection* conn) : conn_(conn) {}

  // One page of a collection (limit 500 per request; follow continue_token). Each item goes
  // to on_item once the page is read; see ParseList.
  Result<ListPage> List(const std::string& collection, const std::string& continue_token,
                        const std::function<void(JsonRef)>& on_item) {
    std::string path = collection + "?limit=500";
    if (!continue_token.empty()) path += "&continue=" + api::QueryEscape(continue_token);
    auto r = conn_->Request("GET", path);
    if (Status s = Check(r, "list " + collection); !s.ok()) return s;
    Result<ListPage> page = ParseList(r->body, on_item);
    if (!page.ok()) return page.status().Wrap("reading " + collection);
    return page;
  }

  // POST /api/v1/persistentvolumes. AlreadyExists comes back as kConflict.
  Status CreateVolume(const Volume& v) { return CreateVolumeDone(v.meta.name, conn_->Request(CreateVolumeCall(v))); }

  // GET one PV (used only after a create said AlreadyExists).
  Result<Volume> GetVolume(const std::string& name) {
    auto r = conn_->Request("GET", std::string(api::kVolumes) + "/" + name);
    if (Status s = Check(r, "get PersistentVolume " + name); !s.ok()) return s;
    JsonDoc doc;
    if (Status s = doc.Read(r->body); !s.ok()) return s;
    return VolumeFromJson(doc.root());
  }

  // Sets the PV's finalizers to `finalizers`, if its resourceVersion is still `rv`
  // (a merge patch carrying resourceVersion is checked like an update: 409 if stale).
  Status SetVolumeFinalizers(const Volume& v, const std::vector<std::string>& finalizers) {
    return SetVolumeFinalizersDone(v.meta.name, conn_->Request(SetVolumeFinalizersCall(v, finalizers)));
  }

  // DELETE the PV if its uid is still `uid`. NotFound is ok (already gone).
  Status DeleteVolume(const std::string& name, const std::string& uid) {
    return DeleteVolumeDone(name, conn_->Request(DeleteVolumeCall(name, uid)));
  }

  // The same three as requests to send together with others (ApiConnection::RequestAll), and
  // what their answers mean.
  static ApiConnection::Call CreateVolumeCall(const Volume& v) { return {"POST", api::kVolumes, VolumeToJson(v)}; }
  static Status CreateVolumeDone(const std::string& name, const Result<HttpResponse>& r) {
    return Check(r, "create PersistentVolume " + name);
  }
  static ApiConnection::Call SetVolumeFinalizersCall(const Volume& v, const std::vector<std::string>& finalizers) {
    picojson::array list;
    for (const auto& f : finalizers) list.emplace_back(f);
    picojson::object meta;
    meta["resourceVersion"] = picojson::value(v.meta.resource_version);
    meta["finalizers"] = picojson::value(list);
    picojson::object patch;
    patch["metadata"] = picojson::value(meta);
    return {"PATCH", std::string(api::kVolumes) + "/" + v.meta.name, ToJson(picojson::value(patch)),
            "application/merge-patch+json"};
  }
  static Status SetVolumeFinalizersDone(const std::string& name, const Result<HttpResponse>& r) {
    return Check(r, "remove finalizer of PersistentVolume " + name);
  }
  static ApiConnection::Call DeleteVolumeCall(const std::string& name, const std::string& uid) {
    return {"DELETE", std::string(api::kVolumes) + "/" + name,
            R"({"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":")" + uid + "\"}}"};
  }
  static Status DeleteVolumeDone(const std::string& name, const Result<HttpResponse>& r) {
    if (r.ok() && r->status == 404) return Status::Ok();
    return Check(r, "delete PersistentVolume " + name);
  }

  // Events to create, or to bump (count, lastTimestamp and message of an existing one, as
  // Kubernetes' event recorder does), sent at once over the connection: a Status each, in order.
  struct EventWrite {
    const Event* event;
    bool bump;
  };
  std::vector<Status> WriteEvents(const std::vector<EventWrite>& writes) {
    std::vector<ApiConnection::Call> calls;
    for (const EventWrite& w : writes) calls.push_back(w.bump ? BumpCall(*w.event) : CreateCall(*w.event));
    std::vector<Result<HttpResponse>> got = conn_->RequestAll(calls);
    std::vector<Status> out;
    for (size_t i = 0; i < writes.size(); ++i)
      out.push_back(Check(got[i], (writes[i].bump ? "update Event " : "create Event ") + writes[i].event->meta.name));
    return out;
  }

  ApiConnection* connection() { return conn_; }

 private:
  static ApiConnection::Call CreateCall(const Event& e) {
    return {"POST", api::Events(e.meta.namespace_), EventToJson(e)};
  }
  static ApiConnection::Call BumpCall(const Event& e) {
    picojson::object patch;
    patch["count"] = picojson::value(static_cast<double>(e.count));
    patch["lastTimestamp"] = picojson::value(e.last_timestamp);
    patch["message"] = picojson::value(e.message);
    return {"PATCH", api::Events(e.meta.namespace_) + "/" + e.meta.name, ToJson(picojson::value(patch)),
            "application/merge-patch+json"};
  }

  ApiConnection* conn_;
};
