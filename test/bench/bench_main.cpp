// make bench: is the provisioner fast and frugal enough for its users? It runs the real
// provisioner binary against the fake API server (build/fake-apiserver) on loopback, and a
// baseline client against a second fake, and holds the figures against the targets (each
// section's header says what it measures; docs/performance.md says why):
//  - section_bursts: claims one at a time against the baseline, and bursts of 1000 (the
//    provisioner measured idle first, section_idle);
//  - section_node_aware: bursts over three node-aware instances against one single-node one;
//  - section_usage_scan: the usage scan's CPU, and bursts while it runs;
//  - section_idle: start-up with 10 000 bound claims and PVs, idle, the binary's size;
//  - section_quota: enforced sizes (btrfs qgroups, root only);
//  - section_clones: clones by each method, and bursts while a copy runs;
//  - section_node_scale (only when asked): N node-aware instances on one fake against one
//    single-node instance, N = 3, 24 and 100 (issues 54 and 46), then side by side;
//  - section_capacity (only when asked, root): storage capacity following the disk, and its API
//    writes at rest and in bursts over N instances, N = 3 and 24 (issue 52).
// Usage: build/bench [--only SECTION[,SECTION...]] [--nodes N[,N...]]
//   SECTION: bursts, node-aware, usage-scan, startup, quota, clones, node-scale, capacity; without
//   --only every section but node-scale and capacity. --nodes: the instance counts of node-scale
//   (default 3,24,100) and capacity (default 3,24).
// A benchmark, not a test: exit 0 unless something broke (a process that does not start, a
// burst not done within 120 s); 2 for a bad argument. Output: a table on stdout and
// build/bench.json (with --only: build/bench-SECTION[+SECTION...].json). Work files and logs:
// build/bench-run/, replaced on each run (also the loop filesystems' sparse images, while in
// use). Binaries: FAKE_APISERVER (build/fake-apiserver) and PROVISIONER (./hostpath-provisioner).
// Volume directories: BENCH_VOLUMES, else a tmpfs.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/report.hpp"
#include "test/bench/section_bursts.hpp"
#include "test/bench/section_capacity.hpp"
#include "test/bench/section_clones.hpp"
#include "test/bench/section_idle.hpp"
#include "test/bench/section_node_aware.hpp"
#include "test/bench/section_node_scale.hpp"
#include "test/bench/section_quota.hpp"
#include "test/bench/section_usage_scan.hpp"
#include "test/support/harness.hpp"

namespace bench {
namespace {

const std::set<std::string> kSections = {"bursts", "node-aware", "usage-scan", "startup", "quota",
                                          "clones", "node-scale", "capacity"};

struct Args {
  std::set<std::string> only;     // empty: every section but node-scale and capacity
  std::string only_text;          // as given, for the JSON file's name
  std::vector<int> nodes{3, 24, 100};
  bool nodes_given = false;       // else capacity's default, 3,24
  bool Runs(const std::string& section) const {
    return only.empty() ? section != "node-scale" && section != "capacity" : only.count(section) > 0;
  }
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// The arguments, or nullopt after printing what is wrong.
std::optional<Args> Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag != "--only" && flag != "--nodes") || i + 1 == argc) {
      std::fprintf(stderr, "usage: bench [--only SECTION[,SECTION...]] [--nodes N[,N...]]\n  SECTION: bursts, node-aware, "
                           "usage-scan, startup, quota, clones, node-scale, capacity (without --only: all but node-scale and "
                           "capacity)\n");
      return std::nullopt;
    }
    const std::string value = argv[++i];
    if (flag == "--only") {
      for (const std::string& s : Split(value)) {
        if (kSections.count(s) == 0) {
          std::fprintf(stderr, "bench: no section \"%s\" (bursts, node-aware, usage-scan, startup, quota, clones, node-scale, "
                               "capacity)\n",
                       s.c_str());
          return std::nullopt;
        }
        a.only.insert(s);
      }
      a.only_text = value;
      std::replace(a.only_text.begin(), a.only_text.end(), ',', '+');
    } else {
      a.nodes.clear();
      a.nodes_given = true;
      for (const std::string& s : Split(value)) {
        const int n = std::atoi(s.c_str());
        if (n < 1 || std::to_string(n) != s) {
          std::fprintf(stderr, "bench: --nodes takes positive numbers, not \"%s\"\n", s.c_str());
          return std::nullopt;
        }
        a.nodes.push_back(n);
      }
    }
  }
  return a;
}

int Run(const Args& args) {
  Places at;
  at.work = "build/bench-run";
  std::system(("rm -rf '" + at.work + "'").c_str());
  if (::mkdir(at.work.c_str(), 0755) != 0) throw Failure("cannot create " + at.work + " (run from the repository's top)");
  // Volume directories on a tmpfs by default: on ext4 without a journal (this project's VMs)
  // a mkdir right after many deletions can cost a few hundred microseconds, which would time
  // the filesystem rather than the provisioner. A node's data disk does not do that.
  at.volumes = harness::Env("BENCH_VOLUMES", ::access("/dev/shm", W_OK) == 0 ? "/dev/shm/hostpath-provisioner-bench" : "");
  if (at.volumes.empty()) at.volumes = at.work + "/volumes";
  std::system(("rm -rf '" + at.volumes + "'").c_str());
  MakeDir(at.volumes);
  const std::string provisioner_bin = harness::Env("PROVISIONER", "./hostpath-provisioner");
  struct stat st {};
  if (::stat(provisioner_bin.c_str(), &st) != 0) throw Failure(provisioner_bin + " not found: run make first");
  const double load_before = LoadAverage();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("bench: %s against %s; load average %.2f on %ld CPUs; volume directories in %s\n", provisioner_bin.c_str(),
              harness::Env("FAKE_APISERVER", "build/fake-apiserver").c_str(), load_before, cpus, at.volumes.c_str());
  std::printf("bench: on a two-CPU machine the fake does the API server's and the PV controller's work for every claim and "
              "cannot stay out of the way: burst times are the fake's and the client's together\n");
  std::fflush(stdout);

  // Run in this order; reported in the table's order below.
  std::optional<Bursts> bursts;
  std::optional<NodeAware> node_aware;
  std::optional<UsageScan> usage_scan;
  std::optional<Startup> startup;
  std::optional<Quota> quota;
  std::optional<Clones> clones;
  std::vector<NodeScale> node_scale;
  if (args.Runs("bursts")) bursts = RunBursts(at);
  if (args.Runs("node-aware")) node_aware = RunNodeAware(at);
  if (args.Runs("usage-scan")) usage_scan = RunUsageScan(at);
  if (args.Runs("startup")) startup = RunStartup(at);
  if (args.Runs("quota")) quota = RunQuota(at);
  if (args.Runs("clones")) clones = RunClones(at);
  if (args.Runs("node-scale")) node_scale = RunNodeScale(at, args.nodes);
  std::optional<Capacity> capacity;
  if (args.Runs("capacity")) capacity = RunCapacity(at, args.nodes_given ? args.nodes : std::vector<int>{3, 24});
  const double load_after = LoadAverage();

  Report rep;
  picojson::object json;
  if (bursts) ReportTrickle(*bursts, &rep);
  if (bursts) ReportBursts(*bursts, &rep, &json);
  if (node_aware) ReportNodeAware(*node_aware, &rep, &json);
  if (usage_scan) ReportUsageScan(*usage_scan, &rep, &json);
  if (quota) ReportQuota(*quota, &rep, &json);
  if (clones) ReportClones(*clones, &rep, &json);
  if (!node_scale.empty()) ReportNodeScale(node_scale, &rep, &json);
  if (capacity) ReportCapacity(*capacity, &rep, &json);
  if (bursts) ReportIdle(bursts->idle, &rep);
  if (startup) ReportStartup(*startup, &rep);
  ReportBinary(provisioner_bin, static_cast<long>(st.st_size), &rep, &json);
  rep.Section("machine");
  rep.Add("load average before / after", Fmt("%.2f", load_before) + Fmt(" / %.2f", load_after));
  rep.Print();

  json["cpus"] = picojson::value(static_cast<double>(cpus));
  json["figures"] = rep.Json();
  const std::string out = args.only.empty() ? "build/bench.json" : "build/bench-" + args.only_text + ".json";
  harness::WriteFile(out, picojson::value(json).serialize(true));
  std::system(("rm -rf '" + at.volumes + "'").c_str());
  std::printf("\nwrote %s; logs in %s/\n", out.c_str(), at.work.c_str());
  return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::optional<bench::Args> args = bench::Parse(argc, argv);
  if (!args) return 2;
  try {
    return bench::Run(*args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
