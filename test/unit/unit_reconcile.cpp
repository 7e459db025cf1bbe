// The pure decisions: claim + class + config -> action; volume + config -> action.
#include <catch2/catch.hpp>

#include "decide/reconcile.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

}  // namespace

TEST_CASE("a pending claim of our class is provisioned with the documented PV", "[reconcile]") {
  Config cfg = TestConfig();
  Claim claim = OurClaim();
  StorageClass sc = OurClass();
  sc.mount_options = {"noatime"};
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.dir_name == "default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(a.dir_mode == 0777);
  const Volume& v = a.volume;
  CHECK(v.meta.name == "pvc-1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(v.meta.annotations.at(ann::kProvisionedBy) == kDefaultProvisionerName);
  CHECK(v.meta.finalizers == std::vector<std::string>{ann::kProvisionerFinalizer});
  CHECK(v.capacity == "1Gi");
  CHECK(v.access_modes == claim.access_modes);
  CHECK(v.volume_mode == "Filesystem");
  CHECK(v.storage_class_name == "hostpath");
  CHECK(v.reclaim_policy == "Delete");
  CHECK(v.mount_options == std::vector<std::string>{"noatime"});
  CHECK(v.claim_ref.namespace_ == "default");
  CHECK(v.claim_ref.name == "data");
  CHECK(v.claim_ref.uid == claim.meta.uid);
  CHECK(v.host_path == "/var/kubernetes/default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(v.host_path_type == "Directory");
}

TEST_CASE("the beta provisioner annotation also makes a claim ours", "[reconcile]") {
  Claim claim = OurClaim();
  claim.meta.annotations.clear();
  claim.meta.annotations[ann::kBetaStorageProvisioner] = kDefaultProvisionerName;
  StorageClass sc = OurClass();
  CHECK(DecideClaim(TestConfig(), claim, &sc, nullptr).kind == Action::kProvision);
}

TEST_CASE("capacity is the request as the API server wrote it", "[reconcile]") {
  StorageClass sc = OurClass();
  for (const char* request : {"1Gi", "1536Mi", "500M", "100k", "2e9"}) {
    Claim claim = OurClaim();
    claim.storage_request = request;
    Action a = DecideClaim(TestConfig(), claim, &sc, nullptr);
    INFO(request);
    REQUIRE(a.kind == Action::kProvision);
    CHECK(a.volume.capacity == request);
  }
}

TEST_CASE("reclaim policy: the override, else the class, else Delete", "[reconcile]") {
  struct Row {
    const char* name;
    const char* configured;
    const char* in_class;
    const char* want;
  } rows[] = {
      {"default", "", "", "Delete"},
      {"class says Retain", "", "Retain", "Retain"},
      {"override wins", "Delete", "Retain", "Delete"},
      {"override Retain", "Retain", "", "Retain"},
  };
  for (const Row& r : rows) {
    Config cfg = TestConfig();
    cfg.reclaim_policy = r.configured;
    StorageClass sc = OurClass();
    sc.reclaim_policy = r.in_class;
    Action a = DecideClaim(cfg, OurClaim(), &sc, nullptr);
    INFO(r.name);
    REQUIRE(a.kind == Action::kProvision);
    CHECK(a.volume.reclaim_policy == r.want);
  }
}

TEST_CASE("claims that are not ours, or not pending, are left alone", "[reconcile]") {
  StorageClass sc = OurClass();
  Volume existing;
  existing.meta.name = "pvc-1b2c3d4e-0000-4000-8000-000000000001";
  existing.claim_ref.uid = "1b2c3d4e-0000-4000-8000-000000000001";
  struct Row {
    const char* name;
    void (*change)(Claim&);
    bool with_existing;
  } rows[] = {
      {"no annotation", [](Claim& c) { c.meta.annotations.clear(); }, false},
      {"another provisioner", [](Claim& c) { c.meta.annotations[ann::kStorageProvisioner] = "rancher.io/local-path"; }, false},
      {"already bound", [](Claim& c) { c.volume_name = "pv-1"; }, false},
      {"phase Bound", [](Claim& c) { c.phase = "Bound"; }, false},
      {"being deleted", [](Claim& c) { c.meta.deleting = true; }, false},
      {"PV already made", [](Claim&) {}, true},
  };
  for (const Row& r : rows) {
    Claim claim = OurClaim();
    r.change(claim);
    INFO(r.name);
    CHECK(DecideClaim(TestConfig(), claim, &sc, r.with_existing ? &existing : nullptr).kind == Action::kNothing);
    // The controller's filter agrees: none but the last (which depends on the volume) reaches a worker.
    CHECK(ClaimMayNeedVolume(TestConfig(), claim) == r.with_existing);
  }
}

TEST_CASE("a claim that may need a volume: ours, unbound, pending, whatever its class says", "[reconcile]") {
  Claim claim = OurClaim();
  CHECK(ClaimMayNeedVolume(TestConfig(), claim));
  claim.phase.clear();  // as a claim is before the PV controller's first status write
  CHECK(ClaimMayNeedVolume(TestConfig(), claim));
  // Failures are DecideClaim's to report, so such claims must reach a worker.
  claim.storage_request.clear();
  CHECK(ClaimMayNeedVolume(TestConfig(), claim));
  CHECK(DecideClaim(TestConfig(), claim, nullptr, nullptr).kind == Action::kFail);
}

TEST_CASE("a class of another provisioner is not ours even if the claim says so", "[reconcile]") {
  StorageClass sc = OurClass();
  sc.provisioner = "rancher.io/local-path";
  CHECK(DecideClaim(TestConfig(), OurClaim(), &sc, nullptr).kind == Action::kNothing);
}

TEST_CASE("claims we cannot serve fail with a reason that says why", "[reconcile]") {
  struct Row {
    const char* name;
    void (*claim)(Claim&);
    void (*sc)(StorageClass&);
    const char* says;
  } rows[] = {
      {"block mode", [](Claim& c) { c.volume_mode = "Block"; }, [](StorageClass&) {}, "volumeMode Block is not supported: hostPath volumes are directories; create the claim again with volumeMode Filesystem"},
      {"selector", [](Claim& c) { c.has_selector = true; }, [](StorageClass&) {}, "create the claim again without the selector, or create a PersistentVolume it selects"},
      {"data source", [](Claim& c) { c.has_data_source = true; }, [](StorageClass&) {}, "dataSource (cloning, snapshots) is not supported: create the claim again without it"},
      {"unknown parameter", [](Claim&) {}, [](StorageClass& s) { s.parameters["size"] = "1"; }, "unknown parameter \"size\""},
      {"bad uid", [](Claim&) {}, [](StorageClass& s) { s.parameters["uid"] = "-1"; }, "uid=\"-1\""},
      {"bad mode", [](Claim&) {}, [](StorageClass& s) { s.parameters["mode"] = "0999"; }, "mode=\"0999\""},
      {"setuid mode", [](Claim&) {}, [](StorageClass& s) { s.parameters["mode"] = "4777"; }, "set-user-ID bit"},
      {"no request", [](Claim& c) { c.storage_request = ""; }, [](StorageClass&) {}, "requests.storage is missing: create the claim again saying how much storage it needs"},
      {"bad quantity", [](Claim& c) { c.storage_request = "10Xi"; }, [](StorageClass&) {}, "quantity \"10Xi\" has an unknown suffix"},
      {"negative", [](Claim& c) { c.storage_request = "-1Gi"; }, [](StorageClass&) {}, "negative"},
      {"absurd", [](Claim& c) { c.storage_request = "1e30"; }, [](StorageClass&) {}, "\"1e30\" is too large"},
      {"bad namespace", [](Claim& c) { c.meta.namespace_ = "../etc"; }, [](StorageClass&) {}, "not a valid Kubernetes name"},
      {"bad uid path", [](Claim& c) { c.meta.uid = "../../x"; }, [](StorageClass&) {}, "not a valid Kubernetes name"},
      {"bad quota", [](Claim&) {}, [](StorageClass& s) { s.parameters["quota"] = "yes"; },
       "parameter quota=\"yes\" must be \"true\", \"auto\" or \"false\""},
  };
  for (const Row& r : rows) {
    Claim claim = OurClaim();
    StorageClass sc = OurClass();
    r.claim(claim);
    r.sc(sc);
    Action a = DecideClaim(TestConfig(), claim, &sc, nullptr);
    INFO(r.name);
    REQUIRE(a.kind == Action::kFail);
    CHECK(a.reason == reason::kProvisioningFailed);
    CHECK_THAT(a.message, Catch::Contains(r.says));
  }
  Action missing = DecideClaim(TestConfig(), OurClaim(), nullptr, nullptr);
  REQUIRE(missing.kind == Action::kFail);
  CHECK(missing.message ==
        "StorageClass \"hostpath\" not found: create it (the claim waits for it), or create the claim again with an existing class");
}

TEST_CASE("quota: the class parameter, else QUOTA, says whether the size is enforced", "[reconcile][quota]") {
  Claim claim = OurClaim();
  StorageClass sc = OurClass();
  CHECK(DecideClaim(TestConfig(), claim, &sc, nullptr).quota == "false");
  Config cfg = TestConfig();
  cfg.quota = "auto";
  CHECK(DecideClaim(cfg, claim, &sc, nullptr).quota == "auto");
  sc.parameters["quota"] = "true";
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.quota == "true");
  CHECK(a.request_bytes == 1073741824);
}

TEST_CASE("class parameters set owner and mode", "[reconcile]") {
  StorageClass sc = OurClass();
  sc.parameters = {{"uid", "1000"}, {"gid", "2000"}, {"mode", "0770"}};
  Action a = DecideClaim(TestConfig(), OurClaim(), &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.uid == 1000);
  CHECK(a.gid == 2000);
  CHECK(a.dir_mode == 0770);
}

TEST_CASE("directory names are recomputable and safe", "[reconcile]") {
  CHECK(VolumeDirName("default", "data", "pvc-1") == "default-data-pvc-1");
  CHECK(VolumeDirName("", "data", "pvc-1").empty());
  CHECK(VolumeDirName("default", "..", "pvc-1").empty());
  CHECK(VolumeDirName("default", "a/b", "pvc-1").empty());
  CHECK(VolumeDirName("default", "Data", "pvc-1").empty());
  std::string long_claim(253, 'a');
  std::string name = VolumeDirName("ns", long_claim, "pvc-1b2c3d4e-0000-4000-8000-000000000001");
  CHECK(name.size() == 255);
  CHECK(name.rfind("ns-aaa", 0) == 0);
  CHECK(name.substr(name.size() - 41) == "-pvc-1b2c3d4e-0000-4000-8000-000000000001");
}

namespace {

Volume Released() {
  StorageClass sc = OurClass();
  Action a = DecideClaim(TestConfig(), OurClaim(), &sc, nullptr);
  Volume v = a.volume;
  v.meta.uid = "pv-uid";
  v.phase = "Released";
  return v;
}

}  // namespace

TEST_CASE("a released Delete volume of ours is deleted at the recomputed path", "[reconcile]") {
  Action a = DecideVolume(TestConfig(), Released());
  REQUIRE(a.kind == Action::kDelete);
  CHECK(a.dir_name == "default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001");
}

TEST_CASE("volumes are never deleted unless ours, released and Delete", "[reconcile]") {
  struct Row {
    const char* name;
    void (*change)(Volume&);
  } rows[] = {
      {"bound", [](Volume& v) { v.phase = "Bound"; }},
      {"available", [](Volume& v) { v.phase = "Available"; }},
      {"retain", [](Volume& v) { v.reclaim_policy = "Retain"; }},
      {"not ours", [](Volume& v) { v.meta.annotations[ann::kProvisionedBy] = "someone-else"; }},
      {"no annotation", [](Volume& v) { v.meta.annotations.clear(); }},
      {"deleting, still bound", [](Volume& v) { v.meta.deleting = true; v.phase = "Bound"; }},
  };
  for (const Row& r : rows) {
    Volume v = Released();
    r.change(v);
    INFO(r.name);
    CHECK(DecideVolume(TestConfig(), v).kind == Action::kNothing);
  }
}

TEST_CASE("a PV of ours pointing anywhere else is refused, never deleted", "[reconcile]") {
  const char* paths[] = {"/",
                         "/etc",
                         "/var/kubernetes",
                         "/var/kubernetes/",
                         "/var/kubernetes/../etc",
                         "/var/kubernetes/default-other-pvc-1b2c3d4e-0000-4000-8000-000000000001",
                         "/var/kubernetes/default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001/..",
                         "var/kubernetes/default-data-pvc-1b2c3d4e-0000-4000-8000-000000000001",
                         ""};
  for (const char* p : paths) {
    Volume v = Released();
    v.host_path = p;
    Action a = DecideVolume(TestConfig(), v);
    INFO(p);
    REQUIRE(a.kind == Action::kFail);
    CHECK(a.reason == reason::kVolumeFailedDelete);
    CHECK_THAT(a.message, Catch::Contains("refusing"));
  }
  Volume no_ref = Released();
  no_ref.has_claim_ref = false;
  no_ref.claim_ref = {};
  CHECK(DecideVolume(TestConfig(), no_ref).kind == Action::kFail);
}

TEST_CASE("a PV not named pvc-<claim uid> is never deleted, even where its path recomputes", "[reconcile]") {
  // A PV named "<uid>" for claim "data-pvc" recomputes to the directory of claim "data" (whose
  // PV is "pvc-<uid>"): deleting it would wipe data's live volume.
  const std::string uid = "1b2c3d4e-0000-4000-8000-000000000001";
  struct Row {
    const char* name;
    std::string pv_name, claim_name, claim_uid;
  } rows[] = {
      {"name is the bare uid", uid, "data-pvc", uid},
      {"name of another uid", "pvc-1b2c3d4e-0000-4000-8000-000000000002", "data", uid},
      {"uid not a UUID", "pvc-x-pvc-" + uid, "data", "x-pvc-" + uid},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    Volume v = Released();
    v.meta.name = r.pv_name;
    v.claim_ref.name = r.claim_name;
    v.claim_ref.uid = r.claim_uid;
    v.host_path = "/var/kubernetes/" + VolumeDirName("default", r.claim_name, r.pv_name);
    Action a = DecideVolume(TestConfig(), v);
    REQUIRE(a.kind == Action::kFail);
    CHECK_THAT(a.message, Catch::Contains("is not \"pvc-\" and the uid of its claim") && Catch::Contains("refusing"));
  }
  CHECK(DecideVolume(TestConfig(), Released()).kind == Action::kDelete);
}

TEST_CASE("a PV deleted by hand: Delete volumes are cleaned, Retain only released", "[reconcile]") {
  Volume v = Released();
  v.meta.deleting = true;
  CHECK(DecideVolume(TestConfig(), v).kind == Action::kDelete);
  v.reclaim_policy = "Retain";
  CHECK(DecideVolume(TestConfig(), v).kind == Action::kDropFinalizer);
  v.meta.finalizers.clear();
  CHECK(DecideVolume(TestConfig(), v).kind == Action::kNothing);
}

TEST_CASE("slimming an object for the cache never changes a decision", "[reconcile]") {
  StorageClass sc = OurClass();
  std::vector<Claim> claims;
  claims.push_back(OurClaim());
  Claim bound = OurClaim();
  bound.volume_name = "pvc-x";
  bound.phase = "Bound";
  claims.push_back(bound);
  Claim foreign = OurClaim();
  foreign.meta.annotations[ann::kStorageProvisioner] = "other";
  foreign.meta.labels["app"] = "x";
  claims.push_back(foreign);
  for (Claim c : claims) {
    Action before = DecideClaim(TestConfig(), c, &sc, nullptr);
    SlimForCache(&c);
    Action after = DecideClaim(TestConfig(), c, &sc, nullptr);
    CHECK(before.kind == after.kind);
    CHECK(before.volume.host_path == after.volume.host_path);
  }
  std::vector<Volume> volumes = {Released()};
  Volume deleting = Released();
  deleting.meta.deleting = true;
  volumes.push_back(deleting);
  Volume foreign_pv = Released();
  foreign_pv.meta.annotations.clear();
  volumes.push_back(foreign_pv);
  for (Volume v : volumes) {
    Action before = DecideVolume(TestConfig(), v);
    SlimForCache(&v);
    Action after = DecideVolume(TestConfig(), v);
    CHECK(before.kind == after.kind);
    CHECK(before.dir_name == after.dir_name);
  }
}

TEST_CASE("a PV of the claim's volume name made for another claim is reported, not waited for", "[reconcile]") {
  StorageClass sc = OurClass();
  Volume other;
  other.meta.name = "pvc-1b2c3d4e-0000-4000-8000-000000000001";
  other.claim_ref.uid = "0c0c0c0c-0000-4000-8000-000000000000";
  other.host_path = "/elsewhere";
  Action a = DecideClaim(TestConfig(), OurClaim(), &sc, &other);
  REQUIRE(a.kind == Action::kFail);
  CHECK(a.reason == reason::kProvisioningFailed);
  CHECK_THAT(a.message, Catch::Contains("already exists and is not the one") && Catch::Contains("/elsewhere"));
  // Slimmed for the cache, it says the same.
  SlimForCache(&other);
  CHECK(DecideClaim(TestConfig(), OurClaim(), &sc, &other).kind == Action::kFail);
}

TEST_CASE("a PV found after AlreadyExists is ours only if it is the one we would have made", "[reconcile]") {
  StorageClass sc = OurClass();
  const Volume built = DecideClaim(TestConfig(), OurClaim(), &sc, nullptr).volume;
  CHECK(IsVolumeWeMade(built, built));
  struct Row {
    const char* name;
    void (*change)(Volume&);
  } rows[] = {
      {"another claim", [](Volume& v) { v.claim_ref.uid = "1b2c3d4e-0000-4000-8000-000000000009"; }},
      {"another path", [](Volume& v) { v.host_path = "/elsewhere"; }},
      {"no annotation", [](Volume& v) { v.meta.annotations.clear(); }},
      {"another provisioner", [](Volume& v) { v.meta.annotations[ann::kProvisionedBy] = "other"; }},
  };
  for (const Row& r : rows) {
    INFO(r.name);
    Volume v = built;
    r.change(v);
    CHECK_FALSE(IsVolumeWeMade(v, built));
  }
}

// --- node-aware mode (NODE_NAME), volume types and per-class roots ---

namespace {

Config NodeConfig(const std::string& node) {
  Config c = TestConfig();
  c.node_name = node;
  return c;
}

Volume ReleasedVolumeOf(const Action& provisioned) {
  Volume v = provisioned.volume;
  v.phase = "Released";
  return v;
}

}  // namespace

TEST_CASE("node-aware: an instance provisions only claims for its own node", "[reconcile][node]") {
  StorageClass sc = OurClass();
  for (const char* key : {ann::kSelectedNode, ann::kNode, ann::kKubevirtNode}) {
    INFO(key);
    Claim claim = OurClaim();
    claim.meta.annotations[key] = "node-a";
    Action a = DecideClaim(NodeConfig("node-a"), claim, &sc, nullptr);
    REQUIRE(a.kind == Action::kProvision);
    const Volume& v = a.volume;
    CHECK(v.node == "node-a");
    CHECK(v.meta.annotations.at(ann::kNode) == "node-a");
    CHECK(v.meta.annotations.at(ann::kPvDir) == "/var/kubernetes");
    CHECK_FALSE(v.local);
    CHECK(DecideClaim(NodeConfig("node-b"), claim, &sc, nullptr).kind == Action::kNothing);
  }
  // The scheduler's choice wins over an annotation of ours.
  Claim both = OurClaim();
  both.meta.annotations[ann::kSelectedNode] = "node-b";
  both.meta.annotations[ann::kNode] = "node-a";
  CHECK(DecideClaim(NodeConfig("node-a"), both, &sc, nullptr).kind == Action::kNothing);
  CHECK(DecideClaim(NodeConfig("node-b"), both, &sc, nullptr).kind == Action::kProvision);
  // Another node's claims are not even handed to a worker; one naming no node is (its warning).
  CHECK_FALSE(ClaimMayNeedVolume(NodeConfig("node-a"), both));
  CHECK(ClaimMayNeedVolume(NodeConfig("node-b"), both));
  CHECK(ClaimMayNeedVolume(NodeConfig("node-a"), OurClaim()));
  CHECK(ClaimMayNeedVolume(TestConfig(), both));
}

TEST_CASE("node-aware: a claim naming no node gets one shared warning, not retried", "[reconcile][node]") {
  StorageClass sc = OurClass();
  Claim claim = OurClaim();
  Action a = DecideClaim(NodeConfig("node-a"), claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kFail);
  CHECK(a.once);
  CHECK_FALSE(a.retry);
  CHECK_THAT(a.message, Catch::Contains(ann::kNode) && Catch::Contains("WaitForFirstConsumer"));
  // Every instance says exactly the same, so that they make one event between them.
  CHECK(DecideClaim(NodeConfig("node-b"), claim, &sc, nullptr).message == a.message);
  // Of a WaitForFirstConsumer class it waits for the scheduler, also once an instance handed it
  // back: nothing to say.
  StorageClass wffc = OurClass();
  wffc.volume_binding_mode = "WaitForFirstConsumer";
  CHECK(DecideClaim(NodeConfig("node-a"), claim, &wffc, nullptr).kind == Action::kNothing);
  // A claim for another node is left alone even when its class is missing: no event storm.
  claim.meta.annotations[ann::kSelectedNode] = "node-b";
  CHECK(DecideClaim(NodeConfig("node-a"), claim, nullptr, nullptr).kind == Action::kNothing);
}

TEST_CASE("single-node mode ignores node annotations for hostPath volumes", "[reconcile][node]") {
  StorageClass sc = OurClass();
  Claim claim = OurClaim();
  claim.meta.annotations[ann::kSelectedNode] = "node-b";
  Action a = DecideClaim(TestConfig(), claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.volume.node.empty());
  CHECK(a.volume.meta.annotations.count(ann::kNode) == 0);
}

TEST_CASE("volumeType local: a local PV pinned to the claim's node", "[reconcile][node]") {
  StorageClass sc = OurClass();
  sc.parameters["volumeType"] = "local";
  Claim claim = OurClaim();
  Action none = DecideClaim(TestConfig(), claim, &sc, nullptr);
  REQUIRE(none.kind == Action::kFail);
  CHECK_THAT(none.message, Catch::Contains("local volumes, which must name their node: add the annotation " +
                                            std::string(ann::kNode) + "=<node name> to the claim, or create it again "
                                            "with a class whose volumeBindingMode is WaitForFirstConsumer"));
  claim.meta.annotations[ann::kSelectedNode] = "node-a";
  Action a = DecideClaim(TestConfig(), claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.volume.local);
  CHECK(a.volume.node == "node-a");
  CHECK(a.volume.host_path_type.empty());
  CHECK(a.volume.meta.annotations.count(ann::kNode) == 0);  // made by the single instance
  sc.parameters["volumeType"] = "nfs";
  Action bad = DecideClaim(TestConfig(), claim, &sc, nullptr);
  REQUIRE(bad.kind == Action::kFail);
  CHECK_THAT(bad.message, Catch::Contains("volumeType=\"nfs\" must be hostPath or local"));
}

TEST_CASE("pvDir: a class's root must be PV_DIR or one of ALLOWED_PV_DIRS", "[reconcile][roots]") {
  Config cfg = TestConfig();
  cfg.allowed_pv_dirs = {"/mnt/ssd", "/mnt/hdd"};
  StorageClass sc = OurClass();
  Claim claim = OurClaim();
  sc.parameters["pvDir"] = "/mnt/ssd/";
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.root == "/mnt/ssd");
  CHECK(a.volume.host_path == "/mnt/ssd/" + a.dir_name);
  CHECK(a.volume.meta.annotations.at(ann::kPvDir) == "/mnt/ssd");
  struct Row {
    const char* value;
    const char* says;
  } refused[] = {{"mnt/ssd", "not an absolute path"},
                 {"/mnt/ssd/../../etc", "not an absolute path"},
                 {"/mnt", "not a directory this provisioner may use"},
                 {"/mnt/ssd/sub", "not a directory this provisioner may use"},
                 {"/etc", "not a directory this provisioner may use"}};
  for (const Row& r : refused) {
    INFO(r.value);
    sc.parameters["pvDir"] = r.value;
    Action f = DecideClaim(cfg, claim, &sc, nullptr);
    REQUIRE(f.kind == Action::kFail);
    CHECK_THAT(f.message, Catch::Contains(r.says));
    CHECK_FALSE(f.reschedule);  // single-node mode: there is no other node to try
    f = DecideClaim(NodeConfig("node-a"), [&] { Claim c = claim; c.meta.annotations[ann::kSelectedNode] = "node-a"; return c; }(), &sc, nullptr);
    CHECK(f.reschedule);
  }
}

TEST_CASE("deletion: only the instance of the node a PV was made on, under a configured root", "[reconcile][node]") {
  StorageClass sc = OurClass();
  Claim claim = OurClaim();
  claim.meta.annotations[ann::kSelectedNode] = "node-a";
  Volume made_on_a = ReleasedVolumeOf(DecideClaim(NodeConfig("node-a"), claim, &sc, nullptr));
  Action del = DecideVolume(NodeConfig("node-a"), made_on_a);
  REQUIRE(del.kind == Action::kDelete);
  CHECK(del.root == "/var/kubernetes");
  CHECK(DecideVolume(NodeConfig("node-b"), made_on_a).kind == Action::kNothing);
  CHECK(DecideVolume(TestConfig(), made_on_a).kind == Action::kNothing);
  Volume single = ReleasedVolumeOf(DecideClaim(TestConfig(), OurClaim(), &sc, nullptr));
  CHECK(DecideVolume(TestConfig(), single).kind == Action::kDelete);
  CHECK(DecideVolume(NodeConfig("node-a"), single).kind == Action::kNothing);
  // A PV made before pv-dir was recorded belongs to PV_DIR.
  single.meta.annotations.erase(ann::kPvDir);
  CHECK(DecideVolume(TestConfig(), single).kind == Action::kDelete);

  // Under another root: only while that root is configured, and only at the recomputed path.
  Config cfg = TestConfig();
  cfg.allowed_pv_dirs = {"/mnt/ssd"};
  sc.parameters["pvDir"] = "/mnt/ssd";
  Volume on_ssd = ReleasedVolumeOf(DecideClaim(cfg, OurClaim(), &sc, nullptr));
  Action ssd = DecideVolume(cfg, on_ssd);
  REQUIRE(ssd.kind == Action::kDelete);
  CHECK(ssd.root == "/mnt/ssd");
  Action unconfigured = DecideVolume(TestConfig(), on_ssd);
  REQUIRE(unconfigured.kind == Action::kFail);
  CHECK_THAT(unconfigured.message, Catch::Contains("not PV_DIR or one of ALLOWED_PV_DIRS"));
  // A PV whose recorded root was edited to another configured root: the path no longer matches.
  cfg.allowed_pv_dirs.push_back("/mnt/hdd");
  on_ssd.meta.annotations[ann::kPvDir] = "/mnt/hdd";
  CHECK(DecideVolume(cfg, on_ssd).kind == Action::kFail);
  on_ssd.meta.annotations[ann::kPvDir] = "/";
  CHECK(DecideVolume(cfg, on_ssd).kind == Action::kFail);
}

TEST_CASE("local volumes are deleted like hostPath ones", "[reconcile][node]") {
  StorageClass sc = OurClass();
  sc.parameters["volumeType"] = "local";
  Claim claim = OurClaim();
  claim.meta.annotations[ann::kSelectedNode] = "node-a";
  Volume v = ReleasedVolumeOf(DecideClaim(NodeConfig("node-a"), claim, &sc, nullptr));
  REQUIRE(v.local);
  CHECK(DecideVolume(NodeConfig("node-a"), v).kind == Action::kDelete);
}

TEST_CASE("nodes: all: one PV without affinity; each node joins, any holder deletes it, each leaves", "[reconcile][every]") {
  StorageClass sc = OurClass();
  sc.parameters["nodes"] = "all";
  sc.parameters["mode"] = "0750";
  Claim claim = OurClaim();  // Immediate, naming no node: no warning, any instance makes it
  Action made = DecideClaim(NodeConfig("node-b"), claim, &sc, nullptr);
  REQUIRE(made.kind == Action::kProvision);
  Volume v = made.volume;
  CHECK(v.node.empty());
  CHECK(v.meta.annotations.at(ann::kAllNodes) == "all");
  CHECK(v.meta.annotations.count(ann::kNode) == 0);
  CHECK(v.meta.finalizers == std::vector<std::string>{"node-b/hostpath-provisioner.io"});
  v.phase = "Bound";

  Action join = DecideVolume(NodeConfig("node-a"), v, &sc);
  REQUIRE(join.kind == Action::kJoin);
  CHECK(join.dir_name == made.dir_name);
  CHECK(join.dir_mode == 0750);
  CHECK(DecideVolume(NodeConfig("node-b"), v, &sc).kind == Action::kNothing);  // its directory is there
  CHECK(DecideVolume(TestConfig(), v, &sc).kind == Action::kNothing);
  // The slimmed cache keeps what a late node needs to join.
  Volume slim = v;
  SlimForCache(&slim);
  CHECK(DecideVolume(NodeConfig("node-c"), slim, &sc).kind == Action::kJoin);

  v.meta.finalizers = {"kubernetes.io/pv-protection", "node-b/hostpath-provisioner.io", "node-a/hostpath-provisioner.io"};
  v.phase = "Released";
  // Any holder deletes it; another node drops gone holders' finalizers, anyone deletes it
  // once none holds it.
  CHECK(DecideVolume(NodeConfig("node-a"), v, &sc).kind == Action::kDeleteObject);
  CHECK(DecideVolume(NodeConfig("node-b"), v, &sc).kind == Action::kDeleteObject);
  CHECK(DecideVolume(NodeConfig("node-c"), v, &sc).kind == Action::kPruneGone);
  Volume unheld = v;
  unheld.meta.finalizers = {"kubernetes.io/pv-protection"};
  CHECK(DecideVolume(NodeConfig("node-c"), unheld, &sc).kind == Action::kDeleteObject);
  v.meta.deleting = true;
  Action leave = DecideVolume(NodeConfig("node-b"), v, &sc);
  REQUIRE(leave.kind == Action::kLeave);
  CHECK(leave.remove_dir);
  CHECK(leave.dir_name == made.dir_name);
  CHECK(DecideVolume(NodeConfig("node-c"), v, &sc).kind == Action::kPruneGone);
  v.reclaim_policy = "Retain";
  Action keep = DecideVolume(NodeConfig("node-b"), v, &sc);
  REQUIRE(keep.kind == Action::kLeave);
  CHECK_FALSE(keep.remove_dir);
  v.meta.deleting = false;
  CHECK(DecideVolume(NodeConfig("node-a"), v, &sc).kind == Action::kNothing);  // Retain: not deleted
}

TEST_CASE("nodes: all is refused where it cannot work", "[reconcile][every]") {
  StorageClass sc = OurClass();
  Claim claim = OurClaim();
  struct Row {
    std::map<std::string, std::string> params;
    Config cfg;
    const char* says;
  } rows[] = {
      {{{"nodes", "all"}}, TestConfig(), "needs the provisioner on every node"},
      {{{"nodes", "all"}, {"volumeType", "local"}}, NodeConfig("node-a"), "do not go together"},
      {{{"nodes", "some"}}, NodeConfig("node-a"), "must be \"one\" or \"all\""},
      {{{"nodes", "all"}, {"quota", "auto"}}, NodeConfig("node-a"), "quota=\"auto\" is not available with nodes=all"},
  };
  claim.meta.annotations[ann::kSelectedNode] = "node-a";
  for (const Row& r : rows) {
    INFO(r.says);
    sc.parameters = r.params;
    Action a = DecideClaim(r.cfg, claim, &sc, nullptr);
    REQUIRE(a.kind == Action::kFail);
    CHECK_THAT(a.message, Catch::Contains(r.says));
  }
}

TEST_CASE("node-aware, requireMount: a shared volume any instance makes, without affinity, taken over from a gone node", "[reconcile][shared]") {
  StorageClass sc = OurClass();
  sc.parameters["requireMount"] = "true";
  Claim claim = OurClaim();  // names no node
  Action made = DecideClaim(NodeConfig("node-b"), claim, &sc, nullptr);
  REQUIRE(made.kind == Action::kProvision);
  Volume v = made.volume;
  CHECK(v.node.empty());  // no node affinity
  CHECK(IsShared(v));
  CHECK_FALSE(OnAllNodes(v));
  CHECK(v.meta.annotations.at(ann::kNode) == "node-b");  // removes it
  CHECK(v.meta.finalizers == std::vector<std::string>{ann::kProvisionerFinalizer});
  // A claim naming a node is shared too, and seen by every instance.
  Claim named = OurClaim();
  named.meta.annotations[ann::kSelectedNode] = "node-a";
  CHECK(DecideClaim(NodeConfig("node-b"), named, &sc, nullptr).kind == Action::kProvision);
  CHECK(ClaimMayNeedVolume(NodeConfig("node-b"), named, &sc));
  CHECK_FALSE(ClaimMayNeedVolume(NodeConfig("node-b"), named));
  // Not shared: single-node mode, nodes: all, a local volume, no requireMount.
  CHECK_FALSE(ClassIsShared(TestConfig(), &sc));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"nodes", "all"}, {"volumeType", "local"}, {"requireMount", "false"}}) {
    StorageClass other = sc;
    other.parameters[key] = value;
    INFO(key);
    CHECK_FALSE(ClassIsShared(NodeConfig("node-a"), &other));
  }

  // Released: node-b removes it; another node takes it over first if node-b is gone.
  v.phase = "Released";
  CHECK(DecideVolume(NodeConfig("node-b"), v, &sc).kind == Action::kDelete);
  Action adopt = DecideVolume(NodeConfig("node-a"), v, &sc);
  REQUIRE(adopt.kind == Action::kAdopt);
  CHECK(adopt.holder == "node-b");
  v.meta.deleting = true;
  CHECK(DecideVolume(NodeConfig("node-a"), v, &sc).kind == Action::kAdopt);
  v.meta.deleting = false;
  v.reclaim_policy = "Retain";
  CHECK(DecideVolume(NodeConfig("node-a"), v, &sc).kind == Action::kNothing);
  v.phase = "Bound";
  v.reclaim_policy = "Delete";
  CHECK(DecideVolume(NodeConfig("node-a"), v, &sc).kind == Action::kNothing);
}
