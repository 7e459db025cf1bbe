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
#include <linux/btrfs.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/quota.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fs/btrfs_qgroup.hpp"
#include "fs/fsops.hpp"
#include "base/status.hpp"
#include "base/text.hpp"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443  // the same number on every architecture
#endif

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
constexpr uint64_t kBtrfsSubvolumeIno = 256;  // BTRFS_FIRST_FREE_OBJECTID: a subvolume's root
constexpr int kCapSysAdmin = 21;

inline int Quotactl(int fd, int cmd, unsigned id, void* addr) {
  return static_cast<int>(syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, addr));
}

// Is the kernel at least major.minor?
inline bool KernelAtLeast(int major, int minor) {
  struct utsname u {};
  int a = 0, b = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &a, &b) != 2) return true;  // cannot tell: try
  return a > major || (a == major && b >= minor);
}

// Does this process have CAP_SYS_ADMIN in its effective set? (/proc/self/status, CapEff, read
// once: a container's capabilities are fixed when it starts.)
inline bool HasSysAdmin() {
  static const bool has = [] {
    FILE* f = std::fopen("/proc/self/status", "re");
    if (f == nullptr) return true;  // cannot tell: the call will say
    char line[256];
    unsigned long long caps = ~0ULL;
    while (std::fgets(line, sizeof line, f) != nullptr)
      if (std::sscanf(line, "CapEff: %llx", &caps) == 1) break;
    std::fclose(f);
    return ((caps >> kCapSysAdmin) & 1) != 0;
  }();
  return has;
}

// The mount point and device of the mount holding `fd`, for advice ("" when not found).
inline void MountOf(int fd, std::string* mount_point, std::string* device) {
  struct statx sx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID)) return;
  FILE* f = std::fopen("/proc/self/mountinfo", "re");
  if (f == nullptr) return;
  char* line = nullptr;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    // "36 35 98:0 / /mnt/data rw,noatime shared:1 - ext4 /dev/sdb1 rw": id, ..., mount point
    // fifth, and after " - " the type and the source.
    unsigned long long id = 0;
    char mp[4096], type[64], source[4096];
    const char* dash = std::strstr(line, " - ");
    if (dash == nullptr || std::sscanf(line, "%llu %*s %*s %*s %4095s", &id, mp) != 2 || id != sx.stx_mnt_id) continue;
    if (std::sscanf(dash + 3, "%63s %4095s", type, source) == 2) *device = fsops_detail::UnescapeMountPath(source);
    *mount_point = fsops_detail::UnescapeMountPath(mp);
    break;
  }
  free(line);
  std::fclose(f);
}

inline QuotaSupport ProbeProject(int root_fd, const std::string& fs) {
  QuotaSupport q;
  q.fs = fs;
  // The mount table is read only to word advice, never on the way to a volume.
  std::string mp, dev;
  auto at = [&] {
    if (mp.empty()) MountOf(root_fd, &mp, &dev);
    return Or(mp, "its mount point");
  };
  if (!KernelAtLeast(5, 14)) {
    q.why_not = "this kernel is older than Linux 5.14, which enforcing sizes needs (quotactl_fd: limits set "
                "without the disk's device node); upgrade the node's kernel";
    return q;
  }
  fs_quota_statv sv {};
  sv.qs_version = FS_QSTATV_VERSION1;
  if (Quotactl(root_fd, Q_XGETQSTATV, 0, &sv) != 0) {
    const int e = errno;
    // XFS answers ENOSYS both when mounted without quotas and when built without them.
    if (e == ENOSYS && fs == "xfs")
      q.why_not = "XFS at " + at() + " is not mounted with project quotas: add prjquota to its mount options (in "
                  "/etc/fstab; for the root filesystem, rootflags=prjquota on the kernel command line) and mount it "
                  "again (the kernel needs XFS quota support, CONFIG_XFS_QUOTA, as distribution kernels have)";
    else if (e == ENOSYS)
      q.why_not = "this kernel was built without quota support for ext4 (CONFIG_QUOTA, CONFIG_QFMT_V2); use a distribution kernel";
    else
      q.why_not = "cannot read the project quota state of " + at() + ": " + std::strerror(e);
    return q;
  }
  const bool accounted = sv.qs_flags & FS_QUOTA_PDQ_ACCT, enforced = sv.qs_flags & FS_QUOTA_PDQ_ENFD;
  if (fs == "xfs" && !accounted) {
    q.why_not = "XFS at " + at() + " is not mounted with project quotas: add prjquota to its mount options (in "
                "/etc/fstab; for the root filesystem, rootflags=prjquota on the kernel command line) and mount it again";
  } else if (fs == "xfs" && !enforced) {
    q.why_not = "XFS at " + at() + " accounts project quotas but does not enforce them (pqnoenforce): mount it with prjquota";
  } else if (!accounted) {
    const std::string where = at();
    q.why_not = "ext4 at " + where + " needs the project and quota features: unmount it, run tune2fs -O project,quota -Q prjquota " +
                Or(dev, "<device>") + ", and mount it with -o prjquota (in /etc/fstab too)";
  } else if (!enforced) {
    q.why_not = "ext4 at " + at() + " counts project quotas but does not enforce them: mount it with -o prjquota (in /etc/fstab too)";
  } else if (!HasSysAdmin()) {
    q.why_not = "setting quota limits needs the capability CAP_SYS_ADMIN, which the provisioner's container lacks: "
                "install it with kubectl apply -k manifests/overlays/quota (or quota-daemonset), which adds SYS_ADMIN";
  } else {
    q.method = QuotaMethod::kProject;
  }
  return q;
}

// The btrfs filesystem's directory in sysfs, /sys/fs/btrfs/<fsid>; "" with *err set when its
// identity cannot be read.
inline std::string BtrfsSysDir(int fd, std::string* err) {
  btrfs_ioctl_fs_info_args info {};
  if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) != 0) {
    *err = std::string("cannot read the btrfs filesystem's identity: ") + std::strerror(errno);
    return "";
  }
  char uuid[40];
  const unsigned char* u = info.fsid;
  std::snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return std::string("/sys/fs/btrfs/") + uuid;
}

inline QuotaSupport ProbeBtrfs(int root_fd) {
  QuotaSupport q;
  q.fs = "btrfs";
  const std::string sys = BtrfsSysDir(root_fd, &q.why_not);
  if (sys.empty()) return q;
  struct stat st {};
  // The qgroups folder is there while quotas are enabled; without /sys, the limit will say.
  if (stat(sys.c_str(), &st) == 0 && stat((sys + "/qgroups").c_str(), &st) != 0) {
    std::string mp, dev;
    MountOf(root_fd, &mp, &dev);
    q.why_not = "btrfs quotas (qgroups) are off on " + Or(mp, "the root's filesystem") +
                ": an administrator turns them on with btrfs quota enable " + Or(mp, "<mount point>") +
                " (this provisioner never does: it costs some write speed on the whole filesystem)";
  } else if (!HasSysAdmin()) {
    q.why_not = "setting qgroup limits needs the capability CAP_SYS_ADMIN, which the provisioner's container lacks: "
                "install it with kubectl apply -k manifests/overlays/quota (or quota-daemonset), which adds SYS_ADMIN";
  } else {
    q.method = QuotaMethod::kBtrfs;
  }
  return q;
}

// A key drawn at random once per process, for ProjectIdStart.
inline const std::array<unsigned char, 32>& ProjectIdKey() {
  static const std::array<unsigned char, 32> key = [] {
    std::array<unsigned char, 32> k{};
    if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) {
      std::random_device random;  // the kernel's getrandom too
      for (unsigned char& b : k) b = static_cast<unsigned char>(random());
    }
    return k;
  }();
  return key;
}

// Where a volume's search for a free project ID starts: the HMAC-SHA256 of `seed` (the volume's
// name) under `key`, in [0, kProjectIdSpan). Under ProjectIdKey(), a tenant cannot work it out
// from the volume's public name: a pod that owns its files can set them to any project ID, and
// would otherwise charge them to another volume's limit. The same seed gives the same start
// within a process; a restart draws another key, and nothing needs the old one: a volume's ID
// is read back from its directory (QuotaLimits::Of), never derived again.
inline uint64_t ProjectIdStart(const std::string& seed, const std::array<unsigned char, 32>& key = ProjectIdKey()) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(seed.data()),
       seed.size(), mac, &n);
  uint64_t start = 0;
  for (int i = 0; i < 8; ++i) start = (start << 8) | mac[i];
  return start % kProjectIdSpan;
}

// What project `id` holds: its usage and limits (zero for an ID never used).
inline int GetProject(int root_fd, unsigned id, if_dqblk* q) {
  *q = if_dqblk{};
  if (Quotactl(root_fd, Q_GETQUOTA, id, q) == 0) return 0;
  return errno == ENOENT || errno == ESRCH ? 0 : errno;  // XFS: ENOENT for an ID never used
}

inline int GetProjectOf(int dir_fd, unsigned* id) {
  fsxattr fa {};
  if (ioctl(dir_fd, FS_IOC_FSGETXATTR, &fa) != 0) return errno;
  *id = fa.fsx_projid;
  return 0;
}

inline int SetProjectOf(int dir_fd, unsigned id) {
  fsxattr fa {};
  if (ioctl(dir_fd, FS_IOC_FSGETXATTR, &fa) != 0) return errno;
  fa.fsx_projid = id;
  fa.fsx_xflags = id != 0 ? fa.fsx_xflags | FS_XFLAG_PROJINHERIT : fa.fsx_xflags & ~FS_XFLAG_PROJINHERIT;
  return ioctl(dir_fd, FS_IOC_FSSETXATTR, &fa) == 0 ? 0 : errno;
}

// Bytes rounded up to whole filesystem blocks.
inline uint64_t RoundUp(uint64_t bytes, uint64_t block) { return block == 0 ? bytes : (bytes + block - 1) / block * block; }

}  // namespace quota_detail

// Can the root's filesystem enforce sizes, and how? Looks, changes nothing.
inline QuotaSupport ProbeQuota(const Root& root) {
  struct statfs sf {};
  if (fstatfs(root.fd(), &sf) != 0)
    return {QuotaMethod::kNone, "", "cannot tell the filesystem of " + root.path() + ": " + std::strerror(errno)};
  switch (static_cast<unsigned long>(sf.f_type)) {
    case EXT4_SUPER_MAGIC: return quota_detail::ProbeProject(root.fd(), "ext4");
    case XFS_SUPER_MAGIC: return quota_detail::ProbeProject(root.fd(), "xfs");
    case BTRFS_SUPER_MAGIC: return quota_detail::ProbeBtrfs(root.fd());
    default: break;
  }
  char type[32];
  std::snprintf(type, sizeof type, "0x%lx", static_cast<unsigned long>(sf.f_type));
  const std::string name = sf.f_type == TMPFS_MAGIC ? "tmpfs" : sf.f_type == NFS_SUPER_MAGIC ? "NFS" : type;
  return {QuotaMethod::kNone, name,
          root.path() + " is on " + name + ", which cannot enforce a volume's size: only ext4 and XFS (project quotas) "
          "and btrfs (qgroups) can"};
}

// The limits of volumes on one root. Thread-safe (no state); two calls on the same name at
// once race like any two processes would (the caller serialises, as for Root).
class QuotaLimits {
 public:
  explicit QuotaLimits(const Root& root) : root_(root) {}

  // Makes root/name, as Root::MakeDir does (mode, owner), limited to `bytes`, by `method`
  // (from ProbeQuota). `seed` (the volume's name) spreads the project IDs. Idempotent: a
  // directory made by an earlier attempt keeps its ID, and gets the limit again.
  Result<QuotaId> Make(QuotaMethod method, const std::string& name, unsigned mode, int uid, int gid, uint64_t bytes,
                       const std::string& seed) const {
    if (method == QuotaMethod::kBtrfs) return MakeSubvolume(name, mode, uid, gid, bytes);
    if (method != QuotaMethod::kProject) return Status::Invalid("no quota method to make " + name + " with");
    if (Status s = root_.MakeDir(name, mode, uid, gid); !s.ok()) return s;
    fsops_detail::Fd dir(Open(name));
    if (dir.get() < 0) return Posix("open", name, errno);
    Result<unsigned> id = AssignProject(dir.get(), name, seed);
    if (!id.ok()) return id.status();
    if (Status s = SetLimit({QuotaMethod::kProject, *id}, name, bytes); !s.ok()) return s;
    return QuotaId{QuotaMethod::kProject, *id};
  }

  // Sets the volume's limit to `bytes` (rounded up to whole blocks), e.g. when it grows. btrfs:
  // on 1/ID where there is one (with 0/ID in it), else on 0/ID.
  Status SetLimit(const QuotaId& q, const std::string& name, uint64_t bytes) const {
    if (q.method == QuotaMethod::kBtrfs) {
      fsops_detail::Fd dir(Open(name));
      if (dir.get() < 0) return Posix("open", name, errno);
      const uint64_t rounded = quota_detail::RoundUp(bytes, BlockSize());
      uint64_t unused = 0;
      if (ReadQgroup(btrfs_qgroup::Level1(q.id), "max_referenced", &unused).ok()) return LimitLevel1(q.id, name, rounded);
      if (int e = btrfs_qgroup::Limit(root_.fd(), q.id, rounded); e != 0)
        return Posix("set the qgroup limit of", name, e, e == ENOTCONN ? "btrfs quotas are off (btrfs quota enable)" : "");
      return Status::Ok();
    }
    if_dqblk d {};
    d.dqb_bhardlimit = quota_detail::RoundUp(bytes, BlockSize()) / QIF_DQBLKSIZE;
    d.dqb_valid = QIF_BLIMITS;
    if (quota_detail::Quotactl(root_.fd(), Q_SETQUOTA, static_cast<unsigned>(q.id), &d) != 0)
      return Posix("set the limit of project " + std::to_string(q.id) + " for", name, errno);
    return Status::Ok();
  }

  // A btrfs volume just made or snapshotted, whose ID a removed subvolume may have had: its
  // limit set as SetLimit does, after a 1/ID left by that one is destroyed.
  Status LimitNew(const QuotaId& q, const std::string& name, uint64_t bytes) const {
    btrfs_qgroup::CreateQgroup(root_.fd(), btrfs_qgroup::Level1(q.id), false);  // a stale one: no members
    return SetLimit(q, name, bytes);
  }

  // A btrfs snapshot made for a volume whose size is not enforced: the limit btrfs copied from
  // its source is cleared. Ok when quotas are off (nothing to clear).
  Status ClearLimit(const QuotaId& q, const std::string& name) const {
    if (q.method != QuotaMethod::kBtrfs) return Status::Ok();
    int e = btrfs_qgroup::Limit(root_.fd(), q.id, btrfs_qgroup::kNoLimit);
    if (e == 0 || e == ENOTCONN) return Status::Ok();
    return Posix("clear the qgroup limit that the snapshot " + name + " inherited", "", e);
  }

  // The subvolumes a tenant made inside btrfs volume `q` (see btrfs_qgroup.hpp) that were not
  // yet under its limit are put there, and returned in *added (none when the volume has no
  // limit). The first one found moves the limit from 0/ID to 1/ID. Needs CAP_SYS_ADMIN.
  Status HoldNested(const QuotaId& q, const std::string& name, std::vector<btrfs_qgroup::Nested>* added) const {
    added->clear();
    if (q.method != QuotaMethod::kBtrfs) return Status::Ok();
    std::vector<btrfs_qgroup::Nested> nested;
    if (Status s = btrfs_qgroup::ListNested(root_.fd(), q.id, &nested); !s.ok()) return s.Wrap(root_.path() + "/" + name);
    if (nested.empty()) return Status::Ok();
    uint64_t own = 0, group = 0;
    if (!ReadQgroup(btrfs_qgroup::Level1(q.id), "max_referenced", &group).ok() || group == 0) {
      if (!ReadQgroup(q.id, "max_referenced", &own).ok() || own == 0) return Status::Ok();  // not limited
      if (Status s = LimitLevel1(q.id, name, own); !s.ok()) return s;
    }
    for (const btrfs_qgroup::Nested& n : nested) {
      bool is_new = false;
      if (int e = btrfs_qgroup::Assign(root_.fd(), n.id, btrfs_qgroup::Level1(q.id), &is_new); e != 0)
        return Posix("put the subvolume " + n.path + " under the limit of", name, e);
      if (is_new) added->push_back(n);
    }
    return Status::Ok();
  }

  // The IDs of the subvolumes inside btrfs volume `q`, for Release after its removal (none for
  // any other, or when they cannot be listed).
  std::vector<uint64_t> NestedIds(const QuotaId& q) const {
    std::vector<uint64_t> ids;
    std::vector<btrfs_qgroup::Nested> nested;
    if (q.method == QuotaMethod::kBtrfs && btrfs_qgroup::ListNested(root_.fd(), q.id, &nested).ok())
      for (const auto& n : nested) ids.push_back(n.id);
    return ids;
  }

  // After the volume's directory is gone: its project's limits are cleared, so that the ID
  // can serve again once nothing is charged to it. btrfs: its qgroups (0/ID, 1/ID, and those of
  // the subvolumes that were inside, `nested`) are destroyed where btrfs lets them go at once;
  // the rest go with their subvolumes once the cleaner has freed them (Linux 6.10+), or stay,
  // harmless (a 1/ID left over is made afresh if the ID serves again: LimitNew).
  Status Release(const QuotaId& q, const std::vector<uint64_t>& nested = {}) const {
    if (q.method == QuotaMethod::kBtrfs) {
      for (uint64_t id : nested) btrfs_qgroup::CreateQgroup(root_.fd(), id, false);
      btrfs_qgroup::CreateQgroup(root_.fd(), q.id, false);
      btrfs_qgroup::CreateQgroup(root_.fd(), btrfs_qgroup::Level1(q.id), false);
      return Status::Ok();
    }
    if_dqblk d {};
    d.dqb_valid = QIF_LIMITS;
    if (quota_detail::Quotactl(root_.fd(), Q_SETQUOTA, static_cast<unsigned>(q.id), &d) != 0)
      return Posix("clear the limits of project " + std::to_string(q.id) + " under", "", errno);
    return Status::Ok();
  }

  // The limit root/name is under, read from the directory itself (never from what a PV says): a
  // btrfs subvolume, a project ID of ours, or none (a plain directory, or one in a project of
  // the administrator's).
  Result<QuotaId> Of(const std::string& name) const {
    fsops_detail::Fd dir(Open(name));
    if (dir.get() < 0) return Posix("open", name, errno);
    fsops_detail::DirId root_id, id;
    if (int e = fsops_detail::GetDirId(root_.fd(), &root_id); e != 0) return Posix("stat", "", e);
    if (int e = fsops_detail::GetDirId(dir.get(), &id); e != 0) return Posix("stat", name, e);
    if (fsops_detail::IsSubvolumeIn(root_id, id, dir.get())) {
      btrfs_ioctl_ino_lookup_args lookup {};
      lookup.objectid = quota_detail::kBtrfsSubvolumeIno;
      if (ioctl(dir.get(), BTRFS_IOC_INO_LOOKUP, &lookup) != 0) return Posix("look up the subvolume ID of", name, errno);
      return QuotaId{QuotaMethod::kBtrfs, lookup.treeid};
    }
    unsigned project = 0;
    if (quota_detail::GetProjectOf(dir.get(), &project) != 0 || project < static_cast<unsigned>(quota_detail::kFirstProjectId))
      return QuotaId{};
    return QuotaId{QuotaMethod::kProject, project};
  }

  // Bytes charged to a btrfs volume's qgroup: 1/id (the volume and the subvolumes found inside
  // it, each extent once), or 0/id while none has been found. What
  // its limit is held against, data and metadata, as of the last transaction commit (at most
  // 30 s old by default). Read from sysfs (Linux 5.9+), which needs no privilege; kNotFound
  // without it.
  Status QgroupUsage(uint64_t id, uint64_t* bytes) const {
    if (ReadQgroup(btrfs_qgroup::Level1(id), "referenced", bytes).ok()) return Status::Ok();
    return ReadQgroup(id, "referenced", bytes);
  }

  // Bytes and inodes charged to project `id` (ext4, XFS).
  Status ProjectUsage(unsigned id, uint64_t* bytes, uint64_t* inodes) const {
    if_dqblk d {};
    if (int e = quota_detail::GetProject(root_.fd(), id, &d); e != 0) return Posix("read project " + std::to_string(id) + " under", "", e);
    *bytes = d.dqb_curspace;
    *inodes = d.dqb_curinodes;
    return Status::Ok();
  }

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
  Result<unsigned> AssignProject(int dir_fd, const std::string& name, const std::string& seed) const {
    using namespace quota_detail;
    unsigned mine = 0;
    if (int e = GetProjectOf(dir_fd, &mine); e != 0) return Posix("read the project ID of", name, e);
    // An earlier attempt's; a lower ID was inherited from the root (an administrator's project)
    // and is replaced: a file counts against one project only.
    if (mine >= static_cast<unsigned>(kFirstProjectId)) return mine;
    const uint64_t start = ProjectIdStart(seed);
    for (uint64_t i = 0; i < 1000; ++i) {
      const unsigned id = static_cast<unsigned>(kFirstProjectId + (start + i) % kProjectIdSpan);
      if_dqblk d {};
      if (int e = GetProject(root_.fd(), id, &d); e != 0) return Posix("read project " + std::to_string(id) + " for", name, e);
      if (d.dqb_curinodes != 0 || d.dqb_curspace != 0 || d.dqb_bhardlimit != 0 || d.dqb_bsoftlimit != 0 ||
          d.dqb_ihardlimit != 0 || d.dqb_isoftlimit != 0)
        continue;
      if (int e = SetProjectOf(dir_fd, id); e != 0)
        return Posix("set the project ID of", name, e,
                     e == EINVAL ? "the provisioner must run in the host's user namespace" :
                     e == EOPNOTSUPP ? "the filesystem lacks the project feature (ext4: tune2fs -O project)" : "");
      if (int e = GetProject(root_.fd(), id, &d); e != 0) return Posix("read project " + std::to_string(id) + " for", name, e);
      if (d.dqb_curinodes == 1) return id;
      SetProjectOf(dir_fd, 0);  // another directory took it at the same moment
    }
    return Status::Error("no free project ID found for " + root_.path() + "/" + name + " after 1000 tries");
  }

  Result<QuotaId> MakeSubvolume(const std::string& name, unsigned mode, int uid, int gid, uint64_t bytes) const {
    if (!Root::ValidName(name)) return Status::Invalid("invalid directory name \"" + name + "\"");
    btrfs_ioctl_vol_args_v2 args {};
    std::snprintf(args.name, sizeof args.name, "%s", name.c_str());
    bool fresh = true;
    if (ioctl(root_.fd(), BTRFS_IOC_SUBVOL_CREATE_V2, &args) != 0) {
      if (errno != EEXIST) return Posix("create the btrfs subvolume", name, errno);
      fresh = false;
    }
    fsops_detail::Fd dir(Open(name));
    if (dir.get() < 0) return Posix("open", name, errno);
    struct stat st {};
    if (fstat(dir.get(), &st) != 0) return Posix("stat", name, errno);
    if (st.st_ino != quota_detail::kBtrfsSubvolumeIno)
      return Status(Status::kConflict, root_.path() + "/" + name + " exists and is a plain directory, not a subvolume; left as it is");
    btrfs_ioctl_ino_lookup_args lookup {};
    lookup.objectid = quota_detail::kBtrfsSubvolumeIno;
    if (ioctl(dir.get(), BTRFS_IOC_INO_LOOKUP, &lookup) != 0) return Posix("look up the subvolume ID of", name, errno);
    if ((uid != -1 || gid != -1) && fchown(dir.get(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0)
      return Posix("chown", name, errno);
    if (fchmod(dir.get(), static_cast<mode_t>(mode)) != 0) return Posix("chmod", name, errno);
    QuotaId q{QuotaMethod::kBtrfs, lookup.treeid};
    if (Status s = fresh ? LimitNew(q, name, bytes) : SetLimit(q, name, bytes); !s.ok()) return s;
    return q;
  }

  // A number in the sysfs folder of qgroup `qgroupid` (level/id, as btrfs_qgroup::Level1 makes).
  Status ReadQgroup(uint64_t qgroupid, const char* what, uint64_t* value) const {
    std::string err;
    const std::string sys = quota_detail::BtrfsSysDir(root_.fd(), &err);
    if (sys.empty()) return Status::Error(err);
    const std::string file = sys + "/qgroups/" + std::to_string(qgroupid >> BTRFS_QGROUP_LEVEL_SHIFT) + "_" +
                             std::to_string(qgroupid & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1)) + "/" + what;
    FILE* f = std::fopen(file.c_str(), "re");
    if (f == nullptr) return Status(Status::kNotFound, "cannot read " + file + ": " + std::strerror(errno), errno);
    unsigned long long v = 0;
    const bool read = std::fscanf(f, "%llu", &v) == 1;
    std::fclose(f);
    if (!read) return Status::Error(file + " does not hold a number");
    *value = v;
    return Status::Ok();
  }

  // The limit of btrfs volume `id`, `bytes` (rounded), on 1/id with 0/id in it; 0/id unlimited
  // (a snapshot would copy it). Assigning a 0/id that shares extents (a snapshot clone) starts
  // a rescan of the filesystem's qgroups (btrfs_qgroup::Assign).
  Status LimitLevel1(uint64_t id, const std::string& name, uint64_t bytes) const {
    const char* off = "btrfs quotas are off (btrfs quota enable)";
    const uint64_t group = btrfs_qgroup::Level1(id);
    if (int e = btrfs_qgroup::CreateQgroup(root_.fd(), group, true); e != 0 && e != EEXIST)
      return Posix("make the qgroup 1/" + std::to_string(id) + " of", name, e, e == ENOTCONN ? off : "");
    bool added = false;
    if (int e = btrfs_qgroup::Assign(root_.fd(), id, group, &added); e != 0)
      return Posix("put the qgroup 0/" + std::to_string(id) + " in 1/" + std::to_string(id) + " for", name, e);
    if (int e = btrfs_qgroup::Limit(root_.fd(), group, bytes); e != 0)
      return Posix("set the qgroup limit of", name, e, e == ENOTCONN ? off : "");
    if (int e = btrfs_qgroup::Limit(root_.fd(), id, btrfs_qgroup::kNoLimit); e != 0)
      return Posix("clear the limit of the qgroup 0/" + std::to_string(id) + " of", name, e);
    return Status::Ok();
  }

  int Open(const std::string& name) const { return openat(root_.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }

  uint64_t BlockSize() const {
    struct statfs sf {};
    return fstatfs(root_.fd(), &sf) == 0 && sf.f_bsize > 0 ? static_cast<uint64_t>(sf.f_bsize) : 4096;
  }

  // A failed call as a Status naming the path; EPERM says which capability is missing.
  Status Posix(const std::string& what, const std::string& name, int err, std::string hint = "") const {
    Status s = PosixError(what + " " + (name.empty() ? root_.path() : root_.path() + "/" + name), err);
    if (hint.empty() && err == EPERM)
    hint = "the provisioner's container needs the capability SYS_ADMIN (kubectl apply -k manifests/overlays/quota)";
    return hint.empty() ? s : Status(s.code(), s.message() + "; " + hint, err);
  }

  const Root& root_;
};
