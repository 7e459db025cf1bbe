// Tests of the fake API server's storage capacity model: the CSIDriver and CSIStorageCapacity
// kinds (REST, defaults, validation, tables, RBAC) and the scheduler's capacity check for
// WaitForFirstConsumer claims (fake_csi.hpp, fake_scheduler.hpp). A real server on loopback,
// reached over verified HTTPS, as in unit_fake_scheduler.cpp.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test/fake/fake_apiserver.hpp"
#include "test/fake/fake_kubelet.hpp"
#include "test/fake/fake_test_client.hpp"

using namespace fake_test;

namespace {

const std::string kDrivers = "/apis/storage.k8s.io/v1/csidrivers";
const std::string kCapacities = "/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities";
const std::string kAllCapacities = "/apis/storage.k8s.io/v1/csistoragecapacities";
const std::string kNodes = "/api/v1/nodes";
const std::string kPods = "/api/v1/namespaces/default/pods";
const char* kSelectedNode = "volume.kubernetes.io/selected-node";
const char* kMerge = "application/merge-patch+json";

std::string Driver(const std::string& name, const std::string& spec = "{}") {
  return R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":")" + name + R"("},"spec":)" + spec + "}";
}

// A CSIStorageCapacity; `rest` is spliced in after storageClassName (",\"capacity\":\"1Gi\"").
std::string Capacity(const std::string& name, const std::string& cls, const std::string& rest) {
  return R"({"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity","metadata":{"name":")" + name +
         R"("},"storageClassName":")" + cls + "\"" + rest + "}";
}

// nodeTopology selecting one node by its hostname label.
std::string OnNode(const std::string& node) {
  return R"(,"nodeTopology":{"matchLabels":{"kubernetes.io/hostname":")" + node + "\"}}";
}

std::string SizedPvc(const std::string& name, const std::string& size, const std::string& cls = "wffc") {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name +
         R"("},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":")" + size +
         R"("}},"storageClassName":")" + cls + R"("}})";
}

std::vector<std::string> Messages(const Json& status) {
  std::vector<std::string> out;
  if (const Json* causes = fake::Path(status, {"details", "causes"}))
    for (const Json& c : causes->get<fake::JsonArray>()) out.push_back(Str(c, {"field"}) + ": " + Str(c, {"message"}));
  return out;
}

// Two nodes, "a-small" (1Gi free) and "b-big" (100Gi free) as the provisioner
// "hostpath.example.com" publishes them for the WaitForFirstConsumer class "wffc", and its
// CSIDriver with storageCapacity true. Without the capacity check the scheduler takes "a-small",
// the first by name.
struct Cluster {
  explicit Cluster(const std::string& provisioner = "hostpath.example.com") {
    REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses",
                  R"({"metadata":{"name":"wffc"},"provisioner":")" + provisioner + R"(","volumeBindingMode":"WaitForFirstConsumer"})")
                .code == 201);
    for (const char* n : {"a-small", "b-big"}) REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson(n)).code == 201);
    REQUIRE(Admin(s.api, "POST", kDrivers, Driver("hostpath.example.com", R"({"storageCapacity":true})")).code == 201);
    REQUIRE(Admin(s.api, "POST", kCapacities, Capacity("small", "wffc", OnNode("a-small") + R"(,"capacity":"1Gi")")).code == 201);
    REQUIRE(Admin(s.api, "POST", kCapacities, Capacity("big", "wffc", OnNode("b-big") + R"(,"capacity":"100Gi")")).code == 201);
  }
  Json Get(const std::string& path) {
    Reply r = Admin(s.api, "GET", path);
    REQUIRE(r.code == 200);
    return r.body;
  }
  // A claim and a pod that mounts it.
  void Consume(const std::string& claim, const std::string& size) {
    REQUIRE(Admin(s.api, "POST", kPvcs, SizedPvc(claim, size)).code == 201);
    REQUIRE(Admin(s.api, "POST", kPods, PodWithClaims("pod-" + claim, {claim})).code == 201);
  }
  // The claim's selected node once it has one, or "" after 10 s: the scheduler runs after the
  // round of answers, as a real one runs on its own.
  std::string SelectedNode(const std::string& claim) {
    std::string node;
    for (int i = 0; i < 1000 && node.empty(); ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      node = fake::Annotation(Get(kPvcs + "/" + claim), kSelectedNode);
    }
    return node;
  }
  // The pod's PodScheduled condition once it has one ({} after 10 s).
  Json Scheduled(const std::string& pod) {
    for (int i = 0; i < 1000; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const Json p = Get(kPods + "/" + pod);
      if (const Json* conds = fake::Path(p, {"status", "conditions"}))
        for (const Json& c : conds->get<fake::JsonArray>())
          if (Str(c, {"type"}) == "PodScheduled") return c;
    }
    return Json(fake::JsonObject());
  }
  Server s;
};

const std::string kNoRoom = "0/2 nodes are available: 2 node(s) did not have enough free storage.";

}  // namespace

TEST_CASE("CSI kinds: csidrivers (cluster-scoped) and csistoragecapacities (namespaced) have the REST semantics of the others") {
  Server s;
  Reply driver = Admin(s.api, "POST", kDrivers, Driver("hostpath.example.com"));
  REQUIRE(driver.code == 201);
  CHECK(Str(driver.body, {"kind"}) == "CSIDriver");
  CHECK(Str(driver.body, {"apiVersion"}) == "storage.k8s.io/v1");
  CHECK(fake::Path(driver.body, {"metadata", "namespace"}) == nullptr);
  Reply cap = Admin(s.api, "POST", kCapacities, Capacity("c1", "wffc", R"(,"capacity":"1024Mi")"));
  REQUIRE(cap.code == 201);
  CHECK(Str(cap.body, {"kind"}) == "CSIStorageCapacity");
  CHECK(Str(cap.body, {"metadata", "namespace"}) == "kube-system");
  CHECK(Str(cap.body, {"capacity"}) == "1Gi");  // as Quantity.String() writes it

  SECTION("discovery lists both under storage.k8s.io/v1") {
    std::map<std::string, bool> namespaced;
    const Json list = Admin(s.api, "GET", "/apis/storage.k8s.io/v1").body;
    for (const Json& r : list.get("resources").get<fake::JsonArray>())
      namespaced[Str(r, {"name"})] = r.get("namespaced").get<bool>();
    REQUIRE(namespaced.count("csidrivers") == 1);
    REQUIRE(namespaced.count("csistoragecapacities") == 1);
    CHECK_FALSE(namespaced["csidrivers"]);
    CHECK(namespaced["csistoragecapacities"]);
  }
  SECTION("get, list in a namespace and across namespaces, with label selectors") {
    REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
                  R"({"metadata":{"name":"c2","labels":{"node":"n2"}},"storageClassName":"wffc"})").code == 201);
    CHECK(Admin(s.api, "GET", kCapacities + "/c1").code == 200);
    CHECK(Admin(s.api, "GET", kDrivers + "/hostpath.example.com").code == 200);
    CHECK(ItemNames(Admin(s.api, "GET", kCapacities).body) == std::vector<std::string>{"c1"});
    CHECK(ItemNames(Admin(s.api, "GET", kAllCapacities).body) == std::vector<std::string>{"c2", "c1"});  // by namespace/name
    CHECK(ItemNames(Admin(s.api, "GET", kAllCapacities + "?labelSelector=node%3Dn2").body) == std::vector<std::string>{"c2"});
    CHECK(Str(Admin(s.api, "GET", kAllCapacities).body, {"kind"}) == "CSIStorageCapacityList");
    Reply missing = Admin(s.api, "GET", kCapacities + "/nope");
    CHECK(missing.code == 404);
    CHECK(Str(missing.body, {"message"}) == "csistoragecapacities.storage.k8s.io \"nope\" not found");
    CHECK(Admin(s.api, "POST", kDrivers, Driver("hostpath.example.com")).code == 409);
  }
  SECTION("update needs a resourceVersion (AllowUnconditionalUpdate is false); merge patch does not") {
    Json body = cap.body;
    fake::Meta(body).erase("resourceVersion");
    body.get<fake::JsonObject>()["capacity"] = Json("2Gi");
    Reply unconditional = Admin(s.api, "PUT", kCapacities + "/c1", body.serialize());
    CHECK(unconditional.code == 422);
    CHECK(Str(unconditional.body, {"message"}) ==
          "csistoragecapacities.storage.k8s.io \"c1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update");
    Reply updated = Admin(s.api, "PUT", kCapacities + "/c1", [&] {
      Json b = cap.body;
      b.get<fake::JsonObject>()["capacity"] = Json("2Gi");
      return b.serialize();
    }());
    REQUIRE(updated.code == 200);
    CHECK(Str(updated.body, {"capacity"}) == "2Gi");
    Reply patched = Admin(s.api, "PATCH", kCapacities + "/c1", R"({"capacity":"3Gi","maximumVolumeSize":"1Gi"})", kMerge);
    REQUIRE(patched.code == 200);
    CHECK(Str(patched.body, {"capacity"}) == "3Gi");
    CHECK(Str(patched.body, {"maximumVolumeSize"}) == "1Gi");
    Reply unset = Admin(s.api, "PATCH", kCapacities + "/c1", R"({"maximumVolumeSize":null})", kMerge);
    CHECK(fake::Path(unset.body, {"maximumVolumeSize"}) == nullptr);
    Reply bad = Admin(s.api, "PATCH", kCapacities + "/c1", R"({"capacity":"lots"})", kMerge);
    CHECK(bad.code == 422);
  }
  SECTION("a watch sees the changes; delete answers a CSIDriver's object, a capacity's Status") {
    const std::string rv = Str(cap.body, {"metadata", "resourceVersion"});
    REQUIRE(Admin(s.api, "PATCH", kCapacities + "/c1", R"({"capacity":"5Gi"})", kMerge).code == 200);
    Reply del = Admin(s.api, "DELETE", kCapacities + "/c1");
    CHECK(del.code == 200);
    CHECK(Str(del.body, {"kind"}) == "Status");
    auto events = WatchEvents(s.api, kCapacities + "?watch=true&resourceVersion=" + rv, 2);
    REQUIRE(events.size() == 2);
    CHECK(Str(events[0], {"type"}) == "MODIFIED");
    CHECK(Str(events[0], {"object", "capacity"}) == "5Gi");
    CHECK(Str(events[1], {"type"}) == "DELETED");
    Reply gone = Admin(s.api, "DELETE", kDrivers + "/hostpath.example.com");
    CHECK(gone.code == 200);
    CHECK(Str(gone.body, {"kind"}) == "CSIDriver");
    CHECK(Admin(s.api, "GET", kDrivers + "/hostpath.example.com").code == 404);
  }
}

TEST_CASE("CSIDriver: the real defaults and generation; validation; attachRequired and volumeLifecycleModes are immutable") {
  Server s;
  Reply made = Admin(s.api, "POST", kDrivers, Driver("d.example.com", R"({"attachRequired":null})"));
  REQUIRE(made.code == 201);
  const Json spec = made.body.get("spec");
  CHECK(spec.get("attachRequired").get<bool>());
  CHECK_FALSE(spec.get("podInfoOnMount").get<bool>());
  CHECK_FALSE(spec.get("storageCapacity").get<bool>());
  CHECK_FALSE(spec.get("requiresRepublish").get<bool>());
  CHECK_FALSE(spec.get("seLinuxMount").get<bool>());
  CHECK(Str(spec, {"fsGroupPolicy"}) == "ReadWriteOnceWithFSType");
  CHECK(fake::StringList(spec, {"volumeLifecycleModes"}) == std::vector<std::string>{"Persistent"});
  CHECK(made.body.get("metadata").get("generation").get<double>() == 1);

  SECTION("storageCapacity and podInfoOnMount may change, and the generation counts spec changes") {
    Reply on = Admin(s.api, "PATCH", kDrivers + "/d.example.com", R"({"spec":{"storageCapacity":true,"podInfoOnMount":true}})", kMerge);
    REQUIRE(on.code == 200);
    CHECK(on.body.get("spec").get("storageCapacity").get<bool>());
    CHECK(on.body.get("metadata").get("generation").get<double>() == 2);
    Reply labelled = Admin(s.api, "PATCH", kDrivers + "/d.example.com", R"({"metadata":{"labels":{"a":"b"},"generation":9}})", kMerge);
    REQUIRE(labelled.code == 200);
    CHECK(labelled.body.get("metadata").get("generation").get<double>() == 2);  // clients cannot set it
  }
  SECTION("attachRequired and volumeLifecycleModes may not change") {
    Reply attach = Admin(s.api, "PATCH", kDrivers + "/d.example.com", R"({"spec":{"attachRequired":false}})", kMerge);
    CHECK(attach.code == 422);
    CHECK(Str(attach.body, {"message"}) ==
          "CSIDriver.storage.k8s.io \"d.example.com\" is invalid: spec.attachedRequired: Invalid value: false: field is immutable");
    Reply modes = Admin(s.api, "PATCH", kDrivers + "/d.example.com", R"({"spec":{"volumeLifecycleModes":["Persistent","Ephemeral"]}})", kMerge);
    CHECK(modes.code == 422);
    CHECK(Messages(modes.body) == std::vector<std::string>{
                                      "spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{\"Persistent\", "
                                      "\"Ephemeral\"}: field is immutable"});
  }
  SECTION("invalid specs and names are refused") {
    Reply bad = Admin(s.api, "POST", kDrivers,
                      Driver("e.example.com", R"({"volumeLifecycleModes":["Forever"],"fsGroupPolicy":"Sometimes",)"
                                              R"("tokenRequests":[{"audience":"a","expirationSeconds":60},{"audience":"a"}]})"));
    CHECK(bad.code == 422);
    CHECK(Str(bad.body, {"reason"}) == "Invalid");
    CHECK(Messages(bad.body) == std::vector<std::string>{
                                    "spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                                    "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                                    "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                                    "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\""});
    Reply name = Admin(s.api, "POST", kDrivers, Driver("Bad_Driver"));
    CHECK(name.code == 422);
    CHECK(CauseFields(name.body) == std::vector<std::string>{"metadata.name"});
  }
}

TEST_CASE("CSIStorageCapacity: validation as ValidateCSIStorageCapacity; nodeTopology and storageClassName are immutable") {
  Server s;
  struct Case {
    const char* name;
    std::string body;
    std::vector<std::string> messages;
  };
  const std::vector<Case> refused = {
      {"no storageClassName", Capacity("c", "", ""),
       {std::string("storageClassName: Invalid value: \"\": ") + fake::names_detail::kSubdomainMsg}},
      {"a negative capacity", Capacity("c", "wffc", R"(,"capacity":"-1Gi")"),
       {"capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"}},
      {"an unknown operator", Capacity("c", "wffc", R"(,"nodeTopology":{"matchExpressions":[{"key":"k","operator":"Near"}]})"),
       {"nodeTopology.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"}},
      {"In without values", Capacity("c", "wffc", R"(,"nodeTopology":{"matchExpressions":[{"key":"k","operator":"In"}]})"),
       {"nodeTopology.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
      {"Exists with values", Capacity("c", "wffc", R"(,"nodeTopology":{"matchExpressions":[{"key":"k","operator":"Exists","values":["v"]}]})"),
       {"nodeTopology.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
      {"a bad label key", Capacity("c", "wffc", R"(,"nodeTopology":{"matchLabels":{"a/b/c":"v"}})"),
       {"nodeTopology.matchLabels: Invalid value: \"a/b/c\": " + fake::QualifiedNameErrors("a/b/c")[0]}},
      {"a bad name", Capacity("C_1", "wffc", ""),
       {std::string("metadata.name: Invalid value: \"C_1\": ") + fake::names_detail::kSubdomainMsg}},
  };
  for (const Case& c : refused) {
    SECTION(c.name) {
      Reply r = Admin(s.api, "POST", kCapacities, c.body);
      CHECK(r.code == 422);
      CHECK(Str(r.body, {"reason"}) == "Invalid");
      CHECK(Messages(r.body) == c.messages);
    }
  }
  SECTION("accepted: no nodeTopology, no capacity, a negative maximumVolumeSize (not validated)") {
    CHECK(Admin(s.api, "POST", kCapacities, Capacity("c", "wffc", "")).code == 201);
    CHECK(Admin(s.api, "POST", kCapacities, Capacity("m", "wffc", R"(,"maximumVolumeSize":"-1")")).code == 201);
  }
  SECTION("a capacity that is not a quantity is a bad request") {
    Reply r = Admin(s.api, "POST", kCapacities, Capacity("c", "wffc", R"(,"capacity":"1Gb")"));
    CHECK(r.code == 400);
    CHECK(Str(r.body, {"message"}) ==
          "CSIStorageCapacity in version \"v1\" cannot be handled as a CSIStorageCapacity: quantities must match the "
          "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  }
  SECTION("nodeTopology and storageClassName may not change; capacity may") {
    REQUIRE(Admin(s.api, "POST", kCapacities, Capacity("c", "wffc", OnNode("n1") + R"(,"capacity":"1Gi")")).code == 201);
    CHECK(Admin(s.api, "PATCH", kCapacities + "/c", R"({"capacity":"0"})", kMerge).code == 200);
    Reply cls = Admin(s.api, "PATCH", kCapacities + "/c", R"({"storageClassName":"other"})", kMerge);
    CHECK(cls.code == 422);
    CHECK(Messages(cls.body) == std::vector<std::string>{"storageClassName: Invalid value: \"other\": field is immutable"});
    Reply topo = Admin(s.api, "PATCH", kCapacities + "/c", R"({"nodeTopology":{"matchLabels":{"kubernetes.io/hostname":"n2"}}})", kMerge);
    CHECK(topo.code == 422);
    CHECK(Messages(topo.body) == std::vector<std::string>{
                                     "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"kubernetes.io/hostname\":\"n2\"}, "
                                     "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"});
  }
}

TEST_CASE("CSI kinds: kubectl's tables (printCSIDriver; the default convertor for capacities)") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kDrivers, Driver("d.example.com", R"({"storageCapacity":true,"tokenRequests":[{"audience":"x"},{"audience":"y"}]})")).code == 201);
  REQUIRE(Admin(s.api, "POST", kCapacities, Capacity("c", "wffc", R"(,"capacity":"1Gi")")).code == 201);
  Reply drivers = TableCall(s.api, kDrivers);
  REQUIRE(drivers.code == 200);
  std::vector<std::string> names, types;
  for (const Json& c : drivers.body.get("columnDefinitions").get<fake::JsonArray>()) {
    names.push_back(Str(c, {"name"}));
    types.push_back(Str(c, {"type"}));
  }
  CHECK(names == std::vector<std::string>{"Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests",
                                          "RequiresRepublish", "Modes", "Age"});
  CHECK(types == std::vector<std::string>{"string", "boolean", "boolean", "boolean", "string", "boolean", "string", "string"});
  const Json cells = drivers.body.get("rows").get(0).get("cells");
  CHECK(Str(cells.get(0), {}) == "d.example.com");
  CHECK(cells.get(1).get<bool>());
  CHECK_FALSE(cells.get(2).get<bool>());
  CHECK(cells.get(3).get<bool>());
  CHECK(Str(cells.get(4), {}) == "x,y");
  CHECK(Str(cells.get(6), {}) == "Persistent");

  Reply caps = TableCall(s.api, kCapacities);
  REQUIRE(caps.code == 200);
  names.clear();
  for (const Json& c : caps.body.get("columnDefinitions").get<fake::JsonArray>()) names.push_back(Str(c, {"name"}) + ":" + Str(c, {"type"}));
  CHECK(names == std::vector<std::string>{"Name:string", "Created At:date"});
  const Json row = caps.body.get("rows").get(0).get("cells");
  CHECK(Str(row.get(0), {}) == "c");
  CHECK(Str(row.get(1), {}) == Str(Admin(s.api, "GET", kCapacities + "/c").body, {"metadata", "creationTimestamp"}));

  SECTION("as kubectl prints them") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& line : Kubectl(s.api, "get csistoragecapacities -A")) rows.push_back(Fields(line));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0] == std::vector<std::string>{"NAMESPACE", "NAME", "CREATED AT"});
    CHECK(rows[1][0] == "kube-system");
    CHECK(rows[1][1] == "c");
    rows.clear();
    for (const auto& line : Kubectl(s.api, "get csidrivers")) rows.push_back(Fields(line));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0] == std::vector<std::string>{"NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
                                              "REQUIRESREPUBLISH", "MODES", "AGE"});
    rows[1].pop_back();  // the age
    CHECK(rows[1] == std::vector<std::string>{"d.example.com", "true", "false", "true", "x,y", "false", "Persistent"});
  }
}

TEST_CASE("CSI kinds: RBAC grants csidrivers at the cluster scope and csistoragecapacities per namespace") {
  RbacDir rbac(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: drivers}
rules:
- apiGroups: ["storage.k8s.io"]
  resources: ["csidrivers"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: drivers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: drivers}
subjects:
- {kind: ServiceAccount, name: hostpath-provisioner, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: capacities, namespace: kube-system}
rules:
- apiGroups: ["storage.k8s.io"]
  resources: ["csistoragecapacities"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: capacities, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: capacities}
subjects:
- {kind: ServiceAccount, name: hostpath-provisioner, namespace: kube-system}
)");  // removed after the server below
  Server s(rbac.Options());
  const std::string sa = s.api.sa_token();
  CHECK(Call(s.api, sa, "GET", kDrivers).code == 200);
  CHECK(Call(s.api, sa, "POST", kDrivers, Driver("d.example.com")).code == 403);
  CHECK(Call(s.api, sa, "POST", kCapacities, Capacity("c", "wffc", "")).code == 201);
  CHECK(Call(s.api, sa, "PATCH", kCapacities + "/c", R"({"capacity":"1Gi"})", kMerge).code == 200);
  CHECK(Call(s.api, sa, "GET", kAllCapacities).code == 403);  // a Role grants nothing across namespaces
  Reply elsewhere = Call(s.api, sa, "POST", "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities", Capacity("c", "wffc", ""));
  CHECK(elsewhere.code == 403);
  CHECK(Str(elsewhere.body, {"message"}) ==
        "csistoragecapacities.storage.k8s.io is forbidden: User \"system:serviceaccount:kube-system:hostpath-provisioner\" "
        "cannot create resource \"csistoragecapacities\" in API group \"storage.k8s.io\" in the namespace \"default\"");
}

TEST_CASE("scheduler: a WaitForFirstConsumer claim goes only to a node with a CSIStorageCapacity large enough") {
  Cluster c;
  SECTION("10Gi fits only the 100Gi node") {
    c.Consume("data", "10Gi");
    CHECK(c.SelectedNode("data") == "b-big");
  }
  SECTION("512Mi fits either") {
    c.Consume("data", "512Mi");
    const std::string node = c.SelectedNode("data");
    CHECK((node == "a-small" || node == "b-big"));
  }
  SECTION("exactly the capacity fits (capacity >= request)") {
    c.Consume("data", "1Gi");
    CHECK(c.SelectedNode("data") == "a-small");
  }
  SECTION("500Gi fits nowhere: the pod stays Pending; more capacity published later places it") {
    c.Consume("data", "500Gi");
    const Json cond = c.Scheduled("pod-data");
    CHECK(Str(cond, {"status"}) == "False");
    CHECK(Str(cond, {"reason"}) == "Unschedulable");
    CHECK(Str(cond, {"message"}) == kNoRoom);
    CHECK(fake::Annotation(c.Get(kPvcs + "/data"), kSelectedNode).empty());
    CHECK(Str(c.Get(kPods + "/pod-data"), {"spec", "nodeName"}).empty());
    REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/big", R"({"capacity":"1Ti"})", kMerge).code == 200);
    CHECK(c.SelectedNode("data") == "b-big");
  }
  SECTION("a capacity added later (in another namespace) places a pending pod too") {
    c.Consume("data", "500Gi");
    REQUIRE(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
    REQUIRE(Admin(c.s.api, "POST", "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
                  Capacity("more", "wffc", OnNode("a-small") + R"(,"capacity":"600Gi")")).code == 201);
    CHECK(c.SelectedNode("data") == "a-small");
  }
}

TEST_CASE("scheduler: maximumVolumeSize takes the place of capacity when set") {
  Cluster c;
  REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/big", R"({"maximumVolumeSize":"5Gi"})", kMerge).code == 200);
  REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/small", R"({"maximumVolumeSize":"20Gi"})", kMerge).code == 200);
  SECTION("a larger maximumVolumeSize than capacity counts") {
    c.Consume("data", "10Gi");
    CHECK(c.SelectedNode("data") == "a-small");
  }
  SECTION("a smaller one refuses what capacity would allow") {
    c.Consume("data", "50Gi");
    CHECK(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
  }
  SECTION("neither set: no room") {
    REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/small", R"({"capacity":null,"maximumVolumeSize":null})", kMerge).code == 200);
    REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/big", R"({"capacity":null,"maximumVolumeSize":null})", kMerge).code == 200);
    c.Consume("data", "1Mi");
    CHECK(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
  }
}

TEST_CASE("scheduler: a capacity counts only on the nodes its nodeTopology selects, and only for its class") {
  Cluster c;
  REQUIRE(Admin(c.s.api, "DELETE", kCapacities + "/big").code == 200);
  SECTION("a selector of another node: no room on b-big") {
    REQUIRE(Admin(c.s.api, "POST", kCapacities, Capacity("elsewhere", "wffc", OnNode("c-gone") + R"(,"capacity":"1Ti")")).code == 201);
    c.Consume("data", "10Gi");
    CHECK(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
  }
  SECTION("no nodeTopology: no node") {
    REQUIRE(Admin(c.s.api, "POST", kCapacities, Capacity("nowhere", "wffc", R"(,"capacity":"1Ti")")).code == 201);
    c.Consume("data", "10Gi");
    CHECK(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
  }
  SECTION("an empty nodeTopology: every node") {
    REQUIRE(Admin(c.s.api, "POST", kCapacities, Capacity("everywhere", "wffc", R"(,"nodeTopology":{},"capacity":"1Ti")")).code == 201);
    c.Consume("data", "10Gi");
    CHECK(c.SelectedNode("data") == "a-small");
  }
  SECTION("matchExpressions select too") {
    REQUIRE(Admin(c.s.api, "POST", kCapacities,
                  Capacity("expr", "wffc", R"(,"nodeTopology":{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":["a-small"]}]},"capacity":"1Ti")"))
                .code == 201);
    c.Consume("data", "10Gi");
    CHECK(c.SelectedNode("data") == "b-big");
  }
  SECTION("a capacity of another class does not count") {
    REQUIRE(Admin(c.s.api, "POST", kCapacities, Capacity("other", "other-class", OnNode("b-big") + R"(,"capacity":"1Ti")")).code == 201);
    c.Consume("data", "10Gi");
    CHECK(Str(c.Scheduled("pod-data"), {"message"}) == kNoRoom);
  }
}

TEST_CASE("scheduler: without a CSIDriver that opts in, capacity is not checked") {
  SECTION("storageCapacity false; set true again, a pending pod is tried again") {
    Cluster c;
    REQUIRE(Admin(c.s.api, "PATCH", kDrivers + "/hostpath.example.com", R"({"spec":{"storageCapacity":false}})", kMerge).code == 200);
    c.Consume("data", "500Gi");
    CHECK(c.SelectedNode("data") == "a-small");  // the first by name, as without capacities
    REQUIRE(Admin(c.s.api, "PATCH", kDrivers + "/hostpath.example.com", R"({"spec":{"storageCapacity":true}})", kMerge).code == 200);
    c.Consume("more", "500Gi");
    CHECK(Str(c.Scheduled("pod-more"), {"message"}) == kNoRoom);
    REQUIRE(Admin(c.s.api, "PATCH", kDrivers + "/hostpath.example.com", R"({"spec":{"storageCapacity":false}})", kMerge).code == 200);
    CHECK(c.SelectedNode("more") == "a-small");  // the CSIDriver's update woke the scheduler
  }
  SECTION("no CSIDriver of the provisioner's name") {
    Cluster c;
    REQUIRE(Admin(c.s.api, "DELETE", kDrivers + "/hostpath.example.com").code == 200);
    c.Consume("data", "500Gi");
    CHECK(c.SelectedNode("data") == "a-small");
  }
  SECTION("a provisioner name with a slash can have no CSIDriver (names are DNS subdomains): never checked") {
    Cluster c("hostpath-provisioner.io/hostpath");
    Reply named = Admin(c.s.api, "POST", kDrivers, Driver("hostpath-provisioner.io/hostpath", R"({"storageCapacity":true})"));
    CHECK(named.code == 422);
    CHECK(CauseFields(named.body) == std::vector<std::string>{"metadata.name"});
    c.Consume("data", "500Gi");
    CHECK(c.SelectedNode("data") == "a-small");
  }
}

TEST_CASE("scheduler: a pod waiting for its claim on the chosen node is not sent back when that node's capacity drops") {
  Cluster c;
  c.Consume("data", "10Gi");
  REQUIRE(c.SelectedNode("data") == "b-big");
  // The provisioner made the volume and publishes what is left before its PV is bound.
  REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/big", R"({"capacity":"0"})", kMerge).code == 200);
  REQUIRE(Admin(c.s.api, "PATCH", kCapacities + "/small", R"({"capacity":"2Gi"})", kMerge).code == 200);
  CHECK(fake::Annotation(c.Get(kPvcs + "/data"), kSelectedNode) == "b-big");
  const Json waiting = c.Get(kPods + "/pod-data");
  CHECK(fake::Path(waiting, {"status", "conditions"}) == nullptr);  // still waiting, no Unschedulable
  SECTION("a second pod of the claim is scheduled afresh: the claim's node has no room now") {
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("second", {"data"})).code == 201);
    CHECK(Str(c.Scheduled("second"), {"message"}) ==
          "0/2 nodes are available: 1 node(s) did not have enough free storage, 1 node(s) didn't find available persistent volumes to bind.");
  }
}
