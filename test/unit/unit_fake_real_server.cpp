// Tests of the fake API server where a comparison with a real Kubernetes 1.24 API server, request
// by request, found it answering otherwise (issue 33, item 4). Each case says what the real
// server does and which part of Kubernetes' source does it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/fake/fake_apiserver.hpp"
#include "test/fake/fake_kubelet.hpp"
#include "test/fake/fake_test_client.hpp"

using namespace fake_test;

namespace {

const std::string kNodes = "/api/v1/nodes";

// A PV with the finalizer example.com/keep besides the pv-protection one admission adds.
std::string KeptPv(const std::string& name) {
  std::string body = Pv(name);
  return body.replace(body.find("\"name\":\"" + name + "\""), name.size() + 9,
                      "\"name\":\"" + name + "\",\"finalizers\":[\"example.com/keep\"]");
}

std::vector<std::string> Taints(const Json& node) {
  std::vector<std::string> out;
  if (const Json* taints = fake::Path(node, {"spec", "taints"}))
    for (const Json& t : taints->get<fake::JsonArray>()) out.push_back(Str(t, {"key"}) + ":" + Str(t, {"effect"}));
  return out;
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

// TaintNodesByCondition admission taints every new Node not-ready:NoSchedule; the node
// lifecycle controller's doNoScheduleTaintingPass then keeps the condition taints in step.
TEST_CASE("a new Node gets the not-ready:NoSchedule taint, which goes once the node is Ready") {
  Server s;
  Reply registered = Admin(s.api, "POST", kNodes, fake_kubelet::NodeJson("ready"));
  REQUIRE(registered.code == 201);
  CHECK(Taints(registered.body) == std::vector<std::string>{"node.kubernetes.io/not-ready:NoSchedule"});
  CHECK(Taints(Admin(s.api, "GET", kNodes + "/ready").body).empty());

  std::string not_ready = fake_kubelet::NodeJson("late");
  not_ready.replace(not_ready.find("\"True\""), 6, "\"False\"");
  REQUIRE(Admin(s.api, "POST", kNodes, not_ready).code == 201);
  CHECK(Taints(Admin(s.api, "GET", kNodes + "/late").body) == std::vector<std::string>{"node.kubernetes.io/not-ready:NoSchedule"});

  SECTION("Ready later: the taint goes; not ready again: it comes back, with the time it was added") {
    const char* ready = R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})";
    REQUIRE(Admin(s.api, "PATCH", kNodes + "/late/status", ready, "application/merge-patch+json").code == 200);
    CHECK(Taints(Admin(s.api, "GET", kNodes + "/late").body).empty());
    const char* unknown = R"({"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}})";
    REQUIRE(Admin(s.api, "PATCH", kNodes + "/late/status", unknown, "application/merge-patch+json").code == 200);
    Json node = Admin(s.api, "GET", kNodes + "/late").body;
    CHECK(Taints(node) == std::vector<std::string>{"node.kubernetes.io/unreachable:NoSchedule"});
    CHECK(!Str(node.get("spec").get("taints").get(0), {"timeAdded"}).empty());
  }
  SECTION("a taint of its own stays; the taint is not added twice") {
    Reply own = Admin(s.api, "POST", kNodes,
                      R"({"metadata":{"name":"own"},"spec":{"taints":[{"key":"example.com/x","effect":"NoExecute"},{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}})");
    REQUIRE(own.code == 201);
    CHECK(Taints(own.body) == std::vector<std::string>{"example.com/x:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"});
    // No conditions at all: nothing calls for the taint (the controller marks such a node Unknown
    // only after its grace period, which the fake does not model).
    CHECK(Taints(Admin(s.api, "GET", kNodes + "/own").body) == std::vector<std::string>{"example.com/x:NoExecute"});
  }
}

// labels.Parse (apimachinery/pkg/labels/selector.go): set-based requirements, and its errors as 400.
TEST_CASE("set-based label selectors are served: in, notin, exists, !exists, gt, lt") {
  Server s;
  for (const char* n : {"a", "b", "c", "d"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
  for (const auto& [name, tier] : std::vector<std::pair<std::string, std::string>>{{"a", "x"}, {"b", "y"}, {"c", "10"}})
    REQUIRE(Admin(s.api, "PATCH", kPvs + "/" + name, R"({"metadata":{"labels":{"tier":")" + tier + "\"}}}",
                  "application/merge-patch+json").code == 200);
  struct Case {
    const char* name;
    std::string selector;  // URL-encoded
    std::vector<std::string> items;
  };
  const Case cases[] = {
      {"in", "tier%20in%20(x,y)", {"a", "b"}},
      {"in, spaces anywhere", "tier%20in%20(%20x%20,%20z%20)", {"a"}},
      {"notin: also those without the label", "tier%20notin%20(x)", {"b", "c", "d"}},
      {"exists", "tier", {"a", "b", "c"}},
      {"does not exist", "!tier", {"d"}},
      {"gt: only integer values", "tier%3E9", {"c"}},
      {"lt", "tier%3C11", {"c"}},
      {"two terms", "tier%20in%20(x,y),tier!%3Dy", {"a"}},
      {"in () is the empty value", "tier%20in%20()", {}},
      {"a key named in", "in", {}},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply list = Admin(s.api, "GET", kPvs + "?labelSelector=" + c.selector);
      INFO(list.body.serialize());
      REQUIRE(list.code == 200);
      CHECK(ItemNames(list.body) == c.items);
      auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=1&labelSelector=" + c.selector, c.items.size() + 1);
      std::vector<std::string> watched;
      for (const Json& e : events) watched.push_back(Str(e, {"object", "metadata", "name"}));
      CHECK(watched == c.items);
    }
  }
  SECTION("refused as the parser refuses them, with its message") {
    struct Bad {
      std::string selector, message;
    };
    const Bad bad[] = {
        {"tier%20in%20(x", "unable to parse requirement: found '', expected: ',' or ')'"},
        {"tier%20in%20x", "unable to parse requirement: found 'x' expected: '('"},
        {"tier%20notin", "unable to parse requirement: found '' expected: '('"},
        {"tier%3E", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"},
        {"!tier%3Dx", "found '=', expected: ',' or 'end of string'"},
        {"tier,", "found '', expected: identifier after ','"},
        {"tier%3D%3D%3Dx", "unable to parse requirement: found '=', expected: identifier"},
    };
    for (const Bad& b : bad) {
      Reply r = Admin(s.api, "GET", kPvs + "?labelSelector=" + b.selector);
      INFO(b.selector);
      CHECK(r.code == 400);
      CHECK(Str(r.body, {"reason"}) == "BadRequest");
      CHECK(Str(r.body, {"message"}) == b.message);
    }
  }
}

// The cacher serves resourceVersion=0 from its cache, which ignores limit (cacher.go: hasLimit
// needs resourceVersion != "0"); etcd3's GetList counts the remaining items only without a
// selector (opts.Predicate.Empty()).
TEST_CASE("limit with resourceVersion=0 is one full page; a paged list with a selector has no remainingItemCount") {
  Server s;
  for (const char* n : {"a", "b", "c"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
  Json cached = Admin(s.api, "GET", kPvs + "?limit=1&resourceVersion=0").body;
  CHECK(ItemNames(cached) == std::vector<std::string>{"a", "b", "c"});
  CHECK(fake::Path(cached, {"metadata", "continue"}) == nullptr);

  Json page = Admin(s.api, "GET", kPvs + "?limit=1").body;
  CHECK(ItemNames(page) == std::vector<std::string>{"a"});
  CHECK(page.get("metadata").get("remainingItemCount").get<double>() == 2);

  Json selected = Admin(s.api, "GET", kPvs + "?limit=1&labelSelector=!tier").body;
  CHECK(ItemNames(selected) == std::vector<std::string>{"a"});
  CHECK(!Str(selected, {"metadata", "continue"}).empty());
  CHECK(fake::Path(selected, {"metadata", "remainingItemCount"}) == nullptr);
  Json by_field = Admin(s.api, "GET", kPvs + "?limit=1&fieldSelector=metadata.name!%3Dz").body;
  CHECK(fake::Path(by_field, {"metadata", "remainingItemCount"}) == nullptr);
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
