// Clones, the decision: the bodies (clone.hpp has the contracts).
#include "decide/clone.hpp"

#include "base/text.hpp"

std::string CloneTempFor(const std::string& dir) {
  const std::string prefix = ".clone-";
  return dir.size() == prefix.size() + 40 && dir.compare(0, prefix.size(), prefix) == 0 ? dir.substr(prefix.size()) : "";
}

std::string CloneSourceKey(const Claim& claim) {
  const DataSource& ds = claim.data_source;
  if (!claim.has_data_source || ds.kind != "PersistentVolumeClaim" || !ds.api_group.empty() || ds.name.empty()) return "";
  return claim.meta.namespace_ + "/" + ds.name;
}

namespace {

std::string Annotation(const ObjectMeta& m, const char* key) {
  auto it = m.annotations.find(key);
  return it == m.annotations.end() ? "" : it->second;
}

// A refusal that every instance of the DaemonSet may reach (the source is not where one of
// them could act yet): said once, whoever says it.
Action Once(Action a) {
  a.once = true;
  return a;
}

// Why the clone is not made yet: a Normal event when its source is on its way, else a Warning.
Action NotYet(const std::string& problem, bool retry, bool pending) {
  if (!pending) return reconcile_detail::Fail(reason::kProvisioningFailed, problem, retry);
  Action a = reconcile_detail::Fail(reason::kWaitForCloneSource, problem, true);
  a.normal = true;
  return a;
}

// Why the source cannot be cloned (yet), or "" when it can. *retry: waiting may help;
// *pending: the source is on its way (not Bound yet), nothing is wrong.
std::string SourceProblem(const Config& cfg, const std::string& key, const CloneSource& src, bool* retry,
                                 bool* pending) {
  const std::string the = "the claim to clone, " + key + ", ";
  *retry = true;
  *pending = false;
  if (src.claim == nullptr) return the + "does not exist: this claim waits for it (or create this claim again with another dataSource)";
  *retry = false;
  if (src.claim->meta.deleting) return the + "is being deleted: create this claim again with another dataSource";
  *retry = *pending = true;
  if (src.claim->volume_name.empty() || src.claim->phase != "Bound")
    return the + "is not Bound yet (phase " + Or(src.claim->phase, "Pending") + "): this claim waits for it";
  if (src.volume == nullptr) return the + "names volume " + src.claim->volume_name + ", which is not found: this claim waits for it";
  *retry = *pending = false;
  const std::string by = Annotation(src.volume->meta, ann::kProvisionedBy);
  if (!cfg.Ours(by))
    return the + "has volume " + src.volume->meta.name + ", which " + (by.empty() ? "no provisioner made" : "was made by " + by) +
           ": " + cfg.provisioner_name + " clones only volumes it made";
  if (src.volume->claim_ref.uid != src.claim->meta.uid)
    return the + "has volume " + src.volume->meta.name + ", which belongs to another claim; refusing to copy it";
  if (OnAllNodes(*src.volume))
    return the + "has a volume on every node (class parameter nodes: all), a different directory on each: cloning it is "
                 "not supported";
  return "";
}

}  // namespace

Action DecideClone(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing,
                   const CloneSource& src) {
  using reconcile_detail::Fail;
  using reconcile_detail::Nothing;
  if (!claim.has_data_source || StageOf(cfg, claim) != ClaimStage::kWaitsForVolume)
    return DecideClaim(cfg, claim, sc, existing);
  const char* failed = reason::kProvisioningFailed;
  const std::string key = CloneSourceKey(claim);
  if (key.empty()) {
    const DataSource& ds = claim.data_source;
    return Once(Fail(failed, "spec.dataSource names " + Or(ds.kind, "no kind") +
                                               (ds.api_group.empty() ? "" : "." + ds.api_group) + " \"" + ds.name +
                                               "\": this provisioner clones only claims (kind PersistentVolumeClaim; "
                                               "snapshots and other sources are not supported); create the claim again "
                                               "without dataSource, or naming a claim",
                                   false));
  }
  // Made already (its PV waits for the binding): whatever became of the source since.
  if (existing != nullptr && existing->claim_ref.uid == claim.meta.uid)
    return Nothing("volume " + existing->meta.name + " exists; waiting for binding");
  Claim plain = claim;  // the rest is decided as for any claim
  plain.has_data_source = false;
  if (src.copied) {  // whatever became of the source since, the copy is this instance's
    if (!cfg.node_name.empty()) plain.meta.annotations[ann::kNode] = cfg.node_name;
    Action a = DecideClaim(cfg, plain, sc, existing);
    a.source.claim = key;
    if (a.kind == Action::kProvision) a.volume.meta.annotations[ann::kClonedFrom] = key;
    return a;
  }
  if (!cfg.node_name.empty()) {
    // Node-aware: the copy is made where the source's data is, by that node's instance.
    const std::string src_node = src.volume ? Annotation(src.volume->meta, ann::kNode) : "";
    const std::string node = ClaimNode(claim);
    const bool wait_for_pod = sc != nullptr && sc->volume_binding_mode == "WaitForFirstConsumer";
    if (src_node.empty()) {
      // Not known where yet (no source, not bound, not ours): one instance says why.
      bool retry = true, pending = false;
      std::string problem = SourceProblem(cfg, key, src, &retry, &pending);
      if (problem.empty()) problem = "the claim to clone, " + key + ", has volume " + src.volume->meta.name + ", which names no node";
      return Once(NotYet(problem, retry, pending));
    }
    if (node.empty() && wait_for_pod) return Nothing("waiting for the scheduler to pick a node (WaitForFirstConsumer)");
    if (src_node != cfg.node_name && (node.empty() || node == src_node)) return Nothing("a clone of a volume on node " + src_node);
    if (!node.empty() && node != cfg.node_name) return Nothing("for node " + node);
    if (!node.empty() && node != src_node) {
      Action a = Fail(failed, "this claim clones " + key + ", whose volume is on node " + src_node +
                                  ": a clone is made where its source's data is, so the pod that uses it must run on node " +
                                  src_node + " (for example nodeSelector kubernetes.io/hostname: " + src_node +
                                  "); the scheduler picked node " + node);
      a.reschedule = true;
      return a;
    }
    plain.meta.annotations[ann::kNode] = cfg.node_name;  // an Immediate clone: on the source's node, this one
  }
  bool retry = true, pending = false;
  if (std::string problem = SourceProblem(cfg, key, src, &retry, &pending); !problem.empty())
    return NotYet(problem, retry, pending);
  Action at = reconcile_detail::AtRecomputedPath(cfg, *src.volume, Action::kNothing);
  if (at.kind == Action::kFail) {
    const std::string root = Or(Annotation(src.volume->meta, ann::kPvDir), cfg.pv_dir.c_str());
    return Fail(failed, IsConfiguredRoot(cfg, root)
                            ? "the volume of the claim to clone, " + key + ", is not where this provisioner put it (" +
                                  src.volume->host_path + "); refusing to read it"
                            : "the volume of the claim to clone, " + key + ", is under " + root +
                                  ", which this instance does not serve (PV_DIR, ALLOWED_PV_DIRS): add it to "
                                  "ALLOWED_PV_DIRS and mount it into the provisioner's pod, or clone another claim",
                false);
  }
  Action a = DecideClaim(cfg, plain, sc, existing);
  if (a.kind != Action::kProvision) return a;
  if (OnAllNodes(a.volume))
    return Fail(failed, "StorageClass " + sc->meta.name + " puts a directory on every node (nodes: all): a clone cannot be "
                        "made there; clone into a class with one directory",
                false);
  if (src.volume->capacity_bytes > a.request_bytes)
    return Fail(failed, "this claim asks for " + claim.storage_request + ", less than the capacity of the claim it clones, " +
                            key + " (" + HumanBytes(static_cast<uint64_t>(src.volume->capacity_bytes)) +
                            "): a clone is at least as large as its source; create it again asking for at least that",
                false);
  a.source = {key, src.volume->meta.name, at.root, at.dir_name, at.require_mount,
              Annotation(src.volume->meta, ann::kQuota)};
  a.volume.meta.annotations[ann::kClonedFrom] = key;
  return a;
}

