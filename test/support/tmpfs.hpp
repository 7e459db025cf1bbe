// A small tmpfs mounted by an end-to-end test for as long as it lives (a filesystem of a known
// size). Needs root: otherwise `mounted` is false and the test is skipped with a message.
#pragma once
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace harness {

struct Tmpfs {
  std::string dir;
  bool mounted = false;
  Tmpfs(const std::string& at, const char* size) : dir(at) {
    ::mkdir(dir.c_str(), 0755);
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
    if (!mounted) WARN("SKIPPED: cannot mount a tmpfs here (needs root): " << std::strerror(errno));
  }
  ~Tmpfs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

}  // namespace harness
