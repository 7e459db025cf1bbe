// The bodies of section_usage_scan.hpp (the contracts are there).
#include "test/bench/section_usage_scan.hpp"

#include <algorithm>
#include <cstdio>

#include "test/bench/bursts.hpp"
#include "test/bench/proc_sample.hpp"
#include "test/bench/provisioner.hpp"
#include "test/bench/trees.hpp"

namespace bench {
namespace {

const std::string kScans = "hostpath_provisioner_usage_scans_total";
const std::string kEntries = "hostpath_provisioner_usage_scan_entries_total";

// Waits until the scan has completed a pass after the `after`-th; returns how many it has.
long NextPass(int port, long after) {
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < end;) {
    long passes = static_cast<long>(MetricValue(port, kScans));
    if (passes > after) return passes;
    SleepMs(5);
  }
  throw Failure("the usage scan completed no pass within 60 s");
}

}  // namespace

UsageScan RunUsageScan(const Places& at) {
  std::printf("bench: usage scan of a volume of %d files; %d rounds of %d claims at once while a pass runs, and "
              "without a scan\n", kScanFiles, kScanRounds, kScanBurst);
  std::fflush(stdout);
  UsageScan out;
  Fake fake_s(at.work + "/api-usage-scan"), fake_q(at.work + "/api-usage-quiet");
  std::string pv_s = MakeDir(at.volumes + "/pv-usage-scan"), pv_q = MakeDir(at.volumes + "/pv-usage-quiet");
  Provisioner scanning = StartProvisioner(fake_s, pv_s, at.work + "/provisioner-usage-scan.log", {{"USAGE_SCAN_INTERVAL", "1"}});
  Provisioner quiet = StartProvisioner(fake_q, pv_q, at.work + "/provisioner-usage-quiet.log", {{"USAGE_SCAN_INTERVAL", "0"}});
  const pid_t pid = scanning.proc->pid();
  const int port = scanning.port;
  auto admin = fake_s.Admin();
  std::string query = WaitQuery(*admin, true, "tree");
  std::vector<Claimed> tree = CreateClaims(fake_s, "tree", 1, nullptr);
  WaitInFake(*admin, query, 1);
  MakeTree(pv_s + "/" + tree[0].dir(), kScanDirs, kScanFiles / kScanDirs);
  // One whole pass: from the end of the first pass that began once the tree was made to the
  // end of the next, between which the scan threads ("usage-scan", "usage-walk") do nothing else.
  long passes = NextPass(port, NextPass(port, static_cast<long>(MetricValue(port, kScans))));
  const double cpu0 = CpuSeconds(pid, "usage-"), entries0 = MetricValue(port, kEntries);
  passes = NextPass(port, passes);
  out.cpu = CpuSeconds(pid, "usage-") - cpu0;
  out.entries = MetricValue(port, kEntries) - entries0;
  out.pass_seconds = MetricValue(port, "hostpath_provisioner_usage_scan_last_duration_seconds");
  // Each burst on the scanning instance starts as a pass starts: once a pass ends, the next
  // starts after the interval (1 s).
  double entries_at_start = 0;
  Target scan{"scanning", &fake_s, {pv_s}, {pid}};
  scan.kept = 1;
  scan.before = [&](bool) {
    passes = NextPass(port, passes);
    SleepMs(1010);
    entries_at_start = MetricValue(port, kEntries);
  };
  Target calm{"quiet", &fake_q, {pv_q}, {quiet.proc->pid()}};
  Alternate(scan, calm, kScanBurst, kScanRounds, [&](const Target& t, bool create, const Burst& b) {
    const bool scanned = t.before != nullptr;
    (create ? (scanned ? out.create_scan : out.create_quiet) : (scanned ? out.delete_scan : out.delete_quiet)).push_back(b.seconds);
    if (scanned) out.burst_entries += MetricValue(port, kEntries) - entries_at_start;
  });
  return out;
}

void ReportUsageScan(const UsageScan& u, Report* rep, picojson::object* json) {
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  rep->Section("usage scan (USAGE_SCAN_INTERVAL=1), a volume of " + std::to_string(kScanFiles) + " empty files in " +
               std::to_string(kScanDirs) + " directories; " + std::to_string(kScanBurst) + " claims at once, " +
               std::to_string(u.create_scan.size()) + " rounds (medians)");
  rep->Add("scan CPU per 100 000 files (its two threads)", Fmt("%.3f s", u.cpu * 100000 / std::max(1.0, u.entries)));
  rep->Add("one pass: entries / time (1000 per 5 ms pause)", Fmt("%.0f", u.entries) + Fmt(" / %.3f s", u.pass_seconds));
  double ratio = median(u.create_scan) / median(u.create_quiet);
  rep->Add("create until all Bound: scan running / none",
           Fmt("%.3f", median(u.create_scan)) + Fmt(" / %.3f s", median(u.create_quiet)) + Fmt(" = %.2fx", ratio), "<= 1.1x",
           ratio <= 1.1);
  rep->Add("delete until all gone: scan running / none",
           Fmt("%.3f", median(u.delete_scan)) + Fmt(" / %.3f s", median(u.delete_quiet)) +
               Fmt(" = %.2fx", median(u.delete_scan) / median(u.delete_quiet)));
  rep->Add("entries scanned during those bursts",
           Fmt("%.0f", u.burst_entries) +
               Fmt(" (%.0f per burst)", u.burst_entries / static_cast<double>(std::max<size_t>(1, 2 * u.create_scan.size()))));
  (*json)["create_seconds_scanning"] = Array(u.create_scan);  // kScanBurst claims while a usage scan runs
  (*json)["create_seconds_not_scanning"] = Array(u.create_quiet);
  (*json)["delete_seconds_scanning"] = Array(u.delete_scan);
  (*json)["delete_seconds_not_scanning"] = Array(u.delete_quiet);
  (*json)["usage_scan_cpu_seconds_per_pass"] = picojson::value(u.cpu);
  (*json)["usage_scan_entries_per_pass"] = picojson::value(u.entries);
}

}  // namespace bench
