// End to end: enforced sizes (class parameter quota) with the real binary, on a btrfs
// filesystem in a loop device (qgroups), and on roots that cannot enforce a size. Needs root;
// ext4 and XFS project quotas are checked at the filesystem layer in unit_quota (in a virtual
// machine where this kernel lacks them).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "test/support/harness.hpp"
#include "test/support/loopfs.hpp"
#include "decide/reconcile.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

std::string QuotaClass(const std::string& name, const std::string& quota) {
  return ClassYaml(name, "Delete", "hostpath-provisioner.io/hostpath", "  quota: \"" + quota + "\"\n") +
         "allowVolumeExpansion: true\n";
}

bool HasEvent(FakeApi& api, const std::string& claim, const std::string& reason, const std::string& part) {
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}
int CountReason(FakeApi& api, const std::string& claim, const std::string& reason) {
  int n = 0;
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason) n += static_cast<int>(e.get("count").is<double>() ? e.get("count").get<double>() : 1);
  return n;
}

// The claim's volume directory, from its PV.
std::string VolumeDir(FakeApi& api, const std::string& claim) {
  const picojson::value pv = api.Volume(api.Claim("default", claim).get("spec").get("volumeName").to_str());
  return pv.get("spec").get("hostPath").get("path").to_str();
}
std::string QuotaOf(FakeApi& api, const std::string& claim) {
  const picojson::value pv = api.Volume(api.Claim("default", claim).get("spec").get("volumeName").to_str());
  const picojson::value& q = pv.get("metadata").get("annotations").get(ann::kQuota);
  return q.is<std::string>() ? q.get<std::string>() : "";
}

Reply AskFor(FakeApi& api, const std::string& claim, const std::string& size) {
  return api.Call("PATCH", kClaims + claim, R"({"spec":{"resources":{"requests":{"storage":")" + size + R"("}}}})",
                  "application/merge-patch+json");
}

#define REQUIRE_MOUNTED(fs)        \
  if (!(fs).mounted) {             \
    WARN("SKIPPED: " << (fs).why); \
    return;                        \
  }

// A btrfs root in a loop device, with qgroups on if asked, and a fake API server with the
// class "limited" (quota "true").
struct Btrfs {
  TempDir tmp;
  LoopFs fs;
  std::unique_ptr<FakeApi> api;
  explicit Btrfs(bool qgroups) : fs((chmod(tmp.path().c_str(), 0755), tmp.path() + "/pv"), "btrfs", "300M") {
    // (the chmod: Fill writes as user 1000)
    if (!fs.mounted) return;
    if (qgroups) REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
    api = std::make_unique<FakeApi>(tmp.path() + "/api");
    api->CreateYaml(QuotaClass("limited", "true"));
  }
};

}  // namespace

TEST_CASE("quota true on btrfs with qgroups: the claim's size is a hard limit that grows with the claim and goes with it",
          "[e2e][quota]") {
  Btrfs b(true);
  REQUIRE_MOUNTED(b.fs);
  FakeApi& api = *b.api;
  const LoopFs& fs = b.fs;
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "limited", "4Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string dir = VolumeDir(api, "db");
  struct stat st {};
  REQUIRE(stat(dir.c_str(), &st) == 0);
  CHECK(st.st_ino == 256);  // a subvolume
  CHECK(QuotaOf(api, "db").rfind("btrfs subvolume ", 0) == 0);
  CHECK(HasEvent(api, "db", "ProvisioningSucceeded", "size enforced (btrfs subvolume "));

  auto [written, err] = Fill(dir + "/data", 16 * kMiB);
  INFO("wrote " << written << " bytes; log:\n" << p.Log());
  CHECK(err == EDQUOT);
  CHECK(written <= 4 * kMiB);

  // Its usage comes from the qgroup, with no walk of the directory (the walk counts entries).
  REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  const std::string labels = "namespace=\"default\",persistentvolumeclaim=\"db\",persistentvolume=\"" + pv + "\"";
  const double data = static_cast<double>(written);  // (a structured binding cannot be captured in C++17)
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) >= data; }));
  CHECK(Metric(p, "kubelet_volume_stats_used_bytes", labels) <= 5.0 * kMiB);
  CHECK(Metric(p, "kubelet_volume_stats_capacity_bytes", labels) == 4.0 * kMiB);
  CHECK(Metric(p, "kubelet_volume_stats_inodes_used", labels) < 0);  // a qgroup counts no inodes
  CHECK(Metric(p, "hostpath_provisioner_usage_scan_entries_total") == 0);

  REQUIRE(AskFor(api, "db", "12Mi").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(api, "db", "VolumeResizeSuccessful", ""); }));
  auto [more, err2] = Fill(dir + "/more", 4 * kMiB);
  CHECK(err2 == 0);
  CHECK(more == 4 * kMiB);

  REQUIRE(api.Delete(kClaims + std::string("db")).code == 200);
  REQUIRE(Eventually([&] { return !Exists(dir); }));
  CHECK(ListDir(fs.dir).empty());
  CHECK(api.Denials().empty());
}

TEST_CASE("quota true where the root cannot enforce it: ProvisioningFailed says what to do, and nothing is made",
          "[e2e][quota]") {
  TempDir tmp;
  chmod(tmp.path().c_str(), 0755);  // Fill writes as user 1000
  LoopFs fs(tmp.path() + "/pv", "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(QuotaClass("limited", "true"));
  Provisioner p(api, fs.dir);
  api.CreateYaml(ClaimYaml("default", "db", "limited", "4Mi"));
  REQUIRE(Eventually([&] {
    return HasEvent(api, "db", "ProvisioningFailed",
                    "the size cannot be enforced (class parameter quota: \"true\"): btrfs quotas (qgroups) are off on " +
                        fs.dir + ": an administrator turns them on with btrfs quota enable " + fs.dir);
  }));
  CHECK(Phase(api.Claim("default", "db")) == "Pending");
  CHECK(ListDir(fs.dir).empty());
  // Still off: the provisioner never turns them on.
  CHECK(LoopFs::Sh("btrfs qgroup show " + fs.dir + " >/dev/null 2>&1") != 0);
  // Once the administrator does, the claim binds (retried with backoff).
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }, std::chrono::seconds(60)));
  CHECK(QuotaOf(api, "db").rfind("btrfs subvolume ", 0) == 0);
}

TEST_CASE("quota auto where the root cannot enforce it: bound as before, with one Normal event saying why", "[e2e][quota]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "16m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(QuotaClass("maybe", "auto"));
  api.CreateYaml(QuotaClass("never", "false"));
  Provisioner p(api, fs.dir);
  api.CreateYaml(ClaimYaml("default", "a", "maybe", "1Mi"));
  api.CreateYaml(ClaimYaml("default", "b", "never", "1Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "a")) == "Bound" && Phase(api.Claim("default", "b")) == "Bound"; }));
  REQUIRE(Eventually([&] { return CountReason(api, "a", "SizeNotEnforced") == 1; }));
  CHECK(HasEvent(api, "a", "SizeNotEnforced",
                 "the size 1Mi is not enforced (class parameter quota: \"auto\"): " + fs.dir +
                     " is on tmpfs, which cannot enforce a volume's size"));
  CHECK(CountReason(api, "b", "SizeNotEnforced") == 0);
  CHECK(QuotaOf(api, "a").empty());
}

TEST_CASE("a volume whose recorded limit was changed on its PV touches no other volume's limit", "[e2e][quota]") {
  Btrfs b(true);
  REQUIRE_MOUNTED(b.fs);
  FakeApi& api = *b.api;
  const LoopFs& fs = b.fs;
  Provisioner p(api, fs.dir);
  api.CreateYaml(ClaimYaml("default", "mine", "limited", "4Mi"));
  api.CreateYaml(ClaimYaml("default", "theirs", "limited", "2Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "mine")) == "Bound" && Phase(api.Claim("default", "theirs")) == "Bound"; }));
  const std::string theirs = VolumeDir(api, "theirs");
  // Someone allowed to edit PVs points mine's record at theirs, then grows and deletes mine.
  const std::string pv = api.Claim("default", "mine").get("spec").get("volumeName").to_str();
  REQUIRE(api.Call("PATCH", "/api/v1/persistentvolumes/" + pv,
                   R"({"metadata":{"annotations":{")" + std::string(ann::kQuota) + R"(":")" + QuotaOf(api, "theirs") + R"("}}})",
                   "application/merge-patch+json")
              .code == 200);
  REQUIRE(AskFor(api, "mine", "64Mi").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(api, "mine", "VolumeResizeFailed", "but its PersistentVolume says btrfs subvolume"); }));
  REQUIRE(api.Delete(kClaims + std::string("mine")).code == 200);
  REQUIRE(Eventually([&] { return ListDir(fs.dir).size() == 1; }));
  // Theirs keeps its 2 MiB limit.
  auto [written, err] = Fill(theirs + "/data", 16 * kMiB);
  CHECK(err == EDQUOT);
  CHECK(written <= 2 * kMiB);
}

TEST_CASE("quota true without the SYS_ADMIN capability: the event says which install adds it", "[e2e][quota]") {
  if (LoopFs::Sh("test -x /usr/bin/setpriv") != 0) {
    WARN("SKIPPED: setpriv (util-linux) is not installed");
    return;
  }
  Btrfs b(true);
  REQUIRE_MOUNTED(b.fs);
  FakeApi& api = *b.api;
  const LoopFs& fs = b.fs;
  // As in the shipped install, whose capabilities leave SYS_ADMIN out.
  Provisioner p(api, fs.dir, {}, {}, {"/usr/bin/setpriv", "--bounding-set", "-sys_admin"});
  api.CreateYaml(ClaimYaml("default", "db", "limited", "4Mi"));
  INFO(p.Log());
  REQUIRE(Eventually([&] {
    return HasEvent(api, "db", "ProvisioningFailed", "lacks: install it with kubectl apply -k manifests/overlays/quota");
  }));
  CHECK(ListDir(fs.dir).empty());
  CHECK(Phase(api.Claim("default", "db")) == "Pending");
}

namespace {

// The subvolume ID of the directory at `path` ("" when it is none).
std::string SubvolumeId(const std::string& path) {
  std::string out;
  if (FILE* f = ::popen(("btrfs inspect-internal rootid '" + path + "' 2>/dev/null").c_str(), "r")) {
    char buf[64];
    while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
    ::pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// Is the qgroup `id` ("0/257") on the filesystem at `dir`?
bool HasQgroup(const std::string& dir, const std::string& id) {
  return LoopFs::Sh("btrfs qgroup show " + dir + " 2>/dev/null | grep -q '^" + id + " '") == 0;
}

}  // namespace

TEST_CASE("btrfs: a subvolume a tenant makes in its volume comes under the volume's limit, counted, named in a Warning",
          "[e2e][quota][nested]") {
  Btrfs b(true);
  REQUIRE_MOUNTED(b.fs);
  FakeApi& api = *b.api;
  Provisioner p(api, b.fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "limited", "8Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string dir = VolumeDir(api, "db");
  // As the pod's user: no privilege needed. Until the provisioner notices, writes in it are
  // not held to the volume's limit.
  REQUIRE(MakeSubvolumeAsUser(dir, "mine") == 0);
  REQUIRE(MakeSubvolumeAsUser(dir + "/mine", "deeper") == 0);
  auto [early, err1] = Fill(dir + "/mine/early", 4 * kMiB);
  REQUIRE(err1 == 0);
  INFO(p.Log());
  REQUIRE(Eventually([&] { return HasEvent(api, "db", "NestedSubvolume", "mine/deeper"); }, std::chrono::seconds(60)));
  CHECK(HasEvent(api, "db", "NestedSubvolume", "mine ("));
  // Now the volume's 8 MiB hold the volume and both subvolumes together.
  auto [more, err2] = Fill(dir + "/mine/deeper/more", 64 * kMiB);
  INFO("wrote " << early << " + " << more << " bytes");
  CHECK(err2 == EDQUOT);
  CHECK(early + more <= 8 * kMiB);
  auto [top, err3] = Fill(dir + "/top", 64 * kMiB);
  CHECK(err3 == EDQUOT);
  CHECK(early + more + top <= 8 * kMiB);
  // The usage counts what is in the subvolumes.
  REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  const std::string labels = "namespace=\"default\",persistentvolumeclaim=\"db\",persistentvolume=\"" + pv + "\"";
  const double inside = static_cast<double>(early + more);
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) >= inside; }));
  // Growing the claim raises the limit of all three.
  REQUIRE(AskFor(api, "db", "32Mi").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(api, "db", "VolumeResizeSuccessful", ""); }));
  auto [grown, err4] = Fill(dir + "/mine/grown", 8 * kMiB);
  CHECK(err4 == 0);
  CHECK(grown == 8 * kMiB);
}

TEST_CASE("btrfs: deleting a volume removes the subvolumes a tenant made in it, and their qgroups; a mount is never entered",
          "[e2e][quota][nested]") {
  Btrfs b(true);
  REQUIRE_MOUNTED(b.fs);
  FakeApi& api = *b.api;
  const std::string root = b.fs.dir;
  Provisioner p(api, root);  // the usage scan (60 s) has not seen the subvolumes: the removal finds them
  api.CreateYaml(ClaimYaml("default", "db", "limited", "8Mi"));
  api.CreateYaml(ClaimYaml("default", "other", "limited", "8Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound" && Phase(api.Claim("default", "other")) == "Bound"; }));
  const std::string dir = VolumeDir(api, "db"), other = VolumeDir(api, "other");
  const std::string other_pv = api.Claim("default", "other").get("spec").get("volumeName").to_str();
  REQUIRE(MakeSubvolumeAsUser(dir, "mine") == 0);
  REQUIRE(MakeSubvolumeAsUser(dir + "/mine", "deeper") == 0);
  REQUIRE(Fill(dir + "/mine/a", kMiB).second == 0);
  REQUIRE(Fill(dir + "/mine/deeper/b", kMiB).second == 0);
  const std::string mine = SubvolumeId(dir + "/mine"), deeper = SubvolumeId(dir + "/mine/deeper");
  REQUIRE(!mine.empty());
  REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);
  REQUIRE(HasQgroup(root, "0/" + mine));
  // A real mount inside the other volume (the same filesystem, bound there): never entered.
  REQUIRE(LoopFs::Sh("mkdir -p " + root + "/elsewhere " + other + "/mnt && echo keep > " + root + "/elsewhere/keep && mount --bind " +
                     root + "/elsewhere " + other + "/mnt") == 0);

  REQUIRE(api.Delete(kClaims + std::string("db")).code == 200);
  REQUIRE(api.Delete(kClaims + std::string("other")).code == 200);
  INFO(p.Log());
  REQUIRE(Eventually([&] { return !Exists(dir); }, std::chrono::seconds(60)));
  // btrfs drops a removed subvolume's qgroup once its cleaner has freed the data.
  CHECK(Eventually([&] { return !HasQgroup(root, "0/" + mine) && !HasQgroup(root, "0/" + deeper); }, std::chrono::seconds(60)));
  REQUIRE(Eventually([&] { return HasEvent(api, other_pv, "VolumeFailedDelete", "mnt (mount point, left alone)"); }));
  CHECK(Exists(root + "/elsewhere/keep"));
  CHECK(Exists(other + "/mnt/keep"));
  LoopFs::Sh("umount " + other + "/mnt");
  REQUIRE(Eventually([&] { return !Exists(other); }, std::chrono::seconds(60)));
}
