// A filesystem made in an image file and mounted through a loop device, for as long as the
// test's object lives: ext4, XFS or btrfs, with the options a test asks for. Needs root, loop
// devices and the mkfs tool: otherwise `mounted` is false and `why` says what is missing (the
// test then skips with that message).
#pragma once
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace harness {

struct LoopFs {
  std::string dir, image, why;
  bool mounted = false;

  // type: "ext4", "xfs" or "btrfs"; mkfs_args and mount_options as the tools take them.
  LoopFs(const std::string& at, const std::string& type, const std::string& size, const std::string& mkfs_args = "",
         const std::string& mount_options = "")
      : dir(at), image(at + ".img") {
    if (geteuid() != 0) {
      why = "needs root (loop devices, mount)";
      return;
    }
    ::mkdir(dir.c_str(), 0755);
    const std::string mkfs = "mkfs." + type;
    if (Sh("command -v " + mkfs + " >/dev/null") != 0) {
      why = mkfs + " is not installed";
      return;
    }
    if (Sh("truncate -s " + size + " " + image + " && " + mkfs + " -q " + (type == "ext4" ? "-F " : "-f ") + mkfs_args +
           " " + image + " >/dev/null 2>&1") != 0) {
      why = mkfs + " " + mkfs_args + " failed";
      return;
    }
    const std::string opts = "loop" + (mount_options.empty() ? "" : "," + mount_options);
    if (Sh("mount -o " + opts + " " + image + " " + dir + " 2>/dev/null") != 0) {
      why = "this kernel cannot mount " + type + " with -o " + opts + " (see dmesg)";
      return;
    }
    mounted = true;
  }
  ~LoopFs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
    ::unlink(image.c_str());
    ::rmdir(dir.c_str());
  }
  LoopFs(const LoopFs&) = delete;
  LoopFs& operator=(const LoopFs&) = delete;

  static int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }
};

}  // namespace harness
