// The informer of informer.hpp, made here for the kinds the program watches (Claim, Volume,
// StorageClass, Node): a list, then a watch, as client-go's reflector does. Hand-written, as
// the rest of kube/: the program uses no Kubernetes client library (client-go is Go).
#include "kube/informer.hpp"

#include <malloc.h>

namespace {

// Gives the heap's free pages back to the system (glibc's malloc_trim). Not under
// AddressSanitizer: its allocator replaces glibc's, whose arena malloc_trim would then walk
// uninitialised.
void ReleaseFreeMemory() {
#if defined(__SANITIZE_ADDRESS__)
#elif defined(__has_feature)
#if !__has_feature(address_sanitizer)
  malloc_trim(0);
#endif
#else
  malloc_trim(0);
#endif
}

}  // namespace

template <class T>
Status Informer<T>::Start() {
  if (Status s = conn_.Init(); !s.ok()) return s;
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

template <class T>
void Informer<T>::Stop() {
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

template <class T>
std::optional<T> Informer<T>::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

template <class T>
void Informer<T>::ForEach(const std::function<void(const T&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, obj] : items_) fn(obj);
}

template <class T>
size_t Informer<T>::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

template <class T>
void Informer<T>::Run() {
  std::string rv;
  int failures = 0;
  RelistBackoff relist_backoff(std::chrono::steady_clock::now());
  while (!Stopping()) {
    Status s = rv.empty() ? Relist(&rv) : Watch(&rv);
    if (Stopping()) break;
    if (s.ok()) {
      failures = 0;
      continue;
    }
    if (s.code() == Status::kGone) {
      const long delay = relist_backoff.Next(std::chrono::steady_clock::now(), rng_).count();
      LogInfo(kind_ + " watch: resourceVersion too old (410); listing again in " + std::to_string(delay) + " ms");
      rv.clear();
      ++restarts_;
      Sleep(std::chrono::milliseconds(delay));
      continue;
    }
    ++restarts_;
    int retry_after = conn_.last_retry_after();
    long delay = BackoffDelay(std::chrono::milliseconds(500), std::chrono::seconds(30), failures++, rng_).count();
    if (delay < retry_after * 1000L) delay = retry_after * 1000L;
    LogWarn(kind_ + " " + (rv.empty() ? "list" : "watch") + " failed: " + s.message() + "; retrying in " +
            std::to_string(delay) + " ms");
    Sleep(std::chrono::milliseconds(delay));
  }
  done_ = true;
  wait_cv_.notify_all();
}

template <class T>
Status Informer<T>::Relist(std::string* rv) {
  std::unordered_map<std::string, T> fresh;
  std::string token, list_rv;
  std::function<void(Result<T>)> add = [&](Result<T> obj) {
    if (!obj.ok()) {
      LogWarn(kind_ + ": skipping an object that cannot be read: " + obj.status().message());
      return;
    }
    if (transform_ != nullptr) transform_(&*obj);
    std::string key = KeyOf(obj->meta);
    fresh[key] = std::move(*obj);
  };
  // Pages of up to 500; a page over KubeApi::kMaxPageBytes is asked for again with half as
  // many items, so memory while listing is bounded by a page's bytes or the largest object,
  // not by the size of the list.
  int limit = 500;
  for (;;) {
    Result<ListPage> page = api_.List<T>(collection_, token, limit, add);
    if (!page.ok() && page.status().code() == Status::kTooLarge && limit > 1) {
      limit /= 2;
      LogDebug(1, kind_ + ": list page too long; asking for " + std::to_string(limit) + " at a time");
      continue;
    }
    if (!page.ok()) return page.status();
    token = page->continue_token;
    list_rv = page->resource_version;
    if (token.empty() || Stopping()) break;
  }
  std::vector<std::string> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, obj] : fresh) {
      auto it = items_.find(key);
      if (it == items_.end() || it->second.meta.resource_version != obj.meta.resource_version) changed.push_back(key);
    }
    for (const auto& [key, obj] : items_)
      if (fresh.find(key) == fresh.end()) changed.push_back(key);
    items_.swap(fresh);
  }
  *rv = list_rv;
  synced_ = true;
  std::unordered_map<std::string, T>().swap(fresh);
  ReleaseFreeMemory();  // the previous cache and the list's buffers are gone
  LogDebug(1, kind_ + ": listed " + std::to_string(Size()) + " at resourceVersion " + list_rv);
  for (const std::string& key : changed) {
    std::optional<T> now = Get(key);
    handler_(key, now ? &*now : nullptr);
  }
  return Status::Ok();
}

template <class T>
Status Informer<T>::Watch(std::string* rv) {
  std::uniform_int_distribution<int> spread(300, 600);  // like client-go: 5 to 10 minutes
  error_ = Status::Ok();
  Status s = api_.Watch<T>(collection_, *rv, spread(rng_), [&](const WatchEvent<T>& ev) { return Apply(ev, rv); });
  return error_.ok() ? s : error_;
}

template <class T>
bool Informer<T>::Apply(const WatchEvent<T>& ev, std::string* rv) {
  if (ev.type == "ERROR") {
    error_ = Status(ev.code == 410 ? Status::kGone : Status::kUnavailable, kind_ + " watch error: " + ev.message);
    return false;
  }
  if (ev.type == "BOOKMARK") {
    if (!ev.resource_version.empty()) *rv = ev.resource_version;
    return !Stopping();
  }
  if (!ev.object.ok()) {
    LogWarn(kind_ + ": skipping a watch event that cannot be read: " + ev.object.status().message());
    return !Stopping();
  }
  T obj = *ev.object;
  if (transform_ != nullptr) transform_(&obj);
  std::string key = KeyOf(obj.meta);
  *rv = obj.meta.resource_version;
  const bool removed = ev.type == "DELETED";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed) {
      items_.erase(key);
    } else {
      items_[key] = obj;
    }
  }
  handler_(key, removed ? nullptr : &obj);
  return !Stopping();
}

template <class T>
bool Informer<T>::Stopping() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return stop_;
}

template <class T>
void Informer<T>::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(wait_mu_);
  wait_cv_.wait_for(lock, d, [this] { return stop_; });
}

template class Informer<Claim>;
template class Informer<Volume>;
template class Informer<StorageClass>;
template class Informer<Node>;
