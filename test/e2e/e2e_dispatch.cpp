// Node-aware mode at scale (decide/node_labels.hpp): each instance watches only its own node's
// claims and PVs; one instance, elected with a Lease, labels the claims with their nodes; PVs
// made before the label get it from their node's instance at start.
#include <signal.h>

#include <catch2/catch.hpp>

#include "test/support/nodes_harness.hpp"

using namespace harness;

namespace {

std::string Label(const picojson::value& obj) {
  const picojson::value& labels = obj.get("metadata").get("labels");
  if (!labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node")) return "";
  return labels.get("hostpath-provisioner.io/node").to_str();
}

// A PV as a version before the node label made it on `node` (Retain: nothing here deletes it).
std::string OldVolumeYaml(const std::string& name, const std::string& node, const std::string& path,
                          const std::string& provisioner = "hostpath-provisioner.io/hostpath") {
  return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
         "\n  annotations:\n    pv.kubernetes.io/provisioned-by: " + provisioner +
         "\n    hostpath-provisioner.io/node: " + node +
         "\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n"
         "  persistentVolumeReclaimPolicy: Retain\n  storageClassName: hostpath\n  hostPath:\n    path: " + path + "\n";
}

// The instance that holds the dispatch Lease ("" when none does).
std::string Dispatcher(Nodes& n) {
  for (auto& [node, p] : n.instances)
    if (p && Metric(*p, "hostpath_provisioner_dispatcher") == 1) return node;
  return "";
}

}  // namespace

TEST_CASE("node-aware: claims and PVs carry their node's label; each instance caches only its own node's", "[e2e][nodes][dispatch]") {
  Nodes n;
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-c"};
  for (const std::string& node : nodes) n.Start(node);
  for (const std::string& node : nodes)
    for (const char* i : {"1", "2"}) n.Claim(node + "-" + i, "hostpath", "hostpath-provisioner.io/node", node);
  for (const std::string& node : nodes)
    for (const char* i : {"1", "2"}) {
      const std::string claim = node + "-" + i;
      INFO(claim);
      REQUIRE(n.WaitBound(claim));
      CHECK(Label(n.ClaimJson(claim)) == node);
      picojson::value pv = n.api->Volume(n.VolumeOf(claim));
      CHECK(Label(pv) == node);
      CHECK(AffinityNode(pv) == node);
    }
  // Each cache: its two claims and two PVs, none of the other nodes'.
  for (const std::string& node : nodes) {
    INFO(node);
    Provisioner& p = *n.instances[node];
    CHECK(Eventually([&] {
      return Metric(p, "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") == 2 &&
             Metric(p, "hostpath_provisioner_cached_objects", "kind=\"PersistentVolume\"") == 2;
    }));
  }
  // One dispatcher labelled all six.
  const std::string dispatcher = Dispatcher(n);
  REQUIRE_FALSE(dispatcher.empty());
  CHECK(Metric(*n.instances[dispatcher], "hostpath_provisioner_claims_dispatched_total") == 6);
  int leading = 0;
  for (const std::string& node : nodes) leading += Metric(*n.instances[node], "hostpath_provisioner_dispatcher") == 1;
  CHECK(leading == 1);
  // Deleting still works: node-b's instance removes its volume.
  const std::string pv = n.VolumeOf("node-b-1");
  const std::string dir = n.Root("node-b") + "/default-node-b-1-" + pv;
  REQUIRE(Exists(dir));
  n.api->Delete(std::string(kClaims) + "node-b-1");
  CHECK(Eventually([&] { return !Exists(dir) && !n.api->Volume(pv).is<picojson::object>(); }));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("PVs made before the node label get it from their own node's instance at start; no other PV is touched", "[e2e][nodes][dispatch]") {
  Nodes n;
  ::mkdir(n.Root("node-a").c_str(), 0755);
  n.api->CreateYaml(OldVolumeYaml("pvc-old-a", "node-a", n.Root("node-a") + "/old-a"));
  n.api->CreateYaml(OldVolumeYaml("pvc-old-b", "node-b", n.Root("node-b") + "/old-b"));
  n.api->CreateYaml(OldVolumeYaml("pvc-theirs", "node-a", n.Root("node-a") + "/theirs", "example.com/other"));
  n.Start("node-a");
  REQUIRE(Eventually([&] { return Label(n.api->Volume("pvc-old-a")) == "node-a"; }));
  CHECK(Label(n.api->Volume("pvc-old-b")).empty());   // another node's: its own instance labels it
  CHECK(Label(n.api->Volume("pvc-theirs")).empty());  // not ours
  // node-a still sees every PV that could name a directory on it: its own, and the unlabelled.
  CHECK(Eventually([&] {
    return Metric(*n.instances["node-a"], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolume\"") == 3;
  }));
  n.Start("node-b");
  REQUIRE(Eventually([&] { return Label(n.api->Volume("pvc-old-b")) == "node-b"; }));
  CHECK(Eventually([&] {
    return Metric(*n.instances["node-a"], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolume\"") == 2;
  }));
  CHECK(Label(n.api->Volume("pvc-theirs")).empty());
  CHECK_THAT(n.instances["node-a"]->Log(), Catch::Contains("labelled 1 PVs made before the node label"));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("the dispatcher killed: another instance takes its Lease and claims keep binding", "[e2e][nodes][dispatch]") {
  Nodes n;
  const std::map<std::string, std::string> env = {{"LEADER_ELECT_LEASE_DURATION", "3"}};
  n.Start("node-a", env);
  n.Start("node-b", env);
  n.Claim("first", "hostpath", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(n.WaitBound("first"));
  std::string dispatcher;
  REQUIRE(Eventually([&] { return !(dispatcher = Dispatcher(n)).empty(); }));
  const std::string other = dispatcher == "node-a" ? "node-b" : "node-a";
  n.instances[dispatcher]->process().Signal(SIGKILL);  // a crash: the Lease is not released
  n.instances[dispatcher]->process().Wait();
  n.Claim("second", "hostpath", "hostpath-provisioner.io/node", other);
  REQUIRE(n.WaitBound("second"));  // once the Lease's duration has passed
  CHECK(Label(n.ClaimJson("second")) == other);
  CHECK(Metric(*n.instances[other], "hostpath_provisioner_dispatcher") == 1);
  CHECK_THAT(n.instances[other]->Log(), Catch::Contains("dispatching claims to nodes: this instance holds the Lease"));
}

TEST_CASE("a claim labelled for the wrong node is labelled again for its own, and made there", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.Start("node-a");
  n.Start("node-b");
  std::string yaml = ClaimYaml("default", "moved", "hostpath");
  yaml.replace(yaml.find("\n  namespace:"), 0,
               "\n  labels:\n    hostpath-provisioner.io/node: node-b\n  annotations:\n    hostpath-provisioner.io/node: node-a");
  n.api->CreateYaml(yaml);
  REQUIRE(n.WaitBound("moved"));
  CHECK(Label(n.ClaimJson("moved")) == "node-a");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("moved"))) == "node-a");
}
