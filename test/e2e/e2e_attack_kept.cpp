// End to end, attacks on "kept data stays with its namespace" (issue 51) by a reviewer who did
// not write it: each case is a way that got past the overlap rule (control/dir_guard), the rule
// that roots never nest, or the rule that a refusal names no other namespace's data, before it
// was mended. Each states what the documentation promises and checks it with the real binary
// against the fake API server, on disk and in the claim's events. Tenants write as uid 1000.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fs.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <memory>

#include "test/support/tenants.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

// Two namespace-first classes on one root, keep (<ns>/<name>, with `keep_more`) and grouped
// (<ns>/<group label>/<name>), and a plain one.
std::vector<std::string> GroupedClasses(const std::string& keep_more) {
  return {ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}", keep_more)),
          ClassYaml("grouped", "Delete", "hostpath-provisioner.io/hostpath",
                    Pattern("${.PVC.namespace}/${.PVC.labels.group}/${.PVC.name}")),
          ClassYaml("plain", "Delete", "hostpath-provisioner.io/hostpath")};
}

}  // namespace


// Promise (keep-data.md, "A directory has one volume"): "A claim is refused (ProvisioningFailed,
// naming the PV) while any PV ... names that directory, a directory inside it, or one around
// it"; "Clones are copied into their own new directory". A clone took another path than
// ProvisionPattern (Cloning::Provision), which never asked the guard: with two namespace-first
// classes on one root (allowed: "no two classes on one root ... can give one directory to two
// namespaces"), a clone was renamed into a new directory inside another volume's, which that
// volume's pod then saw, and which its owner and mode were set on.
TEST_CASE("attack: a clone of a pattern class is refused inside another volume's directory, as any claim is",
          "[e2e][attack][pattern][clone]") {
  Tenants t(GroupedClasses(""));
  t.api->CreateYaml(TenantClaim("a", "x", "keep"));
  REQUIRE(t.WaitBound("a", "x"));
  REQUIRE(AsTenant("echo mine > " + t.pv_dir + "/a/x/own.txt") == 0);
  // The defence as it stands: a plain claim whose directory would be a/x/z is refused.
  t.api->CreateYaml(TenantClaim("a", "z", "grouped", {{"group", "x"}}));
  REQUIRE(t.WaitRefusedOrBound("a", "z"));
  REQUIRE_THAT(t.Events("a", "z", "ProvisioningFailed"), Catch::Contains("inside"));
  // The same, as a clone of another claim of the namespace.
  t.api->CreateYaml(TenantClaim("a", "src", "plain"));
  REQUIRE(t.WaitBound("a", "src"));
  t.api->CreateYaml(TenantClaim("a", "y", "grouped", {{"group", "x"}}, {}, "src"));
  const bool refused = t.WaitRefusedOrBound("a", "y");
  INFO("events of a/y:\n" << t.AllEvents("a", "y"));
  CHECK(refused);
  CHECK(t.Phase("a", "y") != "Bound");
  CHECK(!Exists(t.pv_dir + "/a/x/y"));  // nothing made inside volume a/x
  CHECK(ListDir(t.pv_dir + "/a/x") == std::vector<std::string>{"own.txt"});
}

// Promise (dir_guard.hpp, keep-data.md): a directory inside another PV's directory is never taken
// over, chowned or removed, "any PV ..., a hand-written one too". Overlapping normalised the PV's
// path for "inside" but not for "around": a hand-written PV whose hostPath ends in "/", or holds
// "//" or "/./" (all accepted by Kubernetes, and the same directory to the kubelet), was not seen
// around a claim's directory. The claim then reattached the data another namespace's pod wrote
// inside that volume (chowning it to the class's owner), and deleting the claim removed it.
TEST_CASE("attack: a hand-written PV spelled with a trailing '/', '//' or '/./' is seen around a claim's directory",
          "[e2e][attack][pattern][guard]") {
  struct Row {
    const char* what;
    std::string suffix_path;  // how the PV spells <root>/a/db
  } rows[] = {
      {"as normalised (the defence holds)", "/a/db"},
      {"a trailing slash", "/a/db/"},
      {"a double slash", "//a/db"},
      {"a dot part", "/a/./db"},
  };
  for (const Row& r : rows) {
    DYNAMIC_SECTION(r.what) {
      Tenants t({ClassYaml("db", "Delete", "hostpath-provisioner.io/hostpath",
                           Pattern("${.PVC.namespace}/db/${.PVC.name}", "  uid: \"2000\"\n"))});
      // Namespace b's static volume (an administrator's, for a pod of b) is <root>/a/db; b's
      // pod wrote x/secret.txt in it.
      REQUIRE(t.api->Post("/api/v1/persistentvolumes", HandVolume("static-b", t.pv_dir + r.suffix_path, "b", "static"))
                  .code == 201);
      t.TenantData("a/db/x");
      // Namespace a's tenant asks for the claim whose directory is a/db/x.
      t.api->CreateYaml(TenantClaim("a", "x", "db"));
      const bool refused = t.WaitRefusedOrBound("a", "x");
      INFO("events of a/x:\n" << t.AllEvents("a", "x"));
      CHECK(refused);
      CHECK_THAT(t.Events("a", "x", "ProvisioningFailed"), Catch::Contains("PersistentVolume static-b"));
      CHECK(t.Events("a", "x", "Reattached").empty());
      struct stat st {};
      REQUIRE(::stat((t.pv_dir + "/a/db/x").c_str(), &st) == 0);
      CHECK(st.st_uid == 1000u);  // not chowned to the class's 2000
      t.DeleteClaim("a", "x");
      CHECK(ReadFile(t.pv_dir + "/a/db/x/secret.txt") == "secret\n");  // b's data still there
    }
  }
}

// Promise (keep-data.md, "Roots never nest"; configuration.md ALLOWED_PV_DIRS): "A root inside
// another stops the provisioner at start, naming both: otherwise a volume of the outer root could
// be, or hold, the inner root with every volume and archive in it". NestedRoots compares the
// paths as text: an ALLOWED_PV_DIRS entry reached through a symlink to PV_DIR (or a bind mount of
// a folder of it) was accepted, as Root::Open follows a symlink above the root's last name. Then
// namespace "fast"'s claim "a" (PV_DIR/fast/a) was namespace a's folder on the inner root, and the
// overlap rule, which compares paths as text too, saw no volume there: namespace fast reattached
// namespace a's volumes, data and all. RootsApart now compares where the roots lie.
TEST_CASE(
    "attack: ALLOWED_PV_DIRS inside PV_DIR through a symlink or a bind mount stops the program at start, and no "
    "namespace takes another's volumes",
    "[e2e][attack][roots]") {
  for (const bool bind : {false, true}) {
    DYNAMIC_SECTION((bind ? "a bind mount" : "a symlink")) {
      if (bind && ::geteuid() != 0) {
        WARN("SKIPPED: needs root, to bind-mount a folder of PV_DIR");
        continue;
      }
      std::string inner, mounted;
      Tenants t(
          {ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}"))},
          {}, [&](Tenants& self, std::map<std::string, std::string>& env) {
            REQUIRE(::mkdir((self.pv_dir + "/fast").c_str(), 0755) == 0);
            if (bind) {
              // The administrator's "second disk" at <tmp>/fast: a bind mount of <tmp>/pv/fast.
              inner = self.tmp.path() + "/fast";
              REQUIRE(::mkdir(inner.c_str(), 0755) == 0);
              REQUIRE(::mount((self.pv_dir + "/fast").c_str(), inner.c_str(), nullptr, MS_BIND, nullptr) == 0);
              mounted = inner;
            } else {
              // <tmp>/disks -> <tmp>/pv: the administrator's "second disk" at <tmp>/disks/fast.
              REQUIRE(::symlink(self.pv_dir.c_str(), (self.tmp.path() + "/disks").c_str()) == 0);
              inner = self.tmp.path() + "/disks/fast";
            }
            env["ALLOWED_PV_DIRS"] = inner;
            self.api->CreateYaml(ClassYaml("on-fast", "Delete", "hostpath-provisioner.io/hostpath",
                                           "  pvDir: \"" + inner + "\"\n" + Pattern("${.PVC.namespace}/${.PVC.name}")));
          });
      struct Unmount {
        const std::string& at;
        ~Unmount() {
          if (!at.empty()) ::umount2(at.c_str(), MNT_DETACH);
        }
      } unmount{mounted};
      int code = 0;
      const bool stopped = t.prov->process().WaitFor(seconds(20), &code);
      INFO("log:\n" << t.prov->Log());
      CHECK(stopped);
      CHECK(code != 0);
      CHECK_THAT(t.prov->Log(), Catch::Contains("roots must not nest"));
      if (stopped) continue;
      // It runs: namespace a keeps a volume on the inner root.
      t.api->CreateYaml(TenantClaim("a", "x", "on-fast"));
      REQUIRE(t.WaitBound("a", "x"));
      REQUIRE(AsTenant("echo secret > " + inner + "/a/x/secret.txt") == 0);
      // Namespace fast's claim "a" of the class keep names PV_DIR/fast/a: namespace a's folder there.
      t.api->CreateYaml(TenantClaim("fast", "a", "keep"));
      const bool refused = t.WaitRefusedOrBound("fast", "a");
      INFO("events of fast/a:\n" << t.AllEvents("fast", "a"));
      CHECK(refused);
      CHECK(t.Events("fast", "a", "Reattached").empty());
    }
  }
}

// Promise (keep-data.md, "What a tenant can and cannot reach"): "a refusal names no other
// namespace's data". DirGuard::Uses hid the other claim's namespace and name, but printed the
// other PV's whole hostPath: where it lies inside the claimant's directory (a volume an older,
// unsafe pattern put in this namespace's folder), its last names are the other namespace's
// labels and claim name.
TEST_CASE("attack: a refusal shows no path of another namespace's volume inside the claimant's directory",
          "[e2e][attack][pattern][namespaces]") {
  Tenants t(
      {ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", Pattern("${.PVC.namespace}/${.PVC.name}"))});
  // Namespace a's volume, made by a pattern like ${.PVC.labels.team}/${.PVC.labels.app}/${.PVC.name}
  // that an older version took (team=b, app=shop, claim merger-plans).
  REQUIRE(t.api
              ->Post("/api/v1/persistentvolumes",
                     HandVolume("pvc-old", t.pv_dir + "/b/shop/merger-plans", "a", "merger-plans"))
              .code == 201);
  t.api->CreateYaml(TenantClaim("b", "shop", "keep"));
  REQUIRE(t.WaitRefusedOrBound("b", "shop"));
  const std::string told = t.Events("b", "shop", "ProvisioningFailed");
  INFO("told to namespace b:\n" << told);
  CHECK_THAT(told, Catch::Contains("not of this namespace's claims"));
  CHECK_THAT(told, !Catch::Contains("kubectl"));
  CHECK_THAT(told, !Catch::Contains("merger-plans"));
}

// Promise (keep-data.md): "It cannot reach: another namespace's folder or anything in it"; the
// README: volumes are made "following no symlink". A clone's copy is built beside its directory
// (CloneTempName) and renamed into place by name (Publish). Where the clone's directory lay
// inside another live volume (the first attack above), that parent was the tenant's: its pod
// put a FIFO where the copy's mark goes, so that the provisioner's open waited, swapped the
// finished copy for a symlink to namespace b's folder, then opened the FIFO: the provisioner
// renamed the symlink into place, and a's pod got b's data. Now the clone is refused before
// anything is built there, so the tenant has nothing to race.
TEST_CASE("attack: a tenant cannot race a clone built inside its volume: the clone is refused there",
          "[e2e][attack][pattern][clone][race]") {
  Tenants t(GroupedClasses("  onDelete: retain\n"));
  t.api->CreateYaml(TenantClaim("b", "vault", "keep"));
  REQUIRE(t.WaitBound("b", "vault"));
  REQUIRE(AsTenant("echo b-secret > " + t.pv_dir + "/b/vault/secret.txt") == 0);
  t.api->CreateYaml(TenantClaim("a", "x", "keep"));
  REQUIRE(t.WaitBound("a", "x"));
  const std::string parent = t.pv_dir + "/a/x";
  t.api->CreateYaml(TenantClaim("a", "y", "grouped", {{"group", "x"}}, {}, "src"));
  const std::string pv = "pvc-" + t.api->Claim("a", "y").get("metadata").get("uid").to_str();
  // The tenant's pod prepares its trap in a/x: a FIFO where the mark goes, a symlink to b.
  REQUIRE(AsTenant("mkfifo " + parent + "/.cloned-" + pv + " && ln -s " + t.pv_dir + "/b " + parent + "/s") == 0);
  t.api->CreateYaml(TenantClaim("a", "src", "plain"));
  REQUIRE(t.WaitBound("a", "src"));
  REQUIRE(t.WaitEvent("a", "y", "ProvisioningFailed", "uses " + parent + ", around " + parent + "/y"));
  INFO("events of a/y:\n" << t.AllEvents("a", "y"));
  CHECK(t.Events("a", "y", "Cloning").empty());
  CHECK(t.Phase("a", "y") == "Pending");
  CHECK(!Exists(parent + "/y"));
  CHECK(!Exists(parent + "/.clone-" + pv));
}

// Promise (THREATS.md 5): "No client can starve ... the workers". Clones are copied one at a
// time (clones.md). A FIFO where a clone's mark goes (put there by whoever may write in the
// clone's parent: a tenant could, when a clone could be made inside its volume) held that one
// copy thread in Publish's open for ever, and another namespace's clone waited behind it. The
// mark is now opened without waiting, and only a plain file taken.
TEST_CASE("attack: a FIFO where a clone's mark goes does not stop other namespaces' clones",
          "[e2e][attack][clone][starve]") {
  Tenants t({ClassYaml("plain", "Delete", "hostpath-provisioner.io/hostpath")});
  t.api->CreateYaml(TenantClaim("a", "y", "plain", {}, {}, "src"));
  const std::string pv = "pvc-" + t.api->Claim("a", "y").get("metadata").get("uid").to_str();
  const std::string fifo = t.pv_dir + "/.cloned-" + pv;
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  t.api->CreateYaml(TenantClaim("a", "src", "plain"));
  REQUIRE(t.WaitEvent("a", "y", "ProvisioningFailed", ".cloned-" + pv));
  // Namespace b clones a claim of its own.
  t.api->CreateYaml(TenantClaim("b", "data", "plain"));
  REQUIRE(t.WaitBound("b", "data"));
  t.api->CreateYaml(TenantClaim("b", "copy", "plain", {}, {}, "data"));
  const bool bound = Eventually([&] { return t.Phase("b", "copy") == "Bound"; }, seconds(60));
  INFO("events of b/copy:\n" << t.AllEvents("b", "copy") << "events of a/y:\n" << t.AllEvents("a", "y"));
  CHECK(bound);
  CHECK(t.Phase("a", "y") == "Pending");
  // Let a held thread go (a reader on the FIFO), so that the instance stops cleanly.
  const int r = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  if (r >= 0) ::close(r);
}
