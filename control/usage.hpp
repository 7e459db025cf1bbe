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
#include "base/objects.hpp"
#include "fs/quota.hpp"
#include "fs/roots.hpp"
#include "fs/usage_walk.hpp"
#include "kube/recorder.hpp"

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
std::optional<UsageTarget> UsageTargetFor(const Config& cfg, const Volume& v, bool made_here);

// A volume's use as its quota counts it, without walking it: bytes and inodes of its project
// (ext4, XFS), bytes of its qgroup (btrfs: a qgroup counts no inodes, and btrfs reports no inode
// totals either). Nothing for a volume made without a limit, or when the accounting cannot be
// read (then it is walked).
std::optional<std::pair<UsageCount, FsFigures>> UsageFromQuota(const Root& root, const UsageTarget& t);

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
uint64_t AvailableBytes(const VolumeUsage& u);

// Pure. The volume uses more than its capacity (a known one).
bool OverCapacity(const VolumeUsage& u);

// Pure. The VolumeOverCapacity event's message.
std::string OverCapacityMessage(const VolumeUsage& u, const std::string& node);

// Puts the calling thread at the lowest CPU priority (SCHED_IDLE: it runs when no other thread
// wants the CPU; else nice 19) and in the idle I/O class (its reads wait for everyone else's,
// where the disk's scheduler honours classes, as BFQ does), and names it. Best effort: what the
// kernel refuses is logged at level 1.
void LowerThreadPriority(const char* name);

// The walker thread: walks one directory at a time for the scanner, at idle priority.
class IdleWalker {
 public:
  struct Outcome {
    Status status;          // not ok: the directory could not be walked (missing, not a directory ...)
    UsageCount count;
    FsFigures fs;
    bool finished = false;  // walked to its end (not cancelled, not stopping)
  };

  ~IdleWalker();  // Stop
  // Starts the thread.
  void Start();
  // Ends the walk under way and the thread. Idempotent.
  void Stop();

  // Walks root/name on the walker thread and returns the outcome; returns early (not
  // finished) once *cancel is set or the walker stops. One caller at a time.
  Outcome Walk(Roots::Ref root, std::string name, const std::atomic<bool>* cancel);

  // Entries counted by all walks so far.
  uint64_t entries() const { return entries_; }

 private:
  struct Job {
    Roots::Ref root;
    std::string name;
    const std::atomic<bool>* cancel = nullptr;
  };

  void Run();
  Outcome Do(const Job& job);

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

  // Scans every `interval_seconds` (0: never). `roots` and `recorder` must outlive the
  // scanner; `scanned` may be null. Nothing starts before Start.
  UsageScanner(int interval_seconds, Roots* roots, EventRecorder* recorder, Lookup lookup, Scanned scanned);
  ~UsageScanner();  // Stop

  bool enabled() const { return interval_.count() > 0; }

  // Starts both threads; with the interval 0, nothing.
  void Start();

  // Ends the walk under way and both threads. Idempotent.
  void Stop();

  // From the watch: volume `volume` is (scan) or is no longer one to scan. A volume no longer
  // scanned leaves the metrics at once, and a walk of it under way ends. Thread-safe.
  void Track(const std::string& volume, bool scan);

  // The volumes scanned at least once, with their figures from the last scan. Thread-safe.
  std::vector<VolumeUsage> Snapshot() const;

  // Volume `name`'s used bytes at its last scan; 0 when not measured. Thread-safe.
  uint64_t UsedBytes(const std::string& name) const;

  long passes() const { return passes_; }
  double last_pass_seconds() const { return last_pass_seconds_; }
  uint64_t entries() const { return walker_.entries(); }

 private:
  struct Entry {
    std::unique_ptr<VolumeUsage> usage;  // null until scanned
    bool over = false;                   // over its capacity at the last scan: told once
  };

  void Run();
  bool NextVolume(std::string* name);
  void ScanOne(const std::string& name, std::map<std::string, Status>* mounted);
  void HoldNested(const Root& root, const UsageTarget& t);
  void Unmeasured(const std::string& name, const std::string& why);
  void Publish(const std::string& name, const UsageTarget& t, const IdleWalker::Outcome& o);

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
