// A volume's directory with its size enforced as its class asks (parameter quota), made,
// grown and removed: the steps that join the decisions (reconcile.hpp's Action) to the
// filesystem (fsops.hpp, quota.hpp). A limit is changed only where the directory itself and
// its PV (the kQuota annotation made with it) name the same one: a PV can be edited by anyone
// allowed to write PVs, and the project ID of a directory by its owner (a pod), so neither
// alone may point a change at another volume's or the administrator's limit.
#pragma once
#include <atomic>
#include <string>

#include "decide/reconcile.hpp"
#include "fs/fsops.hpp"
#include "fs/quota.hpp"

// What making the directory did about its size.
struct MadeDir {
  QuotaId quota;            // the limit it is under (method kNone: not enforced)
  std::string not_enforced;  // quota "auto" on a root that cannot: why, for the user
  bool existed = false;     // a pathPattern's directory that was there already (reattached)
  uint64_t limit = 0;       // existed, under a limit: the limit set (the request, or what is in use if more)
  std::string found;        // existed: what it held, for the user ("12 files and directories, 3.0 MiB")
  bool files_uncounted = false;  // existed without a project ID, given one now: the files in it are not charged
};

// "project 1234567", "btrfs subvolume 257", or "" (the PV's kQuota annotation).
std::string Describe(const QuotaId& q);

// Makes a.dir_name's last name (LeafName) under `root`, its parent (Roots::Place) (mode, owner), limited to a.request_bytes if a.quota asks
// ("auto": where the root can enforce it, else not enforced, and made.not_enforced says why).
// quota "true" on a root that cannot enforce it: kInvalid with what is missing and how to fix
// it, and nothing made. Other errors: fsops' and quota's.
// A pathPattern's directory that exists already is taken as it is (made.existed; reattach):
// its owner and mode are set again; a limit it has is kept and set to the request, or to what
// is in use where that is more (never below); a plain directory on btrfs, which cannot become a
// subvolume, is not enforced under "auto" (made.not_enforced says why) and kInvalid under "true".
// (Files already in a plain directory given a project ID now are not charged to it: only what
// is made from now on is; made.not_enforced does not say so, the Reattached event does.)
Result<MadeDir> MakeVolumeDir(const Root& root, const Action& a);

// The limit a PV's kQuota annotation names ("" or anything else: none).
QuotaId ParseQuotaId(const std::string& s);

// The limit root/dir_name is under, if the directory and its PV (`recorded`) agree on it;
// kConflict when they do not (saying what each names); the error of reading it otherwise.
Result<QuotaId> AgreedQuota(const QuotaLimits& limits, const std::string& dir_name, const QuotaId& recorded);

// Sets the limit of a volume's directory to `bytes`, if it was made under one (a growth); ok
// and nothing changed when it was made without one. kConflict (nothing changed) when the
// directory and its PV disagree on the limit.
Status GrowVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded, uint64_t bytes);

// Removes a volume's directory (Root::RemoveTree, which stops early, kCanceled, once *cancel is
// set; btrfs subvolumes a tenant made inside go with it), then releases the limit it was made
// under, and theirs. A btrfs volume's limits (its own and those of the subvolumes inside, as
// the directory itself says) are lifted before anything is removed: btrfs refuses to delete a
// subvolume in a volume that is full. Where the directory and its PV disagree on the limit (or
// it was gone already), no limit is released: the ID stays unused, never handed out again.
Status RemoveVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded,
                       const std::atomic<bool>* cancel = nullptr);
