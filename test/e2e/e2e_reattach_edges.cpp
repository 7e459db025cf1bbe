// End to end, a class's pathPattern where volumes are more than a directory: a limit that a
// reattached directory keeps (btrfs qgroups in a loop device), a directory on every node, a
// network share, and a clone. The real binary against the fake API server.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>

#include "base/objects.hpp"
#include "test/support/btrfs_quota_bed.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr const char* kPattern = "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n";

bool HasEvent(FakeApi& api, const std::string& claim, const std::string& reason, const std::string& part) {
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

std::string VolumeOf(FakeApi& api, const std::string& claim) {
  const picojson::value c = api.Claim("default", claim);
  return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>() ? c.get("spec").get("volumeName").to_str() : "";
}

bool WaitBound(FakeApi& api, const std::string& claim) {
  return Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; });
}

}  // namespace

TEST_CASE("pathPattern, btrfs limits: a reattached subvolume keeps its limit, never set below what it holds", "[e2e][pattern][quota]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("kept", "Retain", "hostpath-provisioner.io/hostpath",
                           std::string(kPattern) + "  quota: \"true\"\n  uid: \"1000\"\n") +
                 "allowVolumeExpansion: true\n");
  api.CreateYaml(ClassYaml("auto", "Delete", "hostpath-provisioner.io/hostpath", std::string(kPattern) + "  quota: \"auto\"\n"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "kept", "16Mi"));
  REQUIRE(WaitBound(api, "db"));
  const std::string dir = fs.dir + "/default/db";
  const std::string old_pv = VolumeOf(api, "db");
  const std::string quota = Annotation(api.Volume(old_pv), ann::kQuota);
  REQUIRE(quota.rfind("btrfs subvolume ", 0) == 0);
  auto [written, err] = Fill(dir + "/data", 12 * kMiB);
  REQUIRE(err == 0);
  REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);

  // Deleted by accident (Retain), the PV removed by hand, the claim made again asking for less.
  REQUIRE(api.Delete(kClaims + std::string("db")).code == 200);
  REQUIRE(Eventually([&] { return Phase(api.Volume(old_pv)) == "Released"; }));
  REQUIRE(api.Delete("/api/v1/persistentvolumes/" + old_pv).code == 200);
  REQUIRE(Eventually([&] { return !api.Volume(old_pv).is<picojson::object>(); }));
  api.CreateYaml(ClaimYaml("default", "db", "kept", "4Mi"));
  REQUIRE(WaitBound(api, "db"));
  INFO("log:\n" << p.Log());
  CHECK(Annotation(api.Volume(VolumeOf(api, "db")), ann::kQuota) == quota);  // the same subvolume, its limit kept
  CHECK(HasEvent(api, "db", "Reattached", "its limit set to what it holds"));
  struct stat st {};
  REQUIRE(stat((dir + "/data").c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == written);
  // Full at what it holds: a little more fits at most, never the 4Mi asked on top.
  auto [more, err2] = Fill(dir + "/more", 8 * kMiB);
  CHECK(err2 == EDQUOT);
  CHECK(more < 4 * kMiB);
  // Its usage is measured, and it grows, at its ns/name path.
  const std::string labels = "namespace=\"default\",persistentvolumeclaim=\"db\",persistentvolume=\"" + VolumeOf(api, "db") + "\"";
  const double held = static_cast<double>(written);
  CHECK(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) >= held; }));
  REQUIRE(api.Call("PATCH", kClaims + std::string("db"), R"({"spec":{"resources":{"requests":{"storage":"32Mi"}}}})",
                   "application/merge-patch+json").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(api, "db", "VolumeResizeSuccessful", ""); }));
  auto [grown, err3] = Fill(dir + "/grown", 8 * kMiB);
  CHECK(err3 == 0);
  CHECK(grown == 8 * kMiB);

  // A plain directory copied in first cannot become a subvolume: refused under quota "true" ...
  ::mkdir((fs.dir + "/default/plain").c_str(), 0755);
  WriteFile(fs.dir + "/default/plain/file", "x\n");
  api.CreateYaml(ClaimYaml("default", "plain", "kept", "4Mi"));
  CHECK(Eventually([&] { return HasEvent(api, "plain", "ProvisioningFailed", "existed as a plain directory"); }));
  CHECK(Phase(api.Claim("default", "plain")) == "Pending");
  // ... and taken, its size not enforced, under "auto".
  ::mkdir((fs.dir + "/default/loose").c_str(), 0755);
  WriteFile(fs.dir + "/default/loose/file", "x\n");
  api.CreateYaml(ClaimYaml("default", "loose", "auto", "4Mi"));
  REQUIRE(WaitBound(api, "loose"));
  CHECK(HasEvent(api, "loose", "SizeNotEnforced", "existed as a plain directory"));
  CHECK(ReadFile(fs.dir + "/default/loose/file") == "x\n");
  CHECK(api.Denials().empty());
}

TEST_CASE("pathPattern, nodes: all: each node's directory is ns/name, one filled before is kept", "[e2e][pattern][every]") {
  if (!Nodes::CanShare()) {
    WARN("SKIPPED: needs root, to give each instance the same PV_DIR in a mount namespace of its own");
    return;
  }
  Nodes n;
  n.api->CreateYaml(ClassYaml("everywhere", "Delete", "hostpath-provisioner.io/hostpath", std::string(kPattern) + "  nodes: all\n"));
  ::mkdir(n.Root("n2").c_str(), 0755);
  ::mkdir((n.Root("n2") + "/default").c_str(), 0755);
  ::mkdir((n.Root("n2") + "/default/conf").c_str(), 0755);
  WriteFile(n.Root("n2") + "/default/conf/settings", "from before\n");
  for (const char* node : {"n1", "n2"}) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  n.Claim("conf", "everywhere");
  REQUIRE(n.WaitBound("conf"));
  const std::string pv = n.VolumeOf("conf");
  // Each node holds it once its directory there is made (or found): its finalizer says so.
  auto held_by = [&](const std::string& node) {
    const picojson::value f = n.api->Volume(pv).get("metadata").get("finalizers");
    if (!f.is<picojson::array>()) return false;
    for (const auto& x : f.get<picojson::array>())
      if (x.to_str() == node + "/hostpath-provisioner.io") return true;
    return false;
  };
  REQUIRE(Eventually([&] { return held_by("n1") && held_by("n2"); }));
  CHECK(Exists(n.Root("n1") + "/default/conf"));
  CHECK(n.api->Volume(pv).get("spec").get("hostPath").get("path").to_str() == n.SharedRoot() + "/default/conf");
  CHECK(ReadFile(n.Root("n2") + "/default/conf/settings") == "from before\n");

  REQUIRE(n.api->Delete(kClaims + std::string("conf")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
  CHECK(Eventually([&] { return ListDir(n.Root("n1")).empty() && ListDir(n.Root("n2")).empty(); }));
}

TEST_CASE("pathPattern, network share: any instance reattaches the one directory", "[e2e][pattern][shared]") {
  Nodes n;
  Tmpfs share(n.tmp.path() + "/share", "4m");
  if (!share.mounted) return;
  std::string cls = ReadFile("manifests/classes/network-share.yaml");
  cls.replace(cls.find("/mnt/share", cls.find("parameters:")), 10, share.dir);
  n.api->CreateYaml(cls + kPattern);
  ::mkdir((share.dir + "/default").c_str(), 0755);
  ::mkdir((share.dir + "/default/files").c_str(), 0755);
  WriteFile(share.dir + "/default/files/report", "shared\n");
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node, {{"ALLOWED_PV_DIRS", share.dir}});
  }
  n.api->CreateYaml(ClaimYaml("default", "files", "hostpath-share", "1Mi"));
  REQUIRE(n.WaitBound("files"));
  const picojson::value pv = n.api->Volume(n.VolumeOf("files"));
  CHECK(pv.get("spec").get("hostPath").get("path").to_str() == share.dir + "/default/files");
  CHECK_FALSE(pv.get("spec").get("nodeAffinity").is<picojson::object>());
  CHECK(ReadFile(share.dir + "/default/files/report") == "shared\n");
  CHECK(n.Events("files", "Reattached") == 1);
  CHECK(ListDir(share.dir) == std::vector<std::string>{"default"});
}

TEST_CASE("pathPattern: a clone is copied into its own ns/name, never into a directory that exists", "[e2e][pattern][clone]") {
  TempDir tmp;
  const std::string pv_dir = tmp.path() + "/pv";
  ::mkdir(pv_dir.c_str(), 0755);
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", kPattern));
  Provisioner p(api, pv_dir);
  api.CreateYaml(ClaimYaml("default", "src", "keep", "64Mi"));
  REQUIRE(WaitBound(api, "src"));
  WriteFile(pv_dir + "/default/src/hello.txt", "hello\n");
  api.CreateYaml(ClaimYaml("default", "copy", "keep", "64Mi", "src"));
  REQUIRE(WaitBound(api, "copy"));
  CHECK(api.Volume(VolumeOf(api, "copy")).get("spec").get("hostPath").get("path").to_str() == pv_dir + "/default/copy");
  CHECK(ReadFile(pv_dir + "/default/copy/hello.txt") == "hello\n");

  // A directory already where the clone would go: its data is not mixed with a copy.
  ::mkdir((pv_dir + "/default/taken").c_str(), 0755);
  WriteFile(pv_dir + "/default/taken/mine", "mine\n");
  api.CreateYaml(ClaimYaml("default", "taken", "keep", "64Mi", "src"));
  CHECK(Eventually([&] { return HasEvent(api, "taken", "ProvisioningFailed", pv_dir + "/default/taken"); }));
  CHECK(Phase(api.Claim("default", "taken")) == "Pending");
  CHECK(ListDir(pv_dir + "/default/taken") == std::vector<std::string>{"mine"});
}
