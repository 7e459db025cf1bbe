// An informer keeps a read-only cache of one kind of object: it lists the collection (in
// pages), then watches from the list's resourceVersion, resumes a dropped watch from the last
// version seen, relists on 410 Gone after a backoff of its own (RelistBackoff), and backs off
// (capped, jittered, Retry-After honoured) on errors. Every change calls the handler with the
// object's key. One thread per informer.
// Objects are cached as the transform leaves them (the controller's keep only the fields its
// decisions read). Defined in informer.cpp for T = Claim, Volume, StorageClass and Node.
// Get, ForEach, Size, Synced and WatchRestarts may be called from any thread; the handler runs
// on the informer's thread.
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
      : kind_(std::move(kind)), collection_(std::move(collection)), transform_(transform), conn_(ep), api_(&conn_),
        handler_(std::move(handler)), rng_(std::random_device{}()) {}

  ~Informer() { Stop(); }

  // Prepares the connection and starts the thread (list, then watch, until Stop). Errors:
  // those of ApiConnection::Init; no thread is started then.
  Status Start();

  // Ends the watch (aborting a stream in progress) and joins the thread.
  void Stop();

  // True once the first list is in the cache.
  bool Synced() const { return synced_; }
  // Watches restarted for any reason (stream ended, error, 410).
  long WatchRestarts() const { return restarts_; }

  // A copy of the cached object, if there is one.
  std::optional<T> Get(const std::string& key) const;

  // Calls fn with each cached object in turn (for resync and rare scans), holding the cache
  // lock: fn must not call this informer.
  void ForEach(const std::function<void(const T&)>& fn) const;

  // How many objects are cached.
  size_t Size() const;

 private:
  // The thread: list, then watch from where the list or the last event left off, until Stop.
  void Run();

  // Lists the collection in pages into a fresh cache, swaps it in, and calls the handler for
  // each key added, changed or removed; *rv is the list's resourceVersion.
  Status Relist(std::string* rv);

  Status Watch(std::string* rv);

  // Applies one watch event to the cache; false ends the watch (an ERROR event, whose Status
  // Watch then returns through error_, or stopping).
  bool Apply(const WatchEvent<T>& ev, std::string* rv);

  bool Stopping();

  void Sleep(std::chrono::milliseconds d);

  std::string kind_, collection_;
  Transform transform_;
  ApiConnection conn_;
  KubeApi api_;
  Handler handler_;
  Status error_;  // an ERROR event that ended the watch
  std::thread thread_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, T> items_;
  std::atomic<bool> synced_{false};
  std::atomic<long> restarts_{0};
  std::atomic<bool> done_{false};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  bool stop_ = false;
  std::mt19937 rng_;
};
