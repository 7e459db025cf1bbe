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
  bool Drain() {
    bool any = false;
    while (feed_.Read([&](const WatchEvent& ev) { if (ev.type != "DELETED") Sync(ev.name); },
                      [&] {
                        for (const auto& [name, node] : s_.bucket("nodes").objects) names_.push_back(name);
                        for (const auto& name : names_) Sync(name);
                        names_.clear();
                      }))
      any = true;
    return any;
  }

  // The NoSchedule taint keys a node's conditions and spec.unschedulable call for.
  static std::vector<std::string> WantedKeys(const Json& node) {
    static const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> kByCondition = {
        {"Ready", {"False", kTaintNotReady}},
        {"Ready", {"Unknown", "node.kubernetes.io/unreachable"}},
        {"MemoryPressure", {"True", "node.kubernetes.io/memory-pressure"}},
        {"DiskPressure", {"True", "node.kubernetes.io/disk-pressure"}},
        {"NetworkUnavailable", {"True", "node.kubernetes.io/network-unavailable"}},
        {"PIDPressure", {"True", "node.kubernetes.io/pid-pressure"}},
    };
    std::vector<std::string> keys;
    if (const Json* conds = Path(node, {"status", "conditions"}); conds && conds->is<JsonArray>())
      for (const Json& c : conds->get<JsonArray>())
        for (const auto& [type, when] : kByCondition)
          if (Str(c, {"type"}) == type && Str(c, {"status"}) == when.first) keys.push_back(when.second);
    if (const Json* u = Path(node, {"spec", "unschedulable"}); u && u->is<bool>() && u->get<bool>())
      keys.push_back(kTaintUnschedulable);
    return keys;
  }

 private:
  static constexpr const char* kTaintUnschedulable = "node.kubernetes.io/unschedulable";

  static bool Managed(const std::string& key) {
    for (const char* k : {kTaintNotReady, "node.kubernetes.io/unreachable", "node.kubernetes.io/memory-pressure",
                          "node.kubernetes.io/disk-pressure", "node.kubernetes.io/network-unavailable",
                          "node.kubernetes.io/pid-pressure", kTaintUnschedulable})
      if (key == k) return true;
    return false;
  }

  // Swaps the node's managed NoSchedule taints for the wanted ones (SwapNodeControllerTaint: the
  // others stay as they are; an added taint gets timeAdded).
  void Sync(const std::string& name) {
    const Json* node = s_.Get("nodes", name);
    if (node == nullptr) return;
    std::vector<std::string> want = WantedKeys(*node);
    JsonArray kept;
    bool changed = false;
    if (const Json* taints = Path(*node, {"spec", "taints"}); taints && taints->is<JsonArray>()) {
      for (const Json& t : taints->get<JsonArray>()) {
        const std::string& key = Str(t, {"key"});
        if (Str(t, {"effect"}) == "NoSchedule" && Managed(key)) {
          auto it = std::find(want.begin(), want.end(), key);
          if (it == want.end()) {
            changed = true;
            continue;
          }
          want.erase(it);
        }
        kept.push_back(t);
      }
    }
    for (const auto& key : want) {
      JsonObject taint;
      taint["key"] = Json(key);
      taint["effect"] = Json("NoSchedule");
      taint["timeAdded"] = Json(NowRfc3339());
      kept.emplace_back(taint);
      changed = true;
    }
    if (!changed) return;
    Json next = *node;
    JsonObject& spec = Obj(next, {"spec"});
    if (kept.empty()) spec.erase("taints"); else spec["taints"] = Json(kept);
    s_.Put("nodes", std::move(next));
  }

  Store& s_;
  Feed feed_;
  std::vector<std::string> names_;
};

}  // namespace fake
