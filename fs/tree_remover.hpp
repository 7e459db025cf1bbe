// The removal walk behind Root::RemoveTree (fsops.hpp): internal to fs/, used by fsops.cpp.
// The rules it keeps are at the top of fsops.hpp.
#pragma once
#include <dirent.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "fs/fsops.hpp"

namespace fsops_detail {

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
  TreeRemover(int root_fd, std::string root_path, std::string name, int max_open_dirs, const std::atomic<bool>* cancel);

  Status Run();

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
  bool Push(const std::string& name, const std::string& display, const std::string& actual, Fd fd);

  bool Canceled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }

  void Walk();

  // Removes one entry of the top frame, or enters it when it is a directory.
  void HandleEntry(const std::string& name);

  // `child` is the open directory `name` of the top frame: enter it, or move it up when the
  // stack is full, or leave it alone when it is on another mount.
  void EnterDir(const std::string& name, Fd child);

  // Renames `name` of the top frame into the volume directory under a fresh name.
  bool MoveUp(const std::string& name);

  // The top frame has been read to its end: remove it, scan it again, or give up on it.
  void FinishDir();

  void Pop(bool failed = false);

  // Records that `display` (original path relative to the volume, "" for the volume itself),
  // now at `actual`, could not be removed, and why.
  void Fail(const std::string& display, const std::string& actual, const std::string& why);
  void FailEntry(const std::string& name, const std::string& why);
  // Moving a directory up would also move any mount below it: allowed only when nothing is
  // mounted below the volume. Looked up in /proc/self/mountinfo once, when first needed (a
  // tree as deep as the open-directory limit), not on every removal.
  bool MovesAllowed();

  void FailFrame(const std::string& why);

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
