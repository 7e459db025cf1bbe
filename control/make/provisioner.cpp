// The key of a claim that waits for a volume: the bodies (provisioner.hpp has the contracts).
#include "control/make/provisioner.hpp"

#include <cerrno>

#include "base/log.hpp"
#include "base/text.hpp"
#include "control/make/volume_dir.hpp"
#include "decide/path_pattern.hpp"
#include "fs/usage_walk.hpp"
#include "decide/clone.hpp"

namespace {

// What a reattached directory holds, for the user: "12 files and directories, 3.0 MiB", counted
// as the usage scan counts (never following a link, never crossing a mount); "at least ..."
// past a million entries, which are not waited for.
std::string DescribeContents(const Root& parent, const std::string& name) {
  Result<UsageWalk> walk = UsageWalk::Begin(parent, name);
  if (!walk.ok()) return "its size not known: " + walk.status().message();
  bool done = walk->Step(1000000);
  const UsageCount& c = walk->count();
  const uint64_t entries = c.inodes > 0 ? c.inodes - 1 : 0;  // not the directory itself
  return std::string(done ? "" : "at least ") + std::to_string(entries) + " files and directories, " + HumanBytes(c.bytes);
}

}  // namespace

Provisioner::Provisioner(const Config& cfg, const Informer<Volume>* volumes, Promises* promises, const NameSet* created,
                         VolumeMaker* maker, Cloning* cloning, PatternDirs* dirs, EventRecorder* recorder,
                         ControllerStats* stats, RootMovedCheck root_moved)
    : cfg_(cfg), volumes_(volumes), promises_(promises), created_(created), maker_(maker), cloning_(cloning), dirs_(dirs),
      recorder_(recorder), stats_(stats), root_moved_(std::move(root_moved)) {}

Outcome Provisioner::Sync(WorkerApi& w, const std::string& key, const Claim& claim, const StorageClass* sc) {
  std::string pv_name = VolumeNameFor(claim);
  // Asked before the cache: the volume's watch event puts it in the cache, then forgets that
  // it was made. Asked the other way round, an event in between would make both say "no".
  const bool made = created_->Contains(pv_name);
  std::optional<Volume> existing = volumes_->Get(pv_name);
  if (!existing && made) return Outcome::Done();  // made it; its watch event is on the way
  Action a = cloning_ ? cloning_->Decide(w, key, claim, sc, existing ? &*existing : nullptr, pv_name)
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
      if (a.path_pattern) return ProvisionPattern(w, claim, a);
      return a.source.claim.empty() || !cloning_ ? Provision(w, claim, a) : cloning_->Provision(w, claim, a);
    default:
      return Outcome::Done();
  }
}

Outcome Provisioner::ProvisionPattern(WorkerApi& w, const Claim& claim, const Action& a) {
  const std::string path = a.root + "/" + a.dir_name;
  const std::string& pv = a.volume.meta.name;
  if (a.only_existing) {
    if (!maker_->DirExists(a)) return Outcome::Done();  // not here: the claim's node makes it
    const std::string asked = a.claim_node.empty() ? "before the scheduler picks a node" : "though the claim's node is " + a.claim_node;
    if (a.node_by_user) {
      const std::string message = "the directory " + path + " for this claim is on node " + cfg_.node_name +
                                  ", but the claim names node " + a.claim_node + " (annotation " + ann::kNode +
                                  "): to get its data, annotate the claim with " + ann::kNode + "=" + cfg_.node_name +
                                  " (create it again so), or move the directory to " + a.claim_node;
      LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
      recorder_->WarningOnce(InvolvedOf(claim), reason::kProvisioningFailed, message);
      return Outcome::Done();
    }
    LogInfo("claim " + KeyOf(claim.meta) + ": its directory " + path + " is on this node: reattaching it here, " + asked);
  }
  if (std::string held = dirs_->Begin(path, pv, claim.meta.namespace_); !held.empty())
    return maker_->Failed(w, claim, "cannot use the directory " + path + ": " + held);
  // A clone goes through the same reservation: its copy is built beside the directory and
  // renamed into place, which must never be inside or around another volume's.
  const bool clone = !a.source.claim.empty() && cloning_;
  Outcome o = clone ? cloning_->Provision(w, claim, a) : Provision(w, claim, a);
  dirs_->Finish(path, pv, created_->Contains(pv) || volumes_->Get(pv).has_value() || (clone && cloning_->Copying(pv)));
  return o;
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
  // A pathPattern's directory to reattach whose project ID (which its owner may set) is another
  // volume's: that volume's limit is not taken over.
  if (a.path_pattern && a.quota != "false" && fsops_detail::IsDirNoFollow(root->fd(), LeafName(a.dir_name))) {
    Result<QuotaId> q = QuotaLimits(*root).Of(LeafName(a.dir_name));
    std::string holder = q.ok() && q->method != QuotaMethod::kNone ? dirs_->QuotaHolder(Describe(*q), a.volume.meta.name) : "";
    if (!holder.empty()) {
      promises_->Release(a.volume.meta.name);
      return maker_->Failed(w, claim, "cannot reattach " + path + ": its " + Describe(*q) + " is the limit of PersistentVolume " +
                                          holder + " (set by a tenant?); give it back to its own: move its files into a new "
                                          "directory, or clear its project ID (chattr -p 0 -R, or xfs_quota)");
    }
  }
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
  if (made->existed) made->found = DescribeContents(*root, LeafName(a.dir_name));
  return maker_->Create(w, claim, a, *root, *made, start, "");
}
