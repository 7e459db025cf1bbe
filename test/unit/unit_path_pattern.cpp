// A class's pathPattern: what a pattern may be, what it makes of a claim, and how the decisions
// use it (the directory recorded on the PV, checked again before anything is deleted).
#include <catch2/catch.hpp>

#include "decide/path_pattern.hpp"
#include "decide/reconcile.hpp"
#include "test/support/decisions_fixture.hpp"

namespace {

StorageClass PatternClass(const std::string& pattern) { return OurClass("Immediate", {{"pathPattern", pattern}}); }

// default/data in the namespace "shop".
Claim ShopClaim() {
  Claim c = OurClaim();
  c.meta.namespace_ = "shop";
  return c;
}

}  // namespace

TEST_CASE("pathPattern: the patterns a class may hold", "[path_pattern]") {
  CHECK(CheckPathPattern("${.PVC.namespace}/${.PVC.name}") == "");
  CHECK(CheckPathPattern("${.PVC.namespace}/apps/${.PVC.labels.app}-${.PVC.name}") == "");
  CHECK(CheckPathPattern("${.PVC.namespace}/${.PVC.labels.example.com/tier}") == "");
  CHECK(CheckPathPattern("${.PVC.namespace}/data") == "");  // one directory per namespace: shared within it
  // Anything that does not put the namespace alone first could meet another namespace's
  // directory: the same name ("a"/"b-c" and "a-b"/"c"), or one inside another's.
  for (const char* unsafe : {"${.PVC.namespace}-${.PVC.name}", "${.PVC.name}", "${.PVC.labels.app}",
                             "${.PVC.name}/${.PVC.namespace}", "apps/${.PVC.namespace}/${.PVC.name}",
                             "${.PVC.namespace}", "${.PVC.namespace}x/${.PVC.name}", "${.PVC.namespace}${.PVC.name}/x"}) {
    INFO(unsafe);
    CHECK(CheckPathPattern(unsafe).find("does not start with \"${.PVC.namespace}/\"") != std::string::npos);
  }
  // Shared across namespaces, on purpose: its first part is plain text no namespace's name has.
  CHECK(CheckPathPattern("shared.data/${.PVC.labels.app}", true) == "");
  CHECK(CheckPathPattern("team.shared/${.PVC.labels.app}/${.PVC.name}", true) == "");
  for (const char* unsafe : {"${.PVC.labels.app}", "shared/${.PVC.labels.app}", "${.PVC.namespace}/${.PVC.name}",
                             "x.${.PVC.name}/y", "shared.data${.PVC.name}/y"}) {
    INFO(unsafe);
    CHECK(CheckPathPattern(unsafe, true).find("first part must be plain text") != std::string::npos);
  }
  // Out of the root, hidden, empty parts, or no variable at all.
  CHECK(CheckPathPattern("/${.PVC.name}").find("starts with \"/\"") != std::string::npos);
  CHECK(CheckPathPattern("../${.PVC.name}") != "");
  CHECK(CheckPathPattern("${.PVC.namespace}/../../etc") != "");
  CHECK(CheckPathPattern(".archive/${.PVC.name}") != "");
  CHECK(CheckPathPattern("${.PVC.namespace}//${.PVC.name}") != "");
  CHECK(CheckPathPattern("${.PVC.name}/") != "");
  CHECK(CheckPathPattern("data").find("no variable") != std::string::npos);
  CHECK(CheckPathPattern("shared.data/x", true).find("no variable") != std::string::npos);
  CHECK(CheckPathPattern("${.PVC.name").find("not closed") != std::string::npos);
  // Only the claim's namespace, name and labels: not annotations, not anything else.
  CHECK(CheckPathPattern("${.PVC.annotations.x}").find("unknown variable") != std::string::npos);
  CHECK(CheckPathPattern("${.PV.name}").find("unknown variable") != std::string::npos);
  CHECK(CheckPathPattern("${.PVC.labels.}").find("label key") != std::string::npos);
  CHECK(CheckPathPattern("Data/${.PVC.name}").find("characters") != std::string::npos);
  CHECK(CheckPathPattern("a b/${.PVC.name}").find("characters") != std::string::npos);
}

TEST_CASE("pathPattern: a class whose pattern could cross namespaces is refused, naming the class", "[path_pattern]") {
  Config cfg = TestConfig();
  StorageClass sc = PatternClass("${.PVC.namespace}-${.PVC.name}");
  sc.meta.name = "keep";
  Action a = DecideClaim(cfg, ShopClaim(), &sc, nullptr);
  REQUIRE(a.kind == Action::kFail);
  CHECK(a.message.find("StorageClass keep: parameter pathPattern=\"${.PVC.namespace}-${.PVC.name}\" does not start with") == 0);
  CHECK(a.message.find("sharedAcrossNamespaces") != std::string::npos);  // the way out, named
  ClassParameters params;
  sc.parameters = {{"pathPattern", "shared.data/${.PVC.labels.app}"}, {"sharedAcrossNamespaces", "true"}};
  CHECK(ParseClassParameters(cfg, sc, &params) == "");
  CHECK(params.shared_across_namespaces);
  sc.parameters["sharedAcrossNamespaces"] = "false";
  CHECK(ParseClassParameters(cfg, sc, &params).find("does not start with") != std::string::npos);
  sc.parameters["sharedAcrossNamespaces"] = "yes";
  CHECK(ParseClassParameters(cfg, sc, &params) == "parameter sharedAcrossNamespaces=\"yes\" must be \"true\" or \"false\"");
  sc.parameters = {{"sharedAcrossNamespaces", "true"}};
  CHECK(ParseClassParameters(cfg, sc, &params) == "parameter sharedAcrossNamespaces only goes with pathPattern");
}

TEST_CASE("pathPattern: a claim's directory from its namespace, name and labels", "[path_pattern]") {
  Claim c = ShopClaim();
  c.meta.labels["app"] = "db";
  CHECK(*ExpandPathPattern("${.PVC.namespace}/${.PVC.name}", c) == "shop/data");
  CHECK(*ExpandPathPattern("x/${.PVC.labels.app}-${.PVC.name}", c) == "x/db-data");
  // A label with characters outside the rules, an empty one, a missing one: refused, named.
  c.meta.labels["app"] = "DB_1";
  Result<std::string> bad = ExpandPathPattern("${.PVC.labels.app}", c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("label app=\"DB_1\"") != std::string::npos);
  c.meta.labels["app"] = "../etc";
  CHECK_FALSE(ExpandPathPattern("${.PVC.namespace}/${.PVC.labels.app}", c).ok());
  c.meta.labels["app"] = "";
  CHECK(ExpandPathPattern("${.PVC.labels.app}", c).status().message().find("has no label app") != std::string::npos);
  c.meta.labels.erase("app");
  CHECK(ExpandPathPattern("${.PVC.labels.app}", c).status().message().find("has no label app") != std::string::npos);
}

TEST_CASE("pathPattern: the paths a PV may record", "[path_pattern]") {
  CHECK(IsPatternDir("shop/data"));
  CHECK(IsPatternDir("a/b/c"));
  for (const char* bad : {"", "/etc", "shop/../etc", "..", "shop/", "/", "shop//data", ".archive/x", "a/.b", "Shop/data"})
    CHECK_FALSE(IsPatternDir(bad));
  CHECK(ParentDir("a/b/c") == "a/b");
  CHECK(ParentDir("a") == "");
  CHECK(LeafName("a/b/c") == "c");
  CHECK(LeafName("a") == "a");
}

TEST_CASE("pathPattern: the PV records its directory, and deletion uses only that, checked", "[path_pattern]") {
  Config cfg = TestConfig();
  StorageClass sc = PatternClass("${.PVC.namespace}/${.PVC.name}");
  Claim claim = ShopClaim();
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.dir_name == "shop/data");
  CHECK(a.path_pattern);
  CHECK(a.volume.host_path == "/var/kubernetes/shop/data");
  CHECK(a.volume.meta.annotations.at(ann::kDirName) == "shop/data");

  Volume v = a.volume;
  v.phase = "Released";
  Action d = DecideVolume(cfg, v);
  REQUIRE(d.kind == Action::kDelete);
  CHECK(d.dir_name == "shop/data");
  CHECK(d.root == "/var/kubernetes");
  CHECK(d.path_pattern);

  // Someone who may write PVs points it elsewhere: nothing is deleted.
  Volume moved = v;
  moved.meta.annotations[ann::kDirName] = "../etc";
  moved.host_path = "/var/kubernetes/../etc";
  CHECK(DecideVolume(cfg, moved).kind == Action::kFail);
  Volume other = v;
  other.host_path = "/var/kubernetes/shop/other";  // the annotation and the path disagree
  CHECK(DecideVolume(cfg, other).kind == Action::kFail);
  Volume hidden = v;
  hidden.meta.annotations[ann::kDirName] = ".archive";
  hidden.host_path = "/var/kubernetes/.archive";
  CHECK(DecideVolume(cfg, hidden).kind == Action::kFail);
  Volume renamed = v;
  renamed.meta.name = "my-volume";  // not pvc-<claim uid>
  CHECK(DecideVolume(cfg, renamed).kind == Action::kFail);
}

TEST_CASE("pathPattern: a claim whose labels break the rules gets a reason, and no retry", "[path_pattern]") {
  Config cfg = TestConfig();
  StorageClass sc = PatternClass("${.PVC.namespace}/${.PVC.labels.app}");
  Claim claim = ShopClaim();
  claim.meta.labels["app"] = "My_App";
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kFail);
  CHECK(a.message.find("label app=\"My_App\"") != std::string::npos);
  CHECK_FALSE(a.retry);
  sc.parameters["pathPattern"] = "../${.PVC.name}";
  a = DecideClaim(cfg, ShopClaim(), &sc, nullptr);
  REQUIRE(a.kind == Action::kFail);
  CHECK(a.message.find("parameter pathPattern") != std::string::npos);
}

TEST_CASE("pathPattern, node-aware: the node that may have the directory acts for any claim", "[path_pattern][node]") {
  Config cfg = TestConfig();
  cfg.node_name = "n2";
  StorageClass sc = PatternClass("${.PVC.namespace}/${.PVC.name}");
  sc.volume_binding_mode = "WaitForFirstConsumer";
  Claim claim = ShopClaim();
  REQUIRE(ClaimMayNeedVolume(cfg, claim, &sc));
  // Before the scheduler picks: only if this node has the directory; the PV pins it here. The
  // PV controller has not annotated such a claim for a provisioner yet: its class says whose.
  claim.meta.annotations.erase(ann::kStorageProvisioner);
  REQUIRE(ClaimMayNeedVolume(cfg, claim, &sc));
  Action a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.only_existing);
  CHECK(a.volume.node == "n2");
  CHECK_FALSE(ClaimMayNeedVolume(cfg, claim, nullptr));  // without its class: not ours
  claim.meta.annotations[ann::kStorageProvisioner] = kDefaultProvisionerName;
  // The scheduler picked n1: the same, not by the user.
  claim.meta.annotations[ann::kSelectedNode] = "n1";
  REQUIRE(ClaimMayNeedVolume(cfg, claim, &sc));
  a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.only_existing);
  CHECK_FALSE(a.node_by_user);
  CHECK(a.claim_node == "n1");
  // The user named n1: this node only says where the directory is.
  claim.meta.annotations.erase(ann::kSelectedNode);
  claim.meta.annotations[ann::kNode] = "n1";
  a = DecideClaim(cfg, claim, &sc, nullptr);
  CHECK(a.node_by_user);
  // Its own node's claim: made here, whether or not it exists.
  claim.meta.annotations[ann::kNode] = "n2";
  a = DecideClaim(cfg, claim, &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK_FALSE(a.only_existing);
  // Another node's claim that fails here says nothing: its node tells.
  claim.meta.annotations[ann::kNode] = "n1";
  claim.storage_request = "";
  CHECK(DecideClaim(cfg, claim, &sc, nullptr).kind == Action::kNothing);
  // Without a pattern, another node's claim is not looked at.
  sc.parameters.erase("pathPattern");
  claim.storage_request = "1Gi";
  CHECK_FALSE(ClaimMayNeedVolume(cfg, claim, &sc));
}

TEST_CASE("class parameters onDelete and archiveFor", "[path_pattern][archive]") {
  Config cfg = TestConfig();
  StorageClass sc = PatternClass("${.PVC.namespace}/${.PVC.name}");
  ClassParameters p;
  sc.parameters["onDelete"] = "archive";
  sc.parameters["archiveFor"] = "1h30m";
  REQUIRE(ParseClassParameters(cfg, sc, &p) == "");
  CHECK(p.archive_seconds == 5400);
  sc.parameters["archiveFor"] = "7d";
  CHECK(ParseClassParameters(cfg, sc, &p).find("archiveFor") != std::string::npos);
  sc.parameters["onDelete"] = "retain";
  sc.parameters["archiveFor"] = "1h";
  CHECK(ParseClassParameters(cfg, sc, &p).find("only goes with onDelete") != std::string::npos);
  sc.parameters.erase("archiveFor");
  sc.parameters["onDelete"] = "wipe";
  CHECK(ParseClassParameters(cfg, sc, &p).find("onDelete") != std::string::npos);
  sc.parameters["onDelete"] = "archive";
  REQUIRE(ParseClassParameters(cfg, sc, &p) == "");
  CHECK(p.archive_for == "0");  // kept for ever unless the class says
  Action a = DecideClaim(cfg, ShopClaim(), &sc, nullptr);
  REQUIRE(a.kind == Action::kProvision);
  CHECK(a.volume.meta.annotations.at(ann::kOnDelete) == "archive");
  CHECK(a.volume.meta.annotations.at(ann::kArchiveFor) == "0");
}
