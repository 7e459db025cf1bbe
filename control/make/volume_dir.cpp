// A volume's directory with its size enforced: the bodies (volume_dir.hpp has the contracts).
#include "control/make/volume_dir.hpp"

#include <cstdio>
#include <vector>

#include "base/text.hpp"
#include "decide/path_pattern.hpp"

std::string Describe(const QuotaId& q) {
  if (q.method == QuotaMethod::kProject) return "project " + std::to_string(q.id);
  if (q.method == QuotaMethod::kBtrfs) return "btrfs subvolume " + std::to_string(q.id);
  return "";
}

Result<MadeDir> MakeVolumeDir(const Root& root, const Action& a) {
  MadeDir made;
  const std::string name = LeafName(a.dir_name);
  made.existed = a.path_pattern && fsops_detail::IsDirNoFollow(root.fd(), name);
  if (made.existed)
    if (Status s = root.NotAMountPoint(name); !s.ok()) return s;
  if (a.quota == "false") {
    if (Status s = root.MakeDir(name, a.dir_mode, a.uid, a.gid); !s.ok()) return s;
    return made;
  }
  QuotaSupport support = ProbeQuota(root);
  if (support.method == QuotaMethod::kNone) {
    if (a.quota == "true") return Status::Invalid("the size cannot be enforced (class parameter quota: \"true\"): " + support.why_not);
    if (Status s = root.MakeDir(name, a.dir_mode, a.uid, a.gid); !s.ok()) return s;
    made.not_enforced = support.why_not;
    return made;
  }
  QuotaLimits limits(root);
  const uint64_t want = static_cast<uint64_t>(a.request_bytes);
  if (made.existed && support.method == QuotaMethod::kProject) {
    Result<QuotaId> before = limits.Of(name);
    made.files_uncounted = before.ok() && before->method == QuotaMethod::kNone;
  }
  Result<QuotaId> q = limits.Make(support.method, name, a.dir_mode, a.uid, a.gid, want, a.volume.meta.name);
  if (!q.ok() && made.existed && support.method == QuotaMethod::kBtrfs && q.status().code() == Status::kConflict) {
    const std::string why = "it existed as a plain directory, which btrfs cannot make a subvolume of";
    if (a.quota == "true")
      return Status::Invalid("the size cannot be enforced (class parameter quota: \"true\"): " + why +
                             "; move its files into a volume made by a claim of this class, or use quota: \"auto\"");
    if (Status s = root.MakeDir(name, a.dir_mode, a.uid, a.gid); !s.ok()) return s;
    made.not_enforced = why;
    return made;
  }
  if (!q.ok()) return q.status();
  made.quota = *q;
  if (made.existed) {
    // Never below what is in use: writes would fail at once, and nothing is lost either way.
    uint64_t used = 0, inodes = 0;
    Status s = q->method == QuotaMethod::kBtrfs ? limits.QgroupUsage(q->id, &used)
                                                : limits.ProjectUsage(static_cast<unsigned>(q->id), &used, &inodes);
    made.limit = want;
    if (s.ok() && used > want) {
      if (Status r = limits.SetLimit(*q, name, used); !r.ok()) return r;
      made.limit = used;
    }
  }
  return made;
}

QuotaId ParseQuotaId(const std::string& s) {
  QuotaId q;
  unsigned long long id = 0;
  char rest = 0;
  if (std::sscanf(s.c_str(), "project %llu%c", &id, &rest) == 1) q = {QuotaMethod::kProject, id};
  if (std::sscanf(s.c_str(), "btrfs subvolume %llu%c", &id, &rest) == 1) q = {QuotaMethod::kBtrfs, id};
  return q;
}

Result<QuotaId> AgreedQuota(const QuotaLimits& limits, const std::string& dir_name, const QuotaId& recorded) {
  Result<QuotaId> found = limits.Of(dir_name);
  if (!found.ok()) return found.status();
  if (found->method == recorded.method && found->id == recorded.id) return found;
  return Status(Status::kConflict, "its directory is under " + Or(Describe(*found), "no limit") + ", but its PersistentVolume says " +
                                       Or(Describe(recorded), "none") + "; changing no limit (was the directory's project ID changed?)");
}

Status GrowVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded, uint64_t bytes) {
  if (recorded.method == QuotaMethod::kNone) return Status::Ok();
  QuotaLimits limits(root);
  Result<QuotaId> q = AgreedQuota(limits, dir_name, recorded);
  if (!q.ok()) return q.status();
  return limits.SetLimit(*q, dir_name, bytes);
}

Status RemoveVolumeDir(const Root& root, const std::string& dir_name, const QuotaId& recorded,
                       const std::atomic<bool>* cancel) {
  QuotaLimits limits(root);
  Result<QuotaId> q = recorded.method == QuotaMethod::kNone ? Result<QuotaId>(QuotaId{}) : AgreedQuota(limits, dir_name, recorded);
  // btrfs refuses to delete a subvolume inside a volume whose qgroup is at its limit (a tenant
  // filled it): the limits are lifted first, where the directory itself (not its PV) says it is
  // a subvolume. Those qgroups are the directory's own, and about to go with it; a project ID
  // read from the directory is not touched (its owner can set it), nor needed (an unlink is
  // never refused for a quota).
  Result<QuotaId> own = limits.Of(dir_name);
  const bool btrfs = own.ok() && own->method == QuotaMethod::kBtrfs;
  const std::vector<uint64_t> nested = btrfs ? limits.NestedIds(*own) : std::vector<uint64_t>{};
  const Status lifted = btrfs ? limits.Unlimit(*own, dir_name, nested) : Status::Ok();
  if (Status s = root.RemoveTree(dir_name, cancel); !s.ok())
    return lifted.ok() ? s : Status(s.code(), s.message() + " (its limit could not be lifted first: " + lifted.message() + ")", s.sys_errno());
  // Gone already (an earlier attempt), or the two disagreed: no limit is touched. The ID stays
  // limited and unused, so it is never handed out again: a leak of one ID, never a collision.
  if (!q.ok() || q->method == QuotaMethod::kNone) return Status::Ok();
  return limits.Release(*q, nested);
}
