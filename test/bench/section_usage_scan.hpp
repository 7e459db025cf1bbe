// The usage scan (docs/usage-metrics.md): an instance scanning every second with one volume of
// kScanFiles empty files, and one that does not scan, each on a fake of its own. Its CPU per
// pass (its two threads), and kScanRounds rounds of kBurst claims at once while a pass runs,
// against the same on the instance that does not scan.
#pragma once
#include <vector>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/report.hpp"

namespace bench {

constexpr int kScanDirs = 100, kScanFiles = 100000;  // the scanned volume: files in that many directories
constexpr int kScanRounds = 3;                       // bursts with and without a scan running
constexpr int kScanBurst = 1000;                     // claims in each

struct UsageScan {
  double cpu = 0, entries = 0, pass_seconds = 0;  // one whole pass: its threads' CPU, entries counted, its own time
  double burst_entries = 0;                       // entries counted during the bursts on the scanning instance
  std::vector<double> create_scan, create_quiet, delete_scan, delete_quiet;  // each round's burst, seconds
};

UsageScan RunUsageScan(const Places& at);

void ReportUsageScan(const UsageScan& u, Report* rep, picojson::object* json);

}  // namespace bench
