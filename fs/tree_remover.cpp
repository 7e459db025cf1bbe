// The body of tree_remover.hpp: the removal walk behind Root::RemoveTree.
#include "fs/tree_remover.hpp"

#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

namespace fsops_detail {

namespace {

// Opens the directory `name` inside parent_fd without following a symlink. When permission
// is denied (not root, mode 000) and the directory is on the mount `mount`, it makes the
// directory 0700 and opens it again. That goes through an O_PATH descriptor of the very
// directory (O_NOFOLLOW: never a symlink's target; OnMountOf checked: never the root of a
// filesystem mounted there) and /proc/self/fd, as glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does.
// Returns 0 or an errno value; ELOOP or ENOTDIR mean `name` is not a directory (any more).
int OpenDirAt(int parent_fd, const std::string& name, const DirId& mount, Fd* out) {
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

// Is anything mounted below the open directory dir_fd, as this process sees the mounts
// (/proc/self/mountinfo)? Answers true also when that cannot be found out.
bool MountsBelow(int dir_fd) {
  char buf[4096];
  std::string link = "/proc/self/fd/" + std::to_string(dir_fd);
  ssize_t n = readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof buf) || buf[0] != '/') return true;
  const std::string prefix = std::string(buf, static_cast<size_t>(n)) + "/";
  bool found = false;
  if (!ForEachMount([&](const MountLine& m) {
        found = m.point.compare(0, prefix.size(), prefix) == 0;
        return !found;
      }))
    return true;
  return found;
}

// Gives the owner rwx on an open directory that lacks it, so its entries can be listed and
// removed when not root. Best effort: failures show up when removing.
void MakeUsable(int dir_fd, const DirId& id) {
  if ((id.mode & 0700) != 0700) fchmod(dir_fd, 0700);
  // A read-only btrfs subvolume (its owner may make one so, with no privilege: `btrfs property
  // set ro`) refuses every unlink inside it (EROFS): made writable again, as root may. Only the
  // root directory of a subvolume has inode 256 (BTRFS_FIRST_FREE_OBJECTID); elsewhere the
  // ioctl fails (ENOTTY) and nothing changes.
  if (id.ino != 256) return;
  uint64_t flags = 0;
  if (ioctl(dir_fd, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) != 0 || (flags & BTRFS_SUBVOL_RDONLY) == 0) return;
  flags &= ~static_cast<uint64_t>(BTRFS_SUBVOL_RDONLY);
  ioctl(dir_fd, BTRFS_IOC_SUBVOL_SETFLAGS, &flags);
}

// Passes over one directory that keeps being non-empty for no reason we know of.
constexpr int kMaxPasses = 4;
// Failures spelled out in the message; the rest are counted.
constexpr size_t kReportedFailures = 5;
// Entries of one directory remembered as failed, so that a rescan does not try them again;
// past this many, further failures are only counted (a directory of a million undeletable
// files must not hold a million names in memory).
constexpr size_t kRememberedFailures = 1000;

}  // namespace

TreeRemover::TreeRemover(int root_fd, std::string root_path, std::string name, int max_open_dirs, const std::atomic<bool>* cancel)
    : root_fd_(root_fd),
      root_path_(std::move(root_path)),
      name_(std::move(name)),
      max_open_dirs_(std::max(2, max_open_dirs)),
      cancel_(cancel) {}

Status TreeRemover::Run() {
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

bool TreeRemover::Push(const std::string& name, const std::string& display, const std::string& actual, Fd fd) {
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

void TreeRemover::Walk() {
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

void TreeRemover::HandleEntry(const std::string& name) {
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

void TreeRemover::EnterDir(const std::string& name, Fd child) {
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

bool TreeRemover::MoveUp(const std::string& name) {
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

void TreeRemover::FinishDir() {
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

void TreeRemover::Pop(bool failed) {
  std::string name = frames_.back().name;
  if (frames_.size() == 2) origins_.erase(name);
  frames_.pop_back();
  if (failed && !frames_.empty()) {
    frames_.back().failed_below = true;
    frames_.back().skip.insert(name);
  }
}

void TreeRemover::Fail(const std::string& display, const std::string& actual, const std::string& why) {
  ++failure_count_;
  if (failures_.size() >= kReportedFailures) return;
  std::string text = (display.empty() ? "." : display) + " (" + why;
  if (actual != display) text += "; now at " + actual;
  failures_.push_back(text + ")");
}

void TreeRemover::FailEntry(const std::string& name, const std::string& why) {
  Frame& top = frames_.back();
  std::string display = Printable(Join(top.display, name));
  if (frames_.size() == 1 && origins_.count(name)) display = origins_[name];
  Fail(display, Printable(Join(top.actual, name)), why);
  top.failed_below = true;
  if (top.skip.size() < kRememberedFailures) top.skip.insert(name);
}

bool TreeRemover::MovesAllowed() {
  if (!moves_checked_) {
    moves_allowed_ = !MountsBelow(vol_fd_);
    moves_checked_ = true;
  }
  return moves_allowed_;
}

void TreeRemover::FailFrame(const std::string& why) {
  Frame& top = frames_.back();
  Fail(top.display, top.actual, why);
  top.failed_below = true;
}

}  // namespace fsops_detail
