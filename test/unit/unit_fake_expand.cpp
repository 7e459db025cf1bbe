// Growing a bound claim in the fake API server, as Kubernetes 1.24 does it: update validation,
// the PersistentVolumeClaimResize admission plugin, the claims' /status subresource and the
// expand controller; and the steps by which a resizer (external-resizer's protocol) finishes
// an expansion. Over verified HTTPS, as a client sees it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test/fake/fake_apiserver.hpp"
#include "test/fake/fake_test_client.hpp"

using namespace fake_test;
using fake::Path;

namespace {

const std::string kClasses = "/apis/storage.k8s.io/v1/storageclasses";
const std::string kEvents = "/api/v1/namespaces/default/events";
const std::string kMerge = "application/merge-patch+json";

// The class "hostpath" of kClass, with allowVolumeExpansion as given ("" leaves it out).
std::string Class(const std::string& allow) {
  std::string c = kClass;
  if (!allow.empty()) c.insert(c.size() - 1, R"(,"allowVolumeExpansion":)" + allow);
  return c;
}

// Makes claim `name` (1Gi of class "hostpath") and a 1Gi volume provisioned for it, which the
// PV controller binds. The claim's uid.
std::string BoundClaim(const fake::ApiServer& api, const std::string& name) {
  Reply claim = Admin(api, "POST", kPvcs, Pvc(name));
  REQUIRE(claim.code == 201);
  const std::string uid = Str(claim.body, {"metadata", "uid"});
  const std::string ref = R"(,"claimRef":{"namespace":"default","name":")" + name + R"(","uid":")" + uid + "\"}";
  REQUIRE(Admin(api, "POST", kPvs, Pv("pvc-" + uid, ref)).code == 201);
  Json bound = Admin(api, "GET", kPvcs + "/" + name).body;
  REQUIRE(Str(bound, {"status", "phase"}) == "Bound");
  REQUIRE(Str(bound, {"status", "capacity", "storage"}) == "1Gi");
  return uid;
}

Reply Grow(const fake::ApiServer& api, const std::string& name, const std::string& size) {
  return Admin(api, "PATCH", kPvcs + "/" + name, R"({"spec":{"resources":{"requests":{"storage":")" + size + "\"}}}}",
               kMerge);
}

// The events of the default namespace with this reason.
std::vector<Json> EventsWithReason(const fake::ApiServer& api, const std::string& reason) {
  Reply list = Admin(api, "GET", kEvents + "?fieldSelector=reason%3D" + reason);
  REQUIRE(list.code == 200);
  return list.body.get("items").get<fake::JsonArray>();
}

}  // namespace

TEST_CASE("a bound claim's storage request may grow, never shrink; the rest of its spec is immutable") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");

  SECTION("shrinking is 422 Invalid, with the real message and cause") {
    Reply shrink = Grow(s.api, "c", "512Mi");
    CHECK(shrink.code == 422);
    CHECK(Str(shrink.body, {"reason"}) == "Invalid");
    CHECK(Str(shrink.body, {"message"}) ==
          "PersistentVolumeClaim \"c\" is invalid: spec.resources.requests.storage: Forbidden: field can not be less "
          "than previous value");
    CHECK(CauseFields(shrink.body) == std::vector<std::string>{"spec.resources.requests.storage"});
    CHECK(Str(shrink.body.get("details").get("causes").get(0), {"reason"}) == "FieldValueForbidden");
    CHECK(Str(Admin(s.api, "GET", kPvcs + "/c").body, {"spec", "resources", "requests", "storage"}) == "1Gi");
  }
  SECTION("the same size written another way is no change") {
    Reply same = Grow(s.api, "c", "1024Mi");
    CHECK(same.code == 200);
    CHECK(Str(same.body, {"spec", "resources", "requests", "storage"}) == "1Gi");
  }
  SECTION("growing is allowed, by patch or by update; the status keeps the old capacity") {
    Reply grown = Grow(s.api, "c", "2Gi");
    REQUIRE(grown.code == 200);
    CHECK(Str(grown.body, {"spec", "resources", "requests", "storage"}) == "2Gi");
    CHECK(Str(grown.body, {"status", "capacity", "storage"}) == "1Gi");
    Json claim = grown.body;
    fake::Obj(claim, {"spec", "resources", "requests"})["storage"] = Json("3Gi");
    Reply updated = Admin(s.api, "PUT", kPvcs + "/c", claim.serialize());
    CHECK(updated.code == 200);
    CHECK(Str(updated.body, {"spec", "resources", "requests", "storage"}) == "3Gi");
  }
  SECTION("only the storage request: limits and other requests are immutable") {
    Reply limits = Admin(s.api, "PATCH", kPvcs + "/c", R"({"spec":{"resources":{"limits":{"storage":"5Gi"}}}})", kMerge);
    CHECK(limits.code == 422);
    CHECK(CauseFields(limits.body) == std::vector<std::string>{"spec"});
    CHECK(Str(limits.body, {"message"}) ==
          "PersistentVolumeClaim \"c\" is invalid: spec: Forbidden: spec is immutable after creation except "
          "resources.requests and volumeAttributesClassName for bound claims");
  }
  SECTION("a claim that is not bound may not change its request at all") {
    REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("pending", "absent")).code == 201);
    Reply grow = Grow(s.api, "pending", "2Gi");
    CHECK(grow.code == 422);
    CHECK(CauseFields(grow.body) == std::vector<std::string>{"spec"});
    Reply shrink = Grow(s.api, "pending", "1Mi");
    CHECK(shrink.code == 422);
    CHECK(CauseFields(shrink.body) == std::vector<std::string>{"spec", "spec.resources.requests.storage"});
  }
}

TEST_CASE("growing needs a class with allowVolumeExpansion: true (PersistentVolumeClaimResize, 403 Forbidden)") {
  Server s;
  const std::string refused =
      "persistentvolumeclaims \"c\" is forbidden: only dynamically provisioned pvc can be resized and the "
      "storageclass that provisions the pvc must support resize";
  for (const std::string allow : {"", "false"}) {
    SECTION("allowVolumeExpansion " + (allow.empty() ? std::string("unset") : allow)) {
      REQUIRE(Admin(s.api, "POST", kClasses, Class(allow)).code == 201);
      BoundClaim(s.api, "c");
      Reply grow = Grow(s.api, "c", "2Gi");
      CHECK(grow.code == 403);
      CHECK(Str(grow.body, {"reason"}) == "Forbidden");
      CHECK(Str(grow.body, {"message"}) == refused);
      CHECK(Str(grow.body, {"details", "name"}) == "c");
      CHECK(Str(grow.body, {"details", "kind"}) == "persistentvolumeclaims");
      CHECK(Str(Admin(s.api, "GET", kPvcs + "/c").body, {"spec", "resources", "requests", "storage"}) == "1Gi");
      CHECK(Grow(s.api, "c", "512Mi").code == 422);  // validation comes before admission
    }
  }
  SECTION("a claim whose class does not exist") {
    BoundClaim(s.api, "c");
    CHECK(Grow(s.api, "c", "2Gi").code == 403);
  }
  SECTION("a class that allows it: the claim grows; its other fields stay as they were") {
    REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
    BoundClaim(s.api, "c");
    Reply grow = Grow(s.api, "c", "2Gi");
    CHECK(grow.code == 200);
    CHECK(Str(grow.body, {"spec", "volumeName"}).rfind("pvc-", 0) == 0);
  }
}

TEST_CASE("the expand controller answers growth with a Warning ExternalExpanding event and no annotation") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");
  CHECK(EventsWithReason(s.api, "ExternalExpanding").empty());  // binding is no growth

  REQUIRE(Grow(s.api, "c", "2Gi").code == 200);
  auto events = EventsWithReason(s.api, "ExternalExpanding");
  REQUIRE(events.size() == 1);
  const Json& ev = events[0];
  CHECK(Str(ev, {"type"}) == "Warning");
  CHECK(Str(ev, {"message"}) ==
        "Ignoring the PVC: didn't find a plugin capable of expanding the volume; waiting for an external controller "
        "to process this PVC.");
  CHECK(Str(ev, {"source", "component"}) == "volume_expand");
  CHECK(Str(ev, {"involvedObject", "kind"}) == "PersistentVolumeClaim");
  CHECK(Str(ev, {"involvedObject", "name"}) == "c");
  CHECK(ev.get("count").get<double>() == 1);
  Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
  CHECK(fake::Annotation(claim, "volume.kubernetes.io/storage-resizer").empty());
  CHECK(Path(claim, {"status", "conditions"}) == nullptr);

  SECTION("growing again counts the same event again, as the event recorder does") {
    REQUIRE(Grow(s.api, "c", "3Gi").code == 200);
    events = EventsWithReason(s.api, "ExternalExpanding");
    REQUIRE(events.size() == 1);
    CHECK(events[0].get("count").get<double>() == 2);
  }
  SECTION("other changes of the claim are no growth") {
    REQUIRE(Admin(s.api, "PATCH", kPvcs + "/c", R"({"metadata":{"labels":{"a":"b"}}})", kMerge).code == 200);
    CHECK(EventsWithReason(s.api, "ExternalExpanding")[0].get("count").get<double>() == 1);
  }
}

TEST_CASE("a claim bound to a larger volume grows up to its capacity without an event") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("big", "").replace(Pv("big").find("1Gi"), 3, "5Gi")).code == 201);
  REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("c")).code == 201);
  REQUIRE(Str(Admin(s.api, "GET", kPvcs + "/c").body, {"status", "capacity", "storage"}) == "5Gi");
  REQUIRE(Grow(s.api, "c", "5Gi").code == 200);
  CHECK(EventsWithReason(s.api, "ExternalExpanding").empty());
  REQUIRE(Grow(s.api, "c", "6Gi").code == 200);
  CHECK(EventsWithReason(s.api, "ExternalExpanding").size() == 1);
}

TEST_CASE("/status: the status changes, the spec does not; the main resource keeps the status") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");
  const std::string status = kPvcs + "/c/status";

  SECTION("GET /status answers the whole claim") {
    Reply got = Admin(s.api, "GET", status);
    CHECK(got.code == 200);
    CHECK(Str(got.body, {"spec", "resources", "requests", "storage"}) == "1Gi");
    CHECK(Str(got.body, {"status", "phase"}) == "Bound");
  }
  SECTION("merge patch: status written, spec ignored, metadata through") {
    Reply r = Admin(s.api, "PATCH", status,
                    R"({"metadata":{"labels":{"l":"1"}},"spec":{"resources":{"requests":{"storage":"9Gi"}}},)"
                    R"("status":{"capacity":{"storage":"2Gi"}}})",
                    kMerge);
    REQUIRE(r.code == 200);
    CHECK(Str(r.body, {"status", "capacity", "storage"}) == "2Gi");
    CHECK(Str(r.body, {"spec", "resources", "requests", "storage"}) == "1Gi");
    CHECK(Str(r.body, {"metadata", "labels", "l"}) == "1");
  }
  SECTION("JSON patch") {
    Reply r = Admin(s.api, "PATCH", status, R"([{"op":"replace","path":"/status/capacity/storage","value":"2Gi"}])",
                    "application/json-patch+json");
    REQUIRE(r.code == 200);
    CHECK(Str(r.body, {"status", "capacity", "storage"}) == "2Gi");
  }
  SECTION("PUT writes the status it is given: a status left out is emptied") {
    Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
    claim.get<fake::JsonObject>().erase("status");
    Reply r = Admin(s.api, "PUT", status, claim.serialize());
    REQUIRE(r.code == 200);
    CHECK(Path(r.body, {"status"}) == nullptr);
  }
  SECTION("a stale resourceVersion is a conflict") {
    Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
    REQUIRE(Admin(s.api, "PATCH", kPvcs + "/c", R"({"metadata":{"labels":{"l":"1"}}})", kMerge).code == 200);
    CHECK(Admin(s.api, "PUT", status, claim.serialize()).code == 409);
    const std::string stale = Str(claim, {"metadata", "resourceVersion"});
    CHECK(Admin(s.api, "PATCH", status, R"({"metadata":{"resourceVersion":")" + stale + R"("},"status":{}})", kMerge).code ==
          409);
  }
  SECTION("allocatedResources and resizeStatus are dropped: RecoverVolumeExpansionFailure is off") {
    Reply r = Admin(s.api, "PATCH", status,
                    R"({"status":{"allocatedResources":{"storage":"2Gi"},"resizeStatus":"ControllerExpansionInProgress"}})",
                    kMerge);
    REQUIRE(r.code == 200);
    CHECK(Path(r.body, {"status", "allocatedResources"}) == nullptr);
    CHECK(Path(r.body, {"status", "resizeStatus"}) == nullptr);
  }
  SECTION("a negative capacity is invalid") {
    Reply r = Admin(s.api, "PATCH", status, R"({"status":{"capacity":{"storage":"-1Gi"}}})", kMerge);
    CHECK(r.code == 422);
    CHECK(Str(r.body, {"message"}) == "PersistentVolumeClaim \"c\" is invalid: status.capacity[storage]: Invalid value: "
                                      "-1073741824: must be a valid resource quantity");
  }
  SECTION("an update of the claim itself keeps the stored status") {
    Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
    fake::Obj(claim, {"status"})["phase"] = Json("Lost");
    fake::Obj(claim, {"status", "capacity"})["storage"] = Json("7Gi");
    Reply r = Admin(s.api, "PUT", kPvcs + "/c", claim.serialize());
    REQUIRE(r.code == 200);
    CHECK(Str(r.body, {"status", "phase"}) == "Bound");
    CHECK(Str(r.body, {"status", "capacity", "storage"}) == "1Gi");
    CHECK(Str(Admin(s.api, "PATCH", kPvcs + "/c", R"({"status":{"phase":"Lost"}})", kMerge).body, {"status", "phase"}) ==
          "Bound");
  }
}

TEST_CASE("a watch of the claims sees a /status change as MODIFIED") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");
  const std::string rv = Str(Admin(s.api, "GET", kPvcs + "/c").body, {"metadata", "resourceVersion"});
  REQUIRE(Admin(s.api, "PATCH", kPvcs + "/c/status", R"({"status":{"capacity":{"storage":"2Gi"}}})", kMerge).code == 200);
  auto events = WatchEvents(s.api, kPvcs + "?watch=true&timeoutSeconds=5&resourceVersion=" + rv, 1);
  REQUIRE(events.size() == 1);
  CHECK(Str(events[0], {"type"}) == "MODIFIED");
  CHECK(Str(events[0].get("object"), {"status", "capacity", "storage"}) == "2Gi");
}

TEST_CASE("RBAC: persistentvolumeclaims/status is a resource of its own") {
  std::string dir = TempDir();
  struct Cleanup {
    std::string d;
    ~Cleanup() { std::filesystem::remove_all(d); }
  } cleanup{dir};  // destroyed after the server below
  std::ofstream(dir + "/rbac.yaml") << R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: claims}
rules:
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims/status"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: claims}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: claims}
subjects:
- {kind: ServiceAccount, name: hostpath-provisioner, namespace: kube-system}
)";
  fake::ApiServerOptions o;
  o.dir = dir + "/api";
  o.rbac_files = {dir + "/rbac.yaml"};
  Server s(o);
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");
  const std::string sa = s.api.sa_token();
  const std::string patch = R"({"status":{"capacity":{"storage":"2Gi"}}})";
  Reply denied = Call(s.api, sa, "PATCH", kPvcs + "/c/status", patch, kMerge);
  CHECK(denied.code == 403);
  CHECK(Str(denied.body, {"message"}) ==
        "persistentvolumeclaims \"c\" is forbidden: User \"system:serviceaccount:kube-system:hostpath-provisioner\" "
        "cannot patch resource \"persistentvolumeclaims/status\" in API group \"\" in the namespace \"default\"");
  CHECK(Call(s.api, sa, "GET", kPvcs + "/c/status").code == 200);
  CHECK(Call(s.api, sa, "PATCH", kPvcs + "/c", R"({"metadata":{"labels":{"l":"1"}}})", kMerge).code == 200);
  CHECK(Call(s.api, sa, "PUT", kPvcs + "/c/status", Admin(s.api, "GET", kPvcs + "/c").body.serialize()).code == 403);
  CHECK(Str(Admin(s.api, "GET", kPvcs + "/c").body, {"status", "capacity", "storage"}) == "1Gi");
}

TEST_CASE("a resizer finishes an expansion through /status and the volume, as external-resizer does") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  const std::string pv = "pvc-" + BoundClaim(s.api, "c");
  REQUIRE(Grow(s.api, "c", "2Gi").code == 200);
  const std::string rv = Str(Admin(s.api, "GET", kPvcs + "/c").body, {"metadata", "resourceVersion"});

  // markPVCResizeInProgress: the Resizing condition, on the claim as the resizer last saw it.
  Reply resizing = Admin(s.api, "PATCH", kPvcs + "/c/status",
                         R"({"metadata":{"resourceVersion":")" + rv +
                             R"("},"status":{"conditions":[{"type":"Resizing","status":"True",)"
                             R"("lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}})",
                         kMerge);
  REQUIRE(resizing.code == 200);
  CHECK(Str(resizing.body.get("status").get("conditions").get(0), {"type"}) == "Resizing");
  // updatePVCapacity: the volume's new size.
  Reply grown = Admin(s.api, "PATCH", kPvs + "/" + pv, R"({"spec":{"capacity":{"storage":"2Gi"}}})", kMerge);
  REQUIRE(grown.code == 200);
  CHECK(Str(grown.body, {"spec", "capacity", "storage"}) == "2Gi");
  // markPVCResizeFinished (no node expansion needed): the claim's capacity, resize conditions gone.
  const std::string rv2 = Str(resizing.body, {"metadata", "resourceVersion"});
  Reply done = Admin(s.api, "PATCH", kPvcs + "/c/status",
                     R"({"metadata":{"resourceVersion":")" + rv2 + R"("},"status":{"capacity":{"storage":"2Gi"},"conditions":null}})",
                     kMerge);
  REQUIRE(done.code == 200);

  Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
  CHECK(Str(claim, {"status", "phase"}) == "Bound");
  CHECK(Str(claim, {"status", "capacity", "storage"}) == "2Gi");
  CHECK(Path(claim, {"status", "conditions"}) == nullptr);
  CHECK(Str(Admin(s.api, "GET", kPvs + "/" + pv).body, {"status", "phase"}) == "Bound");
  auto events = EventsWithReason(s.api, "ExternalExpanding");
  REQUIRE(events.size() == 1);  // the capacity's growth made the expand controller look, and leave it
  CHECK(events[0].get("count").get<double>() == 1);
}

TEST_CASE("strategic merge patches of /status merge conditions by type, as external-resizer sends them") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, Class("true")).code == 201);
  BoundClaim(s.api, "c");
  const std::string smp = "application/strategic-merge-patch+json";
  const std::string status = kPvcs + "/c/status";
  auto types = [](const Json& claim) {
    std::vector<std::string> out;
    for (const Json& c : claim.get("status").get("conditions").get<fake::JsonArray>()) out.push_back(Str(c, {"type"}));
    return out;
  };
  REQUIRE(Admin(s.api, "PATCH", status, R"({"status":{"conditions":[{"type":"Other","status":"True"}]}})", smp).code == 200);
  // markPVCResizeInProgress: the two-way merge patch from no resize condition to Resizing.
  Reply resizing = Admin(s.api, "PATCH", status,
                         R"({"status":{"$setElementOrder/conditions":[{"type":"Other"},{"type":"Resizing"}],)"
                         R"("conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:00Z",)"
                         R"("status":"True","type":"Resizing"}]}})",
                         smp);
  REQUIRE(resizing.code == 200);
  CHECK(types(resizing.body) == std::vector<std::string>{"Other", "Resizing"});
  CHECK(Path(resizing.body.get("status"), {"$setElementOrder/conditions"}) == nullptr);
  // markPVCAsFSResizeRequired: Resizing replaced by FileSystemResizePending.
  Reply pending = Admin(s.api, "PATCH", status,
                        R"({"status":{"$setElementOrder/conditions":[{"type":"Other"},{"type":"FileSystemResizePending"}],)"
                        R"("conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:01Z","message":)"
                        R"("Waiting for user to (re-)start a pod to finish file system resize of volume on node.",)"
                        R"("status":"True","type":"FileSystemResizePending"},{"$patch":"delete","type":"Resizing"}]}})",
                        smp);
  REQUIRE(pending.code == 200);
  CHECK(types(pending.body) == std::vector<std::string>{"Other", "FileSystemResizePending"});
  CHECK(Path(pending.body.get("status").get("conditions").get(1), {"lastProbeTime"}) == nullptr);
  // The claim's capacity, and the resize condition dropped by its own merge key.
  Reply done = Admin(s.api, "PATCH", status,
                     R"({"status":{"$setElementOrder/conditions":[{"type":"Other"}],"capacity":{"storage":"2Gi"},)"
                     R"("conditions":[{"$patch":"delete","type":"FileSystemResizePending"}]}})",
                     smp);
  REQUIRE(done.code == 200);
  CHECK(types(done.body) == std::vector<std::string>{"Other"});
  CHECK(Str(done.body, {"status", "capacity", "storage"}) == "2Gi");
  // All conditions gone: the patch sets the list to null.
  CHECK(Path(Admin(s.api, "PATCH", status, R"({"status":{"conditions":null}})", smp).body, {"status", "conditions"}) ==
        nullptr);
}
