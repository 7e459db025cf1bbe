// The bodies of file_copy.hpp: one entry's part of copying a volume (data, metadata).
#include "fs/file_copy.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace file_copy {

namespace {

// Errors that mean "this filesystem (pair) cannot do that", not "this file failed".
bool Unsupported(int err) {
  return err == EOPNOTSUPP || err == EXDEV || err == EINVAL || err == ENOTTY || err == ENOSYS;
}

// Copies [off, off + len) of src to the same offsets of dst, telling dc->on_bytes what it
// copied. Returns 0 or an errno value; ECANCELED when cancel turned true.
int CopyRange(int src, int dst, uint64_t off, uint64_t len, DataCopy* dc) {
  static thread_local std::vector<char> buf;
  while (len > 0) {
    if (dc->Canceled()) return ECANCELED;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(len, kChunkBytes));
    ssize_t n = -1;
    if (!dc->copy_range_failed) {
      loff_t in = static_cast<loff_t>(off), out = static_cast<loff_t>(off);
      n = copy_file_range(src, &in, dst, &out, want, 0);
      if (n < 0 && Unsupported(errno)) dc->copy_range_failed = true;
      else if (n < 0) return errno;
    }
    if (dc->copy_range_failed) {
      if (buf.size() < (1 << 20)) buf.resize(1 << 20);
      n = pread(src, buf.data(), std::min(want, buf.size()), static_cast<off_t>(off));
      if (n < 0) return errno;
      for (ssize_t w = 0; w < n;) {
        ssize_t k = pwrite(dst, buf.data() + w, static_cast<size_t>(n - w), static_cast<off_t>(off) + w);
        if (k < 0) return errno;
        w += k;
      }
    }
    if (n == 0) break;  // the source shrank while being copied
    off += static_cast<uint64_t>(n);
    len -= static_cast<uint64_t>(n);
    if (dc->on_bytes) dc->on_bytes(static_cast<uint64_t>(n));
  }
  return 0;
}

// Reads and writes extended attributes either through a descriptor or, for a symlink (which
// cannot be opened for them), through a path whose last component the l*xattr calls never follow.
struct XattrTarget {
  int fd = -1;
  std::string path;  // used when fd < 0
  ssize_t List(char* buf, size_t n) const { return fd >= 0 ? flistxattr(fd, buf, n) : llistxattr(path.c_str(), buf, n); }
  ssize_t Get(const char* name, void* buf, size_t n) const {
    return fd >= 0 ? fgetxattr(fd, name, buf, n) : lgetxattr(path.c_str(), name, buf, n);
  }
  int Set(const char* name, const void* v, size_t n) const {
    return fd >= 0 ? fsetxattr(fd, name, v, n, 0) : lsetxattr(path.c_str(), name, v, n, 0);
  }
  int Remove(const char* name) const { return fd >= 0 ? fremovexattr(fd, name) : lremovexattr(path.c_str(), name); }
};

// The ACLs a new entry may have inherited from a default ACL above it (the caller's destination
// directory may sit below one) without the source having them: removed from the copy.
void RemoveInheritedAcls(const std::vector<char>& source_names, const XattrTarget& to) {
  for (const char* acl : {"system.posix_acl_access", "system.posix_acl_default"}) {
    bool in_source = false;
    for (size_t i = 0; i < source_names.size() && !in_source; i += std::strlen(source_names.data() + i) + 1)
      in_source = std::strcmp(source_names.data() + i, acl) == 0;
    if (!in_source) to.Remove(acl);  // ENODATA (none inherited) or unsupported: nothing to do
  }
}

std::string ProcPath(int dir_fd, const std::string& name) {
  return "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
}

// Copies every extended attribute of `from` that the kernel lets us read and set, and removes
// ACLs the copy inherited that `from` lacks (ACLs are the system.posix_acl_* xattrs; user.* on a symlink, security.selinux where not supported,
// trusted.* without CAP_SYS_ADMIN are refused, and skipped). Returns 0 or an errno value for
// failures that matter (ENOSPC, EDQUOT, EIO ...).
int CopyXattrs(const XattrTarget& from, const XattrTarget& to) {
  std::vector<char> names, value;
  for (int attempt = 0;; ++attempt) {
    ssize_t n = from.List(nullptr, 0);
    if (n < 0) return Unsupported(errno) || errno == EPERM || errno == EACCES ? 0 : errno;
    if (n == 0) break;
    names.resize(static_cast<size_t>(n));
    n = from.List(names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno != ERANGE || attempt > 3) return errno;  // ERANGE: grew between the two calls
  }
  RemoveInheritedAcls(names, to);
  for (size_t i = 0; i < names.size(); i += std::strlen(names.data() + i) + 1) {
    const char* name = names.data() + i;
    ssize_t n = -1;
    for (int attempt = 0; attempt < 4; ++attempt) {
      n = from.Get(name, nullptr, 0);
      if (n < 0) break;
      value.resize(static_cast<size_t>(n));
      n = from.Get(name, value.data(), value.size());
      if (n >= 0 || errno != ERANGE) break;
    }
    if (n < 0) {
      if (errno == ENODATA || errno == EPERM || errno == EACCES || Unsupported(errno)) continue;  // gone, or not ours to read
      return errno;
    }
    if (to.Set(name, value.data(), static_cast<size_t>(n)) != 0) {
      if (errno == EPERM || errno == EACCES || Unsupported(errno)) continue;  // not ours to set here
      return errno;
    }
  }
  return 0;
}

}  // namespace

Meta MetaOf(const struct statx& sx) {
  Meta m;
  m.mode = sx.stx_mode;
  m.uid = sx.stx_uid;
  m.gid = sx.stx_gid;
  m.atime = {static_cast<time_t>(sx.stx_atime.tv_sec), static_cast<long>(sx.stx_atime.tv_nsec)};
  m.mtime = {static_cast<time_t>(sx.stx_mtime.tv_sec), static_cast<long>(sx.stx_mtime.tv_nsec)};
  m.size = sx.stx_size;
  return m;
}

int CopyData(int src, int dst, uint64_t size, DataCopy* dc, bool* reflinked) {
  *reflinked = false;
  if (size == 0) return 0;
  if (!dc->reflink_failed) {
    if (ioctl(dst, FICLONE, src) == 0) {
      *reflinked = true;
      return 0;
    }
    if (!Unsupported(errno)) return errno;  // ENOSPC, EDQUOT, EIO ...
    dc->reflink_failed = true;
  }
  uint64_t off = 0;
  for (;;) {
    off_t data = lseek(src, static_cast<off_t>(off), SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // no data past off
    if (data < 0 && errno != EINVAL) return errno;
    off_t hole = data < 0 ? -1 : lseek(src, data, SEEK_HOLE);
    if (data < 0 || hole < 0) {  // no SEEK_DATA here: copy everything from off on
      if (int err = CopyRange(src, dst, off, size > off ? size - off : 0, dc)) return err;
      break;
    }
    if (int err = CopyRange(src, dst, static_cast<uint64_t>(data), static_cast<uint64_t>(hole - data), dc)) return err;
    off = static_cast<uint64_t>(hole);
    if (off >= size) break;
  }
  return ftruncate(dst, static_cast<off_t>(size)) == 0 ? 0 : errno;
}

int SetMeta(int src, int dst, const Meta& m, const char** what) {
  if (fchown(dst, m.uid, m.gid) != 0) return *what = "chown", errno;
  if (src >= 0) {
    if (int err = CopyXattrs(XattrTarget{src, ""}, XattrTarget{dst, ""})) return *what = "copy the extended attributes of", err;
  }
  if (fchmod(dst, m.mode & 07777) != 0) return *what = "chmod", errno;
  const struct timespec times[2] = {m.atime, m.mtime};
  if (futimens(dst, times) != 0) return *what = "set the times of", errno;
  return 0;
}

int SetLinkMeta(int src_dir, int dst_dir, const std::string& name, const Meta& m, const char** what) {
  if (fchownat(dst_dir, name.c_str(), m.uid, m.gid, AT_SYMLINK_NOFOLLOW) != 0) return *what = "chown", errno;
  if (int err = CopyXattrs(XattrTarget{-1, ProcPath(src_dir, name)}, XattrTarget{-1, ProcPath(dst_dir, name)}))
    return *what = "copy the extended attributes of", err;
  const struct timespec times[2] = {m.atime, m.mtime};
  if (utimensat(dst_dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return *what = "set the times of", errno;
  return 0;
}

}  // namespace file_copy
