// Expansion: a bound claim that asks for more than it has (Sync), and the steps of an expansion
// that expansion.hpp decided, as an external resizer takes them (Expand): mark the claim
// Resizing (a Normal event), check that the growth fits and reserve it, set the PV's
// spec.capacity, then set the claim's status.capacity and take the resize conditions out
// (VolumeResizeSuccessful). A failure is a VolumeResizeFailed Warning and is retried; the claim
// stays Resizing meanwhile, as with the external resizer. Each step is idempotent and the
// claim's changes carry its resourceVersion, so a retry or a second instance never records a
// size twice. One instance is shared by every worker.
#pragma once
#include <string>

#include "base/config.hpp"
#include "control/nodes/every_node.hpp"
#include "control/nodes/shared.hpp"
#include "control/sync.hpp"
#include "decide/expansion.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "kube/informer.hpp"
#include "kube/k8s.hpp"
#include "kube/recorder.hpp"

class Expander {
 public:
  // Every pointer must outlive the expander; *space is read at each check. `space_waiters`:
  // claims that did not fit, tried again when a volume goes.
  Expander(const Config& cfg, const Informer<Volume>* volumes, Roots* roots, const SpaceBackend* const* space,
           Promises* promises, NameSet* space_waiters, EveryNodeSteps* every_node, SharedSteps* shared,
           EventRecorder* recorder, RootMovedCheck root_moved);

  // A bound claim (of class `sc`; null: none or not in the cache): expands its volume if it
  // asks for more and the volume is ours (DecideExpansion). Done when there is nothing to
  // expand or it is expanded; retried after a failure (told as VolumeResizeFailed), and when
  // PV_DIR moved. A claim whose growth does not fit is also tried again when a volume goes.
  // A volume on every node that this node does not hold is expanded by its holders: when none
  // exists any more, the user is told (once). A shared volume named as another node's is
  // expanded by that node's instance; if that node is gone, this one takes it over first.
  // A volume with an enforced size whose directory annotation (kDirName) is not a path a
  // pathPattern makes (edited by hand) is not grown: the Warning names the annotation.
  Outcome Sync(WorkerApi& w, const Claim& claim, const StorageClass* sc);

  enum class Next { kDone, kRetry, kNoRoom };  // kNoRoom: retried, and at once when space frees up

  // Takes the steps of expansion `e` of claim `claim`'s volume `v`; events go to `who`. kDone
  // when the claim records the new size (or is gone); kRetry after a failure (a conflict
  // quietly: a newer claim is on its way through the watch); kNoRoom when the growth does not
  // fit. A reservation made for the growth is dropped when the PV's update fails.
  Next Expand(KubeApi& api, const Claim& claim, const Volume& v, const Expansion& e, const Involved& who);

 private:
  Outcome UnlessNoHolder(WorkerApi& w, const Claim& claim, const Volume& v);
  Outcome AdoptToExpand(WorkerApi& w, const Volume& v);
  std::string Fits(const Claim& claim, const Volume& v, const Expansion& e, bool* no_room);
  Status RaiseLimit(const Volume& v, const Expansion& e) const;

  const Config& cfg_;
  const Informer<Volume>* volumes_;
  Roots* roots_;
  const SpaceBackend* const* space_;
  Promises* promises_;
  NameSet* space_waiters_;
  EveryNodeSteps* every_node_;
  SharedSteps* shared_;
  EventRecorder* recorder_;
  RootMovedCheck root_moved_;
};
