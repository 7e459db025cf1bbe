// End to end, kept data stays with its namespace (issue 51): a pathPattern that could give one
// namespace's directory to another is refused, sharing across namespaces is a class's explicit
// choice, no directory inside or around another volume's is joined or removed, and roots never
// nest. Tenants write as uid 1000, as a pod does. The real binary against the fake API server,
// checked on disk, through the API and in the events.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "test/support/nodes_harness.hpp"
#include "test/support/tenants.hpp"

using namespace harness;
using std::chrono::seconds;


TEST_CASE("kept apart: a pattern that could cross namespaces is refused, and the other namespace's data is untouched",
          "[e2e][pattern][namespaces]") {
  struct Row {
    const char* what;
    std::string pattern, kept, ns, claim;
    std::map<std::string, std::string> labels;
  } rows[] = {
      // Namespace a's claim b-c and namespace a-b's claim c both give a-b-c.
      {"namespace and name joined by a dash", "${.PVC.namespace}-${.PVC.name}", "a-b-c", "a-b", "c", {}},
      // A label any tenant sets.
      {"a label alone", "${.PVC.labels.app}", "shop", "b", "thief", {{"app", "shop"}}},
      // The name alone, where another class keeps <namespace>/<name>: claim a of namespace b would
      // get namespace a's whole folder.
      {"the name alone", "${.PVC.name}", "a/data", "b", "a", {}},
      {"name, then namespace", "${.PVC.name}/${.PVC.namespace}", "a/b", "b", "a", {}},
  };
  for (const Row& r : rows) {
    DYNAMIC_SECTION(r.what) {
      Tenants t({ClassYaml("unsafe", "Delete", "hostpath-provisioner.io/hostpath", Pattern(r.pattern))});
      t.TenantData(r.kept);
      t.api->CreateYaml(TenantClaim(r.ns, r.claim, "unsafe", r.labels));
      REQUIRE(t.WaitEvent(r.ns, r.claim, "ProvisioningFailed", "StorageClass unsafe: parameter pathPattern"));
      const std::string told = t.Events(r.ns, r.claim, "ProvisioningFailed");
      CHECK_THAT(told, Catch::Contains("does not start with \"${.PVC.namespace}/\""));
      CHECK_THAT(told, Catch::Contains("sharedAcrossNamespaces"));
      CHECK_THAT(told, !Catch::Contains("secret"));
      CHECK_THAT(told, !Catch::Contains("files and directories"));  // nothing said of what is there
      CHECK_THAT(t.prov->Log(), Catch::Contains("StorageClass unsafe"));
      CHECK(t.Phase(r.ns, r.claim) == "Pending");
      t.DeleteClaim(r.ns, r.claim);
      // Still the owner's, as it was, with its file.
      struct stat st {};
      REQUIRE(::stat((t.pv_dir + "/" + r.kept).c_str(), &st) == 0);
      CHECK(st.st_uid == 1000u);
      CHECK((st.st_mode & 07777) == 0700u);
      CHECK(ReadFile(t.pv_dir + "/" + r.kept + "/secret.txt") == "secret\n");
    }
  }
}

TEST_CASE("kept apart: two namespace-first classes on one root keep each namespace's data in its own folder",
          "[e2e][pattern][namespaces]") {
  Tenants t({ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath",
                       Pattern("${.PVC.namespace}/${.PVC.name}", "  onDelete: retain\n")),
             ClassYaml("by-app", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.labels.app}"))});
  t.api->CreateYaml(TenantClaim("a", "shop", "keep"));
  REQUIRE(t.WaitBound("a", "shop"));
  REQUIRE(AsTenant("echo secret > " + t.pv_dir + "/a/shop/secret.txt") == 0);
  t.DeleteClaim("a", "shop");
  // Namespace b's claim with the label app=shop: its own, new, empty directory b/shop.
  t.api->CreateYaml(TenantClaim("b", "thief", "by-app", {{"app", "shop"}}));
  REQUIRE(t.WaitBound("b", "thief"));
  CHECK(ListDir(t.pv_dir + "/b/shop").empty());
  CHECK(t.Events("b", "thief", "Reattached").empty());
  t.DeleteClaim("b", "thief");
  REQUIRE(Eventually([&] { return !Exists(t.pv_dir + "/b/shop"); }));
  CHECK(ReadFile(t.pv_dir + "/a/shop/secret.txt") == "secret\n");
}

TEST_CASE("kept apart: sharing across namespaces is the class's explicit choice, and stays out of namespace folders",
          "[e2e][pattern][namespaces]") {
  const std::string shared = Pattern("shared.data/${.PVC.labels.app}", "  sharedAcrossNamespaces: \"true\"\n  onDelete: retain\n");
  Tenants t({ClassYaml("team", "Delete", "hostpath-provisioner.io/hostpath", shared),
             ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}"))});
  t.api->CreateYaml(TenantClaim("a", "cache", "team", {{"app", "cache"}}));
  REQUIRE(t.WaitBound("a", "cache"));
  CHECK(Exists(t.pv_dir + "/shared.data/cache"));
  REQUIRE(AsTenant("echo from-a > " + t.pv_dir + "/shared.data/cache/note.txt") == 0);
  t.DeleteClaim("a", "cache");
  t.api->CreateYaml(TenantClaim("b", "cache", "team", {{"app", "cache"}}));
  REQUIRE(t.WaitBound("b", "cache"));
  CHECK(t.WaitEvent("b", "cache", "Reattached", "shared.data/cache"));
  CHECK(ReadFile(t.pv_dir + "/shared.data/cache/note.txt") == "from-a\n");
  // A pattern marked shared that does not start with such text is refused.
  t.api->CreateYaml(ClassYaml("loose", "Delete", "hostpath-provisioner.io/hostpath",
                              Pattern("${.PVC.labels.app}", "  sharedAcrossNamespaces: \"true\"\n")));
  t.api->CreateYaml(TenantClaim("b", "loose", "loose", {{"app", "a"}}));
  CHECK(t.WaitEvent("b", "loose", "ProvisioningFailed", "first part must be plain text with a \".\""));
}

TEST_CASE("kept apart: roots never nest: ALLOWED_PV_DIRS inside PV_DIR stops the program at start, naming both",
          "[e2e][roots]") {
  TempDir tmp;
  const std::string pv = tmp.path() + "/pv", fast = pv + "/fast";
  ::mkdir(pv.c_str(), 0755);
  ::mkdir(fast.c_str(), 0755);
  FakeApi api(tmp.path() + "/api");
  Provisioner p(api, pv, {{"ALLOWED_PV_DIRS", fast}});
  int code = 0;
  REQUIRE(p.process().WaitFor(seconds(20), &code));
  CHECK(code != 0);
  CHECK_THAT(p.Log(), Catch::Contains("ALLOWED_PV_DIRS (--allowed-pv-dirs) " + fast + " is inside PV_DIR (--pv-dir) " + pv));
  CHECK(Exists(fast));
}

TEST_CASE("kept apart: a directory that is a mount point is never a volume's", "[e2e][roots][mount]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: needs root, to mount a filesystem where a claim's directory would be");
    return;
  }
  Tenants t({ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}"))});
  // An administrator's disk, mounted where claim default/fast's directory would be.
  const std::string disk = t.pv_dir + "/default/fast";
  REQUIRE(std::system(("mkdir -p " + disk).c_str()) == 0);
  REQUIRE(::mount("none", disk.c_str(), "tmpfs", 0, "mode=0750") == 0);
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{disk};
  WriteFile(disk + "/keep.txt", "admin's\n");
  t.api->CreateYaml(TenantClaim("default", "fast", "keep"));
  const bool told = t.WaitEvent("default", "fast", "ProvisioningFailed", "is a mount point");
  CHECK(t.Phase("default", "fast") == "Pending");
  struct stat st {};
  CHECK(::stat(disk.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750u);  // not set to the class's 0777
  CHECK(ReadFile(disk + "/keep.txt") == "admin's\n");
  CHECK(told);
}

TEST_CASE("kept apart: a volume on every node never joins, nor removes, a directory around another volume's",
          "[e2e][every][pattern]") {
  Nodes n;
  if (!Nodes::CanShare()) {
    WARN("SKIPPED: needs root, to give each instance the same PV_DIR in a mount namespace of its own");
    return;
  }
  // Node-local volumes in <ns>/<group>/<name>; a volume on every node in <ns>/<group>.
  n.api->CreateYaml(ClassYaml("local", "Delete", "hostpath-provisioner.io/hostpath",
                              Pattern("${.PVC.namespace}/${.PVC.labels.group}/${.PVC.name}")));
  n.api->CreateYaml(ClassYaml("everywhere", "Delete", "hostpath-provisioner.io/hostpath",
                              Pattern("${.PVC.namespace}/${.PVC.labels.group}", "  nodes: all\n  mode: \"0700\"\n")));
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  n.api->CreateYaml(TenantClaim("default", "x", "local", {{"group", "t"}}, {{"hostpath-provisioner.io/node", "node-b"}}));
  REQUIRE(n.WaitBound("x"));
  const std::string inner = n.Root("node-b") + "/default/t/x";
  REQUIRE(Exists(inner));
  ::chmod(n.tmp.path().c_str(), 0755);
  REQUIRE(AsTenant("echo data > " + inner + "/data.txt") == 0);
  struct stat before {};
  REQUIRE(::stat((n.Root("node-b") + "/default/t").c_str(), &before) == 0);

  n.api->CreateYaml(TenantClaim("default", "all", "everywhere", {{"group", "t"}}));
  REQUIRE(n.WaitBound("all"));
  const std::string pv = n.VolumeOf("all");
  // node-a holds it; node-b says why it does not, and leaves default/t as it was.
  CHECK(Eventually([&] {
    for (const auto& e : n.api->EventsAbout("default", pv))
      if (e.get("reason").to_str() == "ProvisioningFailed" && e.get("message").to_str().find("node-b") != std::string::npos &&
          e.get("message").to_str().find("inside") != std::string::npos)
        return true;
    return false;
  }));
  struct stat after {};
  REQUIRE(::stat((n.Root("node-b") + "/default/t").c_str(), &after) == 0);
  CHECK((after.st_mode & 07777) == (before.st_mode & 07777));

  REQUIRE(n.api->Delete(std::string(kClaims) + "all").code == 200);
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
  CHECK(!Exists(n.Root("node-a") + "/default/t"));  // node-a's own directory went
  CHECK(ReadFile(inner + "/data.txt") == "data\n");  // node-b's volume kept its data
  CHECK(Phase(n.ClaimJson("x")) == "Bound");
}

TEST_CASE("kept apart: manifests/classes/keep-data.yaml as the README shows it: a claim made again gets its files",
          "[e2e][pattern]") {
  Tenants t({ReadFile("manifests/classes/keep-data.yaml")});
  t.api->CreateYaml(TenantClaim("a", "db", "hostpath-keep"));
  REQUIRE(t.WaitBound("a", "db"));
  REQUIRE(AsTenant("echo rows > " + t.pv_dir + "/a/db/table.txt") == 0);
  t.DeleteClaim("a", "db");
  CHECK(ReadFile(t.pv_dir + "/a/db/table.txt") == "rows\n");
  t.api->CreateYaml(TenantClaim("a", "db", "hostpath-keep"));
  REQUIRE(t.WaitBound("a", "db"));
  CHECK(t.WaitEvent("a", "db", "Reattached", t.pv_dir + "/a/db (1 files and directories"));
  // Another namespace's claim of that name: a new, empty directory of its own.
  t.api->CreateYaml(TenantClaim("b", "db", "hostpath-keep"));
  REQUIRE(t.WaitBound("b", "db"));
  CHECK(ListDir(t.pv_dir + "/b/db").empty());
}

TEST_CASE("kept apart: a refusal does not name another namespace's claim", "[e2e][pattern][namespaces]") {
  Tenants t({ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}"))});
  // A volume of namespace a in namespace b's folder, as a pattern allowed before could make it.
  REQUIRE(t.api->Post("/api/v1/persistentvolumes", R"({"apiVersion":"v1","kind":"PersistentVolume",
    "metadata":{"name":"pvc-old"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],
    "persistentVolumeReclaimPolicy":"Retain","storageClassName":"keep","hostPath":{"path":")" + t.pv_dir + R"(/b/shop"},
    "claimRef":{"namespace":"a","name":"secret-project","uid":"1234"}}})").code == 201);
  t.api->CreateYaml(TenantClaim("b", "shop", "keep"));
  REQUIRE(t.WaitEvent("b", "shop", "ProvisioningFailed", "PersistentVolume pvc-old (not of this namespace's claims) uses a directory at " + t.pv_dir + "/b/shop"));
  CHECK_THAT(t.Events("b", "shop", "ProvisioningFailed"), !Catch::Contains("secret-project"));
}
