// The claim dispatcher (node-aware mode; decide/node_labels.hpp says why). The API server can
// select claims by label but not by annotation, and the node a claim's volume goes to is an
// annotation (the scheduler's selected-node, or ours). So one instance, the holder of the
// dispatch Lease, watches every claim and labels each claim of ours with the node whose
// instance acts on it (DispatchLabel); the others watch only their own node's claims. Every
// instance takes part in the election: if the holder goes, another takes the lease once it has
// been silent for a lease duration (at once if it was released), and claims wait meanwhile.
// The holder keeps a slim copy of every claim (SlimForDispatch) only while it holds the lease.
// An instance whose RBAC lacks what this needs (CheckAccess, asked at start: an older version's
// RBAC kept by an image-only upgrade) stands for nothing: the controller then watches every
// claim instead, as before the dispatcher (controller.hpp, Start).
// A small cluster (SMALL_CLUSTER_NODES, WatchEveryClaim in decide/node_labels.hpp) needs no
// dispatch: the holder counts the Nodes once per renewal (a count it cannot make, for want of
// RBAC or of remainingItemCount, changes nothing: one Warning) and says on its Lease (annotation
// node_label::kWatchKey) that every instance watches every claim; each instance reads that at
// its looks at the Lease (OnWatchChange). Meanwhile the holder labels only the claims still
// waiting for a volume or more room kLateLabel after their last change (an older version's
// instance, or one that has not looked yet, still finds them), and every claim for a grace of
// two looks after it said so. Before it says "own node" again, it labels every claim, so that
// no instance that then watches only its own node's labelled claims misses one.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/config.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"
#include "kube/leader.hpp"

class Dispatcher {
 public:
  // The Lease the instances elect a dispatcher with.
  struct LeaseSpec {
    std::string ns, name, identity;
    LeaseTimings timings;
  };

  // `classes` (the controller's cache) must outlive the dispatcher. Nothing starts before Start.
  Dispatcher(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, const Informer<StorageClass>* classes);
  ~Dispatcher();  // Stop

  // Called with true when this instance should watch every claim, false when only those
  // labelled for its node, each time that changes (a look at the Lease, or this instance's own
  // word as holder), on the dispatcher's threads. Set before Start.
  void OnWatchChange(std::function<void(bool every_claim)> fn) { on_watch_ = std::move(fn); }

  // Takes part in the election on a thread of its own; while this instance holds the lease,
  // watches every claim and labels them. `every_claim`: what the Lease said at start
  // (CheckAccess), which the controller's claim watch follows.
  void Start(LeaseSpec lease, bool every_claim);

  // Should this instance watch every claim (what the Lease said last)?
  bool EveryClaim() const { return every_claim_; }

  // Ends the election (giving the lease up if held) and the watch. Idempotent.
  void Stop();

  // Does this instance hold the dispatch lease now?
  bool Leading() const { return leading_; }

  // Asked at start, before the claim watch: may this instance do its part of the dispatch
  // (read the Lease, patch claims' labels)? "" when it may; else what it may not, with the
  // server's words, e.g. "may not get the Lease kube-system/x (get lease kube-system/x: ... 403
  // ... forbidden ...)". *every_claim (if given): whether the Lease read says every instance
  // watches every claim. Patching is asked with a dry run of a claim that does not exist:
  // nothing changes. A question the API server does not answer (no answer, 429, 5xx: a server
  // restarting or overloaded, whose flow control comes before authorization) is asked again,
  // 1 s, 2 s, ... up to 10 s apart, logged, until answered or `stopping` says to give up ("").
  static std::string CheckAccess(KubeApi& api, const LeaseSpec& lease, const std::function<bool()>& stopping,
                                 bool* every_claim = nullptr);

  // Why this instance cannot do its part of the dispatch now, "" if nothing keeps it from it:
  // a 403 on taking the Lease or on labelling a claim (RBAC changed since the start's check).
  // Claims may wait meanwhile: the readiness probe fails with it. Logged once as a Warning.
  std::string Problem();

  // A class appeared or changed: the claims of that class are looked at again.
  void ClassChanged(const std::string& name);

  // Claims labelled by this instance (for /metrics and the benchmark).
  long Labelled() const { return labelled_; }
  // Claims its watch received (events and listed objects), over every term as dispatcher.
  long Received();

 private:
  struct Term;  // what runs while this instance holds the lease

  void Elect();
  void Observed(const Lease& lease);  // a look at the Lease, or a write of it
  bool Stopping();
  void SetProblem(const std::string& problem);  // "" clears it

  const Config& cfg_;
  std::shared_ptr<ApiEndpoint> ep_;
  const Informer<StorageClass>* classes_;
  LeaseSpec lease_;
  std::thread elector_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, lost_ = false;
  std::shared_ptr<Term> term_;  // under mu_
  std::shared_ptr<LeaderElector> elector_now_;  // under mu_: the election in progress
  std::atomic<bool> leading_{false};
  std::atomic<bool> every_claim_{false};
  std::function<void(bool)> on_watch_;
  std::atomic<long> labelled_{0};
  long received_before_ = 0;  // under mu_: by the terms that ended
  std::string problem_;       // under mu_: a labelling refused with 403
};
