// An informer keeps a read-only cache of one kind of object: it lists the collection (in
// pages), then watches from the list's resourceVersion, resumes a dropped watch from the last
// version seen, relists on 410 Gone after a backoff of its own (RelistBackoff), and backs off
// (capped, jittered, Retry-After honoured) on errors. Every change calls the handler with the
// object's key. One thread per informer.
// Objects are cached as the transform leaves them (the controller's keep only the fields its
// decisions read). Defined in informer.cpp for T = Claim, Volume, StorageClass and Node.
// It may watch several label selections of one collection at once (SetSelections), each with
// its own list, watch and thread, into one cache: the API server cannot OR two selectors; and
// change them while it runs (Reselect).
// Get, ForEach, Size, Synced and WatchRestarts may be called from any thread; the handler runs
// on the thread of the selection that changed.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kube/k8s.hpp"
#include "base/log.hpp"
#include "base/queue.hpp"

// The cache key of an object: "namespace/name", or "name" when cluster-scoped.
inline std::string KeyOf(const ObjectMeta& m) { return m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name; }

template <class T>
class Informer {
 public:
  // Trims an object before it is cached (e.g. SlimForCache); may be null.
  using Transform = void (*)(T*);
  // Called (outside the cache lock) after each change with the key of the object that was
  // added, changed or removed, and the object as cached now (null when removed).
  using Handler = std::function<void(const std::string& key, const T* now)>;

  Informer(std::string kind, std::string collection, Transform transform, std::shared_ptr<const ApiEndpoint> ep,
           Handler handler)
      : kind_(std::move(kind)), collection_(std::move(collection)), transform_(transform), ep_(std::move(ep)),
        handler_(std::move(handler)) {
    SetSelections({""});
  }

  ~Informer() { Stop(); }

  // Watches these label selections (labelSelector values; "" is the whole collection) instead
  // of the whole collection. Call before Start. The selections should not overlap: an object
  // in two of them is cached twice (Get and ForEach give it once). An object that moves from
  // one selection to another (its labels changed) is removed from one and added to the other,
  // in an order no one controls: for a moment it may be in neither, which the handler sees as
  // a removal.
  void SetSelections(const std::vector<std::string>& label_selectors);

  // While running (after Start): watches `label_selectors` from now on. Starts the selections
  // not watched yet and waits until each holds its first list, then ends the ones not in
  // `label_selectors`; an object then in no selection is removed from the cache, and the
  // handler sees it as removed. So an object in an old and a new selection is never missing
  // meanwhile (it may be cached twice for a while). Returns early, doing no more, when Stop is
  // called. From one thread at a time. Errors: those of ApiConnection::Init (nothing changed).
  Status Reselect(const std::vector<std::string>& label_selectors);

  // Prepares the connections and starts one thread per selection (list, then watch, until
  // Stop). Errors: those of ApiConnection::Init; no thread is started then.
  Status Start();

  // Ends the watches (aborting a stream in progress) and joins the threads.
  void Stop();

  // True once the first list of every selection is in the cache.
  bool Synced() const;
  // Watches restarted for any reason (stream ended, error, 410).
  long WatchRestarts() const { return restarts_; }
  // Objects received: one per watch event (not bookmarks) and per listed object.
  long Received() const { return received_; }

  // A copy of the cached object, if there is one.
  std::optional<T> Get(const std::string& key) const;

  // Calls fn with each cached object in turn (for resync and rare scans), holding the cache
  // lock: fn must not call this informer.
  void ForEach(const std::function<void(const T&)>& fn) const;

  // How many objects are cached (one moving between selections may count twice for a moment).
  size_t Size() const;

 private:
  // One selection: its connection, thread and part of the cache.
  struct Selection {
    Selection(std::shared_ptr<const ApiEndpoint> ep, std::string selector)
        : label_selector(std::move(selector)), conn(std::move(ep)), api(&conn), rng(std::random_device{}()) {}
    std::string label_selector;
    ApiConnection conn;
    KubeApi api;
    std::thread thread;
    std::unordered_map<std::string, T> items;  // under the informer's mu_
    Status error;                              // an ERROR event that ended the watch
    std::atomic<bool> synced{false};
    std::atomic<bool> done{false};
    bool stop = false;  // under wait_mu_: this selection ends (Reselect)
    std::mt19937 rng;
  };

  // A selection's thread: list, then watch from where the list or the last event left off,
  // until Stop.
  void Run(Selection& sel);

  // Lists the selection in pages into a fresh cache, swaps it in, and calls the handler for
  // each key added, changed or removed; *rv is the list's resourceVersion.
  Status Relist(Selection& sel, std::string* rv);

  Status Watch(Selection& sel, std::string* rv);

  // Applies one watch event to the cache; false ends the watch (an ERROR event, whose Status
  // Watch then returns through sel.error, or stopping).
  bool Apply(Selection& sel, const WatchEvent<T>& ev, std::string* rv);

  // The cached object of `key` in any selection; mu_ held.
  const T* FindLocked(const std::string& key) const;

  bool Stopping();
  bool Stopping(const Selection& sel);  // Stop, or this selection ends

  void Sleep(const Selection& sel, std::chrono::milliseconds d);

  // Ends a selection's thread (joined), its cache left as it is.
  void End(Selection& sel);

  std::string kind_, collection_;
  Transform transform_;
  std::shared_ptr<const ApiEndpoint> ep_;
  Handler handler_;
  std::vector<std::unique_ptr<Selection>> selections_;  // changed under mu_: SetSelections, Reselect
  mutable std::mutex mu_;
  std::mutex reselect_mu_;  // one Reselect at a time; Stop waits for it
  std::atomic<long> restarts_{0};
  std::atomic<long> received_{0};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  bool stop_ = false;
};
