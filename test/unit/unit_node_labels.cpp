// The node label (decide/node_labels.hpp): its values, the selections an instance watches, the
// PVs it labels, and the label the dispatcher gives each claim.
#include <catch2/catch.hpp>

#include "decide/node_labels.hpp"
#include "decide/reconcile.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

bool IsLabelValue(const std::string& v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

Volume OurVolume(const std::string& node) {
  Volume v;
  v.meta.name = "pvc-1";
  v.meta.uid = "u1";
  v.meta.annotations[ann::kProvisionedBy] = TestConfig().provisioner_name;
  if (!node.empty()) v.meta.annotations[ann::kNode] = node;
  return v;
}

}  // namespace

TEST_CASE("a node name is its label value; a longer one is cut and hashed into a valid, stable value", "[node_labels]") {
  CHECK(NodeLabelValue("node-a") == "node-a");
  const std::string exact(63, 'n');
  CHECK(NodeLabelValue(exact) == exact);
  const std::string base = std::string(44, 'a') + ".b-c.example.com";  // 60
  const std::string long1 = base + ".one", long2 = base + ".two";         // 64 each, the same first 46
  const std::string v1 = NodeLabelValue(long1), v2 = NodeLabelValue(long2);
  CHECK(IsLabelValue(v1));
  CHECK(IsLabelValue(v2));
  CHECK(v1.size() <= 63);
  CHECK(v1 != v2);
  CHECK(v1 == NodeLabelValue(long1));
  // FNV-1a 64 of the name, in hex: the same on every architecture (the dispatcher may run on
  // arm64 and label a claim for an armv7 node's instance).
  CHECK(NodeLabelValue(std::string(64, 'x')).substr(47) == "b96a5acbb56db825");
  // A cut that ends on a '.' or '-' is trimmed to an alphanumeric before the "-".
  const std::string dots = std::string(45, 'a') + "--" + std::string(30, 'b');
  CHECK(IsLabelValue(NodeLabelValue(dots)));
}

TEST_CASE("node-aware, the PVs it makes carry their node's label, or shared, or all; single-node, none", "[node_labels]") {
  Config aware = TestConfig("node-a");
  StorageClass plain = OurClass();
  Claim here = OurClaim();
  here.meta.annotations[ann::kNode] = "node-a";
  Action a = DecideClaim(aware, here, &plain, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.volume.meta.labels.at(node_label::kKey) == "node-a");
  StorageClass all = OurClass("Immediate", {{"nodes", "all"}});
  Action b = DecideClaim(aware, here, &all, nullptr);
  REQUIRE(b.kind == Action::kProvision);
  CHECK(b.volume.meta.labels.at(node_label::kKey) == "all");
  StorageClass shared = OurClass("Immediate", {{"requireMount", "true"}});
  Action c = DecideClaim(aware, here, &shared, nullptr);
  REQUIRE(c.kind == Action::kProvision);
  CHECK(c.volume.meta.labels.at(node_label::kKey) == "shared");
  Action d = DecideClaim(TestConfig(), OurClaim(), &plain, nullptr);
  REQUIRE(d.kind == Action::kProvision);
  CHECK(d.volume.meta.labels.count(node_label::kKey) == 0);
}

TEST_CASE("an instance labels only its own node's unlabelled PVs of ours, and the shared and every-node ones", "[node_labels]") {
  Config cfg = TestConfig("node-a");
  CHECK(LabelsVolume(cfg, OurVolume("node-a")));
  CHECK_FALSE(LabelsVolume(cfg, OurVolume("node-b")));
  Volume labelled = OurVolume("node-a");
  labelled.meta.labels[node_label::kKey] = "node-a";
  CHECK_FALSE(LabelsVolume(cfg, labelled));
  labelled.meta.labels[node_label::kKey] = "node-b";  // wrong: put right
  CHECK(LabelsVolume(cfg, labelled));
  Volume shared = OurVolume("node-b");
  shared.meta.annotations[ann::kAllNodes] = "shared";
  CHECK(LabelsVolume(cfg, shared));
  CHECK(VolumeLabel(cfg, shared) == "shared");
  Volume all = OurVolume("");
  all.meta.annotations[ann::kAllNodes] = "all";
  CHECK(VolumeLabel(cfg, all) == "all");
  Volume foreign = OurVolume("node-a");
  foreign.meta.annotations[ann::kProvisionedBy] = "someone-else";
  CHECK_FALSE(LabelsVolume(cfg, foreign));
  CHECK_FALSE(LabelsVolume(TestConfig(), OurVolume("")));  // single-node: no label
}

TEST_CASE("the selections: node-aware, its node's and the shared values, and the unlabelled PVs", "[node_labels]") {
  CHECK(VolumeSelections(TestConfig()) == std::vector<std::string>{""});
  CHECK(ClaimSelection(TestConfig()).empty());
  CHECK(VolumeSelections(TestConfig("node-a")) ==
        std::vector<std::string>{"hostpath-provisioner.io/node in (node-a,shared,all)", "!hostpath-provisioner.io/node"});
  CHECK(ClaimSelection(TestConfig("node-a")) == "hostpath-provisioner.io/node in (node-a,any)");
}

TEST_CASE("the dispatcher labels a claim with its node once known, any for classes any node acts on", "[node_labels]") {
  Config cfg = TestConfig("node-a");
  StorageClass immediate = OurClass(), wffc = OurClass("WaitForFirstConsumer");
  Claim c = OurClaim();
  // Immediate, naming no node: every instance may say why it cannot be made.
  CHECK(DispatchLabel(cfg, c, &immediate) == std::optional<std::string>("any"));
  // WaitForFirstConsumer: no label until the scheduler picks (one a tenant set is taken off).
  CHECK(DispatchLabel(cfg, c, &wffc) == std::optional<std::string>(""));
  Claim tenants = c;
  tenants.meta.labels[node_label::kKey] = "any";
  CHECK(DispatchLabel(cfg, tenants, &wffc) == std::optional<std::string>(""));
  c.meta.annotations[ann::kSelectedNode] = "node-b";
  CHECK(DispatchLabel(cfg, c, &wffc) == std::optional<std::string>("node-b"));
  Claim pinned = OurClaim();
  pinned.meta.annotations[ann::kNode] = "node-c";
  CHECK(DispatchLabel(cfg, pinned, &immediate) == std::optional<std::string>("node-c"));
  // Classes any node may act on.
  StorageClass pattern = OurClass("WaitForFirstConsumer", {{"pathPattern", "${.PVC.namespace}/${.PVC.name}"}});
  StorageClass all = OurClass("Immediate", {{"nodes", "all"}});
  StorageClass shared = OurClass("Immediate", {{"requireMount", "true"}});
  for (const StorageClass* sc : {&pattern, &all, &shared}) CHECK(DispatchLabel(cfg, c, sc) == std::optional<std::string>("any"));
  // Not ours (another provisioner's class, no annotation), or being deleted: left alone.
  Claim other = OurClaim();
  other.meta.annotations.clear();
  StorageClass theirs = OurClass();
  theirs.provisioner = "example.com/other";
  CHECK_FALSE(DispatchLabel(cfg, other, &theirs).has_value());
  // Another provisioner's class decides, whatever annotations a tenant adds (two installs'
  // dispatchers would otherwise both label it); with no class known, the annotation does.
  Claim annotated = OurClaim();
  annotated.meta.annotations[ann::kBetaStorageProvisioner] = cfg.provisioner_name;
  CHECK_FALSE(DispatchLabel(cfg, annotated, &theirs).has_value());
  CHECK(DispatchLabel(cfg, annotated, nullptr).has_value());
  Claim deleting = OurClaim();
  deleting.meta.deleting = true;
  CHECK_FALSE(DispatchLabel(cfg, deleting, &immediate).has_value());
  // A bound claim keeps being dispatched by its node (its expansion is that node's).
  Claim bound = c;
  bound.volume_name = "pvc-1";
  bound.phase = "Bound";
  CHECK(DispatchLabel(cfg, bound, &wffc) == std::optional<std::string>("node-b"));
}

TEST_CASE("every instance watches every claim up to SMALL_CLUSTER_NODES nodes, its own node's past a quarter more; in between, as before", "[node_labels]") {
  Config cfg;
  cfg.node_name = "node-a";
  struct Case {
    int threshold, nodes;
    bool now, want;
  } cases[] = {
      {8, 0, false, true},   {8, 1, false, true},  {8, 8, false, true},   // small: whatever it was
      {8, 9, true, true},    {8, 10, true, true},                         // the edge: stays
      {8, 9, false, false},  {8, 10, false, false},
      {8, 11, true, false},  {8, 1000, true, false},                      // past 8 + 2
      {2, 2, false, true},   {2, 3, true, true},    {2, 3, false, false}, // at least one more
      {2, 4, true, false},   {1, 2, true, true},    {1, 3, true, false},
      {0, 0, true, false},   {0, 1, false, false},                        // 0: never
  };
  for (const Case& c : cases) {
    INFO(c.threshold << " " << c.nodes << " " << c.now);
    cfg.small_cluster_nodes = c.threshold;
    CHECK(WatchEveryClaim(cfg, c.nodes, c.now) == c.want);
  }
}
