// The clone decision (clone.hpp): which claims are cloned, from what, where, and each refusal
// with its words and whether waiting can help.
#include <catch2/catch.hpp>

#include "decide/clone.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

constexpr const char* kSourceUid = "5a5a5a5a-0000-4000-8000-000000000001";
constexpr const char* kCloneUid = "c1c1c1c1-0000-4000-8000-000000000002";

Claim CloneClaim(const std::string& size = "1Gi") {
  Claim c;
  c.meta.name = "copy";
  c.meta.namespace_ = "apps";
  c.meta.uid = kCloneUid;
  c.meta.annotations[ann::kStorageProvisioner] = kDefaultProvisionerName;
  c.has_storage_class_name = true;
  c.storage_class_name = "hostpath";
  c.access_modes = {"ReadWriteOnce"};
  c.storage_request = size;
  c.phase = "Pending";
  c.has_data_source = true;
  c.data_source = {"", "PersistentVolumeClaim", "db"};
  return c;
}

// The source claim and its volume, as the caches hold them (bound, ours, 1Gi).
struct Source {
  Claim claim;
  Volume volume;
  Source(const std::string& node = "") {
    claim.meta.name = "db";
    claim.meta.namespace_ = "apps";
    claim.meta.uid = kSourceUid;
    claim.volume_name = std::string("pvc-") + kSourceUid;
    claim.phase = "Bound";
    volume.meta.name = claim.volume_name;
    volume.meta.annotations[ann::kProvisionedBy] = kDefaultProvisionerName;
    volume.meta.annotations[ann::kPvDir] = "/var/kubernetes";
    if (!node.empty()) volume.meta.annotations[ann::kNode] = node;
    volume.has_claim_ref = true;
    volume.claim_ref = {"apps", "db", kSourceUid};
    volume.host_path = "/var/kubernetes/apps-db-pvc-" + std::string(kSourceUid);
    volume.capacity_bytes = 1 << 30;
    volume.phase = "Bound";
  }
  CloneSource Ref() const { return {&claim, &volume}; }
};

}  // namespace

TEST_CASE("a clone of a bound claim of ours copies its recomputed directory into a volume of its own", "[clone]") {
  Source src;
  Claim claim = CloneClaim();
  StorageClass sc = OurClass();
  Action a = DecideClone(TestConfig(), claim, &sc, nullptr, src.Ref());
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.source.claim == "apps/db");
  CHECK(a.source.volume == src.volume.meta.name);
  CHECK(a.source.root == "/var/kubernetes");
  CHECK(a.source.dir_name == "apps-db-pvc-" + std::string(kSourceUid));
  CHECK(a.dir_name == "apps-copy-pvc-" + std::string(kCloneUid));
  CHECK(a.volume.meta.annotations.at(ann::kClonedFrom) == "apps/db");
  CHECK(a.volume.capacity == "1Gi");
  // A claim without a data source is decided as before.
  claim.has_data_source = false;
  Action plain = DecideClone(TestConfig(), claim, &sc, nullptr, {});
  REQUIRE(plain.kind == Action::kProvision);
  CHECK(plain.source.volume.empty());
  CHECK(plain.volume.meta.annotations.count(ann::kClonedFrom) == 0);
}

TEST_CASE("the temporary name of a clone is recognised, and nothing else is", "[clone]") {
  const std::string pv = std::string("pvc-") + kCloneUid;
  CHECK(CloneTempName(pv) == ".clone-" + pv);
  CHECK(CloneTempFor(CloneTempName(pv)) == pv);
  CHECK(CloneTempFor("apps-copy-" + pv).empty());
  CHECK(CloneTempFor(".clone-pvc-x").empty());
}

TEST_CASE("clone refusals: what the user reads, and whether waiting can help", "[clone]") {
  StorageClass sc = OurClass();
  struct Case {
    const char* name;
    void (*change)(Claim& clone, Source& src, CloneSource& ref);
    const char* message;
    bool retry;
    bool normal = false;  // a Normal WaitForCloneSource (the source is on its way), not a Warning
  };
  const Case cases[] = {
      {"source missing", [](Claim&, Source&, CloneSource& r) { r = {}; },
       "the claim to clone, apps/db, does not exist: this claim waits for it", true},
      {"source being deleted", [](Claim&, Source& s, CloneSource&) { s.claim.meta.deleting = true; },
       "the claim to clone, apps/db, is being deleted: create this claim again with another dataSource", false},
      {"source pending", [](Claim&, Source& s, CloneSource&) { s.claim.phase = "Pending", s.claim.volume_name.clear(); },
       "the claim to clone, apps/db, is not Bound yet (phase Pending): this claim waits for it", true, true},
      {"source binding (volumeName set, phase not yet Bound)", [](Claim&, Source& s, CloneSource&) { s.claim.phase = "Pending"; },
       "the claim to clone, apps/db, is not Bound yet (phase Pending): this claim waits for it", true, true},
      {"source volume not cached", [](Claim&, Source&, CloneSource& r) { r.volume = nullptr; },
       "names volume pvc-5a5a5a5a-0000-4000-8000-000000000001, which is not found: this claim waits for it", true, true},
      {"source not ours", [](Claim&, Source& s, CloneSource&) { s.volume.meta.annotations[ann::kProvisionedBy] = "rancher.io/local-path"; },
       "which was made by rancher.io/local-path: hostpath-provisioner.io/hostpath clones only volumes it made", false},
      {"source made by nobody", [](Claim&, Source& s, CloneSource&) { s.volume.meta.annotations.erase(ann::kProvisionedBy); },
       "which no provisioner made", false},
      {"source volume of another claim", [](Claim&, Source& s, CloneSource&) { s.volume.claim_ref.uid = kCloneUid; },
       "which belongs to another claim; refusing to copy it", false},
      {"source on every node", [](Claim&, Source& s, CloneSource&) { s.volume.meta.annotations[ann::kAllNodes] = "all"; },
       "has a volume on every node (class parameter nodes: all)", false},
      {"source under a root not served", [](Claim&, Source& s, CloneSource&) {
         s.volume.meta.annotations[ann::kPvDir] = "/mnt/other";
         s.volume.host_path = "/mnt/other/apps-db-pvc-" + std::string(kSourceUid);
       },
       "is under /mnt/other, which this instance does not serve (PV_DIR, ALLOWED_PV_DIRS)", false},
      {"source path edited", [](Claim&, Source& s, CloneSource&) { s.volume.host_path = "/etc"; },
       "is not where this provisioner put it (/etc); refusing to read it", false},
      {"smaller than the source", [](Claim& c, Source&, CloneSource&) { c.storage_request = "512Mi"; },
       "this claim asks for 512Mi, less than the capacity of the claim it clones, apps/db (1.0 GiB): a clone is at least "
       "as large as its source",
       false},
      {"a snapshot", [](Claim& c, Source&, CloneSource&) { c.data_source = {"snapshot.storage.k8s.io", "VolumeSnapshot", "s1"}; },
       "spec.dataSource names VolumeSnapshot.snapshot.storage.k8s.io \"s1\": this provisioner clones only claims", false},
      {"a claim kind in another group", [](Claim& c, Source&, CloneSource&) { c.data_source.api_group = "example.com"; },
       "spec.dataSource names PersistentVolumeClaim.example.com \"db\"", false},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Source src;
    Claim clone = CloneClaim();
    CloneSource ref = src.Ref();
    c.change(clone, src, ref);
    Action a = DecideClone(TestConfig(), clone, &sc, nullptr, ref);
    REQUIRE(a.kind == Action::kFail);
    CHECK(a.reason == (c.normal ? reason::kWaitForCloneSource : reason::kProvisioningFailed));
    CHECK(a.normal == c.normal);
    CHECK_THAT(a.message, Catch::Contains(c.message));
    CHECK(a.retry == c.retry);
    CHECK_FALSE(a.reschedule);
  }
}

TEST_CASE("the clone's own problems are still found: its class, its size", "[clone]") {
  Source src;
  Claim claim = CloneClaim();
  claim.storage_class_name = "missing";
  Action a = DecideClone(TestConfig(), claim, nullptr, nullptr, src.Ref());
  REQUIRE(a.kind == Action::kFail);
  CHECK_THAT(a.message, Catch::Contains("StorageClass \"missing\" not found"));
  StorageClass every = OurClass();
  every.parameters["nodes"] = "all";
  Action all = DecideClone(TestConfig("n1"), CloneClaim(), &every, nullptr, Source("n1").Ref());
  REQUIRE(all.kind == Action::kFail);
  CHECK_THAT(all.message, Catch::Contains("puts a directory on every node (nodes: all): a clone cannot be made there"));
}

TEST_CASE("node-aware: the source's node makes the clone; a pod scheduled elsewhere is sent back", "[clone]") {
  Source src("n1");
  StorageClass immediate = OurClass("Immediate");
  StorageClass wait = OurClass("WaitForFirstConsumer");
  // Immediate, no node named: the source's node makes it, pinned there; another node does nothing.
  Action here = DecideClone(TestConfig("n1"), CloneClaim(), &immediate, nullptr, src.Ref());
  REQUIRE(here.kind == Action::kProvision);
  CHECK(here.volume.node == "n1");
  CHECK(here.volume.meta.annotations.at(ann::kNode) == "n1");
  CHECK(DecideClone(TestConfig("n2"), CloneClaim(), &immediate, nullptr, src.Ref()).kind == Action::kNothing);
  // WaitForFirstConsumer: nothing until the scheduler picks; then only the picked node acts.
  CHECK(DecideClone(TestConfig("n1"), CloneClaim(), &wait, nullptr, src.Ref()).kind == Action::kNothing);
  Claim on_n1 = CloneClaim();
  on_n1.meta.annotations[ann::kSelectedNode] = "n1";
  CHECK(DecideClone(TestConfig("n1"), on_n1, &wait, nullptr, src.Ref()).kind == Action::kProvision);
  CHECK(DecideClone(TestConfig("n2"), on_n1, &wait, nullptr, src.Ref()).kind == Action::kNothing);
  Claim on_n2 = CloneClaim();
  on_n2.meta.annotations[ann::kSelectedNode] = "n2";
  CHECK(DecideClone(TestConfig("n1"), on_n2, &wait, nullptr, src.Ref()).kind == Action::kNothing);
  CHECK(DecideClone(TestConfig("n3"), on_n2, &wait, nullptr, src.Ref()).kind == Action::kNothing);
  Action sent_back = DecideClone(TestConfig("n2"), on_n2, &wait, nullptr, src.Ref());
  REQUIRE(sent_back.kind == Action::kFail);
  CHECK(sent_back.reschedule);
  CHECK(sent_back.message ==
        "this claim clones apps/db, whose volume is on node n1: a clone is made where its source's data is, so the pod "
        "that uses it must run on node n1 (for example nodeSelector kubernetes.io/hostname: n1); the scheduler picked node n2");
  // The source not known yet: every node may see that, so it is said once, and waited for.
  Action missing = DecideClone(TestConfig("n2"), CloneClaim(), &immediate, nullptr, {});
  REQUIRE(missing.kind == Action::kFail);
  CHECK(missing.once);
  CHECK(missing.retry);
  CHECK_THAT(missing.message, Catch::Contains("does not exist: this claim waits for it"));
  CHECK_FALSE(missing.normal);
  // Not Bound yet: said once too, as a Normal event (nothing is wrong).
  Source pending("n1");
  pending.claim.phase = "Pending";
  pending.claim.volume_name.clear();
  Action waits = DecideClone(TestConfig("n2"), CloneClaim(), &immediate, nullptr, {&pending.claim, nullptr});
  REQUIRE(waits.kind == Action::kFail);
  CHECK(waits.once);
  CHECK(waits.normal);
  CHECK(waits.reason == reason::kWaitForCloneSource);
}

TEST_CASE("a clone whose PV is made waits for its binding quietly, whatever became of its source", "[clone]") {
  StorageClass sc = OurClass();
  Claim claim = CloneClaim();
  Source src;
  Action made = DecideClone(TestConfig(), claim, &sc, nullptr, src.Ref());
  REQUIRE(made.kind == Action::kProvision);
  // The source claim deleted once the copy was made: no refusal for a volume that exists.
  CHECK(DecideClone(TestConfig(), claim, &sc, &made.volume, {}).kind == Action::kNothing);
  CHECK(DecideClone(TestConfig("n1"), claim, &sc, &made.volume, {}).kind == Action::kNothing);
  // A PV of that name for another claim is still refused, as for any claim.
  Volume other = made.volume;
  other.claim_ref.uid = kSourceUid;
  Action a = DecideClone(TestConfig(), claim, &sc, &other, src.Ref());
  REQUIRE(a.kind == Action::kFail);
  CHECK_THAT(a.message, Catch::Contains("already exists and is not the one this provisioner made for this claim"));
  // Copied by this instance, the source gone since: the PV is made all the same.
  Action copied = DecideClone(TestConfig(), claim, &sc, nullptr, {nullptr, nullptr, true});
  REQUIRE(copied.kind == Action::kProvision);
  CHECK(copied.source.claim == "apps/db");
  CHECK(copied.volume.meta.annotations.at(ann::kClonedFrom) == "apps/db");
}
