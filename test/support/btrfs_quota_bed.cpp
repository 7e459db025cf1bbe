// The body of btrfs_quota_bed.hpp (the contract is there).
#include "test/support/btrfs_quota_bed.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>

namespace harness {

BtrfsQuotaBed::BtrfsQuotaBed() : fs(tmp.path() + "/pv", "btrfs", "300M") {
  ::chmod(tmp.path().c_str(), 0755);  // Fill writes as user 1000
  if (!fs.mounted) {
    WARN("SKIPPED: " << fs.why);
    return;
  }
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  api = std::make_unique<FakeApi>(tmp.path() + "/api");
  ready = true;
}

}  // namespace harness
