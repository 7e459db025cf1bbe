// End to end: several node-aware instances (the DaemonSet) on one root that every host sees,
// as a network share is: the shipped network-share class makes one volume without node
// affinity, made and removed by one instance, also when the one that made it is gone; and the
// orphan scan of one never removes a directory another just made.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include "test/support/fault_harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

bool Ready(Provisioner& p) {
  return Eventually([&] { return p.Http("/readyz").code == 200; });
}

// Watches of `resource` the provisioner opened after the request log was reset.
size_t WatchesOf(FakeApi& api, const std::string& resource) {
  return faults::Filter(faults::Requests(api), faults::kProvisionerUser, "watch", resource).size();
}

// The instances' logs that contain `text`.
int LogsWith(Nodes& n, const std::string& text) {
  int count = 0;
  for (auto& [node, p] : n.instances) count += p->Log().find(text) != std::string::npos;
  return count;
}

}  // namespace

TEST_CASE("network share under the DaemonSet: one volume, no node affinity, made once, removed once after its maker left",
          "[e2e][shared]") {
  Nodes n;
  Tmpfs share(n.tmp.path() + "/share", "4m");  // mounted on every "host": they share a mount namespace
  if (!share.mounted) return;
  std::string cls = ReadFile("manifests/classes/network-share.yaml");
  REQUIRE(cls.find("/mnt/share") != std::string::npos);
  cls.replace(cls.find("/mnt/share", cls.find("parameters:")), 10, share.dir);
  n.api->CreateYaml(cls);
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    n.api->RegisterNode(node);
    n.Start(node, {{"ALLOWED_PV_DIRS", share.dir}});
  }
  for (auto& [node, p] : n.instances) REQUIRE(Ready(*p));
  n.api->CreateYaml(ClaimYaml("default", "files", "hostpath-share", "1Mi"));
  if (!n.WaitBound("files")) {
    for (auto& [node, p] : n.instances) WARN(node << ":\n" << p->Log());
    FAIL("not bound");
  }
  const std::string pv = n.VolumeOf("files"), dir = share.dir + "/default-files-" + pv;
  picojson::value volume = n.api->Volume(pv);
  CHECK_FALSE(volume.get("spec").get("nodeAffinity").is<picojson::object>());
  CHECK(Annotation(volume, "hostpath-provisioner.io/nodes") == "shared");
  CHECK(Exists(dir));
  CHECK(n.api->Get("/api/v1/persistentvolumes").json.get("items").get<picojson::array>().size() == 1);
  CHECK(n.Events("files", "ProvisioningSucceeded") == 1);
  CHECK(n.Events("files", "ProvisioningFailed") == 0);
  CHECK(LogsWith(n, "provisioned default/files") == 1);

  // The instance that made it goes, and its node is deleted; then the claim.
  const std::string maker = Annotation(volume, "hostpath-provisioner.io/node");
  REQUIRE(n.instances.count(maker) == 1);
  n.instances[maker]->process().Signal(SIGTERM);
  n.instances[maker]->process().Wait();
  REQUIRE(n.api->Delete("/api/v1/nodes/" + maker).code == 200);
  // Another node's instance takes it over: it grows the claim, then removes the volume.
  REQUIRE(n.api->Call("PATCH", kClaims + std::string("files"), R"({"spec":{"resources":{"requests":{"storage":"2Mi"}}}})",
                      "application/merge-patch+json").code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("files").get("status").get("capacity").get("storage").to_str() == "2Mi"; }));
  CHECK(n.Events("files", "VolumeResizeSuccessful") == 1);
  WriteFile(dir + "/data.txt", "written by a pod\n");
  REQUIRE(n.api->Delete(kClaims + std::string("files")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }, std::chrono::seconds(60)));
  CHECK_FALSE(Exists(dir));
  CHECK(Exists(share.dir));
  CHECK(LogsWith(n, "deleted volume " + pv) == 1);
  CHECK(n.api->Denials().empty());
}

// The instance named on a shared volume is down (its node rebooting), its Node still there:
// the others leave the volume to it, then take it over once the Node is deleted.
TEST_CASE("network share: no instance takes a volume over while the node named on it exists; one does once it is gone",
          "[e2e][shared]") {
  Nodes n;
  Tmpfs share(n.tmp.path() + "/share", "4m");
  if (!share.mounted) return;
  std::string cls = ReadFile("manifests/classes/network-share.yaml");
  cls.replace(cls.find("/mnt/share", cls.find("parameters:")), 10, share.dir);
  n.api->CreateYaml(cls);
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    n.api->RegisterNode(node);
    n.Start(node, {{"ALLOWED_PV_DIRS", share.dir}});
  }
  for (auto& [node, p] : n.instances) REQUIRE(Ready(*p));
  n.api->CreateYaml(ClaimYaml("default", "files", "hostpath-share", "1Mi"));
  REQUIRE(n.WaitBound("files"));
  const std::string pv = n.VolumeOf("files"), dir = share.dir + "/default-files-" + pv;
  const std::string maker = Annotation(n.api->Volume(pv), "hostpath-provisioner.io/node");
  REQUIRE(n.instances.count(maker) == 1);
  n.instances[maker]->process().Signal(SIGTERM);
  n.instances[maker]->process().Wait();
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));
  REQUIRE(n.api->Delete(kClaims + std::string("files")).code == 200);
  // The two others ask whether the maker's Node exists, each again after a backoff: by the
  // fourth question, each has finished at least one look (or one took the volume over).
  auto asked = [&] {
    int count = 0;
    for (const auto& q : faults::Filter(faults::Requests(*n.api), faults::kProvisionerUser, "get", "nodes"))
      count += q.name == maker;
    return count;
  };
  auto named = [&] {
    picojson::value v = n.api->Volume(pv);
    return v.is<picojson::object>() ? Annotation(v, "hostpath-provisioner.io/node") : "(no volume)";
  };
  REQUIRE(Eventually([&] { return asked() >= 4 || named() != maker; }, std::chrono::seconds(60)));
  CHECK(named() == maker);
  CHECK(Phase(n.api->Volume(pv)) == "Released");
  CHECK(Exists(dir));
  CHECK(n.Events(pv, "NodeDeleted") == 0);

  REQUIRE(n.api->Delete("/api/v1/nodes/" + maker).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }, std::chrono::seconds(60)));
  CHECK_FALSE(Exists(dir));
  CHECK(n.Events(pv, "NodeDeleted", "node " + maker + " no longer exists") == 1);
  CHECK(n.api->Denials().empty());
}

// Issue 41: `overcommit: "false"` on a share several instances serve. Each instance counts
// the volumes the others made (from the PVs every instance sees), so a claim that does not fit
// beside them is refused by all; what two instances provision at the same moment is not
// counted against each other, and the success event says so.
TEST_CASE("network share with overcommit \"false\": every instance counts the volumes the others made", "[e2e][shared]") {
  Nodes n;
  Tmpfs share(n.tmp.path() + "/share", "10m");
  if (!share.mounted) return;
  std::string cls = ReadFile("manifests/classes/network-share.yaml");
  cls.replace(cls.find("/mnt/share", cls.find("parameters:")), 10, share.dir);
  n.api->CreateYaml(cls + "  overcommit: \"false\"\n");
  n.api->RegisterNode("node-a");
  n.api->RegisterNode("node-b");
  n.Start("node-a", {{"ALLOWED_PV_DIRS", share.dir}});
  REQUIRE(Ready(*n.instances["node-a"]));
  n.api->CreateYaml(ClaimYaml("default", "first", "hostpath-share", "6Mi"));
  REQUIRE(n.WaitBound("first"));
  // (the event is sent beside the binding: waited for)
  CHECK(Eventually([&] {
    return n.Events("first", "ProvisioningSucceeded", "; overcommit \"false\" on a shared root: claims that other instances "
                    "provision at the same moment are not counted against this one") == 1;
  }));
  // node-b's instance starts: it knows first from its PV only.
  n.Start("node-b", {{"ALLOWED_PV_DIRS", share.dir}});
  REQUIRE(Ready(*n.instances["node-b"]));
  // Both refuse the next: 6 MiB of the 10 are promised to first.
  n.api->CreateYaml(ClaimYaml("default", "second", "hostpath-share", "6Mi"));
  const bool both = Eventually([&] {
    return LogsWith(n, "claim default/second: cannot provision 6Mi under " + share.dir + ": not enough space: 6.0 MiB "
                       "requested, 4.0 MiB available (10.0 MiB free on the filesystem, less 6.0 MiB promised to 1 other volume)") == 2;
  });
  std::string logs;
  for (auto& [node, p] : n.instances) logs += node + ":\n" + p->Log();
  INFO(logs);
  CHECK(both);
  CHECK(Phase(n.ClaimJson("second")) == "Pending");
  // first goes: second binds.
  REQUIRE(n.api->Delete(kClaims + std::string("first")).code == 200);
  CHECK(n.WaitBound("second"));
}

TEST_CASE("orphan scan: a directory another instance made, its PV create held back, is kept", "[e2e][shared]") {
  Nodes n;
  const std::string root = n.tmp.path() + "/share";
  ::mkdir(root.c_str(), 0755);
  // node-b's instance scans for orphans every second, with a claim cache that misses the
  // claim: its claims watch, dropped, is held back for a while on its way back.
  Provisioner b(*n.api, root, {{"NODE_NAME", "node-b"}, {"RESYNC_PERIOD", "1"}});
  REQUIRE(Ready(b));
  // (alone, the cluster is small: once it watches every claim, it switches its watch no more)
  REQUIRE(Eventually([&] { return b.Log().find("this instance now watches every claim") != std::string::npos; }));
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));
  REQUIRE(faults::Inject(*n.api, {"watch", "persistentvolumeclaims", 500, 1, 0, 20000}));
  REQUIRE(faults::Control(*n.api, "/fake/drop-watches"));
  // Its other watches are back, and its claims one is held (the fault is taken: by it, the only
  // instance so far, and not by node-a's, which must see the claim).
  REQUIRE(Eventually([&] { return WatchesOf(*n.api, "persistentvolumes") > 0 && WatchesOf(*n.api, "storageclasses") > 0; }));
  REQUIRE(Eventually([&] { return faults::ArmedFaults(*n.api) == 0; }));

  Provisioner a(*n.api, root, {{"NODE_NAME", "node-a"}});
  REQUIRE(Ready(a));
  // node-a's instance makes the directory, then its PV create is held back 4 s.
  REQUIRE(faults::Inject(*n.api, {"create", "persistentvolumes", 0, 1, 0, 4000}));
  n.Claim("fresh", "hostpath", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("fresh"));
  const std::string pv = n.VolumeOf("fresh"), dir = root + "/default-fresh-" + pv;
  CHECK(Exists(dir));
  CHECK_THAT(b.Log(), !Catch::Contains("removed orphaned directory " + dir));
}
