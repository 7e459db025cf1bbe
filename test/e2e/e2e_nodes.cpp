// End to end, node-aware mode: several instances of the real binary, each with its own
// NODE_NAME and root (as the DaemonSet runs them, one per node), against one fake API server
// with the DaemonSet's RBAC. Checked through the API (PVs, claims, events) and on disk.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <memory>

#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;
using std::chrono::seconds;

TEST_CASE("three instances: each provisions and removes only its own node's volumes", "[e2e][nodes]") {
  Nodes n;
  for (const char* node : {"node-a", "node-b", "node-c"}) n.Start(node);
  n.Claim("a1", "hostpath", "hostpath-provisioner.io/node", "node-a");
  n.Claim("a2", "hostpath", "hostpath-provisioner.io/node", "node-a");
  n.Claim("b1", "hostpath", "kubevirt.io/provisionOnNode", "node-b");
  n.Claim("c1", "hostpath", "hostpath-provisioner.io/node", "node-c");
  const std::map<std::string, std::string> node_of = {{"a1", "node-a"}, {"a2", "node-a"}, {"b1", "node-b"}, {"c1", "node-c"}};
  for (const auto& [claim, node] : node_of) {
    INFO(claim);
    REQUIRE(n.WaitBound(claim));
    picojson::value pv = n.api->Volume(n.VolumeOf(claim));
    CHECK(AffinityNode(pv) == node);
    CHECK(Annotation(pv, "hostpath-provisioner.io/node") == node);
    CHECK(Annotation(pv, "hostpath-provisioner.io/pv-dir") == n.Root(node));
    std::string dir = n.Root(node) + "/default-" + claim + "-" + n.VolumeOf(claim);
    CHECK(pv.get("spec").get("hostPath").get("path").to_str() == dir);
    CHECK(Exists(dir));
  }
  CHECK(ListDir(n.Root("node-a")).size() == 2);
  CHECK(ListDir(n.Root("node-b")).size() == 1);
  CHECK(ListDir(n.Root("node-c")).size() == 1);
  // Each instance sees only its own node's claims (one of them labels every claim with its node).
  CHECK_THAT(n.instances["node-a"]->Log(), Catch::Contains("provisioned default/a1") &&
                                               !Catch::Contains("claim default/b1: nothing") &&
                                               !Catch::Contains("provisioned default/b1"));
  CHECK_THAT(n.instances["node-b"]->Log(), Catch::Contains("provisioned default/b1") && !Catch::Contains("provisioned default/a1"));

  // Data in b1's directory goes with its claim; a1's neighbour a2 and the other nodes stay.
  WriteFile(n.Root("node-b") + "/default-b1-" + n.VolumeOf("b1") + "/data.txt", "pod data\n");
  std::string b1_pv = n.VolumeOf("b1"), a1_pv = n.VolumeOf("a1");
  REQUIRE(n.api->Delete(kClaims + std::string("b1")).code == 200);
  REQUIRE(n.api->Delete(kClaims + std::string("a1")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(b1_pv).is<picojson::object>() && !n.api->Volume(a1_pv).is<picojson::object>(); }));
  CHECK(ListDir(n.Root("node-b")).empty());
  CHECK(ListDir(n.Root("node-a")) == std::vector<std::string>{"default-a2-" + n.VolumeOf("a2")});
  CHECK(ListDir(n.Root("node-c")).size() == 1);
  CHECK_THAT(n.instances["node-b"]->Log(), Catch::Contains("deleted volume " + b1_pv));
  // The other instances never touched b1's volume (their roots differ here; on real nodes
  // the path is the same, so only the node check keeps them off it).
  CHECK_THAT(n.instances["node-a"]->Log(), !Catch::Contains(b1_pv));
  CHECK_THAT(n.instances["node-c"]->Log(), !Catch::Contains(b1_pv) && !Catch::Contains(a1_pv));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a claim naming no node gets one warning between all instances, then its node's volume", "[e2e][nodes]") {
  Nodes n;
  for (const char* node : {"node-a", "node-b", "node-c"}) n.Start(node);
  n.Claim("lost", "hostpath");
  REQUIRE(Eventually([&] { return n.Events("lost", "ProvisioningFailed") > 0; }));
  // Every instance has seen it by now (they all list claims at start); no more come later.
  std::this_thread::sleep_for(seconds(2));
  std::vector<picojson::value> events = n.api->EventsAbout("default", "lost");
  CHECK(n.Events("lost", "ProvisioningFailed", "hostpath-provisioner.io/node=<node name>") == 1);
  for (const auto& e : events)
    if (e.get("reason").to_str() == "ProvisioningFailed") {
      CHECK(e.get("type").to_str() == "Warning");
      CHECK(e.get("count").get<double>() == 1);
    }
  CHECK(n.VolumeOf("lost").empty());
  // The user follows the advice: the claim's node provisions it.
  Reply r = n.api->Call("PATCH", kClaims + std::string("lost"),
                        "{\"metadata\":{\"annotations\":{\"hostpath-provisioner.io/node\":\"node-b\"}}}",
                        "application/merge-patch+json");
  REQUIRE(r.code == 200);
  REQUIRE(n.WaitBound("lost"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("lost"))) == "node-b");
  CHECK(n.api->Denials().empty());
}

TEST_CASE("WaitForFirstConsumer: the selected node's instance provisions; a node without one leaves the claim quietly Pending", "[e2e][nodes]") {
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("wffc"));
  n.Start("node-a");
  n.Start("node-b");
  n.Claim("w1", "wffc");
  REQUIRE(Eventually([&] { return n.Events("w1", "WaitForFirstConsumer") > 0; }));
  CHECK(n.VolumeOf("w1").empty());
  n.SelectNode("w1", "node-b");
  REQUIRE(n.WaitBound("w1"));
  picojson::value pv = n.api->Volume(n.VolumeOf("w1"));
  CHECK(AffinityNode(pv) == "node-b");
  CHECK(Exists(n.Root("node-b") + "/default-w1-" + n.VolumeOf("w1")));
  CHECK(ListDir(n.Root("node-a")).empty());

  n.Claim("w2", "wffc");
  n.SelectNode("w2", "node-z");
  std::this_thread::sleep_for(seconds(3));
  CHECK(Phase(n.ClaimJson("w2")) == "Pending");
  for (const auto& e : n.api->EventsAbout("default", "w2"))
    CHECK(e.get("source").get("component").to_str() != "hostpath-provisioner");
  CHECK(ListDir(n.Root("node-a")).empty());
  CHECK(ListDir(n.Root("node-b")).size() == 1);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("pvDir classes land in their roots; local volumes; a root not allowed is refused and rescheduled", "[e2e][nodes]") {
  Nodes n;
  const std::string ssd = n.tmp.path() + "/ssd-a";
  ::mkdir(ssd.c_str(), 0755);
  n.api->CreateYaml(WffcClassYaml("fast", "  pvDir: " + ssd + "\n"));
  n.api->CreateYaml(WffcClassYaml("pinned", "  volumeType: local\n"));
  n.api->CreateYaml(WffcClassYaml("elsewhere", "  pvDir: /etc\n"));
  n.Start("node-a", {{"ALLOWED_PV_DIRS", ssd}});

  n.Claim("f1", "fast");
  n.SelectNode("f1", "node-a");
  REQUIRE(n.WaitBound("f1"));
  picojson::value pv = n.api->Volume(n.VolumeOf("f1"));
  std::string dir = ssd + "/default-f1-" + n.VolumeOf("f1");
  CHECK(pv.get("spec").get("hostPath").get("path").to_str() == dir);
  CHECK(Annotation(pv, "hostpath-provisioner.io/pv-dir") == ssd);
  CHECK(Exists(dir));
  CHECK(ListDir(n.Root("node-a")).empty());

  n.Claim("l1", "pinned");
  n.SelectNode("l1", "node-a");
  REQUIRE(n.WaitBound("l1"));
  picojson::value local = n.api->Volume(n.VolumeOf("l1"));
  CHECK(local.get("spec").get("local").get("path").to_str() == n.Root("node-a") + "/default-l1-" + n.VolumeOf("l1"));
  CHECK_FALSE(local.get("spec").get("hostPath").is<picojson::object>());
  CHECK(AffinityNode(local) == "node-a");

  n.Claim("e1", "elsewhere");
  n.SelectNode("e1", "node-a");
  REQUIRE(Eventually([&] { return n.Events("e1", "ProvisioningFailed", "not a directory this provisioner may use") > 0; }));
  CHECK(Eventually([&] { return Annotation(n.ClaimJson("e1"), "volume.kubernetes.io/selected-node").empty(); }));
  CHECK(n.Events("e1", "ProvisioningFailed", "asking the scheduler for another node") > 0);
  CHECK(n.VolumeOf("e1").empty());

  // Deletion goes to the recorded root.
  std::string f1_pv = n.VolumeOf("f1");
  REQUIRE(n.api->Delete(kClaims + std::string("f1")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(f1_pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(dir));
  CHECK(Exists(ssd));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("an instance killed in the middle of a burst converges when restarted", "[e2e][nodes]") {
  Nodes n;
  n.Start("node-a");
  n.Start("node-b");
  const int kEach = 20;
  for (int i = 0; i < kEach; ++i) {
    n.Claim("a" + std::to_string(i), "hostpath", "hostpath-provisioner.io/node", "node-a");
    n.Claim("b" + std::to_string(i), "hostpath", "hostpath-provisioner.io/node", "node-b");
  }
  REQUIRE(Eventually([&] { return ListDir(n.Root("node-a")).size() >= 3; }));
  n.instances["node-a"]->process().Signal(SIGKILL);
  n.instances["node-a"]->process().Wait();
  n.Start("node-a");
  for (int i = 0; i < kEach; ++i) {
    INFO(i);
    REQUIRE(n.WaitBound("a" + std::to_string(i)));
    REQUIRE(n.WaitBound("b" + std::to_string(i)));
    CHECK(Exists(n.Root("node-a") + "/default-a" + std::to_string(i) + "-" + n.VolumeOf("a" + std::to_string(i))));
  }
  CHECK(ListDir(n.Root("node-a")).size() == kEach);
  CHECK(ListDir(n.Root("node-b")).size() == kEach);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a pod's claim is provisioned on the node the scheduler picks, and the pod is bound there", "[e2e][nodes]") {
  Nodes n;
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/hostpath").code == 200);
  n.api->CreateYaml(ReadFile("manifests/daemonset/storageclass.yaml"));  // hostpath, WaitForFirstConsumer
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node);
  }
  n.Claim("data", "hostpath");
  n.api->CreateYaml(PodYaml("app", "data", "node-b"));
  REQUIRE(n.WaitBound("data"));
  CHECK(Annotation(n.ClaimJson("data"), "volume.kubernetes.io/selected-node") == "node-b");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "node-b");
  CHECK(Exists(n.Root("node-b") + "/default-data-" + n.VolumeOf("data")));
  CHECK(ListDir(n.Root("node-a")).empty());
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-b"; }));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a node whose root is full hands the claim back to the scheduler, which picks another", "[e2e][nodes]") {
  Nodes n;
  REQUIRE(n.api->Delete("/apis/storage.k8s.io/v1/storageclasses/hostpath").code == 200);
  n.api->CreateYaml(ReadFile("manifests/daemonset/storageclass.yaml"));  // hostpath, WaitForFirstConsumer
  ::mkdir(n.Root("node-a").c_str(), 0755);
  if (::mount("tmpfs", n.Root("node-a").c_str(), "tmpfs", 0, "nr_inodes=1,size=1m") != 0) {
    WARN("SKIPPED: cannot mount a tmpfs here (needs root): " << std::strerror(errno));
    return;
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{n.Root("node-a")};
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node);
  }
  n.Claim("data", "hostpath");
  n.api->CreateYaml(PodYaml("app", "data"));  // the scheduler tries node-a first (by name)
  REQUIRE(n.WaitBound("data"));
  CHECK(n.Events("data", "ProvisioningFailed", "not enough space") > 0);  // the root is 1 MiB
  CHECK(n.Events("data", "ProvisioningFailed", "asking the scheduler for another node") > 0);
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "node-b");
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "node-b"; }));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a WaitForFirstConsumer claim handed back to the scheduler gets no 'names no node' warning", "[e2e][nodes]") {
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("wffc"));
  ::mkdir(n.Root("node-a").c_str(), 0755);
  Tmpfs full(n.Root("node-a"), "1m");
  if (!full.mounted) return;
  n.Start("node-a", {{"LOG_LEVEL", "2"}});
  n.Start("node-b", {{"LOG_LEVEL", "2"}});
  n.Claim("data", "wffc");
  n.SelectNode("data", "node-a");  // as the scheduler would; node-a's root is too small
  REQUIRE(Eventually([&] { return n.Events("data", "ProvisioningFailed", "asking the scheduler for another node") > 0; }));
  REQUIRE(Annotation(n.ClaimJson("data"), "volume.kubernetes.io/selected-node").empty());
  // The instance the claim is labelled for (node-a, until the dispatcher takes the label off an
  // unplaced claim) looks at it, now naming no node, and leaves it to the scheduler (or, wrongly,
  // tells the user to name a node); or the label goes first, and node-a no longer sees it.
  auto looked = [&](const std::string& node) {
    return n.instances[node]->Log().find("claim default/data: nothing to do: waiting for the scheduler") != std::string::npos;
  };
  auto unlabelled = [&] {
    const picojson::value claim = n.ClaimJson("data");
    const picojson::value& labels = claim.get("metadata").get("labels");
    return !labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node");
  };
  REQUIRE(Eventually([&] { return n.Events("data", "ProvisioningFailed", "names no") > 0 || looked("node-a") || unlabelled(); }));
  CHECK(n.Events("data", "ProvisioningFailed", "names no") == 0);
  // The scheduler picks again: node-b makes it.
  n.SelectNode("data", "node-b");
  REQUIRE(n.WaitBound("data"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "node-b");
  CHECK(n.api->Denials().empty());
}

TEST_CASE("DELETED_NODE_CLEANUP_DELAY: a deleted node's claims and volumes go; a node back in time keeps them", "[e2e][nodes]") {
  Nodes n({"--rbac", "manifests/daemonset/node-cleanup/rbac.yaml"});
  // The dispatcher does the cleanup: if node-b's instance held its Lease, another takes it over
  // (a short Lease, so that this happens within the test's wait).
  const std::map<std::string, std::string> cleanup = {{"DELETED_NODE_CLEANUP_DELAY", "3"},
                                                      {"LEADER_ELECT_LEASE_DURATION", "3"}};
  for (const char* node : {"node-a", "node-b", "node-c"}) {
    n.api->RegisterNode(node);
    n.Start(node, cleanup);
  }
  n.Claim("a1", "hostpath", "hostpath-provisioner.io/node", "node-a");
  n.Claim("b1", "hostpath", "hostpath-provisioner.io/node", "node-b");
  n.Claim("c1", "hostpath", "hostpath-provisioner.io/node", "node-c");
  for (const char* claim : {"a1", "b1", "c1"}) REQUIRE(n.WaitBound(claim));
  const std::string b1_pv = n.VolumeOf("b1"), c1_pv = n.VolumeOf("c1");

  // node-b dies for good: its instance with it, then its Node object.
  n.instances["node-b"]->process().Signal(SIGKILL);
  n.instances["node-b"]->process().Wait();
  REQUIRE(n.api->Delete("/api/v1/nodes/node-b").code == 200);
  // node-c is deleted and registers again within the delay.
  REQUIRE(n.api->Delete("/api/v1/nodes/node-c").code == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  n.api->RegisterNode("node-c");

  REQUIRE(Eventually([&] { return !n.ClaimJson("b1").is<picojson::object>() && !n.api->Volume(b1_pv).is<picojson::object>(); }));
  int events = 0;
  for (const auto& e : n.api->EventsAbout("default", b1_pv))
    if (e.get("reason").to_str() == "NodeDeleted") {
      ++events;
      CHECK_THAT(e.get("message").to_str(), Catch::Contains("node node-b was deleted") && Catch::Contains("default/b1"));
    }
  CHECK(events == 1);
  CHECK(Exists(n.Root("node-b") + "/default-b1-" + b1_pv));  // its data stays on its disk
  std::this_thread::sleep_for(seconds(4));  // past node-c's delay
  CHECK(Phase(n.ClaimJson("c1")) == "Bound");
  CHECK(n.api->Volume(c1_pv).is<picojson::object>());
  CHECK(Phase(n.ClaimJson("a1")) == "Bound");
  CHECK(n.api->Denials().empty());
}

TEST_CASE("without DELETED_NODE_CLEANUP_DELAY a deleted node's volumes stay", "[e2e][nodes]") {
  Nodes n;
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.Start(node);
  }
  n.Claim("b1", "hostpath", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(n.WaitBound("b1"));
  n.instances["node-b"]->process().Signal(SIGKILL);
  n.instances["node-b"]->process().Wait();
  REQUIRE(n.api->Delete("/api/v1/nodes/node-b").code == 200);
  std::this_thread::sleep_for(seconds(4));
  CHECK(Phase(n.ClaimJson("b1")) == "Bound");
  CHECK(n.api->Volume(n.VolumeOf("b1")).is<picojson::object>());
  CHECK(n.api->Denials().empty());
}

TEST_CASE("expansion: only the instance of the volume's node expands it, once", "[e2e][nodes][expand]") {
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("wffc") + "allowVolumeExpansion: true\n");
  n.Start("node-a");
  n.Start("node-b");
  n.Start("node-c");
  n.Claim("grows", "wffc");
  n.SelectNode("grows", "node-b");
  REQUIRE(n.WaitBound("grows"));
  REQUIRE(n.api->Call("PATCH", kClaims + std::string("grows"), R"({"spec":{"resources":{"requests":{"storage":"2Gi"}}}})",
                      "application/merge-patch+json")
              .code == 200);
  REQUIRE(Eventually([&] { return n.ClaimJson("grows").get("status").get("capacity").get("storage").to_str() == "2Gi"; }));
  CHECK(n.api->Volume(n.VolumeOf("grows")).get("spec").get("capacity").get("storage").to_str() == "2Gi");
  REQUIRE(Eventually([&] { return n.Events("grows", "VolumeResizeSuccessful") == 1; }));
  std::this_thread::sleep_for(seconds(1));  // time for another instance to act, were it going to
  CHECK(n.Events("grows", "Resizing") == 1);
  CHECK(n.Events("grows", "VolumeResizeSuccessful") == 1);
  for (const auto& e : n.api->EventsAbout("default", "grows")) CHECK(e.get("count").get<double>() == 1);
  CHECK(n.api->Denials().empty());
}
