// The orphan scan: directories in the roots named like ours ("<ns>-<claim>-pvc-<uid>") with
// no PV. Made for a claim whose PV was never created (a crash or failure between mkdir and
// create, then the claim went away), or left by a Retain volume whose PV was deleted by hand.
// An empty one held no data: it is removed. One with files may be someone's data: it is only
// reported. Directories of claims still waiting to be provisioned, and of PVs just created
// whose watch event has not come yet, are left alone. The cache only picks candidates: each is
// removed only if, asked in this order, a GET says its PV does not exist and then a fresh list
// of claims holds none with its uid. A clone's copy cut short (a crash), or complete but never
// named by a PV, whose claim is gone, is removed whole.
//
// Why this cannot remove a directory another instance is making (on a root several share):
// an instance makes the directory of a claim that exists, and only then creates its PV. If
// the GET found no PV, the create had not happened yet; the list, read after it, then shows
// the claim (kept), unless the claim was deleted meanwhile: then the PV, if its create still
// lands, is one of a deleted claim (released at once and removed as such), and the
// directory held no data. The cache alone could not tell: another instance may see a claim
// before this one does.
#pragma once
#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "control/sync.hpp"
#include "fs/roots.hpp"
#include "kube/informer.hpp"

class OrphanScan {
 public:
  // Does this instance still act (it holds the lease, and is not halted)? Asked before each removal.
  using MayAct = std::function<bool()>;
  // Is the copy for volume `pv` queued or running? (A finished one's outcome is dropped.)
  using Copying = std::function<bool(const std::string& pv)>;

  // Every pointer must outlive the scan. `created`: PVs made (or being made) whose watch event
  // has not come yet.
  OrphanScan(const Informer<Claim>* claims, const Informer<Volume>* volumes, const NameSet* created, Roots* roots,
             MayAct may_act, Copying copying);

  // One pass over every opened root. Must run alone: no worker may make a directory meanwhile
  // (the controller holds its filesystem lock exclusively). True when every candidate could be
  // looked up (a root that cannot be listed is logged and skipped); false when one could not,
  // or the fresh list of claims failed (then nothing is removed, and the scan is tried again
  // after a backoff). Stops removing, and returns true, once `may_act` says no.
  bool Run(WorkerApi& w);

 private:
  using Candidates = std::vector<std::pair<Roots::Ref, std::string>>;
  bool Find(WorkerApi& w, const Roots::Ref& ref, const std::unordered_set<std::string>& pending_uids, Candidates* out);
  static Status ListClaimUids(WorkerApi& w, std::unordered_set<std::string>* uids);

  const Informer<Claim>* claims_;
  const Informer<Volume>* volumes_;
  const NameSet* created_;
  Roots* roots_;
  MayAct may_act_;
  Copying copying_;
};
