// The controller: informers fill caches and queue keys; a worker takes a key and routes it to
// the part that syncs it (provisioner.hpp for a claim waiting for a volume, expander.hpp for a
// bound claim, deleter.hpp for a volume, orphan_scan.hpp, archives.hpp, node_cleanup.hpp for a
// gone node),
// which asks the pure decisions what to do, then does it. Results come back through the
// watches, never by re-reading. Failures requeue the key with per-key backoff; success forgets
// its failures.
//
// Several workers (--workers), each with its own API connection, so that one slow removal or
// request holds up only the key of one worker; the queue never hands one key to two workers.
// A worker handles a key from start to finish with plain calls. The orphan scan runs alone: it
// takes the filesystem lock exclusively, workers share it.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/config.hpp"
#include "base/queue.hpp"
#include "control/remove/archives.hpp"
#include "control/clone/cloner.hpp"
#include "control/clone/cloning.hpp"
#include "control/remove/deleter.hpp"
#include "control/nodes/capacity_publisher.hpp"
#include "control/nodes/dispatcher.hpp"
#include "control/nodes/every_node.hpp"
#include "control/expander.hpp"
#include "control/nodes/node_cleanup.hpp"
#include "control/remove/orphan_scan.hpp"
#include "control/make/provisioner.hpp"
#include "control/nodes/shared.hpp"
#include "control/sync.hpp"
#include "control/usage.hpp"
#include "control/make/volume_maker.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"
#include "kube/recorder.hpp"

class Controller {
 public:
  // Watches through `ep`, acts on the volume roots `roots` (which must outlive it). Nothing
  // starts before Start.
  Controller(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, Roots* roots);
  ~Controller();  // Stop

  // Asked before every change to the filesystem or the API (leader election: does this
  // instance still hold the lease?). Set before Start; by default always true. False after Halt.
  void SetMayAct(std::function<bool()> may_act);

  // Node-aware mode: the Lease that elects the claim dispatcher (dispatcher.hpp). Set before
  // Start; without it no instance labels claims, and this one sees only labelled ones.
  void SetDispatchLease(Dispatcher::LeaseSpec lease) { dispatch_lease_ = std::move(lease); }

  // Node-aware with CAPACITY_PROVISIONER_NAME: the namespace of this node's CSIStorageCapacity
  // objects (capacity_publisher.hpp). Set before Start.
  void PublishCapacityIn(std::string ns) { capacity_ns_ = std::move(ns); }

  // Starts the watches and the workers (node-aware: after labelling this node's PVs made before
  // the node label, volume_labels.hpp). Node-aware with a dispatch Lease, it first asks whether
  // it may do its part of the dispatch (Dispatcher::CheckAccess); if not (an older version's
  // RBAC, kept by an image-only upgrade), it falls back to watching every claim and acting on
  // its own node's, as before the dispatcher (correct, at the cost of every claim in every
  // instance's cache), stands for no Lease, and says so once in a Warning. Otherwise it watches
  // every claim while the dispatcher says on its Lease that the cluster is small, its own
  // node's else, and switches when that changes (SwitchClaimWatch). Errors: TLS material that
  // cannot be used.
  Status Start();

  // Node-aware: does this instance watch every claim now (a small cluster, as the dispatcher
  // says on its Lease; or the fallback below), rather than its own node's? From any thread.
  bool WatchesEveryClaim() const { return every_claim_watched_; }

  // Node-aware: why this instance watches every claim instead of its node's ("" if it does
  // not): what CheckAccess found missing at start. From any thread.
  std::string DispatchFallback() const {
    std::lock_guard<std::mutex> lock(fallback_mu_);
    return dispatch_fallback_;
  }

  // Stops acting, at once: may_act turns false, so no key and no step starts any more; the
  // removal and the API requests in progress are cut short, and later requests of the workers
  // fail. That is safe because every step is idempotent: whoever acts next removes the rest of a
  // half-removed tree, and creates a PV again (by name) or finds it made. Events are dropped from
  // now on (they would report what the stop cut short). Waits up to `limit` for every worker to
  // be idle; false if one is not (stuck in a system call, such as a mkdir on a hung network
  // filesystem: what it does late, a paused leader could do too, and it is as harmless).
  // Call after Start has returned, or without Start.
  bool Halt(std::chrono::milliseconds limit);

  // Halts (waiting a few seconds at most), waits for the workers to return, ends the watches,
  // the scans and the events. Idempotent.
  void Stop();

  // All three caches hold their first list.
  bool Synced() const;
  size_t QueueDepth() { return queue_.Depth(); }
  // Keys ready, or a worker on one (the cloner gives way to them).
  bool WorkersBusy();
  long WatchRestarts() const;
  // Every worker has been on its current key for longer than `limit`: nothing can make
  // progress (for a liveness check). One long removal alone is not stuck.
  bool WorkerStuck(std::chrono::seconds limit) const;
  ControllerStats& stats() { return stats_; }
  const CloneStats& clone_stats() const { return cloner_.stats(); }
  const UsageScanner& usage() const { return usage_; }
  const ArchivePass& archives() const { return archives_; }
  Dispatcher& dispatcher() { return dispatcher_; }
  const CapacityPublisher& capacity() const { return capacity_; }
  // How many claims and PVs the caches hold (node-aware: this node's and the shared ones).
  size_t CachedClaims() const { return claims_.Size(); }
  size_t CachedVolumes() const { return volumes_.Size(); }
  // Claims, PVs and classes the watches received (events and listed objects), the dispatcher's too.
  long WatchReceived() { return claims_.Received() + volumes_.Received() + classes_.Received() + dispatcher_.Received(); }

 private:
  // A worker thread and what only it uses.
  struct Worker : WorkerApi {
    using WorkerApi::WorkerApi;
    std::thread thread;
    std::atomic<int64_t> busy_since_ms{0};  // 0 when idle; steady ms overflow a 32-bit long after 24 days
  };

  // Start's check (dispatch_lease_ set): falls back to watching every claim if this instance
  // may not do its part of the dispatch. *every_claim: whether the Lease says every instance
  // watches every claim (false in the fallback).
  void FallBackUnlessDispatching(KubeApi& api, bool* every_claim);
  // Follows the dispatcher's word on which claims to watch (Dispatcher::OnWatchChange): the
  // claim informer's selection changes on this thread, as it waits for the new list.
  void SwitchClaimWatch();
  void OnClaim(const std::string& key, const Claim* now);
  void OnVolume(const std::string& name, const Volume* now);
  void OnClass(const std::string& name);
  std::optional<UsageTarget> UsageTargetOf(const std::string& name) const;
  void Resync();
  void Work(Worker& w);
  Outcome Sync(Worker& w, const std::string& key);
  Outcome SyncClaim(Worker& w, const std::string& key);
  bool RootMoved(const std::string& key);

  const Config cfg_;
  std::shared_ptr<ApiEndpoint> ep_;
  Roots* roots_;
  EventRecorder recorder_;
  DirGuard guard_;  // keeps the address of volumes_ (below) only
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
  NameSet space_waiters_;  // claims that did not fit: tried again when a volume goes
  StatvfsSpace statvfs_;
  const SpaceBackend* space_ = &statvfs_;
  Promises promises_;
  Informer<Claim> claims_;
  Informer<Volume> volumes_;
  Informer<StorageClass> classes_;
  std::optional<Dispatcher::LeaseSpec> dispatch_lease_;
  mutable std::mutex fallback_mu_;
  std::string dispatch_fallback_;  // under fallback_mu_; set in Start
  Dispatcher dispatcher_;     // node-aware mode only
  std::atomic<bool> every_claim_watched_{false};
  bool every_claim_wanted_ = false;  // under switch_mu_: the dispatcher's last word
  bool stopped_switching_ = false;   // under switch_mu_
  std::mutex switch_mu_;
  std::condition_variable switch_cv_;
  std::thread switcher_;
  NodeCleanup node_cleanup_;  // only with DELETED_NODE_CLEANUP_DELAY
  std::string capacity_ns_;
  CapacityPublisher capacity_;  // only with CAPACITY_PROVISIONER_NAME
  std::thread resync_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
  UsageScanner usage_;  // its threads use the members above
  Cloner cloner_;       // as usage_
  // The parts that sync keys; they use the members above.
  VolumeMaker maker_;
  Cloning cloning_;
  PatternDirs pattern_dirs_;
  Provisioner provisioner_;
  Expander expander_;
  Deleter deleter_;
  OrphanScan orphans_;
  ArchivePass archives_;
};
