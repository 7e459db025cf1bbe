// Per-volume usage, for /metrics under kubelet's names (kubelet_volume_stats_*), which kubelet
// itself does not export for hostPath volumes. Every USAGE_SCAN_INTERVAL seconds a pass walks
// each volume directory of ours that this instance made (usage_walk.hpp: as du -sx counts),
// one after the other; a volume found over its capacity gets one Warning event.
//
// Two threads, so that the scan never holds up provisioning: the scanner keeps the table of
// volumes (the controller's watch tells it which, UsageScanner::Track; it never lists) and
// publishes results, at normal priority; the walker only walks, at idle CPU and I/O priority,
// a bounded number of entries at a time with a pause in between, and shares no lock with any
// thread but the scanner. A thread at idle priority may wait long for a CPU while the others
// are busy, so it must never be holding a lock that the watches, workers or /metrics wait for.
// With the interval 0 there are neither threads nor metrics.
#pragma once
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "decide/reconcile.hpp"
#include "kube/recorder.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "fs/usage_walk.hpp"
#include "control/volume_dir.hpp"

namespace reason {
inline constexpr const char* kVolumeOverCapacity = "VolumeOverCapacity";
inline constexpr const char* kNestedSubvolume = "NestedSubvolume";  // Warning: found, and put under the limit
}  // namespace reason

constexpr size_t kUsageBatch = 1000;                             // entries walked between pauses
constexpr auto kUsagePause = std::chrono::milliseconds(5);       // the pause

// What to walk for a volume, and what its metrics and event name.
struct UsageTarget {
  std::string root;      // the root it was made under
  std::string dir_name;  // its directory there, recomputed (never the PV's spec path)
  bool require_mount = false;
  std::string namespace_, claim, claim_uid;  // its claim
  int64_t capacity_bytes = -1;               // -1: not known
  std::string node;                          // a volume on every node: this instance's node
  QuotaId quota;                             // the limit it was made under (its PV's kQuota)
};

// Pure. The directory to walk for volume `v`, or nothing: only a Bound volume of ours that
// this instance made (`made_here`, the controller's rule), at the path that deleting it would
// recompute, and only if that is the PV's path too.
inline std::optional<UsageTarget> UsageTargetFor(const Config& cfg, const Volume& v, bool made_here) {
  if (!made_here || v.phase != "Bound" || v.meta.deleting || !v.has_claim_ref) return std::nullopt;
  Action a = reconcile_detail::AtRecomputedPath(cfg, v, Action::kNothing);
  if (a.kind == Action::kFail) return std::nullopt;
  auto quota = v.meta.annotations.find(ann::kQuota);
  return UsageTarget{a.root, a.dir_name, a.require_mount, v.claim_ref.namespace_, v.claim_ref.name,
                     v.claim_ref.uid, v.capacity_bytes, OnAllNodes(v) ? cfg.node_name : "",
                     quota == v.meta.annotations.end() ? QuotaId{} : ParseQuotaId(quota->second)};
}

// A volume's use as its quota counts it, without walking it: bytes and inodes of its project
// (ext4, XFS), bytes of its qgroup (btrfs: a qgroup counts no inodes, and btrfs reports no inode
// totals either). Nothing for a volume made without a limit, or when the accounting cannot be
// read (then it is walked).
inline std::optional<std::pair<UsageCount, FsFigures>> UsageFromQuota(const Root& root, const UsageTarget& t) {
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

// One volume's figures from its last scan.
struct VolumeUsage {
  std::string volume, namespace_, claim;
  int64_t capacity_bytes = -1;
  uint64_t used_bytes = 0, inodes_used = 0;
  FsFigures fs;
  bool inodes_known = true;  // inodes_used counted (not for a btrfs volume measured by its qgroup)
};

// Pure. kubelet's "available" for a directory that shares its filesystem: what the volume may
// still use of its capacity, but no more than the filesystem has free, and never below 0.
// Without a known capacity, the filesystem's free bytes.
inline uint64_t AvailableBytes(const VolumeUsage& u) {
  if (u.capacity_bytes < 0) return u.fs.free_bytes;
  const uint64_t capacity = static_cast<uint64_t>(u.capacity_bytes);
  return std::min(capacity > u.used_bytes ? capacity - u.used_bytes : 0, u.fs.free_bytes);
}

inline bool OverCapacity(const VolumeUsage& u) {
  return u.capacity_bytes >= 0 && u.used_bytes > static_cast<uint64_t>(u.capacity_bytes);
}

// Pure. The VolumeOverCapacity event's message.
inline std::string OverCapacityMessage(const VolumeUsage& u, const std::string& node) {
  return "volume " + u.volume + (node.empty() ? "" : " on node " + node) + " uses " + HumanBytes(u.used_bytes) +
         ", more than its capacity of " + HumanBytes(static_cast<uint64_t>(u.capacity_bytes)) +
         " (hostPath volumes are not held to their size): free some space in it, or move its data to a larger volume";
}

// Puts the calling thread at the lowest CPU priority (SCHED_IDLE: it runs when no other thread
// wants the CPU; else nice 19) and in the idle I/O class (its reads wait for everyone else's,
// where the disk's scheduler honours classes, as BFQ does), and names it. Best effort: what the
// kernel refuses is logged at level 1.
inline void LowerThreadPriority(const char* name) {
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

// The walker thread: walks one directory at a time for the scanner, at idle priority.
class IdleWalker {
 public:
  struct Outcome {
    Status status;          // not ok: the directory could not be walked (missing, not a directory ...)
    UsageCount count;
    FsFigures fs;
    bool finished = false;  // walked to its end (not cancelled, not stopping)
  };

  ~IdleWalker() { Stop(); }
  void Start() { thread_ = std::thread([this] { Run(); }); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Walks root/name on the walker thread and returns the outcome; returns early (not
  // finished) once *cancel is set or the walker stops. One caller at a time.
  Outcome Walk(Roots::Ref root, std::string name, const std::atomic<bool>* cancel) {
    std::unique_lock<std::mutex> lock(mu_);
    job_ = Job{std::move(root), std::move(name), cancel};
    outcome_.reset();
    cv_.notify_all();
    cv_.wait(lock, [this] { return stop_ || outcome_.has_value(); });
    return outcome_ ? std::move(*outcome_) : Outcome{};
  }

  // Entries counted by all walks so far.
  uint64_t entries() const { return entries_; }

 private:
  struct Job {
    Roots::Ref root;
    std::string name;
    const std::atomic<bool>* cancel = nullptr;
  };

  void Run() {
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

  Outcome Do(const Job& job) {
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

  std::mutex mu_;  // the scanner's and the walker's only
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // stop_, read while walking
  std::optional<Job> job_;
  std::optional<Outcome> outcome_;
  std::atomic<uint64_t> entries_{0};
  std::thread thread_;
};

class UsageScanner {
 public:
  // The directory to walk for a volume now, or nothing (the controller's cache and rules).
  using Lookup = std::function<std::optional<UsageTarget>(const std::string& volume)>;
  // Called after each volume's scan with its used bytes (for the free-space check).
  using Scanned = std::function<void(const std::string& volume, uint64_t used_bytes)>;

  UsageScanner(int interval_seconds, Roots* roots, EventRecorder* recorder, Lookup lookup, Scanned scanned)
      : interval_(interval_seconds), roots_(roots), recorder_(recorder), lookup_(std::move(lookup)),
        scanned_(std::move(scanned)) {}
  ~UsageScanner() { Stop(); }

  bool enabled() const { return interval_.count() > 0; }

  // Starts both threads; with the interval 0, nothing.
  void Start() {
    if (!enabled()) return;
    walker_.Start();
    thread_ = std::thread([this] { Run(); });
  }

  // Ends the walk under way and both threads.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    walker_.Stop();
    if (thread_.joinable()) thread_.join();
  }

  // From the watch: volume `volume` is (scan) or is no longer one to scan. A volume no longer
  // scanned leaves the metrics at once, and a walk of it under way ends.
  void Track(const std::string& volume, bool scan) {
    if (!enabled()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (scan) {
      if (tracked_.try_emplace(volume).second && tracked_.size() == 1) cv_.notify_all();
      return;
    }
    tracked_.erase(volume);
    if (volume == current_) cancel_ = true;
  }

  // The volumes scanned at least once, with their figures from the last scan.
  std::vector<VolumeUsage> Snapshot() const {
    std::vector<VolumeUsage> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, e] : tracked_)
      if (e.usage) out.push_back(*e.usage);
    return out;
  }

  // Volume `name`'s used bytes at its last scan; 0 when not measured.
  uint64_t UsedBytes(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tracked_.find(name);
    return it != tracked_.end() && it->second.usage ? it->second.usage->used_bytes : 0;
  }

  long passes() const { return passes_; }
  double last_pass_seconds() const { return last_pass_seconds_; }
  uint64_t entries() const { return walker_.entries(); }

 private:
  struct Entry {
    std::unique_ptr<VolumeUsage> usage;  // null until scanned
    bool over = false;                   // over its capacity at the last scan: told once
  };

  void Run() {
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
  bool NextVolume(std::string* name) {
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

  void ScanOne(const std::string& name, std::map<std::string, Status>* mounted) {
    std::optional<UsageTarget> t = lookup_(name);
    if (!t) return Unmeasured(name, "");
    Result<Roots::Ref> root = roots_->Get(t->root);
    if (!root.ok()) return Unmeasured(name, root.status().message());
    if (t->require_mount) {
      auto [it, added] = mounted->try_emplace(t->root);
      if (added) it->second = (*root)->FilesystemMounted();
      if (!it->second.ok()) return Unmeasured(name, "requireMount: " + it->second.message());
    }
    if (t->quota.method == QuotaMethod::kBtrfs) HoldNested(**root, *t);
    if (auto counted = UsageFromQuota(**root, *t)) {
      IdleWalker::Outcome o;
      o.count = counted->first;
      o.fs = counted->second;
      o.finished = true;
      return Publish(name, *t, o);
    }
    IdleWalker::Outcome o = walker_.Walk(*root, t->dir_name, &cancel_);
    if (!o.status.ok()) return Unmeasured(name, o.status.message());
    if (!o.finished) return;  // no longer scanned, or stopping
    if (o.count.skipped > 0 && LogEnabled(1))
      LogDebug(1, "volume " + name + ": " + std::to_string(o.count.skipped) +
                      " entries not counted (other mounts, unreadable, too deep, or replaced while walked)");
    Publish(name, *t, o);
  }

  // Subvolumes a tenant made inside an enforced btrfs volume escape its limit until found:
  // each pass puts those found since under it (QuotaLimits::HoldNested), and says so on the claim.
  void HoldNested(const Root& root, const UsageTarget& t) {
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
  void Unmeasured(const std::string& name, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = tracked_.find(name); it != tracked_.end()) it->second.usage.reset();
    }
    if (!why.empty() && LogEnabled(1)) LogDebug(1, "volume " + name + ": usage not measured: " + why);
  }

  void Publish(const std::string& name, const UsageTarget& t, const IdleWalker::Outcome& o) {
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

  const std::chrono::seconds interval_;
  Roots* roots_;
  EventRecorder* recorder_;
  Lookup lookup_;
  Scanned scanned_;
  IdleWalker walker_;
  mutable std::mutex mu_;  // never held by the walker
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, Entry> tracked_;  // by volume name
  std::string current_;                   // being scanned
  std::atomic<bool> cancel_{false};       // ... and no longer to be
  std::atomic<long> passes_{0};
  std::atomic<double> last_pass_seconds_{0};
  std::thread thread_;
};
