// End to end: how the real binary stops, and what a successor finds. A stop must not make the
// next leader wait: the lease goes as soon as this instance acts no more, with work in progress
// cut short (a large removal, an API call the server does not answer) and left for the
// successor; a second signal ends the stop at once; an uninstall and install right after it
// do not wait for the old pod's lease. Times are printed; the bounds are generous (well below
// the 30 s lease) so that a loaded machine does not fail them.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>

#include "base/yaml.hpp"
#include "test/support/fault_harness.hpp"

using namespace harness;
using namespace faults;
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
  std::string VolumeOf(const std::string& claim) {
    picojson::value c = api.Claim("default", claim);
    return c.is<picojson::object>() && c.get("spec").get("volumeName").is<std::string>()
               ? c.get("spec").get("volumeName").to_str()
               : "";
  }
  // Creates the claim and waits until it is bound; returns its volume's directory.
  std::string BoundDir(const std::string& claim) {
    api.CreateYaml(ClaimYaml("default", claim, "hostpath"));
    if (!Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; })) return "";
    return pv_dir + "/default-" + claim + "-" + VolumeOf(claim);
  }
  bool DeleteClaim(const std::string& claim) {
    return api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/" + claim).code == 200;
  }
};

// The Deployment's settings: leader election, with the default lease of 30 s.
const std::map<std::string, std::string> kLeaderElect = {{"LEADER_ELECT", "true"}, {"LEADER_ELECT_NAMESPACE", "kube-system"}};

bool Says(const Provisioner& p, const std::string& what) { return p.Log().find(what) != std::string::npos; }

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Links of a directory: 2 + its subdirectories (ext4, tmpfs, xfs).
nlink_t Links(const std::string& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 ? st.st_nlink : 0;
}

// Every object of `kind` in the files `kubectl create -f manifests/` reads.
std::vector<picojson::value> ManifestObjects(const std::string& kind) {
  std::vector<picojson::value> out;
  for (const char* f : {"manifests/deployment.yaml", "manifests/rbac.yaml", "manifests/storageclass.yaml"}) {
    Result<std::vector<picojson::value>> docs = ParseYamlDocuments(ReadFile(f));
    if (!docs.ok()) throw std::runtime_error(std::string(f) + ": " + docs.status().message());
    for (const picojson::value& d : *docs)
      if (d.get("kind").to_str() == kind) out.push_back(d);
  }
  return out;
}

}  // namespace

TEST_CASE("SIGTERM during a large removal and an unanswered API call: the successor leads within seconds and finishes both",
          "[e2e][shutdown]") {
  Cluster c;
  // A lease of 2 minutes (a candidate looks every 20 s): the successor can lead within the
  // test's wait of 60 s only if the first instance released it (no timing is asserted).
  std::map<std::string, std::string> env = kLeaderElect;
  env["LEADER_ELECT_LEASE_DURATION"] = "120";
  auto first = std::make_unique<Provisioner>(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return Says(*first, "became leader"); }));
  Provisioner second(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return Says(second, "waiting for lease"); }));

  const std::string stuck_dir = c.BoundDir("stuck"), big_dir = c.BoundDir("big");
  REQUIRE(!stuck_dir.empty());
  REQUIRE(!big_dir.empty());
  const std::string stuck_pv = c.VolumeOf("stuck"), big_pv = c.VolumeOf("big");
  // 100 000 files in 1 000 folders: a removal that takes a second or more.
  const int kFolders = 1000, kFiles = 100;
  const std::string many = big_dir + "/many";
  REQUIRE(::mkdir(many.c_str(), 0755) == 0);
  int not_made = 0;
  for (int d = 0; d < kFolders; ++d) {
    const std::string folder = many + "/d" + std::to_string(d);
    if (::mkdir(folder.c_str(), 0755) != 0) ++not_made;
    for (int f = 0; f < kFiles; ++f) {
      int fd = ::open((folder + "/f" + std::to_string(f)).c_str(), O_CREAT | O_WRONLY, 0644);
      if (fd < 0) ++not_made;
      else ::close(fd);
    }
  }
  REQUIRE(not_made == 0);
  REQUIRE(Links(many) == 2 + kFolders);

  // The server holds the first volume's next write (its finalizer's removal) for a minute: the
  // worker waits on it, up to the client's 30 s timeout.
  REQUIRE(Inject(c.api, {"patch", "persistentvolumes", 500, 1, 0, 60000}));
  REQUIRE(c.DeleteClaim("stuck"));
  REQUIRE(Eventually([&] { return !Exists(stuck_dir); }));  // removed; the patch is on its way
  REQUIRE(c.DeleteClaim("big"));
  REQUIRE(Eventually([&] { return Links(many) < 2 + kFolders; }));  // the removal is under way

  const auto sigterm = std::chrono::steady_clock::now();
  first->process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(first->process().WaitFor(seconds(60), &code));
  const double stop_s = SecondsSince(sigterm);
  const bool big_left = Exists(many);
  REQUIRE(Eventually([&] { return Says(second, "became leader"); }, seconds(60)));
  const double takeover_s = SecondsSince(sigterm);
  std::printf("shutdown: SIGTERM during a removal and a held request: stopped in %.2f s, successor leading after %.2f s "
              "(lease 120 s)\n", stop_s, takeover_s);
  CHECK(code == 0);
  CHECK_THAT(first->Log(), Catch::Contains("released lease"));
  CHECK(big_left);  // cut short, not waited for
  CHECK_THAT(first->Log(), Catch::Contains("stopped before the end"));

  // The successor removes the rest and deletes both volumes.
  CHECK(Eventually([&] { return !c.api.Volume(big_pv).is<picojson::object>(); }, seconds(60)));
  CHECK(Eventually([&] { return !c.api.Volume(stuck_pv).is<picojson::object>(); }, seconds(60)));
  CHECK_FALSE(Exists(big_dir));
  CHECK_FALSE(Exists(stuck_dir));
  CHECK(c.api.Denials().empty());
  // No warning about what the stop cut short reached the user.
  for (const std::string& pv : {big_pv, stuck_pv})
    for (const auto& e : c.api.EventsAbout("default", pv)) CHECK(e.get("type").to_str() != "Warning");
}

TEST_CASE("a second SIGTERM while stopping exits at once", "[e2e][shutdown]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, kLeaderElect);
  REQUIRE(Eventually([&] { return Says(p, "became leader"); }));
  // The server holds every lease update for a minute: the release at the stop waits on it.
  REQUIRE(Inject(c.api, {"update", "leases", 500, 100, 0, 60000}));
  p.process().Signal(SIGTERM);
  REQUIRE(Eventually([&] { return Says(p, "stopping on SIGTERM"); }));
  const auto again = std::chrono::steady_clock::now();
  p.process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(p.process().WaitFor(seconds(20), &code));
  std::printf("shutdown: exited %.2f s after the second SIGTERM\n", SecondsSince(again));
  CHECK(code == 1);  // the stop was abandoned: a finished one exits 0
  CHECK_THAT(p.Log(), Catch::Contains("SIGTERM again while stopping: exiting at once"));
}

TEST_CASE("uninstall, then install at once: the new instance leads without waiting for the old lease", "[e2e][shutdown]") {
  Cluster c;
  // kubectl create -f manifests/: of its objects, the fake serves the Lease (its RBAC comes from
  // manifests/rbac.yaml, and it runs no Deployment: the test runs the binary).
  auto install = [&] {
    for (const picojson::value& lease : ManifestObjects("Lease")) c.api.CreateYaml(lease.serialize());
  };
  install();
  auto old_pod = std::make_unique<Provisioner>(c.api, c.pv_dir, kLeaderElect);
  REQUIRE(Eventually([&] { return Says(*old_pod, "became leader"); }));

  // kubectl delete -f manifests/: the Role goes (every lease request of the old pod is now
  // refused, as without its Role), the Lease goes, and the Deployment's pod gets SIGTERM.
  for (const char* verb : {"get", "create", "update"}) REQUIRE(Inject(c.api, {verb, "leases", 403, 1000}));
  for (const picojson::value& lease : ManifestObjects("Lease"))
    REQUIRE(c.api.Delete(FakeApi::CollectionOf(lease) + "/" + lease.get("metadata").get("name").to_str()).code == 200);
  old_pod->process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(old_pod->process().WaitFor(seconds(60), &code));
  CHECK(code == 0);
  CHECK_FALSE(Says(*old_pod, "released lease"));  // refused, as on a real cluster

  // kubectl create -f manifests/ right after.
  REQUIRE(Control(c.api, "/fake/clear-faults"));
  install();
  const auto start = std::chrono::steady_clock::now();
  Provisioner new_pod(c.api, c.pv_dir, kLeaderElect);
  REQUIRE(Eventually([&] { return Says(new_pod, "became leader"); }, seconds(60)));
  const double lead_s = SecondsSince(start);
  std::printf("shutdown: after an uninstall and install, the new instance led after %.2f s (lease 30 s)\n", lead_s);
  CHECK_FALSE(Says(new_pod, "waiting for lease"));  // it never found the old holder's lease
  CHECK_FALSE(c.BoundDir("after-reinstall").empty());
}

TEST_CASE("uninstall: a renewal after the Lease is deleted does not make it again; the next install creates it",
          "[e2e][shutdown]") {
  Cluster c;
  auto install = [&] {  // CreateYaml fails on AlreadyExists, as kubectl create does
    for (const picojson::value& lease : ManifestObjects("Lease")) c.api.CreateYaml(lease.serialize());
  };
  install();
  std::map<std::string, std::string> env = kLeaderElect;
  env["LEADER_ELECT_LEASE_DURATION"] = "6";  // a renewal every second
  Provisioner old_pod(c.api, c.pv_dir, env);
  REQUIRE(Eventually([&] { return Says(old_pod, "became leader"); }));
  // kubectl delete -f manifests/ deletes the Lease first; the Role, still there, would let a
  // renewal create it again. The pod has lost the lease: it stops (and would be restarted).
  for (const picojson::value& lease : ManifestObjects("Lease"))
    REQUIRE(c.api.Delete(FakeApi::CollectionOf(lease) + "/" + lease.get("metadata").get("name").to_str()).code == 200);
  int code = -1;
  REQUIRE(old_pod.process().WaitFor(seconds(60), &code));
  INFO(old_pod.Log());
  CHECK(code == 1);
  CHECK(Says(old_pod, "the lease was deleted"));
  CHECK(Says(old_pod, "lost the lease: exiting"));
  for (const picojson::value& lease : ManifestObjects("Lease"))
    CHECK(c.api.Get(FakeApi::CollectionOf(lease) + "/" + lease.get("metadata").get("name").to_str()).code == 404);
  install();  // kubectl create -f manifests/ again: no AlreadyExists
  Provisioner new_pod(c.api, c.pv_dir, env);
  CHECK(Eventually([&] { return Says(new_pod, "became leader"); }));
}

TEST_CASE("events the server does not answer do not hold up the exit", "[e2e][shutdown]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  REQUIRE(Eventually([&] { return p.Http("/readyz").code == 200; }));
  // The server holds every new event for a minute: the recorder waits on one, up to the
  // client's 30 s timeout, with more queued behind it.
  REQUIRE(Inject(c.api, {"create", "events", 500, 100, 0, 60000}));
  for (const char* claim : {"a", "b", "c"}) REQUIRE(!c.BoundDir(claim).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the first event is on its way
  const auto sigterm = std::chrono::steady_clock::now();
  p.process().Signal(SIGTERM);
  int code = -1;
  REQUIRE(p.process().WaitFor(seconds(60), &code));
  const double stop_s = SecondsSince(sigterm);
  std::printf("shutdown: with events held by the server, stopped in %.2f s\n", stop_s);
  CHECK(code == 0);
  // A few seconds for what is queued, then what is in flight is cut short (not its 30 s timeout).
  CHECK(Says(p, "events not sent"));
}
