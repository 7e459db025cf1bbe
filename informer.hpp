// An informer keeps a read-only cache of one kind of object: it lists the collection, then
// watches from the list's resourceVersion, resumes a dropped watch from the last version
// seen, relists on 410 Gone, and backs off (capped, jittered, Retry-After honoured) on
// errors. Every change calls the handler with the object's key. One thread per informer.
// Objects are cached packed (packed.hpp), as the parse function gives them (the controller's
// keep only the fields decisions read).
#pragma once
#include <malloc.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "k8s.hpp"
#include "log.hpp"
#include "packed.hpp"
#include "reconcile.hpp"

// Gives the heap's free pages back to the system (glibc's malloc_trim). Not under
// AddressSanitizer: its allocator replaces glibc's, whose arena malloc_trim would then walk
// uninitialised.
inline void ReleaseFreeMemory() {
#if defined(__SANITIZE_ADDRESS__)
#elif defined(__has_feature)
#if !__has_feature(address_sanitizer)
  malloc_trim(0);
#endif
#else
  malloc_trim(0);
#endif
}

// The cache key of an object: "namespace/name", or "name" when cluster-scoped.
inline std::string KeyOf(const ObjectMeta& m) { return m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name; }

template <class T>
class Informer {
 public:
  // An object as the cache keeps it, from its JSON.
  using Parse = Result<T> (*)(JsonRef);
  // Called (outside the cache lock) after each change with the key of the object that was
  // added, changed or removed, and the object as cached now (null when removed).
  using Handler = std::function<void(const std::string& key, const T* now)>;

  Informer(std::string kind, std::string collection, Parse parse, std::shared_ptr<const ApiEndpoint> ep, Handler handler)
      : kind_(std::move(kind)), collection_(std::move(collection)), parse_(parse), conn_(ep), handler_(std::move(handler)),
        rng_(std::random_device{}()) {}

  ~Informer() { Stop(); }

  Status Start() {
    if (Status s = conn_.Init(); !s.ok()) return s;
    thread_ = std::thread([this] { Run(); });
    return Status::Ok();
  }

  // Ends the watch (aborting a stream in progress) and joins the thread.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(wait_mu_);
      stop_ = true;
    }
    wait_cv_.notify_all();
    if (!thread_.joinable()) return;
    // A request may start just after a Stop() of the connection: keep aborting until done.
    while (!done_) {
      conn_.Stop();
      std::unique_lock<std::mutex> lock(wait_mu_);
      wait_cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_.load(); });
    }
    thread_.join();
  }

  // True once the first list is in the cache.
  bool Synced() const { return synced_; }
  // Watches restarted for any reason (stream ended, error, 410).
  long WatchRestarts() const { return restarts_; }

  // A copy of the cached object, if there is one.
  std::optional<T> Get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    return Unpack<T>(it->second);
  }

  // Calls fn with each cached object in turn (for resync and rare scans), holding the cache
  // lock: fn must not call this informer.
  void ForEach(const std::function<void(const T&)>& fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, record] : items_) fn(Unpack<T>(record));
  }

  size_t Size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }

 private:
  void Run() {
    std::string rv;
    int failures = 0;
    while (!Stopping()) {
      Status s = rv.empty() ? Relist(&rv) : Watch(&rv);
      if (Stopping()) break;
      if (s.ok()) {
        failures = 0;
        continue;
      }
      if (s.code() == Status::kGone) {
        LogInfo(kind_ + " watch: resourceVersion too old (410); listing again");
        rv.clear();
        ++restarts_;
        continue;
      }
      ++restarts_;
      int retry_after = conn_.last_retry_after();
      double ms = 500.0;
      for (int i = 0; i < failures && ms < 30000; ++i) ms *= 2;
      if (ms > 30000) ms = 30000;
      std::uniform_real_distribution<double> jitter(0.8, 1.2);
      long delay = static_cast<long>(ms * jitter(rng_));
      if (retry_after > 0 && delay < retry_after * 1000L) delay = retry_after * 1000L;
      ++failures;
      LogWarn(kind_ + " " + (rv.empty() ? "list" : "watch") + " failed: " + s.message() + "; retrying in " +
              std::to_string(delay) + " ms");
      Sleep(std::chrono::milliseconds(delay));
    }
    done_ = true;
    wait_cv_.notify_all();
  }

  Status Relist(std::string* rv) {
    KubeApi api(&conn_);
    std::unordered_map<std::string, std::string> fresh;
    std::string token, list_rv;
    auto add = [&](JsonRef item) {
      Result<T> obj = parse_(item);
      if (!obj.ok()) {
        LogWarn(kind_ + ": skipping an object that cannot be read: " + obj.status().message());
        return;
      }
      fresh[KeyOf(obj->meta)] = Pack(*obj);
    };
    do {
      Result<ListPage> page = api.List(collection_, token, add);
      if (!page.ok()) return page.status();
      token = page->continue_token;
      list_rv = page->resource_version;
    } while (!token.empty() && !Stopping());
    std::vector<std::string> changed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [key, record] : fresh) {
        auto it = items_.find(key);
        if (it == items_.end() || it->second != record) changed.push_back(key);
      }
      for (const auto& [key, record] : items_)
        if (fresh.find(key) == fresh.end()) changed.push_back(key);
      items_.swap(fresh);
    }
    *rv = list_rv;
    synced_ = true;
    std::unordered_map<std::string, std::string>().swap(fresh);
    ReleaseFreeMemory();  // the previous cache and the list's buffers are gone
    LogDebug(1, kind_ + ": listed " + std::to_string(Size()) + " at resourceVersion " + list_rv);
    for (const std::string& key : changed) {
      std::optional<T> now = Get(key);  // unpacked one at a time: a relist may bring 10 000
      handler_(key, now ? &*now : nullptr);
    }
    return Status::Ok();
  }

  Status Watch(std::string* rv) {
    std::uniform_int_distribution<int> spread(300, 600);  // like client-go: 5 to 10 minutes
    int timeout = spread(rng_);
    std::string path = collection_ + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + api::QueryEscape(*rv) +
                       "&timeoutSeconds=" + std::to_string(timeout);
    Status event_error;
    Status s = conn_.Stream(
        path,
        [&](const std::string& line) {
          event_error = Apply(line, rv);
          return event_error.ok() && !Stopping();
        },
        std::chrono::seconds(timeout + 30));
    if (!event_error.ok()) return event_error;
    return s;
  }

  // Applies one watch line to the cache. Errors: an ERROR event (410 → kGone) or an
  // unreadable line (the stream is then dropped and resumed).
  Status Apply(const std::string& line, std::string* rv) {
    Result<WatchEvent> ev = ParseWatchEvent(line, &event_doc_);
    if (!ev.ok()) return ev.status().Wrap(kind_ + " watch");
    if (ev->type == "ERROR") {
      const JsonRef c = ev->object.Get("code");
      const double code = c.is(JsonType::kNumber) ? c.Number() : 0;
      const int http = code >= 100 && code <= 599 ? static_cast<int>(code) : 0;
      return Status(http == 410 ? Status::kGone : Status::kUnavailable,
                    kind_ + " watch error: " + StatusMessage(http, std::string(ev->object.Text())));
    }
    if (ev->type == "BOOKMARK") {
      const JsonRef version = ev->object.Get("metadata").Get("resourceVersion");
      if (version.is(JsonType::kString)) *rv = version.String();
      return Status::Ok();
    }
    Result<T> obj = parse_(ev->object);
    if (!obj.ok()) {
      LogWarn(kind_ + ": skipping a watch event that cannot be read: " + obj.status().message());
      return Status::Ok();
    }
    std::string key = KeyOf(obj->meta);
    *rv = obj->meta.resource_version;
    const bool removed = ev->type == "DELETED";
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (removed) {
        items_.erase(key);
      } else {
        items_[key] = Pack(*obj);
      }
    }
    handler_(key, removed ? nullptr : &*obj);
    return Status::Ok();
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(wait_mu_);
    return stop_;
  }

  void Sleep(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(wait_mu_);
    wait_cv_.wait_for(lock, d, [this] { return stop_; });
  }

  std::string kind_, collection_;
  Parse parse_;
  ApiConnection conn_;
  Handler handler_;
  JsonDoc event_doc_;  // the watch line being applied; reused, so its nodes stay allocated
  std::thread thread_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> items_;  // key -> packed object
  std::atomic<bool> synced_{false};
  std::atomic<long> restarts_{0};
  std::atomic<bool> done_{false};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  bool stop_ = false;
  std::mt19937 rng_;
};
