// End to end, a class's pathPattern: directories named from the claim, kept apart, and found
// again by a claim made again (after a delete, in a rebuilt cluster, or before any claim: data
// copied in first). The real binary against the fake API server, checked through the API
// (PVs, claims, events) and on disk.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <memory>

#include "test/support/nodes_harness.hpp"

using namespace harness;

namespace {

constexpr const char* kPattern = "  pathPattern: \"${.PVC.namespace}/${.PVC.name}\"\n";

std::string Claims(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/"; }

// A claim manifest with labels.
std::string LabelledClaim(const std::string& name, const std::string& cls, const std::map<std::string, std::string>& labels) {
  std::string yaml = ClaimYaml("default", name, cls, "64Mi");
  std::string lines = "\n  labels:";
  for (const auto& [k, v] : labels) lines += "\n    " + k + ": \"" + v + "\"";
  yaml.replace(yaml.find("\n  namespace:"), 0, lines);
  return yaml;
}

struct Cluster {
  TempDir tmp;
  std::string pv_dir = tmp.path() + "/pv";
  std::unique_ptr<FakeApi> api = std::make_unique<FakeApi>(tmp.path() + "/api");
  std::unique_ptr<Provisioner> prov;
  explicit Cluster(const std::string& class_yaml, std::map<std::string, std::string> env = {}) {
    ::mkdir(pv_dir.c_str(), 0755);
    api->CreateYaml(class_yaml);
    prov = std::make_unique<Provisioner>(*api, pv_dir, env);
  }
  picojson::value ClaimJson(const std::string& name) { return api->Claim("default", name); }
  std::string VolumeOf(const std::string& claim) {
    picojson::value c = ClaimJson(claim);
    return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>() ? c.get("spec").get("volumeName").to_str() : "";
  }
  bool WaitBound(const std::string& claim) { return Eventually([&] { return Phase(ClaimJson(claim)) == "Bound"; }); }
  std::string HostPath(const std::string& claim) {
    return api->Volume(VolumeOf(claim)).get("spec").get("hostPath").get("path").to_str();
  }
  bool WaitEvent(const std::string& name, const std::string& reason, const std::string& part) {
    return Eventually([&] {
      for (const auto& e : api->EventsAbout("default", name))
        if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
      return false;
    });
  }
  std::string EventText(const std::string& name, const std::string& reason) {
    std::string all;
    for (const auto& e : api->EventsAbout("default", name))
      if (e.get("reason").to_str() == reason) all += e.get("message").to_str() + "\n";
    return all;
  }
  int CountVolumes() {
    Reply r = api->Get("/api/v1/persistentvolumes");
    return r.json.get("items").is<picojson::array>() ? static_cast<int>(r.json.get("items").get<picojson::array>().size()) : -1;
  }
};

}  // namespace

TEST_CASE("pathPattern: the directory is <root>/<namespace>/<claim>; deleting removes it, and its parent once empty", "[e2e][pattern]") {
  Cluster c(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", kPattern));
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  c.api->CreateYaml(ClaimYaml("default", "other", "keep", "64Mi"));
  REQUIRE(c.WaitBound("data"));
  REQUIRE(c.WaitBound("other"));
  CHECK(c.HostPath("data") == c.pv_dir + "/default/data");
  CHECK(Annotation(c.api->Volume(c.VolumeOf("data")), "hostpath-provisioner.io/dir") == "default/data");
  WriteFile(c.pv_dir + "/default/data/a.txt", "a\n");
  CHECK(c.EventText("data", "Reattached").empty());  // a new directory is no reattach

  std::string data_pv = c.VolumeOf("data"), other_pv = c.VolumeOf("other");
  REQUIRE(c.api->Delete(Claims("default") + "data").code == 200);
  REQUIRE(Eventually([&] { return !c.api->Volume(data_pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(c.pv_dir + "/default/data"));
  CHECK(ListDir(c.pv_dir + "/default") == std::vector<std::string>{"other"});
  REQUIRE(c.api->Delete(Claims("default") + "other").code == 200);
  REQUIRE(Eventually([&] { return !c.api->Volume(other_pv).is<picojson::object>(); }));
  CHECK(ListDir(c.pv_dir).empty());
  CHECK(c.api->Denials().empty());
}

TEST_CASE("pathPattern: a claim made again while its old PV is Released is told which PV to remove, then gets its files back", "[e2e][pattern]") {
  Cluster c(ClassYaml("keep", "Retain", "hostpath-provisioner.io/hostpath", kPattern));
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitBound("data"));
  const std::string old_pv = c.VolumeOf("data");
  WriteFile(c.pv_dir + "/default/data/hello.txt", "kept\n");
  REQUIRE(c.api->Delete(Claims("default") + "data").code == 200);
  REQUIRE(Eventually([&] { return Phase(c.api->Volume(old_pv)) == "Released"; }));

  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitEvent("data", "ProvisioningFailed", "PersistentVolume " + old_pv));
  CHECK_THAT(c.EventText("data", "ProvisioningFailed"), Catch::Contains("persistentVolumeReclaimPolicy") &&
                                                              Catch::Contains("kubectl delete pv " + old_pv));
  CHECK(Phase(c.ClaimJson("data")) == "Pending");
  CHECK(c.CountVolumes() == 1);

  // The user deletes the Retain PV, as the event says: the claim gets the directory and its file.
  REQUIRE(c.api->Delete("/api/v1/persistentvolumes/" + old_pv).code == 200);
  REQUIRE(c.WaitBound("data"));
  CHECK(c.VolumeOf("data") != old_pv);
  CHECK(c.HostPath("data") == c.pv_dir + "/default/data");
  CHECK(ReadFile(c.pv_dir + "/default/data/hello.txt") == "kept\n");
  CHECK_THAT(c.EventText("data", "Reattached"), Catch::Contains(c.pv_dir + "/default/data (1 files and directories"));
}

TEST_CASE("pathPattern: a rebuilt cluster that applies the same manifests gets its data back", "[e2e][pattern]") {
  const std::string cls = ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", kPattern);
  Cluster c(cls);
  c.api->CreateYaml(ClaimYaml("default", "db", "keep", "64Mi"));
  REQUIRE(c.WaitBound("db"));
  const std::string old_pv = c.VolumeOf("db");
  WriteFile(c.pv_dir + "/default/db/table", "rows\n");

  // The cluster is rebuilt: its API server's state is gone, and the provisioner starts again.
  c.prov.reset();
  c.api.reset();
  FakeApi api(c.tmp.path() + "/api2");
  Provisioner p(api, c.pv_dir);
  api.CreateYaml(cls);
  api.CreateYaml(ClaimYaml("default", "db", "keep", "64Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  CHECK(pv != old_pv);
  CHECK(api.Volume(pv).get("spec").get("hostPath").get("path").to_str() == c.pv_dir + "/default/db");
  CHECK(ReadFile(c.pv_dir + "/default/db/table") == "rows\n");
  bool told = false;
  for (const auto& e : api.EventsAbout("default", "db"))
    told = told || (e.get("reason").to_str() == "Reattached" && e.get("message").to_str().find("/default/db") != std::string::npos);
  CHECK(told);
  // Reattached, it is removed with its claim as its class says (onDelete: delete).
  REQUIRE(api.Delete(Claims("default") + "db").code == 200);
  REQUIRE(Eventually([&] { return !api.Volume(pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(c.pv_dir + "/default/db"));
}

TEST_CASE("pathPattern, onDelete archive: an archive expires while a claim of the same name reattaches a copy of it", "[e2e][pattern][archive]") {
  Cluster c(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath",
                      std::string(kPattern) + "  onDelete: archive\n  archiveFor: 3s\n"),
            {{"RESYNC_PERIOD", "1"}});
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitBound("data"));
  const std::string old_pv = c.VolumeOf("data");
  WriteFile(c.pv_dir + "/default/data/hello.txt", "v1\n");
  const std::string copy = c.tmp.path() + "/copy";  // what the user kept of it, or copied out of the archive
  REQUIRE(std::system(("cp -a " + c.pv_dir + "/default/data " + copy).c_str()) == 0);
  REQUIRE(c.api->Delete(Claims("default") + "data").code == 200);
  REQUIRE(Eventually([&] { return !c.api->Volume(old_pv).is<picojson::object>(); }));
  CHECK(Eventually([&] { return c.prov->Log().find("archived " + c.pv_dir + "/default/data") != std::string::npos; }));
  CHECK_FALSE(Exists(c.pv_dir + "/default"));  // its parent went with it, empty

  // The user puts the data back and makes the claim again, while the archive's time runs out.
  REQUIRE(std::system(("mkdir -p " + c.pv_dir + "/default && mv " + copy + " " + c.pv_dir + "/default/data").c_str()) == 0);
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitBound("data"));
  CHECK(c.WaitEvent("data", "Reattached", c.pv_dir + "/default/data"));
  REQUIRE(Eventually([&] { return ListDir(c.pv_dir + "/.archive").empty(); }));
  // (the pass logs the removal once it is done: waited for, not read at once)
  CHECK(Eventually([&] { return c.prov->Log().find("removed archive " + c.pv_dir + "/.archive/default_data--") != std::string::npos; }));
  CHECK(ReadFile(c.pv_dir + "/default/data/hello.txt") == "v1\n");
  CHECK(Phase(c.ClaimJson("data")) == "Bound");
}

TEST_CASE("pathPattern, onDelete archive: a reattached directory is archived with its claim, files and all", "[e2e][pattern][archive]") {
  Cluster c(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath",
                      std::string(kPattern) + "  onDelete: archive\n  archiveFor: \"0\"\n"));
  ::mkdir((c.pv_dir + "/default").c_str(), 0755);
  ::mkdir((c.pv_dir + "/default/data").c_str(), 0755);
  WriteFile(c.pv_dir + "/default/data/hello.txt", "v1\n");
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitBound("data"));
  const std::string pv = c.VolumeOf("data");
  REQUIRE(c.api->Delete(Claims("default") + "data").code == 200);
  REQUIRE(Eventually([&] { return !c.api->Volume(pv).is<picojson::object>(); }));
  const std::vector<std::string> archived = ListDir(c.pv_dir + "/.archive");
  REQUIRE(archived.size() == 1);
  CHECK(archived[0].rfind("default_data--", 0) == 0);
  CHECK(ReadFile(c.pv_dir + "/.archive/" + archived[0] + "/hello.txt") == "v1\n");
  CHECK_FALSE(Exists(c.pv_dir + "/default"));
}

TEST_CASE("pathPattern: a directory filled before the claim exists is the claim's, with the class's owner and mode", "[e2e][pattern]") {
  Cluster c(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath",
                      std::string(kPattern) + "  uid: \"1000\"\n  gid: \"2000\"\n  mode: \"0750\"\n"));
  ::mkdir((c.pv_dir + "/default").c_str(), 0755);
  ::mkdir((c.pv_dir + "/default/web").c_str(), 0700);
  WriteFile(c.pv_dir + "/default/web/index.html", "<h1>hello</h1>\n");
  c.api->CreateYaml(ClaimYaml("default", "web", "keep", "64Mi"));
  REQUIRE(c.WaitBound("web"));
  CHECK(c.HostPath("web") == c.pv_dir + "/default/web");
  CHECK(ReadFile(c.pv_dir + "/default/web/index.html") == "<h1>hello</h1>\n");
  struct stat st {};
  REQUIRE(::stat((c.pv_dir + "/default/web").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 2000);
  CHECK((st.st_mode & 07777) == 0750);
  CHECK_THAT(c.EventText("web", "Reattached"), Catch::Contains("1 files and directories"));
}

TEST_CASE("pathPattern: claims given the same directory: one gets it, the others are told why", "[e2e][pattern]") {
  Cluster c(ClassYaml("by-app", "Delete", "hostpath-provisioner.io/hostpath",
                      "  pathPattern: \"${.PVC.namespace}/${.PVC.labels.app}\"\n"));
  const std::vector<std::string> names = {"db-0", "db-1", "db-2", "db-3"};
  for (const auto& n : names) c.api->CreateYaml(LabelledClaim(n, "by-app", {{"app", "db"}}));
  int bound = 0;
  for (const auto& n : names) {
    INFO(n);
    REQUIRE(Eventually([&] {
      return Phase(c.ClaimJson(n)) == "Bound" || !c.EventText(n, "ProvisioningFailed").empty();
    }));
    if (Phase(c.ClaimJson(n)) == "Bound") {
      ++bound;
    } else {
      CHECK_THAT(c.EventText(n, "ProvisioningFailed"), Catch::Contains(c.pv_dir + "/default/db") &&
                                                           Catch::Contains("same directory"));
    }
  }
  CHECK(bound == 1);
  CHECK(c.CountVolumes() == 1);
  CHECK(ListDir(c.pv_dir + "/default") == std::vector<std::string>{"db"});
}

TEST_CASE("pathPattern: a label outside the rules, or missing, is named, and nothing is made", "[e2e][pattern]") {
  Cluster c(ClassYaml("by-app", "Delete", "hostpath-provisioner.io/hostpath",
                      "  pathPattern: \"${.PVC.namespace}/${.PVC.labels.app}\"\n"));
  c.api->CreateYaml(LabelledClaim("shouting", "by-app", {{"app", "My_DB"}}));
  c.api->CreateYaml(ClaimYaml("default", "unlabelled", "by-app", "64Mi"));
  REQUIRE(c.WaitEvent("shouting", "ProvisioningFailed", "label app=\"My_DB\""));
  REQUIRE(c.WaitEvent("unlabelled", "ProvisioningFailed", "has no label app"));
  CHECK(ListDir(c.pv_dir).empty());
  CHECK(c.CountVolumes() == 0);
}

TEST_CASE("pathPattern: a pattern cannot leave its root, nor a symlink lead it out", "[e2e][pattern]") {
  Cluster c(ClassYaml("escape", "Delete", "hostpath-provisioner.io/hostpath", "  pathPattern: \"../${.PVC.name}\"\n"));
  c.api->CreateYaml(ClassYaml("keep", "Delete", "hostpath-provisioner.io/hostpath", kPattern));
  c.api->CreateYaml(ClaimYaml("default", "out", "escape", "64Mi"));
  REQUIRE(c.WaitEvent("out", "ProvisioningFailed", "parameter pathPattern"));
  CHECK_FALSE(Exists(c.tmp.path() + "/out"));

  // Someone with access to the host plants a symlink where the namespace's folder goes.
  const std::string outside = c.tmp.path() + "/outside";
  ::mkdir(outside.c_str(), 0755);
  REQUIRE(::symlink(outside.c_str(), (c.pv_dir + "/default").c_str()) == 0);
  c.api->CreateYaml(ClaimYaml("default", "data", "keep", "64Mi"));
  REQUIRE(c.WaitEvent("data", "ProvisioningFailed", "symlink"));
  CHECK(ListDir(outside).empty());
  CHECK(c.CountVolumes() == 0);
}

TEST_CASE("pathPattern, node-aware: a claim reattaches on the node that has its directory", "[e2e][pattern][nodes]") {
  if (!Nodes::CanShare()) {
    WARN("skipped: needs root, for a mount namespace per instance (the same PV_DIR on every node)");
    return;
  }
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("keep", kPattern));
  n.api->CreateYaml(ClassYaml("keep-now", "Delete", "hostpath-provisioner.io/hostpath", kPattern));
  for (const char* node : {"n1", "n2"}) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  // n2 has the data of a claim "data" from before (a rebuilt cluster, or copied there).
  ::mkdir((n.Root("n2") + "/default").c_str(), 0755);
  ::mkdir((n.Root("n2") + "/default/data").c_str(), 0755);
  WriteFile(n.Root("n2") + "/default/data/hello.txt", "on n2\n");

  // Before any pod asks for it, n2 binds it: the PV pins the claim, and so the pod, to n2.
  n.Claim("data", "keep");
  if (!n.WaitBound("data")) FAIL("not bound; n2's log:\n" << n.instances["n2"]->Log());
  picojson::value pv = n.api->Volume(n.VolumeOf("data"));
  CHECK(AffinityNode(pv) == "n2");
  CHECK(n.Events("data", "Reattached", "on node n2") == 1);
  CHECK(ReadFile(n.Root("n2") + "/default/data/hello.txt") == "on n2\n");
  CHECK_FALSE(Exists(n.Root("n1") + "/default/data"));
  n.api->CreateYaml(PodYaml("app", "data"));
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "n2"; }));

  // A claim the user pins to n1 (an Immediate class) while its directory is on n2: n2 says where
  // it is. (n1's instance is stopped meanwhile: when both run, n1 may bind the claim to a new
  // directory before n2 looks, a known limit in docs/nodes.md.)
  n.instances["n1"]->process().Signal(SIGTERM);
  REQUIRE(n.instances["n1"]->process().Wait() == 0);
  ::mkdir((n.Root("n2") + "/default/web").c_str(), 0755);
  WriteFile(n.Root("n2") + "/default/web/index.html", "on n2\n");
  n.Claim("web", "keep-now", "hostpath-provisioner.io/node", "n1");
  CHECK(Eventually([&] { return n.Events("web", "ProvisioningFailed", "is on node n2") == 1; }, std::chrono::seconds(60)));
  CHECK(Phase(n.ClaimJson("web")) == "Pending");
  // n1 back: the user pinned the claim there, so it gets a new directory there; n2's stays.
  n.StartShared("n1");
  CHECK(n.WaitBound("web"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("web"))) == "n1");
  CHECK(ReadFile(n.Root("n2") + "/default/web/index.html") == "on n2\n");
  CHECK(n.Events("web", "ProvisioningFailed", "is on node n2") == 1);
  CHECK(n.api->Denials().empty());
}

TEST_CASE("pathPattern, node-aware: a claim the scheduler placed on another node is bound where its directory is", "[e2e][pattern][nodes]") {
  if (!Nodes::CanShare()) {
    WARN("skipped: needs root, for a mount namespace per instance (the same PV_DIR on every node)");
    return;
  }
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("keep", kPattern));
  for (const char* node : {"n1", "n2"}) n.api->RegisterNode(node);
  ::mkdir(n.Root("n2").c_str(), 0755);
  ::mkdir((n.Root("n2") + "/default").c_str(), 0755);
  ::mkdir((n.Root("n2") + "/default/data").c_str(), 0755);
  WriteFile(n.Root("n2") + "/default/data/hello.txt", "on n2\n");
  // The scheduler picks n1 (the first node by name) before any instance looks; n1's instance is
  // not up yet, n2's starts once the claim names n1.
  n.Claim("data", "keep");
  n.api->CreateYaml(PodYaml("app", "data"));
  REQUIRE(Eventually([&] { return Annotation(n.ClaimJson("data"), "volume.kubernetes.io/selected-node") == "n1"; }));
  n.StartShared("n2");
  if (!n.WaitBound("data")) FAIL("not bound; n2's log:\n" << n.instances["n2"]->Log());
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("data"))) == "n2");
  CHECK(Eventually([&] { return PodNode(*n.api, "app") == "n2"; }));
  CHECK(ReadFile(n.Root("n2") + "/default/data/hello.txt") == "on n2\n");
  n.StartShared("n1");
  CHECK(Eventually([&] { return n.instances["n1"]->Http("/readyz").code == 200; }));
  CHECK_FALSE(Exists(n.Root("n1") + "/default/data"));
  CHECK_THAT(n.instances["n2"]->Log(), Catch::Contains("reattaching it here, though the claim's node is n1"));
}
