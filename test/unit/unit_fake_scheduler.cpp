// Tests of the fake API server's multi-node model: nodes, pods, local volumes with node
// affinity, the scheduler's part of volume binding, and pvc-protection waiting for pods. A real
// server on loopback, reached over verified HTTPS, as in unit_fake_apiserver.cpp.
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

const std::string kNodes = "/api/v1/nodes";
const std::string kPods = "/api/v1/namespaces/default/pods";

}  // namespace

TEST_CASE("nodes: a cluster-scoped resource with the REST semantics of the others") {
  Server s;
  Reply bare = Admin(s.api, "POST", kNodes, R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}})");
  REQUIRE(bare.code == 201);
  CHECK(Str(bare.body, {"kind"}) == "Node");
  CHECK(fake::Path(bare.body, {"metadata", "labels"}) == nullptr);  // nothing a kubelet would add
  CHECK(fake::Path(bare.body, {"metadata", "namespace"}) == nullptr);
  CHECK(!Str(bare.body, {"metadata", "uid"}).empty());

  Reply registered = Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("n2", {{"zone", "a"}}));
  REQUIRE(registered.code == 201);
  CHECK(Str(registered.body, {"metadata", "labels", "kubernetes.io/hostname"}) == "n2");
  CHECK(Str(registered.body, {"metadata", "labels", "kubernetes.io/os"}) == "linux");
  // Nodes keep the status they are created with (nodeStrategy.PrepareForCreate).
  REQUIRE(fake::Path(registered.body, {"status", "conditions"}) != nullptr);
  CHECK(Str(registered.body.get("status").get("conditions").get(0), {"status"}) == "True");

  SECTION("get, list with label selectors, create twice") {
    CHECK(Admin(s.api, "GET", kNodes + "/n2").code == 200);
    CHECK(ItemNames(Admin(s.api, "GET", kNodes).body) == std::vector<std::string>{"n1", "n2"});
    CHECK(ItemNames(Admin(s.api, "GET", kNodes + "?labelSelector=zone%3Da").body) == std::vector<std::string>{"n2"});
    CHECK(ItemNames(Admin(s.api, "GET", kNodes + "?labelSelector=!zone").body) == std::vector<std::string>{"n1"});
    CHECK(Str(Admin(s.api, "GET", kNodes).body, {"kind"}) == "NodeList");
    Reply again = Admin(s.api, "POST", kNodes, R"({"metadata":{"name":"n1"}})");
    CHECK(again.code == 409);
    CHECK(Str(again.body, {"message"}) == "nodes \"n1\" already exists");
    Reply missing = Admin(s.api, "GET", kNodes + "/n9");
    CHECK(missing.code == 404);
    CHECK(Str(missing.body, {"message"}) == "nodes \"n9\" not found");
  }
  SECTION("names are DNS subdomains of at most 253 characters") {
    Reply bad = Admin(s.api, "POST", kNodes, R"({"metadata":{"name":"Node_1"}})");
    CHECK(bad.code == 422);
    CHECK(Str(bad.body, {"reason"}) == "Invalid");
    CHECK(CauseFields(bad.body) == std::vector<std::string>{"metadata.name"});
    CHECK(Str(bad.body, {"message"}).rfind("Node \"Node_1\" is invalid: metadata.name: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain", 0) == 0);
    const std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(61, 'd');
    REQUIRE(longest.size() == 253);
    CHECK(Admin(s.api, "POST", kNodes, R"({"metadata":{"name":")" + longest + "\"}}").code == 201);
    Reply too_long = Admin(s.api, "POST", kNodes, R"({"metadata":{"name":")" + longest + "e\"}}");
    CHECK(too_long.code == 422);
    CHECK(Str(too_long.body, {"message"}).find("must be no more than 253 characters") != std::string::npos);
  }
  SECTION("update and patch change the spec and labels, not the status; /status changes the status") {
    Json node = Admin(s.api, "GET", kNodes + "/n2").body;
    const std::string rv = Str(node, {"metadata", "resourceVersion"});
    node.get<fake::JsonObject>()["spec"] = fake::ParseJson(R"({"unschedulable":true})").value();
    node.get<fake::JsonObject>()["status"] = fake::ParseJson(R"({"conditions":[]})").value();
    Reply updated = Admin(s.api, "PUT", kNodes + "/n2", node.serialize());
    REQUIRE(updated.code == 200);
    CHECK(Str(updated.body, {"metadata", "resourceVersion"}) != rv);
    CHECK(updated.body.get("spec").get("unschedulable").get<bool>());
    CHECK(updated.body.get("status").get("conditions").get<fake::JsonArray>().size() == 1);  // ignored
    Reply stale = Admin(s.api, "PUT", kNodes + "/n2", node.serialize());  // the old resourceVersion
    CHECK(stale.code == 409);

    Reply patched = Admin(s.api, "PATCH", kNodes + "/n2", R"({"metadata":{"labels":{"zone":"b"}}})", "application/merge-patch+json");
    REQUIRE(patched.code == 200);
    CHECK(Str(patched.body, {"metadata", "labels", "zone"}) == "b");
    CHECK(Str(patched.body, {"metadata", "labels", "kubernetes.io/hostname"}) == "n2");

    Reply status = Admin(s.api, "PATCH", kNodes + "/n2/status",
                         R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady"}]}})",
                         "application/merge-patch+json");
    REQUIRE(status.code == 200);
    CHECK(Str(status.body.get("status").get("conditions").get(0), {"status"}) == "False");
  }
  SECTION("delete answers a Status (nodes do not return the deleted object); a put of a missing node is 404") {
    Reply del = Admin(s.api, "DELETE", kNodes + "/n2");
    CHECK(del.code == 200);
    CHECK(Str(del.body, {"kind"}) == "Status");
    CHECK(Str(del.body, {"status"}) == "Success");
    CHECK(Str(del.body, {"details", "kind"}) == "nodes");
    CHECK(Str(del.body, {"details", "name"}) == "n2");
    CHECK(Str(del.body, {"details", "uid"}) == Str(registered.body, {"metadata", "uid"}));
    CHECK(Admin(s.api, "GET", kNodes + "/n2").code == 404);
    CHECK(Admin(s.api, "PUT", kNodes + "/n2", fake_kubelet::NodeJson("n2")).code == 404);
  }
}

TEST_CASE("nodes: a watch sees them added, modified and deleted") {
  Server s;
  const std::string rv = Str(Admin(s.api, "GET", kNodes).body, {"metadata", "resourceVersion"});
  REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("n1")).code == 201);
  REQUIRE(Admin(s.api, "PATCH", kNodes + "/n1", R"({"spec":{"unschedulable":true}})", "application/merge-patch+json").code == 200);
  REQUIRE(Admin(s.api, "DELETE", kNodes + "/n1").code == 200);
  // Each write, and after it the node lifecycle controller's (fake_nodelifecycle.hpp): the
  // not-ready taint of admission goes (the node is Ready), the unschedulable one comes.
  auto events = WatchEvents(s.api, kNodes + "?watch=true&resourceVersion=" + rv, 5);
  std::vector<std::string> seen;
  for (const Json& e : events) {
    CHECK(Str(e, {"object", "kind"}) == "Node");
    std::string taints;
    if (const Json* t = fake::Path(e.get("object"), {"spec", "taints"}))
      for (const Json& taint : t->get<fake::JsonArray>()) taints += " " + Str(taint, {"key"});
    seen.push_back(Str(e, {"type"}) + taints);
  }
  CHECK(seen == std::vector<std::string>{"ADDED node.kubernetes.io/not-ready", "MODIFIED", "MODIFIED",
                                         "MODIFIED node.kubernetes.io/unschedulable", "DELETED node.kubernetes.io/unschedulable"});
  REQUIRE(events.size() == 5);
  CHECK(events[2].get("object").get("spec").get("unschedulable").get<bool>());
}

TEST_CASE("nodes: the table has printNode's columns: status from the Ready condition, roles, kubelet version") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kNodes, R"({"metadata":{"name":"bare"}})").code == 201);
  REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("ready")).code == 201);
  std::string sick = fake_kubelet::NodeJson("sick", {{"node-role.kubernetes.io/worker", ""}, {"kubernetes.io/role", "edge"},
                                                     {"node-role.kubernetes.io/control-plane", ""}});
  sick.replace(sick.find("\"True\""), 6, "\"False\"");
  sick.replace(sick.find("\"metadata\""), 0, R"("spec":{"unschedulable":true},)");
  REQUIRE(Admin(s.api, "POST", kNodes, sick).code == 201);

  Reply table = TableCall(s.api, kNodes);
  REQUIRE(table.code == 200);
  CHECK(Str(table.body, {"kind"}) == "Table");
  std::vector<std::string> names, priorities;
  for (const Json& c : table.body.get("columnDefinitions").get<fake::JsonArray>()) {
    names.push_back(Str(c, {"name"}));
    priorities.push_back(c.get("priority").to_str());
  }
  CHECK(names == std::vector<std::string>{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                                          "OS-Image", "Kernel-Version", "Container-Runtime"});
  CHECK(priorities == std::vector<std::string>{"0", "0", "0", "0", "0", "1", "1", "1", "1", "1"});
  const auto& rows = table.body.get("rows").get<fake::JsonArray>();
  REQUIRE(rows.size() == 3);
  std::vector<std::vector<std::string>> cells;
  for (const Json& r : rows) {
    cells.push_back(Strings(r.get("cells")));
    REQUIRE(cells.back().size() == 10);
    CHECK(cells.back()[3].back() == 's');
    cells.back()[3] = "age";
  }
  CHECK(cells[0] == std::vector<std::string>{"bare", "Unknown", "<none>", "age", "", "<none>", "<none>", "<unknown>",
                                             "<unknown>", "<unknown>"});
  CHECK(cells[1] == std::vector<std::string>{"ready", "Ready", "<none>", "age", "v1.32.0-fake", "<none>", "<none>",
                                             "<unknown>", "<unknown>", "<unknown>"});
  CHECK(cells[2] == std::vector<std::string>{"sick", "NotReady,SchedulingDisabled", "control-plane,edge,worker", "age",
                                             "v1.32.0-fake", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"});
}

TEST_CASE("kubectl get nodes prints NAME, STATUS, ROLES, AGE, VERSION; get pods -o wide the node", "[kubectl]") {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    WARN("no kubectl on PATH: kubectl's node table not checked");
    return;
  }
  Server s;
  REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("worker-1")).code == 201);
  REQUIRE(Admin(s.api, "POST", kNodes, R"({"metadata":{"name":"worker-2"}})").code == 201);
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : Kubectl(s.api, "get nodes")) rows.push_back(Fields(line));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"NAME", "STATUS", "ROLES", "AGE", "VERSION"});
  REQUIRE(rows[1].size() == 5);
  CHECK(rows[1][3].back() == 's');
  rows[1].erase(rows[1].begin() + 3);
  CHECK(rows[1] == std::vector<std::string>{"worker-1", "Ready", "<none>", "v1.32.0-fake"});
  REQUIRE(rows[2].size() == 4);  // an empty VERSION
  CHECK(rows[2][0] == "worker-2");
  CHECK(rows[2][1] == "Unknown");
  CHECK(rows[2][2] == "<none>");

  REQUIRE(Admin(s.api, "POST", kPods, R"({"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}})").code == 201);
  std::vector<std::vector<std::string>> pods;
  for (const auto& line : Kubectl(s.api, "get pods -o wide")) pods.push_back(Fields(line));
  REQUIRE(pods.size() == 2);
  CHECK(pods[0] == std::vector<std::string>{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                                            "READINESS GATES"});
  REQUIRE(pods[1].size() == 9);
  pods[1].erase(pods[1].begin() + 4);  // the age
  CHECK(pods[1] == std::vector<std::string>{"web", "0/1", "Pending", "0", "<none>", "worker-1", "<none>", "<none>"});
}

TEST_CASE("RBAC: nodes are granted by ClusterRoleBindings only; pods per namespace; subresources by name") {
  RbacDir rbac(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: node-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {kind: ServiceAccount, name: hostpath-provisioner, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: everything-on-nodes-and-pods}
rules:
- apiGroups: [""]
  resources: ["nodes", "nodes/status", "pods"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: in-default, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: everything-on-nodes-and-pods}
subjects:
- {kind: ServiceAccount, name: hostpath-provisioner, namespace: kube-system}
)");  // removed after the server below
  Server s(rbac.Options());
  REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("n1")).code == 201);
  const std::string sa = s.api.sa_token();
  const std::string pod = R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})";
  struct Case {
    const char* name;
    std::string method, path, body;
    int code;
  };
  std::vector<Case> cases = {
      {"get a node", "GET", kNodes + "/n1", "", 200},
      {"list nodes", "GET", kNodes, "", 200},
      {"watch nodes", "GET", kNodes + "?watch=true&timeoutSeconds=1", "", 200},
      // A RoleBinding grants nothing at the cluster scope, whatever its role says.
      {"create a node: denied", "POST", kNodes, fake_kubelet::NodeJson("n2"), 403},
      {"delete a node: denied", "DELETE", kNodes + "/n1", "", 403},
      {"patch a node's status: denied", "PATCH", kNodes + "/n1/status", R"({"status":{}})", 403},
      {"create a pod in default", "POST", kPods, pod, 201},
      {"list pods in default", "GET", kPods, "", 200},
      {"delete a pod in default (missing)", "DELETE", kPods + "/nope", "", 404},
      {"pods in kube-system: denied", "GET", "/api/v1/namespaces/kube-system/pods", "", 403},
      {"pods of all namespaces: denied", "GET", "/api/v1/pods", "", 403},
      {"pod status: denied (not granted by name)", "GET", kPods + "/p/status", "", 403},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply r = Call(s.api, sa, c.method, c.path, c.body, c.method == "PATCH" ? "application/merge-patch+json" : "application/json");
      CHECK(r.code == c.code);
    }
  }
  SECTION("the denial names the cluster scope") {
    Reply r = Call(s.api, sa, "POST", kNodes, fake_kubelet::NodeJson("n2"));
    CHECK(Str(r.body, {"message"}) ==
          "nodes is forbidden: User \"system:serviceaccount:kube-system:hostpath-provisioner\" cannot create "
          "resource \"nodes\" in API group \"\" at the cluster scope");
  }
}

namespace {

// A local PV on `path`; `affinity` is the JSON of spec.nodeAffinity, or "" for none.
std::string LocalPv(const std::string& name, const std::string& affinity, const std::string& path = "/mnt/disks/a") {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
         R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"local":{"path":")" + path +
         R"("},"storageClassName":"local")" + (affinity.empty() ? "" : R"(,"nodeAffinity":)" + affinity) + "}}";
}

// A required node affinity with one term of the given matchExpressions (a JSON array).
std::string Affinity(const std::string& expressions) {
  return R"({"required":{"nodeSelectorTerms":[{"matchExpressions":)" + expressions + "}]}}";
}

const std::string kOnNode1 = Affinity(R"([{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}])");

}  // namespace

TEST_CASE("local PVs: a path without '..', and node affinity as ValidatePersistentVolumeSpec requires it") {
  Server s;
  SECTION("refused, with the real messages: no affinity, a selector without terms, an unknown operator") {
    Reply none = Admin(s.api, "POST", kPvs, LocalPv("l", ""));
    CHECK(none.code == 422);
    CHECK(Str(none.body, {"reason"}) == "Invalid");
    CHECK(Str(none.body, {"message"}) ==
          "PersistentVolume \"l\" is invalid: spec.nodeAffinity: Required value: Local volume requires node affinity");
    REQUIRE(CauseFields(none.body) == std::vector<std::string>{"spec.nodeAffinity"});
    const Json& cause = none.body.get("details").get("causes").get(0);
    CHECK(Str(cause, {"reason"}) == "FieldValueRequired");
    CHECK(Str(cause, {"message"}) == "Required value: Local volume requires node affinity");
    CHECK(Str(none.body, {"details", "kind"}) == "PersistentVolume");
    CHECK(Str(none.body, {"details", "name"}) == "l");

    Reply no_terms = Admin(s.api, "POST", kPvs, LocalPv("l", R"({"required":{"nodeSelectorTerms":[]}})"));
    CHECK(no_terms.code == 422);
    CHECK(Str(no_terms.body, {"message"}) ==
          "PersistentVolume \"l\" is invalid: spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have "
          "at least one node selector term");

    Reply near = Admin(s.api, "POST", kPvs, LocalPv("l", Affinity(R"([{"key":"zone","operator":"Near","values":["a"]}])")));
    CHECK(near.code == 422);
    CHECK(Str(near.body, {"message"}) ==
          "PersistentVolume \"l\" is invalid: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: "
          "Invalid value: \"Near\": not a valid selector operator");
    CHECK(Str(near.body.get("details").get("causes").get(0), {"reason"}) == "FieldValueInvalid");

    CHECK(Admin(s.api, "GET", kPvs + "/l").code == 404);
  }
  SECTION("accepted: a local PV with node affinity, and affinity on other volume types") {
    Reply ok = Admin(s.api, "POST", kPvs, LocalPv("l", kOnNode1));
    REQUIRE(ok.code == 201);
    CHECK(Str(ok.body, {"spec", "local", "path"}) == "/mnt/disks/a");
    CHECK(Str(ok.body.get("spec").get("nodeAffinity").get("required").get("nodeSelectorTerms").get(0)
                  .get("matchExpressions").get(0), {"operator"}) == "In");
    const std::string every_operator = Affinity(
        R"([{"key":"a","operator":"NotIn","values":["x","y"]},{"key":"example.com/b","operator":"Exists"},)"
        R"({"key":"c","operator":"DoesNotExist"},{"key":"d","operator":"Gt","values":["3"]},{"key":"e","operator":"Lt","values":["x"]}])");
    CHECK(Admin(s.api, "POST", kPvs, LocalPv("every", every_operator, "/mnt/b")).code == 201);
    CHECK(Admin(s.api, "POST", kPvs, Pv("hp", R"(,"nodeAffinity":)" + kOnNode1)).code == 201);
    const std::string by_name = R"({"required":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}})";
    CHECK(Admin(s.api, "POST", kPvs, LocalPv("by-name", by_name, "/mnt/c")).code == 201);
  }
  struct Case {
    const char* name;
    std::string body;
    std::vector<std::string> fields;
    std::string message;  // of the first cause
  };
  const std::string terms = "spec.nodeAffinity.required.nodeSelectorTerms[0]";
  std::vector<Case> cases = {
      {"no path", LocalPv("l", kOnNode1, ""), {"spec.local.path"}, "Required value"},
      {"a path with ..", LocalPv("l", kOnNode1, "/mnt/../etc"), {"spec.local.path"}, "Invalid value: \"/mnt/../etc\": must not contain '..'"},
      {"no path and no affinity", LocalPv("l", "", ""), {"spec.local.path", "spec.nodeAffinity"}, "Required value"},
      {"affinity without required", LocalPv("l", "{}"), {"spec.nodeAffinity.required"},
       "Required value: must specify required node constraints"},
      {"In without values", LocalPv("l", Affinity(R"([{"key":"a","operator":"In"}])")), {terms + ".matchExpressions[0].values"},
       "Required value: must be specified when `operator` is 'In' or 'NotIn'"},
      {"Exists with values", LocalPv("l", Affinity(R"([{"key":"a","operator":"Exists","values":["x"]}])")),
       {terms + ".matchExpressions[0].values"}, "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
      {"Gt with two values", LocalPv("l", Affinity(R"([{"key":"a","operator":"Gt","values":["1","2"]}])")),
       {terms + ".matchExpressions[0].values"}, "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"},
      {"no operator", LocalPv("l", Affinity(R"([{"key":"a"}])")), {terms + ".matchExpressions[0].operator"},
       "Invalid value: \"\": not a valid selector operator"},
      {"a key that is not a qualified name", LocalPv("l", Affinity(R"([{"key":"-a","operator":"Exists"}])")),
       {terms + ".matchExpressions[0].key"}, "Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
      {"a field selector on a label", LocalPv("l", R"({"required":{"nodeSelectorTerms":[{"matchFields":[{"key":"zone","operator":"In","values":["a"]}]}]}})"),
       {terms + ".matchFields[0].key"}, "Invalid value: \"zone\": not a valid field selector key"},
      {"a local and a hostPath source", Pv("l", R"(,"local":{"path":"/y"})"), {"spec.local"},
       "Forbidden: may not specify more than 1 volume type"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply r = Admin(s.api, "POST", kPvs, c.body);
      CHECK(r.code == 422);
      CHECK(CauseFields(r.body) == c.fields);
      INFO(r.body.serialize());
      REQUIRE(fake::Path(r.body, {"details", "causes"}) != nullptr);
      CHECK(Str(r.body.get("details").get("causes").get(0), {"message"}) == c.message);
    }
  }
}

TEST_CASE("PV node affinity may be set once and then never changed, as ValidatePersistentVolumeUpdate allows") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("hp")).code == 201);
  REQUIRE(Admin(s.api, "POST", kPvs, LocalPv("l", kOnNode1)).code == 201);
  const std::string merge = "application/merge-patch+json";
  Reply set = Admin(s.api, "PATCH", kPvs + "/hp", R"({"spec":{"nodeAffinity":)" + kOnNode1 + "}}", merge);
  CHECK(set.code == 200);
  const std::string other = Affinity(R"([{"key":"kubernetes.io/hostname","operator":"In","values":["n2"]}])");
  for (const std::string name : {"hp", "l"}) {
    INFO(name);
    Reply changed = Admin(s.api, "PATCH", kPvs + "/" + name, R"({"spec":{"nodeAffinity":)" + other + "}}", merge);
    CHECK(changed.code == 422);
    CHECK(CauseFields(changed.body) == std::vector<std::string>{"nodeAffinity"});
    CHECK(Str(changed.body, {"message"}).find("nodeAffinity: Invalid value: ") != std::string::npos);
    CHECK(Str(changed.body, {"message"}).find(": field is immutable") != std::string::npos);
  }
  Reply removed = Admin(s.api, "PATCH", kPvs + "/hp", R"({"spec":{"nodeAffinity":null}})", merge);
  CHECK(removed.code == 422);
  CHECK(Str(removed.body, {"message"}) == "PersistentVolume \"hp\" is invalid: nodeAffinity: Invalid value: null: field is immutable");
  Reply same = Admin(s.api, "PATCH", kPvs + "/l", R"({"spec":{"nodeAffinity":)" + kOnNode1 + "}}", merge);
  CHECK(same.code == 200);
}

namespace {

// A pod with one container; `spec_extra` is added to its spec (JSON members after a comma).
std::string Pod(const std::string& name, const std::string& spec_extra = "", const std::string& image = "busybox:1.36") {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"("},"spec":{"containers":[{"name":"c","image":")" + image + R"("}])" + spec_extra + "}}";
}
}  // namespace

TEST_CASE("pods: defaults, a Pending status on create, validation, updates limited as ValidatePodUpdate limits them") {
  Server s;
  std::string sent = Pod("p", R"(,"nodeName":"n1","volumes":[{"name":"scratch"}])", "busybox");
  sent.replace(sent.find("\"spec\""), 0, R"("status":{"phase":"Running"},)");
  Reply created = Admin(s.api, "POST", kPods, sent);
  REQUIRE(created.code == 201);
  const Json& spec = created.body.get("spec");
  CHECK(Str(spec, {"restartPolicy"}) == "Always");
  CHECK(Str(spec, {"dnsPolicy"}) == "ClusterFirst");
  CHECK(Str(spec, {"schedulerName"}) == "default-scheduler");
  CHECK(spec.get("terminationGracePeriodSeconds").get<double>() == 30);
  CHECK(Str(spec.get("containers").get(0), {"imagePullPolicy"}) == "Always");  // untagged
  CHECK(Str(spec.get("containers").get(0), {"terminationMessagePath"}) == "/dev/termination-log");
  CHECK(spec.get("volumes").get(0).get("emptyDir").is<fake::JsonObject>());
  CHECK(Str(created.body, {"status", "phase"}) == "Pending");  // not what was sent
  CHECK(Str(Admin(s.api, "POST", kPods, Pod("tagged", R"(,"nodeName":"n1")")).body.get("spec").get("containers").get(0),
            {"imagePullPolicy"}) == "IfNotPresent");

  SECTION("the image may change, the node may not; labels may; status only through /status") {
    const std::string merge = "application/merge-patch+json";
    Reply image = Admin(s.api, "PATCH", kPods + "/p", R"([{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}])",
                        "application/json-patch+json");
    REQUIRE(image.code == 200);
    CHECK(Str(image.body.get("spec").get("containers").get(0), {"image"}) == "busybox:1.37");
    Reply node = Admin(s.api, "PATCH", kPods + "/p", R"({"spec":{"nodeName":"n2"}})", merge);
    CHECK(node.code == 422);
    CHECK(CauseFields(node.body) == std::vector<std::string>{"spec"});
    CHECK(Str(node.body, {"message"}).rfind("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields "
                                            "other than `spec.containers[*].image`", 0) == 0);
    CHECK(Admin(s.api, "PATCH", kPods + "/p", R"({"metadata":{"labels":{"app":"x"}}})", merge).code == 200);
    CHECK(Admin(s.api, "PATCH", kPods + "/p", R"({"status":{"phase":"Running"}})", merge).body.get("status").get("phase")
              .get<std::string>() == "Pending");
    CHECK(Admin(s.api, "PATCH", kPods + "/p/status", R"({"status":{"phase":"Succeeded"}})", merge).body.get("status")
              .get("phase").get<std::string>() == "Succeeded");
  }
  SECTION("delete answers the deleted pod; it is gone at once (no kubelet to wait for)") {
    Reply del = Admin(s.api, "DELETE", kPods + "/p");
    CHECK(del.code == 200);
    CHECK(Str(del.body, {"kind"}) == "Pod");
    CHECK(Admin(s.api, "GET", kPods + "/p").code == 404);
  }
  struct Case {
    const char* name;
    std::string body;
    std::vector<std::string> fields;
  };
  std::vector<Case> cases = {
      {"no containers", R"({"metadata":{"name":"x"},"spec":{"containers":[]}})", {"spec.containers"}},
      {"a container without name or image", R"({"metadata":{"name":"x"},"spec":{"containers":[{}]}})",
       {"spec.containers[0].name", "spec.containers[0].image"}},
      {"two containers of one name", R"({"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"},{"name":"c","image":"i"}]}})",
       {"spec.containers[1].name"}},
      {"a claim without a name", Pod("x", R"(,"volumes":[{"name":"v","persistentVolumeClaim":{}}])"),
       {"spec.volumes[0].persistentVolumeClaim.claimName"}},
      {"a mount of no volume", R"({"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","volumeMounts":[{"name":"v","mountPath":"/d"}]}]}})",
       {"spec.containers[0].volumeMounts[0].name"}},
      {"a restart policy that is none", Pod("x", R"(,"restartPolicy":"Sometimes")"), {"spec.restartPolicy"}},
      {"a node affinity operator that is none",
       Pod("x", R"(,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Near"}]}]}}})"),
       {"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"}},
      {"a name that is not a DNS subdomain", Pod("X"), {"metadata.name"}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply r = Admin(s.api, "POST", kPods, c.body);
      CHECK(r.code == 422);
      INFO(r.body.serialize());
      CHECK(CauseFields(r.body) == c.fields);
    }
  }
}

TEST_CASE("pods: a watch sees them; the table has printPod's columns") {
  Server s;
  const std::string rv = Str(Admin(s.api, "GET", kPods).body, {"metadata", "resourceVersion"});
  REQUIRE(Admin(s.api, "POST", kPods, Pod("placed", R"(,"nodeName":"n1","readinessGates":[{"conditionType":"x"}])")).code == 201);
  REQUIRE(Admin(s.api, "PATCH", kPods + "/placed/status",
                R"({"status":{"phase":"Running","podIP":"10.0.0.7","containerStatuses":[{"name":"c","ready":true,"restartCount":2}]}})",
                "application/merge-patch+json").code == 200);
  REQUIRE(Admin(s.api, "DELETE", kPods + "/placed").code == 200);
  auto events = WatchEvents(s.api, kPods + "?watch=true&resourceVersion=" + rv, 3);
  REQUIRE(events.size() == 3);
  CHECK(Str(events[0], {"type"}) == "ADDED");
  CHECK(Str(events[1], {"type"}) == "MODIFIED");
  CHECK(Str(events[1], {"object", "status", "phase"}) == "Running");
  CHECK(Str(events[2], {"type"}) == "DELETED");

  REQUIRE(Admin(s.api, "POST", kPods, Pod("placed", R"(,"nodeName":"n1","readinessGates":[{"conditionType":"x"}])")).code == 201);
  REQUIRE(Admin(s.api, "PATCH", kPods + "/placed/status",
                R"({"status":{"phase":"Running","podIP":"10.0.0.7","containerStatuses":[{"name":"c","ready":true,"restartCount":2}]}})",
                "application/merge-patch+json").code == 200);
  Reply table = TableCall(s.api, kPods + "/placed");
  REQUIRE(table.code == 200);
  std::vector<std::string> names;
  for (const Json& c : table.body.get("columnDefinitions").get<fake::JsonArray>()) names.push_back(Str(c, {"name"}));
  CHECK(names == std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
                                          "Readiness Gates"});
  std::vector<std::string> cells = Strings(table.body.get("rows").get(0).get("cells"));
  REQUIRE(cells.size() == 9);
  cells[4] = "age";
  CHECK(cells == std::vector<std::string>{"placed", "1/1", "Running", "2", "age", "10.0.0.7", "n1", "<none>", "0/1"});
}

namespace {

const char* kWffcClass =
    R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"wffc"},"provisioner":"example.com/hostpath","volumeBindingMode":"WaitForFirstConsumer"})";
const char* kSelectedNode = "volume.kubernetes.io/selected-node";

// A server with the WaitForFirstConsumer class "wffc", the Immediate class "hostpath" and nodes
// registered as kubelets register them.
struct Cluster {
  explicit Cluster(const std::vector<std::string>& nodes) {
    REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kWffcClass).code == 201);
    REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
    for (const auto& n : nodes) AddNode(n);
  }
  void AddNode(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    REQUIRE(Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson(name, labels)).code == 201);
  }
  Json Get(const std::string& path) {
    Reply r = Admin(s.api, "GET", path);
    REQUIRE(r.code == 200);
    return r.body;
  }
  Json Claim(const std::string& name) { return Get(kPvcs + "/" + name); }
  // The claim once `ready` says so, or as it is after 10 s: the fake's scheduler and PV
  // controller run after a round of answers, so a read right after a write may come first (as
  // on a real cluster, where both run on their own).
  Json ClaimOnce(const std::string& name, const std::function<bool(const Json&)>& ready) {
    Json claim = Claim(name);
    for (int i = 0; i < 1000 && !ready(claim); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      claim = Claim(name);
    }
    return claim;
  }
  Json PodNamed(const std::string& name) { return Get(kPods + "/" + name); }
  // The node the pod is bound to, once it is bound, or "" after 10 s: the fake binds it after
  // the round of answers in which its claim was bound, so a read right after may come first.
  std::string PodNode(const std::string& name) {
    std::string node = Str(PodNamed(name), {"spec", "nodeName"});
    for (int i = 0; i < 1000 && node.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      node = Str(PodNamed(name), {"spec", "nodeName"});
    }
    return node;
  }
  std::string SelectedNode(const std::string& claim) { return fake::Annotation(Claim(claim), kSelectedNode); }
  // The pod's PodScheduled condition ({} without one).
  Json Scheduled(const std::string& pod) {
    Json p = PodNamed(pod);
    if (const Json* conds = fake::Path(p, {"status", "conditions"}))
      for (const Json& c : conds->get<fake::JsonArray>())
        if (Str(c, {"type"}) == "PodScheduled") return c;
    return Json(fake::JsonObject());
  }
  // What an external provisioner does for a claim whose selected node is `node`: a PV bound to
  // the claim by claimRef, with node affinity to the node.
  void Provision(const std::string& claim, const std::string& node) {
    const std::string uid = Str(Claim(claim), {"metadata", "uid"});
    const std::string pv = R"({"metadata":{"name":"pvc-)" + uid +
                           R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/x"},)"
                           R"("storageClassName":"wffc","persistentVolumeReclaimPolicy":"Delete","claimRef":{"namespace":"default","name":")" +
                           claim + R"(","uid":")" + uid + R"("},"nodeAffinity":)" +
                           Affinity(R"([{"key":"kubernetes.io/hostname","operator":"In","values":[")" + node + R"("]}])") + "}}";
    REQUIRE(Admin(s.api, "POST", kPvs, pv).code == 201);
  }
  // What an external provisioner does when provisioning on the selected node failed for good.
  void Reject(const std::string& claim) {
    REQUIRE(Admin(s.api, "PATCH", kPvcs + "/" + claim, R"({"metadata":{"annotations":{"volume.kubernetes.io/selected-node":null}}})",
                  "application/merge-patch+json").code == 200);
  }
  Server s;
};

}  // namespace

TEST_CASE("scheduler: a pod's WaitForFirstConsumer claim gets the selected node; the pod is bound once the claim is") {
  Cluster c({"n2", "n1"});
  REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
  const Json before = c.Claim("data");
  CHECK(fake::Annotation(before, kSelectedNode).empty());
  CHECK(fake::Annotation(before, "volume.kubernetes.io/storage-provisioner").empty());  // waits for a consumer
  const std::string rv = Str(before, {"metadata", "resourceVersion"});

  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
  const Json claim = c.ClaimOnce("data", [](const Json& j) {  // the PV controller's write comes last
    return !fake::Annotation(j, "volume.kubernetes.io/storage-provisioner").empty();
  });
  CHECK(fake::Annotation(claim, kSelectedNode) == "n1");  // the first node by name
  CHECK(std::stoull(Str(claim, {"metadata", "resourceVersion"})) > std::stoull(rv));
  CHECK(fake::Annotation(claim, "volume.kubernetes.io/storage-provisioner") == "example.com/hostpath");  // the PV controller's
  CHECK(Str(claim, {"status", "phase"}) == "Pending");
  const Json pod = c.PodNamed("app");
  CHECK(Str(pod, {"spec", "nodeName"}).empty());  // waits for the claim to be bound
  CHECK(Str(pod, {"status", "phase"}) == "Pending");
  CHECK(c.Scheduled("app").get<fake::JsonObject>().empty());

  SECTION("a claims watch sees the scheduler's update, then the PV controller's") {
    auto events = WatchEvents(c.s.api, kPvcs + "?watch=true&resourceVersion=" + rv, 2);
    REQUIRE(events.size() == 2);
    CHECK(Str(events[0], {"type"}) == "MODIFIED");
    CHECK(fake::Annotation(events[0].get("object"), kSelectedNode) == "n1");
    CHECK(fake::Annotation(events[0].get("object"), "volume.kubernetes.io/storage-provisioner").empty());
    CHECK(fake::Annotation(events[1].get("object"), "volume.kubernetes.io/storage-provisioner") == "example.com/hostpath");
  }
  SECTION("the provisioner's PV is bound to the claim, and then the pod to the node") {
    c.Provision("data", "n1");
    const Json claim = c.ClaimOnce("data", [](const Json& j) { return Str(j, {"status", "phase"}) == "Bound"; });
    CHECK(Str(claim, {"status", "phase"}) == "Bound");
    CHECK(c.PodNode("app") == "n1");
    const Json bound = c.PodNamed("app");
    CHECK(Str(bound, {"status", "phase"}) == "Pending");  // no kubelet runs it
    const Json cond = c.Scheduled("app");
    CHECK(Str(cond, {"status"}) == "True");
    CHECK(!Str(cond, {"lastTransitionTime"}).empty());
    CHECK(fake::Annotation(c.Claim("data"), kSelectedNode) == "n1");
  }
  SECTION("a second pod of the same claim goes where the claim was provisioned") {
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("other", {"data"})).code == 201);
    c.Provision("data", "n1");
    CHECK(c.PodNode("other") == "n1");
    CHECK(c.PodNode("app") == "n1");
  }
}

TEST_CASE("scheduler: when the provisioner removes the selected node, the next node by name is chosen") {
  Cluster c({"n1", "n2", "n3"});
  REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
  REQUIRE(c.SelectedNode("data") == "n1");
  c.Reject("data");
  CHECK(c.SelectedNode("data") == "n2");
  const Json failed = c.Scheduled("app");
  CHECK(Str(failed, {"status"}) == "False");
  CHECK(Str(failed, {"reason"}) == "SchedulerError");
  CHECK(Str(failed, {"message"}) == "running PreBind plugin \"VolumeBinding\": binding volumes: provisioning failed for PVC \"data\"");
  c.Reject("data");
  CHECK(c.SelectedNode("data") == "n3");
  c.Reject("data");
  CHECK(c.SelectedNode("data") == "n1");  // around again
  c.Provision("data", "n1");
  CHECK(c.PodNode("app") == "n1");
  CHECK(Str(c.Scheduled("app"), {"status"}) == "True");

  SECTION("with one node, that node again") {
    Cluster one({"only"});
    REQUIRE(Admin(one.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
    REQUIRE(Admin(one.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
    REQUIRE(one.SelectedNode("data") == "only");
    one.Reject("data");
    CHECK(one.SelectedNode("data") == "only");
  }
}

TEST_CASE("scheduler: nodeSelector, required node affinity, cordons and taints choose among the nodes") {
  Cluster c({"n1", "n2", "n3"});
  REQUIRE(Admin(c.s.api, "PATCH", kNodes + "/n2", R"({"metadata":{"labels":{"disk":"ssd"}}})", "application/merge-patch+json").code == 200);
  REQUIRE(Admin(c.s.api, "PATCH", kNodes + "/n3", R"({"metadata":{"labels":{"disk":"ssd","zone":"b"}}})", "application/merge-patch+json").code == 200);
  for (const char* claim : {"a", "b", "c", "d"}) REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc(claim, "wffc")).code == 201);

  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("ssd", {"a"}, R"(,"nodeSelector":{"disk":"ssd"})")).code == 201);
  CHECK(c.SelectedNode("a") == "n2");
  const std::string in_zone_b =
      R"(,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}})";
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("zoned", {"b"}, in_zone_b)).code == 201);
  CHECK(c.SelectedNode("b") == "n3");

  REQUIRE(Admin(c.s.api, "PATCH", kNodes + "/n1", R"({"spec":{"unschedulable":true}})", "application/merge-patch+json").code == 200);
  REQUIRE(Admin(c.s.api, "PATCH", kNodes + "/n2", R"({"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}]}})",
                "application/merge-patch+json").code == 200);
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("nowhere", {"c"}, R"(,"nodeSelector":{"disk":"ssd","zone":"a"})")).code == 201);
  CHECK(c.SelectedNode("c").empty());
  const Json cond = c.Scheduled("nowhere");
  CHECK(Str(cond, {"status"}) == "False");
  CHECK(Str(cond, {"reason"}) == "Unschedulable");
  CHECK(Str(cond, {"message"}) ==
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had taint {dedicated: db}, "
        "that the pod didn't tolerate, 1 node(s) were unschedulable.");
  CHECK(Str(c.PodNamed("nowhere"), {"spec", "nodeName"}).empty());

  const std::string tolerant = R"(,"nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"dedicated","operator":"Exists"}])";
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("tolerant", {"d"}, tolerant)).code == 201);
  CHECK(c.SelectedNode("d") == "n2");
  // A change to the nodes lets the pod that fitted nowhere be scheduled.
  REQUIRE(Admin(c.s.api, "PATCH", kNodes + "/n3", R"({"metadata":{"labels":{"zone":"a"}}})", "application/merge-patch+json").code == 200);
  CHECK(c.SelectedNode("c") == "n3");
}

TEST_CASE("scheduler: unbound Immediate claims, missing claims, no nodes and no provisioner keep a pod Pending") {
  SECTION("a claim of an Immediate class is left to the PV controller; the pod waits") {
    Cluster c({"n1", "n2"});
    REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("now")).code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"now"})).code == 201);
    CHECK(c.SelectedNode("now").empty());
    CHECK(Str(c.Scheduled("app"), {"message"}) == "0/2 nodes are available: 2 pod has unbound immediate PersistentVolumeClaims.");
    CHECK(Str(c.Scheduled("app"), {"reason"}) == "Unschedulable");
    // Once the PV controller binds it (to a PV without node affinity), the pod goes to the first node.
    const std::string uid = Str(c.Claim("now"), {"metadata", "uid"});
    REQUIRE(Admin(c.s.api, "POST", kPvs, Pv("pvc-" + uid, R"(,"claimRef":{"namespace":"default","name":"now","uid":")" + uid + "\"}")).code == 201);
    CHECK(c.PodNode("app") == "n1");
  }
  SECTION("no nodes: no annotation, until a node comes") {
    Cluster c({});
    REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
    CHECK(c.SelectedNode("data").empty());
    CHECK(Str(c.Scheduled("app"), {"reason"}) == "Unschedulable");
    CHECK(Str(c.Scheduled("app"), {"message"}) == "no nodes available to schedule pods");
    c.AddNode("late");
    CHECK(c.SelectedNode("data") == "late");
  }
  SECTION("a claim that does not exist yet, then does") {
    Cluster c({"n1"});
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"later"})).code == 201);
    CHECK(Str(c.Scheduled("app"), {"message"}) == "0/1 nodes are available: 1 persistentvolumeclaim \"later\" not found.");
    REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("later", "wffc")).code == 201);
    CHECK(c.SelectedNode("later") == "n1");
  }
  SECTION("a class without a provisioner (static local volumes): no node will do") {
    Cluster c({"n1"});
    REQUIRE(Admin(c.s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses",
                  R"({"metadata":{"name":"local"},"provisioner":"kubernetes.io/no-provisioner","volumeBindingMode":"WaitForFirstConsumer"})").code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "local")).code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
    CHECK(c.SelectedNode("data").empty());
    CHECK(Str(c.Scheduled("app"), {"message"}) == "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind.");
  }
  SECTION("pods of another scheduler, and pods without volumes") {
    Cluster c({"n1", "n2"});
    REQUIRE(Admin(c.s.api, "POST", kPods, Pod("mine", R"(,"schedulerName":"my-scheduler")")).code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPods, Pod("plain")).code == 201);
    CHECK(Str(c.PodNamed("mine"), {"spec", "nodeName"}).empty());
    CHECK(c.Scheduled("mine").get<fake::JsonObject>().empty());
    CHECK(c.PodNode("plain") == "n1");
  }
}

TEST_CASE("scheduler: a bound claim's PV node affinity chooses the node") {
  Cluster c({"n1", "n2"});
  REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
  REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("gone", "wffc")).code == 201);
  c.Provision("data", "n2");  // a PV made before any pod (pre-bound to the claim by the test)
  REQUIRE(Str(c.Claim("data"), {"status", "phase"}) == "Bound");
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
  CHECK(c.PodNode("app") == "n2");

  c.Provision("gone", "n9");
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("stuck", {"gone"})).code == 201);
  CHECK(Str(c.PodNamed("stuck"), {"spec", "nodeName"}).empty());
  CHECK(Str(c.Scheduled("stuck"), {"message"}) == "0/2 nodes are available: 2 node(s) had volume node affinity conflict.");
  c.AddNode("n9");
  CHECK(c.PodNode("stuck") == "n9");
}

TEST_CASE("pvc-protection: a claim being deleted keeps its finalizer while a scheduled pod uses it") {
  Cluster c({"n1"});
  REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("data", "wffc")).code == 201);
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("app", {"data"})).code == 201);
  c.Provision("data", "n1");
  REQUIRE(c.PodNode("app") == "n1");

  Reply del = Admin(c.s.api, "DELETE", kPvcs + "/data");
  CHECK(del.code == 200);
  Json kept = c.Claim("data");
  CHECK(!Str(kept, {"metadata", "deletionTimestamp"}).empty());
  CHECK(fake::StringList(kept, {"metadata", "finalizers"}) == std::vector<std::string>{"kubernetes.io/pvc-protection"});
  // The controller looks at whether the pod is scheduled, not at its phase.
  REQUIRE(Admin(c.s.api, "PATCH", kPods + "/app/status", R"({"status":{"phase":"Succeeded"}})", "application/merge-patch+json").code == 200);
  CHECK(Admin(c.s.api, "GET", kPvcs + "/data").code == 200);
  // A new pod of a claim being deleted is not scheduled.
  REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("late", {"data"})).code == 201);
  CHECK(Str(c.Scheduled("late"), {"message"}) == "0/1 nodes are available: 1 persistentvolumeclaim \"data\" is being deleted.");

  REQUIRE(Admin(c.s.api, "DELETE", kPods + "/app").code == 200);
  CHECK(Admin(c.s.api, "GET", kPvcs + "/data").code == 404);
  CHECK(Str(c.Scheduled("late"), {"message"}) == "0/1 nodes are available: 1 persistentvolumeclaim \"data\" not found.");

  SECTION("a claim that only unscheduled pods name goes at once") {
    REQUIRE(Admin(c.s.api, "POST", kPvcs, Pvc("other", "hostpath")).code == 201);
    REQUIRE(Admin(c.s.api, "POST", kPods, PodWithClaims("waiting", {"other"})).code == 201);  // an unbound Immediate claim
    REQUIRE(Str(c.PodNamed("waiting"), {"spec", "nodeName"}).empty());
    REQUIRE(Admin(c.s.api, "DELETE", kPvcs + "/other").code == 200);
    CHECK(Admin(c.s.api, "GET", kPvcs + "/other").code == 404);
  }
}
