// Attacks on "small clusters skip the dispatch hop" (issue 54), second round, by a reviewer:
// the node count without remainingItemCount, bursts of nodes at the threshold, a claim sent
// back to the scheduler while the instances switch, the classes any node may act on across a
// switch, an instance that may not read the Lease, and a dispatcher that stops cleanly in the
// middle of a switch with a successor of another SMALL_CLUSTER_NODES. Whatever happens, each
// claim gets one PV and one directory, made by the instance of its node.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test/support/fault_harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/small_cluster.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

// How many times `text` is in `log`.
size_t Occurrences(const std::string& log, const std::string& text) {
  size_t found = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
  return found;
}

// Do these instances say that they watch every claim (1) or their own node's (0)?
bool Watch(Nodes& n, const std::vector<std::string>& nodes, int every) {
  for (const std::string& node : nodes)
    if (Metric(*n.instances[node], "hostpath_provisioner_every_claim_watched") != every) return false;
  return true;
}

// The lists of Nodes the instances made since the request log was reset.
size_t NodeLists(Nodes& n) { return faults::Filter(faults::Requests(*n.api), faults::kProvisionerUser, "list", "nodes").size(); }

}  // namespace

// kube-apiserver leaves remainingItemCount out of a paged list with a selector, with its
// RemainingItemCount feature gate off (versions before its GA allowed it), and before 1.15: the API says
// clients must not rely on it. A list of one node with a continue token and no count says
// only that there are more nodes, not how many.
TEST_CASE("attack: the node list gives no remainingItemCount: the dispatcher keeps the mode it has and says once that it "
          "cannot count the nodes",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  for (const char* node : {"node-a", "node-b", "node-c", "node-d"}) n.api->RegisterNode(node);
  n.Start("node-a");
  n.Start("node-b");
  std::string dispatcher;
  REQUIRE(Eventually([&] { return !(dispatcher = Dispatcher(n)).empty(); }));
  Provisioner& d = *n.instances[dispatcher];
  // A large cluster (4 nodes, past 2 + 1): each instance watches its own node's claims. One
  // more node makes the dispatcher say that it counted.
  n.api->RegisterNode("node-e");
  REQUIRE(Eventually([&] {
    return d.Log().find("the cluster has 5 nodes (SMALL_CLUSTER_NODES 2): every instance keeps watching only its own "
                        "node's claims") != std::string::npos;
  }));
  REQUIRE(AllWatch(n, 0));

  // The count goes away: one node listed, more to come, how many unknown.
  REQUIRE(faults::Control(*n.api, "/fake/remaining-item-count?on=false"));
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));
  const std::string small = "every instance now watches every claim";
  const std::string cannot = "cannot count the cluster's nodes (";
  REQUIRE(Eventually([&] { return d.Log().find(cannot) != std::string::npos || d.Log().find(small) != std::string::npos; }));
  // Counted a few more times meanwhile.
  REQUIRE(Eventually([&] { return NodeLists(n) >= 5; }));
  std::string log = d.Log();
  CHECK(log.find(small) == std::string::npos);  // (before: "the cluster has 1 node ...: every instance now watches every claim")
  CHECK(Occurrences(log, cannot) == 1);
  CHECK_THAT(log, Catch::Contains("gives no remainingItemCount") &&
                      Catch::Contains("each instance keeps watching only its own node's claims (not repeated while it lasts)"));
  CHECK(AllWatch(n, 0));
  // Claims are still labelled and made by their node's instance.
  n.Claim("on-b", "hostpath", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(n.WaitBound("on-b"));
  CHECK(NodeLabel(n.ClaimJson("on-b")) == "node-b");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("on-b"))) == "node-b");

  // The count back, and the cluster small (2 nodes): every claim.
  REQUIRE(faults::Control(*n.api, "/fake/remaining-item-count?on=true"));
  for (const char* node : {"node-c", "node-d", "node-e"}) REQUIRE(n.api->Delete(std::string("/api/v1/nodes/") + node).code == 200);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  // The count goes away again, and the cluster grows past the threshold: unknown, so every
  // instance keeps watching every claim (never fewer claims than it needs), said once more.
  REQUIRE(faults::Control(*n.api, "/fake/remaining-item-count?on=false"));
  for (const char* node : {"node-c", "node-d", "node-e"}) n.api->RegisterNode(node);
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));
  REQUIRE(Eventually([&] { return NodeLists(n) >= 5; }));
  log = d.Log();
  CHECK(Occurrences(log, cannot) == 2);
  CHECK_THAT(log, Catch::Contains("each instance keeps watching every claim (not repeated while it lasts)"));
  CHECK(AllWatch(n, 1));
  n.Claim("on-a", "hostpath", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("on-a"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("on-a"))) == "node-a");
  // Counted again: 5 nodes, each instance back to its own node's claims.
  REQUIRE(faults::Control(*n.api, "/fake/remaining-item-count?on=true"));
  REQUIRE(Eventually([&] { return AllWatch(n, 0); }, std::chrono::seconds(60)));
  CHECK_THAT(d.Log(), Catch::Contains("the cluster has 5 nodes (SMALL_CLUSTER_NODES 2): labelling every claim"));
  CHECK(n.api->Denials().empty());
}

// Default threshold (8; own node's claims past 11): nodes registered and deleted in bursts
// across it, each burst about one count apart, while claims come; then settled on each side.
TEST_CASE("attack: bursts of nodes at the threshold (8, 9, 11, 12 nodes) while claims come: each claim is made once, on "
          "its node, and none is missed by a switch",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"LEADER_ELECT_LEASE_DURATION", "3"}};  // counts once a second
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-c"};
  for (const std::string& node : nodes) n.api->RegisterNode(node);
  for (const std::string& node : nodes) n.Start(node);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  int extra = 0;  // nodes x-1 ... x-extra registered, without an instance
  auto total = [&](int want) {
    for (; 3 + extra < want; ++extra) n.api->RegisterNode("x-" + std::to_string(extra + 1));
    for (; 3 + extra > want; --extra) REQUIRE(n.api->Delete("/api/v1/nodes/x-" + std::to_string(extra)).code == 200);
  };
  std::map<std::string, std::string> made;
  auto claim = [&] {
    const std::string name = "c-" + std::to_string(made.size()), node = nodes[made.size() % nodes.size()];
    n.Claim(name, "hostpath", "hostpath-provisioner.io/node", node);
    made[name] = node;
  };
  for (int round = 0; round < 3; ++round)
    for (int count : {12, 8, 11, 9, 12, 11, 8}) {
      total(count);
      claim();
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
  // Settled past 11: every claim labelled, each instance its own node's.
  total(12);
  for (int i = 0; i < 300 && (i < 2 || !AllWatch(n, 0)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(AllWatch(n, 0));
  MadeOnceOnTheirNodes(n, made, nodes);
  for (const auto& entry : made) CHECK(NodeLabel(n.ClaimJson(entry.first)) == entry.second);
  // Settled at 8: every claim again.
  total(8);
  for (int i = 0; i < 300 && (i < 2 || !AllWatch(n, 1)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(AllWatch(n, 1));
  MadeOnceOnTheirNodes(n, made, nodes);
  CHECK(n.api->Denials().empty());
}

// node-a's disk is too small: its instance hands each claim back to the scheduler (removes
// selected-node), which picks node-b, while the instances switch one way, then the other.
TEST_CASE("attack: claims handed back to the scheduler and placed on another node while the instances switch: one PV "
          "each, on the second node, no directory on the first",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  n.api->CreateYaml(WffcClassYaml("wffc"));
  ::mkdir(n.Root("node-a").c_str(), 0755);
  Tmpfs full(n.Root("node-a"), "1m");
  if (!full.mounted) return;
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  for (const std::string& node : nodes) n.api->RegisterNode(node);
  for (const std::string& node : nodes) n.Start(node);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::vector<std::string> made;
  // A claim and a pod using it: the scheduler picks node-a (the first by name), then node-b.
  auto claim = [&] {
    const std::string name = "w-" + std::to_string(made.size());
    n.api->CreateYaml(ClaimYaml("default", name, "wffc"));
    n.api->CreateYaml(PodYaml("pod-" + name, name));
    made.push_back(name);
  };
  claim();
  claim();
  // Past 2 + 1 nodes: node-c and node-d, without instances, cordoned (the scheduler would
  // otherwise place a claim handed back by node-a there, where no instance makes it).
  for (const char* extra : {"node-c", "node-d"}) {
    n.api->RegisterNode(extra);
    REQUIRE(n.api->Call("PATCH", std::string("/api/v1/nodes/") + extra, R"({"spec":{"unschedulable":true}})",
                        "application/merge-patch+json").code == 200);
  }
  for (int i = 0; i < 300 && (i < 2 || !AllWatch(n, 0)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  REQUIRE(AllWatch(n, 0));
  claim();
  REQUIRE(n.api->Delete("/api/v1/nodes/node-c").code == 200);
  REQUIRE(n.api->Delete("/api/v1/nodes/node-d").code == 200);
  for (int i = 0; i < 300 && (i < 2 || !AllWatch(n, 1)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  REQUIRE(AllWatch(n, 1));
  for (const std::string& name : made) {
    INFO(name);
    if (!Eventually([&] { return Phase(n.ClaimJson(name)) == "Bound"; }, std::chrono::seconds(60))) {
      std::string logs;
      for (auto& entry : n.instances) logs += entry.first + ":\n" + entry.second->Log();
      FAIL("not bound: " << n.ClaimJson(name).serialize() << "\npod: "
                         << n.api->Get("/api/v1/namespaces/default/pods/pod-" + name).body << "\n" << logs);
    }
    const std::string pv = n.VolumeOf(name);
    CHECK(AffinityNode(n.api->Volume(pv)) == "node-b");
    CHECK(Exists(n.Root("node-b") + "/default-" + name + "-" + pv));
    CHECK(EntriesStarting(n.Root("node-a"), "default-" + name + "-") == 0);
    CHECK(n.Events(name, "ProvisioningSucceeded") == 1);
    CHECK(n.Events(name, "ProvisioningFailed", "asking the scheduler for another node") >= 1);
    CHECK(Eventually([&] { return PodNode(*n.api, "pod-" + name) == "node-b"; }));
  }
  for (const auto& entry : VolumesPerClaim(n)) {
    INFO(entry.first);
    CHECK(entry.second == 1);
  }
  CHECK(n.api->Denials().empty());
}

// The classes any node may act on (labelled `any`): a directory on every node, a network share,
// and a pathPattern, in a small cluster and across a switch each way.
TEST_CASE("attack: every-node, network-share and pathPattern claims across switches: one PV each, their directories "
          "where the class says and nowhere else",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  if (!Nodes::CanShare()) return;
  Tmpfs share(n.tmp.path() + "/share", "4m");  // mounted before the instances' namespaces: every "host" has it
  if (!share.mounted) return;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}, {"ALLOWED_PV_DIRS", share.dir}};
  n.api->CreateYaml(ClassYaml("everywhere", "Delete", "hostpath-provisioner.io/hostpath", "  nodes: all\n"));
  std::string cls = ReadFile("manifests/classes/network-share.yaml");
  cls.replace(cls.find("/mnt/share", cls.find("parameters:")), 10, share.dir);
  n.api->CreateYaml(cls);
  n.api->CreateYaml(ClassYaml("pattern", "Delete", "hostpath-provisioner.io/hostpath",
                              "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n"));
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  for (const std::string& node : nodes) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::vector<std::string> everywhere, shared;
  std::map<std::string, std::string> pattern;  // claim -> node
  int i = 0;
  auto three = [&] {
    const std::string k = std::to_string(i++);
    n.api->CreateYaml(ClaimYaml("default", "e-" + k, "everywhere", "1Mi"));
    everywhere.push_back("e-" + k);
    n.api->CreateYaml(ClaimYaml("default", "s-" + k, "hostpath-share", "1Mi"));
    shared.push_back("s-" + k);
    n.Claim("p-" + k, "pattern", "hostpath-provisioner.io/node", nodes[i % 2]);
    pattern["p-" + k] = nodes[i % 2];
  };
  three();
  n.api->RegisterNode("node-c");
  n.api->RegisterNode("node-d");
  for (int k = 0; k < 100 && (k < 2 || !AllWatch(n, 0)); ++k) {
    three();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  REQUIRE(AllWatch(n, 0));
  REQUIRE(n.api->Delete("/api/v1/nodes/node-c").code == 200);
  REQUIRE(n.api->Delete("/api/v1/nodes/node-d").code == 200);
  for (int k = 0; k < 100 && (k < 2 || !AllWatch(n, 1)); ++k) {
    three();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  REQUIRE(AllWatch(n, 1));
  for (const std::string& name : everywhere) {
    INFO(name);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(name)) == "Bound"; }, std::chrono::seconds(60)));
    const std::string pv = n.VolumeOf(name);
    CHECK_FALSE(n.api->Volume(pv).get("spec").get("nodeAffinity").is<picojson::object>());
    for (const std::string& node : nodes) CHECK(Eventually([&] { return Exists(n.Root(node) + "/default-" + name + "-" + pv); }));
    CHECK(n.Events(name, "ProvisioningSucceeded") == 1);
  }
  for (const std::string& name : shared) {
    INFO(name);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(name)) == "Bound"; }, std::chrono::seconds(60)));
    const std::string pv = n.VolumeOf(name);
    CHECK(Exists(share.dir + "/default-" + name + "-" + pv));
    CHECK(EntriesStarting(share.dir, "default-" + name + "-") == 1);
    for (const std::string& node : nodes) CHECK(EntriesStarting(n.Root(node), "default-" + name + "-") == 0);
    CHECK(n.Events(name, "ProvisioningSucceeded") == 1);
  }
  for (const auto& entry : pattern) {
    const std::string& name = entry.first;
    const std::string& node = entry.second;
    INFO(name << " for " << node);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(name)) == "Bound"; }, std::chrono::seconds(60)));
    CHECK(AffinityNode(n.api->Volume(n.VolumeOf(name))) == node);
    for (const std::string& other : nodes) CHECK(Exists(n.Root(other) + "/default/" + name) == (other == node));
    CHECK(n.Events(name, "ProvisioningSucceeded") == 1);
  }
  for (const auto& entry : VolumesPerClaim(n)) {
    INFO(entry.first);
    CHECK(entry.second == 1);
  }
  CHECK(n.api->Denials().empty());
}

// node-c's instance may not read the Lease at its start (a 403: as with an older RBAC), so it
// watches every claim for good, while the two others switch one way, then the other.
TEST_CASE("attack: an instance that may not read the Lease (fallback) while the others switch: its claims and theirs "
          "are made once, each on its node",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  n.api->RegisterNode("node-a");
  n.api->RegisterNode("node-b");
  REQUIRE(faults::Inject(*n.api, faults::Fault{"get", "leases", 403, 1, 0, 0}));
  n.Start("node-c");
  REQUIRE(Eventually([&] {
    return n.instances["node-c"]->Log().find("node-aware mode without its RBAC: this instance may not get the Lease") !=
           std::string::npos;
  }));
  n.Start("node-a");
  n.Start("node-b");
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-c"}, switching = {"node-a", "node-b"};
  REQUIRE(Eventually([&] { return Watch(n, switching, 1); }, std::chrono::seconds(60)));
  std::map<std::string, std::string> made;
  auto claim = [&] {
    const std::string name = "c-" + std::to_string(made.size()), node = nodes[made.size() % nodes.size()];
    n.Claim(name, "hostpath", "hostpath-provisioner.io/node", node);
    made[name] = node;
  };
  claim();
  n.api->RegisterNode("node-d");
  n.api->RegisterNode("node-e");
  for (int i = 0; i < 300 && (i < 3 || !Watch(n, switching, 0)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(Watch(n, switching, 0));
  REQUIRE(n.api->Delete("/api/v1/nodes/node-d").code == 200);
  REQUIRE(n.api->Delete("/api/v1/nodes/node-e").code == 200);
  for (int i = 0; i < 300 && (i < 3 || !Watch(n, switching, 1)); ++i) {
    claim();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(Watch(n, switching, 1));
  MadeOnceOnTheirNodes(n, made, nodes);
  Provisioner& c = *n.instances["node-c"];
  CHECK(Metric(c, "hostpath_provisioner_dispatch_fallback") == 1);
  CHECK(Metric(c, "hostpath_provisioner_every_claim_watched") == 1);
  CHECK_THAT(c.Http("/readyz").body, Catch::Contains("degraded: watching every claim"));
  CHECK(c.Log().find("the dispatcher says the cluster is") == std::string::npos);  // it never switched
  CHECK(Metric(c, "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") == static_cast<double>(made.size()));
}

// The dispatcher stops cleanly (SIGTERM: it releases the Lease) while it labels every claim
// before saying "own node"; its successor counts against another SMALL_CLUSTER_NODES (8: the
// 4 nodes are few), then stops too, and the first, back, takes over with its own (2: many).
TEST_CASE("attack: the dispatcher released by SIGTERM in the middle of a switch, successors with another "
          "SMALL_CLUSTER_NODES: the holder's setting decides, and each claim is made once, on its node",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  for (const std::string& node : nodes) n.api->RegisterNode(node);
  n.Start("node-a");
  REQUIRE(Eventually([&] { return Dispatcher(n) == "node-a" && AllWatch(n, 1); }, std::chrono::seconds(60)));
  n.Start("node-b", {{"SMALL_CLUSTER_NODES", "8"}});
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::map<std::string, std::string> made;
  auto claim = [&](const std::string& node) {
    const std::string name = "c-" + std::to_string(made.size());
    n.Claim(name, "hostpath", "hostpath-provisioner.io/node", node);
    made[name] = node;
  };
  // 4 nodes: past 2 + 1 for node-a's setting.
  n.api->RegisterNode("node-c");
  n.api->RegisterNode("node-d");
  auto labelling = [&] { return n.instances["node-a"]->Log().find("labelling every claim with its node") != std::string::npos; };
  for (int i = 0; i < 600 && !labelling(); ++i) {
    if (i % 10 == 0) claim(nodes[made.size() % 2]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(labelling());
  n.instances["node-a"]->process().Signal(SIGTERM);
  CHECK(n.instances["node-a"]->process().Wait() == 0);
  CHECK_THAT(n.instances["node-a"]->Log(), Catch::Contains("released lease kube-system/hostpath-provisioner.io-hostpath-dispatch"));
  n.instances.erase("node-a");
  // node-b takes over: for its setting the cluster is small.
  REQUIRE(Eventually([&] { return Dispatcher(n) == "node-b"; }, std::chrono::seconds(60)));
  for (int i = 0; i < 4; ++i) claim(nodes[i % 2]);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  // node-a back (a candidate: node-b's setting decides): every claim; node-a's claims are made.
  n.Start("node-a");
  claim("node-a");
  claim("node-b");
  MadeOnceOnTheirNodes(n, made, nodes);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  CHECK(n.instances["node-a"]->Log().find("labelling every claim") == std::string::npos);
  // node-b stops: node-a takes over with its setting, labels every claim, then each instance
  // watches its own node's.
  n.instances["node-b"]->process().Signal(SIGTERM);
  CHECK(n.instances["node-b"]->process().Wait() == 0);
  n.instances.erase("node-b");
  REQUIRE(Eventually([&] { return Dispatcher(n) == "node-a"; }, std::chrono::seconds(60)));
  for (int i = 0; i < 300 && (i < 2 || !AllWatch(n, 0)); ++i) {
    claim(nodes[i % 2]);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(AllWatch(n, 0));
  CHECK_THAT(n.instances["node-a"]->Log(), Catch::Contains("the cluster has 4 nodes (SMALL_CLUSTER_NODES 2): labelling "
                                                           "every claim with its node"));
  n.Start("node-b", {{"SMALL_CLUSTER_NODES", "8"}});
  claim("node-b");
  MadeOnceOnTheirNodes(n, made, nodes);
  for (const auto& entry : made) CHECK(NodeLabel(n.ClaimJson(entry.first)) == entry.second);
  REQUIRE(Eventually([&] { return AllWatch(n, 0); }, std::chrono::seconds(60)));  // (node-a's setting)
  CHECK(n.api->Denials().empty());
}
