// The steps every new volume takes, a clone's as any other's: its root, mounted if it must be,
// and room for it (Prepare); its PersistentVolume, made for the directory (Create); and how a
// failure is told (Failed, and Reschedule in node-aware mode). Used by the provisioner and by
// the clones' part; one instance is shared by every worker.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "base/config.hpp"
#include "control/sync.hpp"
#include "control/make/volume_dir.hpp"
#include "decide/reconcile.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "kube/recorder.hpp"

class VolumeMaker {
 public:
  // Every pointer must outlive the maker. `created`: PVs made (or being made) whose watch event
  // has not come yet (the controller erases each when it comes); `space_waiters`: claims that
  // did not fit, tried again when a volume goes.
  VolumeMaker(const Config& cfg, Roots* roots, const SpaceBackend* space, Promises* promises, NameSet* created,
              NameSet* space_waiters, EventRecorder* recorder, ControllerStats* stats);

  // Before making a volume's directory: its root, mounted if it must be (a.require_mount), and
  // room for it (a.check_space: checked and reserved in one step, Promises::Reserve, so that
  // workers deciding at the same time do not all see the same room; the PV's watch event takes
  // the reservation over). Nothing, with *out set to the directory the volume's is made in (the
  // root, or for a pathPattern's "ns/name" its parent, made if missing: Roots::Place), when the
  // volume can be made; else the outcome,
  // the failure told (Failed): a claim that does not fit is added to the space waiters.
  std::optional<Outcome> Prepare(WorkerApi& w, const Claim& claim, const Action& a, Roots::Ref* out);

  // Creates the PV of a directory made (or copied: `clone_method` says how; "" for a new one)
  // in `root` (where Prepare put it), and says so (a ProvisioningSucceeded event; counted with the time since
  // `start`). A PV of that name made by an earlier attempt for this claim is done; one that is
  // another's is a failure, and the directory, just made and empty, is removed (one reattached
  // stays: made.existed); one another node's instance made for this claim first (node-aware,
  // a pathPattern directory this node reattached) is done, saying that the directory here was
  // not attached. A reattached directory is told (Reattached, with made.found). On a failure
  // the space reserved goes and the claim is told. Thread-safe.
  // What a root's archive folder holds, for the message of a claim that does not fit ("" when
  // nothing; archives.hpp's ArchivesNote). Set before the first Prepare; by default nothing.
  void SetSpaceNote(std::function<std::string(const std::string& root)> note) { space_note_ = std::move(note); }
  // Called when a claim does not fit its root (before its failure is told).
  void SetNoRoom(std::function<void()> no_room) { no_room_ = std::move(no_room); }

  Outcome Create(WorkerApi& w, const Claim& claim, const Action& a, const Root& root, const MadeDir& made,
                 std::chrono::steady_clock::time_point start, const std::string& clone_method);

  // A volume on every node that another node's instance made first, `leaf` made here under
  // `root` for it: joined now, with this node's finalizer (not at the volume's next sync: a
  // claim deleted meanwhile would leave the directory here unremoved). If the volume is
  // released, being deleted or gone, the directory goes if it was just made and is still empty.
  Outcome JoinMade(WorkerApi& w, const Claim& claim, const Volume& pv, const MadeDir& made, const Root& root,
                   const std::string& leaf);

  // Does the directory a.dir_name exist under a.root (no symlink followed, nothing made)?
  // False when its root or parent cannot be opened.
  bool DirExists(const Action& a);

  // A provisioning failure: counted, logged and a ProvisioningFailed Warning; retried.
  // `for_good`: this node cannot serve the claim until someone acts (a root missing, full or
  // read-only): in node-aware mode the scheduler is then asked to pick another node (Reschedule).
  Outcome Failed(WorkerApi& w, const Claim& claim, const std::string& message, bool for_good = false);

  // Provisioning on the claim's selected node failed for good: the event, then the scheduler's
  // selected-node annotation removed so that it picks another node, as Kubernetes' external
  // provisioners do (done when removed, or the claim is gone; retried when the API fails). A
  // claim whose node came from an annotation of ours keeps it (retried).
  Outcome Reschedule(WorkerApi& w, const Claim& claim, const std::string& message);

 private:
  const Config& cfg_;
  Roots* roots_;
  const SpaceBackend* space_;
  Promises* promises_;
  NameSet* created_;
  NameSet* space_waiters_;
  EventRecorder* recorder_;
  ControllerStats* stats_;
  std::function<std::string(const std::string& root)> space_note_;
  std::function<void()> no_room_;
};
