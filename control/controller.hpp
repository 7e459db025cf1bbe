// The controller: informers fill caches and queue keys; a worker takes a key, asks the pure
// decisions in reconcile.hpp what to do, then does it (fsops for the directory, the API for
// the PV and events). Results come back through the watches, never by re-reading. Failures
// requeue the key with per-key backoff; success forgets its failures.
//
// Several workers (--workers), each with its own API connection, so that one slow removal or
// request holds up only the key of one worker; the queue never hands one key to two workers.
// A worker handles a key from start to finish with plain calls. The orphan scan runs alone: it
// takes the filesystem lock exclusively, workers share it.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/config.hpp"
#include "decide/clone.hpp"
#include "control/cloner.hpp"
#include "control/every_node.hpp"
#include "control/expander.hpp"
#include "fs/fsops.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"
#include "control/node_cleanup.hpp"
#include "base/log.hpp"
#include "base/queue.hpp"
#include "decide/reconcile.hpp"
#include "kube/recorder.hpp"
#include "fs/roots.hpp"
#include "control/shared.hpp"
#include "fs/space.hpp"
#include "control/usage.hpp"
#include "control/volume_dir.hpp"

// Counters the controller keeps for the HTTP endpoint (all monotonic except depth).
struct ControllerStats {
  std::atomic<long> provisioned{0}, provision_failed{0};
  std::atomic<long> deleted{0}, delete_failed{0};
  // Sum and count of durations, and a small histogram, for provisions and deletions.
  struct Histogram {
    static constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    static constexpr int kBuckets = 13;
    std::mutex mu;
    long counts[kBuckets + 1] = {};
    double sum = 0;
    long count = 0;
    void Observe(double seconds) {
      std::lock_guard<std::mutex> lock(mu);
      int i = 0;
      while (i < kBuckets && seconds > kBounds[i]) ++i;
      counts[i]++;
      sum += seconds;
      count++;
    }
  };
  Histogram provision_seconds, delete_seconds;
};

// Claims waiting for another claim (a clone for its source), by that claim's key; shared.
class Waiters {
 public:
  void Add(const std::string& for_key, const std::string& waiting) {
    std::lock_guard<std::mutex> lock(mu_);
    by_key_[for_key].insert(waiting);
  }
  std::vector<std::string> Take(const std::string& for_key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(for_key);
    if (it == by_key_.end()) return {};
    std::vector<std::string> out(it->second.begin(), it->second.end());
    by_key_.erase(it);
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::set<std::string>> by_key_;
};

// A set of names that several workers share.
class NameSet {
 public:
  void Insert(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    names_.insert(name);
  }
  void Erase(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    names_.erase(name);
  }
  bool Contains(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    return names_.count(name) > 0;
  }
  std::vector<std::string> TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> all(names_.begin(), names_.end());
    names_.clear();
    return all;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> names_;
};

class Controller {
 public:
  Controller(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, Roots* roots)
      : cfg_(cfg), ep_(std::move(ep)), roots_(roots),
        recorder_(ep_, "hostpath-provisioner"),
        every_node_(cfg_, roots, &recorder_),
        claims_("PersistentVolumeClaims", api::kClaims, &SlimForCache, ep_,
                [this](const std::string& k, const Claim* c) { OnClaim(k, c); }),
        volumes_("PersistentVolumes", api::kVolumes, &SlimForCache, ep_,
                 [this](const std::string& k, const Volume* v) { OnVolume(k, v); }),
        classes_("StorageClasses", api::kClasses, nullptr, ep_,
                 [this](const std::string& k, const StorageClass*) { OnClass(k); }),
        node_cleanup_(cfg_, ep_, &volumes_, &recorder_),
        usage_(cfg.usage_scan_seconds, roots, &recorder_, [this](const std::string& v) { return UsageTargetOf(v); },
               [this](const std::string& v, uint64_t used) { promises_.SetUsed(v, used); }) {
    for (int i = 0; i < std::max(1, cfg_.workers); ++i) workers_.push_back(std::make_unique<Worker>(ep_));
  }

  ~Controller() { Stop(); }

  // Asked before every change to the filesystem or the API (leader election: does this
  // instance still hold the lease?). Set before Start; by default always true. False after Halt.
  void SetMayAct(std::function<bool()> may_act) {
    may_act_ = [this, may_act = std::move(may_act)] { return !halted_ && may_act(); };
  }

  // Starts the watches and the workers. Errors: TLS material that cannot be used.
  Status Start() {
    for (auto& w : workers_)
      if (Status s = w->conn.Init(); !s.ok()) return s;
    if (Status s = recorder_.Start(); !s.ok()) return s;
    for (Status s : {classes_.Start(), volumes_.Start(), claims_.Start()})
      if (!s.ok()) return s;
    if (Status s = node_cleanup_.Start([this] { return Synced(); }, [this](const std::string& node) { queue_.Add(kGoneNode + node); });
        !s.ok())
      return s;
    for (auto& w : workers_) w->thread = std::thread([this, &w] { Work(*w); });
    if (cfg_.resync_seconds > 0) resync_ = std::thread([this] { Resync(); });
    return Status::Ok();
  }

  // Stops acting, at once: may_act turns false, so no key and no step starts any more; the
  // removal and the API requests in progress are cut short, and later requests of the workers
  // fail. That is safe because every step is idempotent: whoever acts next removes the rest of a
  // half-removed tree, and creates a PV again (by name) or finds it made. Events are dropped from
  // now on (they would report what the stop cut short). Waits up to `limit` for every worker to
  // be idle; false if one is not (stuck in a system call, such as a mkdir on a hung network
  // filesystem: what it does late, a paused leader could do too, and it is as harmless).
  // Call after Start has returned, or without Start.
  bool Halt(std::chrono::milliseconds limit) {
    halted_ = true;  // before looking at the workers: one that started a key after this sees it
    recorder_.Mute();
    cloner_.Halt();
    queue_.ShutDown();
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      bool idle = true;
      for (auto& w : workers_) {
        if (w->busy_since_ms == 0) continue;
        idle = false;
        w->conn.Close();  // again each round: a request may have begun just before the last one
      }
      if (idle) return true;
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Halts (waiting a few seconds at most), waits for the workers to return, ends the watches,
  // the scans and the events.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    stop_cv_.notify_all();
    Halt(std::chrono::seconds(3));
    for (auto& w : workers_)
      if (w->thread.joinable()) w->thread.join();
    if (resync_.joinable()) resync_.join();
    cloner_.Stop();
    usage_.Stop();
    recorder_.Stop();
    node_cleanup_.Stop();
    claims_.Stop();
    volumes_.Stop();
    classes_.Stop();
  }

  // All three caches hold their first list.
  bool Synced() const { return claims_.Synced() && volumes_.Synced() && classes_.Synced(); }
  size_t QueueDepth() { return queue_.Depth(); }
  // Keys ready, or a worker on one (the cloner gives way to them).
  bool WorkersBusy() {
    if (queue_.Ready() > 0) return true;
    for (const auto& w : workers_)
      if (w->busy_since_ms != 0) return true;
    return false;
  }
  long WatchRestarts() const { return claims_.WatchRestarts() + volumes_.WatchRestarts() + classes_.WatchRestarts(); }
  // Every worker has been on its current key for longer than `limit`: nothing can make
  // progress (for a liveness check). One long removal alone is not stuck.
  bool WorkerStuck(std::chrono::seconds limit) const {
    const int64_t now = NowMs();
    for (const auto& w : workers_) {
      int64_t busy_since = w->busy_since_ms;
      if (busy_since == 0 || now - busy_since <= limit.count() * 1000) return false;
    }
    return true;
  }
  ControllerStats& stats() { return stats_; }
  const CloneStats& clone_stats() const { return cloner_.stats(); }
  const UsageScanner& usage() const { return usage_; }

 private:
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  static constexpr const char* kScanOrphans = "scan/orphans";
  static constexpr const char* kGoneNode = "gone/";  // + the node's name

  // A worker thread and what only it uses.
  struct Worker {
    explicit Worker(std::shared_ptr<const ApiEndpoint> ep) : conn(std::move(ep)), api(&conn) {}
    ApiConnection conn;
    KubeApi api;
    std::thread thread;
    std::atomic<int64_t> busy_since_ms{0};  // 0 when idle; steady ms overflow a 32-bit long after 24 days
  };

  // How a key's sync ended: done (its failures forgotten), or to be retried after backoff,
  // and not before the server's Retry-After.
  struct Outcome {
    bool retry = false;
    int retry_after = 0;  // seconds, at least
  };
  static Outcome Done() { return {}; }
  static Outcome Retry(int retry_after = 0) { return {true, retry_after}; }

  // A watch event (or a relist) changed a claim: a worker looks at it only if it may need a
  // volume, or a bound one asks for more. A claim that is bound or gone needs nothing; most
  // events of a burst are of those.
  void OnClaim(const std::string& key, const Claim* now) {
    if (now == nullptr || now->meta.deleting) cloner_.Cancel(key);  // its copy, if one runs, stops
    if (now != nullptr && !now->volume_name.empty())  // clones that wait for this claim to bind
      for (const std::string& waiting : clone_waiters_.Take(key)) queue_.Add("claim/" + waiting);
    if (now == nullptr) return;
    std::optional<StorageClass> sc;  // only another node's claim needs its class: is it of shared volumes?
    if (!cfg_.node_name.empty() && !ClaimMayNeedVolume(cfg_, *now) && !now->storage_class_name.empty())
      sc = classes_.Get(now->storage_class_name);
    if (ClaimMayNeedVolume(cfg_, *now, sc ? &*sc : nullptr) || ExpansionAsked(*now)) queue_.Add("claim/" + key);
  }
  // A volume changed: a worker looks at it if there is something to do (DecideVolume), or if
  // it is gone (SyncVolume then forgets that it deleted it). Once the cache holds a volume we
  // made, SyncClaim no longer needs to remember making it. Clones that wait for its claim look
  // again (the claim may be Bound before its volume is in the cache).
  void OnVolume(const std::string& name, const Volume* now) {
    created_.Erase(name);
    if (now != nullptr && now->has_claim_ref)
      for (const std::string& waiting : clone_waiters_.Take(now->claim_ref.namespace_ + "/" + now->claim_ref.name))
        queue_.Add("claim/" + waiting);
    const std::string promised_root = now ? PromisedRoot(*now) : "";
    promises_.Set(name, promised_root, now ? now->capacity_bytes : -1);
    usage_.Track(name, Measured(now));
    if (now == nullptr)  // space freed: claims that did not fit try again now
      for (const std::string& key : space_waiters_.TakeAll()) queue_.Add("claim/" + key);
    if (now == nullptr || DecideVolume(cfg_, *now).kind != Action::kNothing) queue_.Add("volume/" + name);
  }
  // The root under which a volume holds space that counts against new ones: a volume of ours
  // made by this instance (or on every node, or shared); "" for any other.
  std::string PromisedRoot(const Volume& v) const {
    auto by = v.meta.annotations.find(ann::kProvisionedBy);
    if (by == v.meta.annotations.end() || by->second != cfg_.provisioner_name) return "";
    auto node = v.meta.annotations.find(ann::kNode);
    const std::string made_on = node == v.meta.annotations.end() ? "" : node->second;
    if (made_on != cfg_.node_name && !OnAllNodes(v) && !IsShared(v)) return "";
    auto root = v.meta.annotations.find(ann::kPvDir);
    return root == v.meta.annotations.end() ? cfg_.pv_dir : root->second;
  }

  // What the usage scanner walks for a volume now (usage.hpp), from the cache.
  std::optional<UsageTarget> UsageTargetOf(const std::string& name) const {
    std::optional<Volume> v = volumes_.Get(name);
    return v ? UsageTargetFor(cfg_, *v, Measured(&*v)) : std::nullopt;
  }
  // Does this instance measure the volume's use? One of ours under a root it promised space on,
  // bound, and, if shared, named as this node's (one instance measures a shared one).
  bool Measured(const Volume* v) const {
    if (v == nullptr || PromisedRoot(*v).empty() || v->phase != "Bound") return false;
    auto node = v->meta.annotations.find(ann::kNode);
    return !IsShared(*v) || (node != v->meta.annotations.end() && node->second == cfg_.node_name);
  }

  // A class appeared or changed: claims of that class that failed may now succeed.
  void OnClass(const std::string& name) {
    if (!claims_.Synced() || !classes_.Get(name)) return;
    claims_.ForEach([&](const Claim& c) {
      if (c.storage_class_name == name && c.volume_name.empty()) queue_.Add("claim/" + KeyOf(c.meta));
    });
  }

  void Resync() {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::seconds(cfg_.resync_seconds), [this] { return stopped_; })) {
      claims_.ForEach([&](const Claim& c) {
        if (c.volume_name.empty() || ExpansionAsked(c)) queue_.Add("claim/" + KeyOf(c.meta));
      });
      volumes_.ForEach([&](const Volume& v) {
        if (v.phase != "Bound") queue_.Add("volume/" + v.meta.name);
      });
      queue_.Add(kScanOrphans);  // on a worker, alone: never beside a provision in progress
    }
  }

  void Work(Worker& w) {
    // Decide nothing before every cache holds its first list: a claim seen before its class
    // would get a false "class not found", one seen before the PVs a needless create.
    {
      std::unique_lock<std::mutex> lock(stop_mu_);
      while (!Synced() && !stopped_) stop_cv_.wait_for(lock, std::chrono::milliseconds(20));
      if (stopped_) return;
    }
    // The usage scan starts then too: at start-up the lists come first.
    std::call_once(first_scan_, [this] {
      queue_.Add(kScanOrphans);
      usage_.Start();
    });
    std::string key;
    while (queue_.Get(&key)) {
      w.busy_since_ms = NowMs();
      Outcome o = Sync(w, key);
      if (o.retry) {
        auto d = queue_.AddRateLimited(key, std::chrono::seconds(o.retry_after));
        LogDebug(1, key + ": retrying in " + std::to_string(d.count()) + " ms");
      } else {
        queue_.Forget(key);
      }
      queue_.Done(key);
      w.busy_since_ms = 0;
    }
  }

  Outcome Sync(Worker& w, const std::string& key) {
    if (!may_act_()) {
      LogWarn(key + ": not acting: this instance may no longer hold the lease");
      return Retry();
    }
    // Claims and volumes are checked once they are known to be ours (SyncClaim, SyncVolume).
    if ((key == kScanOrphans || key.rfind(kGoneNode, 0) == 0) && RootMoved(key)) return Retry();
    if (key == kScanOrphans) {
      std::unique_lock<std::shared_mutex> alone(fs_mu_);
      return ScanOrphans(w) ? Done() : Retry(w.conn.last_retry_after());
    }
    if (key.rfind(kGoneNode, 0) == 0)
      return node_cleanup_.CleanUp(w.api, key.substr(std::strlen(kGoneNode))).ok() ? Done() : Retry(w.conn.last_retry_after());
    std::shared_lock<std::shared_mutex> shared(fs_mu_);
    if (key.rfind("claim/", 0) == 0) return SyncClaim(w, key.substr(6));
    return SyncVolume(w, key.substr(7));
  }

  // Directories in the root named like ours ("<ns>-<claim>-pvc-<uid>") with no PV: made for a
  // claim whose PV was never created (a crash or failure between mkdir and create, then the
  // claim went away), or left by a Retain volume whose PV was deleted by hand. An empty one
  // held no data: it is removed. One with files may be someone's data: it is only reported.
  // Directories of claims still waiting to be provisioned, and of PVs just created whose watch
  // event has not come yet, are left alone. The cache only picks candidates: each is removed
  // only if, asked in this order, a GET says its PV does not exist and then a fresh list of
  // claims holds none with its uid.
  //
  // Why this cannot remove a directory another instance is making (on a root several share):
  // an instance makes the directory of a claim that exists, and only then creates its PV. If
  // the GET found no PV, the create had not happened yet; the list, read after it, then shows
  // the claim (kept), unless the claim was deleted meanwhile: then the PV, if its create still
  // lands, is one of a deleted claim (released at once and removed as such), and the
  // directory held no data. The cache alone could not tell: another instance may see a claim
  // before this one does. Returns false when a candidate could not be looked up (the scan is
  // then tried again after a backoff).
  bool ScanOrphans(Worker& w) {
    std::unordered_set<std::string> pending_uids;
    claims_.ForEach([&](const Claim& c) {
      if (c.volume_name.empty()) pending_uids.insert(c.meta.uid);
    });
    std::vector<std::pair<Roots::Ref, std::string>> candidates;
    bool complete = true;
    for (const Roots::Ref& root : roots_->Opened()) complete = FindOrphans(w, root, pending_uids, &candidates) && complete;
    if (candidates.empty()) return complete;
    std::unordered_set<std::string> claim_uids;
    if (Status s = ListClaimUids(w, &claim_uids); !s.ok()) {
      LogWarn("orphaned directories kept for now: " + s.message());
      return false;
    }
    for (const auto& [root, d] : candidates) {
      const std::string pv = d.substr(d.size() - 40);
      if (claim_uids.count(pv.substr(4))) continue;  // its claim exists: its PV may be on the way
      if (!may_act_()) return true;
      if (!CloneTempFor(d).empty()) {  // a copy cut short (a crash) whose claim went since
        Cloner::Finished unused;
        if (cloner_.Poll(pv, &unused) == Cloner::State::kBusy) continue;
        if (Status s = Cloner::RemoveTemp(*root, d); !s.ok())
          LogWarn("half-made clone " + root->path() + "/" + d + " kept for now: " + s.message());
        else
          LogInfo("removed half-made clone " + root->path() + "/" + d + ": its claim is gone");
        continue;
      }
      if (Cloner::Unclaimed(*root, pv)) {  // a complete copy (a crash before its PV) whose claim went since
        if (Status s = Cloner::RemoveTemp(*root, d); !s.ok()) {
          LogWarn("unclaimed clone " + root->path() + "/" + d + " kept for now: " + s.message());
        } else {
          Cloner::Claimed(*root, pv);
          LogInfo("removed unclaimed clone " + root->path() + "/" + d + ": a complete copy whose PersistentVolume " + pv +
                  " was never made, and its claim is gone");
        }
        continue;
      }
      Status s = root->RemoveIfEmpty(d);
      if (s.ok()) {
        LogInfo("removed orphaned directory " + root->path() + "/" + d + ": empty, and no PersistentVolume " + pv +
                " or claim refers to it");
      } else {
        LogWarn("orphaned directory " + root->path() + "/" + d + " kept: no PersistentVolume " + pv +
                " refers to it, but " + s.message() + " (it may hold data of a Retain volume whose PV was deleted; "
                "remove it by hand if not needed)");
      }
    }
    return complete;
  }
  // Adds to *out the directories of `root` named like ours whose PV, asked with a GET, does
  // not exist (the cache picks the candidates).
  bool FindOrphans(Worker& w, const Roots::Ref& ref, const std::unordered_set<std::string>& pending_uids,
                   std::vector<std::pair<Roots::Ref, std::string>>* out) {
    const Root& root = *ref;
    Result<std::vector<std::string>> dirs = root.ListDirs();
    if (!dirs.ok()) {
      LogWarn("cannot list " + root.path() + " to look for orphaned directories: " + dirs.status().message());
      return true;
    }
    bool complete = true;
    for (const std::string& d : *dirs) {
      const size_t kPv = 40;  // "pvc-" + a 36-character uid
      if (d.size() <= kPv + 1 || d[d.size() - kPv - 1] != '-' || d.compare(d.size() - kPv, 4, "pvc-") != 0) continue;
      std::string pv = d.substr(d.size() - kPv);
      // created_ before the cache, as in SyncClaim: the watch may move a volume from one to the
      // other meanwhile (workers are held off, the watches are not).
      if (created_.Contains(pv) || volumes_.Get(pv) || pending_uids.count(pv.substr(4))) continue;
      Result<Volume> fresh = w.api.GetVolume(pv);
      if (fresh.status().code() != Status::kNotFound) {
        if (!fresh.ok()) LogWarn("orphaned directory " + root.path() + "/" + d + " kept for now: " + fresh.status().message());
        complete = complete && fresh.ok();
        continue;
      }
      out->push_back({ref, d});
    }
    return complete;
  }
  // The uids of every claim there is now, from the API server (not the cache). A claim that
  // cannot be read fails the whole list: its uid might be one of the candidates.
  static Status ListClaimUids(Worker& w, std::unordered_set<std::string>* uids) {
    std::string token;
    do {
      Status bad;
      Result<ListPage> page = w.api.List<Claim>(api::kClaims, token, 500, [&](Result<Claim> c) {
        if (c.ok()) uids->insert(c->meta.uid);
        else bad = c.status();
      });
      if (!page.ok()) return page.status();
      if (!bad.ok()) return bad.Wrap("list PersistentVolumeClaims");
      token = page->continue_token;
    } while (!token.empty());
    return Status::Ok();
  }

  // True when PV_DIR no longer names the directory held open: nothing is to be done (volumes
  // made now would be in a directory that PVs do not name); the claim or volume of `key`, which
  // must be ours, is told, and /healthz fails so that the kubelet restarts the pod onto the
  // right directory.
  bool RootMoved(const std::string& key) {
    Status moved = roots_->primary().StillAtPath();
    if (moved.ok()) return false;
    const std::string message = moved.Wrap("PV_DIR").message() + "; nothing done until the provisioner restarts";
    LogError(key + ": " + message);
    if (key.rfind("claim/", 0) == 0) {
      if (std::optional<Claim> c = claims_.Get(key.substr(6))) recorder_.Warning(Of(*c), reason::kProvisioningFailed, message);
    } else if (key.rfind("volume/", 0) == 0) {
      if (std::optional<Volume> v = volumes_.Get(key.substr(7))) recorder_.Warning(Of(*v), reason::kVolumeFailedDelete, message);
    }
    return true;
  }

  // What a clone's sync read of its source: the claim's and its volume's resourceVersions.
  static std::string CloneSourceSeen(const std::optional<Claim>& c, const std::optional<Volume>& v) {
    return (c ? c->meta.resource_version : "-") + "/" + (v ? v->meta.resource_version : "-");
  }
  // ... and what the caches hold of it now.
  std::string CloneSourceSeen(const std::string& source_key) const {
    std::optional<Claim> c = claims_.Get(source_key);
    std::optional<Volume> v;
    if (c && !c->volume_name.empty()) v = volumes_.Get(c->volume_name);
    return CloneSourceSeen(c, v);
  }

  static Involved Of(const Claim& c) {
    return {"PersistentVolumeClaim", c.meta.namespace_, c.meta.name, c.meta.uid, c.meta.resource_version};
  }
  static Involved Of(const Volume& v) { return {"PersistentVolume", "", v.meta.name, v.meta.uid, v.meta.resource_version}; }

  Outcome SyncClaim(Worker& w, const std::string& key) {
    std::optional<Claim> claim = claims_.Get(key);
    if (!claim) return Done();  // gone
    std::optional<StorageClass> sc;
    if (!claim->storage_class_name.empty()) sc = classes_.Get(claim->storage_class_name);
    if (!claim->volume_name.empty()) return SyncExpansion(w, *claim, sc ? &*sc : nullptr);
    std::string pv_name = VolumeNameFor(*claim);
    // Asked before the cache: the volume's watch event puts it in the cache, then forgets that
    // it was made. Asked the other way round, an event in between would make both say "no".
    const bool made = created_.Contains(pv_name);
    std::optional<Volume> existing = volumes_.Get(pv_name);
    if (!existing && made) return Done();  // made it; its watch event is on the way
    // A clone: its source as the caches hold it.
    std::optional<Claim> source_claim;
    std::optional<Volume> source_volume;
    const std::string source_key = CloneSourceKey(*claim);
    if (!source_key.empty()) {
      source_claim = claims_.Get(source_key);
      if (source_claim && !source_claim->volume_name.empty()) source_volume = volumes_.Get(source_claim->volume_name);
    }
    Action a = DecideClone(cfg_, *claim, sc ? &*sc : nullptr, existing ? &*existing : nullptr,
                           {source_claim ? &*source_claim : nullptr, source_volume ? &*source_volume : nullptr,
                            !source_key.empty() && cloner_.Has(pv_name)});
    // A clone that may yet be made is looked at again when its source, or the source's volume,
    // changes (it binds: the claim's volumeName, then its phase; the volume appears). A change
    // between the reads above and now found no waiter: then it is looked at again at once.
    if (a.kind == Action::kFail && a.retry && !source_key.empty()) {
      clone_waiters_.Add(source_key, key);
      if (CloneSourceSeen(source_key) != CloneSourceSeen(source_claim, source_volume)) queue_.Add("claim/" + key);
    }
    if (a.kind != Action::kNothing && RootMoved("claim/" + key)) return Retry();
    switch (a.kind) {
      case Action::kNothing:
        LogDebug(2, "claim " + key + ": nothing to do: " + a.why);
        return Done();
      case Action::kFail:
        if (a.once) {
          LogDebug(1, "claim " + key + ": " + a.message);
          if (a.normal) recorder_.NormalOnce(Of(*claim), a.reason, a.message);
          if (!a.normal) recorder_.WarningOnce(Of(*claim), a.reason, a.message);
          return Done();
        }
        if (a.normal) {
          LogDebug(1, "claim " + key + ": " + a.message);
          recorder_.Normal(Of(*claim), a.reason, a.message);
          return Retry();
        }
        if (a.reschedule) return Reschedule(w, *claim, a.message);
        stats_.provision_failed++;
        LogWarn("claim " + key + ": " + a.message);
        recorder_.Warning(Of(*claim), a.reason, a.message);
        return a.retry ? Retry() : Done();
      case Action::kProvision:
        return a.source.claim.empty() ? Provision(w, *claim, a) : ProvisionClone(w, *claim, a);
      default:
        return Done();
    }
  }

  // A bound claim asks for more than it has: expand its volume, if it is ours.
  Outcome SyncExpansion(Worker& w, const Claim& claim, const StorageClass* sc) {
    std::optional<Volume> v = volumes_.Get(claim.volume_name);
    Expansion e = DecideExpansion(cfg_, claim, sc, v ? &*v : nullptr);
    if (e.kind == Expansion::kNothing) {
      LogDebug(2, "claim " + KeyOf(claim.meta) + ": nothing to expand: " + e.why);
      if (e.held_elsewhere && IsShared(*v)) return AdoptToExpand(w, *v);
      return e.held_elsewhere ? UnlessNoHolder(w, claim, *v) : Done();
    }
    if (RootMoved("claim/" + KeyOf(claim.meta))) return Retry();
    if (e.kind == Expansion::kFail) {
      LogWarn("claim " + KeyOf(claim.meta) + ": " + e.why);
      recorder_.Warning(Of(claim), reason::kVolumeResizeFailed, e.why);
      return Retry();
    }
    switch (expander_.Expand(w.api, claim, *v, e, Of(claim))) {
      case Expander::Next::kDone: return Done();
      case Expander::Next::kNoRoom: space_waiters_.Insert(KeyOf(claim.meta)); return Retry();
      default: return Retry(w.conn.last_retry_after());
    }
  }

  // A volume on every node that this node does not hold: its holders expand it. When none of
  // them exists any more, nobody can: the user is told (once), and it is looked at again later.
  Outcome UnlessNoHolder(Worker& w, const Claim& claim, const Volume& v) {
    bool any = false;
    if (Status s = every_node_.AnyHolderExists(w.api, v, &any); !s.ok()) {
      LogWarn("claim " + KeyOf(claim.meta) + ": " + s.message());
      return Retry(w.conn.last_retry_after());
    }
    if (any) return Done();
    const std::string message = "volume " + v.meta.name + " cannot be expanded: no node that holds it (its directory "
                                "made there) exists any more; it is expanded once the provisioner's instance on a "
                                "node makes its directory there";
    LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
    recorder_.WarningOnce(Of(claim), reason::kVolumeResizeFailed, message);
    return Retry();
  }

  // A shared volume named as another node's: that node's instance expands it; if that node is
  // gone, this one takes the volume over, then expands it (once the watch brings the change).
  Outcome AdoptToExpand(Worker& w, const Volume& v) {
    auto node = v.meta.annotations.find(ann::kNode);
    if (node == v.meta.annotations.end() || node->second.empty()) return Done();
    bool taken = false;
    Status s = shared_.Adopt(w.api, v, node->second, Of(v), &taken);
    if (!s.ok()) return Retry(w.conn.last_retry_after());
    return taken ? Retry() : Done();
  }

  // Makes the directory, then creates the PV.
  Outcome Provision(Worker& w, const Claim& claim, const Action& a) {
    auto start = std::chrono::steady_clock::now();
    std::string path = a.root + "/" + a.dir_name;
    // A shared volume another instance made (this cache behind): its directory is left alone.
    // (Two instances can still both get here at once: each then makes the same new, empty
    // directory with the same mode and owner, and one PV create succeeds.)
    if (IsShared(a.volume)) {
      Result<Volume> got = w.api.GetVolume(a.volume.meta.name);
      if (got.ok() && IsVolumeWeMade(*got, a.volume)) return Done();
    }
    Roots::Ref root;
    if (std::optional<Outcome> o = Prepare(w, claim, a, &root)) return *o;
    Result<MadeDir> made = MakeVolumeDir(*root, a);
    if (!made.ok()) {
      const Status& s = made.status();
      promises_.Release(a.volume.meta.name);
      const std::string hint = FixHint(s);
      const int e = s.sys_errno();
      return ProvisionFailed(w, claim, "cannot make directory " + path + ": " + s.message() + (hint.empty() ? "" : "; " + hint),
                             s.code() == Status::kInvalid || e == ENOENT || e == ENOSPC || e == EDQUOT || e == EROFS ||
                                 e == ENOTDIR);
    }
    return CreateVolume(w, claim, a, *root, *made, start, "");
  }

  // A clone: its copy is handed to the cloner, which wakes the claim when it ends; then the
  // PV is made as for any volume.
  Outcome ProvisionClone(Worker& w, const Claim& claim, const Action& a) {
    const auto start = std::chrono::steady_clock::now();
    const std::string path = a.root + "/" + a.dir_name;
    Cloner::Finished f;
    std::string method;
    switch (cloner_.Poll(a.volume.meta.name, &f)) {
      case Cloner::State::kBusy:
        return Done();
      case Cloner::State::kFinished:
        if (!f.status.ok()) return CloneFailed(w, claim, a, f.status);
        method = Describe(f.result.method);
        break;
      case Cloner::State::kNone: {
        if (a.source.volume.empty()) return Retry();  // its copy, seen a moment ago, was canceled since
        Roots::Ref root;
        if (std::optional<Outcome> o = Prepare(w, claim, a, &root)) return *o;
        // Renamed into place before a restart, and the PV not made yet: a whole copy.
        if (!fsops_detail::IsDirNoFollow(root->fd(), a.dir_name)) {
          cloner_.Start({KeyOf(claim.meta), Of(claim), a, usage_.UsedBytes(a.source.volume)});
          return Done();
        }
        Result<QuotaId> q = QuotaLimits(*root).Of(a.dir_name);
        if (q.ok()) f.made.quota = *q;
        method = "copied before a restart";
        break;
      }
    }
    Result<Roots::Ref> root = roots_->Get(a.root);
    if (!root.ok()) return ProvisionFailed(w, claim, "cannot use " + a.root + ": " + root.status().message());
    Outcome o = CreateVolume(w, claim, a, **root, f.made, start, method);
    if (created_.Contains(a.volume.meta.name)) Cloner::Claimed(**root, a.volume.meta.name);  // its PV is made
    return o;
  }

  // The copy failed (it removed what it had copied). Retried, except where only a claim made
  // again can help; never sent to another node: a clone is made on its source's.
  Outcome CloneFailed(Worker& w, const Claim& claim, const Action& a, const Status& s) {
    promises_.Release(a.volume.meta.name);
    const int e = s.sys_errno();
    std::string message = "cannot clone " + a.source.claim + " into " + a.root + "/" + a.dir_name + ": " + s.message();
    if (e == EDQUOT) message += "; the copy does not fit in the clone's enforced size: create the claim again asking for more";
    if (e == ENOSPC) message += "; the copy does not fit in the free space under " + a.root + ": free some space (retried when a volume goes)";
    if (e == ENOSPC) space_waiters_.Insert(KeyOf(claim.meta));
    stats_.provision_failed++;
    LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
    recorder_.Warning(Of(claim), reason::kProvisioningFailed, message);
    (void)w;
    return e == EDQUOT ? Done() : Retry();
  }

  // Before making a volume's directory: its root, mounted if it must be, and room for it
  // (checked and reserved in one step). An outcome when it cannot go on.
  std::optional<Outcome> Prepare(Worker& w, const Claim& claim, const Action& a, Roots::Ref* out) {
    Result<Roots::Ref> root = roots_->Get(a.root);
    if (!root.ok()) return ProvisionFailed(w, claim, "cannot use " + a.root + ": " + root.status().message(), true);
    if (a.require_mount) {
      if (Status s = (*root)->FilesystemMounted(); !s.ok())
        return ProvisionFailed(w, claim, "requireMount: " + s.message() + "; nothing made until it is", true);
    }
    if (a.check_space) {
      Result<uint64_t> available = space_->Available(**root);
      if (!available.ok()) return ProvisionFailed(w, claim, "cannot tell the free space: " + available.status().message());
      // Checked and reserved in one step: workers deciding at the same time do not all see the
      // same room. The PV's watch event takes the reservation over; a failure below drops it.
      if (std::string shortfall = promises_.Reserve(a.volume.meta.name, a.root, a.request_bytes,
                                                    static_cast<uint64_t>(a.request_bytes), *available, a.overcommit);
          !shortfall.empty()) {
        space_waiters_.Insert(KeyOf(claim.meta));
        return ProvisionFailed(w, claim, "cannot provision " + claim.storage_request + " under " + a.root + ": " + shortfall +
                                             "; " + SpaceAdvice(false, a.overcommit, a.volume.storage_class_name),
                               a.source.claim.empty());
      }
    }
    *out = *root;
    return std::nullopt;
  }

  // Creates the PV of a directory made (or copied: `clone_method`), and says so.
  Outcome CreateVolume(Worker& w, const Claim& claim, const Action& a, const Root& root, const MadeDir& made,
                       std::chrono::steady_clock::time_point start, const std::string& clone_method) {
    const std::string path = a.root + "/" + a.dir_name;
    Volume pv = a.volume;
    if (made.quota.method != QuotaMethod::kNone) pv.meta.annotations[ann::kQuota] = Describe(made.quota);
    if (!clone_method.empty()) pv.meta.annotations[ann::kCloneMethod] = clone_method;
    // Before the create, so that its watch event, which another worker may handle, finds it.
    created_.Insert(a.volume.meta.name);
    Status s = w.api.CreateVolume(pv);
    if (s.code() == Status::kConflict) {
      // Made by an earlier attempt (a crash, a retry)? Then it is ours and done. Anything else
      // of that name is not this claim's volume: our directory, just made and empty, goes.
      Result<Volume> got = w.api.GetVolume(a.volume.meta.name);
      if (got.ok() && IsVolumeWeMade(*got, a.volume)) {
        // Another node's instance made this volume on every node: ours joins it (its directory
        // here is made; the volume's sync adds this node's finalizer). A shared volume: made
        // by another instance, in the same directory; nothing more to do (and nothing to say).
        if (OnAllNodes(a.volume) || IsShared(a.volume)) return Done();
        s = Status::Ok();
      } else if (got.ok()) {
        created_.Erase(a.volume.meta.name);
        promises_.Release(a.volume.meta.name);
        if (Status r = root.RemoveIfEmpty(a.dir_name); !r.ok()) LogWarn("claim " + KeyOf(claim.meta) + ": " + r.message());
        return ProvisionFailed(w, claim, "a PersistentVolume named " + a.volume.meta.name +
                                          " already exists and is not the one this provisioner made for this claim "
                                          "(claim uid \"" + got->claim_ref.uid + "\", path \"" + got->host_path +
                                          "\"); delete it if it is stale");
      } else {
        s = got.status();
      }
    }
    if (!s.ok()) {
      created_.Erase(a.volume.meta.name);
      promises_.Release(a.volume.meta.name);
      std::string hint = s.code() == Status::kForbidden ? "; the provisioner's RBAC must allow creating persistentvolumes" : "";
      Outcome o = ProvisionFailed(w, claim, "creating PersistentVolume " + a.volume.meta.name + " failed: " + s.message() + hint);
      o.retry_after = w.conn.last_retry_after();
      return o;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats_.provisioned++;
    stats_.provision_seconds.Observe(secs);
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f ms", secs * 1000);
    const std::string limit = made.quota.method == QuotaMethod::kNone ? "" : ", size enforced (" + Describe(made.quota) + ")";
    const std::string copy = clone_method.empty() ? "" : ", a copy of " + a.source.claim + " (" + clone_method + ")";
    LogInfo("provisioned " + KeyOf(claim.meta) + " -> " + a.volume.meta.name + " at " + path + limit + copy + " (" + ms + ")");
    // Reservations are per process: each instance counts the PVs the others made, not the ones
    // they are making at the same moment.
    const std::string shared = IsShared(a.volume) && a.check_space && !a.overcommit
                                   ? "; overcommit \"false\" on a shared root: claims that other instances provision at "
                                     "the same moment are not counted against this one"
                                   : "";
    recorder_.Normal(Of(claim), reason::kProvisioningSucceeded,
                     "Successfully provisioned volume " + a.volume.meta.name + " at " + path + limit + copy + shared);
    if (!made.not_enforced.empty())
      recorder_.Normal(Of(claim), reason::kSizeNotEnforced,
                       "the size " + claim.storage_request + " is not enforced (class parameter quota: \"auto\"): " + made.not_enforced);
    return Done();
  }

  // `for_good`: this node cannot serve the claim until someone acts (a root missing, full or
  // read-only): in node-aware mode the scheduler is asked to pick another node.
  Outcome ProvisionFailed(Worker& w, const Claim& claim, const std::string& message, bool for_good = false) {
    if (for_good && !cfg_.node_name.empty()) return Reschedule(w, claim, message);
    stats_.provision_failed++;
    LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
    recorder_.Warning(Of(claim), reason::kProvisioningFailed, message);
    return Retry();
  }

  // Provisioning on the claim's selected node failed for good: the event, then the scheduler's
  // selected-node annotation removed so that it picks another node, as Kubernetes' external
  // provisioners do. A claim whose node came from an annotation of ours keeps it (retried).
  Outcome Reschedule(Worker& w, const Claim& claim, const std::string& message) {
    stats_.provision_failed++;
    auto selected = claim.meta.annotations.find(ann::kSelectedNode);
    const bool scheduled = selected != claim.meta.annotations.end() && selected->second == cfg_.node_name;
    const std::string full = message + (scheduled ? "; asking the scheduler for another node" : "");
    LogWarn("claim " + KeyOf(claim.meta) + ": " + full);
    recorder_.Warning(Of(claim), reason::kProvisioningFailed, full);
    if (!scheduled) return Retry();
    Status s = w.api.RemoveClaimAnnotation(claim, ann::kSelectedNode);
    if (s.ok() || s.code() == Status::kNotFound) return Done();
    LogWarn("claim " + KeyOf(claim.meta) + ": " + s.message());
    return Retry(w.conn.last_retry_after());
  }

  Outcome SyncVolume(Worker& w, const std::string& name) {
    std::optional<Volume> v = volumes_.Get(name);
    if (!v) {
      deleted_.Erase(name);
      return Done();
    }
    if (deleted_.Contains(name)) return Done();  // deleted it; the watch has not caught up yet
    std::optional<StorageClass> sc;
    if (OnAllNodes(*v) && !v->storage_class_name.empty()) sc = classes_.Get(v->storage_class_name);
    Action a = DecideVolume(cfg_, *v, sc ? &*sc : nullptr);
    if (a.kind != Action::kNothing && RootMoved("volume/" + name)) return Retry();
    switch (a.kind) {
      case Action::kNothing:
        LogDebug(2, "volume " + name + ": nothing to do: " + a.why);
        return Done();
      case Action::kFail:
        stats_.delete_failed++;
        LogWarn("volume " + name + ": " + a.message);
        recorder_.Warning(Of(*v), a.reason, a.message);
        return Retry();
      case Action::kDropFinalizer:
        return DropFinalizer(w, *v);
      case Action::kDelete:
        return Delete(w, *v, a);
      case Action::kJoin:
        return every_node_.Join(w.api, *v, a, Of(*v)).ok() ? Done() : Retry(w.conn.last_retry_after());
      case Action::kLeave:
        return every_node_.Leave(w.api, *v, a, Of(*v)).ok() ? Done() : Retry(w.conn.last_retry_after());
      case Action::kDeleteObject: {
        Status s = w.api.DeleteVolume(v->meta.name, v->meta.uid);
        if (s.ok()) LogInfo("volume " + name + ": released; deleting it (each node then removes its directory)");
        if (!s.ok()) LogWarn("volume " + name + ": " + s.message());
        return s.ok() ? Done() : Retry(w.conn.last_retry_after());
      }
      case Action::kAdopt: {
        bool taken = false;
        Status s = shared_.Adopt(w.api, *v, a.holder, Of(*v), &taken);
        // Its node still exists: its instance acts; looked at again later (the node may go).
        return s.ok() && taken ? Done() : Retry(w.conn.last_retry_after());
      }
      case Action::kPruneGone: {
        bool others_left = false;
        Status s = every_node_.PruneGone(w.api, *v, Of(*v), &others_left);
        // Nodes that still exist have yet to leave: look again later (a node may go meanwhile).
        return s.ok() && !others_left ? Done() : Retry(w.conn.last_retry_after());
      }
      default:
        return Done();
    }
  }

  // Removes our finalizer, so that a PV being deleted can go. A conflict means a newer version
  // is on its way through the watch (retry then); a PV already gone is done.
  Outcome DropFinalizer(Worker& w, const Volume& v) {
    std::vector<std::string> rest;
    for (const auto& f : v.meta.finalizers)
      if (f != ann::kProvisionerFinalizer) rest.push_back(f);
    Status s = w.api.SetVolumeFinalizers(v, rest);
    if (s.ok() || s.code() == Status::kNotFound) return Done();
    if (s.code() != Status::kConflict) LogWarn(s.message());
    return Retry(w.conn.last_retry_after());
  }

  // Removes the directory, then drops our finalizer and deletes the PV (its uid checked).
  Outcome Delete(Worker& w, const Volume& v, const Action& a) {
    if (cloner_.Reading(v.meta.name)) {  // the copy wakes it when it ends
      LogInfo("volume " + v.meta.name + ": removed once the clone copying it ends");
      return Retry();
    }
    auto start = std::chrono::steady_clock::now();
    std::string path = a.root + "/" + a.dir_name;
    std::string other;
    volumes_.ForEach([&](const Volume& o) {
      // A path inside this directory holds its name as a component (normalising never changes
      // one): the cheap test first, since every deletion looks at every PV.
      if (o.meta.name != v.meta.name && o.host_path.find(a.dir_name) != std::string::npos && PathWithin(o.host_path, path))
        other = o.meta.name;
    });
    if (!other.empty())
      return DeleteFailed(v, "PersistentVolume " + other + " also uses " + path +
                                 "; refusing to delete its data (delete that volume first, or remove the data by hand)");
    Result<Roots::Ref> root = roots_->Get(a.root);
    if (!root.ok()) return DeleteFailed(v, "cannot use " + a.root + ": " + root.status().message() + "; will retry");
    if (a.require_mount) {
      if (Status s = (*root)->FilesystemMounted(); !s.ok())
        return DeleteFailed(v, "requireMount: " + s.message() + "; nothing removed until it is (will retry)");
    }
    auto recorded = v.meta.annotations.find(ann::kQuota);
    const QuotaId quota = recorded == v.meta.annotations.end() ? QuotaId{} : ParseQuotaId(recorded->second);
    if (Status s = RemoveVolumeDir(**root, a.dir_name, quota, &halted_); !s.ok()) {
      if (s.code() == Status::kCanceled) {
        LogInfo("volume " + v.meta.name + ": stopping: " + s.message() + " for whoever acts next");
        return Retry();
      }
      const std::string hint = FixHint(s);
      return DeleteFailed(v, "removing " + path + " failed: " + s.message() + (hint.empty() ? "" : "; " + hint) + "; will retry");
    }
    if (HasFinalizer(v.meta, ann::kProvisionerFinalizer)) {
      if (Outcome o = DropFinalizer(w, v); o.retry) return o;
    }
    if (!v.meta.deleting) {
      if (Status s = w.api.DeleteVolume(v.meta.name, v.meta.uid); !s.ok()) {
        stats_.delete_failed++;
        LogWarn("volume " + v.meta.name + ": directory removed, but " + s.message());
        return Retry(w.conn.last_retry_after());
      }
    }
    return Deleted(v, path, start);
  }

  Outcome DeleteFailed(const Volume& v, const std::string& message) {
    stats_.delete_failed++;
    LogWarn("volume " + v.meta.name + ": " + message);
    recorder_.Warning(Of(v), reason::kVolumeFailedDelete, message);
    return Retry();
  }

  Outcome Deleted(const Volume& v, const std::string& path, std::chrono::steady_clock::time_point start) {
    deleted_.Insert(v.meta.name);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats_.deleted++;
    stats_.delete_seconds.Observe(secs);
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f ms", secs * 1000);
    LogInfo("deleted volume " + v.meta.name + " of " + v.claim_ref.namespace_ + "/" + v.claim_ref.name + " and " + path +
            " (" + ms + ")");
    return Done();
  }

  const Config cfg_;
  std::shared_ptr<ApiEndpoint> ep_;
  Roots* roots_;
  EventRecorder recorder_;
  EveryNodeSteps every_node_;
  SharedSteps shared_{cfg_, &recorder_};
  WorkQueue queue_;
  ControllerStats stats_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::shared_mutex fs_mu_;   // shared by workers on keys, exclusive for the orphan scan
  std::once_flag first_scan_;
  std::atomic<bool> halted_{false};  // Halt was called
  std::function<bool()> may_act_ = [this] { return !halted_; };
  NameSet created_;  // PVs made (or being made) whose watch event has not come yet
  NameSet deleted_;  // PVs deleted that the cache still holds
  NameSet space_waiters_;  // claims that did not fit: tried again when a volume goes
  Waiters clone_waiters_;  // clones waiting for their source to bind
  StatvfsSpace statvfs_;
  const SpaceBackend* space_ = &statvfs_;
  Promises promises_;
  Expander expander_{roots_, &space_, &promises_, &recorder_};
  Informer<Claim> claims_;
  Informer<Volume> volumes_;
  Informer<StorageClass> classes_;
  NodeCleanup node_cleanup_;  // only with DELETED_NODE_CLEANUP_DELAY
  std::thread resync_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
  UsageScanner usage_;  // its threads use the members above
  Cloner cloner_{roots_, &recorder_, [this](const std::string& key) { queue_.Add(key); },
                 [this] { return WorkersBusy(); }};  // last, as usage_
};
