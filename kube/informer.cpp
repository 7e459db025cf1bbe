// The informer of informer.hpp, made here for the kinds the program watches (Claim, Volume,
// StorageClass, Node): a list, then a watch, as client-go's reflector does. Hand-written, as
// the rest of kube/: the program uses no Kubernetes client library (client-go is Go).
#include "kube/informer.hpp"

#include <malloc.h>

#include <algorithm>

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
void Informer<T>::SetSelections(const std::vector<std::string>& label_selectors) {
  std::vector<std::unique_ptr<Selection>> made;
  for (const std::string& s : label_selectors) made.push_back(std::make_unique<Selection>(ep_, s));
  std::lock_guard<std::mutex> lock(mu_);  // Synced and the lookups may already be asked (/readyz)
  selections_.swap(made);
}

template <class T>
Status Informer<T>::Start() {
  for (auto& sel : selections_)
    if (Status s = sel->conn.Init(); !s.ok()) return s;
  for (auto& sel : selections_) sel->thread = std::thread([this, s = sel.get()] { Run(*s); });
  return Status::Ok();
}

template <class T>
void Informer<T>::Stop() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    stop_ = true;
  }
  wait_cv_.notify_all();
  std::lock_guard<std::mutex> reselecting(reselect_mu_);  // a Reselect in progress gives up first
  for (auto& sel : selections_) End(*sel);
}

template <class T>
void Informer<T>::End(Selection& sel) {
  if (!sel.thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    sel.stop = true;
  }
  wait_cv_.notify_all();
  // A request may start just after a Stop() of the connection: keep aborting until done.
  while (!sel.done) {
    sel.conn.Stop();
    std::unique_lock<std::mutex> lock(wait_mu_);
    wait_cv_.wait_for(lock, std::chrono::milliseconds(20), [&sel] { return sel.done.load(); });
  }
  sel.thread.join();
}

template <class T>
Status Informer<T>::Reselect(const std::vector<std::string>& label_selectors) {
  std::lock_guard<std::mutex> reselecting(reselect_mu_);
  std::vector<std::unique_ptr<Selection>> added;
  for (const std::string& s : label_selectors) {
    bool watched = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& sel : selections_) watched = watched || sel->label_selector == s;
    }
    if (watched) continue;
    added.push_back(std::make_unique<Selection>(ep_, s));
    if (Status st = added.back()->conn.Init(); !st.ok()) return st;
  }
  std::vector<Selection*> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& sel : added) {
      waiting.push_back(sel.get());
      selections_.push_back(std::move(sel));
    }
  }
  for (Selection* sel : waiting) sel->thread = std::thread([this, sel] { Run(*sel); });
  // The new ones first hold their lists: an object in both the old and the new selections is
  // never missing from the cache meanwhile.
  for (Selection* sel : waiting)
    while (!sel->synced && !Stopping()) Sleep(*sel, std::chrono::milliseconds(20));
  if (Stopping()) return Status::Ok();  // Stop ends them all
  std::vector<Selection*> ending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& sel : selections_)
      if (std::find(label_selectors.begin(), label_selectors.end(), sel->label_selector) == label_selectors.end())
        ending.push_back(sel.get());
  }
  for (Selection* sel : ending) End(*sel);
  std::vector<std::string> gone;  // cached only by the selections that ended
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::unique_ptr<Selection>> kept;
    for (auto& sel : selections_) {
      if (std::find(ending.begin(), ending.end(), sel.get()) == ending.end()) kept.push_back(std::move(sel));
    }
    for (Selection* sel : ending) {
      for (const auto& [key, obj] : sel->items) {
        bool elsewhere = false;
        for (const auto& k : kept) elsewhere = elsewhere || k->items.count(key) > 0;
        if (!elsewhere) gone.push_back(key);
      }
    }
    selections_.swap(kept);  // the ended ones are freed with `kept`, at the end of this block
  }
  for (const std::string& key : gone) handler_(key, nullptr);
  return Status::Ok();
}

template <class T>
bool Informer<T>::Synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& sel : selections_)
    if (!sel->synced) return false;
  return true;
}

template <class T>
const T* Informer<T>::FindLocked(const std::string& key) const {
  for (const auto& sel : selections_) {
    auto it = sel->items.find(key);
    if (it != sel->items.end()) return &it->second;
  }
  return nullptr;
}

template <class T>
std::optional<T> Informer<T>::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  const T* found = FindLocked(key);
  if (found == nullptr) return std::nullopt;
  return *found;
}

template <class T>
void Informer<T>::ForEach(const std::function<void(const T&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < selections_.size(); ++i)
    for (const auto& [key, obj] : selections_[i]->items) {
      bool earlier = false;  // given already, from an earlier selection
      for (size_t j = 0; j < i && !earlier; ++j) earlier = selections_[j]->items.count(key) > 0;
      if (!earlier) fn(obj);
    }
}

template <class T>
size_t Informer<T>::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& sel : selections_) n += sel->items.size();
  return n;
}

template <class T>
void Informer<T>::Run(Selection& sel) {
  std::string rv;
  int failures = 0;
  RelistBackoff relist_backoff(std::chrono::steady_clock::now());
  const std::string what = kind_ + (sel.label_selector.empty() ? "" : " (" + sel.label_selector + ")");
  while (!Stopping(sel)) {
    Status s = rv.empty() ? Relist(sel, &rv) : Watch(sel, &rv);
    if (Stopping(sel)) break;
    if (s.ok()) {
      failures = 0;
      continue;
    }
    if (s.code() == Status::kGone) {
      const long delay = relist_backoff.Next(std::chrono::steady_clock::now(), sel.rng).count();
      LogInfo(what + " watch: resourceVersion too old (410); listing again in " + std::to_string(delay) + " ms");
      rv.clear();
      ++restarts_;
      Sleep(sel, std::chrono::milliseconds(delay));
      continue;
    }
    ++restarts_;
    int retry_after = sel.conn.last_retry_after();
    long delay = BackoffDelay(std::chrono::milliseconds(500), std::chrono::seconds(30), failures++, sel.rng).count();
    if (delay < retry_after * 1000L) delay = retry_after * 1000L;
    LogWarn(what + " " + (rv.empty() ? "list" : "watch") + " failed: " + s.message() + "; retrying in " +
            std::to_string(delay) + " ms");
    Sleep(sel, std::chrono::milliseconds(delay));
  }
  sel.done = true;
  wait_cv_.notify_all();
}

template <class T>
Status Informer<T>::Relist(Selection& sel, std::string* rv) {
  std::unordered_map<std::string, T> fresh;
  std::string token, list_rv;
  std::function<void(Result<T>)> add = [&](Result<T> obj) {
    if (!obj.ok()) {
      LogWarn(kind_ + ": skipping an object that cannot be read: " + obj.status().message());
      return;
    }
    if (transform_ != nullptr) transform_(&*obj);
    ++received_;
    std::string key = KeyOf(obj->meta);
    fresh[key] = std::move(*obj);
  };
  // Pages of up to 500; a page over KubeApi::kMaxPageBytes is asked for again with half as
  // many items, so memory while listing is bounded by a page's bytes or the largest object,
  // not by the size of the list.
  int limit = 500;
  for (;;) {
    Result<ListPage> page = sel.api.template List<T>(collection_, token, limit, add, sel.label_selector);
    if (!page.ok() && page.status().code() == Status::kTooLarge && limit > 1) {
      limit /= 2;
      LogDebug(1, kind_ + ": list page too long; asking for " + std::to_string(limit) + " at a time");
      continue;
    }
    if (!page.ok()) return page.status();
    token = page->continue_token;
    list_rv = page->resource_version;
    if (token.empty() || Stopping(sel)) break;
  }
  std::vector<std::string> changed;
  size_t listed = fresh.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, obj] : fresh) {
      auto it = sel.items.find(key);
      if (it == sel.items.end() || it->second.meta.resource_version != obj.meta.resource_version) changed.push_back(key);
    }
    for (const auto& [key, obj] : sel.items)
      if (fresh.find(key) == fresh.end()) changed.push_back(key);
    sel.items.swap(fresh);
  }
  *rv = list_rv;
  sel.synced = true;
  std::unordered_map<std::string, T>().swap(fresh);
  ReleaseFreeMemory();  // the previous cache and the list's buffers are gone
  LogDebug(1, kind_ + ": listed " + std::to_string(listed) + " at resourceVersion " + list_rv);
  for (const std::string& key : changed) {
    std::optional<T> now = Get(key);
    handler_(key, now ? &*now : nullptr);
  }
  return Status::Ok();
}

template <class T>
Status Informer<T>::Watch(Selection& sel, std::string* rv) {
  std::uniform_int_distribution<int> spread(300, 600);  // like client-go: 5 to 10 minutes
  sel.error = Status::Ok();
  Status s = sel.api.template Watch<T>(
      collection_, *rv, spread(sel.rng), [&](const WatchEvent<T>& ev) { return Apply(sel, ev, rv); }, sel.label_selector);
  return sel.error.ok() ? s : sel.error;
}

template <class T>
bool Informer<T>::Apply(Selection& sel, const WatchEvent<T>& ev, std::string* rv) {
  if (ev.type == "ERROR") {
    sel.error = Status(ev.code == 410 ? Status::kGone : Status::kUnavailable, kind_ + " watch error: " + ev.message);
    return false;
  }
  if (ev.type == "BOOKMARK") {
    if (!ev.resource_version.empty()) *rv = ev.resource_version;
    return !Stopping(sel);
  }
  if (!ev.object.ok()) {
    LogWarn(kind_ + ": skipping a watch event that cannot be read: " + ev.object.status().message());
    return !Stopping(sel);
  }
  ++received_;
  T obj = *ev.object;
  if (transform_ != nullptr) transform_(&obj);
  std::string key = KeyOf(obj.meta);
  *rv = obj.meta.resource_version;
  const bool removed = ev.type == "DELETED";
  std::optional<T> elsewhere;  // a removed object still in another selection
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed) {
      sel.items.erase(key);
      if (selections_.size() > 1)
        if (const T* other = FindLocked(key)) elsewhere = *other;
    } else {
      sel.items[key] = obj;
    }
  }
  handler_(key, !removed ? &obj : elsewhere ? &*elsewhere : nullptr);
  return !Stopping(sel);
}

template <class T>
bool Informer<T>::Stopping() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return stop_;
}

template <class T>
bool Informer<T>::Stopping(const Selection& sel) {
  std::lock_guard<std::mutex> lock(wait_mu_);
  return stop_ || sel.stop;
}

template <class T>
void Informer<T>::Sleep(const Selection& sel, std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(wait_mu_);
  wait_cv_.wait_for(lock, d, [&] { return stop_ || sel.stop; });
}

template class Informer<Claim>;
template class Informer<Volume>;
template class Informer<StorageClass>;
template class Informer<Node>;
