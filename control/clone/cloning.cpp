// A clone, the controller's side: the bodies (cloning.hpp has the contracts).
#include "control/clone/cloning.hpp"

#include <cerrno>

#include "base/log.hpp"
#include "decide/path_pattern.hpp"
#include "fs/fsops.hpp"
#include "fs/quota.hpp"

Cloning::Cloning(const Config& cfg, const Informer<Claim>* claims, const Informer<Volume>* volumes, Roots* roots,
                 Cloner* cloner, VolumeMaker* maker, Promises* promises, const NameSet* created, NameSet* space_waiters,
                 EventRecorder* recorder, ControllerStats* stats, UsedBytes used_bytes, Wake wake)
    : cfg_(cfg), claims_(claims), volumes_(volumes), roots_(roots), cloner_(cloner), maker_(maker), promises_(promises),
      created_(created), space_waiters_(space_waiters), recorder_(recorder), stats_(stats),
      used_bytes_(std::move(used_bytes)), wake_(std::move(wake)) {}

Action Cloning::Decide(WorkerApi& w, const std::string& key, const Claim& claim, const StorageClass* sc, const Volume* existing,
                       const std::string& pv_name) {
  // Its source as the caches hold it.
  std::optional<Claim> source_claim;
  std::optional<Volume> source_volume;
  const std::string source_key = CloneSourceKey(claim);
  bool read_through = false;  // the source was read from the API, not the caches
  if (!source_key.empty()) {
    source_claim = claims_->Get(source_key);
    if (source_claim && !source_claim->volume_name.empty()) source_volume = volumes_->Get(source_claim->volume_name);
    if (!cfg_.node_name.empty()) read_through = ReadSource(w, source_key, &source_claim, &source_volume);
  }
  Action a = DecideClone(cfg_, claim, sc, existing,
                         {source_claim ? &*source_claim : nullptr, source_volume ? &*source_volume : nullptr,
                          !source_key.empty() && cloner_->Has(pv_name)});
  // A clone that may yet be made is looked at again when its source, or the source's volume,
  // changes (it binds: the claim's volumeName, then its phase; the volume appears). A change
  // between the reads above and now found no waiter: then it is looked at again at once. (A
  // source read from the API is not watched here: its clone is retried with backoff.)
  if (a.kind == Action::kFail && a.retry && !source_key.empty()) {
    waiters_.Add(source_key, key);
    if (!read_through && SourceSeen(source_key) != SourceSeen(source_claim, source_volume)) wake_("claim/" + key);
  }
  return a;
}

// Node-aware, the caches hold only this node's claims and PVs: a source they miss may be
// another node's. Read as the caches would hold it. An error leaves it missing (the decision
// then waits for it, and is retried).
bool Cloning::ReadSource(WorkerApi& w, const std::string& source_key, std::optional<Claim>* claim,
                         std::optional<Volume>* volume) {
  const bool missing = !*claim || (!(*claim)->volume_name.empty() && !*volume);
  if (!*claim) {
    const size_t slash = source_key.find('/');
    Result<Claim> c = w.api.GetClaim(source_key.substr(0, slash), source_key.substr(slash + 1));
    if (c.ok()) {
      SlimForCache(&*c);
      *claim = *c;
    } else if (c.status().code() != Status::kNotFound) {
      LogWarn("reading the claim to clone, " + source_key + ": " + c.status().message());
    }
  }
  if (*claim && !(*claim)->volume_name.empty() && !*volume) {
    Result<Volume> v = w.api.GetVolume((*claim)->volume_name);
    if (v.ok()) {
      SlimForCache(&*v);
      *volume = *v;
    } else if (v.status().code() != Status::kNotFound) {
      LogWarn("reading the volume of the claim to clone, " + source_key + ": " + v.status().message());
    }
  }
  return missing;
}

void Cloning::SourceChanged(const std::string& source_key) {
  for (const std::string& waiting : waiters_.Take(source_key)) wake_("claim/" + waiting);
}

Outcome Cloning::Provision(WorkerApi& w, const Claim& claim, const Action& a) {
  const auto start = std::chrono::steady_clock::now();
  Cloner::Finished f;
  std::string method;
  switch (cloner_->Poll(a.volume.meta.name, &f)) {
    case Cloner::State::kBusy:
      return Outcome::Done();
    case Cloner::State::kFinished:
      if (!f.status.ok()) return Failed(claim, a, f.status);
      method = Describe(f.result.method);
      break;
    case Cloner::State::kNone: {
      if (a.source.volume.empty()) return Outcome::Retry();  // its copy, seen a moment ago, was canceled since
      Roots::Ref root;
      if (std::optional<Outcome> o = maker_->Prepare(w, claim, a, &root)) return *o;
      // Renamed into place before a restart, and the PV not made yet: a whole copy.
      if (!fsops_detail::IsDirNoFollow(root->fd(), LeafName(a.dir_name))) {
        cloner_->Start({KeyOf(claim.meta), InvolvedOf(claim), a, used_bytes_(a.source.volume)});
        return Outcome::Done();
      }
      // A pathPattern's directory there already, not a copy of ours (no mark): someone's data,
      // which a copy must not be mixed into (a clone never reattaches).
      if (a.path_pattern && !Cloner::Unclaimed(*root, a.volume.meta.name)) {
        promises_->Release(a.volume.meta.name);
        return maker_->Failed(w, claim, "cannot clone " + a.source.claim + " into " + a.root + "/" + a.dir_name +
                                            ": that directory exists already (the class's pathPattern names it); a clone "
                                            "is made into a new directory: move it away, or give the claim another name");
      }
      Result<QuotaId> q = QuotaLimits(*root).Of(LeafName(a.dir_name));
      if (q.ok()) f.made.quota = *q;
      method = "copied before a restart";
      break;
    }
  }
  std::string leaf;
  Result<Roots::Ref> root = roots_->Place(a.root, a.dir_name, false, &leaf);
  if (!root.ok()) return maker_->Failed(w, claim, "cannot use " + a.root + ": " + root.status().message());
  Outcome o = maker_->Create(w, claim, a, **root, f.made, start, method);
  if (created_->Contains(a.volume.meta.name)) Cloner::Claimed(**root, a.volume.meta.name);  // its PV is made
  return o;
}

Outcome Cloning::Failed(const Claim& claim, const Action& a, const Status& s) {
  promises_->Release(a.volume.meta.name);
  const int e = s.sys_errno();
  std::string message = "cannot clone " + a.source.claim + " into " + a.root + "/" + a.dir_name + ": " + s.message();
  if (e == EDQUOT) message += "; the copy does not fit in the clone's enforced size: create the claim again asking for more";
  if (e == ENOSPC) message += "; the copy does not fit in the free space under " + a.root + ": free some space (retried when a volume goes)";
  if (e == ENOSPC) space_waiters_->Insert(KeyOf(claim.meta));
  stats_->provision_failed++;
  LogWarn("claim " + KeyOf(claim.meta) + ": " + message);
  recorder_->Warning(InvolvedOf(claim), reason::kProvisioningFailed, message);
  return e == EDQUOT ? Outcome::Done() : Outcome::Retry();
}

std::string Cloning::SourceSeen(const std::optional<Claim>& c, const std::optional<Volume>& v) {
  return (c ? c->meta.resource_version : "-") + "/" + (v ? v->meta.resource_version : "-");
}

std::string Cloning::SourceSeen(const std::string& source_key) const {
  std::optional<Claim> c = claims_->Get(source_key);
  std::optional<Volume> v;
  if (c && !c->volume_name.empty()) v = volumes_->Get(c->volume_name);
  return SourceSeen(c, v);
}
