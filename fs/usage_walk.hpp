// Counting what one volume directory holds, as `du -sxB1` and `du -sx --inodes` count it, a
// bounded number of entries at a time, so that the scanner (usage.hpp) can pause between steps
// and stop halfway. Read-only, and as careful with a hostile tree as the removal in fsops.hpp:
//   - every directory is entered with openat(O_DIRECTORY | O_NOFOLLOW) relative to its
//     parent's descriptor, and checked to be the directory that was counted (device, inode);
//   - entries are looked at with statx(AT_SYMLINK_NOFOLLOW): a symlink counts as itself and is
//     never followed;
//   - an entry on another mount (fsops_detail::OnMountOf: the root of a mount, or another mount
//     id) is neither counted nor entered, as du -x skips it; a volume directory that is itself
//     a mount point is not walked at all. A btrfs subvolume a tenant made inside (another
//     device, the same mount) is counted: its space is the volume's.
// Bounded: at most kUsageOpenDirs descriptors open (deeper, the lowest are closed and opened
// again by name, as above, when the walk comes back to them), one buffer of directory entries,
// a name per level (directories deeper than kUsageMaxDepth are counted, not entered), and at
// most kUsageLinksRemembered inodes with several links (past that, each further name counts).
// An entry that vanishes while the walk is under way is not counted; one that appears may be.
#pragma once
#include <sys/statvfs.h>  // not used here: control/usage.hpp gets fstatvfs through it
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "fs/fsops.hpp"

constexpr size_t kUsageOpenDirs = 16;            // descriptors a walk holds at most
constexpr size_t kUsageMaxDepth = 2048;          // PATH_MAX / 2: no path-based tool reaches deeper
constexpr size_t kUsageLinksRemembered = 65536;  // about 2 MiB of inode numbers

// What a walk has counted so far.
struct UsageCount {
  uint64_t bytes = 0;    // allocated: st_blocks * 512 of each entry counted, as du
  uint64_t inodes = 0;   // entries counted, directories (the volume's own too) included
  uint64_t skipped = 0;  // not counted or not entered: other mounts, unreadable, too deep, replaced
  bool inodes_known = true;  // false: counted by a btrfs qgroup, which counts bytes only
};

// The volume's filesystem, from statvfs: what kubelet reports beside a volume's use.
struct FsFigures {
  uint64_t free_bytes = 0;  // f_bavail * f_frsize: what unprivileged writers may still use
  uint64_t inodes = 0;      // f_files
  uint64_t inodes_free = 0;  // f_ffree
};

// One walk of one volume directory. Movable, not copyable; holds descriptors while not done.
class UsageWalk {
 public:
  UsageWalk() = default;

  // Opens root/name (one component, never a symlink) and counts the directory itself.
  // kInvalid for a bad name; kNotFound when it does not exist; kError when it is not a
  // directory, is a mount point, or cannot be opened (the message names the path and why).
  static Result<UsageWalk> Begin(const Root& root, const std::string& name);

  // Looks at up to `entries` more entries. True once the whole tree has been walked (then
  // count() is final; further calls do nothing).
  bool Step(size_t entries);

  bool done() const { return done_; }
  const UsageCount& count() const { return count_; }

  // The volume's filesystem now (fstatvfs of the volume directory held open).
  Result<FsFigures> Filesystem() const;

 private:
  static constexpr size_t kBufBytes = 32 * 1024;

  // A directory being walked. Only the top frame reads; the one buffer is its. A frame below
  // resumes after `cookie` (the position after its entry being walked), read again from there;
  // one whose descriptor was closed is opened again by name from the frame below it.
  struct Frame {
    std::string name;  // inside the frame below (frame 0: inside the root)
    ino_t ino = 0;
    dev_t dev = 0;
    fsops_detail::Fd fd;  // -1 while closed (too many open)
    off_t cookie = 0;     // d_off of the last entry taken from it
    bool seek = false;    // the buffer was given away: seek to cookie before reading again
  };

  // Reads the top frame's next entries into the buffer. False at its end, or on an error.
  bool Fill();

  bool Skip();

  // Counts the entry `name` of the top frame, and enters it if it is a directory.
  void Visit(const char* name);

  // Is this the first name seen of an inode with several links? Past the bound, every name is.
  bool FirstLink(dev_t dev, ino_t ino);

  // Makes the directory `name` of the top frame the new top, if it is still the one counted.
  void Enter(const char* name, const fsops_detail::DirId& id);

  // Is the open directory fd the directory (dev, ino) on the volume's mount?
  bool Same(int fd, dev_t dev, ino_t ino) const;

  // The top frame was closed: opens it again, and the closed frames below it, by name from
  // the nearest open one, keeping the top kUsageOpenDirs - 1 of them open. A directory that is
  // no longer where it was (renamed, replaced) ends the walk of it and of what lies above it.
  bool Reopen();

  // The top frame has been read to its end.
  void Pop();

  fsops_detail::DirId vol_id_;
  std::vector<Frame> frames_;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0, len_ = 0;  // the unread part of buf_, the top frame's
  std::set<std::pair<dev_t, ino_t>> links_;
  UsageCount count_;
  bool done_ = false;
};
