// quota.hpp on real filesystems in loop devices: the probe's verdict and advice, a volume's
// size enforced (writes past it fail), raised when it grows, and removal that takes a btrfs
// subvolume volume and the subvolumes inside it but never enters a mount inside it. Project quotas (ext4,
// XFS) need a kernel with quota support: where this one lacks it, those cases skip here and
// run in a virtual machine with Debian's kernel (test/quota_vm.sh, from `make test`).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fs/quota.hpp"
#include "control/usage.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/tmpfs.hpp"

namespace {

using harness::Fill;
using harness::LoopFs;
using harness::kMiB;

// Where the test's filesystems go: QUOTA_TEST_DIR, else a fresh folder under /tmp.
std::string Scratch(const std::string& name) {
  static std::string base = [] {
    if (const char* d = std::getenv("QUOTA_TEST_DIR")) return std::string(d);
    char tmpl[] = "/tmp/unit-quota-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return std::string("/tmp");
    chmod(tmpl, 0755);  // user 1000 writes in the volumes (Fill)
    return std::string(tmpl);
  }();
  return base + "/" + name;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

Root OpenRoot(const std::string& path) {
  Result<Root> r = Root::Open(path);
  REQUIRE(r.ok());
  return std::move(*r);
}

// A quota's refusal: EDQUOT, or ENOSPC, which XFS answers for a project's limit.
bool OverQuota(int err) { return err == EDQUOT || err == ENOSPC; }

// A writer (user 1000) filling `path` is stopped by the limit, within its last MiB.
void StoppedAt(const std::string& path, uint64_t limit) {
  auto [written, err] = Fill(path, 4 * limit);
  INFO("wrote " << written << " bytes to " << path);
  CHECK(OverQuota(err));
  CHECK(written <= limit);
  CHECK(written >= limit - kMiB);
}

#define REQUIRE_MOUNTED(fs)        \
  if (!(fs).mounted) {             \
    WARN("SKIPPED: " << (fs).why); \
    return;                        \
  }

// A filesystem for the project quota cases: in the virtual machine of test/quota_vm.sh, the
// one its init mounted at /mnt/<name> (QUOTA_VM=1: its kernel has quota support, and mkfs is
// not there); elsewhere one made here, which this kernel may fail to mount with quotas.
struct TestFs {
  std::unique_ptr<LoopFs> loop;
  std::string dir, why;
  bool mounted = false;
  TestFs(const std::string& name, const std::string& type, const std::string& mkfs_args, const std::string& options) {
    if (std::getenv("QUOTA_VM") != nullptr) {
      dir = "/mnt/" + name;
      mounted = Exists(dir + "/.mounted");
      why = dir + " was not mounted by the virtual machine's init";
      return;
    }
    loop = std::make_unique<LoopFs>(Scratch(name), type, "300M", mkfs_args, options);
    dir = loop->dir;
    mounted = loop->mounted;
    why = loop->why + "; test/quota_vm.sh runs this case in a virtual machine with Debian's kernel";
  }
};

// ext4 made with project quotas, as docs/capacity.md tells administrators to.
const char* const kExt4Features = "-O project,quota -E quotatype=prjquota";

unsigned ProjectOf(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  fsxattr fa {};
  const bool ok = fd >= 0 && ioctl(fd, FS_IOC_FSGETXATTR, &fa) == 0;
  if (fd >= 0) close(fd);
  return ok ? fa.fsx_projid : 0;
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
  Result<QuotaId> made = limits.Make(q.method, "ns-claim-pvc-1", 02770, 1000, 1000, 4 * kMiB, "pvc-1");
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
  CHECK(st.st_gid == 1000);

  StoppedAt(vol + "/data", 4 * kMiB);

  // Made again (a retry): the same subvolume, the same ID, the data kept.
  Result<QuotaId> again = limits.Make(q.method, "ns-claim-pvc-1", 02770, 1000, 1000, 4 * kMiB, "pvc-1");
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

TEST_CASE("btrfs: an enforced volume's usage is its qgroup's, read without walking it; its inodes are not counted",
          "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-usage"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Root root = OpenRoot(fs.dir);
  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(QuotaMethod::kBtrfs, "vol", 0777, 1000, 1000, 16 * kMiB, "vol");
  REQUIRE(made.ok());
  // 3 MiB in one file and 100 small ones, committed so that the qgroup has counted them.
  REQUIRE(Fill(fs.dir + "/vol/big", 3 * kMiB).first == 3 * kMiB);
  REQUIRE(LoopFs::Sh("mkdir " + fs.dir + "/vol/d && for i in $(seq 100); do echo $i > " + fs.dir +
                     "/vol/d/$i; done && sync -f " + fs.dir) == 0);
  UsageTarget t;
  t.dir_name = "vol";
  t.quota = *made;
  auto counted = UsageFromQuota(root, t);
  REQUIRE(counted);
  CHECK_FALSE(counted->first.inodes_known);
  CHECK(counted->first.inodes == 0);
  uint64_t referenced = 0;
  REQUIRE(limits.QgroupUsage(made->id, &referenced).ok());
  CHECK(counted->first.bytes == referenced);
  // The data, plus the subvolume's own metadata (its tree, where small files live inline).
  CHECK(counted->first.bytes >= 3 * kMiB);
  CHECK(counted->first.bytes < 3 * kMiB + kMiB);
  // Agreement as everywhere else: a PV that names another qgroup gets no figures from it.
  t.quota.id = made->id + 1;
  CHECK_FALSE(UsageFromQuota(root, t));
  // A volume made without a limit is walked, not read from a quota.
  t.quota = QuotaId{};
  CHECK_FALSE(UsageFromQuota(root, t));
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

TEST_CASE("removal takes a subvolume volume and the subvolumes inside it, but never enters a mount inside it", "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-nested"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Root root = OpenRoot(fs.dir);
  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(QuotaMethod::kBtrfs, "vol", 0755, 1000, 1000, 8 * kMiB, "vol");
  REQUIRE(made.ok());
  REQUIRE(LoopFs::Sh("btrfs subvolume create " + fs.dir + "/vol/inner >/dev/null && chown 1000 " + fs.dir + "/vol/inner") == 0);
  REQUIRE(Fill(fs.dir + "/vol/inner/keep", kMiB).second == 0);
  REQUIRE(Fill(fs.dir + "/vol/mine", kMiB).second == 0);
  harness::Tmpfs mount(fs.dir + "/vol/mounted", "1M");
  REQUIRE(mount.mounted);
  REQUIRE(chown(mount.dir.c_str(), 1000, 1000) == 0);
  REQUIRE(Fill(fs.dir + "/vol/mounted/keep", 1024).second == 0);

  Status s = root.RemoveTree("vol");
  INFO(s.message());
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("inner") == std::string::npos);
  CHECK(s.message().find("mounted (mount point, left alone)") != std::string::npos);
  CHECK_FALSE(Exists(fs.dir + "/vol/inner"));  // a subvolume is no mount point
  CHECK(Exists(fs.dir + "/vol/mounted/keep"));
  CHECK_FALSE(Exists(fs.dir + "/vol/mine"));
}

TEST_CASE("btrfs: a usage walk counts a subvolume made inside a volume, but not a mount", "[quota][btrfs]") {
  LoopFs fs(Scratch("btrfs-walk"), "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  Root root = OpenRoot(fs.dir);
  REQUIRE(root.MakeDir("vol", 0777).ok());
  REQUIRE(harness::MakeSubvolumeAsUser(fs.dir + "/vol", "inner") == 0);
  REQUIRE(Fill(fs.dir + "/vol/inner/data", 2 * kMiB).second == 0);
  harness::Tmpfs mount(fs.dir + "/vol/mounted", "4M");
  REQUIRE(mount.mounted);
  REQUIRE(LoopFs::Sh("head -c 2097152 /dev/zero > " + mount.dir + "/other") == 0);
  Result<UsageWalk> walk = UsageWalk::Begin(root, "vol");
  REQUIRE(walk.ok());
  while (!walk->Step(1000)) {
  }
  INFO(walk->count().bytes << " bytes");
  CHECK(walk->count().bytes >= 2 * kMiB);
  CHECK(walk->count().bytes < 3 * kMiB);
  CHECK(walk->count().skipped == 1);  // the mount
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

// Where the project ID search started before issue 41: the 64-bit FNV-1a hash of the volume's
// name, which any tenant could compute.
uint64_t PublicStart(const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h % quota_detail::kProjectIdSpan;
}

TEST_CASE("project IDs start where a tenant cannot predict from the volume's name; the same name, the same start in one process",
          "[quota]") {
  using quota_detail::ProjectIdStart;
  // The process's key is drawn at random (all zeros: 2^-256).
  const std::array<unsigned char, 32>& key = quota_detail::ProjectIdKey();
  CHECK(key != std::array<unsigned char, 32>{});
  CHECK(&quota_detail::ProjectIdKey() == &key);
  std::array<unsigned char, 32> key_a{}, key_b{};
  key_b[0] = 1;
  std::set<uint64_t> starts;
  int public_matches = 0, same_under_both_keys = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "pvc-" + std::to_string(i);
    const uint64_t start = ProjectIdStart(name);
    CHECK(start < static_cast<uint64_t>(quota_detail::kProjectIdSpan));
    CHECK(ProjectIdStart(name) == start);  // what the ID search and the tests of collisions rely on
    starts.insert(start);
    public_matches += start == PublicStart(name);
    same_under_both_keys += ProjectIdStart(name, key_a) == ProjectIdStart(name, key_b);
  }
  CHECK(public_matches == 0);
  CHECK(same_under_both_keys == 0);
  CHECK(starts.size() >= 998);  // spread over 10^9 IDs (collisions are rare, and handled)
}

TEST_CASE("ext4 without the project and quota features: the probe names the tune2fs command", "[quota]") {
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

namespace {

// The enforcement cases, the same on ext4 and XFS.
void EnforcesSizes(const std::string& name, const std::string& type, const std::string& mkfs_args) {
  TestFs fs(name, type, mkfs_args, "prjquota");
  REQUIRE_MOUNTED(fs);
  Root root = OpenRoot(fs.dir);
  QuotaSupport q = ProbeQuota(root);
  INFO(q.why_not);
  REQUIRE(q.method == QuotaMethod::kProject);
  CHECK(q.fs == type);
  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(q.method, "ns-a-pvc-1", 0770, 1000, 1000, 4 * kMiB, "pvc-1");
  INFO(made.status().message());
  REQUIRE(made.ok());
  CHECK(made->method == QuotaMethod::kProject);
  CHECK(made->id >= 1000000);
  const std::string vol = fs.dir + "/ns-a-pvc-1";
  CHECK(ProjectOf(vol) == made->id);
  REQUIRE(mkdir((vol + "/sub").c_str(), 0755) == 0);
  REQUIRE(chown((vol + "/sub").c_str(), 1000, 1000) == 0);
  CHECK(ProjectOf(vol + "/sub") == made->id);  // inherited

  StoppedAt(vol + "/sub/data", 4 * kMiB);

  // Made again (a retry): the same ID; a second volume gets another, even from the same seed.
  Result<QuotaId> again = limits.Make(q.method, "ns-a-pvc-1", 0770, 1000, 1000, 4 * kMiB, "pvc-1");
  REQUIRE(again.ok());
  CHECK(again->id == made->id);
  Result<QuotaId> other = limits.Make(q.method, "ns-b-pvc-2", 0770, -1, -1, 2 * kMiB, "pvc-1");
  REQUIRE(other.ok());
  CHECK(other->id != made->id);

  REQUIRE(limits.SetLimit(*made, "ns-a-pvc-1", 12 * kMiB).ok());
  auto [more, err2] = Fill(vol + "/sub/more", 4 * kMiB);
  CHECK(err2 == 0);
  CHECK(more == 4 * kMiB);
  uint64_t bytes = 0, inodes = 0;
  REQUIRE(limits.ProjectUsage(static_cast<unsigned>(made->id), &bytes, &inodes).ok());
  CHECK(bytes >= 7 * kMiB);
  CHECK(inodes == 4);  // the volume, sub, data, more
  // The usage metrics read it from the quota, as du would count it, without a walk.
  UsageTarget target;
  target.dir_name = "ns-a-pvc-1";
  target.quota = *made;
  auto counted = UsageFromQuota(root, target);
  REQUIRE(counted);
  CHECK(counted->first.bytes == bytes);
  CHECK(counted->first.inodes == 4);
  {
    Result<UsageWalk> walk = UsageWalk::Begin(root, "ns-a-pvc-1");  // holds the directory open
    REQUIRE(walk.ok());
    while (!walk->Step(1000)) {
    }
    CHECK(walk->count().inodes == 4);
    CHECK(walk->count().bytes == bytes);
  }
  target.quota = *other;  // a record that disagrees with the directory: not read
  CHECK_FALSE(UsageFromQuota(root, target));

  // Removed, then released: once the filesystem no longer charges the removed files to it (XFS
  // frees inodes in the background; syncfs hurries it), the ID serves the next volume.
  REQUIRE(root.RemoveTree("ns-a-pvc-1").ok());
  REQUIRE(limits.Release(*made).ok());
  for (int i = 0; i < 50; ++i) {
    syncfs(root.fd());
    REQUIRE(limits.ProjectUsage(static_cast<unsigned>(made->id), &bytes, &inodes).ok());
    if (bytes == 0 && inodes == 0) break;
    usleep(100 * 1000);
  }
  CHECK(inodes == 0);
  Result<QuotaId> reused = limits.Make(q.method, "ns-c-pvc-3", 0770, -1, -1, kMiB, "pvc-1");
  REQUIRE(reused.ok());
  CHECK(reused->id == made->id);
}

}  // namespace

TEST_CASE("ext4 with project quotas: a volume's size is a hard limit, raised when it grows", "[quota][project]") {
  EnforcesSizes("ext4", "ext4", kExt4Features);
}

TEST_CASE("XFS with project quotas: a volume's size is a hard limit, raised when it grows", "[quota][project]") {
  EnforcesSizes("xfs", "xfs", "");
}

TEST_CASE("project IDs: volumes made at once never share one; one still charged to files is not reused",
          "[quota][project]") {
  TestFs fs("ext4-ids", "ext4", kExt4Features, "prjquota");
  REQUIRE_MOUNTED(fs);
  Root root = OpenRoot(fs.dir);
  REQUIRE(ProbeQuota(root).method == QuotaMethod::kProject);
  QuotaLimits limits(root);
  // Eight allocators at once, all starting from the same ID (one seed), as several instances
  // sharing one filesystem could.
  constexpr int kN = 8;
  std::vector<Result<QuotaId>> got(kN, Status::Error("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kN; ++i)
    threads.emplace_back([&, i] {
      got[i] = limits.Make(QuotaMethod::kProject, "v" + std::to_string(i), 0755, 1000, 1000, kMiB, "same");
    });
  for (auto& t : threads) t.join();
  std::set<uint64_t> ids;
  for (int i = 0; i < kN; ++i) {
    INFO(got[i].status().message());
    REQUIRE(got[i].ok());
    ids.insert(got[i]->id);
    CHECK(ProjectOf(fs.dir + "/v" + std::to_string(i)) == got[i]->id);
  }
  CHECK(ids.size() == kN);

  // A volume whose files outlived it (here: its limits released, a file left): its ID is skipped.
  REQUIRE(Fill(fs.dir + "/v0/left", 256 * 1024).second == 0);
  REQUIRE(limits.Release(*got[0]).ok());
  Result<QuotaId> next = limits.Make(QuotaMethod::kProject, "w", 0755, -1, -1, kMiB, "same");
  REQUIRE(next.ok());
  CHECK(ids.count(next->id) == 0);
}

TEST_CASE("project IDs: a volume under a root in an administrator's project gets an ID and a limit of its own",
          "[quota][project]") {
  TestFs fs("ext4-ids", "ext4", kExt4Features, "prjquota");
  REQUIRE_MOUNTED(fs);
  // The administrator's project 42 on the root, with the inherit flag: what is made in the root
  // starts in project 42.
  REQUIRE(mkdir((fs.dir + "/admin").c_str(), 0755) == 0);
  Root root = OpenRoot(fs.dir + "/admin");
  REQUIRE(ProbeQuota(root).method == QuotaMethod::kProject);
  REQUIRE(quota_detail::SetProjectOf(root.fd(), 42) == 0);
  QuotaLimits limits(root);
  Result<QuotaId> made = limits.Make(QuotaMethod::kProject, "vol", 0777, 1000, 1000, 2 * kMiB, "admin-vol");
  INFO(made.status().message());
  REQUIRE(made.ok());
  CHECK(made->id != 42);
  CHECK(made->id >= static_cast<uint64_t>(quota_detail::kFirstProjectId));
  CHECK(ProjectOf(fs.dir + "/admin/vol") == made->id);
  CHECK(ProjectOf(fs.dir + "/admin") == 42);  // the administrator's, untouched
  StoppedAt(fs.dir + "/admin/vol/data", 2 * kMiB);
  if_dqblk admin {};
  REQUIRE(quota_detail::GetProject(root.fd(), 42, &admin) == 0);
  CHECK(admin.dqb_bhardlimit == 0);  // no limit of ours on the administrator's project
}

TEST_CASE("project quotas not mounted: the probe says which mount option is missing", "[quota][project]") {
  TestFs ext4("ext4-noprj", "ext4", kExt4Features, "");
  TestFs xfs("xfs-noprj", "xfs", "", "");
  REQUIRE_MOUNTED(ext4);
  REQUIRE_MOUNTED(xfs);
  Root e = OpenRoot(ext4.dir), x = OpenRoot(xfs.dir);
  QuotaSupport qe = ProbeQuota(e), qx = ProbeQuota(x);
  CHECK(qe.method == QuotaMethod::kNone);
  CHECK(qx.method == QuotaMethod::kNone);
  INFO(qe.why_not << "\n" << qx.why_not);
  CHECK(qe.why_not.find("ext4 at " + ext4.dir + " counts project quotas but does not enforce them: mount it with -o prjquota") !=
        std::string::npos);
  CHECK(qx.why_not.find("XFS at " + xfs.dir + " is not mounted with project quotas: add prjquota to its mount options") !=
        std::string::npos);
}
