// btrfs qgroups and subvolumes nested in a volume, for quota.hpp: the level-1 qgroup 1/ID that
// holds a volume's limit, the subvolumes a tenant made inside the volume (any user who can
// write a directory can make one, and btrfs gives it a qgroup 0/N of its own, in no group), and
// the calls that put them under that limit. How btrfs behaves, as read in its qgroup code and
// checked on Linux 6.18:
//  - a new subvolume's qgroup 0/N has no parent and no limit: nothing the tenant writes there
//    counts against the volume's 0/ID;
//  - 1/ID counts each extent of its members once: referenced is what the volume and its nested
//    subvolumes hold together (a snapshot sharing the volume's extents adds only what differs);
//  - assigning a member whose bytes are all exclusive (a fresh subvolume) updates 1/ID at once;
//    one that shares extents (a snapshot) leaves the accounting inconsistent until a rescan,
//    which the assign ioctl says by answering 1 (a rescan is then started);
//  - a snapshot copies its source's 0/ID limit onto its own 0/N;
//  - the qgroup of a removed subvolume goes once the cleaner has freed its data (6.10+; before
//    that, or while it still counts bytes, destroying it fails with EBUSY and it stays).
// Filesystem layer. Hand-written: no Debian library wraps these ioctls (libbtrfsutil covers
// subvolumes, not qgroup relations, and would be one more static library for four calls).
#pragma once
#include <endian.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace btrfs_qgroup {

constexpr uint64_t kNoLimit = ~0ULL;        // what the limit ioctl takes for "none"
constexpr size_t kMaxNested = 4096;         // subvolumes listed inside one volume, at most

// The level-1 qgroup that holds the limit of the volume whose subvolume ID is `id`: 1/id.
inline uint64_t Level1(uint64_t id) { return (1ULL << BTRFS_QGROUP_LEVEL_SHIFT) | id; }

// A subvolume inside a volume: its ID (its qgroup is 0/id) and its path in the volume.
struct Nested {
  uint64_t id = 0;
  std::string path;
};

// Creates (create true) or destroys qgroup `qgroupid` of the filesystem of `fd`. 0 or an errno
// (EEXIST: there already; EBUSY: it still has members or counts bytes).
inline int CreateQgroup(int fd, uint64_t qgroupid, bool create) {
  btrfs_ioctl_qgroup_create_args args {};
  args.create = create ? 1 : 0;
  args.qgroupid = qgroupid;
  return ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &args) == 0 ? 0 : errno;
}

// Makes qgroup `member` a member of `group`. 0 (also when it already was: *added false) or an
// errno; *added true when the relation is new. A relation that left the accounting inconsistent
// (the member shares extents) starts a rescan of the filesystem's qgroups.
inline int Assign(int fd, uint64_t member, uint64_t group, bool* added) {
  *added = false;
  btrfs_ioctl_qgroup_assign_args args {};
  args.assign = 1;
  args.src = member;
  args.dst = group;
  const long rc = ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &args);
  if (rc < 0) return errno == EEXIST ? 0 : errno;
  *added = true;
  if (rc > 0) {
    btrfs_ioctl_quota_rescan_args rescan {};
    if (ioctl(fd, BTRFS_IOC_QUOTA_RESCAN, &rescan) != 0 && errno != EINPROGRESS) return errno;
  }
  return 0;
}

// Sets the limit on referenced bytes of qgroup `qgroupid` (kNoLimit: none). 0 or an errno
// (ENOTCONN: quotas are off).
inline int Limit(int fd, uint64_t qgroupid, uint64_t bytes) {
  btrfs_ioctl_qgroup_limit_args args {};
  args.qgroupid = qgroupid;
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  args.lim.max_rfer = bytes;
  return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &args) == 0 ? 0 : errno;
}

namespace detail {

// The subvolumes whose parent is subvolume `parent`, with the directory of the parent they
// are in and their name there: the ROOT_REF items of the root tree (needs CAP_SYS_ADMIN).
struct Ref {
  uint64_t id = 0, dirid = 0;
  std::string name;
};
inline int Children(int fd, uint64_t parent, std::vector<Ref>* out) {
  btrfs_ioctl_search_args args {};
  btrfs_ioctl_search_key& key = args.key;
  key.tree_id = BTRFS_ROOT_TREE_OBJECTID;
  key.min_objectid = key.max_objectid = parent;
  key.min_type = key.max_type = BTRFS_ROOT_REF_KEY;
  key.max_offset = ~0ULL;
  key.max_transid = ~0ULL;
  for (;;) {
    key.nr_items = 4096;
    if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &args) != 0) return errno;
    if (key.nr_items == 0) return 0;
    size_t at = 0;
    uint64_t last = 0;
    for (uint32_t i = 0; i < key.nr_items; ++i) {
      btrfs_ioctl_search_header h;
      std::memcpy(&h, args.buf + at, sizeof h);
      at += sizeof h;
      if (h.type == BTRFS_ROOT_REF_KEY && h.len >= sizeof(btrfs_root_ref)) {
        btrfs_root_ref ref;
        std::memcpy(&ref, args.buf + at, sizeof ref);
        const size_t len = std::min<size_t>(le16toh(ref.name_len), h.len - sizeof ref);
        out->push_back({h.offset, le64toh(ref.dirid), std::string(args.buf + at + sizeof ref, len)});
      }
      at += h.len;
      last = h.offset;
    }
    if (last == ~0ULL) return 0;
    key.min_offset = last + 1;
  }
}

// The path of directory `dirid` inside subvolume `tree`, relative to its root ("" for the root
// itself, else ending in '/').
inline int DirPath(int fd, uint64_t tree, uint64_t dirid, std::string* path) {
  btrfs_ioctl_ino_lookup_args args {};
  args.treeid = tree;
  args.objectid = dirid;
  if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) != 0) return errno;
  *path = args.name;
  return 0;
}

}  // namespace detail

// The subvolumes nested in subvolume `id` at any depth (at most kMaxNested), parents before
// their children, each with its path relative to subvolume `id`. Needs CAP_SYS_ADMIN (EPERM).
inline Status ListNested(int fd, uint64_t id, std::vector<Nested>* out) {
  out->clear();
  std::vector<Nested> todo{{id, ""}};
  while (!todo.empty() && out->size() < kMaxNested) {
    const Nested parent = todo.back();
    todo.pop_back();
    std::vector<detail::Ref> refs;
    if (int e = detail::Children(fd, parent.id, &refs); e != 0)
      return Status(Status::kError, std::string("list the subvolumes inside subvolume ") + std::to_string(parent.id) + ": " +
                                        std::strerror(e), e);
    for (const detail::Ref& r : refs) {
      std::string dir;
      if (int e = detail::DirPath(fd, parent.id, r.dirid, &dir); e != 0) dir = "?/";
      Nested n{r.id, (parent.path.empty() ? "" : parent.path + "/") + dir + r.name};
      out->push_back(n);
      todo.push_back(n);
      if (out->size() >= kMaxNested) break;
    }
  }
  return Status::Ok();
}

// How many subvolumes sit directly inside the subvolume of the open directory `fd`, as any user
// may ask (BTRFS_IOC_GET_SUBVOL_ROOTREF, Linux 4.18): for a count where ListNested is refused.
inline Status CountChildren(int fd, uint64_t* count) {
  *count = 0;
  btrfs_ioctl_get_subvol_rootref_args args {};
  for (;;) {
    const int rc = ioctl(fd, BTRFS_IOC_GET_SUBVOL_ROOTREF, &args);
    if (rc != 0 && errno != EOVERFLOW) return Status(Status::kError, std::string("count nested subvolumes: ") + std::strerror(errno), errno);
    *count += args.num_items;
    if (rc == 0) return Status::Ok();
    args.num_items = 0;  // EOVERFLOW: more follow, from min_treeid on
  }
}

}  // namespace btrfs_qgroup
