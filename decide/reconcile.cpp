// The provisioner's decisions: the bodies (reconcile.hpp has the contracts).
#include "decide/reconcile.hpp"

#include <vector>

#include "base/paths.hpp"
#include "base/quantity.hpp"
#include "base/status.hpp"
#include "decide/node_labels.hpp"
#include "decide/path_pattern.hpp"

namespace reconcile_detail {

Action Nothing(std::string why) {
  Action a;
  a.why = std::move(why);
  return a;
}

Action Fail(const char* reason, std::string message, bool retry) {
  Action a;
  a.kind = Action::kFail;
  a.reason = reason;
  a.message = std::move(message);
  a.retry = retry;
  return a;
}

}  // namespace reconcile_detail

namespace {

// An object uid as the API server makes them: a UUID in lower-case hex, "8-4-4-4-12".
bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (s[i] == '-') || (!dash && !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))) return false;
  }
  return true;
}

}  // namespace

Volume BuildVolume(const Config& cfg, const Claim& claim, const StorageClass& sc, const ClassParameters& params) {
  Volume v;
  v.meta.name = VolumeNameFor(claim);
  v.meta.annotations[ann::kProvisionedBy] = sc.provisioner;  // one of our names: the class's
  v.meta.annotations[ann::kPvDir] = params.root;
  if (params.require_mount) v.meta.annotations[ann::kRequireMount] = "true";
  if (params.all_nodes) {
    v.meta.annotations[ann::kAllNodes] = "all";
  } else if (!cfg.node_name.empty()) {
    v.meta.annotations[ann::kNode] = cfg.node_name;
    if (params.shared) v.meta.annotations[ann::kAllNodes] = "shared";
  }
  if (std::string label = VolumeLabel(cfg, v); !label.empty()) v.meta.labels[node_label::kKey] = label;
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
  std::string dir = VolumeDirName(claim.meta.namespace_, claim.meta.name, v.meta.name);
  if (!params.path_pattern.empty()) {
    Result<std::string> named = ExpandPathPattern(params.path_pattern, claim);
    dir = named.ok() ? *named : "";
    v.meta.annotations[ann::kDirName] = dir;
  }
  if (params.on_delete != "delete") v.meta.annotations[ann::kOnDelete] = params.on_delete;
  if (params.on_delete == "archive") v.meta.annotations[ann::kArchiveFor] = params.archive_for;
  v.host_path = params.root + "/" + dir;
  v.host_path_type = params.local ? "" : "Directory";
  return v;
}

bool IsVolumeWeMade(const Volume& existing, const Volume& built) {
  auto by = existing.meta.annotations.find(ann::kProvisionedBy);
  // Node-aware, one node's volume is not another's, though their paths read the same.
  auto node_of = [](const Volume& v) {
    auto it = v.meta.annotations.find(ann::kNode);
    return it == v.meta.annotations.end() ? std::string() : it->second;
  };
  const bool same_node = IsShared(built) || OnAllNodes(built) || node_of(existing) == node_of(built);
  return existing.claim_ref.uid == built.claim_ref.uid && existing.host_path == built.host_path && same_node &&
         by != existing.meta.annotations.end() && by->second == built.meta.annotations.at(ann::kProvisionedBy);
}

ClaimStage StageOf(const Config& cfg, const Claim& claim) {
  if (!ClaimIsOurs(cfg, claim)) return ClaimStage::kNotOurs;
  if (claim.meta.deleting) return ClaimStage::kDeleting;
  if (!claim.volume_name.empty()) return ClaimStage::kNamesVolume;
  if (!claim.phase.empty() && claim.phase != "Pending") return ClaimStage::kNotPending;
  return ClaimStage::kWaitsForVolume;
}

bool WaitsForScheduler(const Config& cfg, const Claim& claim, const StorageClass* sc) {
  return !cfg.node_name.empty() && sc != nullptr && !claim.meta.deleting && claim.volume_name.empty() &&
         (claim.phase.empty() || claim.phase == "Pending") && claim.storage_class_name == sc->meta.name &&
         sc->volume_binding_mode == "WaitForFirstConsumer" && ClassHasPathPattern(cfg, sc) && !ClassIsShared(cfg, sc) &&
         ClaimNode(claim).empty();
}

bool ClaimMayNeedVolume(const Config& cfg, const Claim& claim, const StorageClass* sc) {
  if (WaitsForScheduler(cfg, claim, sc)) return true;
  if (StageOf(cfg, claim) != ClaimStage::kWaitsForVolume) return false;
  const std::string node = ClaimNode(claim);
  // another node's: not ours to look at
  // (a claim of a pathPattern class: the node that has its directory may reattach it)
  return cfg.node_name.empty() || node.empty() || node == cfg.node_name || ClassIsShared(cfg, sc) ||
         ClassHasPathPattern(cfg, sc);
}

namespace {
// DecideClaim once it is this node's claim (or one it may reattach): the checks of the claim and
// its class, then the volume to make. `node`: the claim's (ClaimNode).
Action DecideClaimHere(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing,
                       const std::string& node);
}  // namespace

Action DecideClaim(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing) {
  using reconcile_detail::Fail;
  using reconcile_detail::Nothing;
  switch (WaitsForScheduler(cfg, claim, sc) ? ClaimStage::kWaitsForVolume : StageOf(cfg, claim)) {
    case ClaimStage::kNotOurs: return Nothing("not annotated for " + cfg.provisioner_name);
    case ClaimStage::kDeleting: return Nothing("being deleted");
    case ClaimStage::kNamesVolume: return Nothing("already names volume " + claim.volume_name);
    case ClaimStage::kNotPending: return Nothing("phase is " + claim.phase);
    case ClaimStage::kWaitsForVolume: break;
  }
  const char* failed = reason::kProvisioningFailed;
  const std::string node = ClaimNode(claim);
  // A claim of a class that puts a directory on every node: any instance may make its PV.
  const bool all_nodes = sc != nullptr && cfg.Ours(sc->provisioner) &&
                         sc->parameters.count("nodes") && sc->parameters.at("nodes") == "all";
  // A shared volume (a root every host mounts): any instance may make it, whatever node the
  // claim names; the PV create is atomic, so one does.
  const bool shared = ClassIsShared(cfg, sc);
  // Node-aware, a class with pathPattern: the node that has the claim's directory may act for it
  // (reattach) whatever node the claim names, or before the scheduler names one.
  const bool pattern = !cfg.node_name.empty() && !shared && !all_nodes && ClassHasPathPattern(cfg, sc);
  bool elsewhere = false;
  if (!cfg.node_name.empty() && !shared) {  // node-aware: the claim's node acts (others may see it: `any`)
    // A WaitForFirstConsumer claim naming no node waits for the scheduler (also once an instance
    // handed it back): nothing to tell the user.
    if (node.empty() && !all_nodes && sc != nullptr && sc->volume_binding_mode == "WaitForFirstConsumer") {
      if (!pattern) return Nothing("waiting for the scheduler to pick a node (WaitForFirstConsumer)");
      elsewhere = true;
    } else if (node.empty() && !all_nodes) {
      Action a = Fail(failed, "this provisioner runs on every node and the claim names none: add the annotation " +
                                  std::string(ann::kNode) + "=<node name> to the claim, or use a StorageClass with "
                                  "volumeBindingMode WaitForFirstConsumer", false);
      a.once = true;
      return a;
    } else if (!node.empty() && node != cfg.node_name) {
      if (!pattern) return Nothing("for node " + node);
      elsewhere = true;
    }
  }
  if (elsewhere) {
    // Only a volume this node can reattach; anything to tell is told by the claim's node.
    Action a = DecideClaimHere(cfg, claim, sc, existing, node);
    if (a.kind != Action::kProvision) return Nothing(node.empty() ? "waiting for the scheduler to pick a node" : "for node " + node);
    a.only_existing = true;
    a.claim_node = node;
    auto selected = claim.meta.annotations.find(ann::kSelectedNode);
    a.node_by_user = !node.empty() && (selected == claim.meta.annotations.end() || selected->second != node);
    return a;
  }
  return DecideClaimHere(cfg, claim, sc, existing, node);
}

namespace {

Action DecideClaimHere(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing,
                       const std::string& node) {
  using reconcile_detail::Fail;
  using reconcile_detail::Nothing;
  const char* failed = reason::kProvisioningFailed;
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
  if (!cfg.Ours(sc->provisioner))
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
  if (!params.path_pattern.empty()) {
    if (Result<std::string> dir = ExpandPathPattern(params.path_pattern, claim); !dir.ok())
      return Fail(failed, "StorageClass " + sc->meta.name + ": " + dir.status().message() +
                              "; nothing made (create the claim again once it is fixed)", false);
  }
  Action a;
  a.kind = Action::kProvision;
  a.volume = BuildVolume(cfg, claim, *sc, params);
  a.root = params.root;
  a.require_mount = params.require_mount;
  a.request_bytes = *bytes;
  a.check_space = params.check_space;
  a.overcommit = params.overcommit;
  a.quota = params.quota;
  a.dir_name = a.volume.host_path.substr(params.root.size() + 1);
  a.path_pattern = !params.path_pattern.empty();
  a.dir_mode = params.has_mode ? params.mode : cfg.dir_mode;
  a.uid = params.uid;
  a.gid = params.gid;
  return a;
}

}  // namespace

namespace reconcile_detail {

Action AtRecomputedPath(const Config& cfg, const Volume& v, Action::Kind verb) {
  const char* failed = reason::kVolumeFailedDelete;
  auto named = v.meta.annotations.find(ann::kDirName);
  std::string dir = v.has_claim_ref ? VolumeDirName(v.claim_ref.namespace_, v.claim_ref.name, v.meta.name) : "";
  if (named != v.meta.annotations.end()) {
    // Made by a pathPattern: the path the PV records, if it is one a pattern could make.
    if (!IsPatternDir(named->second))
      return Fail(failed, "annotation " + std::string(ann::kDirName) + "=\"" + named->second + "\" is not a path a pathPattern "
                          "makes (names joined by \"/\"); refusing to delete anything");
    if (!v.has_claim_ref) dir = "";
    else dir = named->second;
  }
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
  a.path_pattern = named != v.meta.annotations.end();
  auto on_delete = v.meta.annotations.find(ann::kOnDelete);
  if (on_delete != v.meta.annotations.end()) a.on_delete = on_delete->second;
  auto archive_for = v.meta.annotations.find(ann::kArchiveFor);
  if (archive_for != v.meta.annotations.end()) a.archive_for = archive_for->second;
  auto must_mount = v.meta.annotations.find(ann::kRequireMount);
  a.require_mount = cfg.require_mount || (must_mount != v.meta.annotations.end() && must_mount->second == "true");
  return a;
}

}  // namespace reconcile_detail

namespace {

using reconcile_detail::AtRecomputedPath;
using reconcile_detail::Nothing;

// A volume whose directory is on every node (nodes: all), for this node's instance: join it
// (make the directory here and hold this node's finalizer) while it is in use; once released,
// any node holding a finalizer deletes the PV (the others drop the finalizers of nodes that
// no longer exist, so that it goes even when every holder is gone); once it is being
// deleted, each node removes its directory (Delete policy) and its finalizer, and finalizers
// of nodes that no longer exist are dropped by the others. `sc` (its class, if cached) gives
// the mode and owner of a directory made here.
Action DecideOnEveryNode(const Config& cfg, const Volume& v, const StorageClass* sc) {
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

}  // namespace

Action DecideVolume(const Config& cfg, const Volume& v, const StorageClass* sc) {
  using reconcile_detail::Nothing;
  auto by = v.meta.annotations.find(ann::kProvisionedBy);
  if (by == v.meta.annotations.end() || !cfg.Ours(by->second)) return Nothing("not provisioned by us");
  if (OnAllNodes(v)) return DecideOnEveryNode(cfg, v, sc);
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
