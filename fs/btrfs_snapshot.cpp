// The body of copy_tree.hpp's SnapshotSubvolume: a clone made as a btrfs snapshot.
#include "fs/copy_tree.hpp"

#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "fs/fsops.hpp"

namespace {
namespace copy_detail {

constexpr ino_t kSubvolumeRootIno = 256;  // BTRFS_FIRST_FREE_OBJECTID (btrfs_tree.h), as quota.hpp

// The filesystem id btrfs gives all subvolumes of one filesystem (st_dev differs per subvolume).
int BtrfsFsid(int fd, std::string* fsid) {
  btrfs_ioctl_fs_info_args info{};
  if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) != 0) return errno;
  fsid->assign(reinterpret_cast<const char*>(info.fsid), sizeof info.fsid);
  return 0;
}

bool OnBtrfs(int fd) {
  struct statfs sf;
  return fstatfs(fd, &sf) == 0 && static_cast<uint32_t>(sf.f_type) == BTRFS_SUPER_MAGIC;
}

}  // namespace copy_detail
}  // namespace

Status SnapshotSubvolume(int src_fd, int dst_parent_fd, const std::string& name) {
  if (!Root::ValidName(name)) return Status::Invalid("invalid snapshot name \"" + fsops_detail::Printable(name) + "\"");
  if (name.size() > BTRFS_SUBVOL_NAME_MAX) return Status::Invalid("snapshot name too long for btrfs");
  if (!copy_detail::OnBtrfs(src_fd)) return Status::Invalid("the source is not on btrfs");
  if (!copy_detail::OnBtrfs(dst_parent_fd)) return Status::Invalid("the destination is not on btrfs");
  struct stat st;
  if (fstat(src_fd, &st) != 0) return PosixError("stat the source", errno);
  if (!S_ISDIR(st.st_mode) || st.st_ino != copy_detail::kSubvolumeRootIno) {
    return Status::Invalid("the source is not a btrfs subvolume (its root directory would be inode 256, not " +
                           std::to_string(st.st_ino) + ")");
  }
  std::string src_fsid, dst_fsid;
  if (int err = copy_detail::BtrfsFsid(src_fd, &src_fsid)) return PosixError("read the btrfs filesystem id of the source", err);
  if (int err = copy_detail::BtrfsFsid(dst_parent_fd, &dst_fsid)) return PosixError("read the btrfs filesystem id of the destination", err);
  if (src_fsid != dst_fsid) return Status::Invalid("the source and the destination are on different btrfs filesystems");
  btrfs_ioctl_vol_args_v2 args{};
  args.fd = src_fd;  // flags 0: writable
  std::memcpy(args.name, name.data(), name.size());
  if (ioctl(dst_parent_fd, BTRFS_IOC_SNAP_CREATE_V2, &args) != 0) {
    const int err = errno;
    if (err == EXDEV || err == EOPNOTSUPP || err == ENOTTY) return Status(Status::kInvalid, "btrfs snapshot refused: " + fsops_detail::ErrnoText(err), err);
    return PosixError("btrfs snapshot of the source as " + fsops_detail::Printable(name), err);
  }
  return Status::Ok();
}
