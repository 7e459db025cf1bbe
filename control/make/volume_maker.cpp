// The steps every new volume takes: the bodies (volume_maker.hpp has the contracts).
#include "control/make/volume_maker.hpp"

#include <cstdio>

#include "base/log.hpp"
#include "base/text.hpp"
#include "decide/names.hpp"
#include "decide/path_pattern.hpp"
#include "kube/informer.hpp"

VolumeMaker::VolumeMaker(const Config& cfg, Roots* roots, const SpaceBackend* space, Promises* promises, NameSet* created,
                         NameSet* space_waiters, EventRecorder* recorder, ControllerStats* stats)
    : cfg_(cfg), roots_(roots), space_(space), promises_(promises), created_(created), space_waiters_(space_waiters),
      recorder_(recorder), stats_(stats) {}

std::optional<Outcome> VolumeMaker::Prepare(WorkerApi& w, const Claim& claim, const Action& a, Roots::Ref* out) {
  Result<Roots::Ref> root = roots_->Get(a.root);
  if (!root.ok()) return Failed(w, claim, "cannot use " + a.root + ": " + root.status().message(), true);
  if (a.require_mount) {
    if (Status s = (*root)->FilesystemMounted(); !s.ok())
      return Failed(w, claim, "requireMount: " + s.message() + "; nothing made until it is", true);
  }
  if (a.check_space) {
    Result<uint64_t> available = space_->Available(**root);
    if (!available.ok()) return Failed(w, claim, "cannot tell the free space: " + available.status().message());
    // Checked and reserved in one step: workers deciding at the same time do not all see the
    // same room. The PV's watch event takes the reservation over; a failure below drops it.
    if (std::string shortfall = promises_->Reserve(a.volume.meta.name, a.root, a.request_bytes,
                                                   static_cast<uint64_t>(a.request_bytes), *available, a.overcommit);
        !shortfall.empty()) {
      space_waiters_->Insert(KeyOf(claim.meta));
      if (no_room_) no_room_();
      return Failed(w, claim, "cannot provision " + claim.storage_request + " under " + a.root + ": " + shortfall + "; " +
                                  SpaceAdvice(false, a.overcommit, a.volume.storage_class_name) +
                                  (space_note_ ? space_note_(a.root) : ""),
                    a.source.claim.empty());
    }
  }
  std::string leaf;
  Result<Roots::Ref> parent = roots_->Place(a.root, a.dir_name, true, &leaf);
  if (!parent.ok()) {
    promises_->Release(a.volume.meta.name);
    return Failed(w, claim, "cannot make the directories above " + a.root + "/" + a.dir_name + ": " + parent.status().message());
  }
  *out = *parent;
  return std::nullopt;
}

bool VolumeMaker::DirExists(const Action& a) {
  std::string leaf;
  Result<Roots::Ref> parent = roots_->Place(a.root, a.dir_name, false, &leaf);
  return parent.ok() && fsops_detail::IsDirNoFollow((*parent)->fd(), leaf);
}

Outcome VolumeMaker::JoinMade(WorkerApi& w, const Claim& claim, const Volume& pv, const MadeDir& made, const Root& root,
                              const std::string& leaf) {
  const std::string mine = NodeFinalizer(cfg_.node_name);
  if (HasFinalizer(pv.meta, mine)) return Outcome::Done();
  if (!pv.meta.deleting) {
    std::vector<std::string> finalizers = pv.meta.finalizers;
    finalizers.push_back(mine);
    if (w.api.SetVolumeFinalizers(pv, finalizers).ok()) {
      LogInfo("volume " + pv.meta.name + ": made " + root.path() + "/" + leaf + " on node " + cfg_.node_name);
      return Outcome::Done();
    }
  }
  // Changed meanwhile: the volume's sync joins it. Released, being deleted (no finalizer may
  // be added then) or gone: nothing will remove a directory here, so the one just made goes
  // if empty.
  Result<Volume> now = w.api.GetVolume(pv.meta.name);
  const bool released = now.ok() && (now->phase == "Released" || now->phase == "Failed");
  if (now.ok() && !now->meta.deleting && !released && now->meta.uid == pv.meta.uid) return Outcome::Done();
  if (!made.existed)
    if (Status r = root.RemoveIfEmpty(leaf); !r.ok()) LogWarn("claim " + KeyOf(claim.meta) + ": " + r.message());
  return Outcome::Done();
}

Outcome VolumeMaker::Create(WorkerApi& w, const Claim& claim, const Action& a, const Root& root, const MadeDir& made,
                            std::chrono::steady_clock::time_point start, const std::string& clone_method) {
  const std::string path = a.root + "/" + a.dir_name;
  Volume pv = a.volume;
  if (made.quota.method != QuotaMethod::kNone) pv.meta.annotations[ann::kQuota] = Describe(made.quota);
  if (!clone_method.empty()) pv.meta.annotations[ann::kCloneMethod] = clone_method;
  // Before the create, so that its watch event, which another worker may handle, finds it.
  created_->Insert(a.volume.meta.name);
  Status s = w.api.CreateVolume(pv);
  if (s.code() == Status::kConflict) {
    // Made by an earlier attempt (a crash, a retry)? Then it is ours and done. Anything else
    // of that name is not this claim's volume: our directory, just made and empty, goes.
    Result<Volume> got = w.api.GetVolume(a.volume.meta.name);
    if (got.ok() && IsVolumeWeMade(*got, a.volume)) {
      // Another node's instance made this volume on every node: ours joins it (its directory
      // here is made) with this node's finalizer, at once. A shared volume: made by another
      // instance, in the same directory; nothing more to do (and nothing to say).
      if (OnAllNodes(a.volume)) return JoinMade(w, claim, *got, made, root, LeafName(a.dir_name));
      if (IsShared(a.volume)) return Outcome::Done();
      s = Status::Ok();
    } else if (got.ok()) {
      created_->Erase(a.volume.meta.name);
      promises_->Release(a.volume.meta.name);
      if (!made.existed)
        if (Status r = root.RemoveIfEmpty(LeafName(a.dir_name)); !r.ok()) LogWarn("claim " + KeyOf(claim.meta) + ": " + r.message());
      if (got->claim_ref.uid == a.volume.claim_ref.uid) {  // another node's instance made it first
        auto on = got->meta.annotations.find(ann::kNode);
        const std::string other = on == got->meta.annotations.end() ? "another node" : "node " + on->second;
        LogInfo("claim " + KeyOf(claim.meta) + ": " + other + " made its volume first");
        if (made.existed)
          recorder_->WarningOnce(InvolvedOf(claim), reason::kProvisioningFailed,
                                 other + " made this claim's volume first: the directory " + path + " on node " +
                                     cfg_.node_name + " (" + made.found + ") was not attached, and stays there");
        return Outcome::Done();
      }
      return Failed(w, claim, "a PersistentVolume named " + a.volume.meta.name +
                                  " already exists and is not the one this provisioner made for this claim "
                                  "(claim uid \"" + got->claim_ref.uid + "\", path \"" + got->host_path +
                                  "\"); delete it if it is stale");
    } else {
      s = got.status();
    }
  }
  if (!s.ok()) {
    created_->Erase(a.volume.meta.name);
    promises_->Release(a.volume.meta.name);
    std::string hint = s.code() == Status::kForbidden ? "; the provisioner's RBAC must allow creating persistentvolumes" : "";
    Outcome o = Failed(w, claim, "creating PersistentVolume " + a.volume.meta.name + " failed: " + s.message() + hint);
    o.retry_after = w.conn.last_retry_after();
    return o;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_->provisioned++;
  stats_->provision_seconds.Observe(secs);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f ms", secs * 1000);
  const std::string limit = made.quota.method == QuotaMethod::kNone ? "" : ", size enforced (" + Describe(made.quota) + ")";
  const std::string copy = clone_method.empty() ? "" : ", a copy of " + a.source.claim + " (" + clone_method + ")";
  LogInfo("provisioned " + KeyOf(claim.meta) + " -> " + a.volume.meta.name + " at " + path + limit + copy + " (" + ms + ")");
  // Reservations are per process: each instance counts the PVs the others made, not the ones
  // they are making at the same moment.
  const std::string shared = IsShared(a.volume) && a.check_space && !a.overcommit
                                 ? "; overcommit \"false\" on a shared root: claims that other instances provision at "
                                   "the same moment are not counted against this one"
                                 : "";
  recorder_->Normal(InvolvedOf(claim), reason::kProvisioningSucceeded,
                    "Successfully provisioned volume " + a.volume.meta.name + " at " + path + limit + copy + shared);
  if (made.existed)
    recorder_->Normal(InvolvedOf(claim), reason::kReattached,
                      "Reattached the existing directory " + path + " (" + made.found + ") instead of making a new one" +
                          (cfg_.node_name.empty() ? "" : " on node " + cfg_.node_name) + "; its owner and mode set as the class says" +
                          (made.quota.method == QuotaMethod::kNone ? ""
                           : made.limit > static_cast<uint64_t>(a.request_bytes)
                               ? "; its limit set to what it holds, " + HumanBytes(made.limit) + ", above the " + claim.storage_request + " asked"
                               : "") +
                          (made.files_uncounted ? "; files that were there before it had a project ID of its own are not counted against its limit" : ""));
  if (!made.not_enforced.empty())
    recorder_->Normal(InvolvedOf(claim), reason::kSizeNotEnforced,
                      "the size " + claim.storage_request + " is not enforced (class parameter quota: \"auto\"): " + made.not_enforced);
  return Outcome::Done();
}

Outcome VolumeMaker::Failed(WorkerApi& w, const Claim& claim, const std::string& message, bool for_good) {
  if (for_good && !cfg_.node_name.empty()) return Reschedule(w, claim, message);
  stats_->provision_failed++;
  LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
  recorder_->Warning(InvolvedOf(claim), reason::kProvisioningFailed, message);
  return Outcome::Retry();
}

Outcome VolumeMaker::Reschedule(WorkerApi& w, const Claim& claim, const std::string& message) {
  stats_->provision_failed++;
  auto selected = claim.meta.annotations.find(ann::kSelectedNode);
  const bool scheduled = selected != claim.meta.annotations.end() && selected->second == cfg_.node_name;
  const std::string full = message + (scheduled ? "; asking the scheduler for another node" : "");
  LogWarn("claim " + KeyOf(claim.meta) + ": " + full);
  recorder_->Warning(InvolvedOf(claim), reason::kProvisioningFailed, full);
  if (!scheduled) return Outcome::Retry();
  Status s = w.api.RemoveClaimAnnotation(claim, ann::kSelectedNode);
  if (s.ok() || s.code() == Status::kNotFound) return Outcome::Done();
  LogWarn("claim " + KeyOf(claim.meta) + ": " + s.message());
  return Outcome::Retry(w.conn.last_retry_after());
}
