// quota.hpp on real filesystems in loop devices: the probe's verdict and advice, a volume's
// size enforced (writes past it fail with EDQUOT), raised when it grows, and removal that
// takes a btrfs subvolume volume but never enters a subvolume or mount inside it. Project
// quotas (ext4, XFS) need a kernel with quota support: where this one lacks it, those cases
// skip here and run in a virtual machine with Debian's kernel (test/quota_vm.sh).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "quota.hpp"
#include "test/loopfs.hpp"
#include "test/tmpfs.hpp"

namespace {

using harness::LoopFs;

constexpr uint64_t kMiB = 1 << 20;

// Where the test's filesystems go: QUOTA_TEST_DIR, else a fresh folder under /tmp.
std::string Scratch(const std::string& name) {
  static std::string base = [] {
    if (const char* d = std::getenv("QUOTA_TEST_DIR")) return std::string(d);
    char tmpl[] = "/tmp/unit-quota-XXXXXX";
    return std::string(mkdtemp(tmpl) ? tmpl : "/tmp");
  }();
  return base + "/" + name;
}

Root OpenRoot(const std::string& path) {
  Result<Root> r = Root::Open(path);
  REQUIRE(r.ok());
  return std::move(*r);
}

// Writes zeros to dir/file until `limit` bytes or an error; returns what was written and the
// error (0 if none). fsync'd every MiB, so that delayed allocation meets the limit.
std::pair<uint64_t, int> Fill(const std::string& path, uint64_t limit) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return {0, errno};
  std::vector<char> chunk(64 * 1024, 0);
  uint64_t written = 0;
  int err = 0;
  while (written < limit) {
    ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      err = errno;
      break;
    }
    written += static_cast<uint64_t>(n);
    if (written % kMiB == 0 && fsync(fd) != 0) {
      err = errno;
      break;
    }
  }
  if (err == 0 && fsync(fd) != 0) err = errno;
  close(fd);
  return {written, err};
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// A btrfs filesystem with quotas on, or skip.
#define REQUIRE_MOUNTED(fs)                  \
  if (!(fs).mounted) {                       \
    WARN("SKIPPED: " << (fs).why);           \
    return;                                  \
  }

}  // namespace

TEST_CASE("btrfs with quotas off: the probe says how to turn them on, and turns nothing on", "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-off"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  Root root = OpenRoot(fs.dir);
  QuotaSupport q = ProbeQuota(root);
  CHECK(q.method == QuotaMethod::kNone);
  CHECK(q.fs == "btrfs");
  CHECK(q.why_not.find("btrfs quota enable " + fs.dir) != std::string::npos);
  // Still off: a limit on a new subvolume is refused as it was.
  CHECK(LoopFs::Sh("btrfs qgroup show " + fs.dir + " >/dev/null 2>&1") != 0);
}

TEST_CASE("btrfs with quotas on: a volume is a subvolume whose size is a hard limit, raised when it grows",
          "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-on"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Root root = OpenRoot(fs.dir);
  QuotaSupport q = ProbeQuota(root);
  INFO(q.why_not);
  REQUIRE(q.method == QuotaMethod::kBtrfs);

  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(q.method, "ns-claim-pvc-1", 02770, 1000, 2000, 4 * kMiB, "pvc-1");
  INFO(made.status().message());
  REQUIRE(made.ok());
  CHECK(made->method == QuotaMethod::kBtrfs);
  CHECK(made->id >= 256);
  const std::string vol = fs.dir + "/ns-claim-pvc-1";
  struct stat st {};
  REQUIRE(stat(vol.c_str(), &st) == 0);
  CHECK(st.st_ino == 256);  // a subvolume's root
  CHECK((st.st_mode & 07777) == 02770);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 2000);

  auto [written, err] = Fill(vol + "/data", 16 * kMiB);
  INFO("wrote " << written << " bytes");
  CHECK(err == EDQUOT);
  CHECK(written <= 4 * kMiB);
  CHECK(written >= 3 * kMiB);

  // Made again (a retry): the same subvolume, the same ID, the data kept.
  Result<QuotaId> again = limits.Make(q.method, "ns-claim-pvc-1", 02770, 1000, 2000, 4 * kMiB, "pvc-1");
  REQUIRE(again.ok());
  CHECK(again->id == made->id);
  CHECK(Exists(vol + "/data"));

  REQUIRE(limits.SetLimit(*made, "ns-claim-pvc-1", 12 * kMiB).ok());
  auto [more, err2] = Fill(vol + "/more", 4 * kMiB);
  CHECK(err2 == 0);
  CHECK(more == 4 * kMiB);

  // Removed like any volume directory, subvolume and all.
  Status removed = root.RemoveTree("ns-claim-pvc-1");
  INFO(removed.message());
  CHECK(removed.ok());
  CHECK_FALSE(Exists(vol));
  CHECK(limits.Release(*made).ok());
}

TEST_CASE("btrfs: a plain directory in the way is not taken for a volume's subvolume", "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-plain"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Root root = OpenRoot(fs.dir);
  REQUIRE(root.MakeDir("taken", 0755).ok());
  Result<QuotaId> made = QuotaLimits(root).Make(QuotaMethod::kBtrfs, "taken", 0755, -1, -1, kMiB, "x");
  CHECK(made.status().code() == Status::kConflict);
}

TEST_CASE("removal takes a subvolume volume but never enters a subvolume or a mount inside it", "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-nested"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Root root = OpenRoot(fs.dir);
  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(QuotaMethod::kBtrfs, "vol", 0755, -1, -1, 8 * kMiB, "vol");
  REQUIRE(made.ok());
  REQUIRE(LoopFs::Sh("btrfs subvolume create " + fs.dir + "/vol/inner >/dev/null") == 0);
  REQUIRE(Fill(fs.dir + "/vol/inner/keep", kMiB).second == 0);
  REQUIRE(Fill(fs.dir + "/vol/mine", kMiB).second == 0);
  harness::Tmpfs mount(fs.dir + "/vol/mounted", "1M");
  REQUIRE(mount.mounted);
  REQUIRE(Fill(fs.dir + "/vol/mounted/keep", 1024).second == 0);

  Status s = root.RemoveTree("vol");
  INFO(s.message());
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("inner") != std::string::npos);
  CHECK(s.message().find("mounted") != std::string::npos);
  CHECK(Exists(fs.dir + "/vol/inner/keep"));
  CHECK(Exists(fs.dir + "/vol/mounted/keep"));
  CHECK_FALSE(Exists(fs.dir + "/vol/mine"));
}

TEST_CASE("tmpfs cannot enforce a size, and the probe says so", "[quota]") {
  harness::Tmpfs t(Scratch("tmpfs"), "4M");
  if (!t.mounted) return;
  Root root = OpenRoot(t.dir);
  QuotaSupport q = ProbeQuota(root);
  CHECK(q.method == QuotaMethod::kNone);
  CHECK(q.why_not == t.dir + " is on tmpfs, which cannot enforce a volume's size: only ext4 and XFS (project quotas) "
                             "and btrfs (qgroups) can");
}

TEST_CASE("ext4 without the project and quota features: the probe names the tune2fs command", "[quota][project]") {
  LoopFs fs(Scratch("ext4-plain"), "ext4", "64M");
  REQUIRE_MOUNTED(fs);
  Root root = OpenRoot(fs.dir);
  QuotaSupport q = ProbeQuota(root);
  CHECK(q.method == QuotaMethod::kNone);
  CHECK(q.fs == "ext4");
  INFO(q.why_not);
  const bool told = q.why_not.find("tune2fs -O project,quota -Q prjquota /dev/loop") != std::string::npos ||
                    q.why_not.find("built without quota support") != std::string::npos;
  CHECK(told);
}
