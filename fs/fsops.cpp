// The bodies of fsops.hpp (safe create and remove of volume directories inside one root); the
// rules they keep are at the top of fsops.hpp, the removal walk in tree_remover.cpp.
#include "fs/fsops.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>

#include "base/paths.hpp"
#include "fs/tree_remover.hpp"

namespace fsops_detail {

namespace {

// strerror_r comes in a GNU (char*) and an XSI (int) flavour; accept both.
[[maybe_unused]] inline const char* StrerrorResult(int rc, const char* buf) { return rc == 0 ? buf : "unknown error"; }
[[maybe_unused]] inline const char* StrerrorResult(const char* text, const char*) { return text; }

}  // namespace

std::string ErrnoText(int err) {
  char buf[128] = {0};
  return StrerrorResult(strerror_r(err, buf, sizeof buf), buf);
}

}  // namespace fsops_detail

Status PosixError(const std::string& context, int err) {
  Status::Code code = err == ENOENT ? Status::kNotFound : err == EEXIST ? Status::kConflict : Status::kError;
  return Status(code, context + ": " + fsops_detail::ErrnoText(err), err);
}

std::string FixHint(const Status& s) {
  switch (s.sys_errno()) {
    case EACCES:
    case EPERM: return "check that PV_DIR is writable by the provisioner (owner, mode, SELinux or AppArmor)";
    case EROFS: return "PV_DIR is on a read-only filesystem: mount it read-write";
    case ENOSPC: return "the filesystem of PV_DIR is full: free some space";
    case EDQUOT: return "the disk quota of PV_DIR is used up";
    case EMFILE:
    case ENFILE: return "the provisioner has too many files open: raise its open-file limit";
    case ENOENT:
    case ESTALE: return "PV_DIR is gone or was replaced: check the mount, then restart the provisioner";
    default: return "";
  }
}

namespace fsops_detail {

std::string Printable(const std::string& path) {
  std::string out = path.size() <= 420 ? path : path.substr(0, 200) + "..." + path.substr(path.size() - 200);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

DirId DirIdOf(const struct statx& sx) {
  const bool has_mnt = (sx.stx_mask & STATX_MNT_ID) != 0;
  DirId id{makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, sx.stx_mode, has_mnt ? sx.stx_mnt_id : 0, has_mnt};
  id.has_mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0;
  id.mount_root = id.has_mount_root && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  return id;
}

int GetDirId(int fd, DirId* id) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MODE | STATX_INO | STATX_MNT_ID, &sx) == 0) {
    *id = DirIdOf(sx);
    return 0;
  }
  if (errno != ENOSYS) return errno;
  struct stat st;  // kernels before 4.11: st_dev only
  if (fstat(fd, &st) != 0) return errno;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->mode = st.st_mode;
  id->has_mnt = false;
  return 0;
}

bool SameMount(const DirId& a, const DirId& b) {
  return a.dev == b.dev && (!a.has_mnt || !b.has_mnt || a.mnt == b.mnt);
}

bool OnMountOf(const DirId& entry, const DirId& top) {
  if (entry.has_mount_root) return !entry.mount_root && (!entry.has_mnt || !top.has_mnt || entry.mnt == top.mnt);
  return SameMount(entry, top);
}

bool IsSubvolumeIn(const DirId& parent, const DirId& dir, int fd) {
  if (!parent.has_mnt || !dir.has_mnt || parent.mnt != dir.mnt || dir.ino != 256) return false;
  struct statfs sf;
  return fstatfs(fd, &sf) == 0 && static_cast<uint32_t>(sf.f_type) == BTRFS_SUPER_MAGIC;  // an int on 32-bit ARM
}

int OpenDirNoFollow(int dir_fd, const char* name) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dir_fd, name, flags | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = openat(dir_fd, name, flags);
  return fd;
}

size_t CheckpointToClose(const std::vector<size_t>& open) {
  const uint64_t top = open.back();
  size_t best = 1;
  for (size_t j = 2; j + 1 < open.size(); ++j) {
    // gap(j) / span(j) < gap(best) / span(best), without division
    if ((open[j + 1] - open[j - 1]) * (top - open[best - 1] + 1) < (open[best + 1] - open[best - 1]) * (top - open[j - 1] + 1))
      best = j;
  }
  return best;
}

bool IsDirNoFollow(int parent_fd, const std::string& name) {
  struct stat st;
  return fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

std::string UnescapeMountPath(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '3' &&
        text[i + 2] >= '0' && text[i + 2] <= '7' && text[i + 3] >= '0' && text[i + 3] <= '7') {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0'));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace fsops_detail

Root& Root::operator=(Root&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Result<Root> Root::Open(const std::string& path) {
  std::string normalised;
  const std::string shown = fsops_detail::Printable(path);
  if (!NormaliseAbsolute(path, &normalised) || normalised != path) {
    return Status::Invalid("root directory \"" + shown +
                           "\" must be an absolute, normalised path (no \"..\", \".\", \"//\" or trailing \"/\")");
  }
  if (path == "/") return Status::Invalid("root directory must not be \"/\"");
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return PosixError("root directory " + shown, errno);
  if (S_ISLNK(st.st_mode)) return SymlinkError(path);
  if (!S_ISDIR(st.st_mode)) return Status::Invalid("root directory " + shown + " is not a directory");
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) return SymlinkError(path);  // swapped since lstat
  if (fd < 0) return PosixError("open root directory " + shown, errno);
  Root root;
  root.path_ = path;
  root.fd_ = fd;
  return Result<Root>(std::move(root));
}

Result<Root> Root::OpenBelow(const std::string& rel, bool create) const {
  fsops_detail::DirId top;
  if (int e = fsops_detail::GetDirId(fd_, &top); e != 0) return PosixError("stat " + fsops_detail::Printable(path_), e);
  fsops_detail::Fd dir(dup(fd_));
  if (dir.get() < 0) return PosixError("dup the root's descriptor", errno);
  std::string path = path_;
  size_t start = 0;
  do {
    const size_t slash = rel.find('/', start);
    const std::string name = rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? rel.size() : slash + 1;
    if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(rel) + "\"");
    path = fsops_detail::Join(path, name);
    const std::string shown = fsops_detail::Printable(path);
    if (create && mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST) return PosixError("mkdir " + shown, errno);
    fsops_detail::Fd next(openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0 && (errno == ELOOP || errno == ENOTDIR))
      return Status(Status::kConflict, shown + " is not a directory (a file or symlink); left as it is");
    if (next.get() < 0) return PosixError("open " + shown, errno);
    fsops_detail::DirId id;
    if (int e = fsops_detail::GetDirId(next.get(), &id); e != 0) return PosixError("stat " + shown, e);
    if (!fsops_detail::SameMount(id, top) || (id.has_mount_root && id.mount_root))
      return Status(Status::kConflict, shown + " is a mount point or a btrfs subvolume (a volume?), which holds no "
                                       "other volume; left as it is");
    dir = std::move(next);
  } while (start < rel.size());
  Root below;
  below.path_ = path;
  below.fd_ = dir.Release();
  return Result<Root>(std::move(below));
}

bool Root::ValidName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

Status Root::MakeDir(const std::string& name, unsigned mode, int uid, int gid) const {
  if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
  if (mode > 07777) return Status::Invalid("invalid directory mode " + std::to_string(mode));
  const std::string where = fsops_detail::Printable(fsops_detail::Join(path_, name));
  if (mkdirat(fd_, name.c_str(), 0700) != 0 && errno != EEXIST) return PosixError("mkdir " + where, errno);
  fsops_detail::Fd dir(openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return Status(Status::kConflict, where + " exists and is not a directory (a file or symlink); left as it is");
    }
    return PosixError("open " + where, errno);
  }
  if (Status s = NotAMountPoint(dir.get(), where); !s.ok()) return s;
  // Owner first: chown clears set-user/group-ID bits that the mode may ask for.
  if ((uid != -1 || gid != -1) && fchown(dir.get(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
    return PosixError("chown " + where, errno);
  }
  if (fchmod(dir.get(), static_cast<mode_t>(mode)) != 0) return PosixError("chmod " + where, errno);
  return Status::Ok();
}

Status Root::NotAMountPoint(int dir_fd, const std::string& where) const {
  fsops_detail::DirId root_id, id;
  if (fsops_detail::GetDirId(fd_, &root_id) != 0 || fsops_detail::GetDirId(dir_fd, &id) != 0)
    return PosixError("stat " + where, errno);
  if (fsops_detail::OnMountOf(id, root_id) || fsops_detail::IsSubvolumeIn(root_id, id, dir_fd)) return Status::Ok();
  return Status(Status::kConflict, where + " is a mount point (another filesystem is mounted there), which is never a volume's "
                                           "directory; left as it is");
}

Status Root::NotAMountPoint(const std::string& name) const {
  if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
  const std::string where = fsops_detail::Printable(fsops_detail::Join(path_, name));
  fsops_detail::Fd dir(openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) return errno == ENOENT ? Status::Ok() : PosixError("open " + where, errno);
  return NotAMountPoint(dir.get(), where);
}

Status Root::RemoveTree(const std::string& name, const std::atomic<bool>* cancel) const {
  return RemoveTree(name, fsops_detail::kDefaultMaxOpenDirs, cancel);
}

Status Root::RemoveTree(const std::string& name, int max_open_dirs, const std::atomic<bool>* cancel) const {
  if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
  return fsops_detail::TreeRemover(fd_, path_, name, max_open_dirs, cancel).Run();
}

Status Root::RemoveIfEmpty(const std::string& name) const {
  if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
  if (unlinkat(fd_, name.c_str(), AT_REMOVEDIR) == 0) return Status::Ok();
  int err = errno;
  std::string where = fsops_detail::Printable(fsops_detail::Join(path_, name));
  if (err == ENOTEMPTY || err == EEXIST) return Status(Status::kConflict, where + " is not empty");
  return PosixError("rmdir " + where, err);
}

Result<std::vector<std::string>> Root::ListDirs() const {
  // A descriptor of its own, so the listing has its own position.
  fsops_detail::Fd fd(openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return PosixError("open " + path_, errno);
  DIR* dir = fdopendir(fd.get());
  if (dir == nullptr) return PosixError("list " + path_, errno);
  fd.Release();
  std::vector<std::string> names;
  int err = 0;
  for (;;) {
    errno = 0;
    dirent* entry = readdir(dir);
    if (entry == nullptr) {
      err = errno;
      break;
    }
    std::string name = entry->d_name;
    if (!ValidName(name)) continue;
    bool is_dir = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) is_dir = fsops_detail::IsDirNoFollow(dirfd(dir), name);
    if (is_dir) names.push_back(name);
  }
  closedir(dir);
  if (err != 0) return PosixError("list " + path_, err);
  std::sort(names.begin(), names.end());
  return names;
}

Status Root::Space(uint64_t* free_bytes, uint64_t* total_bytes) const {
  struct statvfs vfs;
  if (fstatvfs(fd_, &vfs) != 0) return PosixError("statvfs " + path_, errno);
  *free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  *total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  return Status::Ok();
}

Status Root::StillAtPath() const {
  struct stat held, now;
  if (fstat(fd_, &held) != 0) return PosixError("stat the open root directory " + fsops_detail::Printable(path_), errno);
  if (held.st_nlink == 0) return Status::Error(fsops_detail::Printable(path_) + " was removed while in use");
  if (stat(path_.c_str(), &now) != 0) return PosixError(fsops_detail::Printable(path_), errno);
  if (now.st_dev != held.st_dev || now.st_ino != held.st_ino)
    return Status::Error(fsops_detail::Printable(path_) +
                         " is no longer the directory opened at start (renamed, replaced or unmounted)");
  return Status::Ok();
}

Status Root::FilesystemMounted() const {
  std::string root_of_mount;
  bool listed = false;
  if (!fsops_detail::ForEachMount([&](const fsops_detail::MountLine& m) {
        if (m.point == path_) listed = true, root_of_mount = m.root;
        return true;
      }))
    return Status::Error("cannot read /proc/self/mountinfo to see whether " + path_ + " is mounted");
  if (!listed) return Status::Error(fsops_detail::Printable(path_) + " is not a mount point: its filesystem is not mounted");
  if (root_of_mount != "/")
    return Status::Error(fsops_detail::Printable(path_) + " is a bind mount of the directory " +
                         fsops_detail::Printable(root_of_mount) + ", not a mounted filesystem (on a node whose share is not "
                         "mounted, a hostPath volume shows the directory beneath: mount its parent into the pod, with "
                         "mountPropagation HostToContainer)");
  return Status::Ok();
}

Status Root::SymlinkError(const std::string& path) {
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  std::string shown = n >= 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?");
  return Status::Invalid("root directory " + fsops_detail::Printable(path) + " is a symlink (to " +
                         fsops_detail::Printable(shown) + "); configure the directory it points to instead");
}

void Root::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}
