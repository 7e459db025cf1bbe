// The fake API server's storage: the resource types it serves, the objects by key, one global
// resourceVersion counter, and a bounded per-resource history of watch events (the watch cache).
// Not locked itself: the server holds Store::mu (through Store::Lock) around every call.
// Nobody waits on it: watches read the history when the server's event loop asks them to.
#pragma once
#include <openssl/rand.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "test/fake/fake_json.hpp"

namespace fake {

// One served resource, with the strategy flags of its real registry.
struct ResourceType {
  std::string group;     // "" = core
  std::string version;   // "v1"
  std::string plural;    // "persistentvolumeclaims"
  std::string singular;  // "persistentvolumeclaim"
  std::string kind;      // "PersistentVolumeClaim"
  bool namespaced = false;
  std::vector<std::string> short_names;
  bool has_status = false;             // a /status subresource; the main resource ignores status
  bool allow_create_on_update = false;  // PUT of a missing object creates it
  bool return_deleted_object = false;   // DELETE answers the object rather than a Status

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "persistentvolumes" or "storageclasses.storage.k8s.io" (schema.GroupResource.String()).
  std::string QualifiedResource() const { return group.empty() ? plural : plural + "." + group; }
  std::string QualifiedKind() const { return group.empty() ? kind : kind + "." + group; }
};

inline const std::vector<ResourceType>& ResourceTypes() {
  static const std::vector<ResourceType> types = {
      {"", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true, {"pvc"}, true, false, true},
      {"", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false, {"pv"}, true, false, true},
      {"", "v1", "events", "event", "Event", true, {"ev"}, false, true, false},
      {"", "v1", "pods", "pod", "Pod", true, {"po"}, true, false, true},
      {"", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true, false, true},
      {"", "v1", "nodes", "node", "Node", false, {"no"}, true, false, false},
      {"storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", false, {"sc"}, false, false, true},
      {"coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, false, true, false},
  };
  return types;
}

// The type serving group/version/plural, or null.
inline const ResourceType* FindType(const std::string& group, const std::string& version, const std::string& plural) {
  for (const auto& t : ResourceTypes())
    if (t.group == group && t.version == version && t.plural == plural) return &t;
  return nullptr;
}

inline const ResourceType& TypeOf(const std::string& plural) {
  for (const auto& t : ResourceTypes())
    if (t.plural == plural) return t;
  return ResourceTypes()[0];
}

// "ns/name" for namespaced objects, "name" otherwise; also the list order (as etcd keys sort).
inline std::string ObjectKey(const std::string& ns, const std::string& name) { return ns.empty() ? name : ns + "/" + name; }

inline std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> b(bytes);
  RAND_bytes(b.data(), static_cast<int>(bytes));
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// A random RFC 4122 version 4 UUID, as metadata.uid.
inline std::string NewUid() {
  std::string hex = RandomHex(16);
  hex[12] = '4';                                                   // version 4
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];  // variant 10xx
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" + hex.substr(20);
}

// metadata.deletionTimestamp is set.
inline bool IsDeleting(const Json& obj) {
  const Json* t = Path(obj, {"metadata", "deletionTimestamp"});
  return t != nullptr && t->is<std::string>();
}

// Fills in what the server sets on every new object: uid and creationTimestamp.
inline void InitMeta(Json& obj) {
  JsonObject& m = Meta(obj);
  m["uid"] = Json(NewUid());
  m["creationTimestamp"] = Json(NowRfc3339());
  m.erase("deletionTimestamp");
  m.erase("resourceVersion");
}

// Drops metadata's empty lists and maps: ObjectMeta tags them omitempty, so Go's encoding/json
// leaves them out of every answer, and etcd never holds them.
inline void DropEmptyMeta(Json& obj) {
  JsonObject& m = Meta(obj);
  for (const char* k : {"finalizers", "labels", "annotations", "ownerReferences", "managedFields"}) {
    auto it = m.find(k);
    if (it == m.end()) continue;
    const Json& v = it->second;
    if ((v.is<JsonArray>() && v.get<JsonArray>().empty()) || (v.is<JsonObject>() && v.get<JsonObject>().empty())) m.erase(it);
  }
}

// A stored object. Immutable once stored: the objects map and the watch history share it.
using JsonRef = std::shared_ptr<const Json>;

// One change, as every watcher of its resource sees it. Immutable once made, but for its line,
// written on first use (under Store::mu) and then sent to every watcher.
struct WatchEvent {
  uint64_t rv = 0;
  int64_t t_ns = 0;  // when it was recorded, ns since the epoch
  std::string type;  // ADDED | MODIFIED | DELETED
  std::string ns, name;
  JsonRef object;    // the object after the change (the last state for DELETED)

  // {"object":..,"type":..}\n, as ToText writes it.
  const std::string& Line() const {
    if (line_.empty()) {
      JsonObject line;
      line["object"] = *object;
      line["type"] = Json(type);
      line_ = ToText(Json(line)) + "\n";
    }
    return line_;
  }

 private:
  mutable std::string line_;
};
using EventPtr = std::shared_ptr<const WatchEvent>;

// The objects and history of one resource type.
struct Bucket {
  using Objects = std::map<std::string, JsonRef>;
  Objects objects;  // by ObjectKey, in order (lists); changed only through the Store
  std::deque<EventPtr> history;         // oldest first
  uint64_t first_seq = 0;               // sequence number of history.front()
  uint64_t floor_rv = 0;                // every event with rv > floor_rv is in history
  uint64_t NextSeq() const { return first_seq + history.size(); }
  // The sequence number of the first event after resourceVersion rv (callers check floor_rv).
  uint64_t SeqAfter(uint64_t rv) const {
    auto it = std::upper_bound(history.begin(), history.end(), rv, [](uint64_t v, const EventPtr& e) { return v < e->rv; });
    return first_seq + static_cast<uint64_t>(it - history.begin());
  }
  // The event with sequence number seq, first_seq <= seq < NextSeq().
  const WatchEvent& At(uint64_t seq) const { return *history[seq - first_seq]; }
  // The last event (of the last Put, Commit or Remove); history is never empty after one.
  const EventPtr& Last() const { return history.back(); }
};

// How the fake's controllers follow a bucket, as an informer follows its watch: each event
// once, in order, from when the feed was made; when the history overran it (events trimmed
// before it read them), a relist instead, then on from the present. Handlers may change the
// bucket meanwhile: what they add is read in the same call. Callers hold Store::mu.
class Feed {
 public:
  explicit Feed(Bucket& b) : b_(&b), cursor_(b.NextSeq()) {}
  // on_event(event) for each new event, on_relist() for a relist; true when there was either.
  template <class OnEvent, class OnRelist>
  bool Read(OnEvent on_event, OnRelist on_relist) {
    bool any = false;
    for (;; any = true) {
      if (cursor_ < b_->first_seq) {
        cursor_ = b_->NextSeq();
        on_relist();
        continue;
      }
      if (cursor_ == b_->NextSeq()) return any;
      EventPtr ev = b_->history[cursor_++ - b_->first_seq];  // held: a handler may trim the history
      on_event(*ev);
    }
  }
  // Skips to the present; true when anything had changed.
  bool Skip() {
    const bool any = cursor_ != b_->NextSeq() || cursor_ < b_->first_seq;
    cursor_ = b_->NextSeq();
    return any;
  }
  const Bucket& bucket() const { return *b_; }

 private:
  Bucket* b_;  // buckets are never removed: the pointer stays valid
  uint64_t cursor_;
};

class Store {
 public:
  explicit Store(size_t history_limit) : history_limit_(history_limit == 0 ? 1 : history_limit) {
    for (const auto& t : ResourceTypes()) buckets_[t.plural];
  }

  std::mutex mu;  // guards everything below and all calls

  class Lock {
   public:
    explicit Lock(Store& s) : l_(s.mu) {}

   private:
    std::lock_guard<std::mutex> l_;
  };

  uint64_t rv() const { return rv_; }
  // The bucket of a resource type (made on first use).
  Bucket& bucket(std::string_view plural) {
    auto it = buckets_.find(plural);
    if (it == buckets_.end()) it = buckets_.emplace(std::string(plural), Bucket()).first;
    return it->second;
  }

  // The stored object or null.
  const Json* Get(std::string_view plural, const std::string& key) { return Ref(plural, key).get(); }

  // The stored object itself (shared, immutable), or null.
  const JsonRef& Ref(std::string_view plural, const std::string& key) {
    static const JsonRef kNone;
    const auto& objects = bucket(plural).objects;
    auto it = objects.find(key);
    return it == objects.end() ? kNone : it->second;
  }

  // Stores obj under its metadata namespace/name with the next resourceVersion, records an
  // ADDED or MODIFIED event, and returns the stored object.
  JsonRef Put(std::string_view plural, Json obj) {
    std::string key = ObjectKey(Str(obj, {"metadata", "namespace"}), Str(obj, {"metadata", "name"}));
    auto& b = bucket(plural);
    DropEmptyMeta(obj);
    Meta(obj)["resourceVersion"] = Json(std::to_string(++rv_));
    auto stored = std::make_shared<const Json>(std::move(obj));
    const bool existed = b.objects.count(key) > 0;
    b.objects[key] = stored;
    Record(b, existed ? "MODIFIED" : "ADDED", stored);
    return stored;
  }

  // Removes the object (if present) with a DELETED event carrying its last state at a new
  // resourceVersion; returns that state (a null Json when it was not there).
  JsonRef Remove(std::string_view plural, const std::string& key) {
    auto& b = bucket(plural);
    auto it = b.objects.find(key);
    if (it == b.objects.end()) return std::make_shared<const Json>();
    Json obj = *it->second;
    b.objects.erase(it);
    Meta(obj)["resourceVersion"] = Json(std::to_string(++rv_));
    auto last = std::make_shared<const Json>(std::move(obj));
    Record(b, "DELETED", last);
    return last;
  }

  // Put, except that an object being deleted whose last finalizer is gone is removed instead
  // (the registry's shouldDeleteDuringUpdate). Returns the stored or removed state.
  JsonRef Commit(std::string_view plural, Json obj) {
    if (IsDeleting(obj) && StringList(obj, {"metadata", "finalizers"}).empty())
      return Remove(plural, ObjectKey(Str(obj, {"metadata", "namespace"}), Str(obj, {"metadata", "name"})));
    return Put(plural, std::move(obj));
  }

  // Forgets all history: watches from any earlier resourceVersion then get 410 Expired.
  void Compact() {
    for (auto& [plural, b] : buckets_) {
      b.first_seq += b.history.size();
      b.history.clear();
      b.floor_rv = rv_;
    }
  }

 private:
  void Record(Bucket& b, const char* type, const JsonRef& obj) {
    auto ev = std::make_shared<WatchEvent>();
    ev->rv = rv_;
    ev->t_ns = NowNs();
    ev->type = type;
    ev->ns = Str(*obj, {"metadata", "namespace"});
    ev->name = Str(*obj, {"metadata", "name"});
    ev->object = obj;
    b.history.push_back(std::move(ev));
    while (b.history.size() > history_limit_) {
      b.history.pop_front();
      ++b.first_seq;
      b.floor_rv = b.history.front()->rv - 1;  // as watch_cache.go: too old below oldest-1
    }
  }

  size_t history_limit_;
  uint64_t rv_ = 0;
  std::map<std::string, Bucket, std::less<>> buckets_;
};

}  // namespace fake
