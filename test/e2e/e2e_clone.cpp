// End to end: clones (a claim whose dataSource is another claim) with the real binary against
// the fake API server: what the copy holds, byte for byte, against `cp -a`; btrfs snapshots and
// XFS reflinks on loop-mounted filesystems; each refusal; node-aware placement; a kill -9
// during a copy; the clone deleted during its copy. Root-only parts skip with a message.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/xattr.h>

#include <cstdio>
#include <string>

#include "test/support/fault_harness.hpp"
#include "test/support/harness.hpp"
#include "test/support/loopfs.hpp"
#include "test/support/nodes_harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

#define REQUIRE_MOUNTED(fs)        \
  if (!(fs).mounted) {             \
    WARN("SKIPPED: " << (fs).why); \
    return;                        \
  }

int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }

std::string Output(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

// One fake API server, a class for `root` and the provisioner, per test.
struct Cluster {
  TempDir tmp;
  std::string pv_dir;
  FakeApi api{tmp.path() + "/api"};
  explicit Cluster(const std::string& root = "", const std::string& params = "") : pv_dir(root.empty() ? tmp.path() + "/pv" : root) {
    ::mkdir(pv_dir.c_str(), 0755);
    api.CreateYaml(ClassYaml("hostpath", "Delete", "hostpath-provisioner.io/hostpath", params));
  }
  std::string VolumeOf(const std::string& claim) {
    picojson::value c = api.Claim("default", claim);
    if (!c.is<picojson::object>() || !c.get("spec").is<picojson::object>()) return "";
    return c.get("spec").get("volumeName").is<std::string>() ? c.get("spec").get("volumeName").to_str() : "";
  }
  // `limit`: long enough for a copy of many files on a busy machine (ext4's first writes of
  // many files cost much system time here).
  bool WaitBound(const std::string& claim, std::chrono::seconds limit = std::chrono::seconds(30)) {
    return Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; }, limit);
  }
  std::string DirOf(const std::string& claim) { return pv_dir + "/default-" + claim + "-" + VolumeOf(claim); }
  std::string PvAnnotation(const std::string& claim, const std::string& key) { return Annotation(api.Volume(VolumeOf(claim)), key); }
  int Events(const std::string& claim, const std::string& reason, const std::string& part = "") {
    int n = 0;
    for (const auto& e : api.EventsAbout("default", claim))
      if (e.get("reason").to_str() == reason && e.get("message").to_str().find(part) != std::string::npos) ++n;
    return n;
  }
  // Events of this type and reason on the claim, as kubectl describe lists them.
  int Typed(const std::string& claim, const std::string& type, const std::string& reason) {
    int n = 0;
    for (const auto& e : api.EventsAbout("default", claim)) n += e.get("type").to_str() == type && e.get("reason").to_str() == reason;
    return n;
  }
  // How many times events whose message holds `part` were recorded (their counts added up).
  int Times(const std::string& claim, const std::string& part) {
    int n = 0;
    for (const auto& e : api.EventsAbout("default", claim))
      if (e.get("message").to_str().find(part) != std::string::npos) n += static_cast<int>(e.get("count").get<double>());
    return n;
  }
  std::string Messages(const std::string& claim) {
    std::string all;
    for (const auto& e : api.EventsAbout("default", claim)) all += e.get("reason").to_str() + ": " + e.get("message").to_str() + "\n";
    return all;
  }
};

// What find says of every entry, sorted: type, mode, owner, size, mtime (ns), links, target.
std::string Listing(const std::string& dir) {
  return Output("cd '" + dir + "' && find . -printf '%p|%y|%m|%U|%G|%s|%T@|%n|%l\\n' | sort");
}

// A unix socket bound at `path` (left behind when the descriptor closes, as a server's is).
void MakeSocket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  ::close(fd);
}

// Fills a volume directory with every kind of entry a copy must keep, and two it must not.
void FillEverything(const std::string& d) {
  REQUIRE(Sh("cd '" + d + "' && head -c 3000000 /dev/urandom > random && : > empty && mkdir -p a/b/c && "
             "echo deep > a/b/c/file && printf 'x' > a/one && ln -s a/b/c/file relative && ln -s /etc/passwd absolute && "
             "ln -s missing dangling && echo linked > h1 && ln h1 h2 && ln h1 a/h3 && "
             "truncate -s 64M sparse && printf data | dd of=sparse bs=1 seek=1000000 conv=notrunc status=none && "
             "printf end | dd of=sparse bs=1 seek=60000000 conv=notrunc status=none && "
             "echo s > setuid && chmod 4755 setuid && mkdir sticky && chmod 1777 sticky && "
             "echo u > owned && chown 1000:1000 owned && chown -h 1000:1000 relative && chown 1001:1002 a/b && "
             "touch -m -d '2001-02-03 04:05:06.123456789' random a/b && chmod 0750 a && mkfifo fifo") == 0);
  MakeSocket(d + "/sock");
  REQUIRE(::setxattr((d + "/random").c_str(), "user.origin", "source", 6, 0) == 0);
  REQUIRE(::setxattr(d.c_str(), "user.top", "yes", 3, 0) == 0);
}

std::string Xattr(const std::string& path, const char* name) {
  char buf[256];
  ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

uint64_t Blocks(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) : ~0ULL;
}

uint64_t UsedBytes(const std::string& dir) {
  struct statvfs v {};
  ::statvfs(dir.c_str(), &v);
  return static_cast<uint64_t>(v.f_blocks - v.f_bfree) * v.f_frsize;
}

}  // namespace

TEST_CASE("a clone holds what its source held: every kind of entry, as cp -a copies it, and says so", "[e2e][clone]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: needs root (owners, tmpfs)");
    return;
  }
  TempDir t;
  Tmpfs fs(t.path() + "/pv", "256M");
  if (!fs.mounted) return;
  Cluster c(fs.dir);
  Provisioner p(c.api, c.pv_dir, {{"USAGE_SCAN_INTERVAL", "0"}});
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "100Mi"));
  REQUIRE(c.WaitBound("src"));
  const std::string src = c.DirOf("src");
  FillEverything(src);
  // The reference: cp -a of the source on the same filesystem, without the socket and the FIFO
  // (not copied), its top directory's times as the source's.
  const std::string ref = fs.dir + "/reference";
  REQUIRE(Sh("cp -a --sparse=always '" + src + "' '" + ref + "' && rm '" + ref + "/fifo' '" + ref + "/sock' && touch -r '" +
             src + "' '" + ref + "'") == 0);

  // A filesystem mounted inside the source: not copied (an empty directory stands for it).
  REQUIRE(Sh("mkdir '" + src + "/mnt' '" + ref + "/mnt' && touch -r '" + src + "' '" + ref + "' && mount -t tmpfs none '" + src +
             "/mnt' && echo other > '" + src + "/mnt/file' && chmod 0755 '" + ref + "/mnt'") == 0);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "100Mi", "src"));
  const bool bound = c.WaitBound("copy");
  Sh("umount '" + src + "/mnt'");
  REQUIRE(bound);
  const std::string copy = c.DirOf("copy");
  INFO(c.Messages("copy") << p.Log());
  CHECK(c.Events("copy", "CloneSkipped", "1 mount point inside it, whose contents are another filesystem's (mnt)") == 1);
  CHECK_FALSE(Exists(copy + "/mnt/file"));
  ::rmdir((copy + "/mnt").c_str());
  ::rmdir((ref + "/mnt").c_str());
  REQUIRE(Sh("touch -r '" + src + "' '" + ref + "' '" + copy + "'") == 0);
  CHECK(Sh("diff -r --no-dereference '" + ref + "' '" + copy + "'") == 0);
  CHECK(Listing(copy) == Listing(ref));
  struct stat h1 {}, h3 {};
  REQUIRE(::lstat((copy + "/h1").c_str(), &h1) == 0);
  REQUIRE(::lstat((copy + "/a/h3").c_str(), &h3) == 0);
  CHECK(h1.st_ino == h3.st_ino);  // still one file
  CHECK(Blocks(copy + "/sparse") <= Blocks(src + "/sparse"));  // the holes kept
  CHECK(Xattr(copy + "/random", "user.origin") == "source");
  CHECK(Xattr(copy, "user.top") == "yes");
  CHECK_FALSE(Exists(copy + "/fifo"));
  CHECK_FALSE(Exists(copy + "/sock"));

  const std::string method = c.PvAnnotation("copy", "hostpath-provisioner.io/clone-method");
  CHECK(method == "byte copy");  // tmpfs has no reflinks
  CHECK(c.PvAnnotation("copy", "hostpath-provisioner.io/cloned-from") == "default/src");
  CHECK(c.Events("copy", "Cloning", "copying default/src (volume " + c.VolumeOf("src")) == 1);
  CHECK(c.Events("copy", "Cloning", "/default-copy-" + c.VolumeOf("copy") + " by byte copy") == 1);
  CHECK(c.Events("copy", "Cloned", "copied default/src into " + c.VolumeOf("copy") + ": ") == 1);
  CHECK(c.Events("copy", "CloneSkipped", "2 sockets, FIFOs or device nodes") == 1);
  CHECK(c.Events("copy", "ProvisioningSucceeded", "a copy of default/src (byte copy)") == 1);
  // The source is untouched, and the two are independent from now on.
  CHECK(Sh("cmp -s '" + src + "/random' '" + copy + "/random'") == 0);
  WriteFile(copy + "/random", "changed");
  CHECK(Blocks(src + "/random") > 0);
  CHECK(ReadFile(src + "/a/one") == "x");
  CHECK(Eventually([&] { return Metric(p, "hostpath_provisioner_clones_total", "method=\"byte copy\",result=\"success\"") == 1; }));
  CHECK(Metric(p, "hostpath_provisioner_clone_bytes_total") >= 3000000);
  CHECK(c.api.Denials().empty());
  // Deleting the clone leaves the source.
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/copy").code == 200);
  REQUIRE(Eventually([&] { return !Exists(copy); }));
  CHECK(Exists(src + "/random"));
}

TEST_CASE("clone refusals say why, and a clone waits for a source that is not there or not bound yet", "[e2e][clone]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir, {{"ALLOWED_PV_DIRS", c.tmp.path() + "/other"}});
  // A source that does not exist yet: the clone waits, then is made once it binds.
  c.api.CreateYaml(ClaimYaml("default", "early", "hostpath", "1Gi", "later"));
  REQUIRE(Eventually([&] { return c.Events("early", "ProvisioningFailed", "the claim to clone, default/later, does not exist") > 0; }));
  CHECK(Phase(c.api.Claim("default", "early")) == "Pending");
  c.api.CreateYaml(ClaimYaml("default", "later", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("later"));
  REQUIRE(c.WaitBound("early"));
  CHECK(c.PvAnnotation("early", "hostpath-provisioner.io/cloned-from") == "default/later");

  // A source not Bound yet (of a class nobody provisions): the clone waits.
  c.api.CreateYaml(ClassYaml("nobody", "Delete", "example.com/none"));
  c.api.CreateYaml(ClaimYaml("default", "unbound", "nobody", "1Gi"));
  c.api.CreateYaml(ClaimYaml("default", "ofunbound", "hostpath", "1Gi", "unbound"));
  // Nothing is wrong: a Normal event says so, no Warning.
  REQUIRE(Eventually([&] { return c.Events("ofunbound", "WaitForCloneSource", "the claim to clone, default/unbound, is not Bound "
                                                                                "yet (phase Pending): this claim waits for it") > 0; }));
  CHECK(c.Typed("ofunbound", "Normal", "WaitForCloneSource") == 1);
  CHECK(c.Typed("ofunbound", "Warning", "ProvisioningFailed") == 0);

  // Smaller than its source: the API's rule for clones; not retried.
  c.api.CreateYaml(ClaimYaml("default", "small", "hostpath", "512Mi", "later"));
  REQUIRE(Eventually([&] { return c.Events("small", "ProvisioningFailed", "this claim asks for 512Mi, less than the capacity of "
                                                                            "the claim it clones, default/later (1.0 GiB)") > 0; }));

  // A claim of a volume this provisioner did not make (a PV made by hand, bound by name).
  c.api.CreateYaml("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: manual\nspec:\n  capacity:\n    storage: 1Gi\n"
                   "  accessModes: [ReadWriteOnce]\n  storageClassName: hostpath\n  hostPath:\n    path: /etc\n"
                   "  claimRef:\n    namespace: default\n    name: byhand\n");  // for it only
  std::string bound = ClaimYaml("default", "byhand", "hostpath", "1Gi");
  bound.replace(bound.find("  accessModes"), 0, "  volumeName: manual\n");
  c.api.CreateYaml(bound);
  REQUIRE(c.WaitBound("byhand"));
  c.api.CreateYaml(ClaimYaml("default", "ofhand", "hostpath", "1Gi", "byhand"));
  REQUIRE(Eventually([&] { return c.Events("ofhand", "ProvisioningFailed", "has volume manual, which no provisioner made") > 0; }));

  // A source under a root this instance does not serve (any more).
  const std::string other = c.tmp.path() + "/other";
  ::mkdir(other.c_str(), 0755);
  c.api.CreateYaml(ClassYaml("elsewhere", "Retain", "hostpath-provisioner.io/hostpath", "  pvDir: " + other + "\n"));
  c.api.CreateYaml(ClaimYaml("default", "far", "elsewhere", "1Gi"));
  REQUIRE(c.WaitBound("far"));
  p.process().Signal(SIGTERM);
  p.process().Wait();
  Provisioner q(c.api, c.pv_dir);  // ALLOWED_PV_DIRS no longer names it
  c.api.CreateYaml(ClaimYaml("default", "near", "hostpath", "1Gi", "far"));
  REQUIRE(Eventually([&] { return c.Events("near", "ProvisioningFailed", "is under " + other + ", which this instance does not serve") > 0; }));

  // A snapshot as the source: not ours to make.
  Reply r = c.api.Post("/api/v1/namespaces/default/persistentvolumeclaims",
                       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"snap","namespace":"default"},
                           "spec":{"storageClassName":"hostpath","accessModes":["ReadWriteOnce"],
                                   "resources":{"requests":{"storage":"1Gi"}},
                                   "dataSource":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"s1"}}})");
  REQUIRE(r.code == 201);
  REQUIRE(Eventually([&] { return c.Events("snap", "ProvisioningFailed", "names VolumeSnapshot.snapshot.storage.k8s.io \"s1\": this "
                                                                           "provisioner clones only claims") > 0; }));
  for (const char* claim : {"ofunbound", "small", "ofhand", "near", "snap"}) CHECK(Phase(c.api.Claim("default", claim)) == "Pending");
  CHECK(c.api.Denials().empty());
}

// A clone retried while its source is Pending backs off (0.5 s, 1 s, 2 s...); once its source
// binds, it must not wait out that backoff. The source is bound by hand, in the steps of the
// PV controller on a real cluster: the claim's volumeName first, a moment later its volume
// and its phase (the fake's own PV controller makes these writes back to back). Its class is
// nobody's, so that it stays Pending until then.
// Its source bound as on a real cluster: the PV first (the provisioner sees it Bound while its
// claim is still Pending), the claim's Bound phase last, no PV write after it. Only the claim's
// event can wake the clone then (issue 53: with the fake binding both sides in one round, the
// PV's event woke it too, and the test passed without the claim's wake-up).
TEST_CASE("a clone is made as soon as its source binds, however long it waited", "[e2e][clone]") {
  Cluster c;
  REQUIRE(c.api.Call("POST", "/fake/hold-claim-binding?on=true").code == 200);
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClassYaml("nobody", "Delete", "example.com/none"));
  c.api.CreateYaml(ClaimYaml("default", "src", "nobody", "1Gi"));
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  // Six tries (about 15 s): the next would come some 16 s after the last, past the wait below.
  const std::string waits = "the claim to clone, default/src, is not Bound yet";
  REQUIRE(Eventually([&] { return c.Times("copy", waits) >= 6; }, std::chrono::seconds(90)));

  const std::string uid = c.api.Claim("default", "src").get("metadata").get("uid").to_str();
  const std::string pv = "pvc-" + uid, dir = c.pv_dir + "/default-src-" + pv;
  const int tries = c.Times("copy", waits);
  // The source's volume, as this provisioner makes one, with what a pod wrote.
  ::mkdir(dir.c_str(), 0777);
  WriteFile(dir + "/hello.txt", "written before the clone\n");
  c.api.CreateYaml("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + pv +
                   "\n  annotations:\n    pv.kubernetes.io/provisioned-by: hostpath-provisioner.io/hostpath\nspec:\n"
                   "  capacity:\n    storage: 1Gi\n  accessModes: [ReadWriteOnce]\n  storageClassName: nobody\n"
                   "  persistentVolumeReclaimPolicy: Retain\n  hostPath:\n    path: " + dir + "\n    type: Directory\n"
                   "  claimRef:\n    namespace: default\n    name: src\n    uid: " + uid + "\n");
  // The PV is Bound; its event wakes the clone, which finds the claim still Pending.
  REQUIRE(Eventually([&] { return Phase(c.api.Volume(pv)) == "Bound"; }));
  REQUIRE(Eventually([&] { return c.Times("copy", waits) > tries; }));
  CHECK(Phase(c.api.Claim("default", "src")) == "Pending");
  // The claim's side: volumeName, then phase Bound; nothing writes the PV after.
  const std::string pv_version = c.api.Volume(pv).get("metadata").get("resourceVersion").to_str();
  REQUIRE(c.api.Call("POST", "/fake/hold-claim-binding?on=false").code == 200);
  REQUIRE(c.WaitBound("src"));
  const auto bound = std::chrono::steady_clock::now();
  // Generous for a busy machine, and still shorter than the backoff the clone was in.
  const bool made = c.WaitBound("copy", std::chrono::seconds(10));
  std::printf("clone: source Bound -> clone Bound in %.2f s (after %d tries while Pending)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - bound).count(), c.Times("copy", waits));
  INFO(c.Messages("copy") << p.Log());
  REQUIRE(made);
  CHECK(c.api.Volume(pv).get("metadata").get("resourceVersion").to_str() == pv_version);
  CHECK(ReadFile(c.DirOf("copy") + "/hello.txt") == "written before the clone\n");
  CHECK(c.Typed("copy", "Warning", "ProvisioningFailed") == 0);
}

TEST_CASE("a source claim being deleted is not cloned", "[e2e][clone]") {
  Cluster c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("src"));
  // A pod keeps the claim Terminating (pvc-protection).
  c.api.RegisterNode("node-a");
  c.api.CreateYaml(PodYaml("app", "src", "node-a"));
  REQUIRE(Eventually([&] { return PodNode(c.api, "app") == "node-a"; }));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/src").code == 200);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  REQUIRE(Eventually([&] { return c.Events("copy", "ProvisioningFailed", "the claim to clone, default/src, is being deleted") > 0; }));
  CHECK(Phase(c.api.Claim("default", "copy")) == "Pending");
}

TEST_CASE("btrfs: a subvolume volume is cloned with a snapshot, with its own limit", "[e2e][clone][btrfs]") {
  TempDir t;
  ::chmod(t.path().c_str(), 0755);
  LoopFs fs(t.path() + "/pv", "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Cluster c(fs.dir, "  quota: \"true\"\n");
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "40Mi"));
  REQUIRE(c.WaitBound("src"));
  const std::string src = c.DirOf("src");
  REQUIRE(Sh("head -c 20000000 /dev/urandom > '" + src + "/data' && mkdir '" + src + "/d' && echo x > '" + src + "/d/x' && sync") == 0);
  const uint64_t before = UsedBytes(fs.dir);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "48Mi", "src"));
  REQUIRE(c.WaitBound("copy"));
  const std::string copy = c.DirOf("copy");
  INFO(c.Messages("copy") << p.Log());
  CHECK(c.PvAnnotation("copy", "hostpath-provisioner.io/clone-method") == "btrfs snapshot");
  CHECK(c.Events("copy", "Cloned", "a btrfs snapshot") == 1);
  CHECK(c.Events("copy", "Cloning", " by btrfs snapshot") == 1);
  struct stat st {};
  REQUIRE(::stat(copy.c_str(), &st) == 0);
  CHECK(st.st_ino == 256);  // a subvolume of its own
  CHECK(Sh("diff -r '" + src + "' '" + copy + "'") == 0);
  const std::string q = c.PvAnnotation("copy", "hostpath-provisioner.io/quota");
  CHECK(q.rfind("btrfs subvolume ", 0) == 0);
  CHECK(q != c.PvAnnotation("src", "hostpath-provisioner.io/quota"));
  Sh("sync");
  CHECK(UsedBytes(fs.dir) < before + 4 * kMiB);  // shares the source's extents
  // Its own limit: 48Mi, of which 20 MB are the copy's.
  auto [written, err] = Fill(copy + "/more", 64 * kMiB);
  CHECK(err == EDQUOT);
  CHECK(written <= 30 * kMiB);
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/copy").code == 200);
  REQUIRE(Eventually([&] { return !Exists(copy); }));
  CHECK(Exists(src + "/data"));
}

TEST_CASE("XFS: files are cloned with reflinks, which take no space until changed", "[e2e][clone][xfs]") {
  TempDir t;
  LoopFs fs(t.path() + "/pv", "xfs", "320M", "-m reflink=1");
  REQUIRE_MOUNTED(fs);
  Cluster c(fs.dir);
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "100Mi"));
  REQUIRE(c.WaitBound("src"));
  const std::string src = c.DirOf("src");
  REQUIRE(Sh("head -c 67108864 /dev/urandom > '" + src + "/big' && echo small > '" + src + "/small' && sync") == 0);
  const uint64_t before = UsedBytes(fs.dir);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "100Mi", "src"));
  REQUIRE(c.WaitBound("copy"));
  INFO(c.Messages("copy") << p.Log());
  CHECK(c.PvAnnotation("copy", "hostpath-provisioner.io/clone-method") == "reflink copy");
  CHECK(c.Events("copy", "Cloning", " by reflink copy where the filesystem has them") == 1);
  CHECK(Sh("cmp -s '" + src + "/big' '" + c.DirOf("copy") + "/big'") == 0);
  Sh("sync");
  CHECK(UsedBytes(fs.dir) < before + 8 * kMiB);  // 64 MiB copied, next to no space taken
}

TEST_CASE("node-aware: a clone is made on its source's node; a pod scheduled elsewhere is told where to run", "[e2e][clone][nodes]") {
  Nodes n;
  n.api->CreateYaml(WffcClassYaml("wffc"));
  n.Start("node-a");
  n.Start("node-b");
  n.Claim("src", "hostpath", "hostpath-provisioner.io/node", "node-a");
  REQUIRE(n.WaitBound("src"));
  const std::string src = n.Root("node-a") + "/default-src-" + n.VolumeOf("src");
  WriteFile(src + "/f", "on a");
  // Immediate, no node named: on node-a, where the data is.
  n.api->CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  REQUIRE(n.WaitBound("copy"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("copy"))) == "node-a");
  CHECK(ReadFile(n.Root("node-a") + "/default-copy-" + n.VolumeOf("copy") + "/f") == "on a");
  CHECK(ListDir(n.Root("node-b")).empty());
  // node-b also sees the clone (it names no node), but its watch holds none of node-a's claims:
  // it reads the source through the API and leaves the clone to node-a, saying nothing to the
  // user (not "the claim to clone is not found"), whether it looked before the binding or not.
  CHECK(n.Events("copy", "ProvisioningFailed") == 0);
  // WaitForFirstConsumer, the pod scheduled on node-b: sent back, saying where it must run.
  n.api->CreateYaml(ClaimYaml("default", "wcopy", "wffc", "1Gi", "src"));
  n.SelectNode("wcopy", "node-b");
  REQUIRE(Eventually([&] {
    return n.Events("wcopy", "ProvisioningFailed", "whose volume is on node node-a: a clone is made where its source's data is, so "
                                                   "the pod that uses it must run on node node-a") > 0;
  }));
  CHECK(Eventually([&] { return Annotation(n.ClaimJson("wcopy"), "volume.kubernetes.io/selected-node").empty(); }));
  n.SelectNode("wcopy", "node-a");
  REQUIRE(n.WaitBound("wcopy"));
  CHECK(AffinityNode(n.api->Volume(n.VolumeOf("wcopy"))) == "node-a");
  CHECK(ListDir(n.Root("node-b")).empty());
  CHECK(n.api->Denials().empty());
}

namespace {

// The volumes of the cases below, which copy 20,000 files, on an ext4 of their own when loop
// devices are there: a clone's syncfs then flushes that filesystem alone, not all that the other
// tests and processes on the machine wrote to the one under /tmp (these cases took 50 to 170 s
// on a busy machine). Without loop devices, /tmp as before. lost+found stays out of the root.
struct OwnExt4 {
  TempDir t;
  LoopFs fs{(::chmod(t.path().c_str(), 0755), t.path() + "/fs"), "ext4", "4G", "-N 200000"};
  std::string Root() const { return fs.mounted ? fs.dir + "/pv" : ""; }
};

// A source volume with `files` files of 4 KiB in 100 directories: a copy that takes a while.
void ManyFiles(const std::string& dir, int files) {
  const std::string block(4096, 'x');
  int made = 0;
  for (int d = 1; d <= 100; ++d) ::mkdir((dir + "/" + std::to_string(d)).c_str(), 0755);
  for (int i = 0; i < files; ++i) {
    const std::string path = dir + "/" + std::to_string(i % 100 + 1) + "/" + std::to_string(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    made += fd >= 0 && ::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size());
    ::close(fd);
  }
  REQUIRE(made == files);
}

std::string TempOf(Cluster& c, const std::string& claim) {
  return c.pv_dir + "/.clone-pvc-" + c.api.Claim("default", claim).get("metadata").get("uid").to_str();
}

}  // namespace

TEST_CASE("kill -9 during a copy: the half copy never shows as the volume, and the copy starts again", "[e2e][clone]") {
  OwnExt4 own;
  Cluster c(own.Root());
  auto p = std::make_unique<Provisioner>(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("src"));
  ManyFiles(c.DirOf("src"), 20000);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  const std::string temp = TempOf(c, "copy");
  REQUIRE(Eventually([&] { return Exists(temp); }, std::chrono::seconds(30)));
  ::kill(p->process().pid(), SIGKILL);
  p->process().Wait();
  if (!c.VolumeOf("copy").empty() || !Exists(temp)) {
    WARN("SKIPPED: the copy ended before the kill");
    return;
  }
  CHECK(c.VolumeOf("copy").empty());
  const std::string dir = c.pv_dir + "/default-copy-pvc-" + c.api.Claim("default", "copy").get("metadata").get("uid").to_str();
  CHECK_FALSE(Exists(dir));  // only the temporary name holds the half copy
  p = std::make_unique<Provisioner>(c.api, c.pv_dir);
  const bool bound = c.WaitBound("copy", std::chrono::seconds(180));
  INFO(c.Messages("copy") << p->Log());
  REQUIRE(bound);
  CHECK_FALSE(Exists(temp));
  CHECK(Sh("diff -r '" + c.DirOf("src") + "' '" + c.DirOf("copy") + "'") == 0);
}

TEST_CASE("a clone deleted during its copy: the copy stops and what was copied goes", "[e2e][clone]") {
  OwnExt4 own;
  Cluster c(own.Root());
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("src"));
  ManyFiles(c.DirOf("src"), 20000);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  const std::string temp = TempOf(c, "copy");
  REQUIRE(Eventually([&] { return Exists(temp); }, std::chrono::seconds(30)));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/copy").code == 200);
  INFO(p.Log());
  CHECK(Eventually([&] { return !Exists(temp); }, std::chrono::seconds(180)));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK(ListDir(c.pv_dir).size() == 1);  // the source's only
  CHECK(c.VolumeOf("copy").empty());
  // Other claims were served meanwhile, and the provisioner goes on.
  c.api.CreateYaml(ClaimYaml("default", "after", "hostpath", "1Gi"));
  CHECK(c.WaitBound("after"));
}

TEST_CASE("a source deleted during a copy of it is removed only once the copy is complete", "[e2e][clone]") {
  OwnExt4 own;
  Cluster c(own.Root());
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("src"));
  const std::string src = c.DirOf("src");
  ManyFiles(src, 20000);
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  REQUIRE(Eventually([&] { return Exists(TempOf(c, "copy")); }, std::chrono::seconds(30)));
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/src").code == 200);
  const bool bound = c.WaitBound("copy", std::chrono::seconds(180));
  INFO(p.Log());
  REQUIRE(bound);
  int files = 0;
  for (int d = 1; d <= 100; ++d) files += static_cast<int>(ListDir(c.DirOf("copy") + "/" + std::to_string(d)).size());
  CHECK(files == 20000);  // whole, though its source went meanwhile
  CHECK(Eventually([&] { return !Exists(src); }, std::chrono::seconds(180)));
}

TEST_CASE("a copy that does not fit the free space, or the clone's enforced size, is refused and leaves nothing", "[e2e][clone]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: needs root (tmpfs, btrfs)");
    return;
  }
  {
    TempDir t;
    Tmpfs fs(t.path() + "/pv", "64M");
    if (!fs.mounted) return;
    Cluster c(fs.dir);
    Provisioner p(c.api, c.pv_dir);
    // A 10Mi claim holding 40 MB (its size is not enforced): a clone of it fits the check of its
    // size, but its copy does not fit what is left.
    c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "10Mi"));
    REQUIRE(c.WaitBound("src"));
    REQUIRE(Sh("head -c 40000000 /dev/zero > '" + c.DirOf("src") + "/big'") == 0);
    c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "10Mi", "src"));
    REQUIRE(Eventually([&] { return c.Events("copy", "ProvisioningFailed", "the copy does not fit in the free space under " + fs.dir) > 0; }));
    INFO(c.Messages("copy"));
    CHECK(Phase(c.api.Claim("default", "copy")) == "Pending");
    CHECK(ListDir(fs.dir).size() == 1);  // the source: the half copy is gone
    CHECK(Eventually([&] { return Metric(p, "hostpath_provisioner_clones_total", "result=\"failure\"") >= 1; }));
  }
  TempDir t;
  ::chmod(t.path().c_str(), 0755);
  LoopFs fs(t.path() + "/pv", "btrfs", "300M");
  REQUIRE_MOUNTED(fs);
  REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
  Cluster c(fs.dir);
  c.api.CreateYaml(ClassYaml("limited", "Delete", "hostpath-provisioner.io/hostpath", "  quota: \"true\"\n"));
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "10Mi"));
  REQUIRE(c.WaitBound("src"));
  REQUIRE(Sh("head -c 30000000 /dev/urandom > '" + c.DirOf("src") + "/big'") == 0);
  c.api.CreateYaml(ClaimYaml("default", "copy", "limited", "16Mi", "src"));
  const bool refused = Eventually([&] { return c.Events("copy", "ProvisioningFailed", "and the clone's size is 16.0 MiB; the copy does "
                                                                                      "not fit in the clone's enforced size: create the "
                                                                                      "claim again asking for more") > 0; });
  INFO(c.Messages("copy") << p.Log());
  REQUIRE(refused);
  CHECK(Phase(c.api.Claim("default", "copy")) == "Pending");
  CHECK(ListDir(fs.dir).size() == 1);
  CHECK(LoopFs::Sh("btrfs subvolume list " + fs.dir + " | grep -q clone") != 0);
}

namespace {

// A btrfs root with qgroups, and classes that enforce a size ("limited", as the Cluster's
// "hostpath"), "maybe" (quota auto) and "free" (quota false), all of which may grow.
struct BtrfsClasses {
  TempDir t;
  LoopFs fs{(::chmod(t.path().c_str(), 0755), t.path() + "/pv"), "btrfs", "300M"};
  std::unique_ptr<Cluster> c;
  BtrfsClasses() {
    if (!fs.mounted) return;
    REQUIRE(LoopFs::Sh("btrfs quota enable " + fs.dir) == 0);
    c = std::make_unique<Cluster>(fs.dir, "  quota: \"true\"\n");
    for (const auto& [name, quota] : {std::pair<const char*, const char*>{"limited", "true"}, {"maybe", "auto"}, {"free", "false"}})
      c->api.CreateYaml(ClassYaml(name, "Delete", "hostpath-provisioner.io/hostpath", std::string("  quota: \"") + quota + "\"\n") +
                        "allowVolumeExpansion: true\n");
  }
};

}  // namespace

TEST_CASE("btrfs: a snapshot clone names each subvolume nested in its source in CloneSkipped", "[e2e][clone][btrfs][nested]") {
  BtrfsClasses b;
  REQUIRE_MOUNTED(b.fs);
  Cluster& c = *b.c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "limited", "16Mi"));
  REQUIRE(c.WaitBound("src"));
  const std::string src = c.DirOf("src");
  REQUIRE(Fill(src + "/top", kMiB).second == 0);
  REQUIRE(MakeSubvolumeAsUser(src, "inner") == 0);
  REQUIRE(MakeSubvolumeAsUser(src + "/inner", "deeper") == 0);
  REQUIRE(Fill(src + "/inner/data", kMiB).second == 0);
  c.api.CreateYaml(ClaimYaml("default", "copy", "limited", "16Mi", "src"));
  REQUIRE(c.WaitBound("copy"));
  INFO(c.Messages("copy") << p.Log());
  CHECK(c.PvAnnotation("copy", "hostpath-provisioner.io/clone-method") == "btrfs snapshot");
  CHECK(c.Events("copy", "CloneSkipped", "2 btrfs subvolumes made inside it, whose contents are not in the clone") == 1);
  CHECK(c.Events("copy", "CloneSkipped", ": inner, inner/deeper)") == 1);
  CHECK(Exists(c.DirOf("copy") + "/top"));
  CHECK_FALSE(Exists(c.DirOf("copy") + "/inner/data"));
}

TEST_CASE("btrfs: a snapshot clone's limit is its own class's: none, or its own size for true and auto, raised as it grows",
          "[e2e][clone][btrfs]") {
  BtrfsClasses b;
  REQUIRE_MOUNTED(b.fs);
  Cluster& c = *b.c;
  Provisioner p(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "limited", "8Mi"));
  REQUIRE(c.WaitBound("src"));
  REQUIRE(Fill(c.DirOf("src") + "/data", 4 * kMiB).second == 0);
  c.api.CreateYaml(ClaimYaml("default", "free", "free", "8Mi", "src"));
  c.api.CreateYaml(ClaimYaml("default", "grown", "limited", "8Mi", "src"));
  c.api.CreateYaml(ClaimYaml("default", "auto", "maybe", "24Mi", "src"));
  REQUIRE(c.WaitBound("free"));
  REQUIRE(c.WaitBound("grown"));
  REQUIRE(c.WaitBound("auto"));
  INFO(c.Messages("free") << c.Messages("grown") << c.Messages("auto") << p.Log());
  for (const char* clone : {"free", "grown", "auto"})
    CHECK(c.PvAnnotation(clone, "hostpath-provisioner.io/clone-method") == "btrfs snapshot");

  // quota "false": no limit at all, not the source's 8 MiB.
  auto [free_written, free_err] = Fill(c.DirOf("free") + "/more", 64 * kMiB);
  CHECK(free_err == 0);
  CHECK(free_written == 64 * kMiB);
  CHECK(c.PvAnnotation("free", "hostpath-provisioner.io/quota").empty());

  // quota "true", grown to 64Mi: writes go past the 8 MiB it was made with.
  REQUIRE(c.api.Call("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/grown",
                     R"({"spec":{"resources":{"requests":{"storage":"64Mi"}}}})", "application/merge-patch+json")
              .code == 200);
  REQUIRE(Eventually([&] { return c.Events("grown", "VolumeResizeSuccessful") > 0; }));
  auto [grown_written, grown_err] = Fill(c.DirOf("grown") + "/more", 32 * kMiB);
  CHECK(grown_err == 0);
  CHECK(grown_written == 32 * kMiB);

  // quota "auto": its own 24Mi, not the source's 8 MiB, and not unlimited.
  auto [auto_written, auto_err] = Fill(c.DirOf("auto") + "/more", 12 * kMiB);
  CHECK(auto_err == 0);
  CHECK(auto_written == 12 * kMiB);
  auto [over, over_err] = Fill(c.DirOf("auto") + "/over", 64 * kMiB);
  CHECK(over_err == EDQUOT);
  CHECK(4 * kMiB + auto_written + over <= 24 * kMiB);
  CHECK(c.PvAnnotation("auto", "hostpath-provisioner.io/quota").rfind("btrfs subvolume ", 0) == 0);
}

TEST_CASE("a complete clone whose PV was never made (a crash) goes once its claim is gone", "[e2e][clone]") {
  Cluster c;
  auto p = std::make_unique<Provisioner>(c.api, c.pv_dir);
  c.api.CreateYaml(ClaimYaml("default", "src", "hostpath", "1Gi"));
  REQUIRE(c.WaitBound("src"));
  REQUIRE(Sh("echo data > '" + c.DirOf("src") + "/file'") == 0);
  REQUIRE(faults::Inject(c.api, {"create", "persistentvolumes", 500, 100000}));
  c.api.CreateYaml(ClaimYaml("default", "copy", "hostpath", "1Gi", "src"));
  const std::string uid = c.api.Claim("default", "copy").get("metadata").get("uid").to_str();
  const std::string dir = c.pv_dir + "/default-copy-pvc-" + uid;
  REQUIRE(Eventually([&] { return Exists(dir + "/file"); }));  // renamed into place: complete
  ::kill(p->process().pid(), SIGKILL);
  p->process().Wait();
  REQUIRE(c.VolumeOf("copy").empty());
  REQUIRE(c.api.Delete("/api/v1/namespaces/default/persistentvolumeclaims/copy").code == 200);
  REQUIRE(faults::Control(c.api, "/fake/clear-faults"));
  // Data no claim wants, in a directory no PV ever named: not to be confused with a Retain
  // volume whose PV was deleted, whose data stays.
  const std::string kept = c.pv_dir + "/default-kept-pvc-00000000-0000-0000-0000-000000000001";
  REQUIRE(Sh("mkdir '" + kept + "' && echo mine > '" + kept + "/file'") == 0);
  p = std::make_unique<Provisioner>(c.api, c.pv_dir);
  INFO(p->Log());
  REQUIRE(Eventually([&] { return !Exists(dir); }));
  CHECK(Exists(c.DirOf("src") + "/file"));
  CHECK(Exists(kept + "/file"));
  CHECK(ListDir(c.pv_dir).size() == 2);  // the source's and the kept one: no marker left either
}
