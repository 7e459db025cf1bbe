// The opt-in cleanup of deleted nodes' volumes (DELETED_NODE_CLEANUP_DELAY, node-aware mode
// only): a Node watch and a janitor thread that finds the nodes volumes of ours name and whose
// Node object has been missing for the delay (gone_nodes.hpp) and hands each to the
// controller's queue; then, on a worker, the claims and PVs made on that node are deleted.
// An instance's cache holds only its own node's PVs (node_labels.hpp), so the nodes that PVs
// name are: those the cache names, every node the watch has seen (a PV is made on a node that
// exists), and, once, those a list of the labelled PVs names (a node deleted while no
// instance watched). The janitor looks only while `ready()`: the controller passes "holds the
// dispatch lease", so one instance does it.
#pragma once
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/config.hpp"
#include "decide/gone_nodes.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"
#include "kube/recorder.hpp"

class NodeCleanup {
 public:
  // `cfg`, `volumes` (the controller's cache) and `recorder` must outlive the cleanup. Nothing
  // starts before Start.
  NodeCleanup(const Config& cfg, std::shared_ptr<ApiEndpoint> ep, Informer<Volume>* volumes, EventRecorder* recorder);
  ~NodeCleanup();  // Stop

  // DELETED_NODE_CLEANUP_DELAY is set, in node-aware mode.
  bool Enabled() const { return cfg_.deleted_node_cleanup_seconds > 0 && !cfg_.node_name.empty(); }

  // Starts the Node watch and the janitor (if enabled; else nothing, and ok). The janitor looks
  // only once `ready()` (the controller's caches hold their first lists) and calls `due(node)`
  // for each node due. Errors: the watch's connection cannot be set up.
  Status Start(std::function<bool()> ready, std::function<void(const std::string&)> due);

  // Ends the janitor and the watch. Idempotent.
  void Stop();

  // The Node `node` has been missing for DELETED_NODE_CLEANUP_DELAY: the volumes made on it
  // cannot be used again, and pods of a StatefulSet would wait for them forever. Every
  // instance may do this at once: the deletions carry uid preconditions and are idempotent, and
  // the events are named after what they say (one each, however many instances send them).
  // The data stays where it was: if the node comes back, its orphan scan keeps what is not
  // empty. Ok when done (or the node is back); an error means retry later.
  Status CleanUp(KubeApi& api, const std::string& node);

 private:
  void Changed();
  void Janitor();
  std::string NodeOfOurs(const Volume& v) const;
  // The nodes the labelled PVs of ours name (one paged list); false if the list failed.
  bool NodesOfLabelledVolumes(KubeApi& api, std::set<std::string>* nodes) const;

  const Config& cfg_;
  std::shared_ptr<ApiEndpoint> ep_;
  Informer<Volume>* volumes_;
  EventRecorder* recorder_;
  Informer<Node> nodes_;
  GoneNodes gone_;  // the janitor's own
  std::set<std::string> seen_;  // the janitor's own: every node seen, and those labelled PVs named
  bool seeded_ = false;         // the janitor's own: the list of labelled PVs was read
  std::function<bool()> ready_;
  std::function<void(const std::string&)> due_;
  std::thread janitor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool changed_ = false, stopped_ = false;
};
