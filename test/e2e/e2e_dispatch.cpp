// Node-aware mode at scale (decide/node_labels.hpp): each instance watches only its own node's
// claims and PVs; one instance, elected with a Lease, labels the claims with their nodes; PVs
// made before the label get it from their node's instance at start. These are a large
// cluster's behaviours: every instance gets SMALL_CLUSTER_NODES=0 (kLarge), so that it watches
// its own node's claims however few nodes the fake has (e2e_small_cluster.cpp has the others).
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test/support/fault_harness.hpp"
#include "test/support/nodes_harness.hpp"

using namespace harness;

namespace {

const std::map<std::string, std::string> kLarge = {{"SMALL_CLUSTER_NODES", "0"}};

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

// How many times `part` is in `text`.
int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// Sets the claim's node label as a tenant with kubectl edit would: GET, then PUT (an update,
// not a patch), again on a conflict.
void Relabel(FakeApi& api, const std::string& claim, const std::string& value) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    picojson::value c = api.Claim("default", claim);
    REQUIRE(c.is<picojson::object>());
    picojson::object& meta = c.get<picojson::object>()["metadata"].get<picojson::object>();
    if (!meta["labels"].is<picojson::object>()) meta["labels"] = picojson::value(picojson::object());
    meta["labels"].get<picojson::object>()["hostpath-provisioner.io/node"] = picojson::value(value);
    Reply r = api.Call("PUT", kClaims + claim, c.serialize());
    if (r.code == 200) return;
    REQUIRE(r.code == 409);
  }
  FAIL("the claim kept changing");
}

}  // namespace

TEST_CASE("node-aware: claims and PVs carry their node's label; each instance caches only its own node's", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.env = kLarge;
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
  n.env = kLarge;
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
  n.env = kLarge;
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
  n.env = kLarge;
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

TEST_CASE("an image-only upgrade keeps the older RBAC (no Role for the dispatch Lease): claims are still made and expanded, and /readyz, /metrics and one log line say why", "[e2e][nodes][dispatch]") {
  TempDir rbac;
  Nodes n({}, RbacWithout(rbac.path(), "role"));
  n.env = kLarge;
  n.api->CreateYaml(ClassYaml("grow", "Delete") + "allowVolumeExpansion: true\n");
  n.api->CreateYaml(WffcClassYaml("wait"));
  // The older DaemonSet's env too: no storage capacity (that RBAC has no Role for it either).
  n.Start("node-a", {{"CAPACITY_PROVISIONER_NAME", ""}});
  n.Start("node-b", {{"CAPACITY_PROVISIONER_NAME", ""}});
  std::string yaml = ClaimYaml("default", "on-b", "grow", "1Mi");
  yaml.replace(yaml.find("\n  namespace:"), 0, "\n  annotations:\n    hostpath-provisioner.io/node: node-b");
  n.api->CreateYaml(yaml);
  n.Claim("later", "wait");
  n.SelectNode("later", "node-a");
  REQUIRE(n.WaitBound("on-b"));
  REQUIRE(n.WaitBound("later"));
  const std::string pv = n.VolumeOf("on-b");
  CHECK(AffinityNode(n.api->Volume(pv)) == "node-b");
  CHECK(Exists(n.Root("node-b") + "/default-on-b-" + pv));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("later"))) == "node-a");
  // No instance labels claims: the one asking for more (no node label, as every claim bound
  // before the upgrade) is expanded by its own node's instance all the same.
  CHECK(Label(n.ClaimJson("on-b")).empty());
  Reply more = n.api->Call("PATCH", kClaims + std::string("on-b"), R"({"spec":{"resources":{"requests":{"storage":"2Mi"}}}})",
                           "application/merge-patch+json");
  REQUIRE(more.code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("on-b").get("status").get("capacity").get("storage").to_str() == "2Mi"; }));
  CHECK(Dispatcher(n).empty());
  for (const char* node : {"node-a", "node-b"}) {
    INFO(node);
    Provisioner& p = *n.instances[node];
    Reply ready = p.Http("/readyz");
    CHECK(ready.code == 200);
    CHECK_THAT(ready.body, Catch::Contains("degraded: watching every claim") &&
                               Catch::Contains("may not get the Lease kube-system/hostpath-provisioner.io-hostpath-dispatch"));
    CHECK(Metric(p, "hostpath_provisioner_dispatch_fallback") == 1);
    // One Warning, naming the permission, the manifest to apply and the restart.
    CHECK(Count(p.Log(), "node-aware mode without its RBAC") == 1);
    CHECK_THAT(p.Log(), Catch::Contains("cannot get resource \"leases\" in API group \"coordination.k8s.io\"") &&
                            Catch::Contains("manifests/daemonset/rbac.yaml") &&
                            Catch::Contains("kubectl -n kube-system rollout restart daemonset hostpath-provisioner"));
    CHECK(Metric(p, "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") == 2);  // every claim
  }
  // The refusals: the Lease's read, once per instance at start (no retries every few seconds).
  std::vector<picojson::value> denials = n.api->Denials();
  CHECK(denials.size() == 2);
  for (const auto& d : denials) CHECK(d.get("resource").to_str() == "leases");
}

TEST_CASE("an RBAC without the claims' patch: the instances watch every claim, and claims are made", "[e2e][nodes][dispatch]") {
  TempDir rbac;
  Nodes n({}, RbacWithout(rbac.path(), "claim patch"));
  n.env = kLarge;
  n.Start("node-a");
  n.Start("node-b");
  n.Claim("on-a", "hostpath", "hostpath-provisioner.io/node", "node-a");
  n.Claim("on-b", "hostpath", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(n.WaitBound("on-a"));
  REQUIRE(n.WaitBound("on-b"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("on-a"))) == "node-a");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("on-b"))) == "node-b");
  for (const char* node : {"node-a", "node-b"}) {
    INFO(node);
    Provisioner& p = *n.instances[node];
    CHECK_THAT(p.Http("/readyz").body, Catch::Contains("may not patch PersistentVolumeClaims"));
    CHECK(Metric(p, "hostpath_provisioner_dispatch_fallback") == 1);
    CHECK(Count(p.Log(), "node-aware mode without its RBAC") == 1);
    CHECK_THAT(p.Log(), Catch::Contains("cannot patch resource \"persistentvolumeclaims\""));
  }
  CHECK(Dispatcher(n).empty());
}

TEST_CASE("a tenant's label on a WaitForFirstConsumer claim that names no node yet is taken off; once placed, the claim is labelled and made", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.env = kLarge;
  n.api->CreateYaml(WffcClassYaml("wait"));
  n.Start("node-a");
  n.Start("node-b");
  for (const char* value : {"any", "node-a"}) {
    std::string yaml = ClaimYaml("default", std::string("unplaced-") + value, "wait");
    yaml.replace(yaml.find("\n  namespace:"), 0, std::string("\n  labels:\n    hostpath-provisioner.io/node: ") + value);
    n.api->CreateYaml(yaml);
  }
  CHECK(Eventually([&] { return Label(n.ClaimJson("unplaced-any")).empty() && Label(n.ClaimJson("unplaced-node-a")).empty(); }));
  // No instance caches them, so none wakes on their changes.
  for (const char* node : {"node-a", "node-b"}) {
    INFO(node);
    CHECK(Eventually([&] {
      return Metric(*n.instances[node], "hostpath_provisioner_cached_objects", "kind=\"PersistentVolumeClaim\"") == 0;
    }));
  }
  n.SelectNode("unplaced-any", "node-b");
  REQUIRE(n.WaitBound("unplaced-any"));
  CHECK(Label(n.ClaimJson("unplaced-any")) == "node-b");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("unplaced-any"))) == "node-b");
  CHECK(n.api->Denials().empty());
}

TEST_CASE("a label changed right after the dispatcher's own is put right", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.env = kLarge;
  n.Start("node-a");
  n.Claim("fought", "hostpath", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("fought"));
  REQUIRE(Eventually([&] { return Label(n.ClaimJson("fought")) == "node-a"; }));
  // The dispatcher's labels of the claim the server has carried out.
  auto labels_made = [&] {
    int made = 0;
    for (const faults::Request& r : faults::Requests(*n.api))
      made += r.user == faults::kProvisionerUser && r.verb == "patch" && r.name == "fought" && r.code == 200;
    return made;
  };
  const int made_before = labels_made();
  // A tenant labels it for node-b; the dispatcher's label back is held by the server for 4 s.
  REQUIRE(faults::Inject(*n.api, {"patch", "persistentvolumeclaims", 0, 1, 0, 4000}));
  Relabel(*n.api, "fought", "node-b");
  std::this_thread::sleep_for(std::chrono::seconds(2));  // (the dispatcher has sent its label by now)
  // The server now sends no event (and answers no new request) until told: the held label is
  // carried out and answered, the tenant labels the claim again right after it, and the
  // dispatcher's watch ends and must list again (the history is compacted): it never sees its
  // own label, only the tenant's.
  picojson::value tenants = n.ClaimJson("fought");
  picojson::object& meta = tenants.get<picojson::object>()["metadata"].get<picojson::object>();
  meta.erase("resourceVersion");
  meta["labels"].get<picojson::object>()["hostpath-provisioner.io/node"] = picojson::value("node-b");
  REQUIRE(n.api->Call("POST", "/fake/pause?seconds=20").code == 200);
  const bool carried_out = Eventually([&] { return labels_made() > made_before; });
  if (carried_out) {
    picojson::object put;
    put["method"] = picojson::value("PUT");
    put["path"] = picojson::value(kClaims + std::string("fought"));
    put["body"] = picojson::value(tenants.serialize());
    picojson::object batch;
    batch["requests"] = picojson::value(picojson::array{picojson::value(put)});
    Reply r = n.api->Call("POST", "/fake/batch", picojson::value(batch).serialize());
    CHECK(r.body.find("\"code\":200") != std::string::npos);
    CHECK(faults::Control(*n.api, "/fake/drop-watches"));
    CHECK(faults::Control(*n.api, "/fake/compact"));
  }
  REQUIRE(n.api->Call("POST", "/fake/pause?seconds=0").code == 200);
  REQUIRE(carried_out);
  CHECK(Eventually([&] { return Label(n.ClaimJson("fought")) == "node-a"; }));
}

TEST_CASE("the installs' Roles grant their own Leases only: a replica refused its Lease (another PROVISIONER_NAME) is not ready and says why once", "[e2e][dispatch]") {
  TempDir tmp;
  FakeApi api(tmp.path() + "/api");  // manifests/rbac.yaml, the Deployment's
  ::mkdir((tmp.path() + "/pv").c_str(), 0755);
  Provisioner p(api, tmp.path() + "/pv",
                {{"LEADER_ELECT", "true"}, {"LEADER_ELECT_NAMESPACE", "kube-system"}, {"PROVISIONER_NAME", "example.com/renamed"}});
  REQUIRE(Eventually([&] { return p.Log().find("waiting for lease kube-system/example.com-renamed") != std::string::npos; }));
  Reply ready;
  CHECK(Eventually([&] { return (ready = p.Http("/readyz")).code == 503; }));
  CHECK_THAT(ready.body, Catch::StartsWith("may not take the lease: ") &&
                             Catch::Contains("cannot get resource \"leases\" in API group \"coordination.k8s.io\""));
  std::this_thread::sleep_for(std::chrono::seconds(6));  // more than a retry period: it keeps trying, silently
  CHECK(Count(p.Log(), "waiting for lease") == 1);
  CHECK_THAT(p.Log(), Catch::Contains("its Role is missing or names another Lease"));
  // The only refusals: reads of that Lease (the Role names the install's own).
  for (const auto& d : api.Denials()) {
    CHECK(d.get("verb").to_str() == "get");
    CHECK(d.get("name").to_str() == "example.com-renamed");
  }
}

TEST_CASE("the dispatcher refused its labels after the start (403): /readyz fails with the reason, one Warning; the claim is labelled once allowed again", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.env = kLarge;
  n.Start("node-a");
  Provisioner& p = *n.instances["node-a"];
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200 && Dispatcher(n) == "node-a"; }));
  // As if the claims' patch were taken out of the ClusterRole while it runs.
  REQUIRE(faults::Inject(*n.api, {"patch", "persistentvolumeclaims", 403, 1000, 0, 0}));
  n.Claim("refused", "hostpath", "hostpath-provisioner.io/node", "node-a");
  Reply ready;
  REQUIRE(Eventually([&] { return (ready = p.Http("/readyz")).code == 503; }));
  CHECK_THAT(ready.body, Catch::StartsWith("may not label claims: label PersistentVolumeClaim default/refused"));
  CHECK(Eventually([&] { return Count(p.Log(), "dispatching claim default/refused") == 0 && p.Log().find("claims wait") != std::string::npos; }));
  CHECK(Phase(n.ClaimJson("refused")) == "Pending");
  REQUIRE(faults::Control(*n.api, "/fake/clear-faults"));
  REQUIRE(n.WaitBound("refused"));  // the retries go on, with backoff
  CHECK(Eventually([&] { return p.Http("/readyz").code == 200; }));
  CHECK(Count(p.Log(), "claims wait: this instance holds the dispatch Lease but may not label claims") == 1);
}

TEST_CASE("a claim bound before the dispatcher (no node label) gets its label, and its expansion is done by its node", "[e2e][nodes][dispatch]") {
  Nodes n;
  n.env = kLarge;
  n.api->CreateYaml(ClassYaml("grow", "Delete") + "allowVolumeExpansion: true\n");
  // As an older node-aware version left them: the PV and its bound claim, neither labelled.
  const std::string dir = n.Root("node-b") + "/default-old-bound-pvc-old";
  ::mkdir(n.Root("node-b").c_str(), 0755);
  ::mkdir(dir.c_str(), 0777);
  std::string pv = OldVolumeYaml("pvc-old", "node-b", dir);
  pv.replace(pv.find("storage: 1Gi"), 12, "storage: 1Mi");
  pv.replace(pv.find("storageClassName: hostpath"), 26, "storageClassName: grow");
  pv.replace(pv.find("  hostPath:"), 0, "  claimRef:\n    namespace: default\n    name: old-bound\n");
  n.api->CreateYaml(pv);
  std::string claim = ClaimYaml("default", "old-bound", "grow", "1Mi");
  claim.replace(claim.find("\n  namespace:"), 0,
                "\n  annotations:\n    hostpath-provisioner.io/node: node-b\n"
                "    volume.kubernetes.io/storage-provisioner: hostpath-provisioner.io/hostpath");
  claim.replace(claim.find("spec:\n") + 6, 0, "  volumeName: pvc-old\n");
  n.api->CreateYaml(claim);
  REQUIRE(n.WaitBound("old-bound"));
  REQUIRE(Label(n.ClaimJson("old-bound")).empty());
  n.Start("node-a");
  n.Start("node-b");
  CHECK(Eventually([&] { return Label(n.ClaimJson("old-bound")) == "node-b"; }));
  CHECK(Eventually([&] { return Label(n.api->Volume("pvc-old")) == "node-b"; }));
  Reply more = n.api->Call("PATCH", kClaims + std::string("old-bound"),
                           R"({"spec":{"resources":{"requests":{"storage":"2Mi"}}}})", "application/merge-patch+json");
  REQUIRE(more.code == 200);
  CHECK(Eventually([&] { return n.ClaimJson("old-bound").get("status").get("capacity").get("storage").to_str() == "2Mi"; }));
  CHECK(n.api->Denials().empty());
}
