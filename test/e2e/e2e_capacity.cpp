// Placement by free space (docs/nodes.md): node-aware instances publish their node's room for
// the DaemonSet's class as CSIStorageCapacity objects, and the scheduler (the fake's, which
// follows volumebinding/binder.go) places pods only where their claims fit. Each node's root
// is a tmpfs of a known size, so the figures are the disk's.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/support/capacity_bed.hpp"
#include "test/support/harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr uint64_t kMiB = kCapMiB;

void ClaimOf(Nodes& n, const std::string& name, const std::string& size) {
  n.api->CreateYaml(ClaimYaml("default", name, "hostpath", size));
}

}  // namespace

TEST_CASE("each node publishes its room; a pod goes only where its claim fits, and one that fits nowhere stays Pending",
          "[e2e][nodes][capacity]") {
  TwoDisks disks("16m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start({{"CAPACITY_INTERVAL", "1"}});
  auto objects = Objects(n);
  for (const auto& [node, mib] : std::map<std::string, uint64_t>{{"node-a", 16}, {"node-b", 64}}) {
    INFO(node);
    const picojson::value& o = objects[node];
    CHECK(o.get("metadata").get("labels").get("hostpath-provisioner.io/node").to_str() == node);
    // The tmpfs's free space, as statvfs gives it: all of it, less a page or two.
    const double bytes = std::stod(o.get("capacity").to_str());
    CHECK(bytes > (mib - 1) * kMiB);
    CHECK(bytes <= mib * kMiB);
    CHECK_FALSE(o.contains("maximumVolumeSize"));
    // Owned by its Node: removed with it.
    const picojson::value& owner = o.get("metadata").get("ownerReferences").get(0);
    CHECK(owner.get("kind").to_str() == "Node");
    CHECK(owner.get("name").to_str() == node);
    CHECK(owner.get("uid").to_str() == n.api->Get("/api/v1/nodes/" + node).json.get("metadata").get("uid").to_str());
  }
  CHECK_THAT(n.instances["node-a"]->Log(), !Catch::Contains("warn  storage capacity"));  // nothing to warn about

  // 32 MiB fits node-b only: the scheduler, which tries node-a first, never does.
  ClaimOf(n, "big", "32Mi");
  n.api->CreateYaml(PodYaml("p-big", "big"));
  REQUIRE(n.WaitBound("big"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("big"))) == "node-b");
  CHECK(Eventually([&] { return PodNode(*n.api, "p-big") == "node-b"; }));
  CHECK(n.Events("big", "ProvisioningFailed") == 0);
  // 4 MiB fits both: node-a, the first by name.
  ClaimOf(n, "small", "4Mi");
  n.api->CreateYaml(PodYaml("p-small", "small"));
  REQUIRE(n.WaitBound("small"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("small"))) == "node-a");

  // 1 GiB fits nowhere: Pending, with the scheduler's reason, and no volume.
  ClaimOf(n, "huge", "1Gi");
  n.api->CreateYaml(PodYaml("p-huge", "huge"));
  CHECK(Eventually([&] {
    return Unschedulable(n, "p-huge") == "0/2 nodes are available: 2 node(s) did not have enough free storage.";
  }));
  CHECK(n.ClaimJson("huge").serialize().find("selected-node") == std::string::npos);
  CHECK(Phase(n.ClaimJson("huge")) == "Pending");
  CHECK(n.Events("huge", "ProvisioningFailed") == 0);

  // At rest nothing is written: the objects stay as they are over several checks.
  auto rv = [&] {
    std::string out;
    for (const auto& [node, o] : Objects(n)) out += node + "=" + o.get("metadata").get("resourceVersion").to_str() + " ";
    return out;
  };
  const std::string before = rv();
  ::sleep(3);
  CHECK(rv() == before);
  CHECK(Metric(*n.instances["node-a"], "hostpath_provisioner_capacity_bytes", "storageclass=\"hostpath\"") > 15 * kMiB);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("filling or freeing a node's disk moves where the next pod goes", "[e2e][nodes][capacity]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start({{"CAPACITY_INTERVAL", "1"}});

  FillMiB(n.Root("node-a") + "/someone-elses-file", 48);  // not a volume: the disk fills all the same
  REQUIRE(Eventually([&] { return Capacity(n, "node-a") < 20 * kMiB; }));
  ClaimOf(n, "one", "32Mi");
  n.api->CreateYaml(PodYaml("p-one", "one"));
  REQUIRE(n.WaitBound("one"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("one"))) == "node-b");

  FillMiB(n.Root("node-b") + "/someone-elses-file", 48);
  REQUIRE(Eventually([&] { return Capacity(n, "node-b") < 20 * kMiB; }));
  ClaimOf(n, "two", "32Mi");
  n.api->CreateYaml(PodYaml("p-two", "two"));
  CHECK(Eventually([&] { return Unschedulable(n, "p-two").find("did not have enough free storage") != std::string::npos; }));

  // Freed on node-a: its figure rises, and the waiting pod goes there.
  REQUIRE(::unlink((n.Root("node-a") + "/someone-elses-file").c_str()) == 0);
  CHECK(Eventually([&] { return PodNode(*n.api, "p-two") == "node-a"; }));
  REQUIRE(n.WaitBound("two"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("two"))) == "node-a");
  CHECK(n.Events("two", "ProvisioningFailed") == 0);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a pod placed by a figure that is out of date: the claim is handed back and the figure corrected at once",
          "[e2e][nodes][capacity]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  // An hour between checks: only the failed provision can correct node-a's figure in time.
  disks.Start({{"CAPACITY_INTERVAL", "3600"}});
  FillMiB(n.Root("node-a") + "/someone-elses-file", 48);
  ClaimOf(n, "data", "32Mi");
  n.api->CreateYaml(PodYaml("app", "data"));  // node-a first: its figure still says 64 MiB
  REQUIRE(n.WaitBound("data"));
  CHECK(n.Events("data", "ProvisioningFailed", "not enough space") > 0);
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "node-b");
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-b"; }));
  CHECK(Eventually([&] { return Capacity(n, "node-a") < 20 * kMiB; }, std::chrono::seconds(10)));
}

TEST_CASE("objects follow the classes: none for Immediate or others' classes, 0 where a class cannot have volumes, "
          "gone with their class", "[e2e][nodes][capacity]") {
  Nodes n;
  InstallCapacityClass(n);
  n.api->CreateYaml(WffcClassYaml("theirs"));  // PROVISIONER_NAME's: no CSIDriver can name it
  n.api->CreateYaml(ClassYaml("now", "Delete", kCapacityProvisioner));  // Immediate
  std::string missing = ClassYaml("missing", "Delete", kCapacityProvisioner, "  pvDir: /nowhere\n");
  missing.replace(missing.find("Immediate"), 9, "WaitForFirstConsumer");
  n.api->CreateYaml(missing);
  for (const char* node : {"node-a", "node-b"}) n.Start(node, {{"CAPACITY_INTERVAL", "1"}});
  REQUIRE(Eventually([&] { return Objects(n, "hostpath").size() == 2 && Objects(n, "missing").size() == 2; }));
  CHECK(Capacity(n, "node-a", "missing") == 0);
  CHECK(Capacity(n, "node-a", "hostpath") > 0);
  CHECK(Objects(n, "theirs").empty());
  CHECK(Objects(n, "now").empty());
  CHECK_THAT(n.instances["node-a"]->Log(),
             Catch::Contains("storage capacity: class missing cannot have volumes on node node-a (parameter pvDir=") &&
                 Catch::Contains("capacity 0 published, so no pod needing one is placed here"));
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/missing").code == 200);
  CHECK(Eventually([&] { return Objects(n, "missing").empty(); }));
  CHECK(Objects(n, "hostpath").size() == 2);
  // A restart takes its node's objects over: no second object, nothing written when nothing moved.
  const std::string rv = Objects(n)["node-b"].get("metadata").get("resourceVersion").to_str();
  n.instances.erase("node-b");
  n.Start("node-b", {{"CAPACITY_INTERVAL", "1"}});
  ::sleep(3);
  CHECK(Objects(n).size() == 2);
  CHECK(Objects(n)["node-b"].get("metadata").get("resourceVersion").to_str() == rv);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("an object deleted or edited by hand is put right within a resync period", "[e2e][nodes][capacity]") {
  Nodes n;
  InstallCapacityClass(n);
  n.Start("node-a", {{"CAPACITY_INTERVAL", "3600"}, {"RESYNC_PERIOD", "2"}});
  REQUIRE(Eventually([&] { return Objects(n).size() == 1; }));
  const double figure = Capacity(n, "node-a");
  const std::string name = Objects(n)["node-a"].get("metadata").get("name").to_str();
  REQUIRE(n.api->Delete(kCapacityObjects + "/" + name).code == 200);
  CHECK(Eventually([&] { return Capacity(n, "node-a") > 0; }));
  // An admin's edit: the scheduler would send no pod here.
  Reply r = n.api->Call("PATCH", kCapacityObjects + "/" + name, R"({"capacity":"0"})", "application/merge-patch+json");
  REQUIRE(r.code == 200);
  CHECK(Eventually([&] { return Capacity(n, "node-a") > figure / 2; }));
  CHECK(Objects(n).size() == 1);
}

TEST_CASE("without the CSIDriver the log says that the scheduler ignores the figures", "[e2e][nodes][capacity]") {
  Nodes n;
  InstallCapacityClass(n, false);
  n.Start("node-a");
  CHECK(Eventually([&] {
    return n.instances["node-a"]->Log().find("the scheduler ignores the capacity published here unless a CSIDriver named "
                                             "hostpath.hostpath-provisioner.io has storageCapacity: true") != std::string::npos;
  }));
  CHECK_THAT(n.instances["node-a"]->Log(), Catch::Contains("kubectl create -f manifests/daemonset/csidriver.yaml"));
  // Claims are still made: the scheduler places them without figures.
  ClaimOf(n, "data", "1Mi");
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(n.WaitBound("data"));
}
