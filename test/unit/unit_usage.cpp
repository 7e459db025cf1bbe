// The usage walk (usage_walk.hpp) against the real filesystem, checked against du, and the
// scanner's pure parts and bookkeeping (usage.hpp). Each test works in its own mkdtemp folder:
// <tmp>/root is the Root, <tmp>/outside what a symlink points at. The mount test needs root:
// it WARNs and skips when the sandbox refuses a mount.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "control/usage.hpp"
#include "decide/reconcile.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

void Write(const std::string& path, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::string block(bytes, 'x');
  std::fwrite(block.data(), 1, block.size(), f);
  std::fclose(f);
}

void MkDir(const std::string& path) { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }

// du's figures for a directory: allocated bytes and inodes, on its filesystem only.
uint64_t Du(const std::string& path, const char* what) {
  std::string cmd = "du -sx " + std::string(what) + " '" + path + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  unsigned long long n = 0;
  REQUIRE(std::fscanf(p, "%llu", &n) == 1);
  ::pclose(p);
  return n;
}
uint64_t DuBytes(const std::string& path) { return Du(path, "-B1"); }
uint64_t DuInodes(const std::string& path) { return Du(path, "--inodes"); }

long OpenFds() {
  long n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// A folder for one test: root/ (the Root) and outside/; removed at the end, deep trees too.
class Box {
 public:
  Box() {
    char tmpl[] = "/tmp/hp-usage-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    MkDir(dir_ + "/root");
    MkDir(dir_ + "/outside");
    MkDir(dir_ + "/root/v");
    Result<Root> r = Root::Open(dir_ + "/root");
    REQUIRE(r.ok());
    root_ = std::move(*r);
  }
  ~Box() {
    for (const std::string& m : mounts_) ::umount2(m.c_str(), MNT_DETACH);
    (void)root_.RemoveTree("v");
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }
  const Root& root() const { return root_; }
  std::string vol(const std::string& rel = "") const { return dir_ + "/root/v" + (rel.empty() ? "" : "/" + rel); }
  std::string outside(const std::string& rel = "") const { return dir_ + "/outside" + (rel.empty() ? "" : "/" + rel); }
  // Mounts a small tmpfs at `path`; false (with a WARN) where the sandbox refuses.
  bool MountTmpfs(const std::string& path) {
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=4m") != 0) {
      WARN("SKIPPED: cannot mount a tmpfs (needs root): " << std::strerror(errno));
      return false;
    }
    mounts_.push_back(path);
    return true;
  }

 private:
  std::string dir_;
  Root root_;
  std::vector<std::string> mounts_;
};

// Walks root/v to its end, `batch` entries a step.
UsageCount WalkAll(const Root& root, size_t batch = 1000, int* steps = nullptr) {
  Result<UsageWalk> w = UsageWalk::Begin(root, "v");
  REQUIRE(w.ok());
  int n = 0;
  while (!w->Step(batch)) ++n;
  if (steps) *steps = n + 1;
  return w->count();
}

// A bound volume of ours, as the cache holds it.
Volume BoundVolume() {
  Volume v;
  v.meta.name = "pvc-1b2c3d4e-0000-4000-8000-000000000001";
  v.meta.annotations[ann::kProvisionedBy] = kDefaultProvisionerName;
  v.meta.annotations[ann::kPvDir] = "/var/kubernetes";
  v.has_claim_ref = true;
  v.claim_ref = {"default", "data", "1b2c3d4e-0000-4000-8000-000000000001"};
  v.host_path = "/var/kubernetes/default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001";
  v.capacity = "1Gi";
  v.reclaim_policy = "Delete";
  v.phase = "Bound";
  return v;
}

}  // namespace

TEST_CASE("a walk counts bytes and inodes as du -sx does: symlinks as themselves, hard links once", "[usage]") {
  Box box;
  Write(box.vol("small"), 10);
  Write(box.vol("big"), 200 * 1024);
  MkDir(box.vol("d"));
  MkDir(box.vol("d/e"));
  Write(box.vol("d/e/f"), 5000);
  REQUIRE(::link(box.vol("big").c_str(), box.vol("d/big-again").c_str()) == 0);
  REQUIRE(::link(box.vol("big").c_str(), box.vol("d/e/big-third").c_str()) == 0);
  // Symlinks to much outside the volume: counted as links, never followed.
  for (int i = 0; i < 50; ++i) Write(box.outside("o" + std::to_string(i)), 4096);
  REQUIRE(::symlink(box.outside().c_str(), box.vol("to-outside").c_str()) == 0);
  REQUIRE(::symlink("/", box.vol("d/to-root").c_str()) == 0);
  REQUIRE(::symlink("dangling", box.vol("dangling").c_str()) == 0);
  UsageCount c = WalkAll(box.root());
  CHECK(c.bytes == DuBytes(box.vol()));
  CHECK(c.inodes == DuInodes(box.vol()));
  CHECK(c.inodes == 9);  // v, small, big (one inode, three names), d, d/e, d/e/f, three symlinks
  CHECK(c.skipped == 0);
}

TEST_CASE("a walk never crosses into another mount, and a volume that is a mount point is not walked", "[usage][mount]") {
  Box box;
  Write(box.vol("file"), 3000);
  MkDir(box.vol("mnt"));
  if (!box.MountTmpfs(box.vol("mnt"))) return;
  for (int i = 0; i < 20; ++i) Write(box.vol("mnt/m" + std::to_string(i)), 8192);
  UsageCount c = WalkAll(box.root());
  CHECK(c.bytes == DuBytes(box.vol()));
  CHECK(c.inodes == DuInodes(box.vol()));
  CHECK(c.inodes == 2);  // v and file: the mount point is skipped as du -x skips it
  CHECK(c.skipped == 1);

  MkDir(box.vol("../w"));
  if (!box.MountTmpfs(box.vol("../w"))) return;
  Result<UsageWalk> w = UsageWalk::Begin(box.root(), "w");
  REQUIRE_FALSE(w.ok());
  CHECK_THAT(w.status().message(), Catch::Contains("is a mount point"));
}

TEST_CASE("a volume directory that is missing, a file or a symlink is not walked", "[usage]") {
  Box box;
  CHECK(UsageWalk::Begin(box.root(), "missing").status().code() == Status::kNotFound);
  REQUIRE(::symlink(box.outside().c_str(), (box.vol() + "/../link").c_str()) == 0);
  Result<UsageWalk> link = UsageWalk::Begin(box.root(), "link");
  REQUIRE_FALSE(link.ok());
  CHECK_THAT(link.status().message(), Catch::Contains("not a directory"));
  Write(box.vol("../file"), 1);
  CHECK_FALSE(UsageWalk::Begin(box.root(), "file").ok());
  CHECK(UsageWalk::Begin(box.root(), "../outside").status().code() == Status::kInvalid);
}

TEST_CASE("a deep tree is walked with a bounded number of descriptors, and counted as du does", "[usage]") {
  Box box;
  std::string path = box.vol();
  for (int i = 0; i < 120; ++i) {  // 120 levels, a file and a sibling directory at each
    Write(path + "/f", 100);
    MkDir(path + "/sib");
    Write(path + "/sib/g", 100);
    path += "/d" + std::to_string(i % 10);
    MkDir(path);
  }
  const long before = OpenFds();
  long most = 0;
  Result<UsageWalk> w = UsageWalk::Begin(box.root(), "v");
  REQUIRE(w.ok());
  while (!w->Step(3)) most = std::max(most, OpenFds() - before);
  CHECK(most <= static_cast<long>(kUsageOpenDirs));
  CHECK(w->count().inodes == DuInodes(box.vol()));
  CHECK(w->count().bytes == DuBytes(box.vol()));
  CHECK(w->count().skipped == 0);
}

TEST_CASE("directories deeper than kUsageMaxDepth are counted but not entered", "[usage]") {
  Box box;
  // Made with mkdirat from a descriptor per level: the path is far longer than PATH_MAX.
  int fd = ::open(box.vol().c_str(), O_RDONLY | O_DIRECTORY);
  const size_t levels = kUsageMaxDepth + 10;
  for (size_t i = 0; i < levels; ++i) {
    REQUIRE(::mkdirat(fd, "d", 0755) == 0);
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    fd = next;
  }
  ::close(fd);
  UsageCount c = WalkAll(box.root(), 100);
  CHECK(c.inodes == 1 + kUsageMaxDepth + 1);  // v, the levels entered, and the first one not entered
  CHECK(c.skipped == 1);
}

TEST_CASE("a walk in small steps resumes where it stopped and counts the same", "[usage]") {
  Box box;
  for (int d = 0; d < 5; ++d) {
    MkDir(box.vol("d" + std::to_string(d)));
    for (int f = 0; f < 40; ++f) Write(box.vol("d" + std::to_string(d) + "/f" + std::to_string(f)), 1 + f * 100);
  }
  int steps = 0;
  UsageCount whole = WalkAll(box.root(), 1000000, &steps);
  CHECK(steps == 1);
  for (size_t batch : {1, 7, 64}) {
    UsageCount c = WalkAll(box.root(), batch, &steps);
    INFO(batch);
    CHECK(c.bytes == whole.bytes);
    CHECK(c.inodes == whole.inodes);
    CHECK(steps >= static_cast<int>((whole.inodes - 1) / batch));
  }
  CHECK(whole.inodes == 1 + 5 + 200);
  CHECK(whole.bytes == DuBytes(box.vol()));
}

TEST_CASE("entries removed, renamed or swapped for symlinks during a walk are neither errors nor followed", "[usage]") {
  Box box;
  MkDir(box.vol("d"));
  for (int f = 0; f < 2000; ++f) Write(box.vol("d/f" + std::to_string(f)), 10);
  MkDir(box.vol("d/e"));
  for (int f = 0; f < 50; ++f) Write(box.vol("d/e/g" + std::to_string(f)), 10);
  for (int f = 0; f < 1000; ++f) Write(box.outside("o" + std::to_string(f)), 10);
  Result<UsageWalk> w = UsageWalk::Begin(box.root(), "v");
  REQUIRE(w.ok());
  REQUIRE_FALSE(w->Step(1));  // "d", the only entry: entered
  // Half of d's files and all of d/e go; d is renamed and a symlink to outside takes its place.
  for (int f = 0; f < 2000; f += 2) ::unlink(box.vol("d/f" + std::to_string(f)).c_str());
  REQUIRE(std::system(("rm -rf '" + box.vol("d/e") + "'").c_str()) == 0);
  REQUIRE(::rename(box.vol("d").c_str(), box.vol("d2").c_str()) == 0);
  REQUIRE(::symlink(box.outside().c_str(), box.vol("d").c_str()) == 0);
  while (!w->Step(100)) {
  }
  // At most: v, d2 (twice if listed again after the rename), d2's remaining files (twice), the
  // symlink. Following it would add a thousand.
  CHECK(w->count().inodes >= 2);
  CHECK(w->count().inodes <= 1 + 2 + 2 * 1000 + 1);
  CHECK(w->count().skipped == 0);
}

TEST_CASE("the directory to scan is the recomputed one of a bound volume of ours made here", "[usage]") {
  const Config cfg = TestConfig();
  std::optional<UsageTarget> t = UsageTargetFor(cfg, BoundVolume(), true);
  REQUIRE(t);
  CHECK(t->root == "/var/kubernetes");
  CHECK(t->dir_name == "default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(t->namespace_ == "default");
  CHECK(t->claim == "data");
  CHECK(t->claim_uid == "1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(t->capacity_bytes == -1);  // the cache's capacity_bytes, set by SlimForCache
  // The cache keeps what the scan needs of a bound volume.
  Volume slim = BoundVolume();
  SlimForCache(&slim);
  std::optional<UsageTarget> from_cache = UsageTargetFor(cfg, slim, true);
  REQUIRE(from_cache);
  CHECK(from_cache->dir_name == t->dir_name);
  CHECK(from_cache->claim == "data");
  CHECK(from_cache->capacity_bytes == int64_t{1} << 30);
  struct Row {
    const char* name;
    void (*change)(Volume&);
  } none[] = {
      {"released", [](Volume& v) { v.phase = "Released"; }},
      {"being deleted", [](Volume& v) { v.meta.deleting = true; }},
      {"no claimRef", [](Volume& v) { v.has_claim_ref = false; }},
      {"a path elsewhere", [](Volume& v) { v.host_path = "/etc"; }},
      {"a root no longer configured", [](Volume& v) { v.meta.annotations[ann::kPvDir] = "/srv/old"; }},
      {"a name not of its claim", [](Volume& v) { v.meta.name = "pvc-other"; }},
  };
  for (const Row& r : none) {
    Volume v = BoundVolume();
    r.change(v);
    INFO(r.name);
    CHECK_FALSE(UsageTargetFor(cfg, v, true));
  }
  CHECK_FALSE(UsageTargetFor(cfg, BoundVolume(), false));  // another instance's, or not ours
}

TEST_CASE("available bytes, over capacity, and the event's message", "[usage]") {
  const uint64_t mib = 1 << 20;
  struct Row {
    const char* name;
    int64_t capacity;
    uint64_t used, fs_free, available;
    bool over;
  } rows[] = {
      {"room in both", 10 * mib, 4 * mib, 100 * mib, 6 * mib, false},
      {"the filesystem is the limit", 10 * mib, 4 * mib, 1 * mib, 1 * mib, false},
      {"exactly full", 10 * mib, 10 * mib, 100 * mib, 0, false},
      {"over capacity", 10 * mib, 12 * mib, 100 * mib, 0, true},
      {"capacity unknown", -1, 12 * mib, 100 * mib, 100 * mib, false},
  };
  for (const Row& r : rows) {
    VolumeUsage u;
    u.capacity_bytes = r.capacity;
    u.used_bytes = r.used;
    u.fs.free_bytes = r.fs_free;
    INFO(r.name);
    CHECK(AvailableBytes(u) == r.available);
    CHECK(OverCapacity(u) == r.over);
  }
  VolumeUsage u;
  u.volume = "pvc-1";
  u.capacity_bytes = 10 * mib;
  u.used_bytes = 12 * mib + mib / 2;
  CHECK(OverCapacityMessage(u, "") ==
        "volume pvc-1 uses 12.5 MiB, more than its capacity of 10.0 MiB (hostPath volumes are not held to their size): "
        "free some space in it, or move its data to a larger volume");
  CHECK_THAT(OverCapacityMessage(u, "node-a"), Catch::StartsWith("volume pvc-1 on node node-a uses 12.5 MiB"));
}

TEST_CASE("the scanner measures tracked volumes (not without their required mount), forgets untracked ones, and with interval 0 does nothing", "[usage]") {
  Box box;
  Write(box.vol("f"), 50000);
  Result<Root> opened = Root::Open(box.vol().substr(0, box.vol().size() - 2));
  REQUIRE(opened.ok());
  Roots roots(std::move(*opened), {});
  EventRecorder recorder(std::make_shared<ApiEndpoint>(), "test");  // not started: events only queue
  std::atomic<uint64_t> told{0};
  auto lookup = [&](const std::string& volume) -> std::optional<UsageTarget> {
    // pv-m's class requires a filesystem mounted at the root, which is a plain directory.
    if (volume != "pv-a" && volume != "pv-m") return std::nullopt;
    return UsageTarget{roots.primary().path(), "v", volume == "pv-m", "ns", "claim-a", "uid-a", 1 << 30, ""};
  };
  {
    UsageScanner off(0, &roots, &recorder, lookup, nullptr);
    off.Track("pv-a", true);
    off.Start();
    CHECK_FALSE(off.enabled());
    CHECK(off.Snapshot().empty());
  }
  UsageScanner scanner(1, &roots, &recorder, lookup, [&](const std::string&, uint64_t used) { told = used; });
  scanner.Track("pv-a", true);
  scanner.Track("pv-gone", true);  // the lookup no longer knows it: not measured
  scanner.Track("pv-m", true);     // nothing mounted at its root: not measured
  scanner.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (scanner.passes() < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(scanner.passes() >= 1);
  std::vector<VolumeUsage> got = scanner.Snapshot();
  REQUIRE(got.size() == 1);
  CHECK(got[0].volume == "pv-a");
  CHECK(got[0].namespace_ == "ns");
  CHECK(got[0].claim == "claim-a");
  CHECK(got[0].used_bytes == DuBytes(box.vol()));
  CHECK(got[0].inodes_used == 2);
  CHECK(got[0].fs.inodes > 0);
  CHECK(told == got[0].used_bytes);
  CHECK(scanner.entries() >= 2);
  scanner.Track("pv-a", false);
  CHECK(scanner.Snapshot().empty());
  scanner.Stop();
}
