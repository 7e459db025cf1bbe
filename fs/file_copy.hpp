// One entry's part of copying a volume (copy_tree.hpp walks the tree): a regular file's data,
// and the metadata of any entry (owner, mode, extended attributes, times).
//
// Hand-written: the only library that copies Linux file data and metadata the way we need it
// is coreutils' cp, a program and not a library. libacl/libattr would add a dependency for
// what three syscalls do (the ACL of a file is just the system.posix_acl_* xattrs, copied as
// bytes), and std::filesystem::copy follows symlinks in the destination, knows nothing of
// holes, reflinks, xattrs or hostile trees.
//
// Every call works on descriptors the caller checked (source) or made (destination); the only
// paths are /proc/self/fd/<dir fd>/<name> for a symlink's xattrs, whose last component is
// never followed (the l*xattr calls).
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>

namespace file_copy {

constexpr uint64_t kChunkBytes = 8 << 20;  // data copied between two looks at the cancel flag

// What the walk learnt of an entry when it stat'ed it: all that is set on the copy.
struct Meta {
  mode_t mode = 0;  // type and permission bits
  uid_t uid = 0;
  gid_t gid = 0;
  struct timespec atime{}, mtime{};
  uint64_t size = 0;
};

// The Meta of an entry from its statx.
Meta MetaOf(const struct statx& sx);

// State shared by all files of one copy.
struct DataCopy {
  const std::atomic<bool>* cancel = nullptr;
  bool reflink_failed = false;       // FICLONE failed once: not tried again in this copy
  bool copy_range_failed = false;    // copy_file_range likewise: read/write instead
  std::function<void(uint64_t)> on_bytes;  // data byte-copied since the last call
  bool Canceled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

// Copies the data of the open regular file src (size `size`) into the new empty file dst:
// a reflink (FICLONE) where the filesystem shares extents, else the data ranges only
// (SEEK_DATA/SEEK_HOLE), so that holes stay holes, and the size set last. *reflinked tells
// which. Returns 0 or an errno value (ECANCELED when canceled).
int CopyData(int src, int dst, uint64_t size, DataCopy* dc, bool* reflinked);

// Owner, xattrs, mode, times of a copy made through the descriptor dst (a file or directory),
// from the source's descriptor src (xattrs) and its stat (m). In this order because chown
// clears set-user/group-ID bits and file capabilities, and any change moves ctime only.
// Returns 0 or an errno value, *what naming the step.
int SetMeta(int src, int dst, const Meta& m, const char** what);

// The same for the symlink `name` in dst_dir (a symlink has no mode of its own to set).
int SetLinkMeta(int src_dir, int dst_dir, const std::string& name, const Meta& m, const char** what);

}  // namespace file_copy
