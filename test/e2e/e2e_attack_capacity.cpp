// Attacks on placement by free space (docs/nodes.md "Placement by free space"), by the actors of
// THREATS.md: a careless administrator who deletes or edits the CSIStorageCapacity objects by
// hand, runs two installs in one namespace, upgrades an install from before, or forgets the
// RBAC; a cluster whose Node object is deleted and registered again (the garbage collector
// removes the objects it owned), or that runs two instances on one node; a tenant making and
// deleting claims in a loop; space freed within the 1% margin; classes whose figure is not
// PV_DIR's free space (overcommit "false", a pvDir with requireMount). Each node's root is a
// tmpfs of a known size, so the figures are the disk's, and nothing on the disk moves but what
// the test does.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>

#include "test/support/capacity_bed.hpp"
#include "test/support/harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr uint64_t kMiB = kCapMiB;
// Long enough for a check or the periodic re-read of the objects (RESYNC_PERIOD 2, as Start sets).
constexpr auto kPutRight = std::chrono::seconds(60);
// A check a second, and the objects read again every 2 s.
const std::map<std::string, std::string> kQuick = {{"CAPACITY_INTERVAL", "1"}, {"RESYNC_PERIOD", "2"}};

std::string Field(Nodes& n, const std::string& node, const std::string& field, const std::string& cls = "hostpath") {
  auto all = Objects(n, cls);
  auto it = all.find(node);
  return it == all.end() ? "" : it->second.get("metadata").get(field).to_str();
}

}  // namespace

TEST_CASE("attack: an administrator deletes a node's capacity object; it comes back and the pod that fits only there "
          "is placed", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "16m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  const std::string name = Objects(n)["node-a"].get("metadata").get("name").to_str();
  // kubectl -n kube-system delete csistoragecapacities <name>: the scheduler now has no figure
  // for node-a, and places no pod of the class there.
  REQUIRE(n.api->Delete(kCapacityObjects + "/" + name).code == 200);
  n.api->CreateYaml(ClaimYaml("default", "data", "hostpath", "32Mi"));  // fits node-a only
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(Eventually([&] { return Capacity(n, "node-a") > 60 * kMiB; }, kPutRight));
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-a"; }, kPutRight));
  CHECK(n.WaitBound("data"));
}

TEST_CASE("attack: an administrator edits a node's figure to 0; it is put right", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "16m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  picojson::value o = Objects(n)["node-a"];
  o.get<picojson::object>()["capacity"] = picojson::value("0");
  REQUIRE(n.api->Call("PUT", kCapacityObjects + "/" + o.get("metadata").get("name").to_str(), o.serialize()).code == 200);
  REQUIRE(Capacity(n, "node-a") == 0);
  CHECK(Eventually([&] { return Capacity(n, "node-a") > 60 * kMiB; }, kPutRight));
}

TEST_CASE("attack: an administrator strips a node's object of its labels; it is found by its name, labelled again and "
          "kept current", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "16m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  // A CSI driver's object for node-a, in the same namespace, without our labels: not ours.
  REQUIRE(n.api->Call("POST", kCapacityObjects, R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity",
    "metadata":{"name":"csisc-x7k2p","namespace":"kube-system"},"storageClassName":"fast-csi",
    "nodeTopology":{"matchLabels":{"kubernetes.io/hostname":"node-a"}},"capacity":"1Gi"})").code == 201);
  picojson::value o = Objects(n)["node-a"];
  const std::string name = o.get("metadata").get("name").to_str();
  o.get("metadata").get<picojson::object>().erase("labels");
  REQUIRE(n.api->Call("PUT", kCapacityObjects + "/" + name, o.serialize()).code == 200);
  REQUIRE(Field(n, "node-a", "labels") == "null");
  // The disk fills: the figure, on the same object, follows (no second object, no loop of
  // refused creates).
  FillMiB(n.Root("node-a") + "/other-program.bin", 40);
  CHECK(Eventually([&] { return Capacity(n, "node-a") >= 0 && Capacity(n, "node-a") < 30 * kMiB; }, kPutRight));
  CHECK(Field(n, "node-a", "name") == name);
  CHECK(Eventually([&] { return Field(n, "node-a", "labels") != "null"; }, kPutRight));
  CHECK(n.api->Get(kCapacityObjects).json.get("items").get<picojson::array>().size() == 3);
  CHECK(n.api->Get(kCapacityObjects + "/csisc-x7k2p").code == 200);
}

TEST_CASE("attack: a node deleted and registered again; its objects are made again, owned by the new Node",
          "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "16m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  const std::string old_uid = n.api->Get("/api/v1/nodes/node-a").json.get("metadata").get("uid").to_str();
  REQUIRE(n.api->Delete("/api/v1/nodes/node-a").code == 200);
  // What the garbage collector does: the objects whose owner is gone go with it.
  for (const auto& [node, o] : Objects(n))
    if (node == "node-a") REQUIRE(n.api->Delete(kCapacityObjects + "/" + o.get("metadata").get("name").to_str()).code == 200);
  n.api->RegisterNode("node-a");  // the kubelet registers it again: a new uid
  const std::string new_uid = n.api->Get("/api/v1/nodes/node-a").json.get("metadata").get("uid").to_str();
  REQUIRE(new_uid != old_uid);
  auto owner = [&] {
    auto all = Objects(n);
    auto it = all.find("node-a");
    return it == all.end() ? std::string() : it->second.get("metadata").get("ownerReferences").get(0).get("uid").to_str();
  };
  // An owner reference to the old uid would have the garbage collector delete it again.
  CHECK(Eventually([&] { return owner() == new_uid; }, kPutRight));
}

TEST_CASE("attack: two installs in one namespace, each with its own class of storage capacity, leave each other's "
          "objects alone", "[e2e][nodes][capacity][attack]") {
  TempDir rbac_dir;
  // The second install's dispatch Lease allowed too, as its admin would have added it.
  std::string rbac = ReadFile("manifests/daemonset/rbac.yaml");
  const std::string lease = "resourceNames: [hostpath-provisioner.io-hostpath-dispatch";
  REQUIRE(rbac.find(lease) != std::string::npos);
  rbac.replace(rbac.find(lease), lease.size(), lease + ", other.example-hostpath-dispatch");
  WriteFile(rbac_dir.path() + "/rbac.yaml", rbac);
  TwoDisks disks("64m", "16m", rbac_dir.path() + "/rbac.yaml");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  std::string other = ClassYaml("other", "Delete", "other.example");
  other.replace(other.find("Immediate"), 9, "WaitForFirstConsumer");
  n.api->CreateYaml(other);
  const std::string uid = Field(n, "node-a", "uid");
  // The second install's instance on node-a: its own names, its own root.
  ::mkdir((n.tmp.path() + "/other-a").c_str(), 0755);
  auto second = [&] {
    return std::make_unique<Provisioner>(*n.api, n.tmp.path() + "/other-a",
                                         std::map<std::string, std::string>{
                                             {"NODE_NAME", "node-a"}, {"PROVISIONER_NAME", "other.example/hostpath"},
                                             {"CAPACITY_PROVISIONER_NAME", "other.example"}, {"CAPACITY_INTERVAL", "1"},
                                             {"RESYNC_PERIOD", "2"}});
  };
  auto instance = second();
  REQUIRE(Eventually([&] { return Capacity(n, "node-a", "other") > 0; }));
  // Several of its checks later, and after a restart (which reads the node's objects again),
  // the first install's object is still the one it made.
  ::sleep(3);
  CHECK(Field(n, "node-a", "uid") == uid);
  CHECK_THAT(instance->Log(), !Catch::Contains("class hostpath gone"));
  instance.reset();
  instance = second();
  ::sleep(3);
  CHECK(Field(n, "node-a", "uid") == uid);
  CHECK_THAT(instance->Log(), !Catch::Contains("class hostpath gone"));
  CHECK(Capacity(n, "node-a", "other") > 0);
}

TEST_CASE("attack: an install from before (class hostpath of hostpath-provisioner.io/hostpath) upgraded, its class made "
          "again under the new name: the old volume still expands, is cloned and is deleted", "[e2e][nodes][capacity][attack]") {
  Nodes n;
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/hostpath").code == 200);
  n.api->CreateYaml(WffcClassYaml("hostpath") + "allowVolumeExpansion: true\n");  // the older storageclass.yaml
  n.api->CreateYaml(ReadFile("manifests/daemonset/csidriver.yaml"));
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node, {{"CAPACITY_INTERVAL", "1"}});
  }
  n.api->CreateYaml(ClaimYaml("default", "old", "hostpath", "1Gi"));
  n.SelectNode("old", "node-a");
  REQUIRE(n.WaitBound("old"));
  const picojson::value pv = n.api->Volume(n.VolumeOf("old"));
  CHECK(Annotation(pv, "pv.kubernetes.io/provisioned-by") == "hostpath-provisioner.io/hostpath");
  const std::string dir = pv.get("spec").get("hostPath").get("path").to_str();
  WriteFile(dir + "/data", "kept");
  CHECK(Objects(n).empty());  // the old name has no CSIDriver: no figures

  // docs/nodes.md "Installs from before": the class made again under the new name.
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/hostpath").code == 200);
  n.api->CreateYaml(ReadFile("manifests/daemonset/storageclass.yaml"));
  REQUIRE(Eventually([&] { return Objects(n).size() == 2; }));

  REQUIRE(n.api->Call("PATCH", kClaims + std::string("old"), R"({"spec":{"resources":{"requests":{"storage":"2Gi"}}}})",
                      "application/merge-patch+json")
              .code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("old").get("status").get("capacity").get("storage").to_str() == "2Gi"; }));

  n.api->CreateYaml(ClaimYaml("default", "copy", "hostpath", "2Gi", "old"));
  n.api->CreateYaml(PodYaml("app", "copy", "node-a"));
  REQUIRE(n.WaitBound("copy"));
  const picojson::value copy = n.api->Volume(n.VolumeOf("copy"));
  CHECK(Annotation(copy, "pv.kubernetes.io/provisioned-by") == kCapacityProvisioner);
  CHECK(ReadFile(copy.get("spec").get("hostPath").get("path").to_str() + "/data") == "kept");

  REQUIRE(n.api->Delete(kClaims + std::string("old")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(pv.get("metadata").get("name").to_str()).is<picojson::object>(); }));
  struct stat st;
  CHECK(::lstat(dir.c_str(), &st) != 0);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("attack: overcommit \"false\": a volume promised but not written counts, so the next pod goes where the "
          "promise leaves room", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  std::string strict = ClassYaml("strict", "Delete", kCapacityProvisioner, "  overcommit: \"false\"\n");
  strict.replace(strict.find("Immediate"), 9, "WaitForFirstConsumer");
  n.api->CreateYaml(strict);
  disks.Start(kQuick);
  REQUIRE(Eventually([&] { return Objects(n, "strict").size() == 2; }));
  n.api->CreateYaml(ClaimYaml("default", "first", "strict", "40Mi"));
  n.api->CreateYaml(PodYaml("p-first", "first", "node-a"));
  REQUIRE(n.WaitBound("first"));
  // Nothing written in it: the disk is as free as before, but 40 MiB are promised.
  CHECK(Eventually([&] { return Capacity(n, "node-a", "strict") < 25 * kMiB; }));
  CHECK(Capacity(n, "node-a") > 60 * kMiB);  // the class that overcommits: the disk's free space
  n.api->CreateYaml(ClaimYaml("default", "second", "strict", "40Mi"));
  n.api->CreateYaml(PodYaml("p-second", "second"));  // node-a first by name, were its figure the disk's
  REQUIRE(n.WaitBound("second"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("second"))) == "node-b");
  CHECK(n.Events("second", "ProvisioningFailed") == 0);
}

TEST_CASE("attack: space freed by less than 1%: a claim that fits only in what was freed is placed all the same",
          "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "16m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  WriteFile(n.Root("node-a") + "/someone-elses-file", std::string(512 * 1024, 'x'));
  disks.Start(kQuick);
  const double published = Capacity(n, "node-a");
  // 256 KiB more than node-a's figure: it fits once the file goes, and fits no other node.
  const std::string size = std::to_string(static_cast<uint64_t>(published) + 256 * 1024);
  REQUIRE(::unlink((n.Root("node-a") + "/someone-elses-file").c_str()) == 0);
  n.api->CreateYaml(ClaimYaml("default", "data", "hostpath", size));
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-a"; }, kPutRight));
  CHECK(n.WaitBound("data"));
}

TEST_CASE("attack: a tenant makes and deletes claims in a loop; the writes stay a few per claim, and the figure ends "
          "as the disk is", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  const double before = Metric(*n.instances["node-a"], "hostpath_provisioner_capacity_writes_total");
  constexpr int kRounds = 8;
  for (int i = 0; i < kRounds; ++i) {
    const std::string name = "churn-" + std::to_string(i);
    n.api->CreateYaml(ClaimYaml("default", name, "hostpath", "8Mi"));
    n.api->CreateYaml(PodYaml("p-" + name, name, "node-a"));
    REQUIRE(n.WaitBound(name));
    WriteFile(n.api->Volume(n.VolumeOf(name)).get("spec").get("hostPath").get("path").to_str() + "/data",
              std::string(4 * kMiB, 'x'));
    REQUIRE(Eventually([&] { return Capacity(n, "node-a") < 61 * kMiB; }));  // each round moves the figure
    const std::string pv = n.VolumeOf(name);
    REQUIRE(n.api->Delete("/api/v1/namespaces/default/pods/p-" + name).code == 200);
    REQUIRE(n.api->Delete(kClaims + name).code == 200);
    REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
    // Back to the empty disk's figure (a removal is written, however small the move).
    REQUIRE(Eventually([&] { return Capacity(n, "node-a") > 63 * kMiB; }));
  }
  REQUIRE(before >= 0);
  const double writes = Metric(*n.instances["node-a"], "hostpath_provisioner_capacity_writes_total") - before;
  INFO("writes: " << writes);
  CHECK(writes >= 2 * kRounds);  // down and up again, each round
  CHECK(writes <= 2 * kRounds + 2);
}

TEST_CASE("attack: two instances of one install on one node (a DaemonSet rolling update with surge) converge on one "
          "object, and rest", "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  disks.Start(kQuick);
  Provisioner surge(*n.api, n.Root("node-a"),
                    {{"NODE_NAME", "node-a"}, {"CAPACITY_PROVISIONER_NAME", kCapacityProvisioner}, {"CAPACITY_INTERVAL", "1"}});
  std::string filler = n.Root("node-a") + "/someone-elses-file";
  WriteFile(filler, std::string(32 * kMiB, 'x'));
  REQUIRE(Eventually([&] { return Capacity(n, "node-a") < 33 * kMiB; }));
  ::unlink(filler.c_str());
  REQUIRE(Eventually([&] { return Capacity(n, "node-a") > 63 * kMiB; }));
  ::sleep(2);
  const std::string rv = Field(n, "node-a", "resourceVersion");
  ::sleep(3);
  CHECK(Field(n, "node-a", "resourceVersion") == rv);
  Reply all = n.api->Get(kCapacityObjects);
  CHECK(all.json.get("items").get<picojson::array>().size() == 2);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("attack: the new DaemonSet and class applied with the RBAC of before: loud in the log and on the pod",
          "[e2e][nodes][capacity][attack]") {
  TempDir rbac;
  TwoDisks disks("64m", "64m", RbacWithout(rbac.path(), "role"));
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  n.Start("node-a", {{"CAPACITY_INTERVAL", "1"}});
  CHECK(Eventually([&] {
    return n.instances["node-a"]->Log().find("the provisioner's Role must allow list, create, update and delete of "
                                             "csistoragecapacities in namespace kube-system: kubectl apply -f "
                                             "manifests/daemonset/rbac.yaml") != std::string::npos;
  }));
  n.api->CreateYaml(ClaimYaml("default", "data", "hostpath", "1Mi"));
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(Eventually([&] {
    Reply r = n.api->Get("/api/v1/namespaces/default/pods/app");
    return r.json.serialize().find("did not have enough free storage") != std::string::npos;
  }));
  CHECK(Phase(n.ClaimJson("data")) == "Pending");
}

TEST_CASE("attack: a pvDir class with requireMount: 0 until its disk is mounted, then that disk's room, not PV_DIR's",
          "[e2e][nodes][capacity][attack]") {
  TwoDisks disks("64m", "64m");
  if (!disks.mounted) return;
  Nodes& n = disks.n;
  const std::string fast = n.tmp.path() + "/fast";  // node-a's second disk; node-b has none
  ::mkdir(fast.c_str(), 0755);
  std::string cls = ClassYaml("fast", "Delete", kCapacityProvisioner, "  pvDir: " + fast + "\n  requireMount: \"true\"\n");
  cls.replace(cls.find("Immediate"), 9, "WaitForFirstConsumer");
  n.api->CreateYaml(cls);
  n.Start("node-a", {{"CAPACITY_INTERVAL", "1"}, {"ALLOWED_PV_DIRS", fast}});
  n.Start("node-b", {{"CAPACITY_INTERVAL", "1"}});
  REQUIRE(Eventually([&] { return Objects(n, "fast").size() == 2; }));
  CHECK(Capacity(n, "node-a", "fast") == 0);  // not mounted: its claims would fail here
  CHECK(Capacity(n, "node-b", "fast") == 0);
  n.api->CreateYaml(ClaimYaml("default", "data", "fast", "8Mi"));
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(Eventually([&] { return Unschedulable(n, "app").find("did not have enough free storage") != std::string::npos; }));
  {
    Tmpfs disk(fast, "16m");
    if (!disk.mounted) return;
    CHECK(Eventually([&] { return Capacity(n, "node-a", "fast") > 15 * kMiB; }));
    CHECK(Capacity(n, "node-a", "fast") <= 16 * kMiB);
    CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-a"; }));
    REQUIRE(n.WaitBound("data"));
    CHECK(n.api->Volume(n.VolumeOf("data")).get("spec").get("hostPath").get("path").to_str().rfind(fast + "/", 0) == 0);
    REQUIRE(n.api->Delete("/api/v1/namespaces/default/pods/app").code == 200);
    REQUIRE(n.api->Delete(kClaims + std::string("data")).code == 200);
    REQUIRE(Eventually([&] { return n.api->Get("/api/v1/persistentvolumes").json.get("items").get<picojson::array>().empty(); }));
  }
  CHECK(Eventually([&] { return Capacity(n, "node-a", "fast") == 0; }));  // unmounted again
}
