// Expansion: the bodies (expander.hpp has the contracts).
#include "control/expander.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "control/make/volume_dir.hpp"
#include "decide/path_pattern.hpp"

namespace {

// A conflict means a newer claim is on its way through the watch: retried then, quietly.
Expander::Next Quiet(const std::string& key, const Status& s) {
  if (s.code() == Status::kNotFound) return Expander::Next::kDone;  // the claim is gone
  if (s.code() != Status::kConflict) LogWarn("claim " + key + ": " + s.message());
  return Expander::Next::kRetry;
}

}  // namespace

Expander::Expander(const Config& cfg, const Informer<Volume>* volumes, Roots* roots, const SpaceBackend* const* space,
                   Promises* promises, NameSet* space_waiters, EveryNodeSteps* every_node, SharedSteps* shared,
                   EventRecorder* recorder, RootMovedCheck root_moved)
    : cfg_(cfg), volumes_(volumes), roots_(roots), space_(space), promises_(promises), space_waiters_(space_waiters),
      every_node_(every_node), shared_(shared), recorder_(recorder), root_moved_(std::move(root_moved)) {}

Outcome Expander::Sync(WorkerApi& w, const Claim& claim, const StorageClass* sc) {
  std::optional<Volume> v = volumes_->Get(claim.volume_name);
  Expansion e = DecideExpansion(cfg_, claim, sc, v ? &*v : nullptr);
  if (e.kind == Expansion::kNothing) {
    LogDebug(2, "claim " + KeyOf(claim.meta) + ": nothing to expand: " + e.why);
    if (e.held_elsewhere && IsShared(*v)) return AdoptToExpand(w, *v);
    return e.held_elsewhere ? UnlessNoHolder(w, claim, *v) : Outcome::Done();
  }
  if (root_moved_("claim/" + KeyOf(claim.meta))) return Outcome::Retry();
  if (e.kind == Expansion::kFail) {
    LogWarn("claim " + KeyOf(claim.meta) + ": " + e.why);
    recorder_->Warning(InvolvedOf(claim), reason::kVolumeResizeFailed, e.why);
    return Outcome::Retry();
  }
  switch (Expand(w.api, claim, *v, e, InvolvedOf(claim))) {
    case Next::kDone: return Outcome::Done();
    case Next::kNoRoom: space_waiters_->Insert(KeyOf(claim.meta)); return Outcome::Retry();
    default: return Outcome::Retry(w.conn.last_retry_after());
  }
}

// A volume on every node that this node does not hold: its holders expand it. When none of
// them exists any more, nobody can: the user is told (once), and it is looked at again later.
Outcome Expander::UnlessNoHolder(WorkerApi& w, const Claim& claim, const Volume& v) {
  bool any = false;
  if (Status s = every_node_->AnyHolderExists(w.api, v, &any); !s.ok()) {
    LogWarn("claim " + KeyOf(claim.meta) + ": " + s.message());
    return Outcome::Retry(w.conn.last_retry_after());
  }
  if (any) return Outcome::Done();
  const std::string message = "volume " + v.meta.name + " cannot be expanded: no node that holds it (its directory "
                              "made there) exists any more; it is expanded once the provisioner's instance on a "
                              "node makes its directory there";
  LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
  recorder_->WarningOnce(InvolvedOf(claim), reason::kVolumeResizeFailed, message);
  return Outcome::Retry();
}

// A shared volume named as another node's: that node's instance expands it; if that node is
// gone, this one takes the volume over, then expands it (once the watch brings the change).
Outcome Expander::AdoptToExpand(WorkerApi& w, const Volume& v) {
  auto node = v.meta.annotations.find(ann::kNode);
  if (node == v.meta.annotations.end() || node->second.empty()) return Outcome::Done();
  bool taken = false;
  Status s = shared_->Adopt(w.api, v, node->second, InvolvedOf(v), &taken);
  if (!s.ok()) return Outcome::Retry(w.conn.last_retry_after());
  return taken ? Outcome::Retry() : Outcome::Done();
}

Expander::Next Expander::Expand(KubeApi& api, const Claim& claim, const Volume& v, const Expansion& e, const Involved& who) {
  const std::string key = claim.meta.namespace_ + "/" + claim.meta.name;
  std::string resource_version = claim.meta.resource_version;
  if (!claim.resizing) {
    Result<std::string> rv = api.PatchClaimStatus(claim, ResizingPatchJson(resource_version, logging::UtcNow(0), e.size));
    if (!rv.ok()) return Quiet(key, rv.status());
    resource_version = *rv;
    recorder_->Normal(who, reason::kResizing, "Expanding volume " + v.meta.name + " to " + e.size);
  }
  if (!e.volume_done) {
    bool no_room = false;
    if (std::string why = Fits(claim, v, e, &no_room); !why.empty()) {
      LogWarn("claim " + key + ": " + why);
      recorder_->Warning(who, reason::kVolumeResizeFailed, why);
      return no_room ? Next::kNoRoom : Next::kRetry;
    }
    if (Status s = RaiseLimit(v, e); !s.ok()) {
      const std::string why = "cannot raise the size limit of volume " + v.meta.name + " to " + e.size + ": " + s.message();
      LogWarn("claim " + key + ": " + why);
      recorder_->Warning(who, reason::kVolumeResizeFailed, why);
      return Next::kRetry;
    }
    if (Status s = api.SetVolumeCapacity(v, e.size); !s.ok()) {
      promises_->Release(v.meta.name);
      if (s.code() == Status::kConflict) return Quiet(key, s);  // changed meanwhile (another node's instance?)
      LogWarn("claim " + key + ": " + s.message());
      recorder_->Warning(who, reason::kVolumeResizeFailed, "expanding volume " + v.meta.name + " failed: " + s.message());
      return Next::kRetry;
    }
  }
  Result<std::string> done = api.PatchClaimStatus(claim, ResizedPatchJson(resource_version, e.size));
  if (!done.ok()) return Quiet(key, done.status());
  LogInfo("expanded volume " + v.meta.name + " of " + key + " to " + e.size);
  recorder_->Normal(who, reason::kVolumeResizeSuccessful, "Resize volume succeeded");
  return Next::kDone;
}

// "" when the growth fits (or is not checked), else why not. With overcommit only the
// growth must fit in the free space; without, the new size less what the volume already
// uses must fit in the free space less what the other volumes under the root may still
// fill, as for a new volume. The new size is reserved in the same step (Promises::Reserve),
// until the PV's watch event brings it or the PV's update fails. *no_room: the space is what
// is short.
std::string Expander::Fits(const Claim& claim, const Volume& v, const Expansion& e, bool* no_room) {
  Result<Roots::Ref> root = roots_->Get(e.root);
  if (!root.ok()) return "cannot use " + e.root + ": " + root.status().message();
  if (e.require_mount)
    if (Status s = (*root)->FilesystemMounted(); !s.ok()) return "requireMount: " + s.message() + "; not expanded until it is";
  if (!e.check_space) return "";
  Result<uint64_t> available = (*space_)->Available(**root);
  if (!available.ok()) return "cannot tell the free space: " + available.status().message();
  const int64_t used = static_cast<int64_t>(std::min<uint64_t>(promises_->Used(v.meta.name), e.bytes));
  const int64_t want = e.overcommit ? e.bytes - e.from_bytes : e.bytes - used;
  std::string shortfall =
      promises_->Reserve(v.meta.name, e.root, want, static_cast<uint64_t>(e.bytes), *available, e.overcommit);
  if (shortfall.empty()) return "";
  *no_room = true;
  return "cannot grow volume " + v.meta.name + " from " + HumanBytes(static_cast<uint64_t>(e.from_bytes)) + " to " +
         e.size + " under " + e.root + ": " + shortfall + "; " + SpaceAdvice(true, e.overcommit, claim.storage_class_name);
}

// A volume made with its size enforced (class parameter quota) gets the new size as its limit.
Status Expander::RaiseLimit(const Volume& v, const Expansion& e) const {
  auto recorded = v.meta.annotations.find(ann::kQuota);
  if (recorded == v.meta.annotations.end()) return Status::Ok();
  // A directory annotation edited by hand (".archive", "Shop_Data") names no volume's
  // directory: no limit is touched, and the user is told which annotation to put back.
  const std::string dir = VolumeDirOf(v);
  if (dir.empty()) {
    auto named = v.meta.annotations.find(ann::kDirName);
    if (named == v.meta.annotations.end()) return Status::Invalid("cannot work out this volume's directory (claimRef missing)");
    return Status::Invalid("annotation " + std::string(ann::kDirName) + "=\"" + named->second +
                           "\" is not a path a pathPattern makes (names joined by \"/\"); no limit is changed until "
                           "it names the volume's directory again");
  }
  std::string leaf;
  Result<Roots::Ref> root = roots_->Place(e.root, dir, false, &leaf);
  if (!root.ok()) return root.status();
  return GrowVolumeDir(**root, leaf, ParseQuotaId(recorded->second), static_cast<uint64_t>(e.bytes));
}
