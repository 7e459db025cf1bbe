// A clone, the controller's side (cloner.hpp is the copier): what the decision needs of the
// clone's source, as the caches hold it (Decide), the clones that wait for their source to bind
// (looked at again when it changes: SourceChanged), and a clone's provisioning: its copy is
// handed to the cloner, which wakes the claim when it ends; then the PV is made as for any
// volume (VolumeMaker). One instance is shared by every worker.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "base/config.hpp"
#include "control/clone/cloner.hpp"
#include "control/sync.hpp"
#include "control/make/volume_maker.hpp"
#include "decide/clone.hpp"
#include "fs/roots.hpp"
#include "fs/space.hpp"
#include "kube/informer.hpp"
#include "kube/recorder.hpp"

class Cloning {
 public:
  // The source volume's use as last measured (0: not known), for the copy's messages.
  using UsedBytes = std::function<uint64_t(const std::string& volume)>;
  // Queues a key ("claim/<ns>/<name>") for a worker.
  using Wake = std::function<void(const std::string& key)>;

  // Every pointer must outlive this. `created`, `space_waiters`: as VolumeMaker's.
  Cloning(const Config& cfg, const Informer<Claim>* claims, const Informer<Volume>* volumes, Roots* roots, Cloner* cloner,
          VolumeMaker* maker, Promises* promises, const NameSet* created, NameSet* space_waiters, EventRecorder* recorder,
          ControllerStats* stats, UsedBytes used_bytes, Wake wake);

  // DecideClone for the clone `claim` (of key `key`; its volume to be `pv_name`, `existing`
  // if the cache holds it), with its source as the caches hold it now; node-aware, a source
  // (or its volume) the caches do not hold is read through `w` (it may be another node's,
  // which this instance does not watch: that is how it knows to leave the clone to that node).
  // A clone that may yet be
  // made (a retried kFail) waits for its source: it is looked at again when the source, or the
  // source's volume, changes (SourceChanged), or at once when either changed while it was read.
  Action Decide(WorkerApi& w, const std::string& key, const Claim& claim, const StorageClass* sc, const Volume* existing,
                const std::string& pv_name);

  // The claim of key `source_key`, or its volume, changed: the clones waiting for it are
  // queued again (and wait no more).
  void SourceChanged(const std::string& source_key);

  // Provisions the clone `claim` as `a` (kProvision with a.source set) asks: a copy not yet
  // started is handed to the cloner (done: the copy wakes the claim when it ends); a copy
  // running is done for now; a finished one gets its PV (VolumeMaker::Create). A directory
  // already whole at the volume's path (copied before a restart) gets its PV too. A failed
  // copy (it removed what it had copied) is told, and retried, except where only a claim made
  // again can help (EDQUOT); it is never sent to another node: a clone is made on its source's.
  Outcome Provision(WorkerApi& w, const Claim& claim, const Action& a);

  // Is volume `pv`'s copy queued, running, or done and not yet told (Cloner::Has)?
  bool Copying(const std::string& pv) const { return cloner_->Has(pv); }

 private:
  Outcome Failed(const Claim& claim, const Action& a, const Status& s);
  // Reads the source claim and its volume that the caches miss (node-aware); true if it read.
  bool ReadSource(WorkerApi& w, const std::string& source_key, std::optional<Claim>* claim, std::optional<Volume>* volume);
  // What a clone's sync read of its source: the claim's and its volume's resourceVersions ...
  static std::string SourceSeen(const std::optional<Claim>& c, const std::optional<Volume>& v);
  // ... and what the caches hold of it now.
  std::string SourceSeen(const std::string& source_key) const;

  const Config& cfg_;
  const Informer<Claim>* claims_;
  const Informer<Volume>* volumes_;
  Roots* roots_;
  Cloner* cloner_;
  VolumeMaker* maker_;
  Promises* promises_;
  const NameSet* created_;
  NameSet* space_waiters_;
  EventRecorder* recorder_;
  ControllerStats* stats_;
  UsedBytes used_bytes_;
  Wake wake_;
  Waiters waiters_;  // clones waiting for their source to bind, by the source's key
};
