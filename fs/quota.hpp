// Enforced sizes: a volume directory whose size its filesystem limits (issue 32).
//  - ext4 and XFS: the directory gets a project ID of its own (FS_IOC_FSSETXATTR, with the
//    inherit flag, so that everything made inside is charged to it), and the project a hard
//    block limit, set with quotactl_fd on the root (Linux 5.14+), so that no block device node
//    is needed in the provisioner's pod.
//  - btrfs: the directory is a subvolume ID, and its qgroup 0/ID has a limit on referenced
//    bytes. Once subvolumes a tenant made inside it are found (HoldNested), the limit moves to
//    a level-1 qgroup 1/ID that holds 0/ID and theirs (btrfs_qgroup.hpp says how btrfs behaves).
// Nothing here turns quotas on: where they are off, the error says how the administrator does
// it. Filesystem layer: no Kubernetes types. Hand-written: no Debian library wraps these calls.
#pragma once
#include <linux/quota.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "base/text.hpp"  // not used here: control/make/volume_dir.hpp gets Or() through it
#include "fs/btrfs_qgroup.hpp"
#include "fs/fsops.hpp"

// How a root's filesystem enforces a volume's size.
enum class QuotaMethod {
  kNone,     // it cannot (why in QuotaSupport::why_not)
  kProject,  // ext4 or XFS project quotas
  kBtrfs,    // btrfs subvolume and qgroup
};

struct QuotaSupport {
  QuotaMethod method = QuotaMethod::kNone;
  std::string fs;       // "ext4", "xfs", "btrfs", or the filesystem's type number
  std::string why_not;  // kNone: what is missing and how to fix it
};

// A volume directory made with a limit: how, and the ID the limit is kept under (the project
// ID, or the subvolume's ID, which names its qgroup 0/ID).
struct QuotaId {
  QuotaMethod method = QuotaMethod::kNone;
  uint64_t id = 0;
};

namespace quota_detail {

constexpr int kFirstProjectId = 1000000;   // above the IDs admins write by hand into /etc/projid
constexpr int kProjectIdSpan = 1000000000;

// A key drawn at random once per process, for ProjectIdStart.
const std::array<unsigned char, 32>& ProjectIdKey();

// Where a volume's search for a free project ID starts: the HMAC-SHA256 of `seed` (the volume's
// name) under `key`, in [0, kProjectIdSpan). Under ProjectIdKey(), a tenant cannot work it out
// from the volume's public name: a pod that owns its files can set them to any project ID, and
// would otherwise charge them to another volume's limit. The same seed gives the same start
// within a process; a restart draws another key, and nothing needs the old one: a volume's ID
// is read back from its directory (QuotaLimits::Of), never derived again.
uint64_t ProjectIdStart(const std::string& seed, const std::array<unsigned char, 32>& key = ProjectIdKey());

// What project `id` holds: its usage and limits (zero for an ID never used).
int GetProject(int root_fd, unsigned id, if_dqblk* q);

// Gives the directory dir_fd project `id`, with the inherit flag (id 0: none, and no flag).
// 0 or an errno value.
int SetProjectOf(int dir_fd, unsigned id);

// The quotactl_fd system call on the filesystem of `fd`, for project quotas. 0, or -1 with errno set.
int Quotactl(int fd, int cmd, unsigned id, void* addr);

// The btrfs filesystem's directory in sysfs, /sys/fs/btrfs/<fsid>; "" with *err set when its
// identity cannot be read.
std::string BtrfsSysDir(int fd, std::string* err);

}  // namespace quota_detail

// Can the root's filesystem enforce sizes, and how? Looks, changes nothing.
QuotaSupport ProbeQuota(const Root& root);

// The limits of volumes on one root. Thread-safe (no state); two calls on the same name at
// once race like any two processes would (the caller serialises, as for Root).
class QuotaLimits {
 public:
  explicit QuotaLimits(const Root& root) : root_(root) {}

  // Makes root/name, as Root::MakeDir does (mode, owner), limited to `bytes`, by `method`
  // (from ProbeQuota). `seed` (the volume's name) spreads the project IDs. Idempotent: a
  // directory made by an earlier attempt keeps its ID, and gets the limit again.
  Result<QuotaId> Make(QuotaMethod method, const std::string& name, unsigned mode, int uid, int gid, uint64_t bytes,
                       const std::string& seed) const;

  // Sets the volume's limit to `bytes` (rounded up to whole blocks), e.g. when it grows. btrfs:
  // on 1/ID where there is one (with 0/ID in it), else on 0/ID.
  Status SetLimit(const QuotaId& q, const std::string& name, uint64_t bytes) const;

  // A btrfs volume just made or snapshotted, whose ID a removed subvolume may have had: its
  // limit set as SetLimit does, after a 1/ID left by that one is destroyed.
  Status LimitNew(const QuotaId& q, const std::string& name, uint64_t bytes) const;

  // A volume being archived or removed (its size no longer held): the limits of `q` are
  // cleared, the ID kept. Project: its limits (its files stay charged to it, so that
  // AssignProject never hands the ID out while they exist). btrfs: the limits of 0/ID, of 1/ID
  // if there is one, and of the qgroups 0/N of the subvolumes inside it, `nested` (a snapshot
  // copies its source's limit); the qgroups stay, and go with the directory (Release). btrfs
  // refuses to delete a subvolume whose parent's qgroup is at its limit (a tenant filled the
  // volume), so a removal lifts them first. Idempotent; ok when quotas are off, and for a
  // nested qgroup that is gone.
  Status Unlimit(const QuotaId& q, const std::string& name, const std::vector<uint64_t>& nested = {}) const;

  // A btrfs snapshot made for a volume whose size is not enforced: the limit btrfs copied from
  // its source is cleared. Ok when quotas are off (nothing to clear).
  Status ClearLimit(const QuotaId& q, const std::string& name) const;

  // The subvolumes a tenant made inside btrfs volume `q` (see btrfs_qgroup.hpp) that were not
  // yet under its limit are put there, and returned in *added (none when the volume has no
  // limit). The first one found moves the limit from 0/ID to 1/ID. Needs CAP_SYS_ADMIN.
  Status HoldNested(const QuotaId& q, const std::string& name, std::vector<btrfs_qgroup::Nested>* added) const;

  // The IDs of the subvolumes inside btrfs volume `q`, for Release after its removal (none for
  // any other, or when they cannot be listed).
  std::vector<uint64_t> NestedIds(const QuotaId& q) const;

  // After the volume's directory is gone: its project's limits are cleared, so that the ID
  // can serve again once nothing is charged to it. btrfs: its qgroups (0/ID, 1/ID, and those of
  // the subvolumes that were inside, `nested`) are destroyed where btrfs lets them go at once;
  // the rest go with their subvolumes once the cleaner has freed them (Linux 6.10+), or stay,
  // harmless (a 1/ID left over is made afresh if the ID serves again: LimitNew).
  Status Release(const QuotaId& q, const std::vector<uint64_t>& nested = {}) const;

  // The limit root/name is under, read from the directory itself (never from what a PV says): a
  // btrfs subvolume, a project ID of ours, or none (a plain directory, or one in a project of
  // the administrator's).
  Result<QuotaId> Of(const std::string& name) const;

  // Bytes charged to a btrfs volume's qgroup: 1/id (the volume and the subvolumes found inside
  // it, each extent once), or 0/id while none has been found. What
  // its limit is held against, data and metadata, as of the last transaction commit (at most
  // 30 s old by default). Read from sysfs (Linux 5.9+), which needs no privilege; kNotFound
  // without it.
  Status QgroupUsage(uint64_t id, uint64_t* bytes) const;

  // Bytes and inodes charged to project `id` (ext4, XFS).
  Status ProjectUsage(unsigned id, uint64_t* bytes, uint64_t* inodes) const;

 private:
  // Gives the directory a project ID of its own, or finds the one an earlier attempt gave it.
  // The ID: from a start that `seed` picks (ProjectIdStart, which a tenant cannot predict), the
  // first one that nothing is charged to and that has no limits. Why two volumes never share
  // one, whatever instances run at once: every allocator gives the ID to its directory first
  // and reads the project's usage after, so of two directories given one ID at the same time
  // the later reader sees two inodes, gives its directory back to project 0 and goes on to the
  // next ID (both may: they both move on). An ID still charged to files (of a volume whose
  // removal failed, or of anything else) has usage, and one whose volume went but whose limits
  // stayed (a crash between the two) has limits: neither is taken. The filesystem's own accounting is the only record, so there is
  // nothing to lose across restarts.
  Result<unsigned> AssignProject(int dir_fd, const std::string& name, const std::string& seed) const;

  Result<QuotaId> MakeSubvolume(const std::string& name, unsigned mode, int uid, int gid, uint64_t bytes) const;

  // A number in the sysfs folder of qgroup `qgroupid` (level/id, as btrfs_qgroup::Level1 makes).
  Status ReadQgroup(uint64_t qgroupid, const char* what, uint64_t* value) const;

  // The limit of btrfs volume `id`, `bytes` (rounded), on 1/id with 0/id in it; 0/id unlimited
  // (a snapshot would copy it). Assigning a 0/id that shares extents (a snapshot clone) starts
  // a rescan of the filesystem's qgroups (btrfs_qgroup::Assign).
  Status LimitLevel1(uint64_t id, const std::string& name, uint64_t bytes) const;

  // Opens root/name as a directory, never through a symlink: a descriptor, or -1 with errno set.
  int Open(const std::string& name) const;

  uint64_t BlockSize() const;

  // A failed call as a Status naming the path; EPERM says which capability is missing.
  Status Posix(const std::string& what, const std::string& name, int err, std::string hint = "") const;

  const Root& root_;
};
