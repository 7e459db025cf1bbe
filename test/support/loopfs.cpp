// The bodies of loopfs.hpp (the contracts are there).
#include "test/support/loopfs.hpp"

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
#include <string>
#include <utility>

namespace harness {

LoopFs::LoopFs(const std::string& at, const std::string& type, const std::string& size, const std::string& mkfs_args,
               const std::string& mount_options) : dir(at), image(at + ".img") {
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

LoopFs::~LoopFs() {
  if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  ::unlink(image.c_str());
  ::rmdir(dir.c_str());
}

std::pair<uint64_t, int> AsUser1000(const std::function<std::pair<uint64_t, int>()>& step) {
  int result[2];
  if (pipe(result) != 0) return {0, errno};
  pid_t pid = fork();
  if (pid == 0) {
    uint64_t out[2] = {0, 0};
    if (setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0) {
      out[1] = static_cast<uint64_t>(errno);
    } else {
      const std::pair<uint64_t, int> r = step();
      out[0] = r.first;
      out[1] = static_cast<uint64_t>(r.second);
    }
    _exit(write(result[1], out, sizeof out) == sizeof out ? 0 : 1);
  }
  close(result[1]);
  uint64_t got[2] = {0, EIO};
  if (pid < 0 || read(result[0], got, sizeof got) != sizeof got) got[0] = 0, got[1] = EIO;
  close(result[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return {got[0], static_cast<int>(got[1])};
}

std::pair<uint64_t, int> Fill(const std::string& path, uint64_t limit) {
  return AsUser1000([&]() -> std::pair<uint64_t, int> {
    uint64_t written = 0;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return {0, errno};
    static char chunk[64 * 1024];
    while (written < limit) {
      ssize_t n = write(fd, chunk, sizeof chunk);
      if (n < 0) return {written, errno};
      written += static_cast<uint64_t>(n);
      if (written % kMiB == 0 && fsync(fd) != 0) return {written, errno};
    }
    return {written, fsync(fd) != 0 ? errno : 0};
  });
}

int MakeSubvolumeAsUser(const std::string& parent, const std::string& name) {
  return AsUser1000([&]() -> std::pair<uint64_t, int> {
           int fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
           if (fd < 0) return {0, errno};
           btrfs_ioctl_vol_args args {};
           snprintf(args.name, sizeof args.name, "%s", name.c_str());
           return {0, ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, &args) != 0 ? errno : 0};
         })
      .second;
}

}  // namespace harness
