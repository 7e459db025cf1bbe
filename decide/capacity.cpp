// Storage capacity decisions: the bodies (capacity.hpp has the contracts).
#include "decide/capacity.hpp"

#include "base/text.hpp"
#include "decide/node_labels.hpp"

bool ClassGetsCapacity(const Config& cfg, const StorageClass& sc) {
  return !cfg.node_name.empty() && !cfg.capacity_provisioner_name.empty() &&
         sc.provisioner == cfg.capacity_provisioner_name && sc.volume_binding_mode == "WaitForFirstConsumer";
}

std::string CapacityObjectName(const std::string& node, const std::string& class_name) {
  return "hostpath-" + Sha256Hex(node + "\n" + class_name, 16);
}

std::string CapacitySelector(const std::string& node) {
  return std::string(node_label::kKey) + "=" + NodeLabelValue(node);
}

CapacityFigure CapacityFor(const ClassParameters& p, uint64_t available, uint64_t promised) {
  CapacityFigure f;
  f.unlimited = !p.check_space;
  f.capacity = p.overcommit ? available : (available > promised ? available - promised : 0);
  return f;
}

bool CapacityWorthWriting(std::optional<uint64_t> was, uint64_t now, bool prompt) {
  if (!was) return true;
  const uint64_t moved = now > *was ? now - *was : *was - now;
  if (moved == 0) return false;
  if (prompt) return true;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  return moved > kMiB && moved > *was / 100;
}
