// The bodies of btrfs_qgroup.hpp: the btrfs ioctls, as described there.
#include "fs/btrfs_qgroup.hpp"

#include <endian.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace btrfs_qgroup {

uint64_t Level1(uint64_t id) { return (1ULL << BTRFS_QGROUP_LEVEL_SHIFT) | id; }

int CreateQgroup(int fd, uint64_t qgroupid, bool create) {
  btrfs_ioctl_qgroup_create_args args {};
  args.create = create ? 1 : 0;
  args.qgroupid = qgroupid;
  return ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &args) == 0 ? 0 : errno;
}

int Assign(int fd, uint64_t member, uint64_t group, bool* added) {
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

int Limit(int fd, uint64_t qgroupid, uint64_t bytes) {
  btrfs_ioctl_qgroup_limit_args args {};
  args.qgroupid = qgroupid;
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  args.lim.max_rfer = bytes;
  return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &args) == 0 ? 0 : errno;
}

namespace {
namespace detail {

// The subvolumes whose parent is subvolume `parent`, with the directory of the parent they
// are in and their name there: the ROOT_REF items of the root tree (needs CAP_SYS_ADMIN).
struct Ref {
  uint64_t id = 0, dirid = 0;
  std::string name;
};
int Children(int fd, uint64_t parent, std::vector<Ref>* out) {
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
int DirPath(int fd, uint64_t tree, uint64_t dirid, std::string* path) {
  btrfs_ioctl_ino_lookup_args args {};
  args.treeid = tree;
  args.objectid = dirid;
  if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) != 0) return errno;
  *path = args.name;
  return 0;
}

}  // namespace detail
}  // namespace

Status ListNested(int fd, uint64_t id, std::vector<Nested>* out) {
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

Status CountChildren(int fd, uint64_t* count) {
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
