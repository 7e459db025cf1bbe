// Per-volume usage: the bodies (usage.hpp has the contracts).
#include "control/usage.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.hpp"
#include "base/text.hpp"
#include "control/make/volume_dir.hpp"
#include "decide/reconcile.hpp"
#include "fs/fsops.hpp"

std::optional<UsageTarget> UsageTargetFor(const Config& cfg, const Volume& v, bool made_here) {
  if (!made_here || v.phase != "Bound" || v.meta.deleting || !v.has_claim_ref) return std::nullopt;
  Action a = reconcile_detail::AtRecomputedPath(cfg, v, Action::kNothing);
  if (a.kind == Action::kFail) return std::nullopt;
  auto quota = v.meta.annotations.find(ann::kQuota);
  return UsageTarget{a.root, a.dir_name, a.require_mount, v.claim_ref.namespace_, v.claim_ref.name,
                     v.claim_ref.uid, v.capacity_bytes, OnAllNodes(v) ? cfg.node_name : "",
                     quota == v.meta.annotations.end() ? QuotaId{} : ParseQuotaId(quota->second)};
}

std::optional<std::pair<UsageCount, FsFigures>> UsageFromQuota(const Root& root, const UsageTarget& t) {
  if (t.quota.method == QuotaMethod::kNone) return std::nullopt;
  QuotaLimits limits(root);
  Result<QuotaId> q = AgreedQuota(limits, t.dir_name, t.quota);
  if (!q.ok()) return std::nullopt;
  UsageCount count;
  if (q->method == QuotaMethod::kBtrfs) {
    count.inodes_known = false;
    if (!limits.QgroupUsage(q->id, &count.bytes).ok()) return std::nullopt;
  } else if (!limits.ProjectUsage(static_cast<unsigned>(q->id), &count.bytes, &count.inodes).ok()) {
    return std::nullopt;
  }
  struct statvfs vfs;
  if (fstatvfs(root.fd(), &vfs) != 0) return std::nullopt;
  FsFigures fs;
  fs.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  fs.inodes = vfs.f_files;
  fs.inodes_free = vfs.f_ffree;
  return std::make_pair(count, fs);
}

uint64_t AvailableBytes(const VolumeUsage& u) {
  if (u.capacity_bytes < 0) return u.fs.free_bytes;
  const uint64_t capacity = static_cast<uint64_t>(u.capacity_bytes);
  return std::min(capacity > u.used_bytes ? capacity - u.used_bytes : 0, u.fs.free_bytes);
}

bool OverCapacity(const VolumeUsage& u) {
  return u.capacity_bytes >= 0 && u.used_bytes > static_cast<uint64_t>(u.capacity_bytes);
}

std::string OverCapacityMessage(const VolumeUsage& u, const std::string& node) {
  return "volume " + u.volume + (node.empty() ? "" : " on node " + node) + " uses " + HumanBytes(u.used_bytes) +
         ", more than its capacity of " + HumanBytes(static_cast<uint64_t>(u.capacity_bytes)) +
         " (hostPath volumes are not held to their size): free some space in it, or move its data to a larger volume";
}

void LowerThreadPriority(const char* name) {
  pthread_setname_np(pthread_self(), name);
  const pid_t tid = gettid();
  sched_param param{};
  if (int err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param))
    LogDebug(1, std::string(name) + ": SCHED_IDLE refused: " + fsops_detail::ErrnoText(err));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 19) != 0)
    LogDebug(1, std::string(name) + ": nice 19 refused: " + fsops_detail::ErrnoText(errno));
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;  // linux/ioprio.h
  if (syscall(SYS_ioprio_set, kWhoProcess, tid, kClassIdle << kClassShift) != 0)
    LogDebug(1, std::string(name) + ": idle I/O class refused: " + fsops_detail::ErrnoText(errno));
}

IdleWalker::~IdleWalker() { Stop(); }

void IdleWalker::Start() { thread_ = std::thread([this] { Run(); }); }

void IdleWalker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

IdleWalker::Outcome IdleWalker::Walk(Roots::Ref root, std::string name, const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = Job{std::move(root), std::move(name), cancel};
  outcome_.reset();
  cv_.notify_all();
  cv_.wait(lock, [this] { return stop_ || outcome_.has_value(); });
  return outcome_ ? std::move(*outcome_) : Outcome{};
}

void IdleWalker::Run() {
  LowerThreadPriority("usage-walk");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || job_.has_value(); });
    if (stop_) return;
    Job job = std::move(*job_);
    job_.reset();
    lock.unlock();
    Outcome o = Do(job);
    lock.lock();
    outcome_ = std::move(o);
    cv_.notify_all();
  }
}

IdleWalker::Outcome IdleWalker::Do(const Job& job) {
  Outcome o;
  Result<UsageWalk> w = UsageWalk::Begin(*job.root, job.name);
  if (!w.ok()) {
    o.status = w.status();
    return o;
  }
  for (uint64_t counted = 0;;) {
    const bool done = w->Step(kUsageBatch);
    entries_ += w->count().inodes - counted;
    counted = w->count().inodes;
    if (done) break;
    if (*job.cancel || stopping_) return o;
    std::this_thread::sleep_for(kUsagePause);
  }
  Result<FsFigures> fs = w->Filesystem();
  o.status = fs.status();
  o.count = w->count();
  o.fs = *fs;
  o.finished = fs.ok();
  return o;
}

UsageScanner::UsageScanner(int interval_seconds, Roots* roots, EventRecorder* recorder, Lookup lookup, Scanned scanned)
    : interval_(interval_seconds), roots_(roots), recorder_(recorder), lookup_(std::move(lookup)),
      scanned_(std::move(scanned)) {}

UsageScanner::~UsageScanner() { Stop(); }

void UsageScanner::Start() {
  if (!enabled()) return;
  walker_.Start();
  thread_ = std::thread([this] { Run(); });
}

void UsageScanner::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  walker_.Stop();
  if (thread_.joinable()) thread_.join();
}

void UsageScanner::Track(const std::string& volume, bool scan) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (scan) {
    if (tracked_.try_emplace(volume).second && tracked_.size() == 1) cv_.notify_all();
    return;
  }
  tracked_.erase(volume);
  if (volume == current_) cancel_ = true;
}

std::vector<VolumeUsage> UsageScanner::Snapshot() const {
  std::vector<VolumeUsage> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, e] : tracked_)
    if (e.usage) out.push_back(*e.usage);
  return out;
}

uint64_t UsageScanner::UsedBytes(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracked_.find(name);
  return it != tracked_.end() && it->second.usage ? it->second.usage->used_bytes : 0;
}

void UsageScanner::Run() {
  pthread_setname_np(pthread_self(), "usage-scan");
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !tracked_.empty(); });
      if (stop_) return;
    }
    const auto start = std::chrono::steady_clock::now();
    std::map<std::string, Status> mounted;  // requireMount: each root looked up once a pass
    for (std::string name; NextVolume(&name);) ScanOne(name, &mounted);
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    last_pass_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++passes_;
    if (LogEnabled(2)) LogDebug(2, "usage scan: " + std::to_string(tracked_.size()) + " volumes");
    if (cv_.wait_for(lock, interval_, [this] { return stop_; })) return;
  }
}

// The next volume after *name in name order (volumes come and go during a pass). False at
// the end of the pass, or when stopping.
bool UsageScanner::NextVolume(std::string* name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracked_.upper_bound(*name);
  if (stop_ || it == tracked_.end()) {
    current_.clear();
    return false;
  }
  *name = current_ = it->first;
  cancel_ = false;
  return true;
}

void UsageScanner::ScanOne(const std::string& name, std::map<std::string, Status>* mounted) {
  std::optional<UsageTarget> t = lookup_(name);
  if (!t) return Unmeasured(name, "");
  Result<Roots::Ref> root = roots_->Get(t->root);
  if (!root.ok()) return Unmeasured(name, root.status().message());
  if (t->require_mount) {
    auto [it, added] = mounted->try_emplace(t->root);
    if (added) it->second = (*root)->FilesystemMounted();
    if (!it->second.ok()) return Unmeasured(name, "requireMount: " + it->second.message());
  }
  // A pathPattern's directory ("ns/name") is looked at in its parent, by its last name.
  UsageTarget at = *t;
  root = roots_->Place(t->root, t->dir_name, false, &at.dir_name);
  if (!root.ok()) return Unmeasured(name, root.status().message());
  if (at.quota.method == QuotaMethod::kBtrfs) HoldNested(**root, at);
  if (auto counted = UsageFromQuota(**root, at)) {
    IdleWalker::Outcome o;
    o.count = counted->first;
    o.fs = counted->second;
    o.finished = true;
    return Publish(name, *t, o);
  }
  IdleWalker::Outcome o = walker_.Walk(*root, at.dir_name, &cancel_);
  if (!o.status.ok()) return Unmeasured(name, o.status.message());
  if (!o.finished) return;  // no longer scanned, or stopping
  if (o.count.skipped > 0 && LogEnabled(1))
    LogDebug(1, "volume " + name + ": " + std::to_string(o.count.skipped) +
                    " entries not counted (other mounts, unreadable, too deep, or replaced while walked)");
  Publish(name, *t, o);
}

// Subvolumes a tenant made inside an enforced btrfs volume escape its limit until found:
// each pass puts those found since under it (QuotaLimits::HoldNested), and says so on the claim.
void UsageScanner::HoldNested(const Root& root, const UsageTarget& t) {
  QuotaLimits limits(root);
  Result<QuotaId> q = AgreedQuota(limits, t.dir_name, t.quota);
  std::vector<btrfs_qgroup::Nested> added;
  Status s = q.ok() ? limits.HoldNested(*q, t.dir_name, &added) : q.status();
  if (!s.ok()) LogDebug(1, "claim " + t.namespace_ + "/" + t.claim + ": subvolumes inside not checked: " + s.message());
  if (added.empty()) return;
  std::string names;
  for (const auto& n : added) names += (names.empty() ? "" : ", ") + n.path + " (subvolume " + std::to_string(n.id) + ")";
  const std::string message =
      "btrfs subvolume" + std::string(added.size() == 1 ? "" : "s") + " made inside the volume: " + names +
      "; now held to the volume's size" + (t.capacity_bytes >= 0 ? " of " + HumanBytes(static_cast<uint64_t>(t.capacity_bytes)) : "") +
      " with it (writes there were not limited until the usage scan found " + (added.size() == 1 ? "it" : "them") + ")";
  LogWarn("claim " + t.namespace_ + "/" + t.claim + ": " + message);
  recorder_->Warning({"PersistentVolumeClaim", t.namespace_, t.claim, t.claim_uid, ""}, reason::kNestedSubvolume, message);
}

// The volume's figures are unknown now: none exported (rather than stale ones).
void UsageScanner::Unmeasured(const std::string& name, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = tracked_.find(name); it != tracked_.end()) it->second.usage.reset();
  }
  if (!why.empty() && LogEnabled(1)) LogDebug(1, "volume " + name + ": usage not measured: " + why);
}

void UsageScanner::Publish(const std::string& name, const UsageTarget& t, const IdleWalker::Outcome& o) {
  VolumeUsage u{name, t.namespace_, t.claim, t.capacity_bytes, o.count.bytes, o.count.inodes, o.fs, o.count.inodes_known};
  bool tell = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tracked_.find(name);
    if (it == tracked_.end()) return;  // no longer scanned
    tell = OverCapacity(u) && !it->second.over;
    it->second.over = OverCapacity(u);
    it->second.usage = std::make_unique<VolumeUsage>(u);
  }
  if (scanned_) scanned_(name, u.used_bytes);
  if (!tell) return;
  const std::string message = OverCapacityMessage(u, t.node);
  LogWarn("claim " + t.namespace_ + "/" + t.claim + ": " + message);
  recorder_->Warning({"PersistentVolumeClaim", t.namespace_, t.claim, t.claim_uid, ""}, reason::kVolumeOverCapacity,
                     message);
}
