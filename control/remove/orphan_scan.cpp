// The orphan scan: the bodies (orphan_scan.hpp has the contract).
#include "control/remove/orphan_scan.hpp"

#include "base/log.hpp"
#include "control/clone/cloner.hpp"
#include "decide/clone.hpp"

OrphanScan::OrphanScan(const Informer<Claim>* claims, const Informer<Volume>* volumes, const NameSet* created,
                       Roots* roots, MayAct may_act, Copying copying)
    : claims_(claims), volumes_(volumes), created_(created), roots_(roots), may_act_(std::move(may_act)),
      copying_(std::move(copying)) {}

bool OrphanScan::Run(WorkerApi& w) {
  std::unordered_set<std::string> pending_uids;
  claims_->ForEach([&](const Claim& c) {
    if (c.volume_name.empty()) pending_uids.insert(c.meta.uid);
  });
  Candidates candidates;
  bool complete = true;
  for (const Roots::Ref& root : roots_->Opened()) complete = Find(w, root, pending_uids, &candidates) && complete;
  if (candidates.empty()) return complete;
  std::unordered_set<std::string> claim_uids;
  if (Status s = ListClaimUids(w, &claim_uids); !s.ok()) {
    LogWarn("orphaned directories kept for now: " + s.message());
    return false;
  }
  for (const auto& [root, d] : candidates) {
    const std::string pv = d.substr(d.size() - 40);
    if (claim_uids.count(pv.substr(4))) continue;  // its claim exists: its PV may be on the way
    if (!may_act_()) return true;
    if (!CloneTempFor(d).empty()) {  // a copy cut short (a crash) whose claim went since
      if (copying_ && copying_(pv)) continue;
      if (Status s = Cloner::RemoveTemp(*root, d); !s.ok())
        LogWarn("half-made clone " + root->path() + "/" + d + " kept for now: " + s.message());
      else
        LogInfo("removed half-made clone " + root->path() + "/" + d + ": its claim is gone");
      continue;
    }
    if (Cloner::Unclaimed(*root, pv)) {  // a complete copy (a crash before its PV) whose claim went since
      if (Status s = Cloner::RemoveTemp(*root, d); !s.ok()) {
        LogWarn("unclaimed clone " + root->path() + "/" + d + " kept for now: " + s.message());
      } else {
        Cloner::Claimed(*root, pv);
        LogInfo("removed unclaimed clone " + root->path() + "/" + d + ": a complete copy whose PersistentVolume " + pv +
                " was never made, and its claim is gone");
      }
      continue;
    }
    Status s = root->RemoveIfEmpty(d);
    if (s.ok()) {
      LogInfo("removed orphaned directory " + root->path() + "/" + d + ": empty, and no PersistentVolume " + pv +
              " or claim refers to it");
    } else {
      LogWarn("orphaned directory " + root->path() + "/" + d + " kept: no PersistentVolume " + pv +
              " refers to it, but " + s.message() + " (it may hold data of a Retain volume whose PV was deleted; "
              "remove it by hand if not needed)");
    }
  }
  return complete;
}

// Adds to *out the directories of `root` named like ours whose PV, asked with a GET, does
// not exist (the cache picks the candidates).
bool OrphanScan::Find(WorkerApi& w, const Roots::Ref& ref, const std::unordered_set<std::string>& pending_uids,
                      Candidates* out) {
  const Root& root = *ref;
  Result<std::vector<std::string>> dirs = root.ListDirs();
  if (!dirs.ok()) {
    LogWarn("cannot list " + root.path() + " to look for orphaned directories: " + dirs.status().message());
    return true;
  }
  bool complete = true;
  for (const std::string& d : *dirs) {
    const size_t kPv = 40;  // "pvc-" + a 36-character uid
    if (d.size() <= kPv + 1 || d[d.size() - kPv - 1] != '-' || d.compare(d.size() - kPv, 4, "pvc-") != 0) continue;
    std::string pv = d.substr(d.size() - kPv);
    // created_ before the cache, as in the provisioner: the watch may move a volume from one to
    // the other meanwhile (workers are held off, the watches are not).
    if (created_->Contains(pv) || volumes_->Get(pv) || pending_uids.count(pv.substr(4))) continue;
    Result<Volume> fresh = w.api.GetVolume(pv);
    if (fresh.status().code() != Status::kNotFound) {
      if (!fresh.ok()) LogWarn("orphaned directory " + root.path() + "/" + d + " kept for now: " + fresh.status().message());
      complete = complete && fresh.ok();
      continue;
    }
    out->push_back({ref, d});
  }
  return complete;
}

// The uids of every claim there is now, from the API server (not the cache). A claim that
// cannot be read fails the whole list: its uid might be one of the candidates.
Status OrphanScan::ListClaimUids(WorkerApi& w, std::unordered_set<std::string>* uids) {
  std::string token;
  do {
    Status bad;
    Result<ListPage> page = w.api.List<Claim>(api::kClaims, token, 500, [&](Result<Claim> c) {
      if (c.ok()) uids->insert(c->meta.uid);
      else bad = c.status();
    });
    if (!page.ok()) return page.status();
    if (!bad.ok()) return bad.Wrap("list PersistentVolumeClaims");
    token = page->continue_token;
  } while (!token.empty());
  return Status::Ok();
}
