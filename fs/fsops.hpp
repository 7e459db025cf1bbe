// Safe create and remove of volume directories directly inside one root directory.
//
// The program runs as root and deletes directories that pods have written to, so everything
// here assumes the tree being worked on is hostile: it may hold symlinks to "/", hard links,
// mount points, directories of mode 000, immutable files, and it may change while we walk it.
// The rules that keep us inside the root:
//   - the root is opened once (O_NOFOLLOW) and every operation is an *at() call relative to an
//     open directory descriptor with a single path component ("name", never "a/b");
//   - directories are entered only with openat(O_DIRECTORY | O_NOFOLLOW), so a symlink is never
//     followed, not even one swapped in between two of our calls;
//   - everything else is removed with unlinkat(), which removes a link, never its target;
//   - a directory on another mount (the root of a mount, or its mount id differs; st_dev only on
//     kernels that report neither) is never entered; a btrfs subvolume on the same mount is
//     no mount: it is emptied, and rmdir then removes it (Linux 4.18+);
//   - the only rename moves a directory within the volume being removed (deep trees, see
//     TreeRemover); the only path through /proc/self/fd names a descriptor we hold.
// POSIX (plus Linux statx/renameat2) only. Errors are Status values; errno becomes a Status or
// a message in one place (PosixError / fsops_detail::ErrnoText).
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/paths.hpp"
#include "base/status.hpp"

namespace fsops_detail {

// strerror_r comes in a GNU (char*) and an XSI (int) flavour; accept both.
inline const char* StrerrorResult(int rc, const char* buf) { return rc == 0 ? buf : "unknown error"; }
inline const char* StrerrorResult(const char* text, const char*) { return text; }

// The text for an errno value, e.g. "Operation not permitted". Thread-safe.
inline std::string ErrnoText(int err) {
  char buf[128] = {0};
  return StrerrorResult(strerror_r(err, buf, sizeof buf), buf);
}

}  // namespace fsops_detail

// Converts an errno value into a Status "context: text". ENOENT becomes kNotFound, EEXIST
// kConflict, everything else kError. `context` names the operation and the path.
inline Status PosixError(const std::string& context, int err) {
  Status::Code code = err == ENOENT ? Status::kNotFound : err == EEXIST ? Status::kConflict : Status::kError;
  return Status(code, context + ": " + fsops_detail::ErrnoText(err), err);
}

// What a user can do about a failed filesystem call, from its errno ("" when nothing useful).
inline std::string FixHint(const Status& s) {
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

// A path made printable for one log line: control characters become '?', and a very long
// path keeps its first and last 200 bytes around "...".
inline std::string Printable(const std::string& path) {
  std::string out = path.size() <= 420 ? path : path.substr(0, 200) + "..." + path.substr(path.size() - 200);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

inline std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// Owns one file descriptor; closes it on destruction. Movable, not copyable.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Identity of an open directory: device, inode, mode and (when the kernel reports them) the id
// of the mount it belongs to and whether it is the root of a mount. The mount id tells a bind
// mount of the same filesystem apart, which st_dev alone cannot.
struct DirId {
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  uint64_t mnt = 0;
  bool has_mnt = false;
  bool mount_root = false;      // STATX_ATTR_MOUNT_ROOT (Linux 5.8)
  bool has_mount_root = false;  // ... which this kernel reports
};

// The identity statx found (asked for at least STATX_TYPE | STATX_MODE | STATX_INO | STATX_MNT_ID).
inline DirId DirIdOf(const struct statx& sx) {
  const bool has_mnt = (sx.stx_mask & STATX_MNT_ID) != 0;
  DirId id{makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, sx.stx_mode, has_mnt ? sx.stx_mnt_id : 0, has_mnt};
  id.has_mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0;
  id.mount_root = id.has_mount_root && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  return id;
}

// Fills *id for the open descriptor fd. Returns 0 or an errno value.
inline int GetDirId(int fd, DirId* id) {
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

inline bool SameMount(const DirId& a, const DirId& b) {
  return a.dev == b.dev && (!a.has_mnt || !b.has_mnt || a.mnt == b.mnt);
}

// Is `entry`, found inside the directory tree of `top`, on top's mount, not the root of another
// one? Told by the kernel's mark for the root of a mount and by mount ids, not by st_dev: a
// btrfs subvolume has a device number of its own, yet is no mount point (a tenant can make one
// in its volume). Only where the kernel reports neither (before Linux 5.8) does st_dev decide,
// and a subvolume counts as another mount.
inline bool OnMountOf(const DirId& entry, const DirId& top) {
  if (entry.has_mount_root) return !entry.mount_root && (!entry.has_mnt || !top.has_mnt || entry.mnt == top.mnt);
  return SameMount(entry, top);
}

// Is the open directory `fd` (identity `dir`), found in `parent`, the root of a btrfs
// subvolume on the parent's mount? A subvolume has a device number of its own but is no mount
// point: a volume made as one (quota.hpp) is walked and removed like any volume directory,
// while subvolumes and mounts inside it are still never entered. Without the kernel's mount
// ids a subvolume cannot be told from a mount: then no.
inline bool IsSubvolumeIn(const DirId& parent, const DirId& dir, int fd) {
  if (!parent.has_mnt || !dir.has_mnt || parent.mnt != dir.mnt || dir.ino != 256) return false;
  struct statfs sf;
  return fstatfs(fd, &sf) == 0 && static_cast<uint32_t>(sf.f_type) == BTRFS_SUPER_MAGIC;  // an int on 32-bit ARM
}

// Opens the directory `name` inside parent_fd without following a symlink. When permission
// is denied (not root, mode 000) and the directory is on the mount `mount`, it makes the
// directory 0700 and opens it again. That goes through an O_PATH descriptor of the very
// directory (O_NOFOLLOW: never a symlink's target; OnMountOf checked: never the root of a
// filesystem mounted there) and /proc/self/fd, as glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does.
// Returns 0 or an errno value; ELOOP or ENOTDIR mean `name` is not a directory (any more).
inline int OpenDirAt(int parent_fd, const std::string& name, const DirId& mount, Fd* out) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(parent_fd, name.c_str(), flags);
  if (fd < 0 && errno == EACCES) {
    Fd path(openat(parent_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (path.get() < 0) return errno;
    DirId id;
    if (GetDirId(path.get(), &id) != 0 || !OnMountOf(id, mount)) return EACCES;
    std::string proc = "/proc/self/fd/" + std::to_string(path.get());
    if (chmod(proc.c_str(), 0700) != 0) return EACCES;
    fd = openat(path.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0) return errno;
  *out = Fd(fd);
  return 0;
}

// Opens the directory `name` in dir_fd for reading without following a symlink, and without
// updating its access time where the kernel allows that (O_NOATIME needs owner or root).
// Returns the descriptor, or -1 with errno set.
inline int OpenDirNoFollow(int dir_fd, const char* name) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(dir_fd, name, flags | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = openat(dir_fd, name, flags);
  return fd;
}

// For a walk that keeps a few directories of its path open and opens the others again by name
// from the nearest open one below when it comes back to them: which open one to close when
// one too many are open. `open` lists the depths of the open ones, ascending, at least three:
// the first (the walk's root) and the last (the directory being read) stay; the answer is an
// index between them. Closed: the one whose neighbours' gap is smallest relative to how far
// its lower neighbour lies below the top, so the gaps grow with the distance from the top, like
// checkpoints. Coming back up a path of depth n then opens directories again about n log n
// times, not n^2 / (2 * open) as when only the top ones stay open (copy_tree's test simulates it).
inline size_t CheckpointToClose(const std::vector<size_t>& open) {
  const uint64_t top = open.back();
  size_t best = 1;
  for (size_t j = 2; j + 1 < open.size(); ++j) {
    // gap(j) / span(j) < gap(best) / span(best), without division
    if ((open[j + 1] - open[j - 1]) * (top - open[best - 1] + 1) < (open[best + 1] - open[best - 1]) * (top - open[j - 1] + 1))
      best = j;
  }
  return best;
}

inline bool IsDirNoFollow(int parent_fd, const std::string& name) {
  struct stat st;
  return fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

// Undoes the octal escapes (\040 for a space, ...) of a path in /proc/self/mountinfo.
inline std::string UnescapeMountPath(const std::string& text) {
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

// Calls fn(root, mount_point) for each line of /proc/self/mountinfo, in order (a later line
// is mounted over an earlier one at the same point); fn returns false to stop. False when the
// file cannot be read.
template <class Fn>
bool ForEachMount(Fn fn) {
  FILE* mountinfo = fopen("/proc/self/mountinfo", "re");
  if (mountinfo == nullptr) return false;
  char* line = nullptr;
  size_t cap = 0;
  while (getline(&line, &cap, mountinfo) > 0) {
    // "36 35 98:0 /mnt1 /mnt/parent rw ..." : the fourth field is the root of the mount
    // within its filesystem, the fifth the mount point.
    std::string fields[5];
    const char* p = line;
    for (int i = 0; i < 5 && *p; ++i) {
      const char* end = std::strchr(p, ' ');
      if (end == nullptr) end = p + std::strlen(p);
      fields[i] = UnescapeMountPath(std::string(p, end));
      p = *end ? end + 1 : end;
    }
    if (!fn(fields[3], fields[4])) break;
  }
  free(line);
  fclose(mountinfo);
  return true;
}

// Is anything mounted below the open directory dir_fd, as this process sees the mounts
// (/proc/self/mountinfo)? Answers true also when that cannot be found out.
inline bool MountsBelow(int dir_fd) {
  char buf[4096];
  std::string link = "/proc/self/fd/" + std::to_string(dir_fd);
  ssize_t n = readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof buf) || buf[0] != '/') return true;
  const std::string prefix = std::string(buf, static_cast<size_t>(n)) + "/";
  bool found = false;
  if (!ForEachMount([&](const std::string&, const std::string& mount_point) {
        found = mount_point.compare(0, prefix.size(), prefix) == 0;
        return !found;
      }))
    return true;
  return found;
}

// Gives the owner rwx on an open directory that lacks it, so its entries can be listed and
// removed when not root. Best effort: failures show up when removing.
inline void MakeUsable(int dir_fd, const DirId& id) {
  if ((id.mode & 0700) != 0700) fchmod(dir_fd, 0700);
}

// Directories entered at once while removing a tree, by default (see TreeRemover).
constexpr int kDefaultMaxOpenDirs = 32;
// Extra levels entered beyond the limit when a directory cannot be moved up (rare).
constexpr int kExtraDepthOnMoveFailure = 64;
// Passes over one directory that keeps being non-empty for no reason we know of.
constexpr int kMaxPasses = 4;
// Failures spelled out in the message; the rest are counted.
constexpr size_t kReportedFailures = 5;
// Entries of one directory remembered as failed, so that a rescan does not try them again;
// past this many, further failures are only counted (a directory of a million undeletable
// files must not hold a million names in memory).
constexpr size_t kRememberedFailures = 1000;

// Removes one volume directory and everything below it; used by Root::RemoveTree.
//
// The walk is iterative (an explicit stack of frames, no recursion) and keeps at most
// max_open_dirs directories open. Scheme for trees deeper than that: a directory found at the
// depth limit is not entered; instead it is renamed (renameat2 RENAME_NOREPLACE, relative to
// the two open descriptors, never following a symlink) up into the volume directory itself
// under a fresh name ".hostpath-provisioner-rm-N", and the volume directory is scanned again
// later. Every subtree is thus removed at depth <= max_open_dirs, total work stays linear in
// the size of the tree, no directory is ever re-opened by a path, and nothing is ever walked
// back up with "..": a frame's parent is always the descriptor below it on the stack. Renaming
// only moves entries within the volume being deleted (both descriptors are on the volume's
// mount, checked), so it cannot move anything out of, or into, the volume. Names of moved
// directories are remembered so failures are reported under their original paths (and where
// they are now). Moving a directory would also move any mount below it, so when anything is
// mounted below the volume (checked once, when first needed) nothing is moved: the walk
// then goes kExtraDepthOnMoveFailure levels deeper than the limit and reports what lies below.
//
// A directory on another mount is never entered or moved; it is reported. Entries that cannot
// be removed are reported (the first few by path, relative to the volume directory) and the
// rest of the tree is still removed. Nothing is retried in a loop except bounded re-scans.
// Once *cancel (if given) is true, the walk stops before the next entry (kCanceled).
class TreeRemover {
 public:
  TreeRemover(int root_fd, std::string root_path, std::string name, int max_open_dirs, const std::atomic<bool>* cancel)
      : root_fd_(root_fd),
        root_path_(std::move(root_path)),
        name_(std::move(name)),
        max_open_dirs_(std::max(2, max_open_dirs)),
        cancel_(cancel) {}

  Status Run() {
    // Most volumes are empty or hold a few files; an empty one goes with one rmdir, which
    // never follows a symlink (ENOTDIR) and never removes a mount point (EBUSY). Anything else
    // (not empty, a link, a mount) is left to the walk below.
    if (unlinkat(root_fd_, name_.c_str(), AT_REMOVEDIR) == 0) return Status::Ok();
    const std::string where = Printable(Join(root_path_, name_));
    DirId root_id;
    int err = GetDirId(root_fd_, &root_id);
    if (err != 0) return PosixError("stat " + Printable(root_path_), err);
    Fd vol;
    err = ENOTDIR;
    for (int attempt = 0; attempt < 3 && (err == ENOTDIR || err == ELOOP); ++attempt) {
      err = OpenDirAt(root_fd_, name_, root_id, &vol);
      if (err == ENOENT) return Status::Ok();  // already removed
      if (err == ENOTDIR || err == ELOOP) {
        // Not a directory: a file or a symlink. Remove the link itself, never its target.
        if (unlinkat(root_fd_, name_.c_str(), 0) == 0 || errno == ENOENT) return Status::Ok();
        if (errno != EISDIR) return PosixError("remove " + where, errno);
      }
    }
    if (err != 0) return PosixError("open " + where, err);
    if ((err = GetDirId(vol.get(), &vol_id_)) != 0) return PosixError("stat " + where, err);
    if (!OnMountOf(vol_id_, root_id) && !IsSubvolumeIn(root_id, vol_id_, vol.get())) {
      return Status::Error("remove " + where + ": it is a mount point; left alone");
    }
    MakeUsable(vol.get(), vol_id_);
    if (!Push(name_, "", "", std::move(vol))) return Status::Error("remove " + where + ": " + failures_.front());
    vol_fd_ = frames_.front().fd();
    Walk();
    if (!frames_.empty()) return Status(Status::kCanceled, "remove " + where + ": stopped before the end; the rest is left");
    if (failure_count_ == 0) return Status::Ok();
    std::string message = "remove " + where + ": could not remove " + std::to_string(failure_count_) + " entr" +
                          (failure_count_ == 1 ? "y" : "ies") + ":";
    for (size_t i = 0; i < failures_.size(); ++i) message += (i ? ", " : " ") + failures_[i];
    if (failure_count_ > failures_.size()) message += ", and " + std::to_string(failure_count_ - failures_.size()) + " more";
    return Status::Error(message);
  }

 private:
  struct DirCloser {
    void operator()(DIR* dir) const { closedir(dir); }
  };
  struct Frame {
    std::unique_ptr<DIR, DirCloser> dir;  // owns the descriptor
    std::string name;                     // its name inside the frame below (or the root)
    std::string display;                  // its original path relative to the volume
    std::string actual;                   // its path relative to the volume now (moved up?)
    std::set<std::string> skip;           // entries that failed here: not tried again (bounded)
    bool failed_below = false;            // something inside could not be removed
    bool moved_in = false;                // entries were moved into it: scan it again
    int passes = 0;
    int fd() const { return dirfd(dir.get()); }
  };

  // Turns an open directory into a frame on top of the stack. Records a failure if not.
  bool Push(const std::string& name, const std::string& display, const std::string& actual, Fd fd) {
    DIR* dir = fdopendir(fd.get());
    if (dir == nullptr) {
      Fail(display, actual, ErrnoText(errno));
      return false;
    }
    fd.Release();
    Frame frame;
    frame.dir.reset(dir);
    frame.name = name;
    frame.display = display;
    frame.actual = actual;
    frames_.push_back(std::move(frame));
    return true;
  }

  bool Canceled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }

  void Walk() {
    while (!frames_.empty() && !Canceled()) {
      Frame& top = frames_.back();
      errno = 0;
      dirent* entry = readdir(top.dir.get());
      if (entry == nullptr) {
        if (errno != 0) FailFrame(ErrnoText(errno));
        FinishDir();
        continue;
      }
      std::string name = entry->d_name;
      if (name == "." || name == ".." || top.skip.count(name)) continue;
      HandleEntry(name);
    }
  }

  // Removes one entry of the top frame, or enters it when it is a directory.
  void HandleEntry(const std::string& name) {
    const int parent_fd = frames_.back().fd();
    for (int attempt = 0; attempt < 3; ++attempt) {
      // unlinkat without AT_REMOVEDIR removes anything but a directory, as a link.
      if (unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
      int err = errno;
      if (err != EISDIR && !IsDirNoFollow(parent_fd, name)) return FailEntry(name, ErrnoText(err));
      Fd child;
      err = OpenDirAt(parent_fd, name, vol_id_, &child);
      if (err == ENOTDIR || err == ELOOP) continue;  // swapped for a non-directory: unlink that
      if (err == ENOENT) return;
      if (err != 0) return FailEntry(name, ErrnoText(err));
      return EnterDir(name, std::move(child));
    }
    FailEntry(name, "keeps changing between a directory and a non-directory");
  }

  // `child` is the open directory `name` of the top frame: enter it, or move it up when the
  // stack is full, or leave it alone when it is on another mount.
  void EnterDir(const std::string& name, Fd child) {
    DirId id;
    if (int err = GetDirId(child.get(), &id)) return FailEntry(name, ErrnoText(err));
    if (!OnMountOf(id, vol_id_)) return FailEntry(name, "mount point, left alone");
    MakeUsable(child.get(), id);
    const int depth = static_cast<int>(frames_.size());
    if (depth >= max_open_dirs_) {
      if (MovesAllowed() && MoveUp(name)) return;
      if (depth >= max_open_dirs_ + kExtraDepthOnMoveFailure) {
        return FailEntry(name, MovesAllowed() ? "too deep to remove, and could not be moved up"
                                              : "too deep to remove while something is mounted below the volume");
      }
    }
    const Frame& parent = frames_.back();
    std::string display = Printable(Join(parent.display, name));
    if (frames_.size() == 1) {
      auto origin = origins_.find(name);
      if (origin != origins_.end()) display = origin->second;
    }
    if (!Push(name, display, Printable(Join(parent.actual, name)), std::move(child))) {
      frames_.back().failed_below = true;
      if (frames_.back().skip.size() < kRememberedFailures) frames_.back().skip.insert(name);
    }
  }

  // Renames `name` of the top frame into the volume directory under a fresh name.
  bool MoveUp(const std::string& name) {
    Frame& parent = frames_.back();
    for (int tries = 0; tries < 100; ++tries) {
      std::string fresh = ".hostpath-provisioner-rm-" + std::to_string(next_move_++);
      if (renameat2(parent.fd(), name.c_str(), vol_fd_, fresh.c_str(), RENAME_NOREPLACE) == 0) {
        origins_[fresh] = Printable(Join(parent.display, name));
        frames_.front().moved_in = true;
        return true;
      }
      if (errno != EEXIST) return false;
    }
    return false;
  }

  // The top frame has been read to its end: remove it, scan it again, or give up on it.
  void FinishDir() {
    Frame& top = frames_.back();
    if (top.moved_in) {  // directories were moved in: they may not have been listed yet
      top.moved_in = false;
      rewinddir(top.dir.get());
      return;
    }
    const bool is_volume = frames_.size() == 1;
    const int parent_fd = is_volume ? root_fd_ : frames_[frames_.size() - 2].fd();
    if (unlinkat(parent_fd, top.name.c_str(), AT_REMOVEDIR) == 0) return Pop();
    int err = errno;
    if ((err == ENOTEMPTY || err == EEXIST) && !top.failed_below && top.passes < kMaxPasses) {
      ++top.passes;  // something appeared, or was moved, while we were reading
      rewinddir(top.dir.get());
      return;
    }
    if (err == ENOENT) return Pop();  // gone already, or renamed away (see below)
    if (err == ENOTDIR && !is_volume) {
      // Renamed away and replaced by a non-directory while we emptied it. The parent's own
      // re-scan finds both if they are still inside; this is no failure by itself.
      return Pop();
    }
    if ((err == ENOTEMPTY || err == EEXIST) && top.failed_below) {
      return Pop(/*failed=*/true);  // the reason is reported for the entries inside
    }
    Fail(top.display, top.actual,
         err == ENOTEMPTY || err == EEXIST ? "still not empty after " + std::to_string(kMaxPasses + 1) + " passes"
                                           : ErrnoText(err));
    Pop(/*failed=*/true);
  }

  void Pop(bool failed = false) {
    std::string name = frames_.back().name;
    if (frames_.size() == 2) origins_.erase(name);
    frames_.pop_back();
    if (failed && !frames_.empty()) {
      frames_.back().failed_below = true;
      frames_.back().skip.insert(name);
    }
  }

  // Records that `display` (original path relative to the volume, "" for the volume itself),
  // now at `actual`, could not be removed, and why.
  void Fail(const std::string& display, const std::string& actual, const std::string& why) {
    ++failure_count_;
    if (failures_.size() >= kReportedFailures) return;
    std::string text = (display.empty() ? "." : display) + " (" + why;
    if (actual != display) text += "; now at " + actual;
    failures_.push_back(text + ")");
  }
  void FailEntry(const std::string& name, const std::string& why) {
    Frame& top = frames_.back();
    std::string display = Printable(Join(top.display, name));
    if (frames_.size() == 1 && origins_.count(name)) display = origins_[name];
    Fail(display, Printable(Join(top.actual, name)), why);
    top.failed_below = true;
    if (top.skip.size() < kRememberedFailures) top.skip.insert(name);
  }
  // Moving a directory up would also move any mount below it: allowed only when nothing is
  // mounted below the volume. Looked up in /proc/self/mountinfo once, when first needed (a
  // tree as deep as the open-directory limit), not on every removal.
  bool MovesAllowed() {
    if (!moves_checked_) {
      moves_allowed_ = !MountsBelow(vol_fd_);
      moves_checked_ = true;
    }
    return moves_allowed_;
  }

  void FailFrame(const std::string& why) {
    Frame& top = frames_.back();
    Fail(top.display, top.actual, why);
    top.failed_below = true;
  }

  const int root_fd_;
  const std::string root_path_;
  const std::string name_;
  const int max_open_dirs_;
  const std::atomic<bool>* const cancel_;
  DirId vol_id_;
  int vol_fd_ = -1;  // owned by frames_.front()
  bool moves_checked_ = false, moves_allowed_ = false;
  std::vector<Frame> frames_;
  std::map<std::string, std::string> origins_;  // moved-up name -> original display path
  uint64_t next_move_ = 0;
  std::vector<std::string> failures_;
  size_t failure_count_ = 0;
};

}  // namespace fsops_detail

// An open directory descriptor on the configured root (e.g. /var/kubernetes) under which all
// volume directories live, one level deep. Opened once at start. Movable, not copyable.
// All methods are const and safe to call from several threads at once, but two calls on the
// same name at the same time race like any two processes would (the caller serialises).
class Root {
 public:
  // An empty Root (fd() == -1), only useful as a target for moving into.
  Root() = default;
  Root(Root&& other) noexcept : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}
  Root& operator=(Root&& other) noexcept {
    if (this != &other) {
      Close();
      path_ = std::move(other.path_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  ~Root() { Close(); }

  // Opens `path` with O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC. The path must be absolute and
  // normalised (no "//", ".", ".." or trailing "/") and not "/"; kInvalid otherwise. Refuses
  // (kInvalid) a root that is itself a symlink, naming its target; symlinks in the path above
  // it are followed as usual. kNotFound when it does not exist; kInvalid when not a directory.
  static Result<Root> Open(const std::string& path) {
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

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // Is `name` acceptable as a single directory name inside the root? Non-empty, <= 255 bytes,
  // not "." or "..", no '/', no NUL, no control characters (bytes < 0x20 and 0x7f). Other
  // bytes, UTF-8 included, are accepted.
  static bool ValidName(const std::string& name) {
    if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
    for (char c : name) {
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '/' || u < 0x20 || u == 0x7f) return false;
    }
    return true;
  }

  // Creates root/name as a directory with exactly `mode` (<= 07777; the umask does not matter)
  // and, when uid/gid are not -1, that owner/group. mkdirat is relative to fd(), and owner and
  // mode are set through a descriptor opened with O_NOFOLLOW, so a symlink planted in the root
  // cannot redirect any of it. Idempotent: an existing directory is fine (owner and mode are
  // set again). An existing non-directory or symlink at `name` is kConflict and is left as it
  // is. kInvalid for a name failing ValidName or a bad mode.
  Status MakeDir(const std::string& name, unsigned mode, int uid = -1, int gid = -1) const {
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
    // Owner first: chown clears set-user/group-ID bits that the mode may ask for.
    if ((uid != -1 || gid != -1) && fchown(dir.get(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
      return PosixError("chown " + where, errno);
    }
    if (fchmod(dir.get(), static_cast<mode_t>(mode)) != 0) return PosixError("chmod " + where, errno);
    return Status::Ok();
  }

  // Removes root/name and everything below it, safely against a hostile tree (see
  // fsops_detail::TreeRemover for the walk):
  //  - never follows a symlink: a symlink (also one at `name` itself) is removed as a link,
  //    its target untouched; hard links are unlinked, their other names untouched;
  //  - never crosses a mount point (fsops_detail::OnMountOf): a mount inside is left alone and
  //    reported; a volume directory that is itself a mount point is left alone entirely; btrfs
  //    subvolumes inside (no mount points) are removed like directories;
  //  - iterative, at most max_open_dirs directories open at once (>= 2), linear time in the
  //    size of the tree however deep;
  //  - copes with directories of mode 000 and read-only files, also when not root;
  //  - survives entries being swapped for symlinks during the walk (removes the link or
  //    reports, never descends through it).
  // Ok when nothing is left, and when `name` does not exist (idempotent). Otherwise kError
  // naming what could not be removed (first few paths relative to the volume directory, with
  // the reason, and a count of the rest: immutable files, busy mounts, EPERM ...); the rest of
  // the tree has been removed as far as possible and the caller retries later. kInvalid when
  // `name` fails ValidName, so the root itself can never be removed. Once *cancel (if given)
  // turns true the walk stops within one entry: kCanceled, the rest left for a later call.
  Status RemoveTree(const std::string& name, const std::atomic<bool>* cancel = nullptr) const {
    return RemoveTree(name, fsops_detail::kDefaultMaxOpenDirs, cancel);
  }
  Status RemoveTree(const std::string& name, int max_open_dirs, const std::atomic<bool>* cancel = nullptr) const {
    if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
    return fsops_detail::TreeRemover(fd_, path_, name, max_open_dirs, cancel).Run();
  }

  // Removes root/name only if it is an empty directory (one rmdir: atomic, never follows a
  // symlink, never touches data). kConflict "not empty" when something is inside;
  // kNotFound when nothing is there.
  Status RemoveIfEmpty(const std::string& name) const {
    if (!ValidName(name)) return Status::Invalid("invalid directory name \"" + fsops_detail::Printable(name) + "\"");
    if (unlinkat(fd_, name.c_str(), AT_REMOVEDIR) == 0) return Status::Ok();
    int err = errno;
    std::string where = fsops_detail::Printable(fsops_detail::Join(path_, name));
    if (err == ENOTEMPTY || err == EEXIST) return Status(Status::kConflict, where + " is not empty");
    return PosixError("rmdir " + where, err);
  }

  // Names of the directories directly inside the root (not symlinks to directories, not names
  // failing ValidName), sorted. For finding orphaned volume directories at start.
  Result<std::vector<std::string>> ListDirs() const {
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

  // Free bytes (available to unprivileged users, f_bavail) and total bytes of the filesystem
  // holding the root (fstatvfs). Leaves the outputs alone on error.
  Status Space(uint64_t* free_bytes, uint64_t* total_bytes) const {
    struct statvfs vfs;
    if (fstatvfs(fd_, &vfs) != 0) return PosixError("statvfs " + path_, errno);
    *free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    *total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
    return Status::Ok();
  }

  // Does the path still name the directory opened at start? Not when it was renamed (and
  // something made in its place), removed, or a filesystem mounted on it was (lazily)
  // unmounted: the handle then works on a directory that PVs and users no longer see.
  // Ok, or kError saying what changed.
  Status StillAtPath() const {
    struct stat held, now;
    if (fstat(fd_, &held) != 0) return PosixError("stat the open root directory " + fsops_detail::Printable(path_), errno);
    if (held.st_nlink == 0) return Status::Error(fsops_detail::Printable(path_) + " was removed while in use");
    if (stat(path_.c_str(), &now) != 0) return PosixError(fsops_detail::Printable(path_), errno);
    if (now.st_dev != held.st_dev || now.st_ino != held.st_ino)
      return Status::Error(fsops_detail::Printable(path_) +
                           " is no longer the directory opened at start (renamed, replaced or unmounted)");
    return Status::Ok();
  }

  // Ok if a filesystem is mounted at the root's path: /proc/self/mountinfo's last entry there
  // mounts the root of a filesystem. Not a bind mount of some directory, which is what a pod
  // sees at a hostPath volume's mount point when the host has nothing mounted there (mount the
  // parent directory into the pod instead, with mountPropagation HostToContainer). kError
  // saying which, else.
  Status FilesystemMounted() const {
    std::string root_of_mount;
    bool listed = false;
    if (!fsops_detail::ForEachMount([&](const std::string& root, const std::string& mount_point) {
          if (mount_point == path_) listed = true, root_of_mount = root;
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

 private:
  static Status SymlinkError(const std::string& path) {
    char target[4096];
    ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    std::string shown = n >= 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?");
    return Status::Invalid("root directory " + fsops_detail::Printable(path) + " is a symlink (to " +
                           fsops_detail::Printable(shown) + "); configure the directory it points to instead");
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  std::string path_;
  int fd_ = -1;
};
