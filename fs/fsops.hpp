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
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/status.hpp"

namespace fsops_detail {

// The text for an errno value, e.g. "Operation not permitted". Thread-safe.
std::string ErrnoText(int err);

}  // namespace fsops_detail

// Converts an errno value into a Status "context: text". ENOENT becomes kNotFound, EEXIST
// kConflict, everything else kError. `context` names the operation and the path.
Status PosixError(const std::string& context, int err);

// What a user can do about a failed filesystem call, from its errno ("" when nothing useful).
std::string FixHint(const Status& s);

namespace fsops_detail {

// A path made printable for one log line: control characters become '?', and a very long
// path keeps its first and last 200 bytes around "...".
std::string Printable(const std::string& path);

// dir + "/" + name, or name alone when dir is "".
std::string Join(const std::string& dir, const std::string& name);

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
DirId DirIdOf(const struct statx& sx);

// Fills *id for the open descriptor fd. Returns 0 or an errno value.
int GetDirId(int fd, DirId* id);

// Same device, and the same mount where both mount ids are known.
bool SameMount(const DirId& a, const DirId& b);

// Is `entry`, found inside the directory tree of `top`, on top's mount, not the root of another
// one? Told by the kernel's mark for the root of a mount and by mount ids, not by st_dev: a
// btrfs subvolume has a device number of its own, yet is no mount point (a tenant can make one
// in its volume). Only where the kernel reports neither (before Linux 5.8) does st_dev decide,
// and a subvolume counts as another mount.
bool OnMountOf(const DirId& entry, const DirId& top);

// Is the open directory `fd` (identity `dir`), found in `parent`, the root of a btrfs
// subvolume on the parent's mount? A subvolume has a device number of its own but is no mount
// point: a volume made as one (quota.hpp) is walked and removed like any volume directory,
// while subvolumes and mounts inside it are still never entered. Without the kernel's mount
// ids a subvolume cannot be told from a mount: then no.
bool IsSubvolumeIn(const DirId& parent, const DirId& dir, int fd);

// Opens the directory `name` in dir_fd for reading without following a symlink, and without
// updating its access time where the kernel allows that (O_NOATIME needs owner or root).
// Returns the descriptor, or -1 with errno set.
int OpenDirNoFollow(int dir_fd, const char* name);

// For a walk that keeps a few directories of its path open and opens the others again by name
// from the nearest open one below when it comes back to them: which open one to close when
// one too many are open. `open` lists the depths of the open ones, ascending, at least three:
// the first (the walk's root) and the last (the directory being read) stay; the answer is an
// index between them. Closed: the one whose neighbours' gap is smallest relative to how far
// its lower neighbour lies below the top, so the gaps grow with the distance from the top, like
// checkpoints. Coming back up a path of depth n then opens directories again about n log n
// times, not n^2 / (2 * open) as when only the top ones stay open (copy_tree's test simulates it).
size_t CheckpointToClose(const std::vector<size_t>& open);

// Is `name` in parent_fd a directory itself (a symlink to one is not)? False when it cannot be stat'ed.
bool IsDirNoFollow(int parent_fd, const std::string& name);

// Undoes the octal escapes (\040 for a space, ...) of a path in /proc/self/mountinfo.
std::string UnescapeMountPath(const std::string& text);

// A line of /proc/self/mountinfo: "36 35 98:0 /mnt1 /mnt/parent rw ...".
struct MountLine {
  std::string id;     // the mount's id (statx's STATX_MNT_ID)
  std::string dev;    // "98:0": the filesystem (the same for every bind mount of it)
  std::string root;   // the directory of that filesystem mounted here
  std::string point;  // where it is mounted
};

// Calls fn(line) for each line of /proc/self/mountinfo, in order (a later line is mounted over
// an earlier one at the same point); fn returns false to stop. False when the file cannot be
// read.
template <class Fn>
bool ForEachMount(Fn fn) {
  FILE* mountinfo = fopen("/proc/self/mountinfo", "re");
  if (mountinfo == nullptr) return false;
  char* line = nullptr;
  size_t cap = 0;
  while (getline(&line, &cap, mountinfo) > 0) {
    std::string fields[5];
    const char* p = line;
    for (int i = 0; i < 5 && *p; ++i) {
      const char* end = std::strchr(p, ' ');
      if (end == nullptr) end = p + std::strlen(p);
      fields[i] = UnescapeMountPath(std::string(p, end));
      p = *end ? end + 1 : end;
    }
    if (!fn(MountLine{fields[0], fields[2], fields[3], fields[4]})) break;
  }
  free(line);
  fclose(mountinfo);
  return true;
}

// Directories entered at once while removing a tree, by default (see TreeRemover).
constexpr int kDefaultMaxOpenDirs = 32;
// Extra levels entered beyond the limit when a directory cannot be moved up (rare).
constexpr int kExtraDepthOnMoveFailure = 64;

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
  Root& operator=(Root&& other) noexcept;
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  ~Root() { Close(); }

  // Opens `path` with O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC. The path must be absolute and
  // normalised (no "//", ".", ".." or trailing "/") and not "/"; kInvalid otherwise. Refuses
  // (kInvalid) a root that is itself a symlink, naming its target; symlinks in the path above
  // it are followed as usual. kNotFound when it does not exist; kInvalid when not a directory.
  static Result<Root> Open(const std::string& path);

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // Is `name` acceptable as a single directory name inside the root? Non-empty, <= 255 bytes,
  // not "." or "..", no '/', no NUL, no control characters (bytes < 0x20 and 0x7f). Other
  // bytes, UTF-8 included, are accepted.
  static bool ValidName(const std::string& name);

  // Creates root/name as a directory with exactly `mode` (<= 07777; the umask does not matter)
  // and, when uid/gid are not -1, that owner/group. mkdirat is relative to fd(), and owner and
  // mode are set through a descriptor opened with O_NOFOLLOW, so a symlink planted in the root
  // cannot redirect any of it. Idempotent: an existing directory is fine (owner and mode are
  // set again). An existing non-directory or symlink at `name` is kConflict and is left as it
  // is. An existing directory that is a mount point (NotAMountPoint) is kConflict, left as it
  // is. kInvalid for a name failing ValidName or a bad mode.
  Status MakeDir(const std::string& name, unsigned mode, int uid = -1, int gid = -1) const;

  // Ok unless root/name is the root of another mount (a btrfs subvolume on the root's mount is
  // none): kConflict naming it, since a mount point is never a volume's directory (its owner,
  // mode and limit would be another filesystem's root's). Ok when it does not exist.
  Status NotAMountPoint(const std::string& name) const;

  // The directory root/rel ("ns", or "a/b/c": each name passing ValidName) as a Root of its own,
  // for a volume whose directory is deeper than one level (a class's pathPattern). Walked one
  // name at a time from fd(), each opened with O_NOFOLLOW: never through a symlink, nor onto
  // another mount or a btrfs subvolume (a mount point, or a volume, is no volume's parent): both
  // kConflict, naming the path. `create`: the missing ones are made (mode 0755, owned by the
  // caller); else kNotFound naming the first missing one. kInvalid for a bad name.
  Result<Root> OpenBelow(const std::string& rel, bool create) const;

  // Removes root/name and everything below it, safely against a hostile tree (see
  // fsops_detail::TreeRemover, tree_remover.hpp, for the walk):
  //  - never follows a symlink: a symlink (also one at `name` itself) is removed as a link,
  //    its target untouched; hard links are unlinked, their other names untouched;
  //  - never crosses a mount point (fsops_detail::OnMountOf): a mount inside is left alone and
  //    reported; a volume directory that is itself a mount point is left alone entirely; btrfs
  //    subvolumes inside (no mount points) are removed like directories;
  //  - iterative, at most max_open_dirs directories open at once (>= 2), linear time in the
  //    size of the tree however deep;
  //  - copes with directories of mode 000 and read-only files, also when not root, and with
  //    read-only btrfs subvolumes (made writable first: root only);
  //  - survives entries being swapped for symlinks during the walk (removes the link or
  //    reports, never descends through it).
  // Ok when nothing is left, and when `name` does not exist (idempotent). Otherwise kError
  // naming what could not be removed (first few paths relative to the volume directory, with
  // the reason, and a count of the rest: immutable files, busy mounts, EPERM ...); the rest of
  // the tree has been removed as far as possible and the caller retries later. kInvalid when
  // `name` fails ValidName, so the root itself can never be removed. Once *cancel (if given)
  // turns true the walk stops within one entry: kCanceled, the rest left for a later call.
  Status RemoveTree(const std::string& name, const std::atomic<bool>* cancel = nullptr) const;
  Status RemoveTree(const std::string& name, int max_open_dirs, const std::atomic<bool>* cancel = nullptr) const;

  // Removes root/name only if it is an empty directory (one rmdir: atomic, never follows a
  // symlink, never touches data). kConflict "not empty" when something is inside;
  // kNotFound when nothing is there.
  Status RemoveIfEmpty(const std::string& name) const;

  // Names of the directories directly inside the root (not symlinks to directories, not names
  // failing ValidName), sorted. For finding orphaned volume directories at start.
  Result<std::vector<std::string>> ListDirs() const;

  // Free bytes (available to unprivileged users, f_bavail) and total bytes of the filesystem
  // holding the root (fstatvfs). Leaves the outputs alone on error.
  Status Space(uint64_t* free_bytes, uint64_t* total_bytes) const;

  // Does the path still name the directory opened at start? Not when it was renamed (and
  // something made in its place), removed, or a filesystem mounted on it was (lazily)
  // unmounted: the handle then works on a directory that PVs and users no longer see.
  // Ok, or kError saying what changed.
  Status StillAtPath() const;

  // Ok if a filesystem is mounted at the root's path: /proc/self/mountinfo's last entry there
  // mounts the root of a filesystem. Not a bind mount of some directory, which is what a pod
  // sees at a hostPath volume's mount point when the host has nothing mounted there (mount the
  // parent directory into the pod instead, with mountPropagation HostToContainer). kError
  // saying which, else.
  Status FilesystemMounted() const;

 private:
  static Status SymlinkError(const std::string& path);
  void Close();

  std::string path_;
  Status NotAMountPoint(int dir_fd, const std::string& where) const;

  int fd_ = -1;
};
