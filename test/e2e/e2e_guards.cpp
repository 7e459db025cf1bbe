// End to end, the guards of the newest code (issue 53), each as a user meets it: one-line bugs
// planted in them passed the whole suite. A pathPattern directory around another volume's,
// another node's unlabelled PV, an unreadable archive-for annotation, a class created after
// its claims, a PV moved between the informer's selections by the start-up labelling, a PV's
// directory annotation edited by hand, a GET with a body on the probe endpoint. (A clone woken
// by its source's claim binding is in e2e_clone.cpp; what the informer's handler is told, in
// unit_informer.cpp.) The real binary against the fake API server, checked through the API
// (claims, PVs, events), on disk and on the wire.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/objects.hpp"
#include "test/support/btrfs_quota_bed.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tenants.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

std::string ClaimsOf(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/"; }

std::string VolumeOf(FakeApi& api, const std::string& ns, const std::string& claim) {
  picojson::value c = api.Claim(ns, claim);
  return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>() ? c.get("spec").get("volumeName").to_str()
                                                                                     : "";
}

bool WaitBound(FakeApi& api, const std::string& ns, const std::string& claim, seconds limit = seconds(30)) {
  return Eventually([&] { return Phase(api.Claim(ns, claim)) == "Bound"; }, limit);
}

// Every event about the object, "Reason: message" a line (for INFO and for searching).
std::string EventLines(FakeApi& api, const std::string& ns, const std::string& name) {
  std::string out;
  for (const auto& e : api.EventsAbout(ns, name)) out += e.get("reason").to_str() + ": " + e.get("message").to_str() + "\n";
  return out;
}

bool HasEvent(FakeApi& api, const std::string& ns, const std::string& name, const std::string& reason,
              const std::string& part) {
  for (const auto& e : api.EventsAbout(ns, name))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

std::string NodeLabel(const picojson::value& obj) {
  const picojson::value& labels = obj.get("metadata").get("labels");
  if (!labels.is<picojson::object>() || !labels.contains("hostpath-provisioner.io/node")) return "";
  return labels.get("hostpath-provisioner.io/node").to_str();
}

// A PV as a version before the node label made it on `node` (no label; Retain), with
// `more_annotations` and `spec` lines added (two spaces deep).
std::string OldVolumeYaml(const std::string& name, const std::string& node, const std::string& path,
                          const std::string& size, const std::string& more_annotations = "", const std::string& spec = "") {
  return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
         "\n  annotations:\n    pv.kubernetes.io/provisioned-by: hostpath-provisioner.io/hostpath\n"
         "    hostpath-provisioner.io/node: " + node + "\n" + more_annotations +
         "spec:\n  capacity:\n    storage: " + size + "\n  accessModes: [ReadWriteOnce]\n"
         "  persistentVolumeReclaimPolicy: Retain\n  hostPath:\n    path: " + path + "\n" + spec;
}

double CachedVolumes(Provisioner& p) { return Metric(p, "hostpath_provisioner_cached_objects", "kind=\"PersistentVolume\""); }

Reply Patch(FakeApi& api, const std::string& path, const std::string& merge_patch) {
  return api.Call("PATCH", path, merge_patch, "application/merge-patch+json");
}

// One fake API server, a root, and a provisioner (started by the test, after its classes).
struct Cluster {
  TempDir tmp;
  std::string pv_dir = tmp.path() + "/pv";
  FakeApi api{tmp.path() + "/api"};
  std::unique_ptr<Provisioner> prov;
  Cluster() { ::mkdir(pv_dir.c_str(), 0755); }
  void Start(std::map<std::string, std::string> env = {}) { prov = std::make_unique<Provisioner>(api, pv_dir, env); }
};

}  // namespace

// Issue 53, 1: the overlap check looks both ways. Both patterns start with the namespace, as
// the kept-data rules want.
TEST_CASE("pathPattern: a directory around another volume's, or inside one, is refused, and the other's files stay",
          "[e2e][pattern][guards]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("inner", "Delete", "hostpath-provisioner.io/hostpath",
                             "  pathPattern: \"${.PVC.namespace}/${.PVC.labels.group}/${.PVC.name}\"\n"));
  c.api.CreateYaml(ClassYaml("outer", "Delete", "hostpath-provisioner.io/hostpath",
                             "  pathPattern: \"${.PVC.namespace}/${.PVC.labels.group}\"\n"));
  REQUIRE(c.api.Post("/api/v1/namespaces", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}})").code == 201);
  c.Start();
  // shop/data: claim "data" of the inner class, group "data"; files written in it.
  c.api.CreateYaml(TenantClaim("shop", "data", "inner", {{"group", "data"}}));
  REQUIRE(WaitBound(c.api, "shop", "data"));
  const std::string inner_pv = VolumeOf(c.api, "shop", "data");
  const std::string inner_dir = c.pv_dir + "/shop/data/data";
  REQUIRE(Annotation(c.api.Volume(inner_pv), "hostpath-provisioner.io/dir") == "shop/data/data");
  WriteFile(inner_dir + "/orders.db", "the shop's orders\n");

  // A claim of the outer class whose directory, shop/data, holds the inner volume's.
  c.api.CreateYaml(TenantClaim("shop", "around", "outer", {{"group", "data"}}));
  REQUIRE(Eventually([&] { return HasEvent(c.api, "shop", "around", "ProvisioningFailed", "PersistentVolume " + inner_pv); }));
  INFO(EventLines(c.api, "shop", "around"));
  CHECK(HasEvent(c.api, "shop", "around", "ProvisioningFailed",
                 "(claim shop/data, Bound) uses " + inner_dir + ", inside " + c.pv_dir + "/shop/data"));
  CHECK(Phase(c.api.Claim("shop", "around")) == "Pending");
  // Deleting the refused claim takes nothing with it.
  REQUIRE(c.api.Delete(ClaimsOf("shop") + "around").code == 200);
  REQUIRE(Eventually([&] { return !c.api.Claim("shop", "around").is<picojson::object>(); }));
  CHECK(ReadFile(inner_dir + "/orders.db") == "the shop's orders\n");

  // The other way: an outer volume first (shop/web), then an inner claim inside it.
  c.api.CreateYaml(TenantClaim("shop", "site", "outer", {{"group", "web"}}));
  REQUIRE(WaitBound(c.api, "shop", "site"));
  const std::string outer_pv = VolumeOf(c.api, "shop", "site");
  WriteFile(c.pv_dir + "/shop/web/index.html", "<h1>shop</h1>\n");
  c.api.CreateYaml(TenantClaim("shop", "assets", "inner", {{"group", "web"}}));
  REQUIRE(Eventually([&] { return HasEvent(c.api, "shop", "assets", "ProvisioningFailed", "PersistentVolume " + outer_pv); }));
  CHECK(HasEvent(c.api, "shop", "assets", "ProvisioningFailed",
                 "uses " + c.pv_dir + "/shop/web, around " + c.pv_dir + "/shop/web/assets"));
  CHECK(Phase(c.api.Claim("shop", "assets")) == "Pending");
  CHECK_FALSE(Exists(c.pv_dir + "/shop/web/assets"));
  CHECK(ReadFile(c.pv_dir + "/shop/web/index.html") == "<h1>shop</h1>\n");
  CHECK(c.api.Denials().empty());
}

// Issue 53, 3: an archive-for value that cannot be read keeps the archive for ever, as its
// event says; the next passes leave it.
TEST_CASE("onDelete archive: a PV whose archive-for annotation reads \"3 days\" is archived to keep, and stays",
          "[e2e][archive][guards]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("archived", "Delete", "hostpath-provisioner.io/hostpath",
                             "  onDelete: archive\n  archiveFor: 1h\n"));
  c.api.CreateYaml(ClassYaml("brief", "Delete", "hostpath-provisioner.io/hostpath", "  onDelete: archive\n  archiveFor: 2s\n"));
  c.Start({{"RESYNC_PERIOD", "1"}});  // an archive pass every second
  c.api.CreateYaml(ClaimYaml("default", "edited", "archived", "1Mi"));
  REQUIRE(WaitBound(c.api, "default", "edited"));
  const std::string pv = VolumeOf(c.api, "default", "edited");
  const std::string dir_name = "default-edited-" + pv;
  WriteFile(c.pv_dir + "/" + dir_name + "/data.txt", "keep me\n");
  // Someone allowed to edit PVs writes a duration the provisioner cannot read.
  REQUIRE(Patch(c.api, "/api/v1/persistentvolumes/" + pv,
                R"({"metadata":{"annotations":{"hostpath-provisioner.io/archive-for":"3 days"}}})")
              .code == 200);
  REQUIRE(c.api.Delete(ClaimsOf("default") + "edited").code == 200);
  REQUIRE(Eventually([&] { return !c.api.Volume(pv).is<picojson::object>(); }));
  std::vector<std::string> archives = ListDir(c.pv_dir + "/.archive");
  REQUIRE(archives.size() == 1);
  const std::string name = archives[0];
  const std::string kept = c.pv_dir + "/.archive/" + name;
  INFO(EventLines(c.api, "default", pv));
  CHECK(name.rfind(dir_name + "--", 0) == 0);
  CHECK(name.substr(name.size() - 6) == "--keep");
  CHECK(ReadFile(kept + "/data.txt") == "keep me\n");
  CHECK(HasEvent(c.api, "default", pv, "VolumeArchived",
                 "annotation hostpath-provisioner.io/archive-for unreadable"));
  CHECK(HasEvent(c.api, "default", pv, "VolumeArchived", "; it is kept until removed by hand"));

  // A volume archived for 2 s after it: once a pass has removed that one, passes have come and
  // gone past the edited one's archiving.
  c.api.CreateYaml(ClaimYaml("default", "marker", "brief", "1Mi"));
  REQUIRE(WaitBound(c.api, "default", "marker"));
  const std::string marker = "default-marker-" + VolumeOf(c.api, "default", "marker");
  REQUIRE(c.api.Delete(ClaimsOf("default") + "marker").code == 200);
  REQUIRE(Eventually([&] { return c.prov->Log().find("removed archive " + c.pv_dir + "/.archive/" + marker + "--") != std::string::npos; },
                     seconds(60)));
  CHECK(ReadFile(kept + "/data.txt") == "keep me\n");
  CHECK(ListDir(c.pv_dir + "/.archive") == std::vector<std::string>{name});
}

// Issue 53, 8: a GET with a body is refused unread, at once, however slowly the body comes.
TEST_CASE("the probe endpoint: a GET /healthz with a chunked body, or a Content-Length, gets 413 and Connection: close",
          "[e2e][endpoint][guards]") {
  Cluster c;
  c.Start();
  REQUIRE(Eventually([&] { return c.prov->Http("/healthz").code == 200; }));
  for (const std::string head : {"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                                 "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"}) {
    INFO(head);
    int fd = Connect(c.prov->metrics_port());
    REQUIRE(fd >= 0);
    REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
    // A byte of the body every 2 s, until the answer comes (30 s at most: the body never ends,
    // so an endpoint that reads it would never answer).
    std::string answer;
    for (int round = 0; round < 15; ++round) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 2000) > 0) {
        char buf[1024];
        for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<size_t>(n));
        break;
      }
      ::send(fd, "1", 1, MSG_NOSIGNAL);
    }
    ::close(fd);
    INFO("answer: " << answer);
    CHECK(answer.rfind("HTTP/1.1 413 ", 0) == 0);
    CHECK(answer.find("\r\nConnection: close\r\n") != std::string::npos);
    CHECK(answer.find("a request here has no body") != std::string::npos);
  }
  CHECK(c.prov->Http("/healthz").code == 200);
}

// Issue 53, 2: a PV pinned to another node holds no directory here, even unlabelled (made
// before the node label) and so in this instance's cache.
TEST_CASE("pathPattern, node-aware: another node's old unlabelled PV does not keep a claim of the same name from this node",
          "[e2e][pattern][nodes][guards]") {
  if (!Nodes::CanShare()) {
    WARN("skipped: needs root, for a mount namespace per instance (the same PV_DIR on every node)");
    return;
  }
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("keep", "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n"));
  for (const char* node : {"node-a", "node-b"}) n.api->RegisterNode(node);
  // node-a's "data", released and kept (Retain), made by a version before the node label; its
  // directory is node-a's. node-a's instance is not running (it would label the PV at start).
  ::mkdir(n.Root("node-a").c_str(), 0755);
  ::mkdir((n.Root("node-a") + "/default").c_str(), 0755);
  ::mkdir((n.Root("node-a") + "/default/data").c_str(), 0755);
  WriteFile(n.Root("node-a") + "/default/data/hello.txt", "on node-a\n");
  n.api->CreateYaml(OldVolumeYaml("pvc-old", "node-a", n.SharedRoot() + "/default/data", "1Gi",
                                  "    hostpath-provisioner.io/dir: default/data\n",
                                  "  storageClassName: keep\n  claimRef:\n    namespace: default\n    name: data\n"
                                  "    uid: 0e1d2c3b-0000-4000-8000-00000000000a\n"
                                  "  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n"
                                  "        - key: kubernetes.io/hostname\n          operator: In\n          values: [node-a]\n"));
  REQUIRE(Eventually([&] { return Phase(n.api->Volume("pvc-old")) == "Released"; }));
  n.StartShared("node-b");
  REQUIRE(Eventually([&] { return CachedVolumes(*n.instances["node-b"]) == 1; }));  // the old PV, unlabelled

  // A claim "data" whose pod the scheduler places on node-b: a new directory there.
  n.Claim("data", "keep");
  n.api->CreateYaml(PodYaml("app", "data", "node-b"));
  const bool bound = n.WaitBound("data");
  INFO(EventLines(*n.api, "default", "data") << n.instances["node-b"]->Log());
  REQUIRE(bound);
  const picojson::value pv = n.api->Volume(n.VolumeOf("data"));
  CHECK(n.VolumeOf("data") != "pvc-old");
  CHECK(AffinityNode(pv) == "node-b");
  CHECK(pv.get("spec").get("hostPath").get("path").to_str() == n.SharedRoot() + "/default/data");
  CHECK(Exists(n.Root("node-b") + "/default/data"));
  CHECK(ListDir(n.Root("node-b") + "/default/data").empty());
  CHECK(ReadFile(n.Root("node-a") + "/default/data/hello.txt") == "on node-a\n");
  CHECK(Phase(n.api->Volume("pvc-old")) == "Released");
  CHECK(n.api->Denials().empty());
}

// Issue 53, 4: a class that appears sends its claims to the dispatcher, which labels them
// again: here nothing else writes the claim. A claim restored with its old annotations (the
// provisioner's, and the old cluster's node, node-c, which has no instance now) before its
// class: labelled node-c until the class, a pathPattern one, says any node may act on it. (The
// fake's PV controller, like the real one, writes nothing to a claim annotated already.)
TEST_CASE("node-aware: a claim made before its class is labelled again and bound once the class is created",
          "[e2e][nodes][dispatch][guards]") {
  if (!Nodes::CanShare()) {
    WARN("skipped: needs root, for a mount namespace per instance (the same PV_DIR on every node)");
    return;
  }
  Nodes n;
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  // node-b holds the claim's data from the old cluster.
  ::mkdir((n.Root("node-b") + "/default").c_str(), 0755);
  ::mkdir((n.Root("node-b") + "/default/data").c_str(), 0755);
  WriteFile(n.Root("node-b") + "/default/data/hello.txt", "restored\n");
  n.api->CreateYaml(TenantClaim("default", "data", "restored", {},
                              {{"volume.kubernetes.io/storage-provisioner", "hostpath-provisioner.io/hostpath"},
                               {"volume.beta.kubernetes.io/storage-provisioner", "hostpath-provisioner.io/hostpath"},
                               {"volume.kubernetes.io/selected-node", "node-c"}}));
  REQUIRE(Eventually([&] { return NodeLabel(n.ClaimJson("data")) == "node-c"; }));

  n.api->CreateYaml(WffcClassYaml("restored", "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n"));
  const bool bound = n.WaitBound("data");
  INFO(EventLines(*n.api, "default", "data") << n.instances["node-a"]->Log() << n.instances["node-b"]->Log());
  REQUIRE(bound);
  CHECK(NodeLabel(n.ClaimJson("data")) == "any");
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "node-b");
  CHECK(ReadFile(n.Root("node-b") + "/default/data/hello.txt") == "restored\n");
  CHECK(n.Events("data", "Reattached", "on node node-b") == 1);
  CHECK(n.api->Denials().empty());
}

// Issue 53, 5: a PV that moves between the informer's two selections is still known. Node-aware
// on a network share: node-a runs; old shared PVs without the node label (made by a version
// before it, as node-b's old instance did) are in node-a's "no node label" selection; node-b
// starts with the new version and labels them "shared", which moves them into node-a's other
// selection. node-a still counts their sizes: four 10 MiB PVs on a 64 MiB share that takes no
// overcommit leave no room for a 30 MiB claim, which fits only if one of them is forgotten.
TEST_CASE("node-aware, overcommit false: shared PVs another instance labels at its start still count; a claim that fits only "
          "without them is refused",
          "[e2e][nodes][shared][space][guards]") {
  Nodes n;
  Tmpfs share(n.tmp.path() + "/share", "64M");  // mounted on every "host": they share a mount namespace
  if (!share.mounted) return;
  n.api->CreateYaml(ClassYaml("strict-share", "Delete", "hostpath-provisioner.io/hostpath",
                              "  pvDir: " + share.dir + "\n  requireMount: \"true\"\n  overcommit: \"false\"\n"));
  for (const char* node : {"node-a", "node-b"}) n.api->RegisterNode(node);
  n.Start("node-a", {{"ALLOWED_PV_DIRS", share.dir}});
  Provisioner& a = *n.instances["node-a"];
  REQUIRE(Eventually([&] { return Metric(a, "hostpath_provisioner_dispatcher") == 1; }));
  const std::vector<std::string> old = {"pvc-old-1", "pvc-old-2", "pvc-old-3", "pvc-old-4"};
  for (const std::string& pv : old) {
    ::mkdir((share.dir + "/" + pv).c_str(), 0777);
    n.api->CreateYaml(OldVolumeYaml(pv, "node-b", share.dir + "/" + pv, "10Mi",
                                    "    hostpath-provisioner.io/nodes: shared\n    hostpath-provisioner.io/pv-dir: " +
                                        share.dir + "\n",
                                    "  storageClassName: strict-share\n"));
  }
  REQUIRE(Eventually([&] { return CachedVolumes(a) == 4; }));
  const double received = Metric(a, "hostpath_provisioner_watch_objects_total");
  n.Start("node-b", {{"ALLOWED_PV_DIRS", share.dir}});
  for (const std::string& pv : old) REQUIRE(Eventually([&] { return NodeLabel(n.api->Volume(pv)) == "shared"; }));
  CHECK(n.instances["node-b"]->Log().find("labelled 4 PVs made before the node label") != std::string::npos);
  n.instances.erase("node-b");  // only node-a decides below
  // node-a has had both halves of each move (a removal from one selection, an addition to the
  // other: eight watch events), and holds each PV once.
  REQUIRE(Eventually([&] { return Metric(a, "hostpath_provisioner_watch_objects_total") >= received + 8; }));
  REQUIRE(Eventually([&] { return CachedVolumes(a) == 4; }));

  n.api->CreateYaml(ClaimYaml("default", "big", "strict-share", "30Mi"));
  REQUIRE(Eventually([&] { return a.Log().find("claim default/big: ") != std::string::npos || Phase(n.ClaimJson("big")) == "Bound"; }));
  INFO(EventLines(*n.api, "default", "big") << a.Log());
  CHECK(Phase(n.ClaimJson("big")) == "Pending");
  CHECK(n.Events("big", "ProvisioningFailed", "30Mi") > 0);
  // A claim that fits beside them binds.
  n.api->CreateYaml(ClaimYaml("default", "small", "strict-share", "16Mi"));
  CHECK(n.WaitBound("small"));
}

// Issue 53, 7: the expander grows the limit of the directory the PV's annotation names only if
// it is a path a pathPattern makes.
TEST_CASE("pathPattern, btrfs limits: a PV whose directory annotation was edited is not grown; the Warning names the annotation",
          "[e2e][pattern][quota][expand][guards]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("limited", "Delete", "hostpath-provisioner.io/hostpath",
                           "  quota: \"true\"\n  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n") +
                 "allowVolumeExpansion: true\n");
  Provisioner p(api, fs.dir);
  api.CreateYaml(ClaimYaml("default", "data", "limited", "4Mi"));
  REQUIRE(WaitBound(api, "default", "data"));
  const std::string pv = VolumeOf(api, "default", "data");
  const std::string dir = fs.dir + "/default/data";
  ::mkdir((fs.dir + "/Shop_Data").c_str(), 0777);  // what the edited annotation names, there too
  const std::string pv_path = "/api/v1/persistentvolumes/" + pv;
  int asked = 0;
  for (const std::string edited : {".archive", "Shop_Data"}) {
    INFO("annotation edited to " << edited);
    REQUIRE(Patch(api, pv_path, R"({"metadata":{"annotations":{"hostpath-provisioner.io/dir":")" + edited + R"("}}})").code ==
            200);
    const std::string size = std::to_string(8 + 4 * asked++) + "Mi";
    REQUIRE(Patch(api, ClaimsOf("default") + "data", R"({"spec":{"resources":{"requests":{"storage":")" + size + R"("}}}})")
                .code == 200);
    const std::string names = "annotation hostpath-provisioner.io/dir=\"" + edited + "\"";
    const bool told = Eventually([&] { return HasEvent(api, "default", "data", "VolumeResizeFailed", names); });
    INFO(EventLines(api, "default", "data") << p.Log());
    CHECK(told);
    CHECK(api.Volume(pv).get("spec").get("capacity").get("storage").to_str() == "4Mi");
  }
  // The limit is still 4 MiB, and nothing was made or changed where the annotation pointed.
  auto [written, err] = Fill(dir + "/fill", 16 * kMiB);
  CHECK(err == EDQUOT);
  CHECK(written <= 4 * kMiB);
  CHECK_FALSE(Exists(fs.dir + "/.archive"));
  CHECK(ListDir(fs.dir + "/Shop_Data").empty());
  CHECK(api.Claim("default", "data").get("status").get("capacity").get("storage").to_str() == "4Mi");
}
