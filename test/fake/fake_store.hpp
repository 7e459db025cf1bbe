// The fake API server's storage: the resource types it serves, the objects by key, one global
// resourceVersion counter, and a bounded per-resource history of watch events (the watch cache).
// Not locked itself: the server holds Store::mu (through Store::Lock) around every call.
// Nobody waits on it: watches read the history when the server's event loop asks them to.
#pragma once
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
  bool unconditional_update = true;     // a PUT without metadata.resourceVersion is allowed

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "persistentvolumes" or "storageclasses.storage.k8s.io" (schema.GroupResource.String()).
  std::string QualifiedResource() const { return group.empty() ? plural : plural + "." + group; }
  std::string QualifiedKind() const { return group.empty() ? kind : kind + "." + group; }
};

const std::vector<ResourceType>& ResourceTypes();

// The type serving group/version/plural, or null.
const ResourceType* FindType(const std::string& group, const std::string& version, const std::string& plural);

const ResourceType& TypeOf(const std::string& plural);

// "ns/name" for namespaced objects, "name" otherwise; also the list order (as etcd keys sort).
inline std::string ObjectKey(const std::string& ns, const std::string& name) { return ns.empty() ? name : ns + "/" + name; }

std::string RandomHex(size_t bytes);

// A random RFC 4122 version 4 UUID, as metadata.uid.
std::string NewUid();

// metadata.deletionTimestamp is set.
bool IsDeleting(const Json& obj);

// Fills in what the server sets on every new object: uid and creationTimestamp.
void InitMeta(Json& obj);

// Drops metadata's empty lists and maps: ObjectMeta tags them omitempty, so Go's encoding/json
// leaves them out of every answer, and etcd never holds them.
void DropEmptyMeta(Json& obj);

// A stored object. Immutable once stored: the objects map and the watch history share it.
using JsonRef = std::shared_ptr<const Json>;

// One change of one object. Immutable once made, but for its lines, written on first use (under
// Store::mu) and then sent to every watcher that sees the change that way.
struct WatchEvent {
  uint64_t rv = 0;
  int64_t t_ns = 0;  // when it was recorded, ns since the epoch
  std::string type;  // ADDED | MODIFIED | DELETED
  std::string ns, name;
  JsonRef object;    // the object after the change (the last state, at rv, for DELETED)
  JsonRef prev;      // the object before the change, as stored then; null for ADDED

  // {"object":..,"type":..}\n, as ToText writes it: the change as it was written.
  const std::string& Line() const;

  // A MODIFIED event as a watcher whose selector the object entered sees it: ADDED, the object.
  const std::string& EnteredLine() const;

  // A MODIFIED event as a watcher whose selector the object left sees it: DELETED, the object
  // before the change at this event's resourceVersion (cache_watcher.go convertToWatchEvent).
  const Json& Left() const;
  const std::string& LeftLine() const;

 private:
  mutable std::string line_, entered_line_, left_line_;
  mutable JsonRef left_;
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
  uint64_t SeqAfter(uint64_t rv) const;
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
  bool Skip();
  const Bucket& bucket() const { return *b_; }

 private:
  Bucket* b_;  // buckets are never removed: the pointer stays valid
  uint64_t cursor_;
};

class Store {
 public:
  explicit Store(size_t history_limit);

  std::mutex mu;  // guards everything below and all calls

  class Lock {
   public:
    explicit Lock(Store& s) : l_(s.mu) {}

   private:
    std::lock_guard<std::mutex> l_;
  };

  uint64_t rv() const { return rv_; }
  // The bucket of a resource type (made on first use).
  Bucket& bucket(std::string_view plural);

  // The stored object or null.
  const Json* Get(std::string_view plural, const std::string& key) { return Ref(plural, key).get(); }

  // The stored object itself (shared, immutable), or null.
  const JsonRef& Ref(std::string_view plural, const std::string& key);

  // Stores obj under its metadata namespace/name with the next resourceVersion, records an
  // ADDED or MODIFIED event, and returns the stored object.
  JsonRef Put(std::string_view plural, Json obj);

  // Removes the object (if present) with a DELETED event carrying its last state at a new
  // resourceVersion; returns that state (a null Json when it was not there).
  JsonRef Remove(std::string_view plural, const std::string& key);

  // Put, except that an object being deleted whose last finalizer is gone is removed instead
  // (the registry's shouldDeleteDuringUpdate). Returns the stored or removed state.
  JsonRef Commit(std::string_view plural, Json obj);

  // Forgets all history: watches from any earlier resourceVersion then get 410 Expired.
  void Compact();

 private:
  void Record(Bucket& b, const char* type, const JsonRef& obj, JsonRef prev);

  size_t history_limit_;
  uint64_t rv_ = 0;
  std::map<std::string, Bucket, std::less<>> buckets_;
};

}  // namespace fake
