// The bodies of fake_nodelifecycle.hpp (the contracts are there).
#include "test/fake/fake_nodelifecycle.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace fake {

bool NodeLifecycle::Drain() {
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

std::vector<std::string> NodeLifecycle::WantedKeys(const Json& node) {
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

bool NodeLifecycle::Managed(const std::string& key) {
  for (const char* k : {kTaintNotReady, "node.kubernetes.io/unreachable", "node.kubernetes.io/memory-pressure",
                        "node.kubernetes.io/disk-pressure", "node.kubernetes.io/network-unavailable",
                        "node.kubernetes.io/pid-pressure", kTaintUnschedulable})
    if (key == k) return true;
  return false;
}

void NodeLifecycle::Sync(const std::string& name) {
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

}  // namespace fake
