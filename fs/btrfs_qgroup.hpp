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
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace btrfs_qgroup {

constexpr uint64_t kNoLimit = ~0ULL;        // what the limit ioctl takes for "none"
constexpr size_t kMaxNested = 4096;         // subvolumes listed inside one volume, at most

// The level-1 qgroup that holds the limit of the volume whose subvolume ID is `id`: 1/id.
uint64_t Level1(uint64_t id);

// A subvolume inside a volume: its ID (its qgroup is 0/id) and its path in the volume.
struct Nested {
  uint64_t id = 0;
  std::string path;
};

// Creates (create true) or destroys qgroup `qgroupid` of the filesystem of `fd`. 0 or an errno
// (EEXIST: there already; EBUSY: it still has members or counts bytes).
int CreateQgroup(int fd, uint64_t qgroupid, bool create);

// Makes qgroup `member` a member of `group`. 0 (also when it already was: *added false) or an
// errno; *added true when the relation is new. A relation that left the accounting inconsistent
// (the member shares extents) starts a rescan of the filesystem's qgroups.
int Assign(int fd, uint64_t member, uint64_t group, bool* added);

// Sets the limit on referenced bytes of qgroup `qgroupid` (kNoLimit: none). 0 or an errno
// (ENOTCONN: quotas are off).
int Limit(int fd, uint64_t qgroupid, uint64_t bytes);

// The subvolumes nested in subvolume `id` at any depth (at most kMaxNested), parents before
// their children, each with its path relative to subvolume `id`. Needs CAP_SYS_ADMIN (EPERM).
Status ListNested(int fd, uint64_t id, std::vector<Nested>* out);

// How many subvolumes sit directly inside the subvolume of the open directory `fd`, as any user
// may ask (BTRFS_IOC_GET_SUBVOL_ROOTREF, Linux 4.18): for a count where ListNested is refused.
Status CountChildren(int fd, uint64_t* count);

}  // namespace btrfs_qgroup
