// The key of a claim that waits for a volume: what to do is asked of the pure decisions
// (DecideClone, which is DecideClaim for a claim that is no clone), then done: a failure the
// user can act on is told on the claim; a new volume gets its directory (made with its size
// limit, volume_dir.hpp), then its PV (VolumeMaker); a clone is handed to the clones' part.
// One instance is shared by every worker.
#pragma once
#include <string>

#include "base/config.hpp"
#include "control/clone/cloning.hpp"
#include "control/make/pattern_dirs.hpp"
#include "control/sync.hpp"
#include "control/make/volume_maker.hpp"
#include "fs/space.hpp"
#include "kube/informer.hpp"
#include "kube/recorder.hpp"

class Provisioner {
 public:
  // Every pointer must outlive the provisioner. `created`: as VolumeMaker's. `cloning` may be
  // null where no claim is a clone (a clone is then decided as one whose source is not found).
  // `dirs`: who holds each pathPattern directory.
  Provisioner(const Config& cfg, const Informer<Volume>* volumes, Promises* promises, const NameSet* created,
              VolumeMaker* maker, Cloning* cloning, PatternDirs* dirs, EventRecorder* recorder, ControllerStats* stats,
              RootMovedCheck root_moved);

  // Syncs the claim of key `key` ("namespace/name"), not bound (its volumeName empty), of
  // class `sc` (null: none, or not in the cache). Done when there is nothing to do, when its
  // volume is made (or, made by this instance, on its way through the watch), or for a failure
  // that only the user can mend (told once); retried after a failure that may pass (told each
  // time), and when PV_DIR moved (`root_moved`).
  Outcome Sync(WorkerApi& w, const std::string& key, const Claim& claim, const StorageClass* sc);

 private:
  // Makes the directory, then creates the PV.
  Outcome Provision(WorkerApi& w, const Claim& claim, const Action& a);
  // A pathPattern's volume: its directory checked to be free (PatternDirs), reattached where
  // it exists; node-aware, made by the node that has it (a.only_existing).
  Outcome ProvisionPattern(WorkerApi& w, const Claim& claim, const Action& a);

  const Config& cfg_;
  const Informer<Volume>* volumes_;
  Promises* promises_;
  const NameSet* created_;
  VolumeMaker* maker_;
  Cloning* cloning_;
  PatternDirs* dirs_;
  EventRecorder* recorder_;
  ControllerStats* stats_;
  RootMovedCheck root_moved_;
};
