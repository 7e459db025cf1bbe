// End to end: onDelete "archive" and "retain" (and archiveFor's expiry) with the real binary
// against the fake API server: what is on disk under <root>/.archive, the PV gone, the events
// on the PV, /metrics; a crash between the move and the PV's delete; a planted .archive
// symlink, or one that is not root's; nodes: all; a btrfs volume with an enforced size; a full
// one with a tenant's subvolume inside, deleted or archived.
#include <catch2/catch.hpp>

#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "decide/archive_name.hpp"
#include "test/support/fault_harness.hpp"
#include "test/support/harness.hpp"
#include "test/support/btrfs_quota_bed.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/nodes_harness.hpp"

using namespace harness;
using std::chrono::seconds;

namespace {

const std::string kClaimsPath = "/api/v1/namespaces/default/persistentvolumeclaims/";

std::string ArchiveClass(const std::string& name, const std::string& params, const std::string& reclaim = "Delete") {
  return ClassYaml(name, reclaim, "hostpath-provisioner.io/hostpath", params);
}

// A fake API server, a PV root, the classes the tests use, and a provisioner that runs the
// archive pass every second (RESYNC_PERIOD).
struct Cluster {
  TempDir tmp;
  std::string pv_dir = tmp.path() + "/pv";
  FakeApi api{tmp.path() + "/api"};
  std::map<std::string, std::string> env{{"RESYNC_PERIOD", "1"}};
  Cluster() {
    ::mkdir(pv_dir.c_str(), 0755);
    api.CreateYaml(ArchiveClass("short", "  onDelete: archive\n  archiveFor: 2s\n"));
    api.CreateYaml(ArchiveClass("forever", "  onDelete: archive\n  archiveFor: \"0\"\n"));
    api.CreateYaml(ArchiveClass("kept", "  onDelete: retain\n"));
    api.CreateYaml(ArchiveClass("kept-pv", "  onDelete: archive\n", "Retain"));
  }
  std::string VolumeOf(const std::string& claim) {
    return api.Claim("default", claim).get("spec").get("volumeName").to_str();
  }
  // Makes the claim, waits for it to bind, writes a file into its directory: its PV's name.
  std::string Bound(const std::string& claim, const std::string& cls) {
    api.CreateYaml(ClaimYaml("default", claim, cls, "1Mi"));
    REQUIRE(Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; }));
    const std::string pv = VolumeOf(claim);
    WriteFile(DirOf(claim, pv) + "/data.txt", "data of " + claim + "\n");
    return pv;
  }
  std::string DirName(const std::string& claim, const std::string& pv) { return "default-" + claim + "-" + pv; }
  std::string DirOf(const std::string& claim, const std::string& pv) { return pv_dir + "/" + DirName(claim, pv); }
  // The archives of the claim's directory in .archive.
  std::vector<std::string> ArchivesOf(const std::string& claim, const std::string& pv) {
    std::vector<std::string> out;
    for (const std::string& n : ListDir(pv_dir + "/.archive"))
      if (n.rfind(DirName(claim, pv) + "--", 0) == 0) out.push_back(n);
    return out;
  }
  bool Gone(const std::string& pv) { return !api.Volume(pv).is<picojson::object>(); }
  bool Deleted(const std::string& claim) { return api.Delete(kClaimsPath + claim).code == 200; }
};

bool HasEvent(FakeApi& api, const std::string& name, const std::string& reason, const std::string& part) {
  for (const auto& e : api.EventsAbout("default", name))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

std::string Events(FakeApi& api, const std::string& name) {
  std::string out;
  for (const auto& e : api.EventsAbout("default", name)) out += e.get("reason").to_str() + ": " + e.get("message").to_str() + "\n";
  return out;
}

}  // namespace

TEST_CASE("onDelete archive: the directory moves to .archive with its files, the PV goes, the event says where and until when",
          "[e2e][archive]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string short_pv = c.Bound("brief", "short"), forever_pv = c.Bound("lasting", "forever");
  REQUIRE(c.Deleted("brief"));
  REQUIRE(c.Deleted("lasting"));
  REQUIRE(Eventually([&] { return c.Gone(short_pv) && c.Gone(forever_pv); }));
  CHECK_FALSE(Exists(c.DirOf("brief", short_pv)));
  CHECK_FALSE(Exists(c.DirOf("lasting", forever_pv)));
  std::vector<std::string> lasting = c.ArchivesOf("lasting", forever_pv);
  REQUIRE(lasting.size() == 1);
  CHECK(lasting[0].size() > 6);
  CHECK(lasting[0].substr(lasting[0].size() - 6) == "--keep");
  CHECK(ReadFile(c.pv_dir + "/.archive/" + lasting[0] + "/data.txt") == "data of lasting\n");
  struct stat st {};
  REQUIRE(stat((c.pv_dir + "/.archive").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  INFO(Events(c.api, forever_pv));
  CHECK(HasEvent(c.api, forever_pv, "VolumeArchived",
                 "moved " + c.DirOf("lasting", forever_pv) + " to " + c.pv_dir + "/.archive/" + lasting[0] +
                     "; it is kept until removed by hand"));
  CHECK(HasEvent(c.api, short_pv, "VolumeArchived", c.pv_dir + "/.archive/" + c.DirName("brief", short_pv) + "--"));
  CHECK(HasEvent(c.api, short_pv, "VolumeArchived", "; it is removed after "));

  // archiveFor 2s: the next archive pass after that removes it; "0" stays.
  REQUIRE(Eventually([&] { return c.ArchivesOf("brief", short_pv).empty(); }, seconds(60)));
  // (the pass logs a removal once it is done: waited for, not read at once)
  CHECK(Eventually([&] {
    return p.Log().find("removed archive " + c.pv_dir + "/.archive/" + c.DirName("brief", short_pv) + "--") != std::string::npos;
  }));
  CHECK(c.ArchivesOf("lasting", forever_pv).size() == 1);
  CHECK(ReadFile(c.pv_dir + "/.archive/" + lasting[0] + "/data.txt") == "data of lasting\n");

  // /metrics: one archive left under the root, measured.
  const std::string root = "root=\"" + c.pv_dir + "\"";
  REQUIRE(Eventually([&] { return Metric(p, "hostpath_provisioner_archives", root) == 1; }));
  CHECK(Eventually([&] { return Metric(p, "hostpath_provisioner_archive_bytes", root) > 0; }));
  CHECK(c.api.Denials().empty());
}

TEST_CASE("an archive kept for ever survives restarts; one that expired while the provisioner was down goes once the "
          "new one has seen it for its archiveFor",
          "[e2e][archive]") {
  Cluster c;
  std::string short_pv, forever_pv;
  {
    Provisioner p(c.api, c.pv_dir, {{"RESYNC_PERIOD", "3600"}});  // no pass but the one at start
    short_pv = c.Bound("brief", "short");
    forever_pv = c.Bound("lasting", "forever");
    REQUIRE(c.Deleted("brief"));
    REQUIRE(c.Deleted("lasting"));
    REQUIRE(Eventually([&] { return c.Gone(short_pv) && c.Gone(forever_pv); }));
    p.process().Signal(SIGTERM);
    p.process().Wait();
  }
  REQUIRE(c.ArchivesOf("brief", short_pv).size() == 1);
  // The classes are gone too: the name alone says when.
  REQUIRE(c.api.Delete("/apis/storage.k8s.io/v1/storageclasses/short").code == 200);
  std::this_thread::sleep_for(seconds(3));  // archiveFor 2s passes while nothing runs (not an assertion on timing)
  // The new process cannot tell a clock that was wrong when the name was written from time
  // that passed while it was down: it keeps the archive until it has seen it for 2 s itself.
  Provisioner p(c.api, c.pv_dir, c.env);
  REQUIRE(Eventually([&] { return p.Log().find("archives: " + c.pv_dir + "/.archive/" + c.DirName("brief", short_pv) + "--") !=
                                  std::string::npos; }));
  CHECK_THAT(p.Log(), Catch::Contains("its time has come by this node's clock, but it goes only once this provisioner has "
                                      "seen it for as long as it is kept (0h0m2s)"));
  REQUIRE(Eventually([&] { return c.ArchivesOf("brief", short_pv).empty(); }));
  CHECK(c.ArchivesOf("lasting", forever_pv).size() == 1);
}

TEST_CASE("an archive named by a clock that was behind is kept for its archiveFor from when the provisioner first saw it",
          "[e2e][archive]") {
  Cluster c;
  // As a node whose clock was 3 days behind would have named it on archiving (archiveFor:
  // 24h): by the clock now, its time came two days ago.
  const std::string folder = c.pv_dir + "/.archive";
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  const int64_t now = std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string name = ArchiveName("default-early-pvc-1", now - 3 * 86400, 86400);
  REQUIRE(::mkdir((folder + "/" + name).c_str(), 0755) == 0);
  WriteFile(folder + "/" + name + "/data.txt", "early data\n");
  Provisioner p(c.api, c.pv_dir, c.env);  // an archive pass every second
  INFO(p.Log());
  REQUIRE(Eventually([&] {
    return p.Log().find("archives: " + folder + "/" + name + ": its time has come by this node's clock, but it goes only once "
                        "this provisioner has seen it for as long as it is kept (24h0m0s), around ") != std::string::npos;
  }));
  // Passes go on (the metrics count it, measured), and none removes it.
  const std::string root = "root=\"" + c.pv_dir + "\"";
  REQUIRE(Eventually([&] { return Metric(p, "hostpath_provisioner_archive_bytes", root) > 0; }));
  std::this_thread::sleep_for(seconds(3));  // a few more passes (not an assertion on timing)
  CHECK(ReadFile(folder + "/" + name + "/data.txt") == "early data\n");
  CHECK(p.Log().find("removed archive") == std::string::npos);
}

TEST_CASE("onDelete retain: the PV goes, the directory stays where it is, and the event says so", "[e2e][archive]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("precious", "kept");
  REQUIRE(c.Deleted("precious"));
  REQUIRE(Eventually([&] { return c.Gone(pv); }));
  CHECK(ReadFile(c.DirOf("precious", pv) + "/data.txt") == "data of precious\n");
  CHECK_FALSE(Exists(c.pv_dir + "/.archive"));
  INFO(Events(c.api, pv));
  CHECK(HasEvent(c.api, pv, "VolumeRetained", "its data stays in " + c.DirOf("precious", pv)));
  // The orphan scan (every second here) reports it, never removes it: it holds data.
  REQUIRE(Eventually([&] { return p.Log().find("orphaned directory " + c.DirOf("precious", pv) + " kept") != std::string::npos; }));
  CHECK(ReadFile(c.DirOf("precious", pv) + "/data.txt") == "data of precious\n");
}

TEST_CASE("reclaim policy Retain with onDelete archive: nothing is moved, the PV stays Released", "[e2e][archive]") {
  Cluster c;
  c.env["LOG_LEVEL"] = "2";  // to see the volume looked at, and left alone
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("held", "kept-pv");
  REQUIRE(c.Deleted("held"));
  REQUIRE(Eventually([&] { return Phase(c.api.Volume(pv)) == "Released"; }));
  // Looked at again (every resync, each second here) and left alone.
  REQUIRE(Eventually([&] { return p.Log().find("volume " + pv + ": nothing to do: reclaim policy Retain") != std::string::npos; }));
  CHECK(ReadFile(c.DirOf("held", pv) + "/data.txt") == "data of held\n");
  CHECK_FALSE(Exists(c.pv_dir + "/.archive"));
  CHECK(c.api.Volume(pv).is<picojson::object>());
  CHECK_FALSE(HasEvent(c.api, pv, "VolumeArchived", ""));
}

TEST_CASE("a crash between the move to .archive and the PV's delete: after a restart the PV goes, the archive stays whole",
          "[e2e][archive][faults]") {
  Cluster c;
  auto p = std::make_unique<Provisioner>(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("crashy", "forever");
  faults::Fault never_deleted;
  never_deleted.verb = "delete";
  never_deleted.resource = "persistentvolumes";
  never_deleted.count = 100000;
  REQUIRE(faults::Inject(c.api, never_deleted));
  REQUIRE(c.Deleted("crashy"));
  REQUIRE(Eventually([&] { return c.ArchivesOf("crashy", pv).size() == 1; }));
  p->process().Signal(SIGKILL);  // moved, and its PV not deleted
  p->process().Wait();
  CHECK_FALSE(c.Gone(pv));
  REQUIRE(faults::Control(c.api, "/fake/clear-faults"));
  p = std::make_unique<Provisioner>(c.api, c.pv_dir, c.env);
  REQUIRE(Eventually([&] { return c.Gone(pv); }));
  const std::vector<std::string> archives = c.ArchivesOf("crashy", pv);
  REQUIRE(archives.size() == 1);
  CHECK(ReadFile(c.pv_dir + "/.archive/" + archives[0] + "/data.txt") == "data of crashy\n");
  INFO(Events(c.api, pv));
  CHECK(HasEvent(c.api, pv, "VolumeArchived",
                 c.DirOf("crashy", pv) + " was already gone: archived by an earlier attempt, as " + c.pv_dir + "/.archive/" +
                     archives[0]));
  CHECK_FALSE(HasEvent(c.api, pv, "VolumeFailedDelete", ""));
}

TEST_CASE("an .archive planted as a symlink: VolumeFailedDelete, nothing moved, nothing made through it", "[e2e][archive]") {
  Cluster c;
  TempDir elsewhere;
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("target", "forever");
  REQUIRE(symlink(elsewhere.path().c_str(), (c.pv_dir + "/.archive").c_str()) == 0);
  REQUIRE(c.Deleted("target"));
  REQUIRE(Eventually([&] { return HasEvent(c.api, pv, "VolumeFailedDelete", c.pv_dir + "/.archive is not a directory"); }));
  INFO(Events(c.api, pv));
  CHECK(HasEvent(c.api, pv, "VolumeFailedDelete", "archiving " + c.DirOf("target", pv) + " failed"));
  CHECK(ReadFile(c.DirOf("target", pv) + "/data.txt") == "data of target\n");
  CHECK(ListDir(elsewhere.path()).empty());
  CHECK_FALSE(c.Gone(pv));
  // Once the symlink is replaced by the folder, the retry archives it.
  REQUIRE(unlink((c.pv_dir + "/.archive").c_str()) == 0);
  REQUIRE(Eventually([&] { return c.Gone(pv); }, seconds(120)));
  CHECK(c.ArchivesOf("target", pv).size() == 1);
}

TEST_CASE("an .archive that is not root's: nothing is moved into it nor expired from it, and the event says how to fix it",
          "[e2e][archive]") {
  Cluster c;
  // Made by someone else (a tenant with a hostPath, an admin's copy): uid 1000, readable by all.
  const std::string folder = c.pv_dir + "/.archive";
  REQUIRE(::mkdir(folder.c_str(), 0755) == 0);
  // An archive whose time has long come, there before the provisioner starts.
  const std::string old = folder + "/default-old-pvc-1--20200101T000000Z--until-20200101T000001Z";
  REQUIRE(::mkdir(old.c_str(), 0755) == 0);
  WriteFile(old + "/data.txt", "old data\n");
  REQUIRE(LoopFs::Sh("chown -R 1000:1000 " + folder) == 0);
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("target", "forever");
  REQUIRE(c.Deleted("target"));
  INFO(p.Log());
  REQUIRE(Eventually([&] { return HasEvent(c.api, pv, "VolumeFailedDelete", folder + " is owned by uid 1000, not root"); }));
  INFO(Events(c.api, pv));
  CHECK(HasEvent(c.api, pv, "VolumeFailedDelete",
                 "archiving " + c.DirOf("target", pv) + " failed: cannot use the archive folder: " + folder +
                     " is owned by uid 1000, not root: that user could read and change archived data; on the node, "
                     "chown root:root " + folder + " && chmod 0700 " + folder + " (once you trust what it holds), or move it "
                     "away; nothing moved, will retry"));
  // The archive pass (each second here) leaves it alone too, and says why.
  REQUIRE(Eventually([&] { return p.Log().find("archives: " + folder + " is owned by uid 1000, not root") != std::string::npos; }));
  CHECK(ReadFile(old + "/data.txt") == "old data\n");
  CHECK(ReadFile(c.DirOf("target", pv) + "/data.txt") == "data of target\n");
  CHECK(c.ArchivesOf("target", pv).empty());
  CHECK_FALSE(c.Gone(pv));
  // Fixed as the event says: the retry archives it, and the pass expires the old one.
  REQUIRE(LoopFs::Sh("chown root:root " + folder + " && chmod 0700 " + folder) == 0);
  REQUIRE(Eventually([&] { return c.Gone(pv); }, seconds(120)));
  CHECK(c.ArchivesOf("target", pv).size() == 1);
  CHECK(Eventually([&] { return !Exists(old); }));
}

TEST_CASE("an .archive of root's that others may read is closed (mode 0700) before anything is moved into it, and logged",
          "[e2e][archive]") {
  Cluster c;
  const std::string folder = c.pv_dir + "/.archive";
  REQUIRE(::mkdir(folder.c_str(), 0755) == 0);  // copied by an admin, 0755
  REQUIRE(::chmod(folder.c_str(), 0755) == 0);
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("target", "forever");
  REQUIRE(c.Deleted("target"));
  REQUIRE(Eventually([&] { return c.Gone(pv); }));
  INFO(p.Log());
  REQUIRE(c.ArchivesOf("target", pv).size() == 1);
  struct stat st {};
  REQUIRE(stat(folder.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(st.st_uid == 0);
  CHECK(Eventually([&] { return p.Log().find(folder + " was mode 0755: made 0700, so that only root reads archived data") != std::string::npos; }));
}

TEST_CASE("a claim that does not fit says how much the root's archives hold and how to free it", "[e2e][archive][space]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, c.env);
  const std::string pv = c.Bound("old", "forever");
  REQUIRE(c.Deleted("old"));
  REQUIRE(Eventually([&] { return c.Gone(pv); }));
  c.api.CreateYaml(ClaimYaml("default", "huge", "forever", "1Ei"));
  REQUIRE(Eventually([&] { return HasEvent(c.api, "huge", "ProvisioningFailed", c.pv_dir + "/.archive holds 1 archive ("); }));
  CHECK(HasEvent(c.api, "huge", "ProvisioningFailed", "remove those no longer needed by hand, or give the class a shorter archiveFor"));
}

TEST_CASE("nodes: all with onDelete archive: each node archives its own directory", "[e2e][archive][every]") {
  Nodes n;
  if (!Nodes::CanShare()) {
    WARN("SKIPPED: needs root, to give each instance the same PV_DIR in a mount namespace of its own");
    return;
  }
  n.api->CreateYaml(ClassYaml("everywhere", "Delete", "hostpath-provisioner.io/hostpath", "  nodes: all\n  onDelete: archive\n"));
  for (const char* node : {"node-a", "node-b"}) {
    n.api->RegisterNode(node);
    n.StartShared(node);
  }
  n.Claim("shared", "everywhere");
  REQUIRE(n.WaitBound("shared"));
  const std::string pv = n.VolumeOf("shared"), dir = "default-shared-" + pv;
  REQUIRE(Eventually([&] { return Exists(n.Root("node-a") + "/" + dir) && Exists(n.Root("node-b") + "/" + dir); }));
  // Each node holds the volume once its finalizer is on it (a node whose directory is made but
  // whose finalizer is not there yet when the claim goes removes its directory if still empty).
  auto held_by_both = [&] {
    int held = 0;
    const picojson::value f = n.api->Volume(pv).get("metadata").get("finalizers");
    if (f.is<picojson::array>())
      for (const picojson::value& x : f.get<picojson::array>())
        held += x.to_str() == "node-a/hostpath-provisioner.io" || x.to_str() == "node-b/hostpath-provisioner.io";
    return held == 2;
  };
  REQUIRE(Eventually(held_by_both));
  for (const char* node : {"node-a", "node-b"}) WriteFile(n.Root(node) + "/" + dir + "/from.txt", node);
  REQUIRE(n.api->Delete(kClaims + std::string("shared")).code == 200);
  REQUIRE(Eventually([&] { return !n.api->Volume(pv).is<picojson::object>(); }));
  for (const char* node : {"node-a", "node-b"}) {
    INFO(node);
    CHECK_FALSE(Exists(n.Root(node) + "/" + dir));
    std::vector<std::string> archives = ListDir(n.Root(node) + "/.archive");
    REQUIRE(archives.size() == 1);
    CHECK(archives[0].rfind(dir + "--", 0) == 0);
    CHECK(ReadFile(n.Root(node) + "/.archive/" + archives[0] + "/from.txt") == node);
    CHECK_THAT(n.instances[node]->Log(), Catch::Contains("moved " + n.SharedRoot() + "/" + dir + " to " + n.SharedRoot() +
                                                         "/.archive/" + archives[0]));
  }
  CHECK(HasEvent(*n.api, pv, "VolumeArchived", "on node node-a: moved "));
  CHECK(n.api->Denials().empty());
}

namespace {

// The limit on referenced bytes of btrfs qgroup `group` ("0/257"), as btrfs qgroup show gives
// it ("none" when unlimited); "" when the qgroup is not listed.
std::string QgroupLimit(const std::string& mount, const std::string& group) {
  TempDir out;
  LoopFs::Sh("btrfs qgroup show -re --raw " + mount + " > " + out.path() + "/show 2>&1");
  std::istringstream lines(ReadFile(out.path() + "/show"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string id, rfer, excl, max_rfer;
    words >> id >> rfer >> excl >> max_rfer;
    if (id == group) return max_rfer;
  }
  return "";
}

}  // namespace

TEST_CASE("a btrfs volume with an enforced size is archived without its limit, whole, and removed at expiry",
          "[e2e][archive][quota]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("limited", "Delete", "hostpath-provisioner.io/hostpath",
                           "  quota: \"true\"\n  onDelete: archive\n  archiveFor: 15s\n"));
  Provisioner p(api, fs.dir, {{"RESYNC_PERIOD", "1"}});
  api.CreateYaml(ClaimYaml("default", "db", "limited", "4Mi"));
  REQUIRE(Eventually([&] { return Phase(api.Claim("default", "db")) == "Bound"; }));
  const std::string pv = api.Claim("default", "db").get("spec").get("volumeName").to_str();
  const std::string quota = Annotation(api.Volume(pv), "hostpath-provisioner.io/quota");
  REQUIRE(quota.rfind("btrfs subvolume ", 0) == 0);
  const std::string group = "0/" + quota.substr(16);
  const std::string dir = fs.dir + "/default-db-" + pv;
  auto [written, err] = Fill(dir + "/data", 16 * kMiB);
  CHECK(err == EDQUOT);
  REQUIRE(QgroupLimit(fs.dir, group) == std::to_string(4 * kMiB));

  REQUIRE(api.Delete(kClaims + std::string("db")).code == 200);
  REQUIRE(Eventually([&] { return !api.Volume(pv).is<picojson::object>(); }));
  std::vector<std::string> archives = ListDir(fs.dir + "/.archive");
  INFO(p.Log());
  // Kept 15 s: its limit cleared (the qgroup stays until the archive goes), its data whole.
  REQUIRE(archives.size() == 1);
  struct stat st {};
  CHECK(stat((fs.dir + "/.archive/" + archives[0] + "/data").c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == written);
  CHECK(QgroupLimit(fs.dir, group) == "none");
  CHECK_THAT(p.Log(), Catch::Contains("moved " + dir + " to " + fs.dir + "/.archive/default-db-" + pv + "--"));
  REQUIRE(Eventually([&] { return ListDir(fs.dir + "/.archive").empty(); }, seconds(60)));
  CHECK(Eventually([&] { return p.Log().find("removed archive " + fs.dir + "/.archive/default-db-" + pv + "--") != std::string::npos; }));
  CHECK(ListDir(fs.dir) == std::vector<std::string>{".archive"});
  CHECK(api.Denials().empty());
}

namespace {

bool HasClaimEvent(FakeApi& api, const std::string& claim, const std::string& reason, const std::string& part) {
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) return true;
  return false;
}

// Fills the last bytes below a limit as a tenant (user 1000) can: 4 KiB files in `dir`, then
// empty ones, until the filesystem refuses (EDQUOT); that error, or another one.
int TopUp(const std::string& dir) {
  return AsUser1000([&]() -> std::pair<uint64_t, int> {
           static char page[4096];
           static bool pages = true;
           for (int i = 0; i < 100000; ++i) {
             const std::string f = dir + "/top-" + std::to_string(i);
             int fd = open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
             if (fd < 0) return {0, errno};
             // Pages while they fit; then files with nothing in them, charged only their metadata.
             if (pages && (write(fd, page, sizeof page) != sizeof page || fsync(fd) != 0)) pages = false;
             close(fd);
           }
           return {0, 0};
         })
      .second;
}

}  // namespace

TEST_CASE("a full btrfs volume with a tenant's subvolume under its limit is removed, deleted or archived and expired",
          "[e2e][archive][quota][nested]") {
  BtrfsQuotaBed bed;
  if (!bed.ready) return;
  LoopFs& fs = bed.fs;
  FakeApi& api = *bed.api;
  api.CreateYaml(ClassYaml("limited", "Delete", "hostpath-provisioner.io/hostpath", "  quota: \"true\"\n"));
  api.CreateYaml(ClassYaml("limited-archive", "Delete", "hostpath-provisioner.io/hostpath",
                           "  quota: \"true\"\n  onDelete: archive\n  archiveFor: 2s\n"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}, {"RESYNC_PERIOD", "1"}});
  std::map<std::string, std::string> dirs, pvs;
  for (const char* claim : {"gone", "kept"}) {
    api.CreateYaml(ClaimYaml("default", claim, std::string(claim) == "gone" ? "limited" : "limited-archive", "8Mi"));
    REQUIRE(Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; }));
    const std::string pv = api.Claim("default", claim).get("spec").get("volumeName").to_str();
    const std::string dir = fs.dir + "/default-" + claim + "-" + pv;
    dirs[claim] = dir;
    // The tenant (user 1000) makes a subvolume with a note in it; the usage scan puts it under
    // the volume's limit (1/ID); then the tenant fills the volume to that limit. The removal
    // empties the subvolume (first in the directory's order) while the volume is still full:
    // btrfs refuses to delete a subvolume whose parent's qgroup is at its limit, unless what
    // it freed in the subvolume makes room (a note does not).
    REQUIRE(MakeSubvolumeAsUser(dir, "escape") == 0);
    WriteFile(dir + "/escape/note", "mine\n");
    REQUIRE(Eventually([&] { return HasClaimEvent(api, claim, "NestedSubvolume", "escape"); }, seconds(60)));
    CHECK(Fill(dir + "/data", 64 * kMiB).second == EDQUOT);
    REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);
    CHECK(TopUp(dir) == EDQUOT);
    REQUIRE(LoopFs::Sh("sync -f " + dir) == 0);
    pvs[claim] = pv;
  }
  INFO(p.Log());

  const auto deleted = std::chrono::steady_clock::now();
  REQUIRE(api.Delete(kClaims + std::string("gone")).code == 200);
  REQUIRE(Eventually([&] { return !Exists(dirs["gone"]); }, seconds(60)));
  // (measured for the record, not asserted: a removal's time depends on the machine)
  WARN("the full volume's directory was gone " << std::chrono::duration<double>(std::chrono::steady_clock::now() - deleted).count()
                                               << " s after its claim's deletion");
  CHECK(Eventually([&] { return !api.Volume(pvs["gone"]).is<picojson::object>(); }));
  INFO(Events(api, pvs["gone"]));
  CHECK_FALSE(HasEvent(api, pvs["gone"], "VolumeFailedDelete", ""));

  REQUIRE(api.Delete(kClaims + std::string("kept")).code == 200);
  REQUIRE(Eventually([&] { return !Exists(dirs["kept"]); }, seconds(60)));
  // Archived, then removed once its 2 s have passed.
  CHECK(Eventually([&] { return p.Log().find("removed archive " + fs.dir + "/.archive/default-kept-") != std::string::npos; },
                   seconds(60)));
  CHECK(ListDir(fs.dir) == std::vector<std::string>{".archive"});
  CHECK(ListDir(fs.dir + "/.archive").empty());
  INFO(Events(api, pvs["kept"]));
  CHECK_FALSE(HasEvent(api, pvs["kept"], "VolumeFailedDelete", ""));
}
