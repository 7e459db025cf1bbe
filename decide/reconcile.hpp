// The provisioner's decisions, pure: (config, claim or volume, class, cache facts) -> action.
// No I/O, no clock, no globals. The PV the program creates is built here, and tests build the
// expected PV with the same function. Also what of claims and volumes is cached (SlimForCache).
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "base/quantity.hpp"
#include "base/status.hpp"

// Event reasons, as `kubectl describe` shows them.
namespace reason {
inline constexpr const char* kProvisioningSucceeded = "ProvisioningSucceeded";
inline constexpr const char* kProvisioningFailed = "ProvisioningFailed";
inline constexpr const char* kVolumeFailedDelete = "VolumeFailedDelete";
inline constexpr const char* kSizeNotEnforced = "SizeNotEnforced";
}  // namespace reason

struct Action {
  enum Kind {
    kNothing,          // not ours, or nothing to do; `why` says which (for debug logs)
    kProvision,        // make dir_name (dir_mode, owner), then create `volume`
    kDelete,           // remove dir_name, then drop our finalizer and delete the PV
    kDropFinalizer,    // the PV is going and its data must stay: only remove our finalizer
    kFail,             // tell the user (event `reason`/`message` on the object) and retry later
    // A volume on every node (nodes: all), for this node's instance:
    kJoin,             // make dir_name here (dir_mode, owner), then add this node's finalizer
    kLeave,            // remove dir_name here if remove_dir, then this node's finalizer
    kDeleteObject,     // released: delete the PV (each node then leaves)
    kPruneGone,        // being deleted: drop the finalizers of nodes whose Node object is gone
    // A shared volume (a requireMount root every host mounts, node-aware mode):
    kAdopt,            // released or being deleted, and `holder`'s node (which acts on it) may be gone: take it over if so
  };
  Kind kind = kNothing;
  std::string why;          // kNothing: a short explanation
  std::string dir_name;     // kProvision/kDelete: the volume directory's name inside the root
  unsigned dir_mode = 0;    // kProvision
  int uid = -1, gid = -1;   // kProvision: owner of the directory; -1 = leave as created
  std::string root;         // kProvision/kDelete: the root directory dir_name is in
  bool require_mount = false;  // kProvision/kDelete: only while a filesystem is mounted at root
  bool remove_dir = false;  // kLeave: the reclaim policy is Delete
  int64_t request_bytes = 0;  // kProvision: the claim's size
  bool check_space = false;   // kProvision: only if request_bytes fit (see space.hpp)
  bool overcommit = false;    // kProvision: ... not counting what other volumes were promised
  std::string quota = "false";  // kProvision: enforce request_bytes: "true", "auto" (where the root can), "false"
  Volume volume;            // kProvision: the PV to create
  std::string reason;       // kFail: event reason
  std::string message;      // kFail: event message (why, and what to do)
  bool retry = true;        // kFail: try again after a backoff (false: only when the object changes)
  bool once = false;        // kFail: one event however many instances see it (node-aware mode)
  bool normal = false;      // kFail: nothing is wrong, the claim waits for what is on its way (a Normal event)
  bool reschedule = false;  // kFail: for good on this node: drop the claim's selected-node
  std::string holder;       // kAdopt: the node named on the volume as the one that acts on it
  // kProvision of a clone (the claim's dataSource names a claim, clone.hpp): what to copy.
  struct Source {
    std::string claim;            // "namespace/name"; "" when not a clone
    std::string volume;           // its PV; "" when not a clone, or copied already
    std::string root, dir_name;   // its directory, recomputed as deleting it would
    bool require_mount = false;
    std::string quota;            // its PV's kQuota annotation
  } source;
};

namespace reconcile_detail {

inline Action Nothing(std::string why) {
  Action a;
  a.why = std::move(why);
  return a;
}

inline Action Fail(const char* reason, std::string message, bool retry = true) {
  Action a;
  a.kind = Action::kFail;
  a.reason = reason;
  a.message = std::move(message);
  a.retry = retry;
  return a;
}

// An object uid as the API server makes them: a UUID in lower-case hex, "8-4-4-4-12".
inline bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-') || (!dash && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))) return false;
  }
  return true;
}

inline bool ParseUnsigned(const std::string& s, int base, unsigned long max, unsigned long* out) {
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

}  // namespace reconcile_detail

// The name of a volume's directory inside the root: "<namespace>-<claim>-<pv name>", as the
// README documents. Names longer than a directory name may be (255 bytes) have the claim part
// cut, so the result is a function of these three strings only (deletion recomputes it).
// Returns "" when a part is not a valid Kubernetes name (it would not be a safe path part).
inline std::string VolumeDirName(const std::string& ns, const std::string& claim, const std::string& pv) {
  if (!IsDnsName(ns, 63) || !IsDnsName(claim, 253) || !IsDnsName(pv, 253)) return "";
  std::string name = ns + "-" + claim + "-" + pv;
  if (name.size() > 255) {
    size_t keep = 255 - ns.size() - pv.size() - 2;
    if (pv.size() + ns.size() + 3 > 255) return "";
    name = ns + "-" + claim.substr(0, keep) + "-" + pv;
  }
  return name;
}

// The PV name for a claim: "pvc-<claim uid>", as Kubernetes' external provisioners name them.
inline std::string VolumeNameFor(const std::string& claim_uid) { return "pvc-" + claim_uid; }
inline std::string VolumeNameFor(const Claim& claim) { return VolumeNameFor(claim.meta.uid); }

// The node a claim's volume goes to: the scheduler's choice (WaitForFirstConsumer classes),
// else our annotation or kubevirt's; "" when it names none.
inline std::string ClaimNode(const Claim& claim) {
  for (const char* key : {ann::kSelectedNode, ann::kNode, ann::kKubevirtNode}) {
    auto it = claim.meta.annotations.find(key);
    if (it != claim.meta.annotations.end() && !it->second.empty()) return it->second;
  }
  return "";
}

// Does the claim ask for our provisioner? (the PV controller's annotation, or its beta twin)
inline bool ClaimIsOurs(const Config& cfg, const Claim& claim) {
  for (const char* key : {ann::kStorageProvisioner, ann::kBetaStorageProvisioner}) {
    auto it = claim.meta.annotations.find(key);
    if (it != claim.meta.annotations.end() && it->second == cfg.provisioner_name) return true;
  }
  return false;
}

// StorageClass parameters this provisioner understands, validated.
struct ClassParameters {
  int uid = -1, gid = -1;  // owner of new directories; -1 = root as created
  bool has_mode = false;
  unsigned mode = 0;       // octal mode of new directories, overrides the configured default
  bool local = false;      // volumeType local: a `local` PV rather than a hostPath one
  std::string root;        // pvDir, else PV_DIR: where the class's volumes are made
  bool require_mount = false;  // requireMount: the root must be a mounted filesystem
  bool all_nodes = false;  // nodes: all: a directory on every node, a PV without node affinity
  bool shared = false;     // node-aware, requireMount, one directory: a root every host mounts (ClassIsShared)
  bool check_space = true;  // checkFreeSpace
  bool overcommit = false;  // overcommit
  std::string quota = "false";  // quota: "true" (enforce the size, or fail), "auto" (where the root can), "false"
};

inline std::string NodeFinalizer(const std::string& node) { return node + "/" + ann::kNodeFinalizerName; }

// The nodes whose finalizers a volume carries (see ann::kNodeFinalizerName), sorted.
inline std::vector<std::string> FinalizerNodes(const Volume& v) {
  const std::string suffix = std::string("/") + ann::kNodeFinalizerName;
  std::vector<std::string> nodes;
  for (const std::string& f : v.meta.finalizers)
    if (f.size() > suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      nodes.push_back(f.substr(0, f.size() - suffix.size()));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

inline bool OnAllNodes(const Volume& v) {
  auto it = v.meta.annotations.find(ann::kAllNodes);
  return it != v.meta.annotations.end() && it->second == "all";
}

// A shared volume: one directory on a root that every host mounts (a network share), made in
// node-aware mode by whichever instance's PV create succeeded; the node named in ann::kNode
// removes (and expands) it, and another node's instance takes that over once that node's Node
// object is gone. Its PV has no node affinity.
inline bool IsShared(const Volume& v) {
  auto it = v.meta.annotations.find(ann::kAllNodes);
  return it != v.meta.annotations.end() && it->second == "shared";
}

// Does this class make shared volumes? In node-aware mode, a class of ours that requires a
// mounted root (requireMount, or REQUIRE_MOUNT by default), with one directory (not nodes:
// all) of type hostPath: such a root is a share every host mounts at the same path. Read
// from the raw parameters (ParseClassParameters says whether they are valid).
inline bool ClassIsShared(const Config& cfg, const StorageClass* sc) {
  if (cfg.node_name.empty() || sc == nullptr || sc->provisioner != cfg.provisioner_name) return false;
  auto param = [&](const char* key) {
    auto it = sc->parameters.find(key);
    return it == sc->parameters.end() ? std::string() : it->second;
  };
  const std::string mount = param("requireMount");
  return (mount == "true" || (mount.empty() && cfg.require_mount)) && param("nodes") != "all" && param("volumeType") != "local";
}

// May volumes be made under, and removed from, `path`? PV_DIR and ALLOWED_PV_DIRS only.
inline bool IsConfiguredRoot(const Config& cfg, const std::string& path) {
  return path == cfg.pv_dir || std::find(cfg.allowed_pv_dirs.begin(), cfg.allowed_pv_dirs.end(), path) != cfg.allowed_pv_dirs.end();
}

// Parses the class's parameters; an unknown key or a bad value is an error message.
inline std::string ParseClassParameters(const Config& cfg, const StorageClass& sc, ClassParameters* out) {
  using reconcile_detail::ParseUnsigned;
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
    } else {
      return "unknown parameter \"" + key + "\" (this provisioner understands uid, gid, mode, volumeType, pvDir, requireMount, nodes, checkFreeSpace, overcommit and quota)";
    }
  }
  if (out->all_nodes && out->local) return "parameters nodes=all and volumeType=local do not go together (a local volume has one node)";
  if (out->all_nodes && out->quota != "false")
    return "parameter quota=\"" + out->quota + "\" is not available with nodes=all yet: use quota: \"false\"";
  if (out->all_nodes && cfg.node_name.empty())
    return "parameter nodes=all needs the provisioner on every node (the DaemonSet of manifests/daemonset/, NODE_NAME set)";
  out->shared = ClassIsShared(cfg, &sc);
  return "";
}

// The reclaim policy a new volume gets: the configured override, else the class's, else
// Kubernetes' default, Delete.
inline std::string ReclaimPolicyFor(const Config& cfg, const StorageClass& sc) {
  if (!cfg.reclaim_policy.empty()) return cfg.reclaim_policy;
  if (!sc.reclaim_policy.empty()) return sc.reclaim_policy;
  return "Delete";
}

// The PV for a claim; its capacity is the claim's request, as the API server wrote it. In
// node-aware mode it is pinned to this node and says so; a `local` one to the claim's node.
inline Volume BuildVolume(const Config& cfg, const Claim& claim, const StorageClass& sc, const ClassParameters& params) {
  Volume v;
  v.meta.name = VolumeNameFor(claim);
  v.meta.annotations[ann::kProvisionedBy] = cfg.provisioner_name;
  v.meta.annotations[ann::kPvDir] = params.root;
  if (params.require_mount) v.meta.annotations[ann::kRequireMount] = "true";
  if (params.all_nodes) {
    v.meta.annotations[ann::kAllNodes] = "all";
  } else if (!cfg.node_name.empty()) {
    v.meta.annotations[ann::kNode] = cfg.node_name;
    if (params.shared) v.meta.annotations[ann::kAllNodes] = "shared";
  }
  v.node = params.all_nodes || params.shared ? "" : !cfg.node_name.empty() ? cfg.node_name : params.local ? ClaimNode(claim) : "";
  v.local = params.local;
  v.meta.finalizers = {params.all_nodes ? NodeFinalizer(cfg.node_name) : ann::kProvisionerFinalizer};
  v.capacity = claim.storage_request;
  v.access_modes = claim.access_modes;
  v.volume_mode = claim.volume_mode.empty() ? "Filesystem" : claim.volume_mode;
  v.storage_class_name = sc.meta.name;
  v.reclaim_policy = ReclaimPolicyFor(cfg, sc);
  v.mount_options = sc.mount_options;
  v.has_claim_ref = true;
  v.claim_ref = {claim.meta.namespace_, claim.meta.name, claim.meta.uid};
  v.host_path = params.root + "/" + VolumeDirName(claim.meta.namespace_, claim.meta.name, v.meta.name);
  v.host_path_type = params.local ? "" : "Directory";
  return v;
}

// Is `existing` (a PV of the same name, found after a create said AlreadyExists) the volume
// BuildVolume made, by an earlier attempt: the same claim, the same path, and our annotation?
inline bool IsVolumeWeMade(const Volume& existing, const Volume& built) {
  auto by = existing.meta.annotations.find(ann::kProvisionedBy);
  return existing.claim_ref.uid == built.claim_ref.uid && existing.host_path == built.host_path &&
         by != existing.meta.annotations.end() && by->second == built.meta.annotations.at(ann::kProvisionedBy);
}

// Where a claim stands before its class and volume are looked at: DecideClaim's first checks,
// which the controller also makes for every watch event of a claim (so no strings here).
enum class ClaimStage { kNotOurs, kDeleting, kNamesVolume, kNotPending, kWaitsForVolume };
inline ClaimStage StageOf(const Config& cfg, const Claim& claim) {
  if (!ClaimIsOurs(cfg, claim)) return ClaimStage::kNotOurs;
  if (claim.meta.deleting) return ClaimStage::kDeleting;
  if (!claim.volume_name.empty()) return ClaimStage::kNamesVolume;
  if (!claim.phase.empty() && claim.phase != "Pending") return ClaimStage::kNotPending;
  return ClaimStage::kWaitsForVolume;
}

// Could DecideClaim do anything for this claim, whatever its volume? Only a claim of ours that
// waits for a volume and, in node-aware mode, is for this node, names none, or is of a class
// of shared volumes (`sc`, if cached): the controller hands no other claim to a worker (a
// watch event of a bound or deleted claim, or of another node's, wakes nobody).
inline bool ClaimMayNeedVolume(const Config& cfg, const Claim& claim, const StorageClass* sc = nullptr) {
  if (StageOf(cfg, claim) != ClaimStage::kWaitsForVolume) return false;
  const std::string node = ClaimNode(claim);
  // another node's: not ours to look at
  return cfg.node_name.empty() || node.empty() || node == cfg.node_name || ClassIsShared(cfg, sc);
}

// What to do for a claim. `sc` is its class (nullptr if not in the cache); `existing` is the
// PV named for it (nullptr if none).
inline Action DecideClaim(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing) {
  using reconcile_detail::Fail;
  using reconcile_detail::Nothing;
  switch (StageOf(cfg, claim)) {
    case ClaimStage::kNotOurs: return Nothing("not annotated for " + cfg.provisioner_name);
    case ClaimStage::kDeleting: return Nothing("being deleted");
    case ClaimStage::kNamesVolume: return Nothing("already names volume " + claim.volume_name);
    case ClaimStage::kNotPending: return Nothing("phase is " + claim.phase);
    case ClaimStage::kWaitsForVolume: break;
  }
  const char* failed = reason::kProvisioningFailed;
  const std::string node = ClaimNode(claim);
  // A claim of a class that puts a directory on every node: any instance may make its PV.
  const bool all_nodes = sc != nullptr && sc->provisioner == cfg.provisioner_name &&
                         sc->parameters.count("nodes") && sc->parameters.at("nodes") == "all";
  // A shared volume (a root every host mounts): any instance may make it, whatever node the
  // claim names; the PV create is atomic, so one does.
  const bool shared = ClassIsShared(cfg, sc);
  if (!cfg.node_name.empty() && !shared) {  // node-aware: every instance sees every claim; one acts
    // A WaitForFirstConsumer claim naming no node waits for the scheduler (also once an instance
    // handed it back): nothing to tell the user.
    if (node.empty() && !all_nodes && sc != nullptr && sc->volume_binding_mode == "WaitForFirstConsumer")
      return Nothing("waiting for the scheduler to pick a node (WaitForFirstConsumer)");
    if (node.empty() && !all_nodes) {
      Action a = Fail(failed, "this provisioner runs on every node and the claim names none: add the annotation " +
                                  std::string(ann::kNode) + "=<node name> to the claim, or use a StorageClass with "
                                  "volumeBindingMode WaitForFirstConsumer", false);
      a.once = true;
      return a;
    }
    if (!node.empty() && node != cfg.node_name) return Nothing("for node " + node);
  }
  if (existing != nullptr && existing->claim_ref.uid == claim.meta.uid)
    return Nothing("volume " + existing->meta.name + " exists; waiting for binding");
  if (existing != nullptr)
    return Fail(reason::kProvisioningFailed,
                "a PersistentVolume named " + existing->meta.name + " already exists and is not the one this provisioner "
                "made for this claim (claim uid \"" + existing->claim_ref.uid + "\", path \"" + existing->host_path +
                "\"); delete it if it is stale");
  // A claim's class cannot be changed: one without a class waits for nothing.
  if (claim.storage_class_name.empty())
    return Fail(failed, "the claim names no StorageClass (spec.storageClassName), but is annotated for " +
                            cfg.provisioner_name + ": recreate it with storageClassName set to a class of this provisioner",
                false);
  if (sc == nullptr)
    return Fail(failed, "StorageClass \"" + claim.storage_class_name + "\" not found: create it (the claim waits for it), "
                        "or create the claim again with an existing class");
  if (sc->provisioner != cfg.provisioner_name)
    return Nothing("class " + sc->meta.name + " belongs to provisioner " + sc->provisioner);
  if (claim.volume_mode == "Block")
    return Fail(failed, "volumeMode Block is not supported: hostPath volumes are directories; create the claim again with "
                        "volumeMode Filesystem");
  if (claim.has_selector)
    return Fail(failed, "claims with spec.selector cannot be provisioned dynamically: create the claim again without the "
                        "selector, or create a PersistentVolume it selects");
  if (claim.has_data_source)
    return Fail(failed, "spec.dataSource (cloning, snapshots) is not supported: create the claim again without it to get "
                        "an empty volume");
  ClassParameters params;
  if (std::string err = ParseClassParameters(cfg, *sc, &params); !err.empty()) {
    Action a = Fail(failed, "StorageClass " + sc->meta.name + ": " + err + "; fix the class and recreate it");
    a.reschedule = !cfg.node_name.empty();
    return a;
  }
  if (params.local && node.empty())
    return Fail(failed, "StorageClass " + sc->meta.name + " makes local volumes, which must name their node: add the "
                        "annotation " + std::string(ann::kNode) + "=<node name> to the claim, or create it again with a "
                        "class whose volumeBindingMode is WaitForFirstConsumer", false);
  if (claim.storage_request.empty())
    return Fail(failed, "spec.resources.requests.storage is missing: create the claim again saying how much storage it "
                        "needs");
  Result<int64_t> bytes = QuantityToBytes(claim.storage_request);
  if (!bytes.ok()) return Fail(failed, "storage request: " + bytes.status().message());
  if (VolumeDirName(claim.meta.namespace_, claim.meta.name, VolumeNameFor(claim)).empty() ||
      !IsDnsName(claim.meta.uid, 128))
    return Fail(failed, "namespace, name or uid is not a valid Kubernetes name; refusing to make a path of it");
  Action a;
  a.kind = Action::kProvision;
  a.volume = BuildVolume(cfg, claim, *sc, params);
  a.root = params.root;
  a.require_mount = params.require_mount;
  a.request_bytes = *bytes;
  a.check_space = params.check_space;
  a.overcommit = params.overcommit;
  a.quota = params.quota;
  a.dir_name = VolumeDirName(claim.meta.namespace_, claim.meta.name, a.volume.meta.name);
  a.dir_mode = params.has_mode ? params.mode : cfg.dir_mode;
  a.uid = params.uid;
  a.gid = params.gid;
  return a;
}

inline bool HasFinalizer(const ObjectMeta& m, const std::string& f) {
  for (const auto& x : m.finalizers)
    if (x == f) return true;
  return false;
}

// What to do for a PV. Only PVs with our provisioned-by annotation are considered; the
// directory to remove is recomputed from the root and the PV's name and claim, and must be
// exactly what the PV's spec says, or we refuse.
namespace reconcile_detail {

// The volume's directory recomputed (never read from the PV): `verb` it there (kDelete, with
// dir_name, root and require_mount set), or a failure naming why nothing is done.
inline Action AtRecomputedPath(const Config& cfg, const Volume& v, Action::Kind verb) {
  std::string dir = v.has_claim_ref ? VolumeDirName(v.claim_ref.namespace_, v.claim_ref.name, v.meta.name) : "";
  const char* failed = reason::kVolumeFailedDelete;
  if (dir.empty())
    return Fail(failed, "cannot work out this volume's directory (claimRef missing or invalid); refusing to delete anything");
  // Only "pvc-<claim uid>" with a UUID makes "<namespace>-<claim>-<name>" name one volume: a PV
  // named otherwise could recompute to another claim's directory ("c2-pvc" + "<uid>").
  if (v.meta.name != VolumeNameFor(v.claim_ref.uid) || !IsUuid(v.claim_ref.uid))
    return Fail(failed, "volume name " + v.meta.name + " is not \"pvc-\" and the uid of its claim (" + v.claim_ref.uid +
                            "), as this provisioner names volumes; refusing to delete anything. Remove the data and "
                            "the PV by hand if intended");
  auto made_in = v.meta.annotations.find(ann::kPvDir);
  const std::string root = made_in == v.meta.annotations.end() ? cfg.pv_dir : made_in->second;
  if (!IsConfiguredRoot(cfg, root))
    return Fail(failed, "volume " + v.meta.name + " was made under " + root + ", which is not PV_DIR or one of "
                        "ALLOWED_PV_DIRS; refusing to delete anything. Configure that directory again, or remove the "
                        "data and the PV by hand");
  std::string expected = root + "/" + dir;
  if (v.host_path != expected)
    return Fail(failed, "hostPath \"" + v.host_path + "\" is not where this provisioner put volume " + v.meta.name +
                            " (" + expected + "); refusing to delete it. Remove the data and the PV by hand if intended");
  Action a;
  a.kind = verb;
  a.dir_name = dir;
  a.root = root;
  auto must_mount = v.meta.annotations.find(ann::kRequireMount);
  a.require_mount = cfg.require_mount || (must_mount != v.meta.annotations.end() && must_mount->second == "true");
  return a;
}

// A volume whose directory is on every node (nodes: all), for this node's instance: join it
// (make the directory here and hold this node's finalizer) while it is in use; once released,
// any node holding a finalizer deletes the PV (the others drop the finalizers of nodes that
// no longer exist, so that it goes even when every holder is gone); once it is being
// deleted, each node removes its directory (Delete policy) and its finalizer, and finalizers
// of nodes that no longer exist are dropped by the others. `sc` (its class, if cached) gives
// the mode and owner of a directory made here.
inline Action DecideOnEveryNode(const Config& cfg, const Volume& v, const StorageClass* sc) {
  if (cfg.node_name.empty()) return Nothing("a volume on every node: the DaemonSet's instances look after it");
  const bool mine = HasFinalizer(v.meta, NodeFinalizer(cfg.node_name));
  const std::vector<std::string> nodes = FinalizerNodes(v);
  const bool released = v.phase == "Released" || v.phase == "Failed";
  if (v.meta.deleting) {
    if (v.phase == "Bound") return Nothing("being deleted but still bound; waiting for the claim to go");
    if (mine) {
      Action a = AtRecomputedPath(cfg, v, Action::kLeave);
      a.remove_dir = v.reclaim_policy == "Delete";
      if (a.kind == Action::kFail && !a.remove_dir) a = Action{Action::kLeave};  // Retain: nothing to find
      return a;
    }
    if (!nodes.empty()) {
      Action a;
      a.kind = Action::kPruneGone;
      return a;
    }
    return Nothing("being deleted; no node holds it");
  }
  if (released) {
    if (v.reclaim_policy != "Delete") return Nothing("reclaim policy " + v.reclaim_policy + ": data is kept");
    Action a;
    // Any node that holds it deletes it (the uid precondition makes a second delete harmless),
    // and so does anyone once no node holds it. Another node's instance drops the finalizers
    // of nodes that are gone, so that a volume whose holders all went is deleted too.
    a.kind = mine || nodes.empty() ? Action::kDeleteObject : Action::kPruneGone;
    return a;
  }
  if (mine) return Nothing("its directory is here");
  Action a = AtRecomputedPath(cfg, v, Action::kJoin);
  if (a.kind == Action::kFail) {
    a.reason = reason::kProvisioningFailed;
    return a;
  }
  ClassParameters params;
  a.dir_mode = cfg.dir_mode;
  if (sc != nullptr && ParseClassParameters(cfg, *sc, &params).empty()) {
    if (params.has_mode) a.dir_mode = params.mode;
    a.uid = params.uid;
    a.gid = params.gid;
  }
  return a;
}

}  // namespace reconcile_detail

// What to do for a PV. Only PVs with our provisioned-by annotation are considered; the
// directory to remove is recomputed from the root and the PV's name and claim, and must be
// exactly what the PV's spec says, or we refuse. `sc`: the PV's class if cached (only a volume
// on every node needs it).
inline Action DecideVolume(const Config& cfg, const Volume& v, const StorageClass* sc = nullptr) {
  using reconcile_detail::Nothing;
  auto by = v.meta.annotations.find(ann::kProvisionedBy);
  if (by == v.meta.annotations.end() || by->second != cfg.provisioner_name) return Nothing("not provisioned by us");
  if (OnAllNodes(v)) return reconcile_detail::DecideOnEveryNode(cfg, v, sc);
  auto made_on = v.meta.annotations.find(ann::kNode);
  const std::string node = made_on == v.meta.annotations.end() ? "" : made_on->second;
  bool finalizer = HasFinalizer(v.meta, ann::kProvisionerFinalizer);
  bool released = v.phase == "Released" || v.phase == "Failed";
  if (node != cfg.node_name) {
    // A shared volume that its node would now remove (or let go of): taken over if that node is gone.
    if (IsShared(v) && !cfg.node_name.empty() && !node.empty() &&
        ((released && v.reclaim_policy == "Delete") || (v.meta.deleting && finalizer))) {
      Action a;
      a.kind = Action::kAdopt;
      a.holder = node;
      return a;
    }
    return Nothing(node.empty() ? "made by a single-node instance" : "made on node " + node);
  }
  if (v.meta.deleting && !finalizer) return Nothing("being deleted; nothing of ours holds it");
  if (v.meta.deleting && v.phase == "Bound") return Nothing("being deleted but still bound; waiting for the claim to go");
  if (!released && !v.meta.deleting) return Nothing("phase is " + (v.phase.empty() ? std::string("unset") : v.phase));
  if (v.reclaim_policy != "Delete") {
    if (v.meta.deleting) {
      Action a;
      a.kind = Action::kDropFinalizer;
      return a;
    }
    return Nothing("reclaim policy " + v.reclaim_policy + ": data is kept");
  }
  return reconcile_detail::AtRecomputedPath(cfg, v, Action::kDelete);
}

// Cached objects keep only what the decisions above read (as client-go's informer transforms
// do): with thousands of claims and volumes this is most of the provisioner's memory.
// A bound claim is never acted on; a volume that is not ours is never acted on.
namespace reconcile_detail {
// Drops the annotations not in `keep`, in place.
inline void KeepOnly(std::map<std::string, std::string>* m, const std::vector<std::string_view>& keep) {
  for (auto it = m->begin(); it != m->end();)
    it = std::find(keep.begin(), keep.end(), it->first) != keep.end() ? std::next(it) : m->erase(it);
}
}  // namespace reconcile_detail

inline void SlimForCache(Claim* c) {
  reconcile_detail::KeepOnly(&c->meta.annotations, {ann::kStorageProvisioner, ann::kBetaStorageProvisioner,
                                                    ann::kSelectedNode, ann::kNode, ann::kKubevirtNode});
  c->meta.labels.clear();
  c->meta.finalizers.clear();
  Result<int64_t> request = QuantityToBytes(c->storage_request), capacity = QuantityToBytes(c->capacity);
  c->request_bytes = request.ok() ? *request : -1;
  c->capacity_bytes = capacity.ok() ? *capacity : -1;
  // A bound claim keeps its request, capacity and class only while it asks for more than it
  // has (an expansion).
  if (!c->volume_name.empty() && !(c->capacity_bytes >= 0 && c->request_bytes > c->capacity_bytes)) {
    c->capacity.clear();
    c->meta.annotations.clear();
    c->access_modes.clear();
    c->storage_request.clear();
    c->storage_class_name.clear();
    c->data_source = DataSource{};
  }
}

inline void SlimForCache(Node* n) { n->meta = ObjectMeta{n->meta.name, "", n->meta.uid, n->meta.resource_version}; }

inline void SlimForCache(Volume* v) {
  reconcile_detail::KeepOnly(&v->meta.annotations,
                             {ann::kProvisionedBy, ann::kNode, ann::kPvDir, ann::kRequireMount, ann::kAllNodes, ann::kQuota});
  v->meta.labels.clear();
  v->access_modes.clear();
  v->mount_options.clear();
  if (Result<int64_t> bytes = QuantityToBytes(v->capacity); bytes.ok()) v->capacity_bytes = *bytes;
  v->capacity.clear();
  v->volume_mode.clear();
  // A volume on every node: a node that joins later makes its directory from these.
  if (OnAllNodes(*v)) return;
  v->storage_class_name.clear();
  // Not provisioned by anyone we could be, or bound and not being deleted: nothing to do until
  // a later version (which the watch brings whole) says otherwise. The claim's uid and the path
  // stay: a claim checks that the volume of its name is its own, a deletion looks for other
  // volumes that use its directory. A provisioned volume keeps its claim's namespace and name:
  // the usage scan (usage.hpp) recomputes its directory from them and labels its metrics.
  const bool provisioned = v->meta.annotations.count(ann::kProvisionedBy) > 0;
  if (!provisioned) {
    v->claim_ref.namespace_.clear();
    v->claim_ref.name.clear();
  }
  if (!provisioned || (v->phase == "Bound" && !v->meta.deleting)) {
    v->host_path_type.clear();
    v->meta.finalizers.clear();
  }
}
