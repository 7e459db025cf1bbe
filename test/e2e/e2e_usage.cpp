// End to end: usage metrics (kubelet_volume_stats_*) and the over-capacity event, with a scan
// every second. The root is a small tmpfs made by the test (needs root: skipped, with a
// message, otherwise); figures are checked against du's.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "test/support/harness.hpp"
#include "test/support/tmpfs.hpp"

using namespace harness;

namespace {

constexpr const char* kClaims = "/api/v1/namespaces/default/persistentvolumeclaims/";

// A tmpfs of `size` at `dir`, unmounted at the end; false (with a WARN) where that is refused.
uint64_t Du(const std::string& path, const char* what) {
  FILE* p = ::popen(("du -sx " + std::string(what) + " '" + path + "'").c_str(), "r");
  unsigned long long n = 0;
  if (p == nullptr || std::fscanf(p, "%llu", &n) != 1) n = ~0ULL;
  if (p != nullptr) ::pclose(p);
  return n;
}

void WriteBytes(const std::string& path, size_t n) { WriteFile(path, std::string(n, 'x')); }

std::string Labels(const std::string& claim, const std::string& pv) {
  return "namespace=\"default\",persistentvolumeclaim=\"" + claim + "\",persistentvolume=\"" + pv + "\"";
}

// The claim's volume name once it is Bound ("" if it does not bind in time).
std::string BoundVolume(FakeApi& api, const std::string& claim) {
  if (!Eventually([&] { return Phase(api.Claim("default", claim)) == "Bound"; })) return "";
  return api.Claim("default", claim).get("spec").get("volumeName").to_str();
}

// How many times the event was recorded (its count, over every Event object of that reason).
int Occurrences(FakeApi& api, const std::string& claim, const std::string& reason) {
  int n = 0;
  for (const auto& e : api.EventsAbout("default", claim))
    if (e.get("reason").to_str() == reason) n += static_cast<int>(e.get("count").get<double>());
  return n;
}

// Waits for `passes` more completed passes of the scan.
bool MorePasses(Provisioner& p, int passes) {
  const double from = Metric(p, "hostpath_provisioner_usage_scans_total");
  return from >= 0 && Eventually([&] { return Metric(p, "hostpath_provisioner_usage_scans_total") >= from + passes; });
}

// The names of the process's threads.
std::string ThreadNames(pid_t pid) {
  std::string out;
  for (const std::string& t : ListDir("/proc/" + std::to_string(pid) + "/task"))
    out += ReadFile("/proc/" + std::to_string(pid) + "/task/" + t + "/comm");
  return out;
}

}  // namespace

TEST_CASE("a bound claim's usage is on /metrics under kubelet's names, as du counts it, until it goes", "[e2e][usage]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "20m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("hostpath", "Delete"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "data", "hostpath", "10Mi"));
  const std::string pv = BoundVolume(api, "data");
  REQUIRE_FALSE(pv.empty());
  const std::string dir = fs.dir + "/default-data-" + pv;
  for (int i = 0; i < 3; ++i) WriteBytes(dir + "/file" + std::to_string(i), 100 * 1024);
  ::mkdir((dir + "/sub").c_str(), 0755);
  for (int i = 0; i < 5; ++i) WriteBytes(dir + "/sub/small" + std::to_string(i), 10);
  REQUIRE(::symlink("/", (dir + "/to-root").c_str()) == 0);
  const uint64_t used = Du(dir, "-B1"), inodes_used = Du(dir, "--inodes");
  REQUIRE(used == 3 * 100 * 1024 + 5 * 4096);
  REQUIRE(inodes_used == 11);

  const std::string labels = Labels("data", pv);
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) == static_cast<double>(used); }));
  CHECK(Metric(p, "kubelet_volume_stats_inodes_used", labels) == static_cast<double>(inodes_used));
  CHECK(Metric(p, "kubelet_volume_stats_capacity_bytes", labels) == 10 * 1024 * 1024);
  CHECK(Metric(p, "kubelet_volume_stats_available_bytes", labels) == 10 * 1024 * 1024 - static_cast<double>(used));
  struct statvfs vfs;
  REQUIRE(::statvfs(dir.c_str(), &vfs) == 0);
  CHECK(Metric(p, "kubelet_volume_stats_inodes", labels) == static_cast<double>(vfs.f_files));
  CHECK(Metric(p, "kubelet_volume_stats_inodes_free", labels) > 0);
  const std::string body = p.Http("/metrics").body;
  CHECK_THAT(body, Catch::Contains("# HELP kubelet_volume_stats_used_bytes Number of used bytes in the volume") &&
                       Catch::Contains("# TYPE kubelet_volume_stats_used_bytes gauge"));
  CHECK_THAT(ThreadNames(p.process().pid()), Catch::Contains("usage-scan") && Catch::Contains("usage-walk"));

  // More data shows at a later scan.
  WriteBytes(dir + "/sub/more", 1024 * 1024);
  CHECK(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) == static_cast<double>(used + 1024 * 1024); }));
  CHECK(Occurrences(api, "data", "VolumeOverCapacity") == 0);
  // The claim goes, and with it its volume and its series.
  REQUIRE(api.Delete(kClaims + std::string("data")).code == 200);
  REQUIRE(Eventually([&] { return !Exists(dir) && api.Volume(pv).is<picojson::null>(); }));
  CHECK(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", labels) < 0; }));
  CHECK(p.Http("/metrics").body.find("kubelet_volume_stats_") == std::string::npos);
  CHECK(api.Denials().empty());
}

TEST_CASE("a volume over its capacity gets one Warning event, again only after it went under", "[e2e][usage]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "20m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("hostpath", "Delete"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "small", "hostpath", "1Mi"));
  const std::string pv = BoundVolume(api, "small");
  REQUIRE_FALSE(pv.empty());
  const std::string dir = fs.dir + "/default-small-" + pv;
  WriteBytes(dir + "/big", 2 * 1024 * 1024);
  REQUIRE(Eventually([&] { return Occurrences(api, "small", "VolumeOverCapacity") == 1; }));
  bool named = false;
  for (const auto& e : api.EventsAbout("default", "small"))
    if (e.get("reason").to_str() == "VolumeOverCapacity") {
      CHECK(e.get("type").to_str() == "Warning");
      CHECK(e.get("involvedObject").get("kind").to_str() == "PersistentVolumeClaim");
      CHECK(e.get("involvedObject").get("uid").to_str() == api.Claim("default", "small").get("metadata").get("uid").to_str());
      CHECK_THAT(e.get("message").to_str(), Catch::Contains("volume " + pv + " uses 2.0 MiB, more than its capacity of 1.0 MiB"));
      named = true;
    }
  CHECK(named);
  CHECK(Metric(p, "kubelet_volume_stats_available_bytes", Labels("small", pv)) == 0);
  // Scans go on; it stays over: no more events.
  REQUIRE(MorePasses(p, 3));
  CHECK(Occurrences(api, "small", "VolumeOverCapacity") == 1);
  // Under, then over again: told again.
  REQUIRE(::unlink((dir + "/big").c_str()) == 0);
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", Labels("small", pv)) == 0; }));
  CHECK(Occurrences(api, "small", "VolumeOverCapacity") == 1);
  WriteBytes(dir + "/big", 3 * 1024 * 1024);
  REQUIRE(Eventually([&] { return Occurrences(api, "small", "VolumeOverCapacity") == 2; }));
  REQUIRE(MorePasses(p, 2));
  CHECK(Occurrences(api, "small", "VolumeOverCapacity") == 2);
  CHECK(api.Denials().empty());
}

TEST_CASE("USAGE_SCAN_INTERVAL=0: no scan threads and no usage metrics", "[e2e][usage]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "20m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("hostpath", "Delete"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "0"}});
  api.CreateYaml(ClaimYaml("default", "data", "hostpath", "1Mi"));
  const std::string pv = BoundVolume(api, "data");
  REQUIRE_FALSE(pv.empty());
  WriteBytes(fs.dir + "/default-data-" + pv + "/big", 2 * 1024 * 1024);
  // Nothing to wait for: look a few times over two seconds.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::string body = p.Http("/metrics").body;
    REQUIRE_THAT(body, Catch::Contains("hostpath_provisioner_provisions_total"));
    CHECK(body.find("kubelet_volume_stats_") == std::string::npos);
    CHECK(body.find("usage_scan") == std::string::npos);
  }
  const std::string threads = ThreadNames(p.process().pid());
  CHECK(threads.find("usage-") == std::string::npos);
  CHECK(Occurrences(api, "data", "VolumeOverCapacity") == 0);
}

TEST_CASE("the strict free-space check subtracts what other volumes were promised beyond what they use", "[e2e][usage][space]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("strict", "Delete", "hostpath-provisioner.io/hostpath", "  overcommit: \"false\"\n"));
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "a", "strict", "6Mi"));
  const std::string pv = BoundVolume(api, "a");
  REQUIRE_FALSE(pv.empty());
  // a uses 4 MiB of its 6: 6 MiB free, of which 2 are still promised to a; 3 MiB fit.
  WriteBytes(fs.dir + "/default-a-" + pv + "/data", 4 * 1024 * 1024);
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", Labels("a", pv)) == 4 * 1024 * 1024; }));
  api.CreateYaml(ClaimYaml("default", "b", "strict", "3Mi"));
  CHECK_FALSE(BoundVolume(api, "b").empty());
  // Still 6 MiB free (b is empty), 2 promised to a and 3 to b: 2 MiB do not fit.
  api.CreateYaml(ClaimYaml("default", "c", "strict", "2Mi"));
  CHECK(Eventually([&] {
    for (const auto& e : api.EventsAbout("default", "c"))
      if (e.get("message").to_str().find("less 5.0 MiB promised to 2 other volumes") != std::string::npos) return true;
    return false;
  }));
  CHECK(Phase(api.Claim("default", "c")) == "Pending");
}

TEST_CASE("a strict expansion counts what the volume already uses once", "[e2e][usage][expand]") {
  TempDir tmp;
  Tmpfs fs(tmp.path() + "/pv", "10m");
  if (!fs.mounted) return;
  FakeApi api(tmp.path() + "/api");
  api.CreateYaml(ClassYaml("strict", "Delete", "hostpath-provisioner.io/hostpath", "  overcommit: \"false\"\n") +
                 "allowVolumeExpansion: true\n");
  Provisioner p(api, fs.dir, {{"USAGE_SCAN_INTERVAL", "1"}});
  api.CreateYaml(ClaimYaml("default", "a", "strict", "4Mi"));
  const std::string pv = BoundVolume(api, "a");
  REQUIRE_FALSE(pv.empty());
  WriteBytes(fs.dir + "/default-a-" + pv + "/data", 3 * 1024 * 1024);
  REQUIRE(Eventually([&] { return Metric(p, "kubelet_volume_stats_used_bytes", Labels("a", pv)) == 3 * 1024 * 1024; }));
  auto ask = [&](const std::string& size) {
    return api.Call("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/a",
                    R"({"spec":{"resources":{"requests":{"storage":")" + size + R"("}}}})", "application/merge-patch+json")
        .code;
  };
  auto capacity = [&] { return api.Claim("default", "a").get("status").get("capacity").get("storage").to_str(); };
  // 7 MiB free; 8 MiB less the 3 it uses fit (counting all 8 would not).
  REQUIRE(ask("8Mi") == 200);
  REQUIRE(Eventually([&] { return capacity() == "8Mi"; }));
  // 12 MiB less 3 do not.
  REQUIRE(ask("12Mi") == 200);
  CHECK(Eventually([&] {
    for (const auto& e : api.EventsAbout("default", "a"))
      if (e.get("reason").to_str() == "VolumeResizeFailed" &&
          e.get("message").to_str().find("not enough space: 9.0 MiB requested, 7.0 MiB available") != std::string::npos)
        return true;
    return false;
  }));
  CHECK(capacity() == "8Mi");
}
