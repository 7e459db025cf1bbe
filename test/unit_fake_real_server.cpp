// Tests of the fake API server where a comparison with a real Kubernetes 1.24 API server, request
// by request, found it answering otherwise (issue 33, item 4). Each case says what the real
// server does and which part of Kubernetes' source does it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/fake_apiserver.hpp"
#include "test/fake_test_client.hpp"

using namespace fake_test;

namespace {

// A PV with the finalizer example.com/keep besides the pv-protection one admission adds.
std::string KeptPv(const std::string& name) {
  std::string body = Pv(name);
  return body.replace(body.find("\"name\":\"" + name + "\""), name.size() + 9,
                      "\"name\":\"" + name + "\",\"finalizers\":[\"example.com/keep\"]");
}

}  // namespace

// Go's encoding/json omits an empty slice tagged omitempty (ObjectMeta.Finalizers, Labels,
// Annotations, OwnerReferences): what the real server answers and stores has no empty list.
TEST_CASE("a merge patch that empties a PV's finalizers answers without metadata.finalizers") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("p")).code == 201);
  Reply r = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"finalizers":[],"labels":{}}})", "application/merge-patch+json");
  REQUIRE(r.code == 200);
  CHECK(fake::Path(r.body, {"metadata", "finalizers"}) == nullptr);
  CHECK(fake::Path(r.body, {"metadata", "labels"}) == nullptr);
  CHECK(fake::Path(Admin(s.api, "GET", kPvs + "/p").body, {"metadata", "finalizers"}) == nullptr);
}

// Store.Update's shouldDeleteDuringUpdate (registry/generic/registry/store.go): an update that
// leaves an object being deleted without finalizers deletes it; the answer is its last state.
TEST_CASE("a merge patch of finalizers [] on a PV being deleted removes the PV") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, KeptPv("f")).code == 201);
  REQUIRE(Admin(s.api, "DELETE", kPvs + "/f").code == 200);
  // The pv-protection controller removed its own finalizer (the PV is not bound); this one stays.
  REQUIRE(fake::StringList(Admin(s.api, "GET", kPvs + "/f").body, {"metadata", "finalizers"}) ==
          std::vector<std::string>{"example.com/keep"});
  Reply r = Admin(s.api, "PATCH", kPvs + "/f", R"({"metadata":{"finalizers":[]}})", "application/merge-patch+json");
  CHECK(r.code == 200);
  CHECK(fake::Path(r.body, {"metadata", "finalizers"}) == nullptr);
  CHECK(Admin(s.api, "GET", kPvs + "/f").code == 404);
}

// The watch cache starts when the server does (watch_cache.go: with no event dropped since its
// first list, the oldest resourceVersion served is that list's + 1, and older ones are "too old
// resource version: RV (list RV)"); resourceVersion 0 or none is the current state.
TEST_CASE("a watch from resourceVersion 1 on a server that started later is one ERROR event, 410 Expired") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);
  auto expired = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&resourceVersion=1", 2);
  REQUIRE(expired.size() == 1);
  CHECK(Str(expired[0], {"type"}) == "ERROR");
  CHECK(expired[0].get("object").get("code").get<double>() == 410);
  CHECK(Str(expired[0], {"object", "reason"}) == "Expired");
  CHECK(Str(expired[0], {"object", "message"}).rfind("too old resource version: 1 (", 0) == 0);

  for (const std::string from : {"&resourceVersion=0", ""}) {
    auto current = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30" + from, 1);
    REQUIRE(current.size() == 1);
    CHECK(Str(current[0], {"type"}) == "ADDED");
    CHECK(Str(current[0], {"object", "metadata", "name"}) == "a");
  }
  SECTION("every write after the start is in the history: a watch from the first object's creation sees the rest") {
    Reply first = Admin(s.api, "GET", kPvs + "/a");
    REQUIRE(Admin(s.api, "POST", kPvs, Pv("b")).code == 201);
    // "a" was created (Pending), then made Available by the PV controller: from its creation on
    // comes that change, then "b".
    std::string created_rv = std::to_string(std::stoull(Str(first.body, {"metadata", "resourceVersion"})) - 1);
    auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&resourceVersion=" + created_rv, 2);
    REQUIRE(events.size() >= 2);
    CHECK(Str(events[0], {"type"}) == "MODIFIED");
    CHECK(Str(events[0], {"object", "metadata", "name"}) == "a");
    CHECK(Str(events[1], {"type"}) == "ADDED");
    CHECK(Str(events[1], {"object", "metadata", "name"}) == "b");
  }
}

// Anonymous auth is on by default: a request without credentials is system:anonymous (group
// system:unauthenticated), whom the bootstrap RBAC policy allows only health and version
// (system:public-info-viewer); discovery is for system:authenticated. A token that names no one
// is 401.
TEST_CASE("a request without credentials is 403 for system:anonymous; a wrong token is 401") {
  Server s;
  Reply anonymous = Call(s.api, "", "GET", kPvs);
  CHECK(anonymous.code == 403);
  CHECK(Str(anonymous.body, {"reason"}) == "Forbidden");
  CHECK(Str(anonymous.body, {"message"}) ==
        "persistentvolumes is forbidden: User \"system:anonymous\" cannot list resource \"persistentvolumes\" in API group \"\" at the cluster scope");
  CHECK(Str(anonymous.body, {"details", "kind"}) == "persistentvolumes");
  Reply discovery = Call(s.api, "", "GET", "/api");
  CHECK(discovery.code == 403);
  CHECK(Str(discovery.body, {"message"}) == "forbidden: User \"system:anonymous\" cannot get path \"/api\"");
  CHECK(Call(s.api, "", "GET", "/healthz").code == 200);
  CHECK(Call(s.api, "", "GET", "/version").code == 200);
  Reply wrong = Call(s.api, "wrong", "GET", kPvs);
  CHECK(wrong.code == 401);
  CHECK(Str(wrong.body, {"reason"}) == "Unauthorized");
  CHECK(Call(s.api, "", "GET", "/fake/requests").code == 403);
}
