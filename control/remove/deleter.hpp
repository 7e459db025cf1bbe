// The key of a volume: what DecideVolume asks of it, done. Mostly its removal: a released
// volume of ours loses its directory (with the limit it was made under; or, as its class's
// onDelete says, the directory is moved to its root's archive folder without a limit, or kept
// where it is), then our finalizer, then its PV (its uid checked). Also the other steps of a volume: a finalizer dropped, a
// volume on every node joined or left by this node (every_node.hpp), the finalizers of gone
// nodes pruned, a shared volume taken over from a gone node (shared.hpp), a released volume on
// every node deleted as an object. One instance is shared by every worker.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "base/config.hpp"
#include "control/dir_guard.hpp"
#include "control/remove/archiving.hpp"
#include "control/nodes/every_node.hpp"
#include "control/nodes/shared.hpp"
#include "control/sync.hpp"
#include "decide/reconcile.hpp"
#include "fs/roots.hpp"
#include "kube/informer.hpp"
#include "kube/recorder.hpp"

class Deleter {
 public:
  // Is a clone's copy reading volume `name` (queued or running)? Its removal then waits; the
  // copy wakes the volume's key when it ends.
  using BeingCopied = std::function<bool(const std::string& name)>;

  // Every pointer must outlive the deleter. A removal stops early once *cancel is set (the
  // controller halts), leaving the rest for whoever acts next.
  Deleter(const Config& cfg, const Informer<Volume>* volumes, const DirGuard* guard, const Informer<StorageClass>* classes, Roots* roots,
          EveryNodeSteps* every_node, SharedSteps* shared, EventRecorder* recorder, ControllerStats* stats,
          BeingCopied being_copied, const std::atomic<bool>* cancel, RootMovedCheck root_moved);

  // Syncs the volume `name` as the cache holds it. Done when there is nothing to do, or it is
  // done (a volume it deleted and the cache still holds: done, until the watch catches up; a
  // volume gone from the cache: forgotten). Retried after a failure (logged; told on the volume
  // where the user can act: VolumeFailedDelete), while a copy reads it, when stopped early, and
  // when PV_DIR moved. Never removes or moves a directory that another PV names, or one inside
  // or around another PV's (DirGuard): VolumeFailedDelete naming that PV, retried.
  Outcome Sync(WorkerApi& w, const std::string& name);

 private:
  Outcome DropFinalizer(WorkerApi& w, const Volume& v);
  Outcome Delete(WorkerApi& w, const Volume& v, const Action& a);
  Outcome DropVolume(WorkerApi& w, const Volume& v, const std::string& done);
  std::optional<Outcome> Archive(const Volume& v, const Action& a, const Root& root, const Root* parent,
                                 const std::string& leaf, const QuotaId& quota);
  Outcome DeleteFailed(const Volume& v, const std::string& message);
  Outcome Deleted(const Volume& v, const std::string& done, std::chrono::steady_clock::time_point start);

  const Config& cfg_;
  const Informer<Volume>* volumes_;
  const DirGuard* guard_;
  const Informer<StorageClass>* classes_;
  Roots* roots_;
  EveryNodeSteps* every_node_;
  SharedSteps* shared_;
  EventRecorder* recorder_;
  ControllerStats* stats_;
  BeingCopied being_copied_;
  const std::atomic<bool>* cancel_;
  RootMovedCheck root_moved_;
  NameSet deleted_;  // PVs deleted that the cache still holds
};
