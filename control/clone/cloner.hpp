// Clones, the copying: the controller decides (clone.hpp) and hands a copy over; one copy at a
// time runs here, on a thread of its own at idle CPU and I/O priority, so the workers go on
// serving other claims meanwhile. Crash-safe: a copy is built under CloneTempName beside the
// volume's directory, flushed (syncfs), and only then renamed to the volume's name, so a
// directory at a volume's path is always a whole copy. A copy cut short (a crash, a stop) leaves
// its temporary directory; it is removed when the copy starts again, or by the orphan scan once
// its claim is gone. A claim deleted during its copy stops it, and what was copied goes.
// How one tree is copied, and what is never crossed or followed, is copy_tree.hpp's.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "control/make/volume_dir.hpp"
#include "decide/clone.hpp"
#include "fs/copy_tree.hpp"
#include "fs/roots.hpp"
#include "kube/recorder.hpp"

namespace reason {
inline constexpr const char* kCloning = "Cloning";              // Normal: a copy starts
inline constexpr const char* kCloneProgress = "CloneProgress";  // Normal: at most every 30 s
inline constexpr const char* kCloned = "Cloned";                // Normal: the copy is complete
inline constexpr const char* kCloneSkipped = "CloneSkipped";    // Warning: entries not copied
}  // namespace reason

// Counters for /metrics.
struct CloneStats {
  std::atomic<long> by_method[3] = {};  // complete copies, by CopyMethod
  std::atomic<long> failed{0};
  std::atomic<uint64_t> bytes{0};       // file data copied (a snapshot counts none)
  std::atomic<uint64_t> millis{0};      // time spent on complete copies
};

class Cloner {
 public:
  struct Job {
    std::string claim_key;  // "namespace/name"
    Involved claim;         // for events
    Action a;               // kProvision with a.source set
    uint64_t source_bytes = 0;  // the source's use as last measured (0: not known), for messages
  };
  enum class State { kNone, kBusy, kFinished };
  struct Finished {
    Status status;  // ok: the copy is at a.root/a.dir_name
    MadeDir made;   // the limit it is under
    CopyResult result;
    double seconds = 0;
  };
  using Wake = std::function<void(const std::string& key)>;  // "claim/<key>" or "volume/<name>"
  using Busy = std::function<bool()>;  // are claims or volumes being worked on, or waiting?

  // `roots` and `recorder` must outlive the cloner. `wake` is called from the copier's thread,
  // with no lock held; `busy` (may be null) is asked often while a copy runs. Nothing starts
  // before the first Start.
  Cloner(Roots* roots, EventRecorder* recorder, Wake wake, Busy busy);
  ~Cloner();  // Stop
  Cloner(const Cloner&) = delete;
  Cloner& operator=(const Cloner&) = delete;

  // Where the copy for volume `pv` stands. kFinished hands its outcome over, once (into *out).
  // Thread-safe, as every member below.
  State Poll(const std::string& pv, Finished* out);

  // Is a copy for volume `pv` queued, running, or finished and not yet handed over?
  bool Has(const std::string& pv) const;

  // Queues a copy (none for that volume may be queued or running: Poll said kNone). The
  // thread starts with the first. Ignored once halted.
  void Start(Job job);

  // The claim `claim_key` is gone or going: its copy, queued or running, stops, and what was
  // copied is removed.
  void Cancel(const std::string& claim_key);

  // Is a copy reading volume `name` (queued or running)? Its removal waits (the copy wakes it).
  bool Reading(const std::string& name) const;

  // Stops at once: the copy in progress ends soon, leaving its temporary directory for whoever
  // copies next (a stopping instance removes nothing it may not finish). Stop also waits.
  void Halt();
  void Stop();

  const CloneStats& stats() const { return stats_; }

  // Removes a clone's directory that no pod ever mounted (a temporary one left by a copy cut
  // short, or an unclaimed complete one), with the limit it was made under (read from the
  // directory: nothing else names it). Ok when it is not there.
  static Status RemoveTemp(const Root& root, const std::string& temp);
  // Volume `pv`'s PV is made: its clone is one a claim uses (a complete copy is marked as not
  // yet named by a PV, CloneUnclaimedName, until then).
  static void Claimed(const Root& root, const std::string& pv);
  // Is the directory of volume `pv` a complete clone that no PV has named yet?
  static bool Unclaimed(const Root& root, const std::string& pv);

 private:
  static constexpr std::chrono::seconds kProgressEvery{30};
  // Provisioning goes first: every 64 entries or 4 MiB the copy waits while the workers have
  // something to do, up to 200 ms at a time (so that a steady stream of claims slows a copy
  // down but never stops it). Idle priority alone leaves it the CPU between a worker's steps.
  static constexpr uint64_t kYieldEntries = 64, kYieldBytes = 4 << 20;
  static constexpr std::chrono::milliseconds kYieldAtMost{200};

  void Yield();
  void Run();
  Finished Copy(const Job& job);
  Status Snapshot(int src_fd, const Root& dst, const std::string& temp, const Action& a, Finished* f);
  Status CopyInto(const Job& job, int src_fd, const Root& dst, const std::string& temp, Finished* f);
  void Report(const Job& job, const Finished& f);

  Roots* roots_;
  EventRecorder* recorder_;
  Wake wake_;
  Busy busy_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::map<std::string, Finished> finished_;  // by volume name, until the claim's sync takes it
  std::string current_, current_claim_, current_source_;  // the copy running: volume, claim, source volume
  std::atomic<bool> cancel_{false};
  std::atomic<bool> stopping_{false};  // written under mu_, also read by the copy
  CloneStats stats_;
  std::thread thread_;
};
