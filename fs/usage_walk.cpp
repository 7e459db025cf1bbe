// The bodies of usage_walk.hpp: counting what one volume directory holds, as du -x does.
#include "fs/usage_walk.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

namespace {
namespace usage_detail {

// The identity, size and link count of `name` in dir_fd (of dir_fd itself when name is ""),
// never following a symlink. Returns 0 or an errno value.
int StatEntry(int dir_fd, const char* name, fsops_detail::DirId* id, uint64_t* blocks, uint64_t* links) {
  const int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC | (*name ? 0 : AT_EMPTY_PATH);
  struct statx sx;
  if (statx(dir_fd, name, flags, STATX_TYPE | STATX_MODE | STATX_INO | STATX_NLINK | STATX_BLOCKS | STATX_MNT_ID, &sx) == 0) {
    *id = fsops_detail::DirIdOf(sx);
    *blocks = sx.stx_blocks;
    *links = sx.stx_nlink;
    return 0;
  }
  if (errno != ENOSYS) return errno;
  struct stat st;  // kernels before 4.11
  if (fstatat(dir_fd, name, &st, (flags & ~AT_STATX_DONT_SYNC)) != 0) return errno;
  *id = fsops_detail::DirId{st.st_dev, st.st_ino, st.st_mode, 0, false};
  *blocks = static_cast<uint64_t>(st.st_blocks);
  *links = st.st_nlink;
  return 0;
}

using fsops_detail::OpenDirNoFollow;

}  // namespace usage_detail
}  // namespace

Result<UsageWalk> UsageWalk::Begin(const Root& root, const std::string& name) {
  using namespace fsops_detail;
  if (!Root::ValidName(name)) return Status::Invalid("invalid directory name \"" + Printable(name) + "\"");
  const std::string where = Printable(Join(root.path(), name));
  DirId root_id;
  if (int err = GetDirId(root.fd(), &root_id)) return PosixError("stat " + Printable(root.path()), err);
  Fd fd(usage_detail::OpenDirNoFollow(root.fd(), name.c_str()));
  if (fd.get() < 0) {
    if (errno == ELOOP || errno == ENOTDIR) return Status::Error(where + " is not a directory (a file or a symlink)");
    return PosixError("open " + where, errno);
  }
  UsageWalk w;
  uint64_t blocks = 0, links = 0;
  if (int err = usage_detail::StatEntry(fd.get(), "", &w.vol_id_, &blocks, &links)) return PosixError("stat " + where, err);
  if (!fsops_detail::OnMountOf(w.vol_id_, root_id) && !fsops_detail::IsSubvolumeIn(root_id, w.vol_id_, fd.get()))
    return Status::Error(where + " is a mount point; not walked");
  w.count_.bytes = blocks * 512;
  w.count_.inodes = 1;
  w.frames_.push_back(Frame{name, w.vol_id_.ino, w.vol_id_.dev, std::move(fd)});
  w.buf_ = std::make_unique<char[]>(kBufBytes);
  return Result<UsageWalk>(std::move(w));
}

bool UsageWalk::Step(size_t entries) {
  while (!done_ && entries > 0) {
    if (frames_.back().fd.get() < 0 && !Reopen()) continue;
    if (pos_ >= len_ && !Fill()) {
      Pop();
      continue;
    }
    const auto* d = reinterpret_cast<const dirent64*>(buf_.get() + pos_);
    pos_ += d->d_reclen;
    frames_.back().cookie = d->d_off;
    const char* n = d->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    --entries;
    Visit(n);
  }
  return done_;
}

Result<FsFigures> UsageWalk::Filesystem() const {
  struct statvfs vfs;
  if (frames_.empty()) return Status::Error("no walk");
  if (fstatvfs(frames_.front().fd.get(), &vfs) != 0) return PosixError("statvfs " + frames_.front().name, errno);
  FsFigures f;
  f.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  f.inodes = vfs.f_files;
  f.inodes_free = vfs.f_ffree;
  return f;
}

bool UsageWalk::Fill() {
  Frame& top = frames_.back();
  if (top.seek) {
    if (lseek(top.fd.get(), top.cookie, SEEK_SET) < 0) return Skip();
    top.seek = false;
  }
  ssize_t n = getdents64(top.fd.get(), buf_.get(), kBufBytes);
  if (n < 0) return errno == ENOENT ? false : Skip();
  pos_ = 0;
  len_ = static_cast<size_t>(n);
  return n > 0;
}

bool UsageWalk::Skip() {
  ++count_.skipped;
  return false;
}

void UsageWalk::Visit(const char* name) {
  fsops_detail::DirId id;
  uint64_t blocks = 0, links = 0;
  if (int err = usage_detail::StatEntry(frames_.back().fd.get(), name, &id, &blocks, &links)) {
    if (err != ENOENT) Skip();  // ENOENT: removed since it was listed
    return;
  }
  if (!fsops_detail::OnMountOf(id, vol_id_)) {  // a mount point, or a file mounted over
    Skip();
    return;
  }
  const bool dir = S_ISDIR(id.mode);
  if (!dir && links > 1 && !FirstLink(id.dev, id.ino)) return;
  count_.bytes += blocks * 512;
  ++count_.inodes;
  if (dir) Enter(name, id);
}

bool UsageWalk::FirstLink(dev_t dev, ino_t ino) {
  const std::pair<dev_t, ino_t> key{dev, ino};  // inode numbers repeat in btrfs subvolumes
  if (links_.count(key)) return false;
  if (links_.size() < kUsageLinksRemembered) links_.insert(key);
  return true;
}

void UsageWalk::Enter(const char* name, const fsops_detail::DirId& id) {
  if (frames_.size() > kUsageMaxDepth) {
    Skip();
    return;
  }
  fsops_detail::Fd child(usage_detail::OpenDirNoFollow(frames_.back().fd.get(), name));
  if (child.get() < 0) {
    if (errno != ENOENT) Skip();  // replaced by a file or symlink since the stat, or unreadable
    return;
  }
  if (!Same(child.get(), id.dev, id.ino)) {
    Skip();
    return;
  }
  frames_.back().seek = true;
  pos_ = len_ = 0;
  frames_.push_back(Frame{name, id.ino, id.dev, std::move(child)});
  // Keep at most kUsageOpenDirs open: frame 0 and the top ones. Closed ones lie just above 0.
  size_t open = 0;
  for (size_t i = frames_.size() - 1; i >= 1 && frames_[i].fd.get() >= 0; --i) ++open;
  if (open >= kUsageOpenDirs) frames_[frames_.size() - open].fd.Reset();
}

bool UsageWalk::Same(int fd, dev_t dev, ino_t ino) const {
  fsops_detail::DirId got;
  return fsops_detail::GetDirId(fd, &got) == 0 && got.ino == ino && got.dev == dev && fsops_detail::OnMountOf(got, vol_id_);
}

bool UsageWalk::Reopen() {
  const size_t top = frames_.size() - 1;
  size_t i = top;
  while (frames_[i - 1].fd.get() < 0) --i;  // frame 0 is always open
  for (; i <= top; ++i) {
    Frame& f = frames_[i];
    f.fd = fsops_detail::Fd(usage_detail::OpenDirNoFollow(frames_[i - 1].fd.get(), f.name.c_str()));
    if (f.fd.get() < 0 || !Same(f.fd.get(), f.dev, f.ino)) {
      Skip();
      frames_.resize(i);
      frames_.back().seek = true;
      return false;
    }
    f.seek = true;
    if (i - 1 >= 1 && i - 1 + kUsageOpenDirs <= top + 1) frames_[i - 1].fd.Reset();
  }
  return true;
}

void UsageWalk::Pop() {
  pos_ = len_ = 0;
  if (frames_.size() == 1) {
    done_ = true;
    buf_.reset();
    links_ = {};
    return;
  }
  frames_.pop_back();
  frames_.back().seek = true;
}
