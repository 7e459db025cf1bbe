// Storage capacity (node-aware mode, CAPACITY_PROVISIONER_NAME): this instance's node's room
// for new volumes, published as one storage.k8s.io/v1 CSIStorageCapacity per class that gets
// one (decide/capacity.hpp), in the instance's namespace, for the scheduler to place pods by.
// Each object names its node in nodeTopology (kubernetes.io/hostname, as the PVs' node
// affinity) and is owned by the Node (the garbage collector removes it with the node); each
// instance writes only its own node's, found by their label, and of those only its install's
// (kCapacityDriverLabel: another install in the namespace, with another CAPACITY_PROVISIONER_NAME,
// keeps its objects).
//
// A thread checks every root that a class of it uses against the published figure every
// CAPACITY_INTERVAL, and at once (at most once a second) after Changed: a figure that moved
// is written (CapacityWorthWriting), an object whose class went or stopped getting one is
// deleted. Nothing is written while nothing moves. Nothing watches the objects: they are read
// again once a RESYNC_PERIOD (one list of this node's, and a GET of the Node for the owner
// reference's uid), so that one deleted or edited by someone else is put right within it, and
// any movement of a figure, however small, is written then (a claim within
// CapacityWorthWriting's margin waits no longer). Errors are logged once each (until they
// change), and the write is tried again at the next check.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/config.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"

class CapacityPublisher {
 public:
  // Reads the classes' cache, the roots, their free space and the promises (all must outlive
  // it); `may_act` is asked before each write. Nothing starts before Start.
  CapacityPublisher(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, const Informer<StorageClass>* classes,
                    Roots* roots, const SpaceBackend* space, const Promises* promises, std::function<bool()> may_act);
  ~CapacityPublisher();  // Stop

  // CAPACITY_PROVISIONER_NAME is set (node-aware mode).
  bool Enabled() const { return !cfg_.capacity_provisioner_name.empty() && !cfg_.node_name.empty(); }

  // Starts the thread (if enabled), which publishes in namespace `ns` once `ready()` (the
  // caches hold their first lists).
  void Start(const std::string& ns, std::function<bool()> ready);

  // Ends the thread. Idempotent. Leaves the objects: the next instance on the node takes them
  // over (a restart would otherwise leave the scheduler without figures meanwhile).
  void Stop();

  // The room under a root may have changed (a volume made, grown or removed): check soon.
  // `prompt`: write any movement (a volume removed; a claim that did not fit: the scheduler
  // thought it would, so the figure it read is too high).
  void Changed(bool prompt);

  // For /metrics: API writes made (creates, updates, deletes), and the figures published, by class.
  long Writes() const { return writes_; }
  std::map<std::string, uint64_t> Published() const;

 private:
  void Run();
  // At the start, after a conflict and once a RESYNC_PERIOD: what this node's objects are now,
  // found by their node label, or after list_all_ by the node their topology names (and the
  // Node's uid, and whether the CSIDriver asks for capacity).
  bool Load(KubeApi& api);
  // Is a listed object this install's? Its kCapacityDriverLabel is ours, or its class is one
  // this install publishes for.
  bool Mine(const StorageCapacity& c) const;
  void Pass(KubeApi& api, bool prompt);
  void Publish(KubeApi& api, const StorageClass& sc, bool prompt);
  // What to do about a 403: the Role the DaemonSet install ships.
  std::string RbacFix() const;
  // Logs `message` (a Warning) unless it is what was logged last for `what`.
  void Problem(const std::string& what, const std::string& message);

  const Config& cfg_;
  std::shared_ptr<ApiEndpoint> ep_;
  const Informer<StorageClass>* classes_;
  Roots* roots_;
  const SpaceBackend* space_;
  const Promises* promises_;
  std::function<bool()> may_act_;
  std::function<bool()> ready_;
  std::string ns_;
  std::string node_uid_;                          // the thread's own: the Node's, for the owner reference
  bool loaded_ = false;                           // the thread's own: objects_ is what the API holds
  // The thread's own: a create found the name taken by an object the node's list did not give
  // (its labels removed by hand): the next Load lists the whole namespace once, to find it.
  bool list_all_ = false;
  std::map<std::string, StorageCapacity> objects_;  // the thread's own, by class: as last stored
  std::map<std::string, std::string> problems_;   // the thread's own: last message logged, by what
  std::atomic<long> writes_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool changed_ = false, prompt_ = false, stopped_ = false;  // under mu_
  std::map<std::string, uint64_t> published_;                // under mu_, for /metrics
  std::thread thread_;
};
