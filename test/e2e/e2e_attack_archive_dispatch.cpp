// Attacks on archives (onDelete: archive and its expiry pass, the removal of a btrfs volume
// whose limits are lifted first) and on node-aware dispatch, by a reviewer who did not write
// them, reproduced with the real binary against the fake API server. Each case states what the
// actor does and what the promise (../shared/THREATS.md) says should hold.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "test/support/fault_harness.hpp"
#include "test/support/harness.hpp"
#include "test/support/btrfs_quota_bed.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/nodes_harness.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

const std::string kClaimsAt = "/api/v1/namespaces/default/persistentvolumeclaims/";

// As user 1000 (a pod's user): makes the btrfs subvolume dir/name, writes a file in it, then
// makes it read-only (BTRFS_IOC_SUBVOL_SETFLAGS, which `btrfs property set <path> ro true`
// calls: btrfs lets a subvolume's owner set it, no capability needed). 0 or the errno.
int ReadOnlySubvolumeAsUser(const std::string& dir, const std::string& name) {
  if (int e = MakeSubvolumeAsUser(dir, name); e != 0) return e;
  return AsUser1000([&]() -> std::pair<uint64_t, int> {
           const std::string file = dir + "/" + name + "/kept-by-me";
           int f = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
           if (f < 0 || write(f, "mine\n", 5) != 5) return {0, errno};
           close(f);
           int fd = open((dir + "/" + name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
           uint64_t flags = BTRFS_SUBVOL_RDONLY;
           if (fd < 0 || ioctl(fd, BTRFS_IOC_SUBVOL_SETFLAGS, &flags) != 0) return {0, errno};
           return {0, 0};
         })
      .second;
}

std::string Events(FakeApi& api, const std::string& name) {
  std::string out;
  for (const auto& e : api.EventsAbout("default", name)) out += e.get("reason").to_str() + ": " + e.get("message").to_str() + "\n";
  return out;
}

// The DaemonSet's RBAC, plus a Role and RoleBinding for the dispatch Lease of a second install
// whose PROVISIONER_NAME is `other` (its Lease: "/" as "-", then "-dispatch"), as docs/nodes.md
// and the Role's comment say to do for several installs. Written to `dir`/rbac.yaml.
std::string RbacForTwoInstalls(const std::string& dir, const std::string& other) {
  std::string lease = other;
  for (char& c : lease)
    if (c == '/') c = '-';
  lease += "-dispatch";
  const std::string out = ReadFile("manifests/daemonset/rbac.yaml") +
                          "\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: other-install\n"
                          "  namespace: kube-system\nrules:\n  - apiGroups: [coordination.k8s.io]\n    resources: [leases]\n"
                          "    resourceNames: [" + lease + "]\n    verbs: [get, update]\n"
                          "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: other-install\n"
                          "  namespace: kube-system\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n"
                          "  name: other-install\nsubjects:\n  - kind: ServiceAccount\n    name: hostpath-provisioner\n"
                          "    namespace: kube-system\n";
  WriteFile(dir + "/rbac.yaml", out);
  return dir + "/rbac.yaml";
}

std::string NodeLabel(const picojson::value& obj) {
  const picojson::value& labels = obj.get("metadata").get("labels");
  if (!labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node")) return "";
  return labels.get("hostpath-provisioner.io/node").to_str();
}

// The label patches the provisioners' service account made on claim `name` that went through.
int LabelPatches(FakeApi& api, const std::string& name) {
  int made = 0;
  for (const faults::Request& r : faults::Requests(api))
    made += r.user == faults::kProvisionerUser && r.verb == "patch" && r.name == name && r.code == 200;
  return made;
}

}  // namespace

// Promise 7 (under faults it converges) with a careless administrator's two installs (two
// PROVISIONER_NAMEs, each with its own dispatch Lease and Role, node-aware) and a tenant: the
// tenant adds the beta annotation volume.beta.kubernetes.io/storage-provisioner, naming the
// other install, to its bound claim of a pathPattern class of the first (the PV controller
// writes that annotation only while a claim is pending, and does not look at the beta one when
// the GA one is right). Each install's dispatcher took the claim for its own (its class, or one
// of its two annotations): the first wants `any` (a pathPattern class), the second the node the
// claim names. Found: they labelled it back and forth for ever, without pause (thousands of
// PATCHes in 10 s on the fake), and every instance of both installs woke on each one. Now a
// class known to be another provisioner's decides.
TEST_CASE("attack: a tenant's beta storage-provisioner annotation naming another install does not make two dispatchers "
          "fight over its claim's label",
          "[e2e][attack][nodes][dispatch]") {
  TempDir rbac;
  Nodes n({}, RbacForTwoInstalls(rbac.path(), "example.com/other"));
  n.env = {{"SMALL_CLUSTER_NODES", "0"}};  // a large cluster's dispatch
  n.api->CreateYaml(ClassYaml("patterned", "Delete", "hostpath-provisioner.io/hostpath",
                              "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n"));
  n.Start("node-a");
  n.Start("node-b", {{"PROVISIONER_NAME", "example.com/other"}});
  REQUIRE(Eventually([&] { return Metric(*n.instances["node-a"], "hostpath_provisioner_dispatcher") == 1; }));
  REQUIRE(Eventually([&] { return Metric(*n.instances["node-b"], "hostpath_provisioner_dispatcher") == 1; }));
  n.Claim("fought", "patterned", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("fought"));
  REQUIRE(Eventually([&] { return NodeLabel(n.ClaimJson("fought")) == "any"; }));

  n.api->CreateYaml(ClassYaml("others", "Delete", "example.com/other"));
  const int before = LabelPatches(*n.api, "fought");
  // The tenant's edit of its own claim.
  Reply r = n.api->Call("PATCH", kClaimsAt + "fought",
                        R"({"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-provisioner":"example.com/other"}}})",
                        "application/merge-patch+json");
  REQUIRE(r.code == 200);
  // Then a claim of each install, made after the edit: once both dispatchers have labelled
  // theirs, each has seen the edit (one watch of claims, in order) and had its say.
  n.Claim("after-a", "patterned", "hostpath-provisioner.io/node", "node-a");
  n.Claim("after-b", "others", "hostpath-provisioner.io/node", "node-b");
  REQUIRE(Eventually([&] { return NodeLabel(n.ClaimJson("after-a")) == "any"; }));
  REQUIRE(Eventually([&] { return NodeLabel(n.ClaimJson("after-b")) == "node-b"; }));
  INFO("node-a (hostpath-provisioner.io/hostpath):\n" << n.instances["node-a"]->Log());
  INFO("node-b (example.com/other):\n" << n.instances["node-b"]->Log());
  CHECK(NodeLabel(n.ClaimJson("fought")) == "any");
  CHECK(LabelPatches(*n.api, "fought") == before);  // the other install left it alone
}

// Promise 6 and 7 (a misconfiguration never a silent hang; under faults it converges): an
// image-only upgrade keeps the older RBAC (no Role for the dispatch Lease), and the API server
// does not answer while the instance starts (restarting behind its load balancer, or
// overloaded as every node reboots at once: kube-apiserver's priority and fairness answers 429
// before RBAC is asked). Without the fault the instance falls back and makes claims
// (e2e_dispatch); with it, the start's access check is taken as passed, the instance waits for a
// dispatcher that can never be elected (every instance is refused the Lease), and its node's
// claims are never made, once the API server answers again too, until someone restarts the
// pods by hand.
TEST_CASE("attack: old RBAC and an API server that does not answer during the start: the instance still falls back and "
          "makes claims once it answers",
          "[e2e][attack][nodes][dispatch]") {
  TempDir rbac;
  Nodes n({}, RbacWithout(rbac.path(), "role"));
  n.env = {{"SMALL_CLUSTER_NODES", "0"}};  // a large cluster's dispatch
  n.Claim("on-a", "hostpath", "hostpath-provisioner.io/node", "node-a");
  // Longer than a Lease read waits for its answer (30 s, whatever API_TIMEOUT says).
  REQUIRE(faults::Control(*n.api, "/fake/pause?seconds=40"));
  n.Start("node-a", {{"API_TIMEOUT", "2"}});
  const bool bound = Eventually([&] { return Phase(n.ClaimJson("on-a")) == "Bound"; }, seconds(120));
  Provisioner& p = *n.instances["node-a"];
  const Reply ready = p.Http("/readyz");
  INFO(p.Log());
  INFO("/readyz: " << ready.code << " " << ready.body);
  CHECK(bound);
  CHECK(Metric(p, "hostpath_provisioner_dispatch_fallback") == 1);
}

// Promise 7 (every delete finished) and 3 (an enforced size never blocks the volume's removal):
// a tenant's pod (uid 1000) makes a subvolume in its btrfs volume, puts a file in it and makes
// it read-only, as btrfs lets any subvolume's owner. The removal must still take the whole
// volume; found: every unlink in it fails with EROFS, for ever.
TEST_CASE("attack: a tenant's read-only subvolume inside its btrfs volume does not keep the volume from being deleted",
          "[e2e][attack][archive][quota]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("limited", "Delete", "hostpath-provisioner.io/hostpath", "  quota: \"true\"\n"));
  Provisioner p(api, fs.dir, {{"RESYNC_PERIOD", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "limited", "8Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  const std::string dir = fs.dir + "/default-db-" + pv;
  REQUIRE(ReadOnlySubvolumeAsUser(dir, "frozen") == 0);

  REQUIRE(api.Delete(kClaimsAt + "db").code == 200);
  const bool gone = Eventually([&] { return !Exists(dir) && !api.Volume(pv).is<picojson::object>(); }, seconds(60));
  INFO(p.Log());
  INFO(Events(api, pv));
  CHECK(gone);
  CHECK(ListDir(fs.dir).empty());
  // Let the next test's loop device go (the ro flag keeps nothing mounted, but leave it clean).
  if (Exists(dir + "/frozen")) LoopFs::Sh("btrfs property set -ts " + dir + "/frozen ro false");
}

// Promise 7 for archives: the same read-only subvolume in a volume archived for 2 s. The
// archive is moved whole (a rename), but the expiry pass can never remove it: a warning every
// RESYNC_PERIOD, the disk never freed.
TEST_CASE("attack: a tenant's read-only subvolume inside an archived btrfs volume does not keep the archive from expiring",
          "[e2e][attack][archive][quota]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("limited-archive", "Delete", "hostpath-provisioner.io/hostpath",
                           "  quota: \"true\"\n  onDelete: archive\n  archiveFor: 2s\n"));
  Provisioner p(api, fs.dir, {{"RESYNC_PERIOD", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "limited-archive", "8Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  const std::string dir = fs.dir + "/default-db-" + pv;
  REQUIRE(ReadOnlySubvolumeAsUser(dir, "frozen") == 0);

  REQUIRE(api.Delete(kClaimsAt + "db").code == 200);
  REQUIRE(Eventually([&] { return !api.Volume(pv).is<picojson::object>(); }, seconds(60)));
  REQUIRE(ListDir(fs.dir + "/.archive").size() == 1);
  const std::string archive = fs.dir + "/.archive/" + ListDir(fs.dir + "/.archive")[0];
  const bool removed = Eventually([&] { return p.Log().find("removed archive " + archive) != std::string::npos; }, seconds(60));
  INFO(p.Log());
  CHECK(removed);
  CHECK(ListDir(fs.dir + "/.archive").empty());
  if (Exists(archive + "/frozen")) LoopFs::Sh("btrfs property set -ts " + archive + "/frozen ro false");
}
