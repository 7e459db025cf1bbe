// The typed calls the controller makes (list, watch, create, patch, delete, events, leases)
// over an ApiConnection (api_connection.hpp). JSON mapping lives in k8s_json.hpp; policy
// lives elsewhere. The templates (List, Watch) are here; the other calls are in k8s.cpp.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kube/api_connection.hpp"
#include "kube/k8s_json.hpp"
#include "base/objects.hpp"
#include "base/status.hpp"

// Resource collection paths (cluster-wide).
namespace api {
inline constexpr const char* kClaims = "/api/v1/persistentvolumeclaims";
inline constexpr const char* kVolumes = "/api/v1/persistentvolumes";
inline constexpr const char* kClasses = "/apis/storage.k8s.io/v1/storageclasses";
inline constexpr const char* kNodes = "/api/v1/nodes";
inline std::string Events(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/events"; }
inline std::string Leases(const std::string& ns) { return "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"; }
inline std::string StorageCapacities(const std::string& ns) {
  return "/apis/storage.k8s.io/v1/namespaces/" + ns + "/csistoragecapacities";
}
inline constexpr const char* kCsiDrivers = "/apis/storage.k8s.io/v1/csidrivers";
// A value for a query string, percent-encoded (as cpp-httplib's encode_query_param does).
std::string QueryEscape(const std::string& v);
}  // namespace api

// The typed calls the program makes, over one connection (not thread-safe, as the connection).
// Each returns the API's error as a Status (Check: kNotFound, kConflict, kForbidden, ...);
// the connection's last_retry_after() gives the answer's Retry-After.
class KubeApi {
 public:
  // Longer than any object the API server stores (etcd's limit is about 1.5 MiB).
  static constexpr size_t kMaxObjectBytes = size_t{16} << 20;
  explicit KubeApi(ApiConnection* conn) : conn_(conn) {}

  // One page of a collection: at most `limit` items and, unless limit is 1, at most
  // kMaxPageBytes of JSON (a longer page is kTooLarge: ask again for fewer). Follow
  // continue_token while it is not empty. Each item goes to on_item as FromJson<T> reads it.
  // `label_selector`: only the items it selects ("": all).
  static constexpr size_t kMaxPageBytes = size_t{4} << 20;
  template <class T>
  Result<ListPage> List(const std::string& collection, const std::string& continue_token, int limit,
                        const std::function<void(Result<T>)>& on_item, const std::string& label_selector = "") {
    std::string path = collection + "?limit=" + std::to_string(limit);
    if (!continue_token.empty()) path += "&continue=" + api::QueryEscape(continue_token);
    if (!label_selector.empty()) path += "&labelSelector=" + api::QueryEscape(label_selector);
    auto r = conn_->Request("GET", path, "", "application/json", std::chrono::seconds(0),
                            limit > 1 ? kMaxPageBytes : kMaxObjectBytes);
    if (Status s = Check(r, "list " + collection); !s.ok()) return s;
    Result<ListPage> page = ParseList<T>(r->body, on_item);
    if (!page.ok()) return page.status().Wrap("reading " + collection);
    return page;
  }

  // Every item of a collection (only those `label_selector` selects, if given), page after page
  // of 500, to on_item. Stops at the first page that fails and returns its error (the items of
  // the pages before it have been given).
  template <class T>
  Status ListAll(const std::string& collection, const std::string& label_selector,
                 const std::function<void(Result<T>)>& on_item) {
    std::string token;
    do {
      Result<ListPage> page = List<T>(collection, token, 500, on_item, label_selector);
      if (!page.ok()) return page.status();
      token = page->continue_token;
    } while (!token.empty());
    return Status::Ok();
  }

  // Watches a collection from `resource_version` for about timeout_seconds; each line goes to
  // on_event as ParseWatchEvent<T> reads it (an unreadable line ends the watch with its error).
  // Returns when the server ends the stream, on_event returns false, or on an error.
  // `label_selector`: only the objects it selects; one that stops being selected comes as DELETED.
  template <class T>
  Status Watch(const std::string& collection, const std::string& resource_version, int timeout_seconds,
               const std::function<bool(const WatchEvent<T>&)>& on_event, const std::string& label_selector = "") {
    std::string path = collection + "?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                       api::QueryEscape(resource_version) + "&timeoutSeconds=" + std::to_string(timeout_seconds);
    if (!label_selector.empty()) path += "&labelSelector=" + api::QueryEscape(label_selector);
    Status line_error;
    Status s = conn_->Stream(
        path,
        [&](const std::string& line) {
          Result<WatchEvent<T>> ev = ParseWatchEvent<T>(line);
          if (!ev.ok()) line_error = ev.status();
          return ev.ok() && on_event(*ev);
        },
        std::chrono::seconds(timeout_seconds + 30));
    return line_error.ok() ? s : line_error;
  }
  // POST a PV. AlreadyExists comes back as kConflict.
  Status CreateVolume(const Volume& v);

  Result<Volume> GetVolume(const std::string& name);
  Result<Claim> GetClaim(const std::string& ns, const std::string& name);

  // Sets the PV's finalizers, if its resourceVersion is still the one in `v` (else kConflict).
  Status SetVolumeFinalizers(const Volume& v, const std::vector<std::string>& finalizers);

  // Sets an annotation of the PV, if its resourceVersion is still the one in `v` (else kConflict).
  Status SetVolumeAnnotation(const Volume& v, const std::string& key, const std::string& value);

  // Sets a label of the PV (or the claim), if its uid is still the one in `v` (else kConflict).
  // An empty `value` removes the label.
  Status SetVolumeLabel(const Volume& v, const std::string& key, const std::string& value);
  Status SetClaimLabel(const Claim& c, const std::string& key, const std::string& value);

  // May this user patch claims in `ns`? Asked without changing anything: a dry-run empty patch
  // of the claim `name`, which need not exist (authorization comes before the object is looked
  // up: 403 when not allowed, else 404, or 200 for a claim of that name, unchanged). kForbidden
  // with the server's message when not allowed; an error for a 429 or 5xx (not answered: flow
  // control comes before authorization), or the transport's when no answer came; else Ok.
  Status MayPatchClaims(const std::string& ns, const std::string& name);

  // DELETE the PV if its uid is still `uid`. NotFound is ok (already gone).
  Status DeleteVolume(const std::string& name, const std::string& uid);

  // Removes an annotation from a claim, if its uid is still the claim's (else kConflict).
  Status RemoveClaimAnnotation(const Claim& c, const std::string& key);

  // PATCH a claim's status (strategic merge; `patch` carries its resourceVersion, so a claim
  // changed since is kConflict). Returns the resourceVersion it has now.
  Result<std::string> PatchClaimStatus(const Claim& c, const std::string& patch);

  // Sets a PV's spec.capacity.storage, if its uid and resourceVersion are still the volume's
  // (else kConflict: an instance with an older view never sets an older size).
  Status SetVolumeCapacity(const Volume& v, const std::string& capacity);

  // The Node (kNotFound when it does not exist).
  Result<Node> GetNode(const std::string& name);

  // How many Nodes the cluster has: one list of one item, whose remainingItemCount says how
  // many more there are (a page of one costs the API server little at any cluster size).
  // Errors: the list's; kUnavailable when more nodes follow and the answer does not say how
  // many (no remainingItemCount).
  Result<int> CountNodes();

  // DELETE the claim if its uid is still `uid`. NotFound is ok (already gone).
  Status DeleteClaim(const std::string& ns, const std::string& name, const std::string& uid);

  Status CreateEvent(const Event& e);

  // Bumps an existing event's count, lastTimestamp and message (kNotFound if it expired).
  Status BumpEvent(const Event& e);

  // `timeout` bounds each read of the answer (the release at shutdown waits less).
  Result<Lease> GetLease(const std::string& ns, const std::string& name, std::chrono::seconds timeout = std::chrono::seconds(30));

  // Creates the lease (kConflict if it exists), or replaces it (kConflict if its
  // resourceVersion changed meanwhile). Returns the lease as stored.
  Result<Lease> CreateLease(const Lease& l);
  Result<Lease> UpdateLease(const Lease& l, std::chrono::seconds timeout = std::chrono::seconds(30));

  // CSIStorageCapacity objects: create (kConflict if the name exists), replace (kConflict if
  // its resourceVersion changed meanwhile, kNotFound if it went), delete (gone already: ok).
  // Each returns the object as stored.
  Result<StorageCapacity> CreateStorageCapacity(const StorageCapacity& c);
  Result<StorageCapacity> UpdateStorageCapacity(const StorageCapacity& c);
  Status DeleteStorageCapacity(const std::string& ns, const std::string& name);

  Result<CsiDriver> GetCsiDriver(const std::string& name);

 private:
  ApiConnection* conn_;
};
