// Claims with spec.dataSource / spec.dataSourceRef over HTTPS, as a Kubernetes 1.24 API server
// (AnyVolumeDataSource beta and on) and its PV controller handle them; see fake_datasource.hpp
// for the sources each rule comes from.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test/fake/fake_apiserver.hpp"
#include "test/fake/fake_test_client.hpp"

using namespace fake_test;

namespace {

const std::string kClasses = "/apis/storage.k8s.io/v1/storageclasses";

// Pvc(name) with `spec_members` (",\"dataSource\":{...}") added to its spec.
std::string PvcWith(const std::string& name, const std::string& spec_members) {
  std::string body = Pvc(name);
  return body.insert(body.size() - 2, spec_members);
}

// The reference as the real server writes it: apiGroup has no omitempty (null when unset).
Json Ref(const std::string& kind, const std::string& name, const Json& group = Json()) {
  fake::JsonObject o;
  o["apiGroup"] = group;
  o["kind"] = Json(kind);
  o["name"] = Json(name);
  return Json(o);
}

// The causes of a 422 as "field: message", in order.
std::vector<std::string> Causes(const Reply& r) {
  std::vector<std::string> out;
  if (const Json* causes = fake::Path(r.body, {"details", "causes"}))
    for (const Json& c : causes->get<fake::JsonArray>()) out.push_back(Str(c, {"field"}) + ": " + Str(c, {"message"}));
  return out;
}

const Json& At(const Json& obj, const char* key) {
  static const Json kMissing;
  const Json* v = fake::Path(obj, {"spec", key});
  return v != nullptr ? *v : kMissing;
}

}  // namespace

// strategy.go PrepareForCreate: NormalizeDataSources copies dataSource into dataSourceRef (and
// back); EnforceDataSourceBackwardsCompatibility silently drops a dataSource that is neither a
// core PersistentVolumeClaim nor a snapshot VolumeSnapshot when dataSourceRef is unset.
TEST_CASE("a claim's data source is stored as 1.24 normalizes it") {
  Server s;
  SECTION("a clone claim gets dataSourceRef, a copy of dataSource") {
    Reply r = Admin(s.api, "POST", kPvcs, ClonePvc("clone", "src"));
    REQUIRE(r.code == 201);
    CHECK(At(r.body, "dataSource") == Ref("PersistentVolumeClaim", "src"));
    CHECK(At(r.body, "dataSourceRef") == Ref("PersistentVolumeClaim", "src"));
    CHECK(At(Admin(s.api, "GET", kPvcs + "/clone").body, "dataSourceRef") == Ref("PersistentVolumeClaim", "src"));
  }
  SECTION("dataSourceRef alone fills dataSource, a populator's group and kind included") {
    Reply r = Admin(s.api, "POST", kPvcs,
                    PvcWith("pop", R"(,"dataSourceRef":{"apiGroup":"example.com","kind":"Populator","name":"p","extra":1})"));
    REQUIRE(r.code == 201);
    CHECK(At(r.body, "dataSource") == Ref("Populator", "p", Json("example.com")));
    CHECK(At(r.body, "dataSourceRef") == Ref("Populator", "p", Json("example.com")));
  }
  SECTION("a snapshot source is kept") {
    Reply r = Admin(s.api, "POST", kPvcs,
                    PvcWith("snap", R"(,"dataSource":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"s1"})"));
    REQUIRE(r.code == 201);
    CHECK(At(r.body, "dataSourceRef") == Ref("VolumeSnapshot", "s1", Json("snapshot.storage.k8s.io")));
  }
  SECTION("other dataSources alone are dropped, not refused") {
    const char* sources[] = {R"({"kind":"ConfigMap","name":"x"})", R"({"apiGroup":"example.com","kind":"Populator","name":"p"})",
                             R"({"name":"x"})"};
    for (int i = 0; i < 3; ++i) {
      INFO(sources[i]);
      Reply r = Admin(s.api, "POST", kPvcs, PvcWith("d" + std::to_string(i), std::string(R"(,"dataSource":)") + sources[i]));
      REQUIRE(r.code == 201);
      CHECK(fake::Path(r.body, {"spec", "dataSource"}) == nullptr);
      CHECK(fake::Path(r.body, {"spec", "dataSourceRef"}) == nullptr);
    }
  }
}

// validation.go (1.24) validateDataSource and ValidatePersistentVolumeClaimSpec.
TEST_CASE("invalid data sources are refused with 422 and the 1.24 texts") {
  struct Case {
    const char* name;
    std::string members;
    std::vector<std::string> causes;  // "field: message", in order
  };
  const std::string path_value =
      "Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000a3c0f0)}: must match dataSourceRef";
  std::vector<Case> cases = {
      {"a clone without a name", R"(,"dataSource":{"kind":"PersistentVolumeClaim"})",
       {"spec.dataSource.name: Required value", "spec.dataSourceRef.name: Required value"}},
      {"a core kind other than a claim in dataSourceRef", R"(,"dataSourceRef":{"kind":"ConfigMap","name":"x"})",
       {"spec.dataSource: Invalid value: \"ConfigMap\"", "spec.dataSourceRef: Invalid value: \"ConfigMap\""}},
      {"no kind in dataSourceRef", R"(,"dataSourceRef":{"name":"x"})",
       {"spec.dataSource.kind: Required value", "spec.dataSource: Invalid value: \"\"",
        "spec.dataSourceRef.kind: Required value", "spec.dataSourceRef: Invalid value: \"\""}},
      {"both set, other names",
       R"(,"dataSource":{"kind":"PersistentVolumeClaim","name":"a"},"dataSourceRef":{"kind":"PersistentVolumeClaim","name":"b"})",
       {"spec: " + path_value}},
      {"both set, apiGroup \"\" against none (DeepEqual of the pointers)",
       R"(,"dataSource":{"apiGroup":"","kind":"PersistentVolumeClaim","name":"a"},"dataSourceRef":{"kind":"PersistentVolumeClaim","name":"a"})",
       {"spec: " + path_value}},
  };
  Server s;
  for (const Case& c : cases) {
    SECTION(c.name) {
      Reply r = Admin(s.api, "POST", kPvcs, PvcWith("bad", c.members));
      INFO(r.body.serialize());
      CHECK(r.code == 422);
      CHECK(Str(r.body, {"reason"}) == "Invalid");
      CHECK(Causes(r) == c.causes);
    }
  }
  SECTION("the message lists the causes") {
    Reply r = Admin(s.api, "POST", kPvcs, PvcWith("bad", R"(,"dataSourceRef":{"kind":"ConfigMap","name":"x"})"));
    CHECK(Str(r.body, {"message"}) == "PersistentVolumeClaim \"bad\" is invalid: [spec.dataSource: Invalid value: "
                                      "\"ConfigMap\", spec.dataSourceRef: Invalid value: \"ConfigMap\"]");
  }
}

// ValidatePersistentVolumeClaimUpdate: the spec is immutable but for resources.requests (bound)
// and a first volumeName; PrepareForUpdate refills an omitted dataSourceRef from dataSource.
TEST_CASE("a claim's data source cannot change on update") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kPvcs, ClonePvc("c", "src")).code == 201);
  const std::string immutable = "Forbidden: spec is immutable after creation except resources.requests";
  SECTION("a merge patch of dataSource.name: 422, must match dataSourceRef, spec immutable") {
    Reply r = Admin(s.api, "PATCH", kPvcs + "/c", R"({"spec":{"dataSource":{"name":"other"}}})", "application/merge-patch+json");
    INFO(r.body.serialize());
    CHECK(r.code == 422);
    auto got = Causes(r);
    REQUIRE(got.size() == 2);
    CHECK(got[0].find("spec: Invalid value: field.Path{") == 0);
    CHECK(got[0].find("}: must match dataSourceRef") != std::string::npos);
    CHECK(got[1].rfind("spec: " + immutable, 0) == 0);
  }
  SECTION("a PUT that changes dataSource and omits dataSourceRef: 422, spec immutable only") {
    Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
    auto& spec = fake::Obj(claim, {"spec"});
    spec.erase("dataSourceRef");
    spec["dataSource"] = Ref("PersistentVolumeClaim", "other");
    Reply r = Admin(s.api, "PUT", kPvcs + "/c", claim.serialize());
    INFO(r.body.serialize());
    CHECK(r.code == 422);
    auto got = Causes(r);
    REQUIRE(got.size() == 1);
    CHECK(got[0].rfind("spec: " + immutable, 0) == 0);
  }
  SECTION("a PUT that omits dataSourceRef but keeps dataSource is no change") {
    Json claim = Admin(s.api, "GET", kPvcs + "/c").body;
    fake::Obj(claim, {"spec"}).erase("dataSourceRef");
    Reply r = Admin(s.api, "PUT", kPvcs + "/c", claim.serialize());
    CHECK(r.code == 200);
    CHECK(At(r.body, "dataSourceRef") == Ref("PersistentVolumeClaim", "src"));
  }
  SECTION("a claim made without a data source may not gain one") {
    REQUIRE(Admin(s.api, "POST", kPvcs, Pvc("plain")).code == 201);
    Reply r = Admin(s.api, "PATCH", kPvcs + "/plain", R"({"spec":{"dataSource":{"kind":"PersistentVolumeClaim","name":"src"}}})",
                    "application/merge-patch+json");
    CHECK(r.code == 422);
    auto got = Causes(r);
    REQUIRE(got.size() == 1);
    CHECK(got[0].rfind("spec: " + immutable, 0) == 0);
  }
}

// pv_controller.go syncUnboundClaim (1.24): findBestMatchForClaim → FindMatchingVolume
// (component-helpers/storage/volume/pv_helpers.go) has no data-source check, so a clone claim
// binds to a matching Available volume like any claim; with none, provisionClaim hands it to
// the external provisioner through the storage-provisioner annotations.
TEST_CASE("the PV controller treats a clone claim as any claim") {
  Server s;
  REQUIRE(Admin(s.api, "POST", kClasses, kClass).code == 201);
  SECTION("a matching Available volume binds it, and the claim keeps its data source") {
    REQUIRE(Admin(s.api, "POST", kPvs, Pv("existing")).code == 201);
    REQUIRE(Admin(s.api, "POST", kPvcs, ClonePvc("clone", "src")).code == 201);
    Json claim = Admin(s.api, "GET", kPvcs + "/clone").body;
    CHECK(Str(claim, {"spec", "volumeName"}) == "existing");
    CHECK(Str(claim, {"status", "phase"}) == "Bound");
    CHECK(At(claim, "dataSource") == Ref("PersistentVolumeClaim", "src"));
    CHECK(At(claim, "dataSourceRef") == Ref("PersistentVolumeClaim", "src"));
  }
  SECTION("without one, the external provisioner is asked") {
    REQUIRE(Admin(s.api, "POST", kPvcs, ClonePvc("clone", "src")).code == 201);
    Json claim = Admin(s.api, "GET", kPvcs + "/clone").body;
    CHECK(Str(claim, {"status", "phase"}) == "Pending");
    CHECK(fake::Annotation(claim, "volume.kubernetes.io/storage-provisioner") == "example.com/hostpath");
    CHECK(fake::Annotation(claim, "volume.beta.kubernetes.io/storage-provisioner") == "example.com/hostpath");
    CHECK(At(claim, "dataSourceRef") == Ref("PersistentVolumeClaim", "src"));
  }
}
