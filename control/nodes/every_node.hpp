// The steps for a volume whose directory is on every node (class parameter nodes: all), as
// this node's instance takes them: join (make the directory here, then hold this node's
// finalizer on the PV), leave (remove the directory here if the policy is Delete, then the
// finalizer), drop the finalizers of nodes whose Node object no longer exists, and tell
// whether any holder is left. The decisions are reconcile.hpp's (DecideVolume); every step is
// idempotent, and finalizer changes carry the PV's resourceVersion, so instances racing on one
// PV never lose a change.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "control/dir_guard.hpp"
#include "decide/reconcile.hpp"
#include "fs/roots.hpp"
#include "kube/k8s.hpp"
#include "kube/recorder.hpp"

class EveryNodeSteps {
 public:
  // Every argument must outlive the steps. Thread-safe.
  EveryNodeSteps(const Config& cfg, Roots* roots, const DirGuard* guard, EventRecorder* recorder)
      : cfg_(cfg), roots_(roots), guard_(guard), recorder_(recorder) {}

  // Makes a.dir_name here, then adds this node's finalizer to `v`. Ok when done (or the PV is
  // gone); an error (logged, and an event on `pv` when the user can act) means retry later.
  // A directory that another PV here names, or one inside or around another's (DirGuard), is
  // not made nor chowned: a ProvisioningFailed Warning names that PV, and it is tried again.
  Status Join(KubeApi& api, const Volume& v, const Action& a, const Involved& pv);

  // If a.remove_dir (the policy is Delete): removes a.dir_name here, or moves it into its
  // root's archive folder, or keeps it, as a.on_delete says (a VolumeArchived or VolumeRetained
  // event saying where it is); then drops this node's finalizer. A directory that another PV
  // here names, or one inside or around another's (DirGuard), is kept as it is, and a
  // VolumeFailedDelete Warning says why (the volume itself may go: its directory stays). Ok when done (or the PV is gone); an error (logged, and an event on `pv` when
  // the user can act) means retry later.
  Status Leave(KubeApi& api, const Volume& v, const Action& a, const Involved& pv);

  // Does a node that holds the volume (its finalizer on it) still exist? Ok with *any when
  // asked; an API error otherwise.
  Status AnyHolderExists(KubeApi& api, const Volume& v, bool* any);

  // Drops the finalizers of other nodes that no longer exist (a NodeDeleted Warning each, once).
  // *others_left: finalizers of existing nodes remain (their instances have not left yet). An
  // API error (logged unless a conflict) means retry later.
  Status PruneGone(KubeApi& api, const Volume& v, const Involved& pv, bool* others_left);

 private:
  Status Archive(const Action& a, std::string* done);
  Status Dir(const Action& a, bool create, const std::function<Status(const Root&, const std::string&)>& step);
  Status Told(const Involved& pv, const char* reason, const std::string& message);

  const Config& cfg_;
  Roots* roots_;
  const DirGuard* guard_;
  EventRecorder* recorder_;
};
