// The bodies of tmpfs.hpp (the contracts are there).
#include "test/support/tmpfs.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>

namespace harness {

Tmpfs::Tmpfs(const std::string& at, const char* size) : dir(at) {
  ::mkdir(dir.c_str(), 0755);
  mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  if (!mounted) WARN("SKIPPED: cannot mount a tmpfs here (needs root): " << std::strerror(errno));
}

Tmpfs::~Tmpfs() {
  if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
}

}  // namespace harness
