// The one JSON mapping of the program: Kubernetes API JSON ⇄ the plain structs of objects.hpp,
// list pages, watch events and lines, and error bodies. picojson parses and writes (in
// k8s_json.cpp only); nothing here throws (picojson's get<T> is called only after is<T>), and
// every field is type-checked before it is read. The rest of the program sees only the plain
// structs. The functions keep no state: they may be called from any thread.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "base/objects.hpp"
#include "base/status.hpp"

namespace picojson {
class value;
}  // namespace picojson

// The templates below are defined in k8s_json.cpp for T = Claim, Volume, StorageClass, Event,
// Lease, Node, StorageCapacity and CsiDriver (the kinds this program reads).

// An object (Claim, Volume, StorageClass, Event or Lease) from its JSON. Absent or null fields
// stay empty; a field of the wrong JSON type, a non-object, or a different "kind" is an error
// (kInvalid) naming the field and the object ("PersistentVolumeClaim apps/data: field
// spec.accessModes[1]: expected a string, got number").
template <class T>
Result<T> FromJson(const picojson::value& v);

// The same from JSON text.
template <class T>
Result<T> FromJsonText(const std::string& text);

// The PV to POST to /api/v1/persistentvolumes, as JSON text: apiVersion, kind, metadata
// (name, and annotations, labels, finalizers when present), spec (capacity.storage,
// accessModes, volumeMode and storageClassName and mountOptions when set,
// persistentVolumeReclaimPolicy, claimRef when has_claim_ref, hostPath or local when
// host_path is set, nodeAffinity when `node` is set). Status is the server's.
std::string VolumeToJson(const Volume& v);

// The core/v1 Event to POST to /api/v1/namespaces/<ns>/events, as JSON text. Empty strings
// are left out (e.g. involvedObject.namespace of a cluster-scoped object, unset timestamps);
// reportingComponent repeats source.component.
std::string EventToJson(const Event& e);

// The merge patch that bumps a repeated event: count, lastTimestamp and message.
std::string EventBumpJson(const Event& e);

// The merge patch that sets a PV's finalizers, guarded by its resourceVersion (a merge patch
// carrying resourceVersion is checked like an update: 409 if stale).
std::string FinalizersPatchJson(const std::string& resource_version, const std::vector<std::string>& finalizers);

// The merge patch that removes one annotation, guarded by the object's uid (a claim deleted
// and made again under its name is not touched: 409).
std::string RemoveAnnotationJson(const std::string& uid, const std::string& key);

// A merge patch that sets label `key` to `value` (removes it when `value` is ""), if the
// object's uid is still `uid`.
std::string SetLabelJson(const std::string& uid, const std::string& key, const std::string& value);

// The merge patch that sets one annotation, guarded by the object's resourceVersion.
std::string SetAnnotationJson(const std::string& resource_version, const std::string& key, const std::string& value);

// Volume expansion, as an external resizer writes it (strategic merge patches of a claim's
// status, with its resourceVersion as a precondition). The first marks the claim Resizing
// (`now`: RFC 3339) and records the size being allocated (status.allocatedResources, which
// API servers without the RecoverVolumeExpansionFailure feature drop); the second records the
// new capacity and takes the resize conditions out.
std::string ResizingPatchJson(const std::string& resource_version, const std::string& now,
                              const std::string& capacity);

std::string ResizedPatchJson(const std::string& resource_version, const std::string& capacity);

// The merge patch that sets a PV's capacity, guarded by its uid and resourceVersion.
std::string CapacityPatchJson(const std::string& uid, const std::string& resource_version,
                              const std::string& capacity);

// The DeleteOptions that delete an object only if its uid is still `uid`.
std::string DeleteIfUidJson(const std::string& uid);

// A coordination.k8s.io/v1 Lease as JSON text (metadata.resourceVersion when set, so that an
// update is refused if the lease changed meanwhile).
std::string LeaseToJson(const Lease& l);

// A storage.k8s.io/v1 CSIStorageCapacity as JSON text: metadata (with resourceVersion when set,
// and an ownerReference to the Node when owner_node_uid is set), storageClassName,
// nodeTopology (matchLabels kubernetes.io/hostname), capacity and maximumVolumeSize when set.
std::string StorageCapacityToJson(const StorageCapacity& c);

// One line for logs and events from an error answer. A metav1.Status body gives
// "<message> (<reason>, <http_code>)", e.g. `persistentvolumes "x" already exists
// (AlreadyExists, 409)`; any other body gives its first 200 bytes and " (<http_code>)";
// an empty body gives "empty response (<http_code>)". Control characters become spaces.
std::string StatusMessage(int http_code, const std::string& body);

// Splits a watch stream into lines as its chunks arrive, in pieces of any size. Not thread-safe.
class WatchLineSplitter {
 public:
  // Lines longer than max_line bytes (without the "\n") are an error.
  explicit WatchLineSplitter(size_t max_line = size_t{16} << 20) : max_line_(max_line) {}

  // Appends n bytes and calls on_line for each line completed, without its "\n" (empty lines
  // are skipped; a trailing "\r" is kept). Returns an error (kInvalid) as soon as a line
  // grows beyond max_line; the stream must then be dropped, and every later Feed fails too.
  Status Feed(const char* data, size_t n, const std::function<void(const std::string&)>& on_line);

  // Bytes received after the last "\n" (an incomplete line).
  size_t pending() const { return pending_.size(); }

 private:
  size_t max_line_;
  std::string pending_;
  Status failed_;
};

// One watch event, read.
template <class T>
struct WatchEvent {
  std::string type;              // ADDED | MODIFIED | DELETED | BOOKMARK | ERROR
  Result<T> object = T();        // ADDED, MODIFIED, DELETED: the object, or why it is unreadable
  std::string resource_version;  // BOOKMARK: where the watch stands
  int code = 0;                  // ERROR: the Status's HTTP code (410: too old, relist)
  std::string message;           // ERROR: as StatusMessage gives it
};

// Parses one watch line. Errors (kInvalid): bad JSON, no string "type", no object "object".
// An object that cannot be read is not an error of the line: it is in `object`.
template <class T>
Result<WatchEvent<T>> ParseWatchEvent(const std::string& line);

// One page of a list answer: metadata.resourceVersion, metadata.continue, and how many items
// it held (each went to ParseList's callback).
struct ListPage {
  std::string resource_version;
  std::string continue_token;
  size_t items = 0;
  // metadata.remainingItemCount: the items after this page; -1 when not given (a last page, a
  // list with a selector, or a server whose RemainingItemCount feature gate is off).
  int remaining = -1;
};

// Reads a list answer, then hands each element of items to on_item, in order, as FromJson<T>
// reads it. Errors (kInvalid): bad JSON, not an object, wrong field types, items not an array;
// no item is handed over then. Absent or null items is an empty list.
template <class T>
Result<ListPage> ParseList(const std::string& text, const std::function<void(Result<T>)>& on_item);

// Pieces of the above that the tests use on their own.
namespace k8s_json_detail {

// Parses JSON text. Errors (kInvalid): picojson's message (with its line), a number beyond a
// double's range (picojson throws for those), or data after the value (picojson stops at the
// end of the first value).
Status Parse(const std::string& text, picojson::value* out);

}  // namespace k8s_json_detail
