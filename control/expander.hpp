// The steps of a volume expansion that expansion.hpp decided, as an external resizer takes
// them: mark the claim Resizing (a Normal event), check that the growth fits and reserve it,
// set the PV's spec.capacity, then set the claim's status.capacity and take the resize
// conditions out (VolumeResizeSuccessful). A failure is a VolumeResizeFailed Warning and is
// retried; the claim stays Resizing meanwhile, as with the external resizer. Each step is
// idempotent and the claim's changes carry its resourceVersion, so a retry or a second
// instance never records a size twice.
#pragma once
#include <algorithm>
#include <string>

#include "decide/expansion.hpp"
#include "kube/k8s.hpp"
#include "base/log.hpp"
#include "kube/recorder.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "control/volume_dir.hpp"

class Expander {
 public:
  Expander(Roots* roots, const SpaceBackend* const* space, Promises* promises, EventRecorder* recorder)
      : roots_(roots), space_(space), promises_(promises), recorder_(recorder) {}

  enum class Next { kDone, kRetry, kNoRoom };  // kNoRoom: retried, and at once when space frees up

  Next Expand(KubeApi& api, const Claim& claim, const Volume& v, const Expansion& e, const Involved& who) {
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

 private:
  // "" when the growth fits (or is not checked), else why not. With overcommit only the
  // growth must fit in the free space; without, the new size less what the volume already
  // uses must fit in the free space less what the other volumes under the root may still
  // fill, as for a new volume. The new size is reserved in the same step (Promises::Reserve),
  // until the PV's watch event brings it or the PV's update fails. *no_room: the space is what
  // is short.
  std::string Fits(const Claim& claim, const Volume& v, const Expansion& e, bool* no_room) {
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
  Status RaiseLimit(const Volume& v, const Expansion& e) const {
    auto recorded = v.meta.annotations.find(ann::kQuota);
    if (recorded == v.meta.annotations.end()) return Status::Ok();
    Result<Roots::Ref> root = roots_->Get(e.root);
    if (!root.ok()) return root.status();
    const std::string dir = VolumeDirName(v.claim_ref.namespace_, v.claim_ref.name, v.meta.name);
    return GrowVolumeDir(**root, dir, ParseQuotaId(recorded->second), static_cast<uint64_t>(e.bytes));
  }

  // A conflict means a newer claim is on its way through the watch: retried then, quietly.
  static Next Quiet(const std::string& key, const Status& s) {
    if (s.code() == Status::kNotFound) return Next::kDone;  // the claim is gone
    if (s.code() != Status::kConflict) LogWarn("claim " + key + ": " + s.message());
    return Next::kRetry;
  }

  Roots* roots_;
  const SpaceBackend* const* space_;
  Promises* promises_;
  EventRecorder* recorder_;
};
