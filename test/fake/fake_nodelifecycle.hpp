// The NoSchedule part of the node lifecycle controller, run in-process after each round's answers
// as the other fake controllers are (pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// doNoScheduleTaintingPass): a node's NoSchedule taints follow its conditions (Ready False:
// not-ready, Ready Unknown: unreachable, MemoryPressure, DiskPressure, PIDPressure or
// NetworkUnavailable True: their own) and spec.unschedulable. So the not-ready taint that
// TaintNodesByCondition admission puts on every new Node goes once the node is Ready, or at once
// for a node without conditions. Not modelled: Ready turning Unknown when a kubelet stops
// posting status (nodeMonitorGracePeriod), NoExecute taints and evictions. Callers hold Store::mu.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "test/fake/fake_admission.hpp"

namespace fake {

class NodeLifecycle {
 public:
  explicit NodeLifecycle(Store& s) : s_(s), feed_(s.bucket("nodes")) {}

  // Handles every node change since the last call (its own included); true when there was any.
  bool Drain();

  // The NoSchedule taint keys a node's conditions and spec.unschedulable call for.
  static std::vector<std::string> WantedKeys(const Json& node);

 private:
  static constexpr const char* kTaintUnschedulable = "node.kubernetes.io/unschedulable";

  static bool Managed(const std::string& key);

  // Swaps the node's managed NoSchedule taints for the wanted ones (SwapNodeControllerTaint: the
  // others stay as they are; an added taint gets timeAdded).
  void Sync(const std::string& name);

  Store& s_;
  Feed feed_;
  std::vector<std::string> names_;
};

}  // namespace fake
