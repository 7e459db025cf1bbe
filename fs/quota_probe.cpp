// Can a root's filesystem enforce sizes (ProbeQuota, quota.hpp)? Looks, changes nothing; the mount
// table is read only to word advice.
#include "fs/quota.hpp"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/dqblk_xfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/text.hpp"

namespace quota_detail {

namespace {

constexpr int kCapSysAdmin = 21;

// Is the kernel at least major.minor?
bool KernelAtLeast(int major, int minor) {
  struct utsname u {};
  int a = 0, b = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &a, &b) != 2) return true;  // cannot tell: try
  return a > major || (a == major && b >= minor);
}

// Does this process have CAP_SYS_ADMIN in its effective set? (/proc/self/status, CapEff, read
// once: a container's capabilities are fixed when it starts.)
bool HasSysAdmin() {
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
void MountOf(int fd, std::string* mount_point, std::string* device) {
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

QuotaSupport ProbeProject(int root_fd, const std::string& fs) {
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

QuotaSupport ProbeBtrfs(int root_fd) {
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

}  // namespace

}  // namespace quota_detail

QuotaSupport ProbeQuota(const Root& root) {
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
