// The key of a claim that waits for a volume: the bodies (provisioner.hpp has the contracts).
#include "control/provisioner.hpp"

#include <cerrno>

#include "base/log.hpp"
#include "control/volume_dir.hpp"
#include "decide/clone.hpp"

Provisioner::Provisioner(const Config& cfg, const Informer<Volume>* volumes, Promises* promises, const NameSet* created,
                         VolumeMaker* maker, Cloning* cloning, EventRecorder* recorder, ControllerStats* stats,
                         RootMovedCheck root_moved)
    : cfg_(cfg), volumes_(volumes), promises_(promises), created_(created), maker_(maker), cloning_(cloning),
      recorder_(recorder), stats_(stats), root_moved_(std::move(root_moved)) {}

Outcome Provisioner::Sync(WorkerApi& w, const std::string& key, const Claim& claim, const StorageClass* sc) {
  std::string pv_name = VolumeNameFor(claim);
  // Asked before the cache: the volume's watch event puts it in the cache, then forgets that
  // it was made. Asked the other way round, an event in between would make both say "no".
  const bool made = created_->Contains(pv_name);
  std::optional<Volume> existing = volumes_->Get(pv_name);
  if (!existing && made) return Outcome::Done();  // made it; its watch event is on the way
  Action a = cloning_ ? cloning_->Decide(key, claim, sc, existing ? &*existing : nullptr, pv_name)
                      : DecideClone(cfg_, claim, sc, existing ? &*existing : nullptr, {});
  if (a.kind != Action::kNothing && root_moved_("claim/" + key)) return Outcome::Retry();
  switch (a.kind) {
    case Action::kNothing:
      LogDebug(2, "claim " + key + ": nothing to do: " + a.why);
      return Outcome::Done();
    case Action::kFail:
      if (a.once) {
        LogDebug(1, "claim " + key + ": " + a.message);
        if (a.normal) recorder_->NormalOnce(InvolvedOf(claim), a.reason, a.message);
        if (!a.normal) recorder_->WarningOnce(InvolvedOf(claim), a.reason, a.message);
        return Outcome::Done();
      }
      if (a.normal) {
        LogDebug(1, "claim " + key + ": " + a.message);
        recorder_->Normal(InvolvedOf(claim), a.reason, a.message);
        return Outcome::Retry();
      }
      if (a.reschedule) return maker_->Reschedule(w, claim, a.message);
      stats_->provision_failed++;
      LogWarn("claim " + key + ": " + a.message);
      recorder_->Warning(InvolvedOf(claim), a.reason, a.message);
      return a.retry ? Outcome::Retry() : Outcome::Done();
    case Action::kProvision:
      return a.source.claim.empty() || !cloning_ ? Provision(w, claim, a) : cloning_->Provision(w, claim, a);
    default:
      return Outcome::Done();
  }
}

Outcome Provisioner::Provision(WorkerApi& w, const Claim& claim, const Action& a) {
  auto start = std::chrono::steady_clock::now();
  std::string path = a.root + "/" + a.dir_name;
  // A shared volume another instance made (this cache behind): its directory is left alone.
  // (Two instances can still both get here at once: each then makes the same new, empty
  // directory with the same mode and owner, and one PV create succeeds.)
  if (IsShared(a.volume)) {
    Result<Volume> got = w.api.GetVolume(a.volume.meta.name);
    if (got.ok() && IsVolumeWeMade(*got, a.volume)) return Outcome::Done();
  }
  Roots::Ref root;
  if (std::optional<Outcome> o = maker_->Prepare(w, claim, a, &root)) return *o;
  Result<MadeDir> made = MakeVolumeDir(*root, a);
  if (!made.ok()) {
    const Status& s = made.status();
    promises_->Release(a.volume.meta.name);
    const std::string hint = FixHint(s);
    const int e = s.sys_errno();
    return maker_->Failed(w, claim, "cannot make directory " + path + ": " + s.message() + (hint.empty() ? "" : "; " + hint),
                          s.code() == Status::kInvalid || e == ENOENT || e == ENOSPC || e == EDQUOT || e == EROFS ||
                              e == ENOTDIR);
  }
  return maker_->Create(w, claim, a, *root, *made, start, "");
}
