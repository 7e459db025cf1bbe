// End to end: the real binary against the fake API server over HTTPS, checked through the
// API (objects, events) and on disk (directories, files).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>

#include "test/support/harness.hpp"
#include "base/text.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

// One fake API server, the bundled StorageClass, and a PV root, per test.
struct Cluster {
  TempDir tmp;
  std::string pv_dir = tmp.path() + "/pv";
  FakeApi api{tmp.path() + "/api"};
  Cluster() {
    ::mkdir(pv_dir.c_str(), 0755);
    api.CreateYaml(ReadFile("manifests/storageclass.yaml"));
  }
  std::string VolumeOf(const std::string& ns, const std::string& claim) {
    picojson::value c = api.Claim(ns, claim);
    return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>()
               ? c.get("spec").get("volumeName").to_str()
               : "";
  }
  bool WaitBound(const std::string& ns, const std::string& claim) {
    return Eventually([&] { return Phase(api.Claim(ns, claim)) == "Bound"; });
  }
  std::string DirOf(const std::string& ns, const std::string& claim) {
    return pv_dir + "/" + ns + "-" + claim + "-" + VolumeOf(ns, claim);
  }
};

// Is there an event about the object with this reason and a message containing `part`?
bool HasEvent(FakeApi& api, const std::string& ns, const std::string& name, const std::string& reason,
              const std::string& part) {
  for (const auto& e : api.EventsAbout(ns, name))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

int CountWithReason(const std::vector<picojson::value>& events, const std::string& reason) {
  int n = 0;
  for (const auto& e : events)
    if (e.get("reason").to_str() == reason) ++n;
  return n;
}

}  // namespace

TEST_CASE("a claim of the bundled class is bound to a new PV with its directory", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ReadFile("examples/test-claim.yaml"));
  REQUIRE(c.WaitBound("default", "hostpath-test-claim"));

  std::string pv_name = c.VolumeOf("default", "hostpath-test-claim");
  picojson::value claim = c.api.Claim("default", "hostpath-test-claim");
  CHECK(pv_name == "pvc-" + claim.get("metadata").get("uid").to_str());
  picojson::value pv = c.api.Volume(pv_name);
  CHECK(Phase(pv) == "Bound");
  CHECK(pv.get("metadata").get("annotations").get("pv.kubernetes.io/provisioned-by").to_str() ==
        "hostpath-provisioner.io/hostpath");
  CHECK(pv.get("spec").get("capacity").get("storage").to_str() == "64Mi");  // the example claim's size
  CHECK(pv.get("spec").get("persistentVolumeReclaimPolicy").to_str() == "Delete");
  CHECK(pv.get("spec").get("storageClassName").to_str() == "hostpath");
  CHECK(pv.get("spec").get("hostPath").get("type").to_str() == "Directory");
  std::string dir = c.DirOf("default", "hostpath-test-claim");
  CHECK(pv.get("spec").get("hostPath").get("path").to_str() == dir);

  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 07777) == 0777);

  std::vector<picojson::value> events;
  REQUIRE(Eventually([&] {
    events = c.api.EventsAbout("default", "hostpath-test-claim");
    return CountWithReason(events, "ProvisioningSucceeded") > 0;
  }));
  CHECK(CountWithReason(events, "ProvisioningSucceeded") == 1);
  for (const auto& e : events)
    if (e.get("reason").to_str() == "ProvisioningSucceeded") {
      CHECK_THAT(e.get("message").to_str(), Catch::Contains(pv_name));
      CHECK_THAT(e.get("message").to_str(), Catch::Contains(dir));
      CHECK(e.get("type").to_str() == "Normal");
    }
  CHECK(c.api.Denials().empty());
}

TEST_CASE("deleting a claim of a Delete volume removes its PV and directory", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "scratch", "hostpath"));
  REQUIRE(c.WaitBound("default", "scratch"));
  std::string pv_name = c.VolumeOf("default", "scratch");
  std::string dir = c.DirOf("default", "scratch");
  WriteFile(dir + "/data.txt", "written by a pod\n");
  ::mkdir((dir + "/sub").c_str(), 0700);
  WriteFile(dir + "/sub/more.txt", "more\n");

  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/scratch").code == 200);
  CHECK(Eventually([&] { return !c.api.Volume(pv_name).is<picojson::object>(); }));
  CHECK_FALSE(Exists(dir));
  CHECK(Exists(c.pv_dir));
  CHECK(c.api.Denials().empty());
}

TEST_CASE("a Retain volume keeps its PV (Released) and its data", "[e2e]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("keep", "Retain"));
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "precious", "keep"));
  REQUIRE(c.WaitBound("default", "precious"));
  std::string pv_name = c.VolumeOf("default", "precious");
  std::string dir = c.DirOf("default", "precious");
  WriteFile(dir + "/db.sqlite", "important\n");
  CHECK(c.api.Volume(pv_name).get("spec").get("persistentVolumeReclaimPolicy").to_str() == "Retain");

  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/precious").code == 200);
  REQUIRE(Eventually([&] { return Phase(c.api.Volume(pv_name)) == "Released"; }));
  // A later Delete claim going through proves the provisioner has seen the Released PV.
  c.api.CreateYaml(ClaimYaml("default", "barrier", "hostpath"));
  REQUIRE(c.WaitBound("default", "barrier"));
  std::string barrier_pv = c.VolumeOf("default", "barrier");
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/barrier").code == 200);
  REQUIRE(Eventually([&] { return !c.api.Volume(barrier_pv).is<picojson::object>(); }));

  CHECK(Phase(c.api.Volume(pv_name)) == "Released");
  CHECK(ReadFile(dir + "/db.sqlite") == "important\n");
}

TEST_CASE("PV_RECLAIM_POLICY overrides the class", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, {{"PV_RECLAIM_POLICY", "Retain"}});
  c.api.CreateYaml(ClaimYaml("default", "kept", "hostpath"));
  REQUIRE(c.WaitBound("default", "kept"));
  CHECK(c.api.Volume(c.VolumeOf("default", "kept")).get("spec").get("persistentVolumeReclaimPolicy").to_str() == "Retain");
}

TEST_CASE("a restart in the middle converges: every claim bound once, deleted ones cleaned", "[e2e]") {
  Cluster c;
  auto first = std::make_unique<Provisioner>(c.api, c.pv_dir);
  for (int i = 0; i < 5; ++i) c.api.CreateYaml(ClaimYaml("default", "before-" + std::to_string(i), "hostpath"));
  for (int i = 0; i < 5; ++i) REQUIRE(c.WaitBound("default", "before-" + std::to_string(i)));
  std::string gone_pv = c.VolumeOf("default", "before-0");
  std::string gone_dir = c.DirOf("default", "before-0");
  first->process().Signal(SIGKILL);
  first->process().Wait();
  first.reset();

  // While it is down: new claims, and a deleted one.
  for (int i = 0; i < 5; ++i) c.api.CreateYaml(ClaimYaml("default", "during-" + std::to_string(i), "hostpath"));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/before-0").code == 200);
  REQUIRE(Eventually([&] { return Phase(c.api.Volume(gone_pv)) == "Released"; }));

  Provisioner second(c.api, c.pv_dir);
  for (int i = 0; i < 5; ++i) CHECK(c.WaitBound("default", "during-" + std::to_string(i)));
  CHECK(Eventually([&] { return !c.api.Volume(gone_pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(gone_dir));
  Reply pvs = c.api.Get("/api/v1/persistentvolumes");
  CHECK(pvs.json.get("items").get<picojson::array>().size() == 9);
  for (int i = 1; i < 5; ++i) CHECK(Exists(c.DirOf("default", "before-" + std::to_string(i))));
}

TEST_CASE("claims of other provisioners are left alone", "[e2e]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("local-path", "Delete", "rancher.io/local-path"));
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "not-mine", "local-path"));
  c.api.CreateYaml(ClaimYaml("default", "mine", "hostpath"));
  REQUIRE(c.WaitBound("default", "mine"));
  CHECK(Phase(c.api.Claim("default", "not-mine")) == "Pending");
  for (const auto& e : c.api.EventsAbout("default", "not-mine"))
    CHECK(e.get("source").get("component").to_str() != "hostpath-provisioner");
}

TEST_CASE("a claim that cannot be served gets one ProvisioningFailed event whose count grows", "[e2e]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("odd", "Delete", "hostpath-provisioner.io/hostpath", "  size: \"10\"\n"));
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "wants-odd", "odd"));
  picojson::value failed;
  REQUIRE(Eventually(
      [&] {
        for (const auto& e : c.api.EventsAbout("default", "wants-odd"))
          if (e.get("reason").to_str() == "ProvisioningFailed" && e.get("count").get<double>() >= 2) {
            failed = e;
            return true;
          }
        return false;
      },
      seconds(30)));
  CHECK(failed.get("type").to_str() == "Warning");
  CHECK_THAT(failed.get("message").to_str(), Catch::Contains("unknown parameter \"size\""));
  CHECK(CountWithReason(c.api.EventsAbout("default", "wants-odd"), "ProvisioningFailed") == 1);
  CHECK(Phase(c.api.Claim("default", "wants-odd")) == "Pending");
}

TEST_CASE("a claim annotated for us but without a class gets one event, not one per retry", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  REQUIRE(c.api.Post("/api/v1/namespaces/default/persistentvolumeclaims", R"({"apiVersion":"v1",
    "kind":"PersistentVolumeClaim","metadata":{"name":"classless","namespace":"default","annotations":
    {"volume.beta.kubernetes.io/storage-provisioner":"hostpath-provisioner.io/hostpath"}},
    "spec":{"storageClassName":"","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})").code == 201);
  REQUIRE(Eventually([&] { return CountWithReason(c.api.EventsAbout("default", "classless"), "ProvisioningFailed") > 0; }));
  std::this_thread::sleep_for(seconds(5));  // retries with backoff would come at about 0.5, 1, 2 and 4 s
  std::vector<picojson::value> events = c.api.EventsAbout("default", "classless");
  REQUIRE(CountWithReason(events, "ProvisioningFailed") == 1);
  for (const auto& e : events) {
    CHECK(e.get("count").get<double>() == 1);
    CHECK_THAT(e.get("message").to_str(), Catch::Contains("names no StorageClass"));
  }
}

TEST_CASE("a full volume root is reported as full, not as a permission problem", "[e2e]") {
  Cluster c;
  // A filesystem with no inode left: mkdir fails with ENOSPC.
  if (::mount("tmpfs", c.pv_dir.c_str(), "tmpfs", 0, "nr_inodes=1,size=1m") != 0) {
    WARN("SKIPPED: cannot mount a tmpfs here: " << strerror(errno));
    return;
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{c.pv_dir};
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "no-room", "hostpath", "1Ki"));  // fits: the inodes are what is short
  REQUIRE(Eventually([&] { return HasEvent(c.api, "default", "no-room", "ProvisioningFailed", "No space left"); }));
  for (const auto& e : c.api.EventsAbout("default", "no-room")) {
    if (e.get("reason").to_str() != "ProvisioningFailed") continue;
    CHECK_THAT(e.get("message").to_str(), Catch::Contains("is full: free some space"));
    CHECK_THAT(e.get("message").to_str(), !Catch::Contains("writable"));
  }
}

TEST_CASE("PV_DIR renamed or removed and made anew while running: nothing is done there, and /healthz fails", "[e2e]") {
  for (const bool rename : {true, false}) {
    INFO((rename ? "renamed" : "removed"));
    Cluster c;
    Provisioner p(c.api, c.pv_dir);
    REQUIRE(Eventually([&] { return p.Http("/healthz").code == 200; }));
    const std::string old_dir = c.pv_dir + ".old";
    REQUIRE((rename ? ::rename(c.pv_dir.c_str(), old_dir.c_str()) : ::rmdir(c.pv_dir.c_str())) == 0);
    REQUIRE(::mkdir(c.pv_dir.c_str(), 0755) == 0);
    c.api.CreateYaml(ClaimYaml("default", "moved", "hostpath"));
    REQUIRE(Eventually([&] { return HasEvent(c.api, "default", "moved", "ProvisioningFailed", "PV_DIR"); }));
    CHECK(p.Http("/healthz").code == 500);
    CHECK_THAT(p.Http("/healthz").body, Catch::Contains("no longer the directory") || Catch::Contains("removed"));
    CHECK(ListDir(c.pv_dir).empty());
    if (rename) CHECK(ListDir(old_dir).empty());
    CHECK(Phase(c.api.Claim("default", "moved")) == "Pending");
  }
}

TEST_CASE("PV_DIR replaced while running: claims and volumes of other provisioners get no event from us", "[e2e]") {
  Cluster c;
  c.api.CreateYaml(ClassYaml("csi", "Delete", "csi.example.com"));
  Provisioner p(c.api, c.pv_dir, {{"RESYNC_PERIOD", "1"}});
  REQUIRE(Eventually([&] { return p.Http("/healthz").code == 200; }));
  REQUIRE(::rename(c.pv_dir.c_str(), (c.pv_dir + ".old").c_str()) == 0);
  REQUIRE(::mkdir(c.pv_dir.c_str(), 0755) == 0);
  // Another driver's pending claim and a volume someone made by hand (Available): each resync
  // pass (every second here) hands them to a worker, which must find them not ours first.
  c.api.CreateYaml(ClaimYaml("default", "theirs", "csi"));
  c.api.CreateYaml("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: by-hand\nspec:\n  capacity:\n"
                   "    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n  storageClassName: manual\n"
                   "  hostPath:\n    path: /srv/by-hand\n");
  // Ours is told, again at every pass (the event's count grows): by then several passes went
  // over theirs too.
  c.api.CreateYaml(ClaimYaml("default", "ours", "hostpath"));
  auto count = [&](const std::string& name) {
    for (const auto& e : c.api.EventsAbout("default", name))
      if (e.get("message").to_str().find("PV_DIR") != std::string::npos) return static_cast<int>(e.get("count").get<double>());
    return 0;
  };
  REQUIRE(Eventually([&] { return count("ours") >= 4; }));
  for (const char* name : {"theirs", "by-hand"}) {
    INFO(name);
    for (const auto& e : c.api.EventsAbout("default", name))
      CHECK(e.get("source").get("component").to_str() != "hostpath-provisioner");
  }
  CHECK(Phase(c.api.Claim("default", "theirs")) == "Pending");
}

namespace {

// The peak resident memory of a process (VmHWM), in KiB; 0 if unknown.
long PeakRssKib(pid_t pid) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

}  // namespace

TEST_CASE("many big claims of another class at start: memory stays under the Deployment's limit", "[e2e]") {
  Cluster c;
  // 300 claims of a class that does not exist, each with 200 annotations of 1 KB (about 61 MB
  // in all): what any tenant can make in its own namespace.
  const std::string kilobyte(1000, 'x');
  for (int i = 0; i < 300; ++i) {
    std::string annotations;
    for (int a = 0; a < 200; ++a) annotations += std::string(a ? "," : "") + "\"example.com/a" + std::to_string(a) + "\":\"" + kilobyte + "\"";
    REQUIRE(c.api.Post("/api/v1/namespaces/default/persistentvolumeclaims",
                       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"big-)" + std::to_string(i) +
                           R"(","annotations":{)" + annotations + R"(}},"spec":{"storageClassName":"nope",)"
                           R"("accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})").code == 201);
  }
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "normal", "hostpath"));
  if (!c.WaitBound("default", "normal")) FAIL(p.Log());
  const long peak_kib = PeakRssKib(p.process().pid());
  INFO("peak resident memory: " << peak_kib << " KiB");
  CHECK(peak_kib > 0);
  // A sanitizer's shadow memory and redzones say nothing of the shipped binary's footprint.
  if (std::getenv("ASAN_OPTIONS") == nullptr && std::getenv("TSAN_OPTIONS") == nullptr)
    CHECK(peak_kib < 64 * 1024);  // manifests/deployment.yaml: limits.memory 64Mi
}

TEST_CASE("a PV claiming to be ours but pointing outside the root is refused, never removed", "[e2e]") {
  Cluster c;
  std::string victim = c.tmp.path() + "/victim";
  ::mkdir(victim.c_str(), 0755);
  WriteFile(victim + "/passwd", "root:x:0:0\n");
  Provisioner p(c.api, c.pv_dir);
  std::string pv = R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pvc-evil",
    "annotations":{"pv.kubernetes.io/provisioned-by":"hostpath-provisioner.io/hostpath"}},
    "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Delete",
    "storageClassName":"hostpath","hostPath":{"path":")" +
                   victim + R"("},
    "claimRef":{"namespace":"default","name":"gone","uid":"00000000-dead-beef-0000-000000000000"}}})";
  REQUIRE(c.api.Post("/api/v1/persistentvolumes", pv).code == 201);
  REQUIRE(Eventually([&] {
    for (const auto& e : c.api.EventsAbout("default", "pvc-evil"))
      if (e.get("reason").to_str() == "VolumeFailedDelete") return true;
    return false;
  }));
  CHECK(ReadFile(victim + "/passwd") == "root:x:0:0\n");
  CHECK(c.api.Volume("pvc-evil").is<picojson::object>());
}

namespace {

// A PV that says it is ours, with the given name, claimRef and path: what someone allowed to
// create PVs could make.
std::string ImpostorPv(const std::string& name, const std::string& claim, const std::string& uid,
                       const std::string& path) {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name + R"(",
    "annotations":{"pv.kubernetes.io/provisioned-by":"hostpath-provisioner.io/hostpath"}},
    "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Delete",
    "storageClassName":"hostpath","hostPath":{"path":")" + path + R"("},
    "claimRef":{"namespace":"default","name":")" + claim + R"(","uid":")" + uid + R"("}}})";
}

}  // namespace

TEST_CASE("a PV whose name and claim recompute to another claim's directory never removes it", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "c2", "hostpath"));
  REQUIRE(c.WaitBound("default", "c2"));
  const std::string live = c.VolumeOf("default", "c2");  // pvc-<uid>
  const std::string dir = c.DirOf("default", "c2");      // <pv_dir>/default-c2-pvc-<uid>
  WriteFile(dir + "/data.txt", "c2's data\n");
  // Named "<uid>" for claim "c2-pvc": "default" + "c2-pvc" + "<uid>" is c2's directory.
  const std::string bare = live.substr(4);
  REQUIRE(c.api.Post("/api/v1/persistentvolumes",
                     ImpostorPv(bare, "c2-pvc", "0b0b0b0b-0000-4000-8000-000000000000", dir)).code == 201);
  REQUIRE(Eventually([&] { return HasEvent(c.api, "default", bare, "VolumeFailedDelete", "refusing"); }));
  CHECK(ReadFile(dir + "/data.txt") == "c2's data\n");
  CHECK(Phase(c.api.Volume(live)) == "Bound");
}

TEST_CASE("a PV that uses another volume's directory keeps that volume's data when it goes", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "shared", "hostpath"));
  REQUIRE(c.WaitBound("default", "shared"));
  const std::string pv_name = c.VolumeOf("default", "shared");
  const std::string dir = c.DirOf("default", "shared");
  WriteFile(dir + "/data.txt", "also used elsewhere\n");
  // A static PV (not ours) for the same directory, e.g. to mount it in a backup pod.
  REQUIRE(c.api.Post("/api/v1/persistentvolumes", R"({"apiVersion":"v1","kind":"PersistentVolume",
    "metadata":{"name":"backup-view"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadOnlyMany"],
    "persistentVolumeReclaimPolicy":"Retain","storageClassName":"manual","hostPath":{"path":")" + dir + R"("}}})").code == 201);
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/shared").code == 200);
  REQUIRE(Eventually([&] { return HasEvent(c.api, "default", pv_name, "VolumeFailedDelete", "PersistentVolume backup-view (Available) uses " + dir + ": refusing to delete"); }));
  CHECK(ReadFile(dir + "/data.txt") == "also used elsewhere\n");
  CHECK(c.api.Volume(pv_name).is<picojson::object>());
}

TEST_CASE("a PV of the claim's name made by someone else is not taken for ours", "[e2e]") {
  Cluster c;
  c.api.CreateYaml(ClaimYaml("default", "taken", "hostpath"));
  const std::string uid = c.api.Claim("default", "taken").get("metadata").get("uid").to_str();
  const std::string elsewhere = c.tmp.path() + "/elsewhere";
  ::mkdir(elsewhere.c_str(), 0755);
  // pvc-<uid> exists already, for another claim and another path, before the provisioner runs.
  REQUIRE(c.api.Post("/api/v1/persistentvolumes",
                     ImpostorPv("pvc-" + uid, "other", "0c0c0c0c-0000-4000-8000-000000000000", elsewhere)).code == 201);
  Provisioner p(c.api, c.pv_dir);
  bool ok = Eventually([&] { return HasEvent(c.api, "default", "taken", "ProvisioningFailed", "is not the one"); });
  if (!ok) FAIL(p.Log());
  CHECK_FALSE(HasEvent(c.api, "default", "taken", "ProvisioningSucceeded", ""));
  CHECK_FALSE(Exists(c.pv_dir + "/default-taken-pvc-" + uid));  // our empty directory is not left behind
  CHECK(Phase(c.api.Claim("default", "taken")) == "Pending");
}

TEST_CASE("in-cluster mode: service-account folder and KUBERNETES_SERVICE_HOST", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir,
                {{"KUBECONFIG", ""},
                 {"SERVICEACCOUNT_DIR", c.api.dir() + "/serviceaccount"},
                 {"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                 {"KUBERNETES_SERVICE_PORT", std::to_string(c.api.port())}});
  c.api.CreateYaml(ClaimYaml("default", "incluster", "hostpath"));
  CHECK(c.WaitBound("default", "incluster"));
}

TEST_CASE("a rotated token is picked up (the old one is revoked)", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "one", "hostpath"));
  REQUIRE(c.WaitBound("default", "one"));
  REQUIRE(c.api.Call("POST", "/fake/rotate-token").code == 200);
  c.api.CreateYaml(ClaimYaml("default", "two", "hostpath"));
  CHECK(c.WaitBound("default", "two"));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/two").code == 200);
  std::string dir_one = c.DirOf("default", "one");
  CHECK(Exists(dir_one));
}

TEST_CASE("bad configuration: exit non-zero at start with one clear line", "[e2e]") {
  Cluster c;
  struct Row {
    const char* name;
    std::map<std::string, std::string> env;
    int code;
    const char* says;
  } rows[] = {
      {"reclaim policy", {{"PV_RECLAIM_POLICY", "Sometimes"}}, 2, "PV_RECLAIM_POLICY (--reclaim-policy) must be Retain or Delete"},
      {"missing root", {{"PV_DIR", "/nonexistent/hp-root"}}, 1, "PV_DIR /nonexistent/hp-root"},
      {"missing kubeconfig", {{"KUBECONFIG", "/nonexistent/kubeconfig"}}, 2, "/nonexistent/kubeconfig"},
      {"no cluster", {{"KUBECONFIG", ""}, {"SERVICEACCOUNT_DIR", "/nonexistent/sa"}}, 2, "--kubeconfig"},
  };
  for (const Row& r : rows) {
    std::map<std::string, std::string> env = r.env;
    std::string pv_dir = c.pv_dir;
    if (env.count("PV_DIR")) pv_dir = env["PV_DIR"];
    env.erase("PV_DIR");
    Provisioner p(c.api, pv_dir, env);
    int code = -1;
    INFO(r.name);
    REQUIRE(p.process().WaitFor(seconds(20), &code));
    CHECK(code == r.code);
    std::string log = p.Log();
    CHECK_THAT(log, Catch::Contains(r.says));
    CHECK(std::count(log.begin(), log.end(), '\n') == 1);
  }
}

TEST_CASE("SIGHUP is logged and ignored; SIGTERM stops it cleanly; --help and --version exit 0", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200; }));
  p.process().Signal(SIGHUP);
  REQUIRE(Eventually([&] { return p.Log().find("SIGHUP") != std::string::npos; }));
  CHECK_THAT(p.Log(), Catch::Contains("ignored"));
  c.api.CreateYaml(ClaimYaml("default", "after-hup", "hostpath"));
  CHECK(c.WaitBound("default", "after-hup"));
  p.process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(p.process().WaitFor(seconds(20), &code));
  CHECK(code == 0);
  for (const char* flag : {"--help", "--version"}) {
    Provisioner q(c.api, c.pv_dir, {}, {flag});
    REQUIRE(q.process().WaitFor(seconds(10), &code));
    INFO(flag);
    CHECK(code == 0);
    CHECK_THAT(q.Log(), Catch::Contains(std::string(flag) == "--help" ? "PV_RECLAIM_POLICY" : "hostpath-provisioner"));
  }
}

TEST_CASE("leader election: two replicas never both provision; SIGTERM hands over at once", "[e2e]") {
  Cluster c;
  std::map<std::string, std::string> env = {{"LEADER_ELECT", "true"},
                                            {"LEADER_ELECT_NAMESPACE", "kube-system"},
                                            {"LEADER_ELECT_LEASE_DURATION", "6"}};
  auto first = std::make_unique<Provisioner>(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return first->Log().find("became leader") != std::string::npos; }));
  Provisioner second(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return second.Log().find("waiting for lease") != std::string::npos; }));
  CHECK(second.Http("/readyz").code == 200);  // a standby is ready: healthy, not leading
  for (int i = 0; i < 10; ++i) c.api.CreateYaml(ClaimYaml("default", "le-" + std::to_string(i), "hostpath"));
  for (int i = 0; i < 10; ++i) REQUIRE(c.WaitBound("default", "le-" + std::to_string(i)));
  CHECK(second.Log().find("provisioned") == std::string::npos);

  first->process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(first->process().WaitFor(seconds(20), &code));
  CHECK(code == 0);
  CHECK_THAT(first->Log(), Catch::Contains("released lease"));
  REQUIRE(Eventually([&] { return second.Log().find("became leader") != std::string::npos; }, seconds(15)));
  c.api.CreateYaml(ClaimYaml("default", "after-handover", "hostpath"));
  CHECK(c.WaitBound("default", "after-handover"));
  // Exactly one PV per claim: 11 claims, 11 PVs, one success event each.
  Reply pvs = c.api.Get("/api/v1/persistentvolumes");
  CHECK(pvs.json.get("items").get<picojson::array>().size() == 11);
  for (int i = 0; i < 10; ++i) {
    auto events = c.api.EventsAbout("default", "le-" + std::to_string(i));
    CHECK(CountWithReason(events, "ProvisioningSucceeded") == 1);
  }
  CHECK(c.api.Denials().empty());
}

TEST_CASE("leader election: a leader paused past its lease acts on nothing when it resumes", "[e2e]") {
  Cluster c;
  std::map<std::string, std::string> env = {{"LEADER_ELECT", "true"},
                                            {"LEADER_ELECT_NAMESPACE", "kube-system"},
                                            {"LEADER_ELECT_LEASE_DURATION", "3"},
                                            {"RESYNC_PERIOD", "1"}};
  Provisioner first(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return first.Log().find("became leader") != std::string::npos; }));
  Provisioner second(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return second.Log().find("waiting for lease") != std::string::npos; }));

  first.process().Signal(SIGSTOP);
  REQUIRE(Eventually([&] { return second.Log().find("became leader") != std::string::npos; }, seconds(20)));
  for (int i = 0; i < 5; ++i) c.api.CreateYaml(ClaimYaml("default", "paused-" + std::to_string(i), "hostpath"));
  for (int i = 0; i < 5; ++i) REQUIRE(c.WaitBound("default", "paused-" + std::to_string(i)));
  std::this_thread::sleep_for(seconds(2));  // the paused leader's resync comes due meanwhile
  first.process().Signal(SIGCONT);

  int code = -1;
  REQUIRE(first.process().WaitFor(seconds(20), &code));  // it finds out and leaves
  CHECK(code != 0);
  CHECK_THAT(first.Log(), Catch::Contains("lost the lease"));
  for (int i = 0; i < 5; ++i) {
    INFO("paused-" << i);
    CHECK(Exists(c.DirOf("default", "paused-" + std::to_string(i))));
    CHECK(Phase(c.api.Claim("default", "paused-" + std::to_string(i))) == "Bound");
  }
  CHECK(first.Log().find("removed orphaned directory") == std::string::npos);
}

TEST_CASE("class parameters uid, gid and mode set the directory's owner and mode", "[e2e]") {
  Cluster c;
  if (::geteuid() != 0) {
    WARN("not root: chown cannot be checked");
    return;
  }
  c.api.CreateYaml(ClassYaml("owned", "Delete", "hostpath-provisioner.io/hostpath",
                             "  uid: \"1000\"\n  gid: \"2000\"\n  mode: \"0770\"\n"));
  c.api.CreateYaml(ClassYaml("bad-mode", "Delete", "hostpath-provisioner.io/hostpath", "  mode: \"rwx\"\n"));
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "app-data", "owned"));
  c.api.CreateYaml(ClaimYaml("default", "bad", "bad-mode"));
  REQUIRE(c.WaitBound("default", "app-data"));
  struct stat st {};
  REQUIRE(::stat(c.DirOf("default", "app-data").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000u);
  CHECK(st.st_gid == 2000u);
  CHECK((st.st_mode & 07777) == 0770);
  REQUIRE(Eventually([&] {
    for (const auto& e : c.api.EventsAbout("default", "bad"))
      if (e.get("reason").to_str() == "ProvisioningFailed" &&
          e.get("message").to_str().find("mode=\"rwx\" is not an octal mode") != std::string::npos)
        return true;
    return false;
  }));
}

namespace {

bool IsValidUtf8(const std::string& s) { return ValidUtf8(s) == s; }

}  // namespace

TEST_CASE("a file name that is not UTF-8 gives valid UTF-8 in logs and events", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, {{"LOG_FORMAT", "json"}});
  c.api.CreateYaml(ClaimYaml("default", "latin1", "hostpath"));
  REQUIRE(c.WaitBound("default", "latin1"));
  const std::string pv = c.VolumeOf("default", "latin1");
  const std::string stuck = c.DirOf("default", "latin1") + "/caf\xe9.txt";  // "café" in Latin-1
  WriteFile(stuck, "x");
  if (int err = SetImmutable(stuck, true); err != 0) {
    WARN("SKIPPED: cannot set the immutable flag here: " << strerror(err));
    return;
  }
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/latin1").code == 200);
  const bool reported = Eventually([&] { return HasEvent(c.api, "default", pv, "VolumeFailedDelete", "caf\xef\xbf\xbd.txt"); });
  REQUIRE(SetImmutable(stuck, false) == 0);
  CHECK(reported);
  std::istringstream log(p.Log());
  std::string line;
  int mentions = 0;
  while (std::getline(log, line)) {
    INFO(line);
    CHECK(IsValidUtf8(line));
    mentions += line.find("caf\xef\xbf\xbd.txt") != std::string::npos;
  }
  CHECK(mentions > 0);
}

namespace {

}  // namespace

TEST_CASE("a client that never finishes its request does not hold up /healthz", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  REQUIRE(Eventually([&] { return p.Http("/healthz").code == 200; }));
  int slow = Connect(p.metrics_port());
  REQUIRE(slow >= 0);
  std::atomic<bool> done{false};
  std::thread dribble([&] {  // headers that never end: a line every 300 ms
    std::string start = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    ::send(slow, start.data(), start.size(), MSG_NOSIGNAL);
    while (!done) {
      ::send(slow, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  Reply r = p.Http("/healthz");  // a fresh client: 1 s to connect, 5 s to answer
  done = true;
  dribble.join();
  ::close(slow);
  CHECK(r.code == 200);
}

TEST_CASE("a thousand idle connections to the endpoint do not use up the open files claims need", "[e2e]") {
  Cluster c;
  // Started with the common default soft limit of 1024 open files.
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  if (saved.rlim_max < 4096) {
    WARN("SKIPPED: the hard limit on open files is only " << saved.rlim_max);
    return;
  }
  rlimit low = saved;
  low.rlim_cur = 1024;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  Provisioner p(c.api, c.pv_dir);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200; }));
  std::vector<int> idle;
  for (int i = 0; i < 1100; ++i) {
    int fd = Connect(p.metrics_port());
    if (fd >= 0) idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the endpoint accepts them
  c.api.CreateYaml(ClaimYaml("default", "crowded", "hostpath"));
  const bool bound = c.WaitBound("default", "crowded");
  for (int fd : idle) ::close(fd);
  INFO(p.Log());
  CHECK(bound);
  CHECK(p.Log().find("Too many open files") == std::string::npos);
}

TEST_CASE("/metrics escapes label values as the exposition format requires", "[e2e]") {
  Cluster c;
  const std::string odd = c.tmp.path() + "/pv \"quoted\" back\\slash";
  ::mkdir(odd.c_str(), 0755);
  Provisioner p(c.api, odd);
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200; }));
  const std::string m = p.Http("/metrics").body;
  const std::string escaped = c.tmp.path() + "/pv \\\"quoted\\\" back\\\\slash";
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_root_free_bytes{root=\"" + escaped + "\"} "));
}

TEST_CASE("/metrics, /healthz and /readyz; JSON logs", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, {{"LOG_FORMAT", "json"}});
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200; }));
  CHECK(p.Http("/healthz").code == 200);
  for (int i = 0; i < 3; ++i) c.api.CreateYaml(ClaimYaml("default", "m-" + std::to_string(i), "hostpath"));
  for (int i = 0; i < 3; ++i) REQUIRE(c.WaitBound("default", "m-" + std::to_string(i)));
  std::string pv = c.VolumeOf("default", "m-0");
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/m-0").code == 200);
  REQUIRE(Eventually([&] { return !c.api.Volume(pv).is<picojson::object>(); }));
  std::string m;
  REQUIRE(Eventually([&] {
    m = p.Http("/metrics").body;
    return m.find("hostpath_provisioner_deletions_total{result=\"success\"} 1") != std::string::npos;
  }));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_provisions_total{result=\"success\"} 3"));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_provision_duration_seconds_count 3"));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_provision_duration_seconds_bucket{le=\"+Inf\"} 3"));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_api_requests_total{verb=\"create\",resource=\"persistentvolumes\",code=\"201\"} 3"));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_workqueue_depth "));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_watch_restarts_total "));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_root_free_bytes{root=\"" + c.pv_dir + "\"}"));
  CHECK_THAT(m, Catch::Contains("hostpath_provisioner_root_total_bytes{root=\"" + c.pv_dir + "\"}"));
  // Every log line is one JSON object with a UTC RFC 3339 timestamp.
  std::istringstream log(p.Log());
  std::string line;
  int lines = 0, provisioned = 0;
  while (std::getline(log, line)) {
    picojson::value v;
    INFO(line);
    REQUIRE(picojson::parse(v, line).empty());
    CHECK(v.get("ts").to_str().back() == 'Z');
    CHECK(v.get("ts").to_str().size() == 24);
    if (v.get("msg").to_str().find("provisioned default/m-") == 0) ++provisioned;
    ++lines;
  }
  CHECK(provisioned == 3);
}

TEST_CASE("kubectl delete pv of a Delete volume: data kept while bound, cleaned before the PV goes", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "doomed", "hostpath"));
  REQUIRE(c.WaitBound("default", "doomed"));
  std::string pv = c.VolumeOf("default", "doomed");
  std::string dir = c.DirOf("default", "doomed");
  WriteFile(dir + "/file", "x\n");
  REQUIRE(c.api.Delete("/api/v1/persistentvolumes/" + pv).code == 200);
  // Still bound: the PV waits (Terminating), the data stays.
  picojson::value v = c.api.Volume(pv);
  REQUIRE(v.is<picojson::object>());
  CHECK(v.get("metadata").get("deletionTimestamp").is<std::string>());
  bool has_ours = false;
  for (const auto& f : v.get("metadata").get("finalizers").get<picojson::array>())
    if (f.to_str() == "external-provisioner.volume.kubernetes.io/finalizer") has_ours = true;
  CHECK(has_ours);
  CHECK(Exists(dir + "/file"));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/doomed").code == 200);
  CHECK(Eventually([&] { return !c.api.Volume(pv).is<picojson::object>(); }));
  CHECK_FALSE(Exists(dir));
}

TEST_CASE("orphaned directories at start: empty ones removed, ones with data reported and kept", "[e2e]") {
  Cluster c;
  auto first = std::make_unique<Provisioner>(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "live", "hostpath"));
  REQUIRE(c.WaitBound("default", "live"));
  first.reset();  // SIGKILL
  std::string empty = c.pv_dir + "/default-gone-pvc-11111111-2222-4333-8444-555555555555";
  std::string full = c.pv_dir + "/default-kept-pvc-66666666-7777-4888-8999-000000000000";
  std::string other = c.pv_dir + "/my-own-backup";
  for (const auto& d : {empty, full, other}) ::mkdir(d.c_str(), 0755);
  WriteFile(full + "/data", "precious\n");
  Provisioner second(c.api, c.pv_dir);
  REQUIRE(Eventually([&] { return !Exists(empty); }));
  REQUIRE(Eventually([&] { return second.Log().find("orphaned directory " + full + " kept") != std::string::npos; }));
  CHECK(ReadFile(full + "/data") == "precious\n");
  CHECK(Exists(other));
  CHECK(Exists(c.DirOf("default", "live")));
  CHECK_THAT(second.Log(), Catch::Contains("removed orphaned directory " + empty));
}

TEST_CASE("a slow directory removal does not hold up a new claim (several workers)", "[e2e]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);  // WORKERS defaults to 4
  c.api.CreateYaml(ClaimYaml("default", "big", "hostpath"));
  REQUIRE(c.WaitBound("default", "big"));
  const std::string big_pv = c.VolumeOf("default", "big");
  const std::string big_dir = c.DirOf("default", "big");
  // 150 000 files: about a second and a half to remove on this machine's ext4.
  const std::string many = big_dir + "/many";
  REQUIRE(::mkdir(many.c_str(), 0755) == 0);
  int not_made = 0;
  for (int i = 0; i < 150000; ++i) {
    int fd = ::open((many + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd < 0) ++not_made;
    else ::close(fd);
  }
  REQUIRE(not_made == 0);

  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/big").code == 200);
  REQUIRE(Eventually([&] { return Phase(c.api.Volume(big_pv)) == "Released"; }));
  c.api.CreateYaml(ClaimYaml("default", "small", "hostpath"));
  REQUIRE(c.WaitBound("default", "small"));
  // Bound while the big volume was still being removed: its PV goes only after its directory.
  CHECK(c.api.Volume(big_pv).is<picojson::object>());
  CHECK(Exists(c.DirOf("default", "small")));

  CHECK(Eventually([&] { return !c.api.Volume(big_pv).is<picojson::object>(); }, seconds(60)));
  CHECK_FALSE(Exists(big_dir));
  CHECK(c.api.Denials().empty());
}
