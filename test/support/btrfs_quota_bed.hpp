// Where the tests of enforced sizes on btrfs start: a loop-mounted btrfs with quotas on and a
// fake API server. Apart from loopfs because it asserts with Catch2, which the benchmark (a
// user of loopfs) does not link.
#pragma once
#include <memory>

#include "test/support/harness.hpp"
#include "test/support/loopfs.hpp"

namespace harness {

// A btrfs image with quotas on, mounted at TMP/pv (TMP reachable by user 1000, for Fill), and a
// fake API server in TMP/api: where the tests of enforced sizes on btrfs start. `ready` false,
// with a WARN saying why, where loop devices or btrfs are missing (the test then returns).
struct BtrfsQuotaBed {
  TempDir tmp;
  LoopFs fs;
  std::unique_ptr<FakeApi> api;
  bool ready = false;
  BtrfsQuotaBed();
};

}  // namespace harness
