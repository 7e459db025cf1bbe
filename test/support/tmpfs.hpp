// A small tmpfs mounted by an end-to-end test for as long as it lives (a filesystem of a known
// size). Needs root: otherwise `mounted` is false and the test is skipped with a message.
#pragma once
#include <string>

namespace harness {

struct Tmpfs {
  std::string dir;
  bool mounted = false;
  Tmpfs(const std::string& at, const char* size);
  ~Tmpfs();
};

}  // namespace harness
