// Node labels: the bodies (node_labels.hpp has the contracts). FNV-1a is written here: it is
// five lines, and a label value needs a hash that no library version or word size changes.
#include "decide/node_labels.hpp"

#include <algorithm>
#include <cstdint>

#include "decide/class_params.hpp"
#include "decide/names.hpp"

namespace {

constexpr size_t kMaxLabelValue = 63;

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

std::string Annotation(const ObjectMeta& m, const char* key) {
  auto it = m.annotations.find(key);
  return it == m.annotations.end() ? "" : it->second;
}

}  // namespace

std::string NodeLabelValue(const std::string& node) {
  if (node.size() <= kMaxLabelValue) return node;
  std::string head = node.substr(0, kMaxLabelValue - 17);
  while (!head.empty() && !IsAlnum(head.back())) head.pop_back();  // "-" must follow an alphanumeric
  static const char* hex = "0123456789abcdef";
  std::string tail(16, '0');
  uint64_t h = Fnv1a64(node);
  for (int i = 15; i >= 0; --i, h >>= 4) tail[i] = hex[h & 15];
  return head + "-" + tail;
}

std::string VolumeLabel(const Config& cfg, const Volume& v) {
  if (cfg.node_name.empty() || !cfg.Ours(Annotation(v.meta, ann::kProvisionedBy))) return "";
  if (OnAllNodes(v)) return node_label::kAll;
  if (IsShared(v)) return node_label::kShared;
  const std::string node = Annotation(v.meta, ann::kNode);
  return node.empty() ? "" : NodeLabelValue(node);
}

bool LabelsVolume(const Config& cfg, const Volume& v) {
  const std::string want = VolumeLabel(cfg, v);
  if (want.empty()) return false;
  const bool mine = want == node_label::kAll || want == node_label::kShared || Annotation(v.meta, ann::kNode) == cfg.node_name;
  auto have = v.meta.labels.find(node_label::kKey);
  return mine && (have == v.meta.labels.end() || have->second != want);
}

std::vector<std::string> VolumeSelections(const Config& cfg) {
  if (cfg.node_name.empty()) return {""};
  const std::string key = node_label::kKey;
  return {key + " in (" + NodeLabelValue(cfg.node_name) + "," + node_label::kShared + "," + node_label::kAll + ")",
          "!" + key};
}

std::string ClaimSelection(const Config& cfg) {
  if (cfg.node_name.empty()) return "";
  return std::string(node_label::kKey) + " in (" + NodeLabelValue(cfg.node_name) + "," + node_label::kAny + ")";
}

bool WatchEveryClaim(const Config& cfg, int nodes, bool now) {
  const int small = cfg.small_cluster_nodes;
  if (small <= 0) return false;
  if (nodes <= small) return true;
  if (nodes > small + std::max(1, small / 4)) return false;
  return now;
}

std::optional<std::string> DispatchLabel(const Config& cfg, const Claim& claim, const StorageClass* sc) {
  const bool our_class = sc != nullptr && cfg.Ours(sc->provisioner);
  // A class known to be another provisioner's decides, whatever the claim's annotations say (a
  // tenant may set the beta one to another install's name: both dispatchers would then label).
  if (claim.meta.deleting || (!our_class && (sc != nullptr || !ClaimIsOurs(cfg, claim)))) return std::nullopt;
  const bool all_nodes = our_class && sc->parameters.count("nodes") && sc->parameters.at("nodes") == "all";
  if (all_nodes || ClassIsShared(cfg, sc) || ClassHasPathPattern(cfg, sc)) return std::string(node_label::kAny);
  const std::string node = ClaimNode(claim);
  if (!node.empty()) return NodeLabelValue(node);
  if (sc != nullptr && sc->volume_binding_mode == "WaitForFirstConsumer") return std::string();  // no label yet
  return std::string(node_label::kAny);  // names no node: every instance may tell the user why
}
