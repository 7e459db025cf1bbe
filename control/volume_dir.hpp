// A volume's directory with its size enforced as its class asks (parameter quota), made,
// grown and removed: the steps that join the decisions (reconcile.hpp's Action) to the
// filesystem (fsops.hpp, quota.hpp). A limit is changed only where the directory itself and
// its PV (the kQuota annotation made with it) name the same one: a PV can be edited by anyone
// allowed to write PVs, and the project ID of a directory by its owner (a pod), so neither
// alone may point a change at another volume's or the administrator's limit.
#pragma once
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "fs/fsops.hpp"
#include "fs/quota.hpp"
#include "decide/reconcile.hpp"

// What making the directory did about its size.
struct MadeDir {
  QuotaId quota;            // the limit it is under (method kNone: not enforced)
  std::string not_enforced;  // quota "auto" on a root that cannot: why, for the user
};

// "project 1234567", "btrfs subvolume 257", or "" (the PV's kQuota annotation).
inline std::string Describe(const QuotaId& q) {
  if (q.method == QuotaMethod::kProject) return "project " + std::to_string(q.id);
  if (q.method == QuotaMethod::kBtrfs) return "btrfs subvolume " + std::to_string(q.id);
  return "";
}

// Makes a.dir_name under `root` (mode, owner), limited to a.request_bytes if a.quota asks.
// quota "true" on a root that cannot enforce it: kInvalid with what is missing and how to fix
// it, and nothing made.
inline Result<MadeDir> MakeVolumeDir(const Root& root, const Action& a) {
  MadeDir made;
  if (a.quota == "false") {
    if (Status s = root.MakeDir(a.dir_name, a.dir_mode, a.uid, a.gid); !s.ok()) return s;
    return made;
  }
  QuotaSupport support = ProbeQuota(root);
  if (support.method == QuotaMethod::kNone) {
    if (a.quota == "true") return Status::Invalid("the size cannot be enforced (class parameter quota: \"true\"): " + support.why_not);
    if (Status s = root.MakeDir(a.dir_name, a.dir_mode, a.uid, a.gid); !s.ok()) return s;
    made.not_enforced = support.why_not;
    return made;
  }
  Result<QuotaId> q = QuotaLimits(root).Make(support.method, a.dir_name, a.dir_mode, a.uid, a.gid,
                                              static_cast<uint64_t>(a.request_bytes), a.volume.meta.name);
  if (!q.ok()) return q.status();
  made.quota = *q;
  return made;
}

// The limit a PV's kQuota annotation names ("" or anything else: none).
inline QuotaId ParseQuotaId(const std::string& s) {
  QuotaId q;
  unsigned long long id = 0;
  char rest = 0;
  if (std::sscanf(s.c_str(), "project %llu%c", &id, &rest) == 1) q = {QuotaMethod::kProject, id};
  if (std::sscanf(s.c_str(), "btrfs subvolume %llu%c", &id, &rest) == 1) q = {QuotaMethod::kBtrfs, id};
  return q;
}

// The limit root/dir_name is under, if the directory and its PV (`recorded`) agree on it;
// kConflict when they do not.
inline Result<QuotaId> AgreedQuota(const QuotaLimits& limits, const std::string& dir_name, const QuotaId& recorded) {
  Result<QuotaId> found = limits.Of(dir_name);
  if (!found.ok()) return found.status();
  if (found->method == recorded.method && found->id == recorded.id) return found;
  return Status(Status::kConflict, "its directory is under " + Or(Describe(*found), "no limit") + ", but its PersistentVolume says " +
                                       Or(Describe(recorded), "none") + "; changing no limit (was the directory's project ID changed?)");
}

// Sets the limit of a volume's directory to `bytes`, if it was made under one (a growth).
inline Status GrowVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded, uint64_t bytes) {
  if (recorded.method == QuotaMethod::kNone) return Status::Ok();
  QuotaLimits limits(root);
  Result<QuotaId> q = AgreedQuota(limits, dir_name, recorded);
  if (!q.ok()) return q.status();
  return limits.SetLimit(*q, dir_name, bytes);
}

// Removes a volume's directory (Root::RemoveTree, which stops early, kCanceled, once *cancel is
// set; btrfs subvolumes a tenant made inside go with it), then releases the limit it was made
// under, and theirs.
inline Status RemoveVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded,
                              const std::atomic<bool>* cancel = nullptr) {
  QuotaLimits limits(root);
  Result<QuotaId> q = recorded.method == QuotaMethod::kNone ? Result<QuotaId>(QuotaId{}) : AgreedQuota(limits, dir_name, recorded);
  const std::vector<uint64_t> nested = q.ok() ? limits.NestedIds(*q) : std::vector<uint64_t>{};
  if (Status s = root.RemoveTree(dir_name, cancel); !s.ok()) return s;
  // Gone already (an earlier attempt), or the two disagreed: no limit is touched. The ID stays
  // limited and unused, so it is never handed out again: a leak of one ID, never a collision.
  if (!q.ok() || q->method == QuotaMethod::kNone) return Status::Ok();
  return limits.Release(*q, nested);
}
