// The bodies of section_capacity.hpp (the contracts are there).
#include "test/bench/section_capacity.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "base/yaml.hpp"
#include "test/bench/bursts.hpp"
#include "test/bench/claims.hpp"
#include "test/bench/provisioner.hpp"
#include "test/fake/fake_kubelet.hpp"

namespace bench {
namespace {

constexpr const char* kDriver = "hostpath.hostpath-provisioner.io";  // csidriver.yaml's, the class's provisioner
constexpr const char* kObjects = "/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities";
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kClaimBytes = 1024.0 * kMiB;  // ClaimJson's request, 1Gi

// A tmpfs of a known size mounted at `dir` for as long as it lives (a node's disk).
class TmpfsDisk {
 public:
  TmpfsDisk(const std::string& dir, const std::string& size) : dir_(dir) {
    ::mkdir(dir.c_str(), 0755);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0)
      error_ = "cannot mount a tmpfs on " + dir + " (needs root): " + std::strerror(errno);
  }
  ~TmpfsDisk() {
    if (error_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  TmpfsDisk(const TmpfsDisk&) = delete;
  TmpfsDisk& operator=(const TmpfsDisk&) = delete;
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }

 private:
  std::string dir_, error_;
};

// Creates every object of a manifest through the fake, as kubectl create -f would.
void CreateManifest(Api& admin, const std::string& path) {
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(harness::ReadFile(path));
  if (!docs.ok()) throw Failure(path + ": " + docs.status().message());
  for (const picojson::value& d : *docs) {
    Reply r = admin.Call("POST", harness::FakeApi::CollectionOf(d), d.serialize());
    if (r.code != 201) throw Failure("create " + path + ": " + std::to_string(r.code) + " " + r.body);
  }
}

// A fake as the DaemonSet install leaves it: its RBAC, its class hostpath (instead of the fake's
// own) and CSIDriver, and `nodes` nodes registered; with the class hostpath-strict too, the same
// with overcommit "false".
std::unique_ptr<Fake> CapacityFake(const std::string& dir, int nodes, bool strict) {
  auto fake = std::make_unique<Fake>(dir, std::vector<std::string>{}, "manifests/daemonset/rbac.yaml");
  auto admin = fake->Admin();
  if (Reply r = admin->Call("DELETE", "/apis/storage.k8s.io/v1/storageclasses/hostpath"); r.code != 200)
    throw Failure("delete the fake's class hostpath: " + std::to_string(r.code) + " " + r.body);
  CreateManifest(*admin, "manifests/daemonset/storageclass.yaml");
  CreateManifest(*admin, "manifests/daemonset/csidriver.yaml");
  if (strict) {
    Reply r = admin->Call("POST", "/apis/storage.k8s.io/v1/storageclasses",
                          std::string(R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":)"
                                      R"({"name":"hostpath-strict"},"provisioner":")") +
                              kDriver + R"(","reclaimPolicy":"Delete","parameters":{"overcommit":"false"},)"
                                        R"("volumeBindingMode":"WaitForFirstConsumer"})");
    if (r.code != 201) throw Failure("create the class hostpath-strict: " + std::to_string(r.code) + " " + r.body);
  }
  std::vector<std::array<std::string, 3>> requests;
  for (int i = 0; i < nodes; ++i)
    requests.push_back({"POST", "/api/v1/nodes", fake_kubelet::NodeJson("node-" + std::to_string(i))});
  SendBatches(*fake, requests, [&](size_t i, const picojson::value& res) {
    if (Code(res) != 201) throw Failure("register node-" + std::to_string(i) + ": " + res.serialize());
  });
  return fake;
}

// The published figures, by node (its topology's hostname) and class, in bytes.
std::map<std::pair<std::string, std::string>, double> Figures(Api& admin) {
  Reply r = admin.Call("GET", kObjects);
  if (r.code != 200 || !r.json.get("items").is<picojson::array>())
    throw Failure("list csistoragecapacities: " + std::to_string(r.code) + " " + r.body);
  std::map<std::pair<std::string, std::string>, double> out;
  for (const picojson::value& item : r.json.get("items").get<picojson::array>()) {
    const std::string node = Str(item, {"nodeTopology", "matchLabels", "kubernetes.io/hostname"});
    const std::string capacity = Str(item, {"capacity"});
    if (!node.empty() && !capacity.empty()) out[{node, Str(item, {"storageClassName"})}] = std::atof(capacity.c_str());
  }
  return out;
}

// node-0's figure for the class hostpath; -1 while there is none.
double Node0Figure(Api& admin) {
  auto all = Figures(admin);
  auto it = all.find({"node-0", "hostpath"});
  return it == all.end() ? -1 : it->second;
}

// The names of the objects of class `cls`.
std::set<std::string> ObjectsOf(Api& admin, const std::string& cls) {
  Reply r = admin.Call("GET", kObjects);
  std::set<std::string> out;
  if (r.code == 200 && r.json.get("items").is<picojson::array>())
    for (const picojson::value& item : r.json.get("items").get<picojson::array>())
      if (Str(item, {"storageClassName"}) == cls) out.insert(Str(item, {"metadata", "name"}));
  return out;
}

// The service account's writes (create, update, patch, delete) of csistoragecapacities in the
// fake's request log since its last reset; with `of`, those of the objects named there in *in.
long CapacityWritesInLog(const Fake& fake, const std::set<std::string>& of = {}, long* in = nullptr) {
  Reply r = fake.Admin()->Call("GET", "/fake/requests");
  if (r.code != 200 || !r.json.is<picojson::array>()) throw Failure("GET /fake/requests: " + std::to_string(r.code));
  long n = 0;
  for (const auto& rec : r.json.get<picojson::array>()) {
    const std::string verb = Str(rec, {"verb"});
    if (Str(rec, {"user"}) == kSaUser && Str(rec, {"resource"}) == "csistoragecapacities" &&
        (verb == "create" || verb == "update" || verb == "patch" || verb == "delete")) {
      ++n;
      if (in != nullptr && of.count(Str(rec, {"name"})) > 0) ++*in;
    }
  }
  return n;
}

// hostpath_provisioner_capacity_writes_total, summed over the instances.
double MetricSum(const std::vector<Provisioner>& instances) {
  double sum = 0;
  for (const Provisioner& p : instances) sum += std::max(0.0, MetricValue(p.port, "hostpath_provisioner_capacity_writes_total"));
  return sum;
}

// Until done() (polled every 500 ms, at most 60 s: a figure that never follows is a finding, not
// a failure), then until the instances' capacity writes have not grown for 3 s, more than the
// once-a-second check that follows a change. (Not until their CPU is quiet: 100 instances are
// seldom all idle at once.)
template <typename Done>
void WaitWritesQuiet(const std::vector<Provisioner>& instances, Done done) {
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < end && !done();)
    SleepMs(500);
  double last = MetricSum(instances);
  auto still_since = std::chrono::steady_clock::now(), end = still_since + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end && std::chrono::steady_clock::now() - still_since < std::chrono::seconds(3)) {
    SleepMs(500);
    if (double now = MetricSum(instances); now != last) {
      last = now;
      still_since = std::chrono::steady_clock::now();
    }
  }
}

// Polls node-0's figure every kPollMs until done(figure); the seconds from t0, or -1 after 60 s.
template <typename Done>
double Follow(Api& admin, int64_t t0, Done done) {
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < end;) {
    if (done(Node0Figure(admin))) return static_cast<double>(NowNs() - t0) / 1e9;
    SleepMs(kPollMs);
  }
  return -1;
}

// Writes `mib` MiB of zeros to `path` and closes it (tmpfs allocates a page for each).
void Fill(const std::string& path, int mib) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Failure("open " + path + ": " + std::strerror(errno));
  const std::string chunk(1 << 20, '\0');
  for (int i = 0; i < mib; ++i)
    if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      ::close(fd);
      throw Failure("write " + path + ": " + std::strerror(errno));
    }
  ::close(fd);
}

std::string RunFollow(const Places& at, CapacityFollow* out) {
  TmpfsDisk disk(Absolute(at.work) + "/capacity-disk", std::to_string(kFollowDiskMiB) + "m");
  if (!disk.error().empty()) return disk.error();
  std::printf("bench: capacity: one instance, its root a %d MiB tmpfs: a %d MiB file written and removed, %d rounds\n",
              kFollowDiskMiB, kFollowFileMiB, kFollowRounds);
  std::fflush(stdout);
  auto fake = CapacityFake(at.work + "/api-capacity-follow", 1, false);
  std::vector<Provisioner> one;
  one.push_back(StartProvisioner(*fake, disk.dir(), at.work + "/provisioner-capacity-follow.log",
                                 {{"NODE_NAME", "node-0"}, {"CAPACITY_PROVISIONER_NAME", kDriver}}));
  auto admin = fake->Admin();
  if (Follow(*admin, NowNs(), [](double f) { return f >= 0; }) < 0) throw Failure("node-0's capacity object not made in 60 s");
  std::mt19937 random(std::random_device{}());
  std::uniform_real_distribution<double> moment(0, 10);  // CAPACITY_INTERVAL's default
  const std::string file = disk.dir() + "/filler";
  const double half = kFollowFileMiB * kMiB / 2;
  for (int round = 0; round < kFollowRounds; ++round) {
    SleepMs(static_cast<int>(1000 * moment(random)));
    const double before = Node0Figure(*admin);
    Fill(file, kFollowFileMiB);
    out->fill.push_back(Follow(*admin, NowNs(), [&](double f) { return f >= 0 && f <= before - half; }));
    SleepMs(static_cast<int>(1000 * moment(random)));
    const double filled = Node0Figure(*admin);
    if (::unlink(file.c_str()) != 0) throw Failure("unlink " + file + ": " + std::strerror(errno));
    out->freed.push_back(Follow(*admin, NowNs(), [&](double f) { return f >= filled + half; }));
    std::printf("  round %d: filled -> followed %.3f s, freed -> followed %.3f s\n", round, out->fill.back(),
                out->freed.back());
    std::fflush(stdout);
  }
  out->writes = MetricSum(one);
  return "";
}

void RunScale(const Places& at, int n, CapacityScale* out) {
  out->nodes = n;
  std::printf("bench: capacity: %d node-aware instances on one fake, a tmpfs root each; %d s at rest, then %d rounds of "
              "%d claims (%d per node) created and deleted\n", n, kRestSeconds, kCapacityRounds, n * kCapacityClaimsPerNode,
              kCapacityClaimsPerNode);
  std::fflush(stdout);
  const std::string name = "capacity" + std::to_string(n);
  const std::string mounts = MakeDir(at.work + "/" + name);
  std::vector<std::unique_ptr<TmpfsDisk>> disks;  // unmounted last, once the instances are gone
  std::vector<Provisioner> instances;
  auto fake = CapacityFake(at.work + "/api-" + name, n, true);
  Target t{"capacity", fake.get(), {}, {}, nullptr, "hostpath-strict", n};
  const int64_t t0 = NowNs();
  for (int i = 0; i < n; ++i) {
    const std::string node = "node-" + std::to_string(i);
    disks.push_back(std::make_unique<TmpfsDisk>(mounts + "/" + node, "16g"));  // room for the claims' promises
    if (!disks.back()->error().empty()) throw Failure(disks.back()->error());
    t.pv_dirs.push_back(disks.back()->dir());
    instances.push_back(StartProvisioner(*fake, t.pv_dirs.back(), at.work + "/provisioner-" + name + "-" + node + ".log",
                                         {{"NODE_NAME", node}, {"CAPACITY_PROVISIONER_NAME", kDriver}}));
    t.provisioners.push_back(instances.back().proc->pid());
  }
  out->start_seconds = static_cast<double>(NowNs() - t0) / 1e9;
  // A new admin connection for each look: the fake drops one left idle (the rest, the waits).
  const int64_t t1 = NowNs();
  std::map<std::pair<std::string, std::string>, double> rest;
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       (rest = Figures(*fake->Admin())).size() < static_cast<size_t>(2 * n); SleepMs(100))
    if (std::chrono::steady_clock::now() > end)
      throw Failure(std::to_string(rest.size()) + " of " + std::to_string(2 * n) + " capacity objects made in 120 s");
  out->published_seconds = static_cast<double>(NowNs() - t1) / 1e9;
  std::printf("  ready in %.2f s, every node's objects %.2f s later\n", out->start_seconds, out->published_seconds);
  std::fflush(stdout);

  // kRestSeconds with nothing happening: the capacity writes (request log, metric).
  auto at_rest = [&](const char* what, long* writes, double* metric) {
    fake->Admin()->Call("POST", "/fake/reset-requests");
    const double m0 = MetricSum(instances);
    SleepMs(1000 * kRestSeconds);
    *metric = MetricSum(instances) - m0;
    *writes = CapacityWritesInLog(*fake);
    std::printf("  at rest%s, %d s: %ld capacity writes (request log), %.0f (metric)\n", what, kRestSeconds, *writes,
                *metric);
    std::fflush(stdout);
  };
  WaitWritesQuiet(instances, [] { return true; });
  rest = Figures(*fake->Admin());
  const std::set<std::string> install_objects = ObjectsOf(*fake->Admin(), "hostpath");
  at_rest("", &out->rest_writes, &out->rest_metric);

  // How many nodes' hostpath-strict figure is `claims` requests below its figure at rest (within
  // the 1% a figure may lag by).
  auto followed = [&](int claims) {
    int ok = 0;
    for (const auto& [key, bytes] : Figures(*fake->Admin())) {
      if (key.second != "hostpath-strict") continue;
      const double want = rest[key] - claims * kClaimBytes;
      ok += std::fabs(bytes - want) <= rest[key] / 100 ? 1 : 0;
    }
    return ok;
  };
  const int claims = n * kCapacityClaimsPerNode;
  for (int round = 0; round < kCapacityRounds; ++round) {
    std::vector<Claimed> made;
    for (bool create : {true, false}) {
      const double before = MetricSum(instances);
      Burst b = RunBurst(t, create, "c" + std::to_string(round), claims, &made);
      const int want = create ? kCapacityClaimsPerNode : 0;
      WaitWritesQuiet(instances, [&] { return followed(want) == n; });
      long install = 0;  // of the install's class, whose figure the claims do not move
      const double writes = static_cast<double>(CapacityWritesInLog(*fake, install_objects, &install));
      const double metric = MetricSum(instances) - before;
      (create ? out->create_install_writes : out->delete_install_writes) += install;
      (create ? out->create_writes : out->delete_writes).push_back(writes);
      (create ? out->create_metric : out->delete_metric).push_back(metric);
      (create ? out->create_seconds : out->delete_seconds).push_back(b.seconds);
      (create ? out->followed_create : out->followed_delete) = followed(want);
      std::printf("  %s %d: %.3f s; capacity writes until quiet %.0f (request log), %.0f (metric); nodes whose figure "
                  "followed %d of %d\n", create ? "create" : "delete", claims, b.seconds, writes, metric,
                  create ? out->followed_create : out->followed_delete, n);
      std::fflush(stdout);
      // Once, with the claims' volumes there: the usage scan (every 60 s) walks them meanwhile.
      if (create && round == kCapacityRounds - 1)
        at_rest(" with the volumes", &out->rest_bound_writes, &out->rest_bound_metric);
    }
  }
  instances.clear();  // stopped before their disks go
}

double Median(const std::vector<double>& v) { return Percentile(v, 0.5); }

std::string MinMedianMax(const std::vector<double>& v) {
  if (std::find(v.begin(), v.end(), -1.0) != v.end()) return "did not follow within 60 s in some round";
  return Fmt("%.2f", *std::min_element(v.begin(), v.end())) + Fmt(" / %.2f", Median(v)) +
         Fmt(" / %.2f s", *std::max_element(v.begin(), v.end()));
}

}  // namespace

Capacity RunCapacity(const Places& at, const std::vector<int>& nodes) {
  Capacity out;
  if (::geteuid() != 0) {
    out.skipped = "needs root (mounts a tmpfs for each node's root)";
    return out;
  }
  out.skipped = RunFollow(at, &out.follow);
  if (!out.skipped.empty()) return out;
  for (int n : nodes) {
    out.scale.emplace_back();
    RunScale(at, n, &out.scale.back());
  }
  return out;
}

void ReportCapacity(const Capacity& c, Report* rep, picojson::object* json) {
  rep->Section("storage capacity: following the disk (one instance, CAPACITY_INTERVAL 10 s, its root a " +
               std::to_string(kFollowDiskMiB) + " MiB tmpfs, a " + std::to_string(kFollowFileMiB) + " MiB file, " +
               std::to_string(kFollowRounds) + " rounds)");
  if (!c.skipped.empty()) {
    rep->Add("skipped", c.skipped);
    return;
  }
  const CapacityFollow& f = c.follow;
  auto within = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double s) { return s >= 0 && s <= 11; }) ? 1 : 0;
  };
  rep->Add("file written -> the figure follows: min / median / max", MinMedianMax(f.fill), "<= 10 s + 1", within(f.fill));
  rep->Add("file removed -> the figure follows: min / median / max", MinMedianMax(f.freed), "<= 10 s + 1", within(f.freed));
  rep->Add("the instance's capacity writes, in all", Fmt("%.0f", f.writes));
  picojson::object o, fo;
  fo["fill_seconds"] = Array(f.fill);
  fo["freed_seconds"] = Array(f.freed);
  fo["writes"] = picojson::value(f.writes);
  o["follow"] = picojson::value(fo);

  if (!c.scale.empty()) {
    std::string ns;
    for (const CapacityScale& s : c.scale) ns += (ns.empty() ? "" : " | ") + std::to_string(s.nodes);
    rep->Section("storage capacity: N = " + ns + " node-aware instances on one fake, 2 classes each (the install's, and "
                 "hostpath-strict: overcommit \"false\"); bursts of " + std::to_string(kCapacityClaimsPerNode) +
                 " hostpath-strict claims per node, " + std::to_string(kCapacityRounds) + " rounds (medians)");
    // One row: each N's value, side by side.
    auto row = [&](const std::string& figure, auto value, const std::string& target = "", int met = -1) {
      std::string v;
      for (const CapacityScale& s : c.scale) v += (v.empty() ? "" : " | ") + value(s);
      rep->Add(figure, v, target, met);
    };
    auto per_claim = [](const std::vector<double>& writes, int nodes) {
      return Median(writes) / (nodes * kCapacityClaimsPerNode);
    };
    bool rest_zero = true, create_o1 = true, delete_o1 = true;
    for (const CapacityScale& s : c.scale) {
      rest_zero = rest_zero && s.rest_writes == 0 && s.rest_bound_writes == 0;
      create_o1 = create_o1 && per_claim(s.create_writes, s.nodes) <= 1;
      delete_o1 = delete_o1 && per_claim(s.delete_writes, s.nodes) <= 1;
    }
    row("start until all ready; then until every node published",
        [](const CapacityScale& s) { return Fmt("%.2f", s.start_seconds) + Fmt("; %.2f s", s.published_seconds); });
    row("capacity writes at rest, per minute per node (request log)",
        [](const CapacityScale& s) { return Fmt("%.2f", s.rest_writes * 60.0 / kRestSeconds / s.nodes); }, "0",
        rest_zero ? 1 : 0);
    row("the same from the metric (summed)",
        [](const CapacityScale& s) { return Fmt("%.2f", s.rest_metric * 60.0 / kRestSeconds / s.nodes); });
    row("the same with 10 bound volumes per node: request log / metric", [](const CapacityScale& s) {
      return Fmt("%.2f", s.rest_bound_writes * 60.0 / kRestSeconds / s.nodes) +
             Fmt(" / %.2f", s.rest_bound_metric * 60.0 / kRestSeconds / s.nodes);
    }, "0", rest_zero ? 1 : 0);
    row("capacity writes per claim, create burst until quiet (request log)",
        [&](const CapacityScale& s) { return Fmt("%.2f", per_claim(s.create_writes, s.nodes)); }, "O(1), <= 1",
        create_o1 ? 1 : 0);
    row("capacity writes per claim, delete burst until quiet (request log)",
        [&](const CapacityScale& s) { return Fmt("%.2f", per_claim(s.delete_writes, s.nodes)); }, "O(1), <= 1",
        delete_o1 ? 1 : 0);
    row("the same from the metric, create / delete", [&](const CapacityScale& s) {
      return Fmt("%.2f", per_claim(s.create_metric, s.nodes)) + Fmt(" / %.2f", per_claim(s.delete_metric, s.nodes));
    });
    row("writes per node per burst, create / delete", [](const CapacityScale& s) {
      return Fmt("%.1f", Median(s.create_writes) / s.nodes) + Fmt(" / %.1f", Median(s.delete_writes) / s.nodes);
    });
    row("of those, the install's class's (all rounds), create / delete", [](const CapacityScale& s) {
      return std::to_string(s.create_install_writes) + " / " + std::to_string(s.delete_install_writes);
    });
    row("burst until all Bound / until all gone", [](const CapacityScale& s) {
      return Fmt("%.2f", Median(s.create_seconds)) + Fmt(" / %.2f s", Median(s.delete_seconds));
    });
    row("nodes whose figure followed, after the create / the delete (last round)", [](const CapacityScale& s) {
      return std::to_string(s.followed_create) + "/" + std::to_string(s.nodes) + " / " + std::to_string(s.followed_delete) +
             "/" + std::to_string(s.nodes);
    });
  }
  picojson::array scale;
  for (const CapacityScale& s : c.scale) {
    picojson::object so;
    so["nodes"] = picojson::value(static_cast<double>(s.nodes));
    so["start_seconds"] = picojson::value(s.start_seconds);
    so["published_seconds"] = picojson::value(s.published_seconds);
    so["rest_seconds"] = picojson::value(static_cast<double>(kRestSeconds));
    so["rest_writes"] = picojson::value(static_cast<double>(s.rest_writes));
    so["rest_writes_metric"] = picojson::value(s.rest_metric);
    so["rest_bound_writes"] = picojson::value(static_cast<double>(s.rest_bound_writes));
    so["rest_bound_writes_metric"] = picojson::value(s.rest_bound_metric);
    so["claims_per_burst"] = picojson::value(static_cast<double>(s.nodes * kCapacityClaimsPerNode));
    so["create_writes"] = Array(s.create_writes);
    so["delete_writes"] = Array(s.delete_writes);
    so["create_writes_metric"] = Array(s.create_metric);
    so["delete_writes_metric"] = Array(s.delete_metric);
    so["create_install_class_writes"] = picojson::value(static_cast<double>(s.create_install_writes));
    so["delete_install_class_writes"] = picojson::value(static_cast<double>(s.delete_install_writes));
    so["create_seconds"] = Array(s.create_seconds);
    so["delete_seconds"] = Array(s.delete_seconds);
    so["followed_create"] = picojson::value(static_cast<double>(s.followed_create));
    so["followed_delete"] = picojson::value(static_cast<double>(s.followed_delete));
    scale.emplace_back(so);
  }
  o["scale"] = picojson::value(scale);
  (*json)["capacity"] = picojson::value(o);
}

}  // namespace bench
