// Tests for k8s_json.hpp: the JSON ⇄ struct mapping, bounded parsing of hostile JSON, error
// bodies, watch-stream splitting, watch events and list pages.
#include <catch2/catch.hpp>

#include <picojson.h>

#include <string>
#include <vector>

#include "kube/k8s_json.hpp"

namespace {

// The value of a JSON text.
picojson::value Json(const std::string& text) {
  picojson::value v;
  Status s = k8s_json_detail::Parse(text, &v);
  INFO("JSON: " << text << " -> " << s.message());
  REQUIRE(s.ok());
  return v;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const char* kFullClaim = R"({
  "kind": "PersistentVolumeClaim", "apiVersion": "v1",
  "metadata": {"name": "data", "namespace": "apps", "uid": "0b5e-11", "resourceVersion": "42",
               "annotations": {"volume.kubernetes.io/storage-provisioner": "hostpath.example.com"},
               "labels": {"app": "db"}, "finalizers": ["kubernetes.io/pvc-protection"],
               "deletionTimestamp": "2024-01-01T00:00:00Z"},
  "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
           "volumeMode": "Filesystem", "resources": {"requests": {"storage": "1Gi"}},
           "volumeName": "pvc-0b5e-11", "selector": {"matchLabels": {"a": "b"}},
           "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}},
  "status": {"phase": "Pending"}
})";

}  // namespace

TEST_CASE("ClaimFromJson: a full claim maps every field", "[k8s_json]") {
  Result<Claim> c = FromJson<Claim>(Json(kFullClaim));
  REQUIRE(c.ok());
  CHECK(c->meta.name == "data");
  CHECK(c->meta.namespace_ == "apps");
  CHECK(c->meta.uid == "0b5e-11");
  CHECK(c->meta.resource_version == "42");
  CHECK(c->meta.annotations == std::map<std::string, std::string>{{ann::kStorageProvisioner, "hostpath.example.com"}});
  CHECK(c->meta.labels == std::map<std::string, std::string>{{"app", "db"}});
  CHECK(c->meta.finalizers == std::vector<std::string>{"kubernetes.io/pvc-protection"});
  CHECK(c->meta.deleting);
  CHECK(c->has_storage_class_name);
  CHECK(c->storage_class_name == "fast");
  CHECK(c->access_modes == std::vector<std::string>{"ReadWriteOnce", "ReadOnlyMany"});
  CHECK(c->volume_mode == "Filesystem");
  CHECK(c->storage_request == "1Gi");
  CHECK(c->volume_name == "pvc-0b5e-11");
  CHECK(c->has_selector);
  CHECK(c->has_data_source);
  CHECK(c->data_source.kind == "PersistentVolumeClaim");
  CHECK(c->data_source.name == "src");
  CHECK(c->data_source.api_group.empty());
  CHECK(c->phase == "Pending");
}

TEST_CASE("ClaimFromJson: the data source is dataSource's, else dataSourceRef's", "[k8s_json]") {
  Result<Claim> both = FromJson<Claim>(Json(R"({"spec": {
      "dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
      "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "b"}}})"));
  REQUIRE(both.ok());
  CHECK(both->data_source.kind == "PersistentVolumeClaim");
  CHECK(both->data_source.name == "a");
  CHECK(both->data_source.api_group.empty());
  Result<Claim> ref = FromJson<Claim>(Json(R"({"spec": {
      "dataSourceRef": {"apiGroup": "example.com", "kind": "Backup", "name": "b"}}})"));
  REQUIRE(ref.ok());
  CHECK(ref->has_data_source);
  CHECK(ref->data_source.api_group == "example.com");
  CHECK(ref->data_source.kind == "Backup");
  CHECK(ref->data_source.name == "b");
  CHECK_FALSE(FromJson<Claim>(Json(R"({"spec": {"dataSource": {"name": 3}}})")).ok());
}

TEST_CASE("ClaimFromJson: optional fields, presence flags and number quantities", "[k8s_json]") {
  struct Case {
    const char* name;
    const char* json;
    bool has_class;
    std::string class_name;
    bool has_selector;
    bool has_data_source;
    std::string storage;
    bool deleting;
  };
  const Case kCases[] = {
      {"empty object", "{}", false, "", false, false, "", false},
      {"empty spec", R"({"spec": {}})", false, "", false, false, "", false},
      {"class absent", R"({"spec": {"accessModes": []}})", false, "", false, false, "", false},
      {"class empty string", R"({"spec": {"storageClassName": ""}})", true, "", false, false, "", false},
      {"class null", R"({"spec": {"storageClassName": null}})", false, "", false, false, "", false},
      {"selector null", R"({"spec": {"selector": null}})", false, "", false, false, "", false},
      {"selector empty", R"({"spec": {"selector": {}}})", false, "", true, false, "", false},
      {"dataSource null", R"({"spec": {"dataSource": null}})", false, "", false, false, "", false},
      {"dataSourceRef only", R"({"spec": {"dataSourceRef": {"kind": "VolumeSnapshot"}}})", false, "", false, true, "",
       false},
      {"storage integer", R"({"spec": {"resources": {"requests": {"storage": 10}}}})", false, "", false, false, "10",
       false},
      {"storage fraction", R"({"spec": {"resources": {"requests": {"storage": 1.5}}}})", false, "", false, false, "1.5",
       false},
      {"storage tenth", R"({"spec": {"resources": {"requests": {"storage": 0.1}}}})", false, "", false, false, "0.1",
       false},
      {"storage huge", R"({"spec": {"resources": {"requests": {"storage": 1e21}}}})", false, "", false, false, "1e+21",
       false},
      {"storage null", R"({"spec": {"resources": {"requests": {"storage": null}}}})", false, "", false, false, "", false},
      {"requests absent", R"({"spec": {"resources": {"limits": {"storage": "1"}}}})", false, "", false, false, "", false},
      {"deletionTimestamp null", R"({"metadata": {"deletionTimestamp": null}})", false, "", false, false, "", false},
      {"deletionTimestamp set", R"({"metadata": {"deletionTimestamp": "x"}})", false, "", false, false, "", true},
      {"unknown fields ignored", R"({"spec": {"future": [1, {"x": null}]}, "extra": 5})", false, "", false, false, "",
       false},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<Claim> claim = FromJson<Claim>(Json(c.json));
    REQUIRE(claim.ok());
    CHECK(claim->has_storage_class_name == c.has_class);
    CHECK(claim->storage_class_name == c.class_name);
    CHECK(claim->has_selector == c.has_selector);
    CHECK(claim->has_data_source == c.has_data_source);
    CHECK(claim->storage_request == c.storage);
    CHECK(claim->meta.deleting == c.deleting);
  }
}

TEST_CASE("ClaimFromJson: wrong JSON types are errors naming the field", "[k8s_json]") {
  struct Case {
    const char* name;
    const char* json;
    const char* error;  // a part of the message
  };
  const Case kCases[] = {
      {"array", "[]", "expected a JSON object, got array"},
      {"string", R"("claim")", "expected a JSON object, got string"},
      {"null", "null", "expected a JSON object, got null"},
      {"other kind", R"({"kind": "Status"})", "expected kind PersistentVolumeClaim, got Status"},
      {"kind not a string", R"({"kind": 1})", "field kind: expected a string, got number"},
      {"metadata string", R"({"metadata": "x"})", "field metadata: expected an object, got string"},
      {"name number", R"({"metadata": {"name": 5}})", "field metadata.name: expected a string, got number"},
      {"annotation value number", R"({"metadata": {"annotations": {"a": 1}}})",
       "field metadata.annotations[\"a\"]: expected a string, got number"},
      {"labels array", R"({"metadata": {"labels": []}})", "field metadata.labels: expected an object of strings"},
      {"finalizers string", R"({"metadata": {"finalizers": "x"}})", "field metadata.finalizers: expected an array"},
      {"finalizer number", R"({"metadata": {"finalizers": ["a", 1]}})", "field metadata.finalizers[1]: expected a string"},
      {"spec string", R"({"spec": "x"})", "field spec: expected an object, got string"},
      {"spec array", R"({"spec": []})", "field spec: expected an object, got array"},
      {"class bool", R"({"spec": {"storageClassName": true}})", "field spec.storageClassName: expected a string, got boolean"},
      {"access mode bool", R"({"spec": {"accessModes": [true]}})", "field spec.accessModes[0]: expected a string"},
      {"selector string", R"({"spec": {"selector": "a=b"}})", "field spec.selector: expected an object"},
      {"dataSourceRef array", R"({"spec": {"dataSourceRef": []}})", "field spec.dataSourceRef: expected an object"},
      {"requests array", R"({"spec": {"resources": {"requests": []}}})", "field spec.resources.requests: expected an object"},
      {"storage object", R"({"spec": {"resources": {"requests": {"storage": {}}}}})",
       "field spec.resources.requests.storage: expected a quantity string, got object"},
      {"phase number", R"({"status": {"phase": 1}})", "field status.phase: expected a string, got number"},
      {"names the claim", R"({"metadata": {"name": "c", "namespace": "ns"}, "spec": 1})",
       "PersistentVolumeClaim ns/c: field spec"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<Claim> claim = FromJson<Claim>(Json(c.json));
    REQUIRE_FALSE(claim.ok());
    CHECK(claim.status().code() == Status::kInvalid);
    CHECK_THAT(claim.status().message(), Catch::Contains(c.error));
  }
}

namespace {

Volume SampleVolume() {
  Volume v;
  v.meta.name = "pvc-0b5e-11";
  v.meta.annotations = {{ann::kProvisionedBy, "hostpath.example.com"}};
  v.meta.labels = {{"node", "n1"}};
  v.meta.finalizers = {ann::kProvisionerFinalizer};
  v.capacity = "1Gi";
  v.access_modes = {"ReadWriteOnce"};
  v.volume_mode = "Filesystem";
  v.storage_class_name = "fast";
  v.reclaim_policy = "Delete";
  v.mount_options = {"noatime"};
  v.has_claim_ref = true;
  v.claim_ref = {"apps", "data", "0b5e-11"};
  v.host_path = "/var/lib/hostpath/apps-data-pvc-0b5e-11";
  v.host_path_type = "DirectoryOrCreate";
  return v;
}

void CheckSameVolume(const Volume& a, const Volume& b) {
  CHECK(a.meta.name == b.meta.name);
  CHECK(a.meta.annotations == b.meta.annotations);
  CHECK(a.meta.labels == b.meta.labels);
  CHECK(a.meta.finalizers == b.meta.finalizers);
  CHECK(a.capacity == b.capacity);
  CHECK(a.access_modes == b.access_modes);
  CHECK(a.volume_mode == b.volume_mode);
  CHECK(a.storage_class_name == b.storage_class_name);
  CHECK(a.reclaim_policy == b.reclaim_policy);
  CHECK(a.mount_options == b.mount_options);
  CHECK(a.has_claim_ref == b.has_claim_ref);
  CHECK(a.claim_ref.namespace_ == b.claim_ref.namespace_);
  CHECK(a.claim_ref.name == b.claim_ref.name);
  CHECK(a.claim_ref.uid == b.claim_ref.uid);
  CHECK(a.host_path == b.host_path);
  CHECK(a.host_path_type == b.host_path_type);
}

}  // namespace

TEST_CASE("VolumeToJson: the PV we POST, exactly", "[k8s_json]") {
  const std::string want =
      R"({"apiVersion":"v1","kind":"PersistentVolume",)"
      R"("metadata":{"annotations":{"pv.kubernetes.io\/provisioned-by":"hostpath.example.com"},)"
      R"("finalizers":["external-provisioner.volume.kubernetes.io\/finalizer"],"labels":{"node":"n1"},"name":"pvc-0b5e-11"},)"
      R"("spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},)"
      R"("claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data","namespace":"apps","uid":"0b5e-11"},)"
      R"("hostPath":{"path":"\/var\/lib\/hostpath\/apps-data-pvc-0b5e-11","type":"DirectoryOrCreate"},)"
      R"("mountOptions":["noatime"],"persistentVolumeReclaimPolicy":"Delete","storageClassName":"fast",)"
      R"("volumeMode":"Filesystem"}})";
  CHECK(VolumeToJson(SampleVolume()) == want);
}

TEST_CASE("VolumeToJson: optional parts are left out when unset", "[k8s_json]") {
  Volume v;
  v.meta.name = "pv1";
  v.capacity = "5Gi";
  v.access_modes = {"ReadWriteOnce"};
  v.reclaim_policy = "Retain";
  CHECK(VolumeToJson(v) ==
        R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},)"
        R"("spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"5Gi"},"persistentVolumeReclaimPolicy":"Retain"}})");
}

TEST_CASE("VolumeFromJson: round trips of VolumeToJson through text", "[k8s_json]") {
  struct Case {
    const char* name;
    Volume volume;
  };
  Volume no_claim = SampleVolume();
  no_claim.has_claim_ref = false;
  no_claim.claim_ref = {};
  Volume bare;
  bare.meta.name = "bare";
  Volume odd_strings = SampleVolume();
  odd_strings.meta.annotations["quote\"and\\slash"] = "line\nbreak\ttab \xc3\xa9 \xf0\x9d\x84\x9e";
  odd_strings.claim_ref.name = std::string("nul\0inside", 10);
  const Case kCases[] = {{"full", SampleVolume()}, {"no claimRef", no_claim}, {"bare", bare}, {"odd strings", odd_strings}};
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<Volume> back = FromJson<Volume>(Json(VolumeToJson(c.volume)));
    REQUIRE(back.ok());
    CheckSameVolume(*back, c.volume);
  }
}

TEST_CASE("VolumeFromJson: a PV as the API server returns it", "[k8s_json]") {
  Result<Volume> v = FromJson<Volume>(Json(R"({
    "kind": "PersistentVolume", "apiVersion": "v1",
    "metadata": {"name": "pvc-1", "uid": "u-1", "resourceVersion": "7", "creationTimestamp": "2024-01-01T00:00:00Z"},
    "spec": {"capacity": {"storage": "1536Mi"}, "hostPath": {"path": "/data/x", "type": ""},
             "accessModes": ["ReadWriteOnce"], "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "a",
             "name": "b", "uid": "c", "apiVersion": "v1", "resourceVersion": "5"},
             "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast", "volumeMode": "Filesystem"},
    "status": {"phase": "Released"}})"));
  REQUIRE(v.ok());
  CHECK(v->meta.uid == "u-1");
  CHECK(v->meta.resource_version == "7");
  CHECK_FALSE(v->meta.deleting);
  CHECK(v->capacity == "1536Mi");
  CHECK(v->host_path == "/data/x");
  CHECK(v->host_path_type.empty());
  CHECK(v->has_claim_ref);
  CHECK(v->claim_ref.uid == "c");
  CHECK(v->phase == "Released");
}

TEST_CASE("VolumeFromJson: wrong JSON types are errors naming the field", "[k8s_json]") {
  struct Case {
    const char* name;
    const char* json;
    const char* error;
  };
  const Case kCases[] = {
      {"claim kind", R"({"kind": "PersistentVolumeClaim"})", "expected kind PersistentVolume, got PersistentVolumeClaim"},
      {"capacity string", R"({"spec": {"capacity": "1Gi"}})", "field spec.capacity: expected an object"},
      {"capacity bool", R"({"spec": {"capacity": {"storage": true}}})", "field spec.capacity.storage: expected a quantity"},
      {"claimRef string", R"({"spec": {"claimRef": "a/b"}})", "field spec.claimRef: expected an object"},
      {"claimRef uid number", R"({"spec": {"claimRef": {"uid": 1}}})", "field spec.claimRef.uid: expected a string"},
      {"hostPath array", R"({"spec": {"hostPath": ["/x"]}})", "field spec.hostPath: expected an object"},
      {"hostPath.path number", R"({"spec": {"hostPath": {"path": 1}}})", "field spec.hostPath.path: expected a string"},
      {"mountOptions object", R"({"spec": {"mountOptions": {}}})", "field spec.mountOptions: expected an array"},
      {"names the volume", R"({"metadata": {"name": "pv9"}, "status": []})", "PersistentVolume pv9: field status"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<Volume> v = FromJson<Volume>(Json(c.json));
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.status().message(), Catch::Contains(c.error));
  }
}

TEST_CASE("StorageClassFromJson: fields and rejections", "[k8s_json]") {
  Result<StorageClass> sc = FromJson<StorageClass>(Json(R"({
    "kind": "StorageClass", "apiVersion": "storage.k8s.io/v1", "metadata": {"name": "fast"},
    "provisioner": "hostpath.example.com", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
    "parameters": {"mode": "0770", "uid": "1000"}, "mountOptions": ["ro"]})"));
  REQUIRE(sc.ok());
  CHECK(sc->meta.name == "fast");
  CHECK(sc->provisioner == "hostpath.example.com");
  CHECK(sc->reclaim_policy == "Retain");
  CHECK(sc->volume_binding_mode == "WaitForFirstConsumer");
  CHECK(sc->parameters == std::map<std::string, std::string>{{"mode", "0770"}, {"uid", "1000"}});
  CHECK(sc->mount_options == std::vector<std::string>{"ro"});

  Result<StorageClass> defaults = FromJson<StorageClass>(Json(R"({"metadata": {"name": "s"}, "provisioner": "p"})"));
  REQUIRE(defaults.ok());
  CHECK(defaults->reclaim_policy.empty());
  CHECK(defaults->parameters.empty());

  struct Case {
    const char* name;
    const char* json;
    const char* error;
  };
  const Case kCases[] = {
      {"parameter number", R"({"parameters": {"uid": 1000}})", "field parameters[\"uid\"]: expected a string, got number"},
      {"provisioner number", R"({"provisioner": 1})", "field provisioner: expected a string"},
      {"other kind", R"({"kind": "PersistentVolume"})", "expected kind StorageClass"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<StorageClass> bad = FromJson<StorageClass>(Json(c.json));
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.status().message(), Catch::Contains(c.error));
  }
}

namespace {

Event SampleEvent() {
  Event e;
  e.meta.name = "data.17a1b2c3d4e5f600";
  e.meta.namespace_ = "apps";
  e.involved_kind = "PersistentVolumeClaim";
  e.involved_namespace = "apps";
  e.involved_name = "data";
  e.involved_uid = "0b5e-11";
  e.involved_resource_version = "42";
  e.type = "Normal";
  e.reason = "ProvisioningSucceeded";
  e.message = "Successfully provisioned volume pvc-0b5e-11";
  e.count = 3;
  e.first_timestamp = "2024-01-01T00:00:00Z";
  e.last_timestamp = "2024-01-01T00:05:00Z";
  e.source_component = "hostpath.example.com";
  return e;
}

}  // namespace

TEST_CASE("EventToJson: the Event we POST, exactly", "[k8s_json]") {
  CHECK(EventToJson(SampleEvent()) ==
        R"({"apiVersion":"v1","count":3,"firstTimestamp":"2024-01-01T00:00:00Z",)"
        R"("involvedObject":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data","namespace":"apps",)"
        R"("resourceVersion":"42","uid":"0b5e-11"},"kind":"Event","lastTimestamp":"2024-01-01T00:05:00Z",)"
        R"("message":"Successfully provisioned volume pvc-0b5e-11","metadata":{"name":"data.17a1b2c3d4e5f600",)"
        R"("namespace":"apps"},"reason":"ProvisioningSucceeded","reportingComponent":"hostpath.example.com",)"
        R"("source":{"component":"hostpath.example.com"},"type":"Normal"})");
}

TEST_CASE("EventFromJson: round trips and a cluster-scoped object", "[k8s_json]") {
  Event pv_event = SampleEvent();
  pv_event.involved_kind = "PersistentVolume";
  pv_event.involved_namespace = "";
  pv_event.meta.namespace_ = "default";
  for (const Event& e : {SampleEvent(), pv_event}) {
    INFO(e.involved_kind);
    std::string text = EventToJson(e);
    CHECK(Contains(text, R"("namespace":"apps")") == !e.involved_namespace.empty());
    Result<Event> back = FromJson<Event>(Json(text));
    REQUIRE(back.ok());
    CHECK(back->meta.name == e.meta.name);
    CHECK(back->meta.namespace_ == e.meta.namespace_);
    CHECK(back->involved_kind == e.involved_kind);
    CHECK(back->involved_namespace == e.involved_namespace);
    CHECK(back->involved_name == e.involved_name);
    CHECK(back->involved_uid == e.involved_uid);
    CHECK(back->involved_api_version == e.involved_api_version);
    CHECK(back->involved_resource_version == e.involved_resource_version);
    CHECK(back->type == e.type);
    CHECK(back->reason == e.reason);
    CHECK(back->message == e.message);
    CHECK(back->count == e.count);
    CHECK(back->first_timestamp == e.first_timestamp);
    CHECK(back->last_timestamp == e.last_timestamp);
    CHECK(back->source_component == e.source_component);
  }
}

TEST_CASE("EventFromJson: count must be a 32-bit integer", "[k8s_json]") {
  struct Case {
    const char* json;
    bool ok;
    int count;
  };
  const Case kCases[] = {
      {R"({"count": 7})", true, 7},     {"{}", true, 0},
      {R"({"count": 1.5})", false, 0},  {R"({"count": "7"})", false, 0},
      {R"({"count": 3e9})", false, 0},  {R"({"count": -1})", true, -1},
  };
  for (const auto& c : kCases) {
    INFO(c.json);
    Result<Event> e = FromJson<Event>(Json(c.json));
    CHECK(e.ok() == c.ok);
    if (e.ok()) CHECK(e->count == c.count);
    if (!e.ok()) CHECK_THAT(e.status().message(), Catch::Contains("field count"));
  }
}

TEST_CASE("FromJsonText: text that is not one JSON value is refused, never a crash", "[k8s_json]") {
  struct Case {
    const char* name;
    std::string text;
    bool ok;
  };
  const Case kCases[] = {
      {"empty", "", false},
      {"spaces", "   ", false},
      {"truncated object", "{\"kind\":", false},
      {"missing colon", "{\"a\" 1}", false},
      {"trailing data", "{} x", false},
      {"two values", "{}{}", false},
      {"trailing whitespace is fine", "{} \r\n\t", true},
      {"single quotes", "{'a': 1}", false},
      {"bare word", "nope", false},
      {"trailing comma", R"({"a":1,})", false},
      {"lone surrogate escape", R"({"a":"\ud800"})", false},
      {"surrogate pair escape", R"({"a":"\ud834\udd1e"})", true},
      {"NUL escape", R"({"a":"a\u0000b"})", true},
      {"raw control character", "{\"a\":\"a\x01\"}", false},
      {"100000 levels", "{\"a\":" + std::string(100000, '['), false},
      {"deep but closed", "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}", false},
      {"number beyond a double", R"({"a":[1e616]})", false},
      {"negative number beyond a double", R"({"spec":{"resources":{"requests":{"storage":-1e400}}}})", false},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<Claim> v = FromJsonText<Claim>(c.text);
    CHECK(v.ok() == c.ok);
    if (!c.ok) {
      CHECK(v.status().code() == Status::kInvalid);
      CHECK_THAT(v.status().message(), Catch::StartsWith("invalid JSON"));
    }
  }
}

TEST_CASE("FromJsonText: every truncation of a document is rejected", "[k8s_json]") {
  const std::string doc = std::string(kFullClaim) + "\n";
  REQUIRE(FromJsonText<Claim>(doc).ok());
  const std::string trimmed = doc.substr(0, doc.find_last_of('}') + 1);
  for (size_t n = 0; n < trimmed.size(); ++n) {
    INFO("first " << n << " bytes");
    CHECK_FALSE(FromJsonText<Claim>(trimmed.substr(0, n)).ok());
  }
}

TEST_CASE("StatusMessage: Status bodies and anything else, as one line", "[k8s_json]") {
  struct Case {
    const char* name;
    int code;
    std::string body;
    std::string want;
  };
  const std::string long_html = "<html>" + std::string(300, 'x') + "</html>";
  const std::string euro_at_200 = std::string(199, 'a') + "\xe2\x82\xac" + "tail";
  const Case kCases[] = {
      {"already exists", 409,
       R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
       R"("message":"persistentvolumes \"x\" already exists","reason":"AlreadyExists",)"
       R"("details":{"name":"x","kind":"persistentvolumes"},"code":409})",
       R"(persistentvolumes "x" already exists (AlreadyExists, 409))"},
      {"no reason", 500, R"({"kind":"Status","message":"etcd is down"})", "etcd is down (500)"},
      {"reason only", 404, R"({"kind":"Status","reason":"NotFound"})", "NotFound (404)"},
      {"message on two lines", 422, R"({"kind":"Status","message":"a\nb","reason":"Invalid"})", "a b (Invalid, 422)"},
      {"control characters in reason", 409, "{\"kind\":\"Status\",\"message\":\"m\",\"reason\":\"A\x7f\\tB\"}",
       "m (A  B, 409)"},
      {"empty Status", 500, R"({"kind":"Status"})", R"({"kind":"Status"} (500))"},
      {"other JSON", 502, R"({"error":"bad gateway"})", R"({"error":"bad gateway"} (502))"},
      {"message of wrong type", 500, R"({"kind":"Status","message":5})", R"({"kind":"Status","message":5} (500))"},
      {"plain text", 503, "Service Unavailable\n", "Service Unavailable  (503)"},
      {"long body cut at 200 bytes", 502, long_html, long_html.substr(0, 200) + " (502)"},
      {"cut does not split UTF-8", 502, euro_at_200, std::string(199, 'a') + " (502)"},
      {"empty body", 401, "", "empty response (401)"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    CHECK(StatusMessage(c.code, c.body) == c.want);
  }
}

namespace {

// Feeds `stream` cut at the given offsets and returns the lines seen.
std::vector<std::string> Split(const std::string& stream, const std::vector<size_t>& cuts, Status* status) {
  WatchLineSplitter splitter(1024);
  std::vector<std::string> lines;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(stream.size());
  for (size_t to : ends) {
    *status = splitter.Feed(stream.data() + from, to - from, [&](const std::string& l) { lines.push_back(l); });
    if (!status->ok()) break;
    from = to;
  }
  return lines;
}

}  // namespace

TEST_CASE("WatchLineSplitter: the same lines for every way of cutting the stream", "[k8s_json]") {
  const std::vector<std::string> events = {
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})",
      R"({"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"2"}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}})",
  };
  std::string stream;
  for (const auto& e : events) stream += e + "\n";
  for (size_t i = 0; i <= stream.size(); ++i) {
    for (size_t j = i; j <= stream.size(); ++j) {
      Status s;
      std::vector<std::string> lines = Split(stream, {i, j}, &s);
      if (!s.ok() || lines != events) {
        FAIL("cuts at " << i << " and " << j << ": " << s.message() << ", " << lines.size() << " lines");
      }
    }
  }
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
  Status s;
  CHECK(Split(stream, every_byte, &s) == events);
  CHECK(s.ok());
}

TEST_CASE("WatchLineSplitter: partial lines wait, empty lines are skipped", "[k8s_json]") {
  WatchLineSplitter splitter;
  std::vector<std::string> lines;
  auto collect = [&](const std::string& l) { lines.push_back(l); };
  std::string chunk = "\n\n{\"a\":1}\n{\"b\"";
  REQUIRE(splitter.Feed(chunk.data(), chunk.size(), collect).ok());
  CHECK(lines == std::vector<std::string>{"{\"a\":1}"});
  CHECK(splitter.pending() == 4);
  chunk = ":2}\r\n";
  REQUIRE(splitter.Feed(chunk.data(), chunk.size(), collect).ok());
  CHECK(lines == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}\r"});
  CHECK(splitter.pending() == 0);
  REQUIRE(splitter.Feed(nullptr, 0, collect).ok());
  CHECK(lines.size() == 2);
}

TEST_CASE("WatchLineSplitter: a line over the limit fails at once, and for good", "[k8s_json]") {
  struct Case {
    const char* name;
    std::vector<std::string> chunks;
    bool ok;
    size_t lines;
  };
  const std::string eight(8, 'x');
  const Case kCases[] = {
      {"exactly the limit", {eight + "\n"}, true, 1},
      {"one over", {eight + "x\n"}, false, 0},
      {"over before its newline arrives", {eight, "x"}, false, 0},
      {"over across chunks", {"xxxx", "xxxx", "x\n"}, false, 0},
      {"short lines before a long one", {"a\nb\n" + eight + "xx"}, false, 2},
      {"many short lines", {"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"}, true, 10},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    WatchLineSplitter splitter(8);
    size_t lines = 0;
    Status s;
    for (const auto& chunk : c.chunks) {
      s = splitter.Feed(chunk.data(), chunk.size(), [&](const std::string&) { ++lines; });
      if (!s.ok()) break;
    }
    CHECK(s.ok() == c.ok);
    CHECK(lines == c.lines);
    if (!s.ok()) {
      CHECK_THAT(s.message(), Catch::Contains("longer than 8 bytes"));
      Status again = splitter.Feed("\n", 1, [&](const std::string&) { ++lines; });
      CHECK_FALSE(again.ok());
      CHECK(lines == c.lines);
    }
  }
}

TEST_CASE("ParseWatchEvent: events and rejections", "[k8s_json]") {
  const std::string added_line = R"({"type":"ADDED","object":)" + std::string(kFullClaim) + "}";
  Result<WatchEvent<Claim>> added = ParseWatchEvent<Claim>(added_line);
  REQUIRE(added.ok());
  CHECK(added->type == "ADDED");
  REQUIRE(added->object.ok());
  CHECK(added->object->meta.name == "data");

  const std::string gone_line =
      R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)"
      R"js("message":"too old resource version: 1 (5)","reason":"Expired","code":410}})js";
  Result<WatchEvent<Claim>> gone = ParseWatchEvent<Claim>(gone_line);
  REQUIRE(gone.ok());
  CHECK(gone->type == "ERROR");
  CHECK(gone->code == 410);
  CHECK(gone->message == "too old resource version: 1 (5) (Expired, 410)");

  Result<WatchEvent<Claim>> mark =
      ParseWatchEvent<Claim>(R"({"type":"BOOKMARK","object":{"kind":"PersistentVolumeClaim","metadata":{"resourceVersion":"77"}}})");
  REQUIRE(mark.ok());
  CHECK(mark->resource_version == "77");

  // An object that cannot be read is the event's, not the line's: the watch goes on.
  Result<WatchEvent<Claim>> odd = ParseWatchEvent<Claim>(R"({"type":"MODIFIED","object":{"spec":{"volumeName":5}}})");
  REQUIRE(odd.ok());
  REQUIRE_FALSE(odd->object.ok());
  CHECK_THAT(odd->object.status().message(), Catch::Contains("field spec.volumeName: expected a string"));

  struct Case {
    const char* name;
    const char* line;
    const char* error;
  };
  const Case kCases[] = {
      {"not JSON", "{\"type\":", "watch event: invalid JSON"},
      {"array", "[]", "expected a JSON object"},
      {"no type", R"({"object":{}})", "no type"},
      {"type number", R"({"type":1,"object":{}})", "field type: expected a string"},
      {"no object", R"({"type":"ADDED"})", "expected an object in field object"},
      {"object string", R"({"type":"ADDED","object":"x"})", "expected an object in field object"},
      {"object null", R"({"type":"DELETED","object":null})", "expected an object in field object"},
      {"bookmark version number", R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":1}}})",
       "field object.metadata.resourceVersion"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    Result<WatchEvent<Claim>> ev = ParseWatchEvent<Claim>(c.line);
    REQUIRE_FALSE(ev.ok());
    CHECK_THAT(ev.status().message(), Catch::Contains(c.error));
  }
}

TEST_CASE("ParseList: pages and rejections", "[k8s_json]") {
  std::vector<Result<Claim>> items;
  Result<ListPage> page = ParseList<Claim>(
      R"({"kind":"PersistentVolumeClaimList","apiVersion":"v1","metadata":{"resourceVersion":"99","continue":"tok"},)"
      R"("items":[)" + std::string(kFullClaim) + R"(,{"metadata":{"name":"second"}},{"kind":"Status"}]})",
      [&](Result<Claim> c) { items.push_back(std::move(c)); });
  REQUIRE(page.ok());
  CHECK(page->resource_version == "99");
  CHECK(page->continue_token == "tok");
  CHECK(page->items == 3);
  CHECK(page->remaining == -1);  // not given: unknown, not 0
  Result<ListPage> counted = ParseList<Claim>(R"({"metadata":{"continue":"t","remainingItemCount":0},"items":[]})",
                                              [](Result<Claim>) {});
  REQUIRE(counted.ok());
  CHECK(counted->remaining == 0);
  REQUIRE(items.size() == 3);
  REQUIRE(items[0].ok());
  CHECK(items[0]->meta.uid == "0b5e-11");
  REQUIRE(items[1].ok());
  CHECK(items[1]->meta.name == "second");
  CHECK_FALSE(items[2].ok());  // an unreadable item is handed over as its error

  struct Case {
    const char* name;
    const char* json;
    bool ok;
    size_t items;
    const char* error;
  };
  const Case kCases[] = {
      {"no items", R"({"metadata":{"resourceVersion":"1"}})", true, 0, ""},
      {"null items", R"({"items":null})", true, 0, ""},
      {"empty items", R"({"items":[]})", true, 0, ""},
      {"metadata after items", R"({"items":[{},{}],"metadata":{"resourceVersion":"7"}})", true, 2, ""},
      {"items object", R"({"items":{}})", false, 0, "list: field items: expected an array, got object"},
      {"items string", R"({"items":"x"})", false, 0, "list: field items: expected an array, got string"},
      {"resourceVersion number", R"({"metadata":{"resourceVersion":5}})", false, 0,
       "list: field metadata.resourceVersion: expected a string"},
      {"continue bool", R"({"metadata":{"continue":true}})", false, 0, "field metadata.continue"},
      {"metadata array", R"({"metadata":[]})", false, 0, "field metadata: expected an object"},
      {"array", "[]", false, 0, "list: expected a JSON object, got array"},
      {"number", "5", false, 0, "list: expected a JSON object, got number"},
      {"cut short", R"({"items":[{"a":1},)", false, 0, "list: invalid JSON"},
      {"trailing data", R"({"items":[]} x)", false, 0, "unexpected data after the value"},
  };
  for (const auto& c : kCases) {
    INFO(c.name);
    size_t seen = 0;
    Result<ListPage> p = ParseList<Claim>(c.json, [&](Result<Claim>) { ++seen; });
    CHECK(p.ok() == c.ok);
    if (p.ok()) CHECK(p->items == c.items);
    CHECK(seen == c.items);  // nothing is handed over from a page that is refused
    if (!p.ok()) CHECK_THAT(p.status().message(), Catch::Contains(c.error));
  }
}

TEST_CASE("ClaimFromJson: status capacity and the Resizing condition; a class's allowVolumeExpansion", "[k8s_json]") {
  Result<Claim> c = FromJson<Claim>(Json(R"({"metadata": {"name": "data"}, "status": {"phase": "Bound",
    "capacity": {"storage": "1Gi"}, "conditions": [{"type": "FileSystemResizePending", "status": "True"},
    {"type": "Resizing", "status": "True"}]}})"));
  REQUIRE(c.ok());
  CHECK(c->capacity == "1Gi");
  CHECK(c->resizing);
  Result<Claim> not_now = FromJson<Claim>(Json(R"({"metadata": {"name": "data"}, "status": {"capacity": {"storage": 1024},
    "conditions": [{"type": "Resizing", "status": "False"}]}})"));
  REQUIRE(not_now.ok());
  CHECK(not_now->capacity == "1024");
  CHECK_FALSE(not_now->resizing);
  Result<Claim> bad = FromJson<Claim>(Json(R"({"metadata": {"name": "data"}, "status": {"conditions": [{"type": 1}]}})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("status.conditions[].type") != std::string::npos);

  Result<StorageClass> sc = FromJson<StorageClass>(Json(R"({"metadata": {"name": "s"}, "provisioner": "p", "allowVolumeExpansion": true})"));
  REQUIRE(sc.ok());
  CHECK(sc->allow_volume_expansion);
  Result<StorageClass> text = FromJson<StorageClass>(Json(R"({"metadata": {"name": "s"}, "allowVolumeExpansion": "yes"})"));
  REQUIRE_FALSE(text.ok());
  CHECK(text.status().message().find("allowVolumeExpansion: expected a boolean") != std::string::npos);
}

TEST_CASE("the expansion patches: Resizing and the size allocated, with the resourceVersion, then the capacity with the conditions taken out", "[k8s_json]") {
  CHECK(ResizingPatchJson("7", "2026-11-25T20:00:00Z", "2Gi") ==
        R"({"metadata":{"resourceVersion":"7"},"status":{"allocatedResources":{"storage":"2Gi"},"conditions":[{"lastProbeTime":null,)"
        R"("lastTransitionTime":"2026-11-25T20:00:00Z","status":"True","type":"Resizing"}]}})");
  CHECK(ResizedPatchJson("8", "2Gi") ==
        R"({"metadata":{"resourceVersion":"8"},"status":{"capacity":{"storage":"2Gi"},"conditions":[)"
        R"({"$patch":"delete","type":"Resizing"},{"$patch":"delete","type":"FileSystemResizePending"}]}})");
  CHECK(CapacityPatchJson("u-1", "9", "2Gi") ==
        R"({"metadata":{"resourceVersion":"9","uid":"u-1"},"spec":{"capacity":{"storage":"2Gi"}}})");
  CHECK(SetAnnotationJson("9", "ab", "c") == R"({"metadata":{"annotations":{"ab":"c"},"resourceVersion":"9"}})");
}
