// A small cluster (SMALL_CLUSTER_NODES, decide/node_labels.hpp WatchEveryClaim): the
// dispatcher counts the Nodes and says on its Lease that every instance watches every claim,
// so that no claim waits for its label; past the threshold plus a quarter it labels every
// claim, then says that each instance watches only its own node's; below the threshold again,
// every claim. Whatever the instances watch, a claim is made once, by its node's instance.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test/support/nodes_harness.hpp"
#include "test/support/small_cluster.hpp"

using namespace harness;

namespace {

// MadeOnceOnTheirNodes over every instance's root, and no PV but those of `claims`.
void AllMadeOnce(Nodes& n, const std::map<std::string, std::string>& claims) {
  std::vector<std::string> nodes;
  for (auto& entry : n.instances) nodes.push_back(entry.first);
  MadeOnceOnTheirNodes(n, claims, nodes);
  CHECK(VolumesPerClaim(n).size() == claims.size());
}

// Creates claims PREFIX-0, -1, ... (with the node annotation, alternately for each node in
// `nodes`), about five a second, until `done` (at least two, at most 300); name -> node.
std::map<std::string, std::string> ClaimsUntil(Nodes& n, const std::string& prefix, const std::vector<std::string>& nodes,
                                               const std::function<bool()>& done) {
  std::map<std::string, std::string> made;
  for (int i = 0; i < 300 && (i < 2 || !done()); ++i) {
    const std::string name = prefix + "-" + std::to_string(i), node = nodes[i % nodes.size()];
    n.Claim(name, "hostpath", "hostpath-provisioner.io/node", node);
    made[name] = node;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(done());
  return made;
}

}  // namespace

TEST_CASE("a small cluster: every instance watches every claim and makes its own node's at once, without labels",
          "[e2e][nodes][small]") {
  Nodes n;
  n.env = {{"LEADER_ELECT_LEASE_DURATION", "3"}};  // (SMALL_CLUSTER_NODES: 8 by default)
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-c"};
  for (const std::string& node : nodes) n.api->RegisterNode(node);
  for (const std::string& node : nodes) n.Start(node);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::string dispatcher;
  REQUIRE(Eventually([&] { return !(dispatcher = Dispatcher(n)).empty(); }));
  Provisioner& d = *n.instances[dispatcher];
  CHECK_THAT(d.Log(), Catch::Contains("the cluster has 3 nodes (SMALL_CLUSTER_NODES 8): every instance now watches "
                                      "every claim"));
  for (const std::string& node : nodes)
    CHECK_THAT(n.instances[node]->Log(), Catch::Contains("the dispatcher says the cluster is small: this instance now "
                                                         "watches every claim"));
  // Once every instance has had time to look at the Lease, claims are no longer labelled.
  REQUIRE(Eventually([&] { return d.Log().find("claims are labelled with their nodes only when still waiting 10 s") !=
                                  std::string::npos; }));
  const double labelled = Metric(d, "hostpath_provisioner_claims_dispatched_total");
  std::map<std::string, std::string> claims;
  for (const std::string& node : nodes)
    for (const char* i : {"1", "2"}) {
      n.Claim(node + "-" + i, "hostpath", "hostpath-provisioner.io/node", node);
      claims[node + "-" + i] = node;
    }
  AllMadeOnce(n, claims);
  for (const auto& [claim, node] : claims) CHECK(NodeLabel(n.ClaimJson(claim)).empty());
  CHECK(Metric(d, "hostpath_provisioner_claims_dispatched_total") == labelled);
  // Every instance holds every claim (and still only its own node's PVs).
  for (const std::string& node : nodes) {
    INFO(node);
    CHECK(Eventually([&] {
      return Metric(*n.instances[node], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") == 6 &&
             Metric(*n.instances[node], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolume\"") == 2;
    }));
  }
  // Without a dispatcher, claims are still made: no claim waits for a label.
  n.instances[dispatcher]->process().Signal(SIGKILL);
  n.instances[dispatcher]->process().Wait();
  n.instances.erase(dispatcher);
  const std::string other = n.instances.begin()->first;
  n.Claim("later", "hostpath", "hostpath-provisioner.io/node", other);
  REQUIRE(n.WaitBound("later"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("later"))) == other);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("the cluster grows past SMALL_CLUSTER_NODES and shrinks back: the instances switch, and claims made meanwhile "
          "are made once, each by its node's instance",
          "[e2e][nodes][small]") {
  Nodes n;
  // Every claim up to 2 nodes, own node's past 3; the holder counts every second, the others
  // look at the Lease every 3 to 4 s.
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  const std::vector<std::string> nodes = {"node-a", "node-b"};
  for (const std::string& node : nodes) n.api->RegisterNode(node);
  for (const std::string& node : nodes) n.Start(node);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::map<std::string, std::string> all;

  // 4 nodes: every claim is labelled, then each instance watches only its own node's.
  n.api->RegisterNode("node-c");
  n.api->RegisterNode("node-d");
  std::map<std::string, std::string> growing = ClaimsUntil(n, "grow", nodes, [&] { return AllWatch(n, 0); });
  all.insert(growing.begin(), growing.end());
  std::string dispatcher = Dispatcher(n);
  REQUIRE_FALSE(dispatcher.empty());
  const std::string log = n.instances[dispatcher]->Log();
  CHECK_THAT(log, Catch::Contains("the cluster has 4 nodes (SMALL_CLUSTER_NODES 2): labelling every claim with its "
                                  "node, then each instance watches only its own node's"));
  CHECK_THAT(log, Catch::Contains("every claim carries its node's label: each instance now watches only its own "
                                  "node's claims"));
  for (const std::string& node : nodes)
    CHECK_THAT(n.instances[node]->Log(), Catch::Contains("the dispatcher says the cluster is large: this instance now "
                                                         "watches only the claims labelled for its node"));
  AllMadeOnce(n, all);
  for (const auto& [claim, node] : all) CHECK(NodeLabel(n.ClaimJson(claim)) == node);
  // Each instance holds only its own node's claims again.
  for (const std::string& node : nodes) {
    INFO(node);
    size_t own = 0;
    for (const auto& [claim, on] : all) own += on == node;
    CHECK(Eventually([&] {
      return Metric(*n.instances[node], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") ==
             static_cast<double>(own);
    }));
  }

  // 3 nodes, between the two: nothing switches (a node that comes and goes at the edge).
  REQUIRE(n.api->Delete("/api/v1/nodes/node-d").code == 200);
  REQUIRE(Eventually([&] {
    return n.instances[dispatcher]->Log().find("the cluster has 3 nodes (SMALL_CLUSTER_NODES 2): every instance keeps "
                                               "watching only its own node's claims") != std::string::npos;
  }));
  CHECK(AllWatch(n, 0));

  // 2 nodes: every instance watches every claim again.
  REQUIRE(n.api->Delete("/api/v1/nodes/node-c").code == 200);
  std::map<std::string, std::string> shrinking = ClaimsUntil(n, "shrink", nodes, [&] { return AllWatch(n, 1); });
  all.insert(shrinking.begin(), shrinking.end());
  CHECK_THAT(n.instances[dispatcher]->Log(), Catch::Contains("the cluster has 2 nodes (SMALL_CLUSTER_NODES 2): every "
                                                             "instance now watches every claim"));
  AllMadeOnce(n, all);
  for (const std::string& node : nodes) {
    INFO(node);
    CHECK(Eventually([&] {
      return Metric(*n.instances[node], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") ==
             static_cast<double>(all.size());
    }));
  }
  CHECK(n.api->Denials().empty());
}

TEST_CASE("an RBAC without list on nodes (an image-only upgrade): the dispatcher says once that it cannot count them, and "
          "each instance keeps watching its own node's claims, which are labelled and made",
          "[e2e][nodes][small]") {
  TempDir rbac;
  Nodes n({}, RbacWithout(rbac.path(), "node list"));
  n.env = {{"LEADER_ELECT_LEASE_DURATION", "3"}};
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node);
  }
  std::string dispatcher;
  REQUIRE(Eventually([&] { return !(dispatcher = Dispatcher(n)).empty(); }));
  Provisioner& d = *n.instances[dispatcher];
  REQUIRE(Eventually([&] { return d.Log().find("cannot count the cluster's nodes (") != std::string::npos; }));
  n.Claim("on-b", "hostpath", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(n.WaitBound("on-b"));
  CHECK(NodeLabel(n.ClaimJson("on-b")) == "node-b");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("on-b"))) == "node-b");
  CHECK(AllWatch(n, 0));
  // One Warning, naming the refusal and the manifest to apply, not one per count.
  const std::string log = d.Log();
  size_t warnings = 0;
  for (size_t at = log.find("cannot count the cluster's nodes"); at != std::string::npos;
       at = log.find("cannot count the cluster's nodes", at + 1))
    ++warnings;
  CHECK(warnings == 1);
  CHECK_THAT(log, Catch::Contains("each instance keeps watching only its own node's claims (apply "
                                  "manifests/daemonset/rbac.yaml; not repeated while it lasts)") &&
                      Catch::Contains("cannot list resource \"nodes\""));
  for (const auto& denial : n.api->Denials()) CHECK(denial.get("resource").to_str() == "nodes");
}
