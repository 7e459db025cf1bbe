// The controller: the bodies (controller.hpp has the contracts).
#include "control/controller.hpp"

#include <algorithm>
#include <cstring>

#include "base/log.hpp"
#include "decide/names.hpp"
#include "control/nodes/volume_labels.hpp"
#include "control/remove/archiving.hpp"
#include "decide/node_labels.hpp"
#include "decide/reconcile.hpp"

namespace {

constexpr const char* kScanOrphans = "scan/orphans";
constexpr const char* kScanArchives = "scan/archives";
constexpr const char* kGoneNode = "gone/";  // + the node's name

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The root under which a volume holds space that counts against new ones: a volume of ours
// made by this instance (or on every node, or shared); "" for any other.
std::string PromisedRoot(const Config& cfg, const Volume& v) {
  auto by = v.meta.annotations.find(ann::kProvisionedBy);
  if (by == v.meta.annotations.end() || !cfg.Ours(by->second)) return "";
  auto node = v.meta.annotations.find(ann::kNode);
  const std::string made_on = node == v.meta.annotations.end() ? "" : node->second;
  if (made_on != cfg.node_name && !OnAllNodes(v) && !IsShared(v)) return "";
  auto root = v.meta.annotations.find(ann::kPvDir);
  return root == v.meta.annotations.end() ? cfg.pv_dir : root->second;
}

// Does this instance measure the volume's use? One of ours under a root it promised space on,
// bound, and, if shared, named as this node's (one instance measures a shared one).
bool Measured(const Config& cfg, const Volume* v) {
  if (v == nullptr || PromisedRoot(cfg, *v).empty() || v->phase != "Bound") return false;
  auto node = v->meta.annotations.find(ann::kNode);
  return !IsShared(*v) || (node != v->meta.annotations.end() && node->second == cfg.node_name);
}

}  // namespace

Controller::Controller(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, Roots* roots)
    : cfg_(cfg), ep_(std::move(ep)), roots_(roots),
      recorder_(ep_, "hostpath-provisioner"),
      guard_(cfg_, &volumes_),
      every_node_(cfg_, roots, &guard_, &recorder_),
      claims_("PersistentVolumeClaims", api::kClaims, &SlimForCache, ep_,
              [this](const std::string& k, const Claim* c) { OnClaim(k, c); }),
      volumes_("PersistentVolumes", api::kVolumes, &SlimForCache, ep_,
               [this](const std::string& k, const Volume* v) { OnVolume(k, v); }),
      classes_("StorageClasses", api::kClasses, nullptr, ep_,
               [this](const std::string& k, const StorageClass*) { OnClass(k); }),
      dispatcher_(cfg_, ep_, &classes_),
      node_cleanup_(cfg_, ep_, &volumes_, &recorder_),
      capacity_(cfg_, ep_, &classes_, roots_, space_, &promises_, [this] { return may_act_(); }),
      usage_(cfg.usage_scan_seconds, roots, &recorder_, [this](const std::string& v) { return UsageTargetOf(v); },
             [this](const std::string& v, uint64_t used) { promises_.SetUsed(v, used); }),
      cloner_(roots_, &recorder_, [this](const std::string& key) { queue_.Add(key); }, [this] { return WorkersBusy(); }),
      maker_(cfg_, roots_, space_, &promises_, &created_, &space_waiters_, &recorder_, &stats_),
      cloning_(cfg_, &claims_, &volumes_, roots_, &cloner_, &maker_, &promises_, &created_, &space_waiters_, &recorder_,
               &stats_, [this](const std::string& v) { return usage_.UsedBytes(v); },
               [this](const std::string& key) { queue_.Add(key); }),
      pattern_dirs_(&guard_, &volumes_, &created_, [this](const std::string& pv) { return cloner_.Has(pv); }),
      provisioner_(cfg_, &volumes_, &promises_, &created_, &maker_, &cloning_, &pattern_dirs_, &recorder_, &stats_,
                   [this](const std::string& key) { return RootMoved(key); }),
      expander_(cfg_, &volumes_, roots_, &space_, &promises_, &space_waiters_, &every_node_, &shared_, &recorder_,
                [this](const std::string& key) { return RootMoved(key); }),
      deleter_(cfg_, &volumes_, &guard_, &classes_, roots_, &every_node_, &shared_, &recorder_, &stats_,
               [this](const std::string& name) { return cloner_.Reading(name); }, &halted_,
               [this](const std::string& key) { return RootMoved(key); }),
      orphans_(&claims_, &volumes_, &created_, roots_, [this] { return may_act_(); },
               [this](const std::string& pv) {
                 Cloner::Finished unused;
                 return cloner_.Poll(pv, &unused) == Cloner::State::kBusy;
               }),
      archives_(roots_, ConfiguredRoots(cfg_), [this] { return may_act_(); }, &halted_) {
  // Node-aware: this node's claims and PVs, the shared ones, and the PVs no node label names.
  claims_.SetSelections({ClaimSelection(cfg_)});
  volumes_.SetSelections(VolumeSelections(cfg_));
  maker_.SetSpaceNote([this](const std::string& root) { return ArchivesNote(archives_.Now(root)); });
  // The scheduler chose this node for a claim that does not fit: the figure it read is too high.
  maker_.SetNoRoom([this] { capacity_.Changed(true); });
  for (int i = 0; i < std::max(1, cfg_.workers); ++i) workers_.push_back(std::make_unique<Worker>(ep_));
}

// Said when an instance starts watching every claim: at a switch, and at start (an instance
// that starts after the switch sees no switch of its own).
constexpr const char* kWatchesEveryClaim =
    "the dispatcher says the cluster is small: this instance now watches every claim (and acts on its own node's, "
    "without waiting for their labels)";

Controller::~Controller() { Stop(); }

void Controller::SetMayAct(std::function<bool()> may_act) {
  may_act_ = [this, may_act = std::move(may_act)] { return !halted_ && may_act(); };
}

Status Controller::Start() {
  for (auto& w : workers_)
    if (Status s = w->conn.Init(); !s.ok()) return s;
  if (Status s = recorder_.Start(); !s.ok()) return s;
  LabelOldVolumes(cfg_, workers_.front()->api);
  bool every_claim = false;  // what the dispatch Lease says
  if (!cfg_.node_name.empty() && dispatch_lease_) FallBackUnlessDispatching(workers_.front()->api, &every_claim);
  if (every_claim) {
    claims_.SetSelections({""});
    LogInfo(kWatchesEveryClaim);
  }
  every_claim_watched_ = every_claim || !DispatchFallback().empty();
  every_claim_wanted_ = every_claim;
  for (Status s : {classes_.Start(), volumes_.Start(), claims_.Start()})
    if (!s.ok()) return s;
  // One instance looks for deleted nodes: the dispatcher (node_cleanup.hpp).
  auto janitor_ready = [this] { return Synced() && (!dispatch_lease_ || dispatcher_.Leading()); };
  if (Status s = node_cleanup_.Start(janitor_ready, [this](const std::string& node) { queue_.Add(kGoneNode + node); });
      !s.ok())
    return s;
  if (!cfg_.node_name.empty() && dispatch_lease_) {
    dispatcher_.OnWatchChange([this](bool every) {
      {
        std::lock_guard<std::mutex> lock(switch_mu_);
        every_claim_wanted_ = every;
      }
      switch_cv_.notify_all();
    });
    switcher_ = std::thread([this] { SwitchClaimWatch(); });
    dispatcher_.Start(*dispatch_lease_, every_claim);
  }
  capacity_.Start(capacity_ns_, [this] { return Synced(); });
  for (auto& w : workers_) w->thread = std::thread([this, &w] { Work(*w); });
  if (cfg_.resync_seconds > 0) resync_ = std::thread([this] { Resync(); });
  return Status::Ok();
}

void Controller::FallBackUnlessDispatching(KubeApi& api, bool* every_claim) {
  const std::string missing =
      Dispatcher::CheckAccess(api, *dispatch_lease_, [this] { return halted_.load(); }, every_claim);
  if (missing.empty()) return;
  {
    std::lock_guard<std::mutex> lock(fallback_mu_);
    dispatch_fallback_ = missing;
  }
  LogWarn("node-aware mode without its RBAC: this instance " + missing +
          ". It watches every claim instead (and acts on its own node's, as versions before the claim dispatcher "
          "did): claims are made, but every instance caches every claim. To fix: kubectl apply -f "
          "manifests/daemonset/rbac.yaml -f manifests/daemonset/daemonset.yaml, then kubectl -n " +
          dispatch_lease_->ns + " rollout restart daemonset hostpath-provisioner");
  claims_.SetSelections({""});
  *every_claim = false;  // (watches every claim as a fallback, not as the dispatcher says)
  dispatch_lease_.reset();  // no election; and the deleted-node janitor runs here, as before the dispatcher
}

void Controller::SwitchClaimWatch() {
  std::unique_lock<std::mutex> lock(switch_mu_);
  for (;;) {
    switch_cv_.wait(lock, [this] { return stopped_switching_ || every_claim_wanted_ != every_claim_watched_; });
    if (stopped_switching_) return;
    const bool every = every_claim_wanted_;
    lock.unlock();
    LogInfo(every ? kWatchesEveryClaim
                  : "the dispatcher says the cluster is large: this instance now watches only the claims labelled "
                    "for its node");
    Status s = claims_.Reselect({every ? "" : ClaimSelection(cfg_)});
    if (!s.ok()) LogError("changing the claims watched: " + s.message());
    lock.lock();
    if (s.ok()) every_claim_watched_ = every;
    else switch_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_switching_; });
  }
}

bool Controller::Halt(std::chrono::milliseconds limit) {
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

void Controller::Stop() {
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
  dispatcher_.Stop();
  {
    std::lock_guard<std::mutex> lock(switch_mu_);
    stopped_switching_ = true;
  }
  switch_cv_.notify_all();
  claims_.Stop();  // (a switch in progress gives up)
  if (switcher_.joinable()) switcher_.join();
  capacity_.Stop();
  recorder_.Stop();
  node_cleanup_.Stop();
  claims_.Stop();
  volumes_.Stop();
  classes_.Stop();
}

bool Controller::Synced() const { return claims_.Synced() && volumes_.Synced() && classes_.Synced(); }

bool Controller::WorkersBusy() {
  if (queue_.Ready() > 0) return true;
  for (const auto& w : workers_)
    if (w->busy_since_ms != 0) return true;
  return false;
}

long Controller::WatchRestarts() const {
  return claims_.WatchRestarts() + volumes_.WatchRestarts() + classes_.WatchRestarts();
}

bool Controller::WorkerStuck(std::chrono::seconds limit) const {
  const int64_t now = NowMs();
  for (const auto& w : workers_) {
    int64_t busy_since = w->busy_since_ms;
    if (busy_since == 0 || now - busy_since <= limit.count() * 1000) return false;
  }
  return true;
}

// A watch event (or a relist) changed a claim: a worker looks at it only if it may need a
// volume, or a bound one asks for more. A claim that is bound or gone needs nothing; most
// events of a burst are of those.
void Controller::OnClaim(const std::string& key, const Claim* now) {
  if (now == nullptr || now->meta.deleting) cloner_.Cancel(key);  // its copy, if one runs, stops
  if (now != nullptr && !now->volume_name.empty()) cloning_.SourceChanged(key);  // clones that wait for this claim to bind
  if (now == nullptr) return;
  std::optional<StorageClass> sc;  // only another node's claim needs its class: is it of shared volumes?
  if (!cfg_.node_name.empty() && !ClaimMayNeedVolume(cfg_, *now) && !now->storage_class_name.empty())
    sc = classes_.Get(now->storage_class_name);
  if (ClaimMayNeedVolume(cfg_, *now, sc ? &*sc : nullptr) || ExpansionAsked(*now)) queue_.Add("claim/" + key);
}

// A volume changed: a worker looks at it if there is something to do (DecideVolume), or if
// it is gone (the deleter then forgets that it deleted it). Once the cache holds a volume we
// made, the provisioner no longer needs to remember making it. Clones that wait for its claim
// look again (the claim may be Bound before its volume is in the cache).
void Controller::OnVolume(const std::string& name, const Volume* now) {
  created_.Erase(name);
  if (now != nullptr && now->has_claim_ref) cloning_.SourceChanged(now->claim_ref.namespace_ + "/" + now->claim_ref.name);
  const std::string promised_root = now ? PromisedRoot(cfg_, *now) : "";
  promises_.Set(name, promised_root, now ? now->capacity_bytes : -1);
  usage_.Track(name, Measured(cfg_, now));
  if (now == nullptr)  // space freed: claims that did not fit try again now
    for (const std::string& key : space_waiters_.TakeAll()) queue_.Add("claim/" + key);
  if (!promised_root.empty() || now == nullptr) capacity_.Changed(now == nullptr);  // room made or taken
  if (now == nullptr || DecideVolume(cfg_, *now).kind != Action::kNothing) queue_.Add("volume/" + name);
}

// What the usage scanner walks for a volume now (usage.hpp), from the cache.
std::optional<UsageTarget> Controller::UsageTargetOf(const std::string& name) const {
  std::optional<Volume> v = volumes_.Get(name);
  return v ? UsageTargetFor(cfg_, *v, Measured(cfg_, &*v)) : std::nullopt;
}

// A class appeared or changed: claims of that class that failed may now succeed.
void Controller::OnClass(const std::string& name) {
  dispatcher_.ClassChanged(name);
  capacity_.Changed(false);
  if (!claims_.Synced() || !classes_.Get(name)) return;
  claims_.ForEach([&](const Claim& c) {
    if (c.storage_class_name == name && c.volume_name.empty()) queue_.Add("claim/" + KeyOf(c.meta));
  });
}

void Controller::Resync() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, std::chrono::seconds(cfg_.resync_seconds), [this] { return stopped_; })) {
    claims_.ForEach([&](const Claim& c) {
      if (c.volume_name.empty() || ExpansionAsked(c)) queue_.Add("claim/" + KeyOf(c.meta));
    });
    volumes_.ForEach([&](const Volume& v) {
      if (v.phase != "Bound") queue_.Add("volume/" + v.meta.name);
    });
    queue_.Add(kScanOrphans);  // on a worker, alone: never beside a provision in progress
    queue_.Add(kScanArchives);
  }
}

void Controller::Work(Worker& w) {
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
    queue_.Add(kScanArchives);
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

Outcome Controller::Sync(Worker& w, const std::string& key) {
  if (!may_act_()) {
    LogWarn(key + ": not acting: this instance may no longer hold the lease");
    return Outcome::Retry();
  }
  // Claims and volumes are checked once they are known to be ours (by their parts).
  if ((key == kScanOrphans || key == kScanArchives || key.rfind(kGoneNode, 0) == 0) && RootMoved(key))
    return Outcome::Retry();
  if (key == kScanOrphans) {
    std::unique_lock<std::shared_mutex> alone(fs_mu_);
    return orphans_.Run(w) ? Outcome::Done() : Outcome::Retry(w.conn.last_retry_after());
  }
  if (key.rfind(kGoneNode, 0) == 0)
    return node_cleanup_.CleanUp(w.api, key.substr(std::strlen(kGoneNode))).ok() ? Outcome::Done()
                                                                                 : Outcome::Retry(w.conn.last_retry_after());
  std::shared_lock<std::shared_mutex> shared(fs_mu_);
  if (key == kScanArchives) {  // beside the workers: it touches nothing but the archive folders
    archives_.Run(NowSeconds());
    return Outcome::Done();
  }
  if (key.rfind("claim/", 0) == 0) return SyncClaim(w, key.substr(6));
  return deleter_.Sync(w, key.substr(7));
}

// A claim waiting for a volume goes to the provisioner; a bound one to the expander.
Outcome Controller::SyncClaim(Worker& w, const std::string& key) {
  std::optional<Claim> claim = claims_.Get(key);
  if (!claim) return Outcome::Done();  // gone
  std::optional<StorageClass> sc;
  if (!claim->storage_class_name.empty()) sc = classes_.Get(claim->storage_class_name);
  if (!claim->volume_name.empty()) return expander_.Sync(w, *claim, sc ? &*sc : nullptr);
  return provisioner_.Sync(w, key, *claim, sc ? &*sc : nullptr);
}

// True when PV_DIR no longer names the directory held open: nothing is to be done (volumes
// made now would be in a directory that PVs do not name); the claim or volume of `key`, which
// must be ours, is told, and /healthz fails so that the kubelet restarts the pod onto the
// right directory.
bool Controller::RootMoved(const std::string& key) {
  Status moved = roots_->primary().StillAtPath();
  if (moved.ok()) return false;
  const std::string message = moved.Wrap("PV_DIR").message() + "; nothing done until the provisioner restarts";
  LogError(key + ": " + message);
  if (key.rfind("claim/", 0) == 0) {
    if (std::optional<Claim> c = claims_.Get(key.substr(6))) recorder_.Warning(InvolvedOf(*c), reason::kProvisioningFailed, message);
  } else if (key.rfind("volume/", 0) == 0) {
    if (std::optional<Volume> v = volumes_.Get(key.substr(7))) recorder_.Warning(InvolvedOf(*v), reason::kVolumeFailedDelete, message);
  }
  return true;
}
