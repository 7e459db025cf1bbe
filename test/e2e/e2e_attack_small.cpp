// Attacks on "small clusters skip the dispatch hop" (issue 54), by a reviewer: the dispatcher
// killed in the middle of a switch, a tenant's label naming another node, claims made during
// the switch. Whatever happens, each claim is made once, by its node's instance.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test/support/nodes_harness.hpp"
#include "test/support/small_cluster.hpp"

using namespace harness;

TEST_CASE("attack: the dispatcher killed while switching to own-node mode, a tenant's label naming another node, claims "
          "made meanwhile: each claim is made once, on its node",
          "[e2e][nodes][small][attack]") {
  Nodes n;
  n.env = {{"SMALL_CLUSTER_NODES", "2"}, {"LEADER_ELECT_LEASE_DURATION", "3"}};
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-c"};
  n.api->RegisterNode("node-a");
  n.api->RegisterNode("node-b");
  for (const std::string& node : nodes) n.Start(node);
  REQUIRE(Eventually([&] { return AllWatch(n, 1); }, std::chrono::seconds(60)));
  std::string dispatcher;
  REQUIRE(Eventually([&] { return !(dispatcher = Dispatcher(n)).empty(); }));
  // A tenant's bound claim on one node, labelled by the tenant with another node's value.
  std::string victim_node = dispatcher == "node-a" ? "node-b" : "node-a";
  n.Claim("tenant", "hostpath", "hostpath-provisioner.io/node", victim_node);
  REQUIRE(n.WaitBound("tenant"));
  const std::string wrong = victim_node == "node-b" ? "node-c" : "node-b";
  REQUIRE(n.api->Call("PATCH", std::string(kClaims) + "tenant",
                      "{\"metadata\":{\"labels\":{\"hostpath-provisioner.io/node\":\"" + wrong + "\"}}}",
                      "application/merge-patch+json")
              .code == 200);
  // Grow: 5 nodes (past 2 + 1). Kill the dispatcher as soon as it starts labelling.
  n.api->RegisterNode("node-d");
  n.api->RegisterNode("node-e");
  std::map<std::string, std::string> made;
  int i = 0;
  auto claim = [&](const std::string& node) {
    const std::string name = "c-" + std::to_string(i++);
    n.Claim(name, "hostpath", "hostpath-provisioner.io/node", node);
    made[name] = node;
  };
  REQUIRE(Eventually([&] {
    claim(nodes[i % 3]);
    return n.instances[dispatcher]->Log().find("labelling every claim with its node") != std::string::npos;
  }, std::chrono::seconds(60)));
  n.instances[dispatcher]->process().Signal(SIGKILL);
  n.instances[dispatcher]->process().Wait();
  n.instances.erase(dispatcher);
  for (int k = 0; k < 10; ++k) {
    claim(n.instances.begin()->first);
    claim(std::prev(n.instances.end())->first);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  REQUIRE(Eventually([&] { return AllWatch(n, 0); }, std::chrono::seconds(90)));
  // The tenant's claim is labelled back, and its instance still holds it (expansion works).
  CHECK(Eventually([&] {
    const picojson::value claim_json = n.ClaimJson("tenant");
    const picojson::value& l = claim_json.get("metadata").get("labels");
    return l.is<picojson::object>() && l.contains("hostpath-provisioner.io/node") &&
           l.get("hostpath-provisioner.io/node").to_str() == victim_node;
  }, std::chrono::seconds(60)));
  // Claims for the killed dispatcher's node stay pending; the others are made once, on their node.
  size_t expected = 1;
  for (const auto& entry : made) {
    const std::string& claim_name = entry.first;  // lambdas below use it (C++17: no structured binding)
    const std::string& node = entry.second;
    if (node == dispatcher) continue;
    ++expected;
    INFO(claim_name << " for " << node);
    REQUIRE(Eventually([&] { return Phase(n.ClaimJson(claim_name)) == "Bound"; }, std::chrono::seconds(90)));
    CHECK(AffinityNode(n.api->Volume(n.VolumeOf(claim_name))) == node);
    CHECK(n.Events(claim_name, "ProvisioningSucceeded") == 1);
  }
  // (Some of the killed node's claims may have been made before it died.)
  Reply pvs = n.api->Get("/api/v1/persistentvolumes");
  REQUIRE(pvs.code == 200);
  std::map<std::string, int> per_claim;
  for (const auto& pv : pvs.json.get("items").get<picojson::array>())
    ++per_claim[pv.get("spec").get("claimRef").get("name").to_str()];
  for (const auto& [claim_name, count] : per_claim) {
    INFO(claim_name);
    CHECK(count == 1);
  }
  CHECK(per_claim.size() >= expected);
  // Restart the killed node: its claims are made too.
  n.Start(dispatcher);
  for (const auto& entry : made)
    if (const std::string& claim_name = entry.first; entry.second == dispatcher) {
      INFO(claim_name);
      CHECK(Eventually([&] { return Phase(n.ClaimJson(claim_name)) == "Bound"; }, std::chrono::seconds(90)));
    }
  Reply all = n.api->Get("/api/v1/persistentvolumes");
  CHECK(all.json.get("items").get<picojson::array>().size() == made.size() + 1);
}
