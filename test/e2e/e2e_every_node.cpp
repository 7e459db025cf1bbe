// End to end: a volume whose directory is on every node (class parameter nodes: all), for a
// DaemonSet's pods. Several instances of the real binary, one per node, each with its own
// root, against one fake API server with the DaemonSet's RBAC.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "test/support/fault_harness.hpp"
#include "test/support/nodes_harness.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

std::string EveryNodeClass(const std::string& name, const std::string& reclaim) {
  return ClassYaml(name, reclaim, "hostpath-provisioner.io/hostpath", "  nodes: all\n");
}

std::vector<std::string> Finalizers(const picojson::value& pv) {
  std::vector<std::string> out;
  const picojson::value& f = pv.get("metadata").get("finalizers");
  if (f.is<picojson::array>())
    for (const auto& x : f.get<picojson::array>()) out.push_back(x.to_str());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> NodeFinalizers(std::initializer_list<const char*> nodes) {
  std::vector<std::string> out;
  for (const char* n : nodes) out.push_back(std::string(n) + "/hostpath-provisioner.io");
  return out;
}

// Do all these nodes hold the volume (their directories made)?
bool HeldBy(FakeApi& api, const std::string& pv, std::initializer_list<const char*> nodes) {
  std::vector<std::string> f = Finalizers(api.Volume(pv)), want = NodeFinalizers(nodes);
  std::sort(want.begin(), want.end());
  return std::includes(f.begin(), f.end(), want.begin(), want.end());
}

// Each node registered as its kubelet would, with an instance on the shared PV_DIR.
void RegisterAndStart(Nodes& n, std::initializer_list<const char*> nodes) {
  for (const char* node : nodes) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
}

bool CanShare() {
  if (!Nodes::CanShare())
    WARN("SKIPPED: needs root, to give each instance the same PV_DIR in a mount namespace of its own");
  return Nodes::CanShare();
}

int VolumeCount(FakeApi& api) {
  Reply r = api.Get("/api/v1/persistentvolumes");
  return r.code == 200 ? static_cast<int>(r.json.get("items").get<picojson::array>().size()) : -1;
}

int Warnings(Nodes& n, const std::string& claim) {
  int count = 0;
  for (const auto& e : n.api->EventsAbout("default", claim))
    if (e.get("type").to_str() == "Warning") ++count;
  return count;
}

}  // namespace

TEST_CASE("nodes: all: one PV without node affinity, a directory on every node, joined late too, all removed", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("everywhere", "Delete"));
  RegisterAndStart(n, {"node-a", "node-b", "node-c"});
  n.Claim("shared", "everywhere");
  REQUIRE(n.WaitBound("shared"));
  const std::string pv = n.VolumeOf("shared"), dir = "default-shared-" + pv;
  CHECK(VolumeCount(*n.api) == 1);  // however many instances raced to make it
  picojson::value volume = n.api->Volume(pv);
  CHECK_FALSE(volume.get("spec").get("nodeAffinity").is<picojson::object>());
  CHECK(Annotation(volume, "hostpath-provisioner.io/nodes") == "all");
  CHECK(Annotation(volume, "hostpath-provisioner.io/node").empty());
  CHECK(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b", "node-c"}); }));
  for (const char* node : {"node-a", "node-b", "node-c"}) CHECK(Exists(n.Root(node) + "/" + dir));
  CHECK(Warnings(n, "shared") == 0);

  // A node that joins later gets its directory and holds the volume too.
  n.api->RegisterNode("node-d");
  n.StartShared("node-d");
  REQUIRE(Eventually([&] { return Exists(n.Root("node-d") + "/" + dir); }));
  CHECK(Eventually([&] { return HeldBy(*n.api, pv, {"node-d"}); }));

  // Released with Delete: the PV goes once every node has removed its own directory.
  WriteFile(n.Root("node-b") + "/" + dir + "/from-b.txt", "node-b's copy\n");
  REQUIRE(n.api->Delete("/api/v1/namespaces/default/persistentvolumeclaims/shared").code == 200);
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
  for (const char* node : {"node-a", "node-b", "node-c", "node-d"}) {
    INFO(node);
    CHECK_FALSE(Exists(n.Root(node) + "/" + dir));
    CHECK(Exists(n.Root(node)));
    CHECK_THAT(n.instances[node]->Log(), Catch::Contains("removed " + n.SharedRoot() + "/" + dir + " on node " + node));
  }
  CHECK(n.api->Denials().empty());
}

TEST_CASE("nodes: all with Retain: the PV released and deleted by hand, every directory stays", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("kept", "Retain"));
  RegisterAndStart(n, {"node-a", "node-b"});
  n.Claim("keep", "kept");
  REQUIRE(n.WaitBound("keep"));
  const std::string pv = n.VolumeOf("keep"), dir = "default-keep-" + pv;
  REQUIRE(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b"}); }));
  for (const char* node : {"node-a", "node-b"}) WriteFile(n.Root(node) + "/" + dir + "/data", node);
  REQUIRE(n.api->Delete("/api/v1/namespaces/default/persistentvolumeclaims/keep").code == 200);
  REQUIRE(Eventually([&] { return Phase(n.api->Volume(pv)) == "Released"; }));
  std::this_thread::sleep_for(seconds(1));
  CHECK(n.api->Volume(pv).get("metadata").get("deletionTimestamp").is<picojson::null>());
  REQUIRE(n.api->Delete("/api/v1/persistentvolumes/" + pv).code == 200);
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
  for (const char* node : {"node-a", "node-b"}) CHECK(ReadFile(n.Root(node) + "/" + dir + "/data") == node);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("nodes: all: a node deleted while the volume is being deleted does not hold it", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("everywhere", "Delete"));
  RegisterAndStart(n, {"node-a", "node-b", "node-c"});
  n.Claim("shared", "everywhere");
  REQUIRE(n.WaitBound("shared"));
  const std::string pv = n.VolumeOf("shared"), dir = "default-shared-" + pv;
  REQUIRE(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b", "node-c"}); }));
  // node-c dies (its instance first), then its Node object is deleted during the deletion.
  n.instances["node-c"]->process().Signal(SIGKILL);
  n.instances["node-c"]->process().Wait();
  REQUIRE(n.api->Delete("/api/v1/namespaces/default/persistentvolumeclaims/shared").code == 200);
  REQUIRE(Eventually([&] { return !Exists(n.Root("node-a") + "/" + dir) && !Exists(n.Root("node-b") + "/" + dir); }));
  CHECK(n.api->Volume(pv).is<picojson::object>());  // held by node-c's finalizer meanwhile
  REQUIRE(n.api->Delete("/api/v1/nodes/node-c").code == 200);
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }, seconds(60)));
  CHECK(Exists(n.Root("node-c") + "/" + dir));  // on the gone node's disk, nobody removed it
  CHECK(n.api->Denials().empty());
}

TEST_CASE("nodes: all: an instance killed in the middle of its cleanup finishes it when restarted", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("everywhere", "Delete"));
  RegisterAndStart(n, {"node-a", "node-b"});
  n.Claim("big", "everywhere");
  REQUIRE(n.WaitBound("big"));
  const std::string pv = n.VolumeOf("big"), dir = "default-big-" + pv;
  REQUIRE(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b"}); }));
  // Enough files on node-b that removing them takes a while.
  const std::string b_dir = n.Root("node-b") + "/" + dir;
  for (int i = 0; i < 60000; ++i) WriteFile(b_dir + "/f" + std::to_string(i), "");
  REQUIRE(n.api->Delete("/api/v1/namespaces/default/persistentvolumeclaims/big").code == 200);
  REQUIRE(Eventually([&] { return ListDir(b_dir).size() < 60000; }));
  n.instances["node-b"]->process().Signal(SIGKILL);
  n.instances["node-b"]->process().Wait();
  REQUIRE(Exists(b_dir));  // killed before it was done
  CHECK(n.api->Volume(pv).is<picojson::object>());
  n.StartShared("node-b");
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }, seconds(60)));
  CHECK_FALSE(Exists(b_dir));
  CHECK_FALSE(Exists(n.Root("node-a") + "/" + dir));
  CHECK(n.api->Denials().empty());
}

TEST_CASE("nodes: all needs the DaemonSet: a single instance says so", "[e2e][every]") {
  TempDir tmp;
  FakeApi api(tmp.path() + "/api");
  const std::string pv_dir = tmp.path() + "/pv";
  ::mkdir(pv_dir.c_str(), 0755);
  api.CreateYaml(EveryNodeClass("everywhere", "Delete"));
  Provisioner p(api, pv_dir);
  api.CreateYaml(ClaimYaml("default", "shared", "everywhere"));
  REQUIRE(Eventually([&] {
    for (const auto& e : api.EventsAbout("default", "shared"))
      if (e.get("message").to_str().find("nodes=all needs the provisioner on every node") != std::string::npos) return true;
    return false;
  }));
  CHECK(ListDir(pv_dir).empty());
}

TEST_CASE("nodes: all: with the first node retired, the others expand the claim, then delete the volume", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("everywhere", "Delete") + "allowVolumeExpansion: true\n");
  RegisterAndStart(n, {"node-a", "node-b", "node-c"});
  n.Claim("grows", "everywhere");
  REQUIRE(n.WaitBound("grows"));
  const std::string pv = n.VolumeOf("grows"), dir = "default-grows-" + pv;
  REQUIRE(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b", "node-c"}); }));
  // node-a, first by name, is retired: its instance stopped, its Node object deleted.
  n.instances["node-a"]->process().Signal(SIGTERM);
  n.instances["node-a"]->process().Wait();
  REQUIRE(n.api->Delete("/api/v1/nodes/node-a").code == 200);

  REQUIRE(n.api->Call("PATCH", kClaims + std::string("grows"), R"({"spec":{"resources":{"requests":{"storage":"2Gi"}}}})",
                      "application/merge-patch+json").code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("grows").get("status").get("capacity").get("storage").to_str() == "2Gi"; }));
  CHECK(n.api->Volume(pv).get("spec").get("capacity").get("storage").to_str() == "2Gi");
  CHECK(n.Events("grows", "VolumeResizeSuccessful") == 1);
  CHECK(n.Events("grows", "VolumeResizeFailed") == 0);

  REQUIRE(n.api->Delete(kClaims + std::string("grows")).code == 200);
  CHECK(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }, seconds(60)));
  CHECK_FALSE(Exists(n.Root("node-b") + "/" + dir));
  CHECK_FALSE(Exists(n.Root("node-c") + "/" + dir));
  CHECK(Exists(n.Root("node-a") + "/" + dir));  // on the retired node's disk, nobody removed it
  CHECK(n.api->Denials().empty());
}

TEST_CASE("nodes: all: an instance that cannot hold the volume warns of no missing holder while one lives", "[e2e][every]") {
  Nodes n;
  if (!CanShare()) return;
  n.api->CreateYaml(EveryNodeClass("everywhere", "Delete") + "allowVolumeExpansion: true\n");
  RegisterAndStart(n, {"node-a", "node-b"});
  n.Claim("grows", "everywhere");
  REQUIRE(n.WaitBound("grows"));
  const std::string pv = n.VolumeOf("grows"), dir = "default-grows-" + pv;
  REQUIRE(Eventually([&] { return HeldBy(*n.api, pv, {"node-a", "node-b"}); }));
  // node-c's instance cannot make its directory (a file is in the way): it never holds the
  // volume. One worker: it takes its keys one after the other (see the end).
  n.api->RegisterNode("node-c");
  ::mkdir(n.Root("node-c").c_str(), 0755);
  WriteFile(n.Root("node-c") + "/" + dir, "in the way\n");
  n.StartShared("node-c", {{"WORKERS", "1"}});
  REQUIRE(Eventually([&] { return n.Events(pv, "ProvisioningFailed", "on node node-c") > 0; }));
  REQUIRE(faults::Control(*n.api, "/fake/reset-requests"));

  REQUIRE(n.api->Call("PATCH", kClaims + std::string("grows"), R"({"spec":{"resources":{"requests":{"storage":"2Gi"}}}})",
                      "application/merge-patch+json").code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("grows").get("status").get("capacity").get("storage").to_str() == "2Gi"; }));
  // node-c asks whether a node that holds it exists (only it asks: the holders expand)...
  REQUIRE(Eventually([&] {
    return !faults::Filter(faults::Requests(*n.api), faults::kProvisionerUser, "get", "nodes").empty();
  }));
  // ... then takes its next key: a claim for node-c, whose event comes after any about "grows".
  n.Claim("marker", "hostpath", "hostpath-provisioner.io/node", "node-c");
  REQUIRE(Eventually([&] { return n.Events("marker", "ProvisioningSucceeded") > 0; }));
  INFO(n.instances["node-c"]->Log());
  CHECK(n.Events("grows", "VolumeResizeFailed") == 0);
  CHECK(n.Events("grows", "VolumeResizeSuccessful") >= 1);
  CHECK(n.api->Denials().empty());
}
