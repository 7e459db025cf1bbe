// A StorageClass's parameters: the bodies (class_params.hpp has the contracts).
#include "decide/class_params.hpp"

#include "base/paths.hpp"
#include "base/quantity.hpp"
#include "decide/path_pattern.hpp"
#include "decide/names.hpp"

namespace {

bool ParseUnsigned(const std::string& s, int base, unsigned long max, unsigned long* out) {
  if (s.empty() || s.size() > 12) return false;
  unsigned long v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9') ? c - '0' : 99;
    if (d >= base) return false;
    v = v * base + d;
  }
  if (v > max) return false;
  *out = v;
  return true;
}

}  // namespace

bool ClassIsShared(const Config& cfg, const StorageClass* sc) {
  if (cfg.node_name.empty() || sc == nullptr || !cfg.Ours(sc->provisioner)) return false;
  auto param = [&](const char* key) {
    auto it = sc->parameters.find(key);
    return it == sc->parameters.end() ? std::string() : it->second;
  };
  const std::string mount = param("requireMount");
  return (mount == "true" || (mount.empty() && cfg.require_mount)) && param("nodes") != "all" && param("volumeType") != "local";
}

bool ClassHasPathPattern(const Config& cfg, const StorageClass* sc) {
  return sc != nullptr && cfg.Ours(sc->provisioner) && sc->parameters.count("pathPattern") > 0;
}

std::string ParseClassParameters(const Config& cfg, const StorageClass& sc, ClassParameters* out) {
  *out = ClassParameters{};
  out->root = cfg.pv_dir;
  out->require_mount = cfg.require_mount;
  out->check_space = cfg.check_free_space;
  out->overcommit = cfg.overcommit;
  out->quota = cfg.quota;
  for (const auto& [key, value] : sc.parameters) {
    unsigned long v = 0;
    if (key == "uid" || key == "gid") {
      if (!ParseUnsigned(value, 10, 2147483647UL, &v))
        return "parameter " + key + "=\"" + value + "\" is not a numeric id (0 to 2147483647)";
      (key == "uid" ? out->uid : out->gid) = static_cast<int>(v);
    } else if (key == "mode") {
      if (!ParseUnsigned(value, 8, 07777, &v))
        return "parameter mode=\"" + value + "\" is not an octal mode like 0770";
      if (v & 04000) return "parameter mode=\"" + value + "\" sets the set-user-ID bit (04000), which this provisioner refuses";
      out->has_mode = true;
      out->mode = static_cast<unsigned>(v);
    } else if (key == "volumeType") {
      if (value != "hostPath" && value != "local") return "parameter volumeType=\"" + value + "\" must be hostPath or local";
      out->local = value == "local";
    } else if (key == "nodes") {
      if (value != "all" && value != "one") return "parameter nodes=\"" + value + "\" must be \"one\" or \"all\"";
      out->all_nodes = value == "all";
    } else if (key == "checkFreeSpace" || key == "overcommit") {
      if (value != "true" && value != "false") return "parameter " + key + "=\"" + value + "\" must be \"true\" or \"false\"";
      (key == "overcommit" ? out->overcommit : out->check_space) = value == "true";
    } else if (key == "quota") {
      if (value != "true" && value != "auto" && value != "false")
        return "parameter quota=\"" + value + "\" must be \"true\", \"auto\" or \"false\"";
      out->quota = value;
    } else if (key == "requireMount") {
      if (value != "true" && value != "false") return "parameter requireMount=\"" + value + "\" must be \"true\" or \"false\"";
      out->require_mount = value == "true";
    } else if (key == "pvDir") {
      std::string dirs = cfg.pv_dir;
      for (const std::string& d : cfg.allowed_pv_dirs) dirs += ", " + d;
      if (!NormaliseAbsolute(value, &out->root))
        return "parameter pvDir=\"" + value + "\" is not an absolute path without \"..\"";
      if (!IsConfiguredRoot(cfg, out->root))
        return "parameter pvDir=\"" + value + "\" is not a directory this provisioner may use (" + dirs +
               "): add it to ALLOWED_PV_DIRS and mount it into the provisioner's pod at the same path";
    } else if (key == "onDelete") {
      if (value != "delete" && value != "archive" && value != "retain")
        return "parameter onDelete=\"" + value + "\" must be \"delete\", \"archive\" or \"retain\"";
      out->on_delete = value;
    } else if (key == "archiveFor") {
      Result<int64_t> secs = DurationSeconds(value);
      if (!secs.ok()) return "parameter archiveFor: " + secs.status().message() + "; \"0\" keeps archives for ever";
      out->archive_for = value;
      out->archive_seconds = *secs;
    } else if (key == "pathPattern") {
      out->path_pattern = value;  // checked below, once sharedAcrossNamespaces is known
    } else if (key == "sharedAcrossNamespaces") {
      if (value != "true" && value != "false")
        return "parameter sharedAcrossNamespaces=\"" + value + "\" must be \"true\" or \"false\"";
      out->shared_across_namespaces = value == "true";
    } else {
      return "unknown parameter \"" + key + "\" (this provisioner understands uid, gid, mode, volumeType, pvDir, requireMount, nodes, checkFreeSpace, overcommit, quota, onDelete, archiveFor, pathPattern and sharedAcrossNamespaces)";
    }
  }
  if (sc.parameters.count("pathPattern") > 0)
    if (std::string e = CheckPathPattern(out->path_pattern, out->shared_across_namespaces); !e.empty())
      return "parameter pathPattern=\"" + out->path_pattern + "\" " + e;
  if (sc.parameters.count("sharedAcrossNamespaces") > 0 && sc.parameters.count("pathPattern") == 0)
    return "parameter sharedAcrossNamespaces only goes with pathPattern";
  if (!out->archive_for.empty() && out->on_delete != "archive")
    return "parameter archiveFor=\"" + out->archive_for + "\" only goes with onDelete: \"archive\"";
  if (out->on_delete == "archive" && out->archive_for.empty()) out->archive_for = "0";
  if (out->all_nodes && out->local) return "parameters nodes=all and volumeType=local do not go together (a local volume has one node)";
  if (out->all_nodes && out->quota != "false")
    return "parameter quota=\"" + out->quota + "\" is not available with nodes=all yet: use quota: \"false\"";
  if (out->all_nodes && cfg.node_name.empty())
    return "parameter nodes=all needs the provisioner on every node (the DaemonSet of manifests/daemonset/, NODE_NAME set)";
  out->shared = ClassIsShared(cfg, &sc);
  return "";
}

std::string ReclaimPolicyFor(const Config& cfg, const StorageClass& sc) {
  if (!cfg.reclaim_policy.empty()) return cfg.reclaim_policy;
  if (!sc.reclaim_policy.empty()) return sc.reclaim_policy;
  return "Delete";
}
