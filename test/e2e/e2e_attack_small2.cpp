// Attacks on "small clusters skip the dispatch hop" (issue 54), second round, by a reviewer:
// the node count without remainingItemCount, bursts of nodes at the threshold, a claim sent
// back to the scheduler while the instances switch, the classes any node may act on across a
// switch, an instance that may not read the Lease, and a dispatcher that stops cleanly in the
// middle of a switch with a successor of another SMALL_CLUSTER_NODES. Whatever happens, each
// claim gets one PV and one directory, made by the instance of its node.
#include <dirent.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test/support/fault_harness.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

std::string Label(const picojson::value& obj) {
  const picojson::value& labels = obj.get("metadata").get("labels");
  if (!labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node")) return "";
  return labels.get("hostpath-provisioner.io/node").to_str();
}

// The instance that holds the dispatch Lease ("" when none does).
std::string Dispatcher(Nodes& n) {
  for (auto& entry : n.instances)
    if (entry.second && Metric(*entry.second, "hostpath_provisioner_dispatcher") == 1) return entry.first;
  return "";
}

// Does every running instance say that it watches every claim (1) or its own node's (0)?
bool AllWatch(Nodes& n, int every) {
  for (auto& entry : n.instances)
    if (Metric(*entry.second, "hostpath_provisioner_every_claim_watched") != every) return false;
  return true;
}

// How many times `text` is in `log`.
size_t Occurrences(const std::string& log, const std::string& text) {
  size_t found = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
  return found;
}

// Entries of `dir` whose name starts with `prefix`.
int EntriesStarting(const std::string& dir, const std::string& prefix) {
  int found = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) found += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return found;
}

// PVs per claim name.
std::map<std::string, int> VolumesPerClaim(Nodes& n) {
  std::map<std::string, int> out;
  Reply pvs = n.api->Get("/api/v1/persistentvolumes");
  REQUIRE(pvs.code == 200);
  for (const auto& pv : pvs.json.get("items").get<picojson::array>())
    ++out[pv.get("spec").get("claimRef").get("name").to_str()];
  return out;
}

// The lists of Nodes the instances made since the request log was reset.
size_t NodeLists(Nodes& n) { return faults::Filter(faults::Requests(*n.api), faults::kProvisionerUser, "list", "nodes").size(); }

// Each claim (name -> node) is Bound to a PV of its node, whose directory is in that node's
// root and in no other, with one ProvisioningSucceeded event; one PV per claim.
[[maybe_unused]] void MadeOnceOnTheirNodes(Nodes& n, const std::map<std::string, std::string>& claims,
                          const std::vector<std::string>& roots) {
  for (const auto& entry : claims) {
    const std::string& claim = entry.first;  // (lambdas below: no structured binding in C++17)
    const std::string& node = entry.second;
    INFO(claim << " for " << node);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(claim)) == "Bound"; }, std::chrono::seconds(60)));
    const std::string pv = n.VolumeOf(claim);
    CHECK(AffinityNode(n.api->Volume(pv)) == node);
    CHECK(Exists(n.Root(node) + "/default-" + claim + "-" + pv));
    for (const std::string& other : roots)
      if (other != node) CHECK(EntriesStarting(n.Root(other), "default-" + claim + "-") == 0);
    CHECK(n.Events(claim, "ProvisioningSucceeded") == 1);
  }
  for (const auto& entry : VolumesPerClaim(n)) {
    INFO(entry.first);
    CHECK(entry.second == 1);
  }
}

}  // namespace

// kube-apiserver leaves remainingItemCount out of a paged list with a selector, with its
// RemainingItemCount feature gate off (possible up to 1.28), and before 1.15: the API says
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
  CHECK(Label(n.ClaimJson("on-b")) == "node-b");
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
