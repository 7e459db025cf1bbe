// A filesystem made in an image file and mounted through a loop device, for as long as the
// test's object lives: ext4, XFS or btrfs, with the options a test asks for. Needs root, loop
// devices and the mkfs tool: otherwise `mounted` is false and `why` says what is missing (the
// test then skips with that message).
#pragma once
#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>

#include "test/support/harness.hpp"

namespace harness {

struct LoopFs {
  std::string dir, image, why;
  bool mounted = false;

  // type: "ext4", "xfs" or "btrfs"; mkfs_args and mount_options as the tools take them.
  LoopFs(const std::string& at, const std::string& type, const std::string& size, const std::string& mkfs_args = "",
         const std::string& mount_options = "");
  ~LoopFs();
  LoopFs(const LoopFs&) = delete;
  LoopFs& operator=(const LoopFs&) = delete;

  static int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }
};

constexpr uint64_t kMiB = 1 << 20;

// Writes zeros to `path` until `limit` bytes or an error, as user 1000: a pod's user, without
// the CAP_SYS_RESOURCE that lets root past ext4's limits. Returns what was written and the
// error (0 if none). fsync'd every MiB, so that delayed allocation meets the limit.
std::pair<uint64_t, int> Fill(const std::string& path, uint64_t limit);

// Runs `step` in a child process as user 1000 (a pod's user, without root's capabilities) and
// returns what it returned: a count and an errno value (0: none); {0, EIO} when the child could
// not report.
std::pair<uint64_t, int> AsUser1000(const std::function<std::pair<uint64_t, int>()>& step);

// Makes the btrfs subvolume parent/name as user 1000, as a tenant's pod can (the ioctl that
// `btrfs subvolume create` calls needs no privilege). Returns 0 or the errno.
int MakeSubvolumeAsUser(const std::string& parent, const std::string& name);

}  // namespace harness
