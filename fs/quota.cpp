// The bodies of quota.hpp: enforced sizes, by project quotas (ext4, XFS) or btrfs qgroups.
#include "fs/quota.hpp"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/text.hpp"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443  // the same number on every architecture
#endif

namespace quota_detail {

namespace {

constexpr uint64_t kBtrfsSubvolumeIno = 256;  // BTRFS_FIRST_FREE_OBJECTID: a subvolume's root

int GetProjectOf(int dir_fd, unsigned* id) {
  fsxattr fa {};
  if (ioctl(dir_fd, FS_IOC_FSGETXATTR, &fa) != 0) return errno;
  *id = fa.fsx_projid;
  return 0;
}

// Bytes rounded up to whole filesystem blocks.
uint64_t RoundUp(uint64_t bytes, uint64_t block) { return block == 0 ? bytes : (bytes + block - 1) / block * block; }

}  // namespace

const std::array<unsigned char, 32>& ProjectIdKey() {
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

uint64_t ProjectIdStart(const std::string& seed, const std::array<unsigned char, 32>& key) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(seed.data()),
       seed.size(), mac, &n);
  uint64_t start = 0;
  for (int i = 0; i < 8; ++i) start = (start << 8) | mac[i];
  return start % kProjectIdSpan;
}

int GetProject(int root_fd, unsigned id, if_dqblk* q) {
  *q = if_dqblk{};
  if (Quotactl(root_fd, Q_GETQUOTA, id, q) == 0) return 0;
  return errno == ENOENT || errno == ESRCH ? 0 : errno;  // XFS: ENOENT for an ID never used
}

int SetProjectOf(int dir_fd, unsigned id) {
  fsxattr fa {};
  if (ioctl(dir_fd, FS_IOC_FSGETXATTR, &fa) != 0) return errno;
  fa.fsx_projid = id;
  fa.fsx_xflags = id != 0 ? fa.fsx_xflags | FS_XFLAG_PROJINHERIT : fa.fsx_xflags & ~FS_XFLAG_PROJINHERIT;
  return ioctl(dir_fd, FS_IOC_FSSETXATTR, &fa) == 0 ? 0 : errno;
}

int Quotactl(int fd, int cmd, unsigned id, void* addr) {
  return static_cast<int>(syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, addr));
}

std::string BtrfsSysDir(int fd, std::string* err) {
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

}  // namespace quota_detail

Result<QuotaId> QuotaLimits::Make(QuotaMethod method, const std::string& name, unsigned mode, int uid, int gid,
                                  uint64_t bytes, const std::string& seed) const {
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

Status QuotaLimits::SetLimit(const QuotaId& q, const std::string& name, uint64_t bytes) const {
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

Status QuotaLimits::LimitNew(const QuotaId& q, const std::string& name, uint64_t bytes) const {
  btrfs_qgroup::CreateQgroup(root_.fd(), btrfs_qgroup::Level1(q.id), false);  // a stale one: no members
  return SetLimit(q, name, bytes);
}

Status QuotaLimits::ClearLimit(const QuotaId& q, const std::string& name) const {
  if (q.method != QuotaMethod::kBtrfs) return Status::Ok();
  int e = btrfs_qgroup::Limit(root_.fd(), q.id, btrfs_qgroup::kNoLimit);
  if (e == 0 || e == ENOTCONN) return Status::Ok();
  return Posix("clear the qgroup limit that the snapshot " + name + " inherited", "", e);
}

Status QuotaLimits::Unlimit(const QuotaId& q, const std::string& name, const std::vector<uint64_t>& nested) const {
  if (q.method == QuotaMethod::kProject) return Release(q);
  if (q.method != QuotaMethod::kBtrfs) return Status::Ok();
  std::vector<uint64_t> groups{btrfs_qgroup::Level1(q.id), q.id};
  groups.insert(groups.end(), nested.begin(), nested.end());
  for (uint64_t group : groups) {
    int e = btrfs_qgroup::Limit(root_.fd(), group, btrfs_qgroup::kNoLimit);
    if (e == ENOTCONN) return Status::Ok();  // quotas are off: no limit holds
    if (e != 0 && !(e == ENOENT && group != q.id))  // no 1/ID (the limit was on 0/ID), or a nested one gone
      return Posix("clear the qgroup limit of", name, e);
  }
  return Status::Ok();
}

Status QuotaLimits::HoldNested(const QuotaId& q, const std::string& name, std::vector<btrfs_qgroup::Nested>* added) const {
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

std::vector<uint64_t> QuotaLimits::NestedIds(const QuotaId& q) const {
  std::vector<uint64_t> ids;
  std::vector<btrfs_qgroup::Nested> nested;
  if (q.method == QuotaMethod::kBtrfs && btrfs_qgroup::ListNested(root_.fd(), q.id, &nested).ok())
    for (const auto& n : nested) ids.push_back(n.id);
  return ids;
}

Status QuotaLimits::Release(const QuotaId& q, const std::vector<uint64_t>& nested) const {
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

Result<QuotaId> QuotaLimits::Of(const std::string& name) const {
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

Status QuotaLimits::QgroupUsage(uint64_t id, uint64_t* bytes) const {
  if (ReadQgroup(btrfs_qgroup::Level1(id), "referenced", bytes).ok()) return Status::Ok();
  return ReadQgroup(id, "referenced", bytes);
}

Status QuotaLimits::ProjectUsage(unsigned id, uint64_t* bytes, uint64_t* inodes) const {
  if_dqblk d {};
  if (int e = quota_detail::GetProject(root_.fd(), id, &d); e != 0) return Posix("read project " + std::to_string(id) + " under", "", e);
  *bytes = d.dqb_curspace;
  *inodes = d.dqb_curinodes;
  return Status::Ok();
}

Result<unsigned> QuotaLimits::AssignProject(int dir_fd, const std::string& name, const std::string& seed) const {
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

Result<QuotaId> QuotaLimits::MakeSubvolume(const std::string& name, unsigned mode, int uid, int gid, uint64_t bytes) const {
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

Status QuotaLimits::ReadQgroup(uint64_t qgroupid, const char* what, uint64_t* value) const {
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

Status QuotaLimits::LimitLevel1(uint64_t id, const std::string& name, uint64_t bytes) const {
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

uint64_t QuotaLimits::BlockSize() const {
  struct statfs sf {};
  return fstatfs(root_.fd(), &sf) == 0 && sf.f_bsize > 0 ? static_cast<uint64_t>(sf.f_bsize) : 4096;
}

Status QuotaLimits::Posix(const std::string& what, const std::string& name, int err, std::string hint) const {
  Status s = PosixError(what + " " + (name.empty() ? root_.path() : root_.path() + "/" + name), err);
  if (hint.empty() && err == EPERM)
  hint = "the provisioner's container needs the capability SYS_ADMIN (kubectl apply -k manifests/overlays/quota)";
  return hint.empty() ? s : Status(s.code(), s.message() + "; " + hint, err);
}

int QuotaLimits::Open(const std::string& name) const { return openat(root_.fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }
