// Names and marks of a volume of ours: the bodies (names.hpp has the contracts).
#include "decide/names.hpp"

#include <algorithm>

#include "base/paths.hpp"

std::string VolumeDirName(const std::string& ns, const std::string& claim, const std::string& pv) {
  if (!IsDnsName(ns, 63) || !IsDnsName(claim, 253) || !IsDnsName(pv, 253)) return "";
  std::string name = ns + "-" + claim + "-" + pv;
  if (name.size() > 255) {
    size_t keep = 255 - ns.size() - pv.size() - 2;
    if (pv.size() + ns.size() + 3 > 255) return "";
    name = ns + "-" + claim.substr(0, keep) + "-" + pv;
  }
  return name;
}

std::string ClaimNode(const Claim& claim) {
  for (const char* key : {ann::kSelectedNode, ann::kNode, ann::kKubevirtNode}) {
    auto it = claim.meta.annotations.find(key);
    if (it != claim.meta.annotations.end() && !it->second.empty()) return it->second;
  }
  return "";
}

bool ClaimIsOurs(const Config& cfg, const Claim& claim) {
  for (const char* key : {ann::kStorageProvisioner, ann::kBetaStorageProvisioner}) {
    auto it = claim.meta.annotations.find(key);
    if (it != claim.meta.annotations.end() && cfg.Ours(it->second)) return true;
  }
  return false;
}

std::vector<std::string> FinalizerNodes(const Volume& v) {
  const std::string suffix = std::string("/") + ann::kNodeFinalizerName;
  std::vector<std::string> nodes;
  for (const std::string& f : v.meta.finalizers)
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      nodes.push_back(f.substr(0, f.size() - suffix.size()));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

bool HasFinalizer(const ObjectMeta& m, const std::string& f) {
  for (const auto& x : m.finalizers)
    if (x == f) return true;
  return false;
}

bool OnAllNodes(const Volume& v) {
  auto it = v.meta.annotations.find(ann::kAllNodes);
  return it != v.meta.annotations.end() && it->second == "all";
}

bool IsShared(const Volume& v) {
  auto it = v.meta.annotations.find(ann::kAllNodes);
  return it != v.meta.annotations.end() && it->second == "shared";
}

std::vector<std::string> ConfiguredRoots(const Config& cfg) {
  std::vector<std::string> paths{cfg.pv_dir};
  for (const std::string& p : cfg.allowed_pv_dirs)
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
  return paths;
}

bool IsConfiguredRoot(const Config& cfg, const std::string& path) {
  return path == cfg.pv_dir || std::find(cfg.allowed_pv_dirs.begin(), cfg.allowed_pv_dirs.end(), path) != cfg.allowed_pv_dirs.end();
}
