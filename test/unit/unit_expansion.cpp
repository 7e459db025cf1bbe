// The pure decision of volume expansion: which bound claims ask for more, and whether this
// instance expands their volume.
#include <catch2/catch.hpp>

#include "decide/expansion.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

const char* kUid = "1b2c3d4e-0000-4000-8000-000000000001";

Claim BoundClaim(const std::string& request, const std::string& capacity) {
  Claim c;
  c.meta.name = "data";
  c.meta.namespace_ = "default";
  c.meta.uid = kUid;
  c.storage_class_name = "hostpath";
  c.storage_request = request;
  c.capacity = capacity;
  c.volume_name = std::string("pvc-") + kUid;
  c.phase = "Bound";
  return c;
}

Volume OurVolume(const std::string& capacity, const std::string& node = "") {
  Volume v;
  v.meta.name = std::string("pvc-") + kUid;
  v.meta.annotations[ann::kProvisionedBy] = kDefaultProvisionerName;
  if (!node.empty()) v.meta.annotations[ann::kNode] = node;
  v.capacity_bytes = *QuantityToBytes(capacity);
  v.has_claim_ref = true;
  v.claim_ref.uid = kUid;
  return v;
}

StorageClass Class(const std::map<std::string, std::string>& params = {}) {
  StorageClass sc;
  sc.meta.name = "hostpath";
  sc.provisioner = kDefaultProvisionerName;
  sc.allow_volume_expansion = true;
  sc.parameters = params;
  return sc;
}

}  // namespace

TEST_CASE("a bound claim asking for more than its capacity expands a volume this instance made", "[expansion]") {
  Config cfg = TestConfig();
  Claim claim = BoundClaim("2Gi", "1Gi");
  Volume v = OurVolume("1Gi");
  StorageClass sc = Class();
  Expansion e = DecideExpansion(cfg, claim, &sc, &v);
  REQUIRE(e.kind == Expansion::kExpand);
  CHECK(e.size == "2Gi");
  CHECK(e.bytes == int64_t{2} << 30);
  CHECK(e.from_bytes == int64_t{1} << 30);
  CHECK_FALSE(e.volume_done);
  CHECK(e.root == "/var/kubernetes");
  CHECK(e.check_space);
  CHECK(e.overcommit);
  // The PV already has it (an attempt that stopped half-way): only the claim's status is left.
  Volume grown = OurVolume("2Gi");
  CHECK(DecideExpansion(cfg, claim, &sc, &grown).volume_done);
  // The class's parameters decide the check; without the class, the configured defaults.
  StorageClass strict = Class({{"overcommit", "false"}, {"pvDir", "/var/kubernetes"}});
  CHECK_FALSE(DecideExpansion(cfg, claim, &strict, &v).overcommit);
  cfg.overcommit = false;
  cfg.check_free_space = false;
  Expansion no_class = DecideExpansion(cfg, claim, nullptr, &v);
  CHECK_FALSE(no_class.overcommit);
  CHECK_FALSE(no_class.check_space);
  // The volume's own root counts, and a requireMount volume is checked mounted.
  v.meta.annotations[ann::kPvDir] = "/mnt/share";
  v.meta.annotations[ann::kRequireMount] = "true";
  cfg.allowed_pv_dirs = {"/mnt/share"};
  Expansion shared = DecideExpansion(cfg, claim, &sc, &v);
  CHECK(shared.root == "/mnt/share");
  CHECK(shared.require_mount);
}

TEST_CASE("nothing to expand: not bound, not more, not ours, another claim's, another node's", "[expansion]") {
  Config cfg = TestConfig();
  StorageClass sc = Class();
  Volume v = OurVolume("1Gi");
  Claim same = BoundClaim("1Gi", "1024Mi");
  CHECK(DecideExpansion(cfg, same, &sc, &v).kind == Expansion::kNothing);
  Claim pending = BoundClaim("2Gi", "1Gi");
  pending.phase = "Pending";
  CHECK(DecideExpansion(cfg, pending, &sc, &v).kind == Expansion::kNothing);
  Claim no_capacity = BoundClaim("2Gi", "");
  CHECK(DecideExpansion(cfg, no_capacity, &sc, &v).kind == Expansion::kNothing);
  Claim more = BoundClaim("2Gi", "1Gi");
  CHECK(DecideExpansion(cfg, more, &sc, nullptr).kind == Expansion::kNothing);
  Volume theirs = v;
  theirs.meta.annotations[ann::kProvisionedBy] = "someone.else/hostpath";
  CHECK(DecideExpansion(cfg, more, &sc, &theirs).kind == Expansion::kNothing);
  Volume other_claim = v;
  other_claim.claim_ref.uid = "9b2c3d4e-0000-4000-8000-000000000009";
  CHECK(DecideExpansion(cfg, more, &sc, &other_claim).kind == Expansion::kNothing);
  // Node-aware: only the instance of the node that made it; a single-node instance leaves
  // volumes made by a DaemonSet alone.
  Volume on_a = OurVolume("1Gi", "node-a");
  CHECK(DecideExpansion(TestConfig("node-a"), more, &sc, &on_a).kind == Expansion::kExpand);
  CHECK(DecideExpansion(TestConfig("node-b"), more, &sc, &on_a).kind == Expansion::kNothing);
  CHECK(DecideExpansion(cfg, more, &sc, &on_a).kind == Expansion::kNothing);
  CHECK(DecideExpansion(TestConfig("node-a"), more, &sc, &v).kind == Expansion::kNothing);
  // On every node: any node holding a finalizer expands it; another node leaves it to them.
  Volume everywhere = v;
  everywhere.meta.annotations[ann::kAllNodes] = "all";
  everywhere.meta.finalizers = {NodeFinalizer("node-b"), NodeFinalizer("node-a")};
  CHECK(DecideExpansion(TestConfig("node-a"), more, &sc, &everywhere).kind == Expansion::kExpand);
  CHECK(DecideExpansion(TestConfig("node-b"), more, &sc, &everywhere).kind == Expansion::kExpand);
  Expansion elsewhere = DecideExpansion(TestConfig("node-c"), more, &sc, &everywhere);
  CHECK(elsewhere.kind == Expansion::kNothing);
  CHECK(elsewhere.held_elsewhere);
}

TEST_CASE("a volume made under a root no longer configured is a failure that says what to do", "[expansion]") {
  Volume v = OurVolume("1Gi");
  v.meta.annotations[ann::kPvDir] = "/old/root";
  StorageClass sc = Class();
  Expansion e = DecideExpansion(TestConfig(), BoundClaim("2Gi", "1Gi"), &sc, &v);
  REQUIRE(e.kind == Expansion::kFail);
  CHECK(e.why.find("/old/root, which is not PV_DIR or one of ALLOWED_PV_DIRS") != std::string::npos);
}

TEST_CASE("the cache keeps a bound claim's request and capacity only while it asks for more", "[expansion]") {
  Claim asks = BoundClaim("2Gi", "1Gi");
  SlimForCache(&asks);
  CHECK(ExpansionAsked(asks));
  CHECK(asks.storage_request == "2Gi");
  CHECK(asks.capacity == "1Gi");
  CHECK(asks.storage_class_name == "hostpath");
  Claim done = BoundClaim("2Gi", "2Gi");
  SlimForCache(&done);
  CHECK_FALSE(ExpansionAsked(done));
  CHECK(done.storage_request.empty());
  CHECK(done.capacity.empty());
  CHECK(done.storage_class_name.empty());
  Claim pending = BoundClaim("2Gi", "");
  pending.volume_name.clear();
  pending.phase = "Pending";
  SlimForCache(&pending);
  CHECK_FALSE(ExpansionAsked(pending));
  CHECK(pending.storage_request == "2Gi");
}
