// Tests of the fake API server itself: a real server on loopback, reached over verified HTTPS.
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <fstream>
#include <sstream>
#include <thread>

#include "test/fake/fake_apiserver.hpp"
#include "test/fake/fake_test_client.hpp"

using namespace fake_test;

TEST_CASE("start writes the CA, kubeconfigs, service-account files and port") {
  Server s;
  const std::string d = s.api.dir();
  CHECK(ReadFile(d + "/ca.crt").find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK(ReadFile(d + "/serviceaccount/ca.crt") == ReadFile(d + "/ca.crt"));
  CHECK(ReadFile(d + "/serviceaccount/token") == s.api.sa_token());
  CHECK(ReadFile(d + "/serviceaccount/namespace") == "kube-system");
  CHECK(ReadFile(d + "/port") == std::to_string(s.api.port()) + "\n");
  std::string admin = ReadFile(d + "/admin.kubeconfig");
  CHECK(admin.find("server: " + s.api.url()) != std::string::npos);
  CHECK(admin.find("token: " + s.api.admin_token()) != std::string::npos);
  CHECK(ReadFile(d + "/provisioner.kubeconfig").find("tokenFile: " + d + "/serviceaccount/token") != std::string::npos);
}

TEST_CASE("requests with a token the server does not know get 401 Unauthorized (none: unit_fake_real_server.cpp)") {
  Server s;
  Reply r = Call(s.api, "wrong", "GET", kPvs);
  CHECK(r.code == 401);
  CHECK(Str(r.body, {"reason"}) == "Unauthorized");
  CHECK(Str(r.body, {"kind"}) == "Status");
  CHECK(Call(s.api, s.api.sa_token(), "GET", kPvs).code == 200);
}

TEST_CASE("create, get, create twice, get missing") {
  Server s;
  Reply created = Admin(s.api, "POST", kPvs, Pv("a"));
  REQUIRE(created.code == 201);
  CHECK(!Str(created.body, {"metadata", "uid"}).empty());
  CHECK(!Str(created.body, {"metadata", "creationTimestamp"}).empty());
  CHECK(fake::StringList(created.body, {"metadata", "finalizers"}) == std::vector<std::string>{"kubernetes.io/pv-protection"});
  Reply got = Admin(s.api, "GET", kPvs + "/a");
  CHECK(got.code == 200);
  CHECK(Str(got.body, {"metadata", "uid"}) == Str(created.body, {"metadata", "uid"}));
  CHECK(Str(got.body, {"status", "phase"}) == "Available");

  Reply again = Admin(s.api, "POST", kPvs, Pv("a"));
  CHECK(again.code == 409);
  CHECK(Str(again.body, {"reason"}) == "AlreadyExists");
  CHECK(Str(again.body, {"message"}) == "persistentvolumes \"a\" already exists");
  CHECK(Str(again.body, {"details", "name"}) == "a");
  CHECK(Str(again.body, {"details", "kind"}) == "persistentvolumes");

  Reply missing = Admin(s.api, "GET", kPvs + "/nope");
  CHECK(missing.code == 404);
  CHECK(Str(missing.body, {"reason"}) == "NotFound");
  CHECK(Str(missing.body, {"message"}) == "persistentvolumes \"nope\" not found");

  Reply gen = Admin(s.api, "POST", kPvs, R"({"metadata":{"generateName":"gen-"},)" + Pv("x").substr(Pv("x").find("\"spec\"")));
  CHECK(gen.code == 201);
  CHECK(Str(gen.body, {"metadata", "name"}).rfind("gen-", 0) == 0);
  CHECK(Str(gen.body, {"metadata", "name"}).size() == 9);
}

TEST_CASE("invalid objects are refused with 422 and field causes") {
  struct Case {
    const char* name;
    std::string path, body, field;
  };
  std::vector<Case> cases = {
      {"name not a DNS subdomain", kPvs, Pv("Bad_Name"), "metadata.name"},
      {"name starting with a dash", kPvs, Pv("-a"), "metadata.name"},
      {"name ending with a dot", kPvs, Pv("a.b."), "metadata.name"},
      {"name with an empty label", kPvs, Pv("a..b"), "metadata.name"},
      {"name with a label ending in a dash", kPvs, Pv("a-.b"), "metadata.name"},
      {"namespace name with a dot (a DNS label)", "/api/v1/namespaces", R"({"metadata":{"name":"a.b"}})", "metadata.name"},
      {"PV without capacity", kPvs,
       R"({"metadata":{"name":"a"},"spec":{"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/x"}}})", "spec.capacity"},
      {"PV without access modes", kPvs,
       R"({"metadata":{"name":"a"},"spec":{"capacity":{"storage":"1Gi"},"hostPath":{"path":"/x"}}})", "spec.accessModes"},
      {"PV without a volume source", kPvs,
       R"({"metadata":{"name":"a"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"]}})", "spec"},
      {"PV with two volume sources", kPvs, Pv("a", R"(,"local":{"path":"/y"})"), "spec.local"},
      {"PV hostPath with ..", kPvs, Pv("a", "", "/data/../etc"), "spec.hostPath.path"},
      {"PVC without access modes", kPvcs,
       R"({"metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}})", "spec.accessModes"},
      {"PVC without a storage request", kPvcs, R"({"metadata":{"name":"c"},"spec":{"accessModes":["ReadWriteOnce"]}})",
       "spec.resources[storage]"},
      {"Event about an object in another namespace", "/api/v1/namespaces/default/events",
       R"({"metadata":{"name":"e"},"involvedObject":{"kind":"PersistentVolumeClaim","namespace":"other","name":"c"},"reason":"R"})",
       "involvedObject.namespace"},
      {"Event about a PV outside default", "/api/v1/namespaces/kube-system/events",
       R"({"metadata":{"name":"e"},"involvedObject":{"kind":"PersistentVolume","name":"pv"},"reason":"R"})",
       "involvedObject.namespace"},
  };
  Server s;
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply r = Admin(s.api, "POST", c.path, c.body);
      CHECK(r.code == 422);
      CHECK(Str(r.body, {"reason"}) == "Invalid");
      const Json* causes = fake::Path(r.body, {"details", "causes"});
      REQUIRE(causes != nullptr);
      bool found = false;
      for (const Json& cause : causes->get<fake::JsonArray>()) found = found || Str(cause, {"field"}) == c.field;
      INFO(r.body.serialize());
      CHECK(found);
    }
  }
  SECTION("accepted: relative hostPath, event about a PV in default, dotted and dashed names") {
    CHECK(Admin(s.api, "POST", kPvs, Pv("rel", "", "relative/dir")).code == 201);
    CHECK(Admin(s.api, "POST", kPvs, Pv("pv-1.example.com")).code == 201);
    CHECK(Admin(s.api, "POST", kPvs, Pv("9")).code == 201);
    CHECK(Admin(s.api, "POST", "/api/v1/namespaces", R"({"metadata":{"name":"team-a1"}})").code == 201);
    CHECK(Admin(s.api, "POST", "/api/v1/namespaces/default/events",
                R"({"metadata":{"name":"e"},"involvedObject":{"kind":"PersistentVolume","name":"pv"},"reason":"R"})")
              .code == 201);
  }
  SECTION("the message names kind, name and field") {
    Reply r = Admin(s.api, "POST", kPvs, Pv("a", "", "/a/../b"));
    CHECK(Str(r.body, {"message"}) ==
          "PersistentVolume \"a\" is invalid: spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'");
  }
}

TEST_CASE("update needs the current resourceVersion") {
  Server s;
  Reply created = Admin(s.api, "POST", kPvs, Pv("a"));
  REQUIRE(created.code == 201);
  Json obj = Admin(s.api, "GET", kPvs + "/a").body;
  std::string rv = Str(obj, {"metadata", "resourceVersion"});
  fake::Obj(obj, {"metadata", "labels"})["x"] = Json("1");
  Reply ok = Admin(s.api, "PUT", kPvs + "/a", obj.serialize());
  CHECK(ok.code == 200);
  CHECK(std::stoull(Str(ok.body, {"metadata", "resourceVersion"})) > std::stoull(rv));

  fake::Obj(obj, {"metadata", "labels"})["x"] = Json("2");  // still the old resourceVersion
  Reply stale = Admin(s.api, "PUT", kPvs + "/a", obj.serialize());
  CHECK(stale.code == 409);
  CHECK(Str(stale.body, {"reason"}) == "Conflict");
  CHECK(Str(stale.body, {"message"}) ==
        "Operation cannot be fulfilled on persistentvolumes \"a\": the object has been modified; please apply your "
        "changes to the latest version and try again");

  Reply moved = Admin(s.api, "PATCH", kPvs + "/a", R"({"spec":{"hostPath":{"path":"/elsewhere"}}})", "application/merge-patch+json");
  CHECK(moved.code == 422);  // the volume source is immutable
  REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("c", "")).code == 201);  // class "": volume "a" does not match it
  Reply grown = Admin(s.api, "PATCH", kPvcs + "/c", R"({"spec":{"accessModes":["ReadWriteMany"]}})", "application/merge-patch+json");
  CHECK(grown.code == 422);  // so is a claim's spec, but for resources and a first volumeName
  Reply first_name = Admin(s.api, "PATCH", kPvcs + "/c", R"({"spec":{"volumeName":"v"}})", "application/merge-patch+json");
  INFO(first_name.body.serialize());
  CHECK(first_name.code == 200);
  CHECK(Admin(s.api, "PATCH", kPvcs + "/c", R"({"spec":{"volumeName":"w"}})", "application/merge-patch+json").code == 422);

  CHECK(Admin(s.api, "PUT", kPvs + "/missing", Pv("missing")).code == 404);
  CHECK(Admin(s.api, "PUT", kPvs + "/a", Pv("b")).code == 400);  // name differs from the URL
}

TEST_CASE("a watch from a list's resourceVersion gets every later change, in order") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("before")).code == 201);
  Reply list = Admin(s.api, "GET", kPvs);
  CHECK(Str(list.body, {"kind"}) == "PersistentVolumeList");
  CHECK(list.body.get("items").get<fake::JsonArray>().size() == 1);
  std::string rv = Str(list.body, {"metadata", "resourceVersion"});
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("after")).code == 201);
  REQUIRE(Admin(s.api, "DELETE", kPvs + "/before").code == 200);

  auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&resourceVersion=" + rv, 4);
  std::vector<std::string> seen;
  for (const Json& e : events) seen.push_back(Str(e, {"type"}) + " " + Str(e, {"object", "metadata", "name"}));
  // after: created (Pending) then Available by the PV controller; before: deletionTimestamp, finalizer removed.
  CHECK(seen == std::vector<std::string>{"ADDED after", "MODIFIED after", "MODIFIED before", "DELETED before"});

  SECTION("live events arrive after the backlog") {
    RawReply written;
    std::thread writer([&] { written = Send(s.api, s.api.admin_token(), "POST", kPvs, Pv("live")); });
    auto live = WatchEvents(s.api, kPvs + "?watch=1&timeoutSeconds=30&resourceVersion=" + Str(events.back(), {"object", "metadata", "resourceVersion"}), 1);
    writer.join();
    Checked(written);
    REQUIRE(!live.empty());
    CHECK(Str(live[0], {"type"}) == "ADDED");
    CHECK(Str(live[0], {"object", "metadata", "name"}) == "live");
  }
  SECTION("no resourceVersion: ADDED for every current object first") {
    auto initial = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30", 1);
    REQUIRE(initial.size() == 1);
    CHECK(Str(initial[0], {"type"}) == "ADDED");
    CHECK(Str(initial[0], {"object", "metadata", "name"}) == "after");
  }
}

TEST_CASE("a watch from before the history gets one ERROR event with 410 Expired") {
  fake::ApiServerOptions o;
  o.history = 2;
  Server s(o);
  for (const char* n : {"a", "b", "c"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
  auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&resourceVersion=1", 2);
  REQUIRE(events.size() == 1);
  CHECK(Str(events[0], {"type"}) == "ERROR");
  CHECK(events[0].get("object").get("code").get<double>() == 410);
  CHECK(Str(events[0], {"object", "reason"}) == "Expired");
  CHECK(Str(events[0], {"object", "message"}).rfind("too old resource version: 1 (", 0) == 0);

  SECTION("after /fake/compact even the latest list's resourceVersion is expired for older ones") {
    std::string rv = Str(Admin(s.api, "GET", kPvs).body, {"metadata", "resourceVersion"});
    REQUIRE(Admin(s.api, "POST", kPvs, Pv("d")).code == 201);
    REQUIRE(Admin(s.api, "POST", "/fake/compact").code == 200);
    auto after = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&resourceVersion=" + rv, 2);
    REQUIRE(after.size() == 1);
    CHECK(Str(after[0], {"type"}) == "ERROR");
  }
}

TEST_CASE("drop-watches ends an open watch") {
  Server s;
  std::atomic<bool> ended{false};
  std::thread dropper([&] {
    // Drops until the watch below has ended: a drop ends the watches open at that moment.
    while (!ended) {
      s.api.DropWatches();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::string rv = Str(Admin(s.api, "GET", kPvs).body, {"metadata", "resourceVersion"});
  auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=600&resourceVersion=" + rv, 1);
  ended = true;
  dropper.join();
  CHECK(events.empty());
}

TEST_CASE("the PV controller binds a provisioned volume and releases it when the claim goes") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  Reply claim = Admin(s.api, "POST", kPvcs, Pvc("c1"));
  REQUIRE(claim.code == 201);
  CHECK(Str(claim.body, {"status", "phase"}) == "Pending");
  Json annotated = Admin(s.api, "GET", kPvcs + "/c1").body;
  CHECK(fake::Annotation(annotated, "volume.kubernetes.io/storage-provisioner") == "example.com/hostpath");
  CHECK(fake::Annotation(annotated, "volume.beta.kubernetes.io/storage-provisioner") == "example.com/hostpath");

  std::string uid = Str(claim.body, {"metadata", "uid"});
  std::string ref = R"(,"claimRef":{"namespace":"default","name":"c1","uid":")" + uid + "\"}";
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("pvc-" + uid, ref)).code == 201);
  Json pv = Admin(s.api, "GET", kPvs + "/pvc-" + uid).body;
  Json bound = Admin(s.api, "GET", kPvcs + "/c1").body;
  CHECK(Str(pv, {"status", "phase"}) == "Bound");
  CHECK(Str(bound, {"status", "phase"}) == "Bound");
  CHECK(Str(bound, {"spec", "volumeName"}) == "pvc-" + uid);
  CHECK(Str(bound, {"status", "capacity", "storage"}) == "1Gi");
  CHECK(fake::StringList(bound, {"status", "accessModes"}) == std::vector<std::string>{"ReadWriteOnce"});
  CHECK(fake::Annotation(bound, "pv.kubernetes.io/bind-completed") == "yes");
  CHECK(fake::Annotation(bound, "pv.kubernetes.io/bound-by-controller") == "yes");

  SECTION("a bound PV being deleted waits for its claim; then Released, then gone") {
    Reply del = Admin(s.api, "DELETE", kPvs + "/pvc-" + uid);
    CHECK(del.code == 200);
    CHECK(!Str(del.body, {"metadata", "deletionTimestamp"}).empty());
    CHECK(Admin(s.api, "GET", kPvs + "/pvc-" + uid).code == 200);
    REQUIRE(Admin(s.api, "DELETE", kPvcs + "/c1").code == 200);
    CHECK(Admin(s.api, "GET", kPvcs + "/c1").code == 404);
    CHECK(Admin(s.api, "GET", kPvs + "/pvc-" + uid).code == 404);
  }
  SECTION("claim deleted: PV Released with its claimRef kept") {
    REQUIRE(Admin(s.api, "DELETE", kPvcs + "/c1").code == 200);
    CHECK(Admin(s.api, "GET", kPvcs + "/c1").code == 404);
    Json released = Admin(s.api, "GET", kPvs + "/pvc-" + uid).body;
    CHECK(Str(released, {"status", "phase"}) == "Released");
    CHECK(Str(released, {"spec", "claimRef", "uid"}) == uid);
  }
}

// /fake/hold-claim-binding: the volume's side of a bind now, the claim's when released, with no
// volume write after it (as a provisioner watching a real cluster sees a bind).
TEST_CASE("the PV controller holding the claims' side of binds: the volume Bound first, the claim when released") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  REQUIRE(Admin(s.api, "POST", "/fake/hold-claim-binding?on=maybe", "").code == 400);
  REQUIRE(Admin(s.api, "POST", "/fake/hold-claim-binding?on=true", "").code == 200);
  Reply claim = Admin(s.api, "POST", kPvcs, Pvc("c1"));
  REQUIRE(claim.code == 201);
  const std::string uid = Str(claim.body, {"metadata", "uid"}), pv = "pvc-" + uid;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv(pv, R"(,"claimRef":{"namespace":"default","name":"c1","uid":")" + uid + "\"}")).code == 201);
  // The fake's controllers run after a round of answers: read until their writes are in.
  auto until = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  REQUIRE(until([&] { return Str(Admin(s.api, "GET", kPvs + "/" + pv).body, {"status", "phase"}) == "Bound"; }));
  Json pending = Admin(s.api, "GET", kPvcs + "/c1").body;
  CHECK(Str(pending, {"status", "phase"}) == "Pending");
  CHECK(Str(pending, {"spec", "volumeName"}).empty());
  const std::string pv_version = Str(Admin(s.api, "GET", kPvs + "/" + pv).body, {"metadata", "resourceVersion"});

  REQUIRE(Admin(s.api, "POST", "/fake/hold-claim-binding?on=false", "").code == 200);
  REQUIRE(until([&] { return Str(Admin(s.api, "GET", kPvcs + "/c1").body, {"status", "phase"}) == "Bound"; }));
  Json bound = Admin(s.api, "GET", kPvcs + "/c1").body;
  CHECK(Str(bound, {"spec", "volumeName"}) == pv);
  CHECK(fake::Annotation(bound, "pv.kubernetes.io/bind-completed") == "yes");
  CHECK(Str(Admin(s.api, "GET", kPvs + "/" + pv).body, {"metadata", "resourceVersion"}) == pv_version);
}

TEST_CASE("claims: default class, WaitForFirstConsumer, static binding") {
  Server s;
  std::string def = R"({"metadata":{"name":"def","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/hostpath","volumeBindingMode":"WaitForFirstConsumer"})";
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", def).code == 201);
  std::string no_class = R"({"metadata":{"name":"c"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})";
  Reply c = Admin(s.api, "POST", kPvcs, no_class);
  REQUIRE(c.code == 201);
  CHECK(Str(c.body, {"spec", "storageClassName"}) == "def");
  CHECK(fake::Annotation(Admin(s.api, "GET", kPvcs + "/c").body, "volume.kubernetes.io/storage-provisioner").empty());
  Reply sel = Admin(s.api, "PATCH", kPvcs + "/c", R"({"metadata":{"annotations":{"volume.kubernetes.io/selected-node":"n1"}}})",
                    "application/merge-patch+json");
  REQUIRE(sel.code == 200);
  CHECK(fake::Annotation(Admin(s.api, "GET", kPvcs + "/c").body, "volume.kubernetes.io/storage-provisioner") ==
        "example.com/hostpath");

  // An Available PV of class "static" binds a matching claim of that class (Immediate: no class object).
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("big", "").replace(Pv("big").find("hostpath\""), 8, "static")).code == 201);
  REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("s", "static")).code == 201);
  Json claim = Admin(s.api, "GET", kPvcs + "/s").body;
  CHECK(Str(claim, {"status", "phase"}) == "Bound");
  CHECK(Str(claim, {"spec", "volumeName"}) == "big");
}

TEST_CASE("finalizers hold a delete until the last one is removed") {
  Server s;
  std::string body = Pv("f").replace(Pv("f").find("\"name\":\"f\""), 10, R"("name":"f","finalizers":["example.com/keep"])");
  Reply created = Admin(s.api, "POST", kPvs, body);
  REQUIRE(created.code == 201);

  SECTION("uid precondition mismatch: 409, nothing changes") {
    Reply r = Admin(s.api, "DELETE", kPvs + "/f", R"({"preconditions":{"uid":"other"}})");
    CHECK(r.code == 409);
    CHECK(Str(r.body, {"message"}).find("Precondition failed: UID in precondition: other") != std::string::npos);
    CHECK(Str(Admin(s.api, "GET", kPvs + "/f").body, {"metadata", "deletionTimestamp"}).empty());
  }
  SECTION("delete marks; removing the finalizers by merge patch removes the object") {
    Reply del = Admin(s.api, "DELETE", kPvs + "/f", R"({"preconditions":{"uid":")" + Str(created.body, {"metadata", "uid"}) + "\"}}");
    CHECK(del.code == 200);
    Json marked = Admin(s.api, "GET", kPvs + "/f").body;
    CHECK(!Str(marked, {"metadata", "deletionTimestamp"}).empty());
    CHECK(fake::StringList(marked, {"metadata", "finalizers"}) == std::vector<std::string>{"example.com/keep"});
    Reply add = Admin(s.api, "PATCH", kPvs + "/f", R"({"metadata":{"finalizers":["example.com/keep","example.com/new"]}})",
                      "application/merge-patch+json");
    CHECK(add.code == 422);  // no new finalizers while deleting
    Reply patched = Admin(s.api, "PATCH", kPvs + "/f", R"({"metadata":{"finalizers":null}})", "application/merge-patch+json");
    CHECK(patched.code == 200);
    CHECK(Admin(s.api, "GET", kPvs + "/f").code == 404);
  }
}

TEST_CASE("patches: merge, JSON patch, strategic merge of finalizers") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("p")).code == 201);
  Reply merge = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"labels":{"a":"1"}},"spec":{"mountOptions":["ro"]}})",
                      "application/merge-patch+json");
  CHECK(merge.code == 200);
  CHECK(Str(merge.body, {"metadata", "labels", "a"}) == "1");
  CHECK(fake::StringList(merge.body, {"spec", "mountOptions"}) == std::vector<std::string>{"ro"});
  CHECK(Str(merge.body, {"spec", "hostPath", "path"}) == "/data/x");

  Reply json = Admin(s.api, "PATCH", kPvs + "/p",
                     R"([{"op":"test","path":"/metadata/labels/a","value":"1"},{"op":"replace","path":"/metadata/labels/a","value":"2"},{"op":"add","path":"/spec/mountOptions/-","value":"noatime"},{"op":"remove","path":"/spec/mountOptions/0"}])",
                     "application/json-patch+json");
  CHECK(json.code == 200);
  CHECK(Str(json.body, {"metadata", "labels", "a"}) == "2");
  CHECK(fake::StringList(json.body, {"spec", "mountOptions"}) == std::vector<std::string>{"noatime"});

  Reply failed_test = Admin(s.api, "PATCH", kPvs + "/p", R"([{"op":"test","path":"/metadata/labels/a","value":"1"}])",
                            "application/json-patch+json");
  CHECK(failed_test.code == 422);

  Reply smp = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"finalizers":["example.com/mine"]}})",
                    "application/strategic-merge-patch+json");
  CHECK(smp.code == 200);
  CHECK(fake::StringList(smp.body, {"metadata", "finalizers"}) ==
        std::vector<std::string>{"kubernetes.io/pv-protection", "example.com/mine"});
  Reply smp_del = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/mine"]}})",
                        "application/strategic-merge-patch+json");
  CHECK(fake::StringList(smp_del.body, {"metadata", "finalizers"}) == std::vector<std::string>{"kubernetes.io/pv-protection"});

  std::string rv = Str(smp_del.body, {"metadata", "resourceVersion"});
  Reply unchanged = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"labels":{"a":"2"}}})", "application/merge-patch+json");
  CHECK(Str(unchanged.body, {"metadata", "resourceVersion"}) == rv);  // a no-op writes nothing
  Reply stale = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"resourceVersion":"1","labels":{"a":"3"}}})",
                      "application/merge-patch+json");
  CHECK(stale.code == 409);
  CHECK(Admin(s.api, "PATCH", kPvs + "/none", "{}", "application/merge-patch+json").code == 404);
  CHECK(Admin(s.api, "PATCH", kPvs + "/p", "{}", "application/apply-patch+yaml").code == 415);
}

TEST_CASE("faults fail the next matching requests with a Status, then stop") {
  Server s;
  Reply armed = Admin(s.api, "POST", "/fake/faults", R"({"verb":"create","resource":"persistentvolumes","code":500,"count":2})");
  REQUIRE(armed.code == 200);
  CHECK(Admin(s.api, "GET", kPvs).code == 200);  // other verbs are untouched
  Reply first = Admin(s.api, "POST", kPvs, Pv("a"));
  CHECK(first.code == 500);
  CHECK(Str(first.body, {"reason"}) == "InternalError");
  CHECK(Admin(s.api, "POST", kPvs, Pv("a")).code == 500);
  CHECK(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);

  REQUIRE(Admin(s.api, "POST", "/fake/faults", R"({"code":429,"retryAfter":3})").code == 200);
  Reply throttled = Admin(s.api, "GET", kPvs);
  CHECK(throttled.code == 429);
  CHECK(throttled.retry_after == "3");
  CHECK(Str(throttled.body, {"reason"}) == "TooManyRequests");
  CHECK(Admin(s.api, "GET", kPvs).code == 200);
}

TEST_CASE("a fault with code 0 holds the request back, then carries it out") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/fake/faults", R"({"verb":"create","resource":"persistentvolumes","code":0})").code == 400);
  REQUIRE(Admin(s.api, "POST", "/fake/faults", R"({"verb":"create","resource":"persistentvolumes","code":0,"delayMs":50})")
              .code == 200);
  CHECK(Admin(s.api, "POST", kPvs, Pv("held")).code == 201);
  CHECK(Admin(s.api, "GET", std::string(kPvs) + "/held").code == 200);
}

TEST_CASE("token rotation revokes the old token and writes the new one") {
  Server s;
  std::string old_token = ReadFile(s.api.dir() + "/serviceaccount/token");
  CHECK(Call(s.api, old_token, "GET", kPvs).code == 200);
  REQUIRE(Admin(s.api, "POST", "/fake/rotate-token").code == 200);
  std::string new_token = ReadFile(s.api.dir() + "/serviceaccount/token");
  CHECK(new_token != old_token);
  CHECK(Call(s.api, old_token, "GET", kPvs).code == 401);
  CHECK(Call(s.api, new_token, "GET", kPvs).code == 200);
  CHECK(Call(s.api, new_token, "POST", "/fake/compact").code == 403);  // controls are the admin's
}

TEST_CASE("the request log records user, verb, resource and code") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);
  Call(s.api, s.api.sa_token(), "GET", kPvs + "/a");
  Call(s.api, "wrong", "GET", kPvs);
  Reply log = Admin(s.api, "GET", "/fake/requests");
  REQUIRE(log.code == 200);
  const auto& items = log.body.get<fake::JsonArray>();
  REQUIRE(items.size() == 3);
  CHECK(Str(items[0], {"verb"}) == "create");
  CHECK(Str(items[0], {"user"}) == "admin");
  CHECK(items[0].get("code").get<double>() == 201);
  CHECK(Str(items[1], {"verb"}) == "get");
  CHECK(Str(items[1], {"name"}) == "a");
  CHECK(Str(items[1], {"user"}) == s.api.sa_user());
  CHECK(items[2].get("code").get<double>() == 401);
  CHECK(items[0].get("t_ns").get<double>() <= items[1].get("t_ns").get<double>());
  REQUIRE(Admin(s.api, "POST", "/fake/reset-requests").code == 200);
  CHECK(Admin(s.api, "GET", "/fake/requests").body.get<fake::JsonArray>().empty());
}

TEST_CASE("RBAC from YAML allows what the roles grant and denies the rest with the real message") {
  RbacDir rbac(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: prov
rules:
- apiGroups: [""]
  resources: ["persistentvolumes"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims/status"]
  verbs: ["update"]
- apiGroups: ["storage.k8s.io"]
  resources: ["storageclasses"]
  resourceNames: ["hostpath"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: prov
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: prov}
subjects:
- kind: ServiceAccount
  name: hostpath-provisioner
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ev, namespace: default}
rules:
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ev, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ev}
subjects:
- kind: ServiceAccount
  name: hostpath-provisioner
  namespace: kube-system
)");  // removed after the server below
  Server s(rbac.Options());
  const std::string sa = s.api.sa_token();
  struct Case {
    const char* name;
    std::string method, path, body;
    int code;
  };
  std::string ev = R"({"metadata":{"name":"e"},"involvedObject":{"kind":"PersistentVolumeClaim","namespace":"default","name":"c"},"reason":"R"})";
  std::vector<Case> cases = {
      {"list PVs", "GET", kPvs, "", 200},
      {"watch PVs", "GET", kPvs + "?watch=true&timeoutSeconds=1", "", 200},
      {"discovery", "GET", "/api/v1", "", 200},
      {"create PV: denied", "POST", kPvs, Pv("a"), 403},
      {"list PVCs: denied", "GET", kPvcs, "", 403},
      {"update PVC status: allowed, missing", "PUT", kPvcs + "/c/status", Pvc("c"), 404},
      {"update PVC: denied", "PUT", kPvcs + "/c", Pvc("c"), 403},
      {"get the named class", "GET", "/apis/storage.k8s.io/v1/storageclasses/hostpath", "", 404},
      {"get another class: denied", "GET", "/apis/storage.k8s.io/v1/storageclasses/other", "", 403},
      {"events in default", "POST", "/api/v1/namespaces/default/events", ev, 201},
      {"events elsewhere: denied", "POST", "/api/v1/namespaces/kube-system/events", ev, 403},
  };
  for (const Case& c : cases) {
    SECTION(c.name) { CHECK(Call(s.api, sa, c.method, c.path, c.body).code == c.code); }
  }
  SECTION("the denial message and the denial log") {
    Reply r = Call(s.api, sa, "POST", kPvs, Pv("a"));
    CHECK(Str(r.body, {"message"}) ==
          "persistentvolumes is forbidden: User \"system:serviceaccount:kube-system:hostpath-provisioner\" cannot create "
          "resource \"persistentvolumes\" in API group \"\" at the cluster scope");
    Reply ns = Call(s.api, sa, "DELETE", kPvcs + "/c");
    CHECK(Str(ns.body, {"message"}) ==
          "persistentvolumeclaims \"c\" is forbidden: User \"system:serviceaccount:kube-system:hostpath-provisioner\" "
          "cannot delete resource \"persistentvolumeclaims\" in API group \"\" in the namespace \"default\"");
    Reply denials = Admin(s.api, "GET", "/fake/denials");
    REQUIRE(denials.body.get<fake::JsonArray>().size() == 2);
    CHECK(Str(denials.body.get<fake::JsonArray>()[1], {"verb"}) == "delete");
    CHECK(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);  // the admin is not subject to RBAC
  }
}

TEST_CASE("ResolveRequest finds verb, resource and scope as RequestInfoFactory does") {
  struct Case {
    std::string method, path;
    bool watch;
    std::string verb, group, ns, resource, sub, name;
  };
  std::vector<Case> cases = {
      {"GET", "/api/v1/persistentvolumes", false, "list", "", "", "persistentvolumes", "", ""},
      {"GET", "/api/v1/persistentvolumes", true, "watch", "", "", "persistentvolumes", "", ""},
      {"GET", "/api/v1/watch/namespaces/a/persistentvolumeclaims", false, "watch", "", "a", "persistentvolumeclaims", "", ""},
      {"GET", "/api/v1/persistentvolumes/x", false, "get", "", "", "persistentvolumes", "", "x"},
      {"PUT", "/api/v1/namespaces/a/persistentvolumeclaims/c/status", false, "update", "", "a", "persistentvolumeclaims", "status", "c"},
      {"PATCH", "/apis/storage.k8s.io/v1/storageclasses/s", false, "patch", "storage.k8s.io", "", "storageclasses", "", "s"},
      {"DELETE", "/api/v1/namespaces/a/events", false, "deletecollection", "", "a", "events", "", ""},
      {"POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", false, "create", "coordination.k8s.io", "kube-system", "leases", "", ""},
      {"GET", "/api/v1/namespaces/a", false, "get", "", "", "namespaces", "", "a"},
  };
  for (const Case& c : cases) {
    INFO(c.method << " " << c.path);
    fake::RequestInfo info = fake::ResolveRequest(c.method, c.path, c.watch);
    CHECK(info.is_resource);
    CHECK(info.verb == c.verb);
    CHECK(info.group == c.group);
    CHECK(info.ns == c.ns);
    CHECK(info.resource == c.resource);
    CHECK(info.subresource == c.sub);
    CHECK(info.name == c.name);
    CHECK(info.type != nullptr);
  }
  for (const std::string path : {"/api", "/api/v1", "/apis/storage.k8s.io/v1", "/version"})
    CHECK_FALSE(fake::ResolveRequest("GET", path, false).is_resource);
}

TEST_CASE("JSON patch refuses bad operations and leaves the document alone") {
  Json doc = *fake::ParseJson(R"({"a":{"b":[1,2]}})");
  struct Case {
    const char* name;
    std::string ops;
  };
  std::vector<Case> bad = {
      {"not an array", R"({"op":"add"})"},
      {"missing path", R"([{"op":"remove","path":"/x"}])"},
      {"index out of range", R"([{"op":"replace","path":"/a/b/5","value":1}])"},
      {"add without value", R"([{"op":"add","path":"/c"}])"},
      {"move is not supported", R"([{"op":"move","from":"/a","path":"/c"}])"},
      {"failing test", R"([{"op":"test","path":"/a/b/0","value":2}])"},
  };
  for (const Case& c : bad) {
    INFO(c.name);
    CHECK_FALSE(fake::JsonPatch(doc, *fake::ParseJson(c.ops)).ok());
  }
  auto ok = fake::JsonPatch(doc, *fake::ParseJson(R"([{"op":"add","path":"/a/b/0","value":0},{"op":"add","path":"/a~1c","value":true}])"));
  REQUIRE(ok.ok());
  CHECK(ok->get("a").serialize() == R"({"b":[0,1,2]})");
  CHECK(ok->get("a/c").get<bool>());
}

TEST_CASE("kubectl-style discovery lists the resources with short names") {
  Server s;
  Reply core = Admin(s.api, "GET", "/api/v1");
  REQUIRE(core.code == 200);
  bool pvc = false;
  for (const Json& r : core.body.get("resources").get<fake::JsonArray>())
    if (Str(r, {"name"}) == "persistentvolumeclaims")
      pvc = fake::StringList(r, {"shortNames"}) == std::vector<std::string>{"pvc"} && r.get("namespaced").get<bool>();
  CHECK(pvc);
  CHECK(Admin(s.api, "GET", "/apis").body.get("groups").get<fake::JsonArray>().size() == 2);
  CHECK(Admin(s.api, "GET", "/apis/storage.k8s.io/v1").code == 200);
  CHECK(Admin(s.api, "GET", "/apis/nope/v1").code == 404);
  CHECK(Str(Admin(s.api, "GET", "/version").body, {"major"}) == "1");
}

TEST_CASE("the real manifests/rbac.yaml: the provisioner's requests pass, others are denied") {
  std::ifstream probe("manifests/rbac.yaml");
  REQUIRE(probe.good());  // run from the repository root, as make does
  fake::ApiServerOptions o;
  o.rbac_files = {"manifests/rbac.yaml"};
  Server s(o);
  const std::string sa = s.api.sa_token();
  std::string ev = R"({"metadata":{"name":"e"},"involvedObject":{"kind":"PersistentVolume","name":"pv"},"reason":"R"})";
  CHECK(Call(s.api, sa, "GET", "/api/v1/persistentvolumeclaims").code == 200);
  CHECK(Call(s.api, sa, "POST", kPvs, Pv("a")).code == 201);
  CHECK(Call(s.api, sa, "POST", "/api/v1/namespaces/default/events", ev).code == 201);
  // Its own Lease (not made yet), and no other: not the scheduler's beside it, none elsewhere.
  CHECK(Call(s.api, sa, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/hostpath-provisioner.io-hostpath").code == 404);
  CHECK(Call(s.api, sa, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler").code == 403);
  CHECK(Call(s.api, sa, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/hostpath-provisioner.io-hostpath").code == 403);
  CHECK(Call(s.api, sa, "DELETE", kPvcs + "/c").code == 403);  // it never writes claims
  CHECK(Admin(s.api, "GET", "/fake/denials").body.get<fake::JsonArray>().size() == 3);
}

TEST_CASE("watches that allow bookmarks get BOOKMARK events with the current resourceVersion") {
  fake::ApiServerOptions o;
  o.bookmark_seconds = 1;
  Server s(o);
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);
  std::string rv = Str(Admin(s.api, "GET", kPvs).body, {"metadata", "resourceVersion"});
  auto events = WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=30&allowWatchBookmarks=true&resourceVersion=" + rv, 1);
  REQUIRE(events.size() == 1);
  CHECK(Str(events[0], {"type"}) == "BOOKMARK");
  CHECK(Str(events[0], {"object", "kind"}) == "PersistentVolume");
  CHECK(Str(events[0], {"object", "metadata", "resourceVersion"}) == rv);
}

TEST_CASE("lists: limit and continue, label and field selectors, namespaces") {
  Server s;
  for (const char* n : {"a", "b", "c"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
  REQUIRE(Admin(s.api, "PATCH", kPvs + "/b", R"({"metadata":{"labels":{"tier":"x"}}})", "application/merge-patch+json").code == 200);
  Json page1 = Admin(s.api, "GET", kPvs + "?limit=2").body;
  CHECK(ItemNames(page1) == std::vector<std::string>{"a", "b"});
  std::string cont = Str(page1, {"metadata", "continue"});
  REQUIRE(!cont.empty());
  Json page2 = Admin(s.api, "GET", kPvs + "?limit=2&continue=" + cont).body;
  CHECK(ItemNames(page2) == std::vector<std::string>{"c"});
  CHECK(Str(page2, {"metadata", "continue"}).empty());
  CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?labelSelector=tier%3Dx").body) == std::vector<std::string>{"b"});
  CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?labelSelector=tier%21%3Dx").body) == std::vector<std::string>{"a", "c"});
  CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?fieldSelector=metadata.name%3Dc").body) == std::vector<std::string>{"c"});

  REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("x", "")).code == 201);
  REQUIRE(Admin(s.api, "POST", "/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}})").code == 201);
  REQUIRE(Admin(s.api, "POST", "/api/v1/namespaces/other/persistentvolumeclaims", Pvc("y", "")).code == 201);
  CHECK(ItemNames(Admin(s.api, "GET", kPvcs).body) == std::vector<std::string>{"x"});
  CHECK(ItemNames(Admin(s.api, "GET", "/api/v1/persistentvolumeclaims").body) == std::vector<std::string>{"x", "y"});
  CHECK(Admin(s.api, "POST", kPvcs, R"({"metadata":{"name":"z","namespace":"other"},)" + Pvc("z", "").substr(Pvc("z", "").find("\"spec\""))).code == 400);
}

// The watch cache sends each watcher the change as its selector sees it (cache_watcher.go
// convertToWatchEvent): ADDED when the object starts to match, DELETED with the object as it
// was (at the new resourceVersion) when it stops, MODIFIED while it keeps matching.
TEST_CASE("a watch with a selector sees an object whose labels change as added to or deleted from it") {
  Server s;
  const std::string key = "hostpath-provisioner.io/node";
  const std::string in = "labelSelector=hostpath-provisioner.io%2Fnode%20in%20(a%2C%20shared)";
  const std::string without = "labelSelector=%21hostpath-provisioner.io%2Fnode";
  auto label = [&](const std::string& value) {
    Reply r = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"labels":{")" + key + R"(":")" + value + R"("}}})",
                    "application/merge-patch+json");
    REQUIRE(r.code == 200);
    return Str(r.body, {"metadata", "resourceVersion"});
  };
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("p")).code == 201);
  Json created = Admin(s.api, "GET", kPvs + "/p").body;
  REQUIRE(Str(created, {"status", "phase"}) == "Available");  // the PV controller's write is in
  const std::string rv0 = Str(created, {"metadata", "resourceVersion"});

  const std::string rv_a = label("a");
  Reply note = Admin(s.api, "PATCH", kPvs + "/p", R"({"metadata":{"annotations":{"note":"1"}}})", "application/merge-patch+json");
  REQUIRE(note.code == 200);
  const std::string rv_note = Str(note.body, {"metadata", "resourceVersion"});
  const std::string rv_b = label("b");
  const std::string rv_shared = label("shared");
  REQUIRE(Admin(s.api, "DELETE", kPvs + "/p").code == 200);
  REQUIRE(Admin(s.api, "GET", kPvs + "/p").code == 404);  // finalizer removed, object gone

  // Every change is in the history: each watch replays it all, then ends at its timeout.
  const std::map<std::string, std::string> rv_name = {{rv_a, "a"}, {rv_note, "note"}, {rv_b, "b"}, {rv_shared, "shared"}};
  auto seen = [&](const std::string& selector) {
    std::vector<std::string> out;
    for (const Json& e : WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=1&resourceVersion=" + rv0 + "&" + selector, 100)) {
      auto named = rv_name.find(Str(e, {"object", "metadata", "resourceVersion"}));
      out.push_back(Str(e, {"type"}) + " " + Str(e, {"object", "metadata", "name"}) +
                    " rv=" + (named == rv_name.end() ? "later" : named->second) +
                    " label=" + Str(e, {"object", "metadata", "labels", key}) +
                    " note=" + Str(e, {"object", "metadata", "annotations", "note"}));
    }
    return out;
  };
  // Unlabelled until the first patch: the watcher of objects without the label loses it there,
  // and the DELETED event carries the object before the patch at the patch's resourceVersion.
  CHECK(seen(without) == std::vector<std::string>{"DELETED p rv=a label= note="});
  CHECK(seen(in) == std::vector<std::string>{
                        "ADDED p rv=a label=a note=",           // starts to match
                        "MODIFIED p rv=note label=a note=1",   // keeps matching
                        "DELETED p rv=b label=a note=1",        // b: stops; the object as it was
                        "ADDED p rv=shared label=shared note=1",
                        "MODIFIED p rv=later label=shared note=1",  // deletionTimestamp set
                        "DELETED p rv=later label=shared note=1",   // finalizer gone: deleted
                    });
  // Without a selector every change is as it was written.
  auto all = seen("");
  CHECK(all.size() == 6);
  for (const auto& line : all) CHECK(line.rfind("ADDED", 0) != 0);

  SECTION("lists with the same selectors") {
    for (const char* n : {"na", "nb", "ns", "none"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
    for (auto [n, v] : {std::pair<const char*, const char*>{"na", "a"}, {"nb", "b"}, {"ns", "shared"}})
      REQUIRE(Admin(s.api, "PATCH", kPvs + "/" + n, R"({"metadata":{"labels":{")" + key + R"(":")" + v + R"("}}})",
                    "application/merge-patch+json").code == 200);
    CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?" + in).body) == std::vector<std::string>{"na", "ns"});
    CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?" + without).body) == std::vector<std::string>{"none"});
    CHECK(ItemNames(Admin(s.api, "GET", kPvs + "?labelSelector=hostpath-provisioner.io%2Fnode%20notin%20(a)").body) ==
          std::vector<std::string>{"nb", "none", "ns"});
    // A watch from no resourceVersion starts with the matching objects only.
    std::vector<std::string> initial;
    for (const Json& e : WatchEvents(s.api, kPvs + "?watch=true&timeoutSeconds=1&" + without, 100))
      initial.push_back(Str(e, {"type"}) + " " + Str(e, {"object", "metadata", "name"}));
    CHECK(initial == std::vector<std::string>{"ADDED none"});
  }
}

TEST_CASE("status is written only through /status, the spec never there; PUT of a missing lease creates it") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("c", "")).code == 201);
  Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
  fake::Obj(claim, {"status"})["phase"] = Json("Lost");
  fake::Obj(claim, {"metadata", "labels"})["l"] = Json("1");
  Reply main = Admin(s.api, "PUT", kPvcs + "/c", claim.serialize());
  REQUIRE(main.code == 200);
  CHECK(Str(main.body, {"status", "phase"}) == "Pending");  // ignored on the main resource
  CHECK(Str(main.body, {"metadata", "labels", "l"}) == "1");
  fake::Meta(claim)["resourceVersion"] = Json(Str(main.body, {"metadata", "resourceVersion"}));
  fake::Obj(claim, {"metadata", "labels"})["l"] = Json("2");
  fake::Obj(claim, {"spec"})["volumeName"] = Json("elsewhere");
  Reply status = Admin(s.api, "PUT", kPvcs + "/c/status", claim.serialize());
  REQUIRE(status.code == 200);
  CHECK(Str(status.body, {"status", "phase"}) == "Lost");
  CHECK(Str(status.body, {"spec", "volumeName"}).empty());  // the status strategy keeps the spec
  CHECK(Str(status.body, {"metadata", "labels", "l"}) == "2");  // and lets metadata through, as the real one

  std::string lease = R"({"metadata":{"name":"l"},"spec":{"holderIdentity":"me"}})";
  Reply created = Admin(s.api, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", lease);
  CHECK(created.code == 201);
  CHECK(Str(created.body, {"metadata", "namespace"}) == "kube-system");
  CHECK(Admin(s.api, "PUT", kPvs + "/absent", Pv("absent")).code == 404);  // PVs are not created by PUT
}

TEST_CASE("fake uids are random version 4 UUIDs, as the real server's", "[fake]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string uid = fake::NewUid();
    INFO(uid);
    REQUIRE(uid.size() == 36);
    for (size_t at = 0; at < uid.size(); ++at) {
      bool dash = at == 8 || at == 13 || at == 18 || at == 23;
      REQUIRE((dash ? uid[at] == '-' : std::isxdigit(static_cast<unsigned char>(uid[at])) && !std::isupper(uid[at])));
    }
    CHECK(uid[14] == '4');
    CHECK(std::string("89ab").find(uid[19]) != std::string::npos);
    seen.insert(uid);
  }
  CHECK(seen.size() == 1000);
}

// The reference for the fake's text: picojson's layout (member order, numbers), strings as Go's
// encoding/json writes them with HTML escaping (the API server's encoder), one rune at a time.
std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[8];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A rune: its length from the lead byte, then each continuation byte and the value checked.
    const size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    uint32_t cp = len == 4 ? c & 0x07 : len == 3 ? c & 0x0f : c & 0x1f;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xc0) == 0x80;
      cp = cp << 6 | (b & 0x3f);
    }
    ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      out += "\\ufffd";
      ++i;
    } else if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
      i += len;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out + "\"";
}

std::string GoText(const picojson::value& v) {
  if (v.is<std::string>()) return GoQuote(v.get<std::string>());
  std::string out;
  if (v.is<picojson::array>()) {
    out = "[";
    for (const auto& item : v.get<picojson::array>()) out += (out.size() > 1 ? "," : "") + GoText(item);
    return out + "]";
  }
  if (v.is<picojson::object>()) {
    out = "{";
    for (const auto& [k, item] : v.get<picojson::object>()) out += (out.size() > 1 ? "," : "") + GoQuote(k) + ":" + GoText(item);
    return out + "}";
  }
  return v.serialize();  // null, booleans, numbers
}

TEST_CASE("fake JSON text: read as picojson reads it, written in picojson's layout with the API server's string escapes",
          "[fake]") {
  std::mt19937 rng(12345);
  auto random_string = [&](size_t max) {
    std::string s(rng() % (max + 1), ' ');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : "ab/\\\"\n\t\x01\x7f z"[rng() % 12]);
    return s;
  };
  // Random picojson values: picojson's own text is what the fake must read and write back.
  std::function<picojson::value(int)> random_value = [&](int depth) -> picojson::value {
    switch (depth > 3 ? rng() % 4 : rng() % 6) {
      case 0: return picojson::value();
      case 1: return picojson::value(rng() % 2 == 0);
      case 2: {
        double n = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / (rng() % 3 + 1);
        return picojson::value(rng() % 5 == 0 ? n * 1e300 : n);
      }
      case 3: return picojson::value(random_string(40));
      case 4: {
        picojson::array a;
        for (size_t i = rng() % 4; i > 0; --i) a.push_back(random_value(depth + 1));
        return picojson::value(a);
      }
      default: {
        picojson::object o;
        for (size_t i = rng() % 4; i > 0; --i) o[random_string(8)] = random_value(depth + 1);
        return picojson::value(o);
      }
    }
  };
  for (int i = 0; i < 2000; ++i) {
    const picojson::value v = random_value(0);
    const std::string text = v.serialize();
    auto parsed = fake::ParseJson(text);
    REQUIRE(parsed.ok());
    REQUIRE(fake::ToText(*parsed) == GoText(v));
  }
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  CHECK(fake::ToText(Json(every_byte)) == GoQuote(every_byte));
  // Every byte at every place of a longer string, among plain ASCII and UTF-8 bytes.
  for (int c = 0; c < 256; ++c) {
    for (size_t at = 0; at < 20; ++at) {
      std::string s = "plain text \xc3\xa9 plain";
      s[at] = static_cast<char>(c);
      INFO("byte " << c << " at " << at);
      REQUIRE(fake::ToText(Json(s)) == GoQuote(s));
    }
  }
  // What Go writes, spelled out: HTML characters, '/' and DEL, the line separators, and bad UTF-8.
  CHECK(fake::ToText(Json(std::string("a/b<c>d&e\x7f\"\\\b\f\x01"))) ==
        R"("a/b\u003cc\u003ed\u0026e)" "\x7f" R"(\"\\\b\f\u0001")");
  CHECK(fake::ToText(Json(std::string("\xc3\xa9\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\xf0\x9f\x98\x80"))) ==
        "\"\xc3\xa9\\u2028\\u2029\xe2\x80\xaa\xf0\x9f\x98\x80\"");
  CHECK(fake::ToText(Json(std::string("\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x80"))) ==
        R"("\ufffd\ufffd|\ufffd\ufffd\ufffd|\ufffd\ufffd\ufffd\ufffd|\ufffd\ufffd")");
  fake::JsonObject keyed;
  keyed["pv.kubernetes.io/bind-completed"] = Json("<yes>");
  CHECK(fake::ToText(Json(keyed)) == R"({"pv.kubernetes.io/bind-completed":"\u003cyes\u003e"})");

  // Texts picojson reads (escapes, surrogate pairs, spaces, repeated keys) read to the same
  // value; texts it refuses are refused.
  for (const char* text : {R"( {"a" : [ true , false , null , -0.5e+2 , "\u00e9\ud83d\ude00\/\b\f\n\r\t" ] } )",
                           R"({"k":1,"k":2})", R"("\u0000")", R"([[[]],{}])", "\n\t[1]\r\n"}) {
    INFO(text);
    picojson::value expected;
    REQUIRE(picojson::parse(expected, text).empty());
    auto parsed = fake::ParseJson(text);
    REQUIRE(parsed.ok());
    CHECK(fake::ToText(*parsed) == GoText(expected));
  }
  for (const char* text : {"", "{", "[1,]", "{\"a\"}", "{a:1}", "\"tab\there\"", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"",
                           "\"\\u12g4\"", "nul", "tru", "+1", ".5", "1.2.3", "--1", "\"open"}) {
    INFO(text);
    picojson::value v;
    std::string expected = picojson::parse(v, text);
    CHECK_FALSE(expected.empty());
    auto parsed = fake::ParseJson(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message() == expected);
  }
  CHECK_FALSE(fake::ParseJson(R"({"a":1} x)").ok());  // picojson stops after the value; the real server does not
  CHECK(fake::ParseJson(std::string(100, '[') + std::string(100, ']')).ok());
  CHECK(fake::ParseJson(std::string(101, '[') + std::string(101, ']')).status().message() == "nesting deeper than 100");
  std::string deep;
  for (int i = 0; i < 101; ++i) deep += "{\"a\":";
  CHECK(fake::ParseJson(deep + "1" + std::string(101, '}')).status().message() == "nesting deeper than 100");
  CHECK(fake::ParseJson("{\n\"a\": x}").status().message() == "syntax error at line 2 near: x}");

  // Errors carry picojson's message; a number out of range is an error, not an exception.
  auto bad = fake::ParseJson(R"({"a": [1, 2,})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "syntax error at line 1 near: }");
  auto huge = fake::ParseJson(R"({"a": 1e999})");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message() == "number out of range: 1e999");
}

TEST_CASE("wait: claims that become Bound and PVs that go are counted in the fake, without a watch") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  std::string rv = Str(Admin(s.api, "GET", kPvcs + "?limit=1").body, {"metadata", "resourceVersion"});
  std::string pv_rv = Str(Admin(s.api, "GET", kPvs + "?limit=1").body, {"metadata", "resourceVersion"});
  std::string bound = "/fake/wait?resource=persistentvolumeclaims&until=Bound&prefix=w-&resourceVersion=" + rv;
  RawReply waited_raw;
  std::thread waiter([&] { waited_raw = Send(s.api, s.api.admin_token(), "GET", bound + "&count=2&timeoutSeconds=20"); });
  int64_t t0 = fake::NowNs();
  std::vector<std::string> pvs;
  for (std::string name : {"w-1", "x-1", "w-2"}) {  // x-1 is Bound too, but not counted
    Reply c = Admin(s.api, "POST", kPvcs, Pvc(name));
    REQUIRE(c.code == 201);
    std::string uid = Str(c.body, {"metadata", "uid"});
    std::string ref = R"(,"claimRef":{"namespace":"default","name":")" + name + R"(","uid":")" + uid + "\"}";
    REQUIRE(Admin(s.api, "POST", kPvs, Pv("pvc-" + uid, ref)).code == 201);
    pvs.push_back("pvc-" + uid);
  }
  waiter.join();
  Reply waited = Checked(waited_raw);
  CHECK(waited.code == 200);
  CHECK(waited.body.get("count").get<double>() == 2);
  CHECK(waited.body.get("lastNs").get<double>() >= static_cast<double>(t0));

  // Three are asked for, two exist: after the timeout, 504 and the count so far.
  Reply short_of = Admin(s.api, "GET", bound + "&count=3&timeoutSeconds=1");
  CHECK(short_of.code == 504);
  CHECK(short_of.body.get("count").get<double>() == 2);

  // Deleting the claims releases the PVs; deleting those is counted by their claimRef's name.
  std::string gone = "/fake/wait?resource=persistentvolumes&until=Deleted&prefixPath=spec.claimRef.name&prefix=w-&count=2"
                     "&timeoutSeconds=20&resourceVersion=" + pv_rv;
  for (const auto& pv : pvs) REQUIRE(Admin(s.api, "DELETE", kPvs + "/" + pv).code == 200);
  for (std::string name : {"w-1", "x-1", "w-2"}) REQUIRE(Admin(s.api, "DELETE", kPvcs + "/" + name).code == 200);
  Reply deleted = Admin(s.api, "GET", gone);
  CHECK(deleted.code == 200);
  CHECK(deleted.body.get("count").get<double>() == 2);

  CHECK(Admin(s.api, "GET", "/fake/wait?resource=persistentvolumeclaims&until=Later&count=1").code == 400);
  CHECK(Admin(s.api, "GET", "/fake/wait?resource=nonsense&until=Bound&count=1").code == 400);
}

TEST_CASE("a write is answered with the object as stored by that write, before the controllers change it") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  std::string rv = Str(Admin(s.api, "GET", kPvcs).body, {"metadata", "resourceVersion"});
  Reply created = Admin(s.api, "POST", kPvcs, Pvc("c"));
  REQUIRE(created.code == 201);
  // The PV controller annotates the claim at once, in a write of its own.
  CHECK(fake::Annotation(created.body, "volume.kubernetes.io/storage-provisioner").empty());
  Reply got = Admin(s.api, "GET", kPvcs + "/c");
  CHECK(fake::Annotation(got.body, "volume.kubernetes.io/storage-provisioner") == "example.com/hostpath");
  CHECK(std::stoull(Str(created.body, {"metadata", "resourceVersion"})) < std::stoull(Str(got.body, {"metadata", "resourceVersion"})));

  Reply deleted = Admin(s.api, "DELETE", kPvcs + "/c");
  REQUIRE(deleted.code == 200);
  CHECK(!Str(deleted.body, {"metadata", "deletionTimestamp"}).empty());  // pvc-protection held it
  CHECK(fake::StringList(deleted.body, {"metadata", "finalizers"}) == std::vector<std::string>{"kubernetes.io/pvc-protection"});

  // Each answer is the object of its write's watch event, byte for byte once parsed.
  auto events = WatchEvents(s.api, kPvcs + "?watch=true&resourceVersion=" + rv, 4);
  REQUIRE(events.size() == 4);
  CHECK(Str(events[0], {"type"}) == "ADDED");
  CHECK(*fake::Path(events[0], {"object"}) == created.body);
  bool found = false;
  for (const auto& e : events) found = found || *fake::Path(e, {"object"}) == deleted.body;
  CHECK(found);
}

namespace {

// One verified TLS connection to the server, on which a test writes bytes as they are.
struct RawConnection {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  SSL* ssl = nullptr;

  explicit RawConnection(const fake::ApiServer& api) {
    REQUIRE(SSL_CTX_load_verify_locations(ctx, (api.dir() + "/ca.crt").c_str(), nullptr) == 1);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(api.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{10, 0};  // a read waits for 10 s at most
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    REQUIRE(SSL_connect(ssl) == 1);
  }
  ~RawConnection() {
    SSL_free(ssl);
    ::close(fd);
    SSL_CTX_free(ctx);
  }
  void Write(const std::string& bytes) {
    REQUIRE(SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size()));
  }
};

// Sends `bytes` as they are and returns all the server sent until it closed the connection.
std::string RawExchange(const fake::ApiServer& api, const std::string& bytes) {
  RawConnection c(api);
  c.Write(bytes);
  std::string out;
  char buf[4096];
  for (int n; (n = SSL_read(c.ssl, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST_CASE("the transport: pipelined requests, chunked bodies, malformed and oversized requests") {
  Server s;
  const std::string auth = "Authorization: Bearer " + s.api.admin_token() + "\r\n";
  SECTION("two requests in one write are answered in order; Connection: close ends the connection") {
    std::string out = RawExchange(s.api, "GET /version HTTP/1.1\r\nHost: fake\r\n" + auth + "\r\n" +
                                             "GET " + kPvs + "/nope HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n" + auth + "\r\n");
    size_t second = out.find("HTTP/1.1 404 Not Found\r\n");
    CHECK(out.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    REQUIRE(second != std::string::npos);
    CHECK(out.find("v1.32.0-fake") < second);
    CHECK(out.find("persistentvolumes \\\"nope\\\" not found", second) != std::string::npos);
  }
  SECTION("a chunked body is read as one with a length") {
    std::string pv = Pv("chunked"), half1 = pv.substr(0, 40), half2 = pv.substr(40);
    auto chunk = [](const std::string& data) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx", data.size());
      return std::string(size) + ";ext=1\r\n" + data + "\r\n";
    };
    std::string out = RawExchange(s.api, "POST " + kPvs + " HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n" + auth +
                                             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                             chunk(half1) + chunk(half2) + "0\r\n\r\n");
    CHECK(out.rfind("HTTP/1.1 201 Created\r\n", 0) == 0);
    CHECK(Admin(s.api, "GET", kPvs + "/chunked").code == 200);
  }
  SECTION("header names are read in any case") {
    std::string pv = Pv("lower");
    std::string out = RawExchange(s.api, "POST " + kPvs + " HTTP/1.1\r\nhost: fake\r\nCONNECTION: Close\r\n" + auth +
                                             "content-type: application/json\r\ncontent-LENGTH: " + std::to_string(pv.size()) +
                                             "\r\n\r\n" + pv + "GET /version HTTP/1.1\r\n" + auth + "\r\n");
    CHECK(out.rfind("HTTP/1.1 201 Created\r\n", 0) == 0);
    CHECK(out.find("v1.32.0-fake") == std::string::npos);  // closed after the first answer, as asked
    CHECK(Admin(s.api, "GET", kPvs + "/lower").code == 200);
  }
  SECTION("a request that is not HTTP gets 400, and the connection is closed") {
    CHECK(RawExchange(s.api, "HELLO\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(RawExchange(s.api, "GET / HTTP/1.1\r\nno colon here\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(RawExchange(s.api, "POST " + kPvs + " HTTP/1.1\r\nContent-Length: 12x\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  }
  SECTION("TLS: the cipher kube-apiserver's Go TLS picks (AES-128-GCM), also for a client preferring AES-256") {
    RawConnection c(s.api);
    CHECK(std::string(SSL_get_cipher_name(c.ssl)) == "TLS_AES_128_GCM_SHA256");
    CHECK(SSL_version(c.ssl) == TLS1_3_VERSION);
  }
  SECTION("a body over 64 MiB gets 413 before it is sent, and nothing is stored") {
    std::string out = RawExchange(s.api, "POST " + kPvs + " HTTP/1.1\r\nHost: fake\r\n" + auth + "Content-Length: 67108865\r\n\r\n");
    CHECK(out.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0) == 0);
    CHECK(Admin(s.api, "GET", kPvs).body.get<fake::JsonObject>().at("items").get<fake::JsonArray>().empty());
  }
}

TEST_CASE("a batch of requests is served as if each had come on its own, and answered together") {
  Server s;
  REQUIRE(Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  std::vector<Json> events;
  std::thread watcher([&] { events = WatchEvents(s.api, kPvcs + "?watch=true", 2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the watch is open
  auto text = [](const std::string& s) { return Json(s).serialize(); };
  std::string batch = R"({"requests":[)"
                      R"({"method":"POST","path":")" + kPvcs + R"(","body":)" + text(Pvc("b1")) + "}," +
                      R"({"method":"POST","path":")" + kPvcs + R"(","body":)" +
                      text(R"({"kind":"PersistentVolumeClaim","metadata":{"name":"bad"}})") + "}," +
                      R"({"method":"POST","path":")" + kPvcs + R"(","body":)" + text(Pvc("b2")) + "}," +
                      R"({"method":"DELETE","path":")" + kPvcs + R"(/missing"}]})";
  Reply r = Admin(s.api, "POST", "/fake/batch", batch);
  watcher.join();
  REQUIRE(r.code == 200);
  const auto& results = r.body.get<fake::JsonArray>();
  REQUIRE(results.size() == 4);
  CHECK(results[0].get("code").get<double>() == 201);
  CHECK(Str(results[0], {"name"}) == "b1");
  Reply b1 = Admin(s.api, "GET", kPvcs + "/b1");
  REQUIRE(b1.code == 200);
  CHECK(Str(results[0], {"uid"}) == Str(b1.body, {"metadata", "uid"}));
  CHECK(results[1].get("code").get<double>() == 422);  // validated as a request of its own
  CHECK(Str(results[1], {"message"}).find("spec.accessModes") != std::string::npos);
  CHECK(results[2].get("code").get<double>() == 201);
  CHECK(results[3].get("code").get<double>() == 404);
  std::vector<std::string> added;  // (the PV controller's changes may follow in the same write)
  for (const Json& ev : events)
    if (Str(ev, {"type"}) == "ADDED") added.push_back(Str(ev, {"object", "metadata", "name"}));
  CHECK(added == std::vector<std::string>{"b1", "b2"});
  // The request log has each request of the batch, not the batch.
  Reply log = Admin(s.api, "GET", "/fake/requests");
  std::vector<std::string> seen;
  for (const Json& rec : log.body.get<fake::JsonArray>()) seen.push_back(Str(rec, {"verb"}) + " " + Str(rec, {"name"}) + " " + std::to_string(static_cast<int>(rec.get("code").get<double>())));
  CHECK(std::count(seen.begin(), seen.end(), "create b1 201") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "create b2 201") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "create  422") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "delete missing 404") == 1);
  SECTION("a body without requests, or a watch in it, is refused") {
    CHECK(Admin(s.api, "POST", "/fake/batch", "{}").code == 400);
    Reply w = Admin(s.api, "POST", "/fake/batch", R"({"requests":[{"method":"GET","path":")" + kPvcs + R"(?watch=true"}]})");
    REQUIRE(w.code == 200);
    CHECK(w.body.get<fake::JsonArray>()[0].get("code").get<double>() == 400);
  }
  SECTION("only the admin may send one") {
    CHECK(Call(s.api, s.api.sa_token(), "POST", "/fake/batch", batch).code == 403);
  }
}

TEST_CASE("extra work makes the server spend more CPU on the same requests, and still answer them") {
  Server s;
  auto cpu = [] {  // the server's CPU time: the process's (the loop runs in it) less this thread's
    timespec p{}, t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(p.tv_sec - t.tv_sec) + static_cast<double>(p.tv_nsec - t.tv_nsec) / 1e9;
  };
  // 200 creates in one batch, so that the server's rounds are long enough to measure.
  auto spend = [&](const std::string& prefix) {
    std::string batch = R"({"requests":[)";
    for (int i = 0; i < 200; ++i) {
      if (i > 0) batch += ",";
      batch += R"({"method":"POST","path":")" + kPvs + R"(","body":)" + Json(Pv(prefix + std::to_string(i))).serialize() + "}";
    }
    batch += "]}";
    double before = cpu();
    Reply r = Admin(s.api, "POST", "/fake/batch", batch);
    // The loop spins after a round, once the answer is out: a small request after the batch is
    // read only when that is done.
    REQUIRE(Admin(s.api, "GET", kPvs + "/" + prefix + "0").code == 200);
    double spent = cpu() - before;
    REQUIRE(r.code == 200);
    for (const Json& one : r.body.get<fake::JsonArray>()) REQUIRE(one.get("code").get<double>() == 201);
    return spent;
  };
  double plain = spend("plain-");
  REQUIRE(Admin(s.api, "POST", "/fake/extra-work?percent=1000").code == 200);
  double slowed = spend("slowed-");
  REQUIRE(Admin(s.api, "POST", "/fake/extra-work?percent=0").code == 200);
  INFO("CPU for 200 creates: " << plain << " s, with 1000 % extra work: " << slowed << " s");
  CHECK(slowed > plain * 3);  // 11x the loop's part; the server's other threads' stays the same
  CHECK(Admin(s.api, "POST", "/fake/extra-work?percent=-5").code == 400);
}

TEST_CASE("a paused request holds its connection, not the server") {
  Server s;
  s.api.Pause(2);
  std::atomic<bool> held_answered{false};
  RawReply held;
  std::thread t([&] {
    held = Send(s.api, s.api.admin_token(), "GET", kPvs);
    held_answered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Reply control = Admin(s.api, "GET", "/fake/requests");  // controls are not paused
  bool answered_first = !held_answered;
  t.join();
  CHECK(control.code == 200);
  CHECK(answered_first);
  CHECK(Checked(held).code == 200);
}

TEST_CASE("a client that goes away while its answer is written costs the server nothing") {
  Server s;
  for (int i = 0; i < 300; ++i) REQUIRE(Admin(s.api, "POST", kPvs, Pv("pv-" + std::to_string(i))).code == 201);
  for (int round = 0; round < 5; ++round) {  // the list is ~200 KB: written after the client left
    RawConnection c(s.api);
    c.Write("GET " + kPvs + " HTTP/1.1\r\nHost: fake\r\nAuthorization: Bearer " + s.api.admin_token() + "\r\n\r\n");
    linger off{1, 0};  // close with a reset: the server's next write fails at once
    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
  }
  CHECK(Admin(s.api, "GET", "/version").code == 200);  // this process (the server's) is still alive
}


// A class, claim c1 bound to volume pvc-UID by the fake's PV controller, and c2 still Pending;
// returns UID (c1's).
std::string BoundAndPendingClaims(const fake::ApiServer& api) {
  REQUIRE(Admin(api, "POST", "/apis/storage.k8s.io/v1/storageclasses", kClass).code == 201);
  Reply claim = Admin(api, "POST", kPvcs, Pvc("c1"));
  REQUIRE(claim.code == 201);
  const std::string uid = Str(claim.body, {"metadata", "uid"});
  REQUIRE(Admin(api, "POST", kPvs, Pv("pvc-" + uid, R"(,"claimRef":{"namespace":"default","name":"c1","uid":")" + uid + "\"}")).code == 201);
  REQUIRE(Str(Admin(api, "GET", kPvcs + "/c1").body, {"status", "phase"}) == "Bound");
  REQUIRE(Admin(api, "POST", kPvcs, Pvc("c2")).code == 201);
  return uid;
}


TEST_CASE("tables: the columns and cells of kube-apiserver's printers for claims, volumes and classes") {
  Server s;
  const std::string uid = BoundAndPendingClaims(s.api);
  const std::string pv = "pvc-" + uid;

  Reply claims = TableCall(s.api, kPvcs);
  REQUIRE(claims.code == 200);
  CHECK(Str(claims.body, {"kind"}) == "Table");
  CHECK(Str(claims.body, {"apiVersion"}) == "meta.k8s.io/v1");
  CHECK_FALSE(Str(claims.body, {"metadata", "resourceVersion"}).empty());
  std::vector<std::string> names, priorities;
  for (const Json& c : claims.body.get("columnDefinitions").get<fake::JsonArray>()) {
    names.push_back(Str(c, {"name"}));
    priorities.push_back(c.get("priority").to_str());
  }
  CHECK(names == std::vector<std::string>{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                                          "VolumeAttributesClass", "Age", "VolumeMode"});
  CHECK(priorities == std::vector<std::string>{"0", "0", "0", "0", "0", "0", "0", "0", "1"});
  const auto& rows = claims.body.get("rows").get<fake::JsonArray>();
  REQUIRE(rows.size() == 2);
  std::vector<std::string> c1 = Strings(rows[0].get("cells")), c2 = Strings(rows[1].get("cells"));
  REQUIRE(c1.size() == 9);
  CHECK(c1[7].back() == 's');  // an age in seconds
  c1[7] = c2[7] = "age";
  CHECK(c1 == std::vector<std::string>{"c1", "Bound", pv, "1Gi", "RWO", "hostpath", "<unset>", "age", "Filesystem"});
  CHECK(c2 == std::vector<std::string>{"c2", "Pending", "", "", "", "hostpath", "<unset>", "age", "Filesystem"});
  CHECK(Str(rows[0], {"object", "kind"}) == "PartialObjectMetadata");
  CHECK(Str(rows[0], {"object", "metadata", "uid"}) == uid);

  Reply one = TableCall(s.api, kPvs + "/" + pv);  // a get is answered with a Table of one row
  REQUIRE(one.code == 200);
  CHECK(Str(one.body, {"metadata", "resourceVersion"}) == Str(Admin(s.api, "GET", kPvs + "/" + pv).body, {"metadata", "resourceVersion"}));
  REQUIRE(one.body.get("rows").get<fake::JsonArray>().size() == 1);
  std::vector<std::string> cells = Strings(one.body.get("rows").get<fake::JsonArray>()[0].get("cells"));
  REQUIRE(cells.size() == 11);
  cells[9] = "age";
  CHECK(cells == std::vector<std::string>{pv, "1Gi", "RWO", "Delete", "Bound", "default/c1", "hostpath", "<unset>", "", "age",
                                          "Filesystem"});

  Reply classes = TableCall(s.api, "/apis/storage.k8s.io/v1/storageclasses");
  REQUIRE(classes.code == 200);
  std::vector<std::string> sc = Strings(classes.body.get("rows").get<fake::JsonArray>()[0].get("cells"));
  REQUIRE(sc.size() == 6);
  sc[5] = "age";
  CHECK(sc == std::vector<std::string>{"hostpath", "example.com/hostpath", "Delete", "Immediate", "false", "age"});
  CHECK(classes.body.get("rows").get<fake::JsonArray>()[0].get("cells").get<fake::JsonArray>()[4].is<bool>());

  CHECK(Str(Admin(s.api, "GET", kPvcs).body, {"kind"}) == "PersistentVolumeClaimList");  // without as=Table: the list
}

TEST_CASE("tables: ages as duration.HumanDuration writes them") {
  using fake::table_detail::HumanDuration;
  const std::vector<std::pair<long long, std::string>> cases = {
      {-2, "<invalid>"}, {-1, "0s"}, {0, "0s"}, {5, "5s"}, {119, "119s"}, {120, "2m"}, {182, "3m2s"}, {599, "9m59s"},
      {600, "10m"}, {10799, "179m"}, {10800, "3h"}, {3 * 3600 + 60, "3h1m"}, {8 * 3600 - 1, "7h59m"}, {8 * 3600, "8h"},
      {47 * 3600, "47h"}, {48 * 3600, "2d"}, {49 * 3600, "2d1h"}, {8 * 86400, "8d"}, {729 * 86400, "729d"},
      {730 * 86400, "2y"}, {731 * 86400, "2y1d"}, {8 * 365 * 86400, "8y"}};
  for (const auto& [seconds, text] : cases) {
    INFO(seconds);
    CHECK(HumanDuration(seconds) == text);
  }
}


TEST_CASE("kubectl get pvc, pv and storageclass print the columns a real server gives them", "[kubectl]") {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    WARN("no kubectl on PATH: kubectl's tables not checked");
    return;
  }
  Server s;
  const std::string pv = "pvc-" + BoundAndPendingClaims(s.api);
  using Row = std::vector<std::string>;
  // The rows with their last (or given) column, the age, checked and then left out.
  auto without_age = [](std::vector<std::string> lines, size_t age_column_from_end = 1) {
    std::vector<Row> rows;
    for (const auto& line : lines) rows.push_back(Fields(line));
    for (size_t i = 1; i < rows.size(); ++i) {
      REQUIRE(rows[i].size() >= age_column_from_end);
      auto age = rows[i].end() - static_cast<long>(age_column_from_end);
      INFO(lines[i]);
      CHECK((!age->empty() && age->back() == 's'));
      rows[i].erase(age);
    }
    return rows;
  };

  auto claims = without_age(Kubectl(s.api, "get pvc"));
  CHECK(claims == std::vector<Row>{
                      {"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
                      {"c1", "Bound", pv, "1Gi", "RWO", "hostpath", "<unset>"},
                      {"c2", "Pending", "hostpath", "<unset>"}});
  auto wide = without_age(Kubectl(s.api, "get pvc c1 -o wide"), 2);
  CHECK(wide == std::vector<Row>{{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
                                  "VOLUMEATTRIBUTESCLASS", "AGE", "VOLUMEMODE"},
                                 {"c1", "Bound", pv, "1Gi", "RWO", "hostpath", "<unset>", "Filesystem"}});
  auto volumes = without_age(Kubectl(s.api, "get pv"));
  CHECK(volumes == std::vector<Row>{{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS",
                                     "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
                                    {pv, "1Gi", "RWO", "Delete", "Bound", "default/c1", "hostpath", "<unset>"}});
  auto classes = without_age(Kubectl(s.api, "get storageclass"));
  CHECK(classes == std::vector<Row>{{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"},
                                    {"hostpath", "example.com/hostpath", "Delete", "Immediate", "false"}});
}

}  // namespace

TEST_CASE("a list with a continue token that is not the server's own is answered 400, and the server lives on") {
  Server s;
  for (const char* n : {"a", "b", "c"}) REQUIRE(Admin(s.api, "POST", kPvs, Pv(n)).code == 201);
  // a real server's token, and garbage
  for (const std::string& token : {std::string("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIsInN0YXJ0IjoiYlx1MDAwMCJ9"),
                                   std::string("zz%21"), std::string("abc")}) {
    INFO(token);
    Reply r = Admin(s.api, "GET", kPvs + "?limit=1&continue=" + token);
    CHECK(r.code == 400);
    CHECK(Str(r.body, {"kind"}) == "Status");
    CHECK(Str(r.body, {"reason"}) == "BadRequest");
    CHECK(Str(r.body, {"message"}).rfind("invalid continue token: ", 0) == 0);
  }
  Json page1 = Admin(s.api, "GET", kPvs + "?limit=2").body;
  Reply page2 = Admin(s.api, "GET", kPvs + "?limit=2&continue=" + Str(page1, {"metadata", "continue"}));
  CHECK(page2.code == 200);
  CHECK(page2.body.get("items").get<fake::JsonArray>().size() == 1);
}

TEST_CASE("a watch from a resourceVersion that is not a number is answered 500, as the cacher's ParseResourceVersion") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("a")).code == 201);
  Reply r = Admin(s.api, "GET", kPvs + "?watch=true&timeoutSeconds=5&resourceVersion=abc");
  CHECK(r.code == 500);
  CHECK(Str(r.body, {"kind"}) == "Status");
  CHECK(Str(r.body, {"message"}) ==
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax");
  CHECK(Admin(s.api, "GET", kPvs + "?watch=true&timeoutSeconds=5&resourceVersion=-1").code == 500);
}

TEST_CASE("lease updates: resourceVersion required, MicroTime times, a positive leaseDurationSeconds") {
  Server s;
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l";
  auto lease = [](const std::string& rv, const std::string& spec) {
    return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l")" +
           (rv.empty() ? "" : R"(,"resourceVersion":")" + rv + "\"") + R"(},"spec":{)" + spec + "}}";
  };
  const std::string good = R"("holderIdentity":"me","leaseDurationSeconds":15,"renewTime":"2024-01-02T03:04:05.123456Z")";
  Reply created = Admin(s.api, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease("", good));
  REQUIRE(created.code == 201);
  std::string rv = Str(created.body, {"metadata", "resourceVersion"});

  Reply no_rv = Admin(s.api, "PUT", path, lease("", good));
  CHECK(no_rv.code == 422);
  CHECK(Str(no_rv.body, {"message"}).find("metadata.resourceVersion: Invalid value: 0x0: must be specified for an update") !=
        std::string::npos);
  for (const char* t : {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123Z", "yesterday"}) {
    INFO(t);
    Reply bad_time = Admin(s.api, "PUT", path, lease(rv, R"("holderIdentity":"me","renewTime":")" + std::string(t) + "\""));
    CHECK(bad_time.code == 400);
    CHECK(Str(bad_time.body, {"reason"}) == "BadRequest");
  }
  CHECK(Admin(s.api, "PUT", path, lease(rv, R"("holderIdentity":"me","acquireTime":"2024-01-02T03:04:05Z")")).code == 400);
  for (const char* d : {"0", "-5"}) {
    INFO(d);
    Reply bad_duration = Admin(s.api, "PUT", path, lease(rv, R"("holderIdentity":"me","leaseDurationSeconds":)" + std::string(d)));
    CHECK(bad_duration.code == 422);
    CHECK(Str(bad_duration.body, {"message"}).find("spec.leaseDurationSeconds: Invalid value: ") != std::string::npos);
  }
  Reply ok = Admin(s.api, "PUT", path, lease(rv, R"("holderIdentity":"you","leaseDurationSeconds":15,"renewTime":"2024-01-02T03:04:06.000001Z","acquireTime":"2024-01-02T03:04:06.000001+01:00")"));
  INFO(ok.body.serialize());
  CHECK(ok.code == 200);
}

TEST_CASE("quantities are stored in canonical form; unparsable ones are 400, negative capacities 422") {
  Server s;
  auto pv = [](const std::string& name, const std::string& size) {
    std::string text = Pv(name);
    text.replace(text.find("\"1Gi\""), 5, "\"" + size + "\"");
    return text;
  };
  int n = 0;
  for (const auto& [given, stored] : std::vector<std::pair<std::string, std::string>>{
           {"1.5Gi", "1536Mi"}, {"2048Mi", "2Gi"}, {"1000M", "1G"}, {"1Gi", "1Gi"}}) {
    INFO(given);
    std::string name = "q" + std::to_string(n++);
    Reply created = Admin(s.api, "POST", kPvs, pv(name, given));
    REQUIRE(created.code == 201);
    CHECK(Str(created.body, {"spec", "capacity", "storage"}) == stored);
    CHECK(Str(Admin(s.api, "GET", kPvs + "/" + name).body, {"spec", "capacity", "storage"}) == stored);
  }
  std::string claim = Pvc("c", "");
  claim.replace(claim.find("\"1Gi\""), 5, "\"2048Mi\"");
  Reply c = Admin(s.api, "POST", kPvcs, claim);
  REQUIRE(c.code == 201);
  CHECK(Str(c.body, {"spec", "resources", "requests", "storage"}) == "2Gi");

  Reply unparsable = Admin(s.api, "POST", kPvs, pv("bad", "1.5Xi"));
  CHECK(unparsable.code == 400);
  CHECK(Str(unparsable.body, {"reason"}) == "BadRequest");
  CHECK(Str(unparsable.body, {"message"}).find("quantities must match the regular expression") != std::string::npos);
  Reply negative = Admin(s.api, "POST", kPvs, pv("neg", "-1Gi"));
  CHECK(negative.code == 422);
  CHECK(Str(negative.body, {"message"}).find("spec.capacity[storage]") != std::string::npos);
  CHECK(Admin(s.api, "GET", kPvs + "/bad").code == 404);

  Reply patched = Admin(s.api, "PATCH", kPvs + "/q0", R"({"spec":{"capacity":{"storage":"4096Mi"}}})", "application/merge-patch+json");
  CHECK(patched.code == 200);
  CHECK(Str(patched.body, {"spec", "capacity", "storage"}) == "4Gi");
  CHECK(Admin(s.api, "PATCH", kPvs + "/q0", R"({"spec":{"capacity":{"storage":"1.5Xi"}}})", "application/merge-patch+json").code == 422);
}

TEST_CASE("finalizer names: qualified names, a domain unless standard, name parts of 63 characters at most") {
  Server s;
  auto pv = [](const std::string& name, const std::string& finalizer) {
    std::string text = Pv(name);
    text.replace(text.find(R"("name":")" + name + "\""), 8 + name.size() + 1,
                 R"("name":")" + name + R"(","finalizers":[")" + finalizer + "\"]");
    return text;
  };
  const std::string long_name(64, 'a');
  for (const auto& [finalizer, why] : std::vector<std::pair<std::string, std::string>>{
           {"a/b/c", "metadata.finalizers: Invalid value: \"a/b/c\": a qualified name must consist of"},
           {"foo", "metadata.finalizers[0]: Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified"},
           {"example.com/" + long_name, "name part must be no more than 63 characters"},
           {"Example.com/x", "prefix part a lowercase RFC 1123 subdomain"},
           {"example.com/-x", "name part must consist of alphanumeric characters"}}) {
    INFO(finalizer);
    Reply r = Admin(s.api, "POST", kPvs, pv("f", finalizer));
    CHECK(r.code == 422);
    INFO(r.body.serialize());
    CHECK(Str(r.body, {"message"}).find(why) != std::string::npos);
  }
  for (const char* ok : {"kubernetes", "orphan", "example.com/" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "external-provisioner.volume.kubernetes.io/finalizer"}) {
    INFO(ok);
    std::string name = "ok" + std::to_string(std::string(ok).size());
    CHECK(Admin(s.api, "POST", kPvs, pv(name, ok)).code == 201);
  }
  CHECK(Admin(s.api, "PATCH", kPvs + "/ok10", R"({"metadata":{"finalizers":["a/b/c"]}})", "application/merge-patch+json").code == 422);
}

TEST_CASE("unknown top-level fields are dropped, as the decoder drops them; an unknown apiVersion is 400") {
  Server s;
  std::string with_extra = Pv("u");
  with_extra.insert(1, R"("bogus":{"x":1},"other":2,)");
  Reply created = Admin(s.api, "POST", kPvs, with_extra);
  REQUIRE(created.code == 201);
  CHECK(fake::Member(created.body, "bogus") == nullptr);
  CHECK(fake::Member(created.body, "other") == nullptr);
  Json stored = Admin(s.api, "GET", kPvs + "/u").body;
  CHECK(fake::Member(stored, "bogus") == nullptr);
  CHECK(fake::Member(stored, "spec") != nullptr);
  Reply merged = Admin(s.api, "PATCH", kPvs + "/u", R"({"bogus":1,"metadata":{"labels":{"a":"b"}}})", "application/merge-patch+json");
  CHECK(merged.code == 200);
  CHECK(fake::Member(merged.body, "bogus") == nullptr);
  std::string cls = kClass;
  cls.insert(1, R"("extra":"x",)");
  Reply sc = Admin(s.api, "POST", "/apis/storage.k8s.io/v1/storageclasses", cls);
  REQUIRE(sc.code == 201);
  CHECK(fake::Member(sc.body, "extra") == nullptr);
  CHECK(Str(sc.body, {"provisioner"}) == "example.com/hostpath");

  std::string v2 = Pv("v");
  v2.replace(v2.find(R"("apiVersion":"v1")"), 17, R"("apiVersion":"v2")");
  Reply bad = Admin(s.api, "POST", kPvs, v2);
  CHECK(bad.code == 400);
  CHECK(Str(bad.body, {"reason"}) == "BadRequest");
  CHECK(Str(bad.body, {"message"}) ==
        "PersistentVolume in version \"v2\" cannot be handled as a PersistentVolume: no kind \"PersistentVolume\" is "
        "registered for version \"v2\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"");
  std::string apps = Pv("w");
  apps.replace(apps.find(R"("apiVersion":"v1")"), 17, R"("apiVersion":"apps/v1")");
  CHECK(Admin(s.api, "POST", kPvs, apps).code == 400);
  Json current = Admin(s.api, "GET", kPvs + "/u").body;
  current.get<fake::JsonObject>()["apiVersion"] = Json("v9");
  CHECK(Admin(s.api, "PUT", kPvs + "/u", current.serialize()).code == 400);
}

TEST_CASE("a JSON patch with an array index too large for any integer is 422, and the server lives on") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvs, Pv("j")).code == 201);
  Reply r = Admin(s.api, "PATCH", kPvs + "/j", R"([{"op":"replace","path":"/spec/accessModes/99999999999999999999999","value":"ReadWriteMany"}])",
                  "application/json-patch+json");
  CHECK(r.code == 422);
  CHECK(Admin(s.api, "GET", kPvs + "/j").code == 200);
}

TEST_CASE("nothing is made in a namespace that does not exist (404), as NamespaceLifecycle admits") {
  Server s;
  Reply r = Admin(s.api, "POST", "/api/v1/namespaces/nowhere/persistentvolumeclaims", Pvc("c", ""));
  CHECK(r.code == 404);
  CHECK(Str(r.body, {"reason"}) == "NotFound");
  CHECK(Str(r.body, {"message"}) == "namespaces \"nowhere\" not found");
  CHECK(Str(r.body, {"details", "kind"}) == "namespaces");
  REQUIRE(Admin(s.api, "POST", "/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"nowhere"}})").code == 201);
  CHECK(Admin(s.api, "POST", "/api/v1/namespaces/nowhere/persistentvolumeclaims", Pvc("c", "")).code == 201);
  CHECK(Admin(s.api, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", Pvc("d", "")).code == 201);
}
