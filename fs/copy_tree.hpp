// Copying a volume directory into a new one, for a claim cloned from another claim: as
// `cp -a --sparse=always` copies, but safe against a hostile, changing source tree, in
// bounded memory, stoppable, and with reflinks or a btrfs snapshot where the filesystem can.
//
// Hand-written: cp is a program (and follows no rule about mounts, descriptors or memory), and
// no C++ library walks a hostile tree with the rules below. The walk is usage_walk.hpp's, with
// a destination directory beside each source one; file data and metadata are file_copy.hpp's.
// The rules, those of removal in fsops.hpp:
//   - nothing outside the source is read: every source directory is entered with
//     openat(O_DIRECTORY | O_NOFOLLOW) relative to its parent's descriptor and checked to be the
//     directory that was stat'ed (device, inode); files are opened O_NOFOLLOW | O_NONBLOCK (a
//     FIFO swapped in does not block) and checked likewise; symlinks are read, never followed;
//   - an entry on another mount (device or mount id differs from the source's) is not entered,
//     and is named in skipped_mounts; a btrfs subvolume nested in the source (another device,
//     the same mount) is left out too, and named in skipped_subvolumes;
//   - nothing outside the destination is written: entries are made with mkdirat, symlinkat,
//     linkat and openat(O_CREAT | O_EXCL | O_NOFOLLOW) relative to descriptors of directories
//     the copier made itself, never renamed in (a project quota on the destination counts them);
//   - bounded: at most kCopyOpenDirs source and as many destination directory descriptors
//     (deeper, some are closed and opened again by name, checked, when the walk comes back);
//     one buffer of directory entries, read a buffer at a time however wide the directory; a
//     name per level; at most kCopyLinksRemembered inodes with several links.
// Entries that vanish or are replaced between being listed and being copied are left out and
// counted (a live volume changes while it is copied). A directory moved away while the walk is
// inside it is copied on through the descriptors held, as any descriptor-based walk would; when
// the walk must open it again by name and finds something else there, the copy ends with an
// error (a pod cannot move anything out of its volume: renames across mounts fail with EXDEV).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.hpp"

enum class CopyMethod { kBytes, kReflink, kSnapshot };

// What a user reads for a method: "byte copy", "reflink copy", "btrfs snapshot".
const char* Describe(CopyMethod m);

constexpr size_t kCopyOpenDirs = 8;                      // per side: 8 source + 8 destination descriptors
constexpr size_t kCopyMaxDepth = 65536;                  // levels; names kept per level bound the memory
constexpr size_t kCopyLinksRemembered = 65536;           // inodes with several links, as usage_walk
constexpr size_t kCopyLinkPathBytes = 16 << 20;          // the destination paths those keep, in all
constexpr size_t kCopyMountsNamed = 16;                  // skipped mounts named; the rest counted

// What has been copied so far.
struct CopyProgress {
  uint64_t bytes = 0, entries = 0;
};

struct CopyResult {
  // kReflink when at least one file was reflinked and none had its data copied byte by byte;
  // kBytes otherwise (also for a tree without data).
  CopyMethod method = CopyMethod::kBytes;
  uint64_t bytes = 0;              // file data copied (logical bytes, holes excluded)
  uint64_t entries = 0;            // directories, files, symlinks made (hard links count once)
  uint64_t skipped_special = 0;    // sockets, FIFOs, block/char devices: not copied
  std::vector<std::string> skipped_mounts;  // first kCopyMountsNamed, relative to the source
  uint64_t skipped_mount_count = 0;         // all of them
  std::vector<std::string> skipped_subvolumes;  // btrfs subvolumes inside: first kCopyMountsNamed
  uint64_t skipped_subvolume_count = 0;         // all of them
  uint64_t vanished = 0;  // entries gone or replaced between being listed and copied: left out
};

struct CopyOptions {
  const std::atomic<bool>* cancel = nullptr;           // set: stop soon, return kCanceled
  std::function<void(const CopyProgress&)> progress;  // called every progress_entries / progress_bytes
  uint64_t progress_entries = 4096;
  uint64_t progress_bytes = 64 << 20;
  size_t links_remembered = kCopyLinksRemembered;  // inodes with several links kept as links
};

// Copies the contents of the directory src_fd into the empty directory dst_fd (made by the
// caller, perhaps under a project quota: everything is created inside it, nothing renamed in),
// then gives dst_fd the source directory's owner, xattrs, mode and times. See the rules at the
// top of this file. Regular files, directories and symlinks (as links) are copied with owner,
// mode (set-ID and sticky bits too), times in nanoseconds, xattrs and ACLs, holes kept, hard
// links kept as links (the first opt.links_remembered inodes); sockets, FIFOs and devices are
// counted and left out; mounts and nested btrfs subvolumes are left out and named. Each file is reflinked (FICLONE)
// while the filesystem allows; once refused, the rest is copied byte by byte.
// Errors name the path relative to the source and keep the errno (ENOSPC, EDQUOT: does not
// fit). Once *opt.cancel turns true, stops within one entry or kChunkBytes: kCanceled. On any
// failure the destination holds a partial copy, left for the caller to remove (Root::RemoveTree).
// Blocks for as long as the copy takes: run it on a thread of its own, at idle priority
// (LowerThreadPriority, usage.hpp), so that it holds up nothing else.
Result<CopyResult> CopyContents(int src_fd, int dst_fd, const CopyOptions& opt);

// Makes dst_parent/name a writable btrfs snapshot (BTRFS_IOC_SNAP_CREATE_V2) of src_fd, which
// must be the root of a subvolume (inode 256) on the same btrfs filesystem as dst_parent_fd.
// kInvalid saying why when it is not (the caller then uses CopyContents); another error naming
// the errno when the snapshot fails. Subvolumes nested inside the source are not in the
// snapshot: btrfs leaves an empty directory in their place (CopyContents would skip them too).
Status SnapshotSubvolume(int src_fd, int dst_parent_fd, const std::string& name);
