// Idle, start-up and the binary: what the provisioner costs when nothing happens (memory, CPU,
// wake-ups over kIdleWindow), how quickly it starts with kStartupPairs bound claims and PVs and
// what it holds then, and the size of the binary.
#pragma once
#include <sys/types.h>

#include <string>

#include <picojson.h>

#include "test/bench/common.hpp"
#include "test/bench/proc_sample.hpp"
#include "test/bench/report.hpp"

namespace bench {

constexpr auto kIdleWindow = std::chrono::seconds(10);  // idle CPU and wake-ups are counted over this
constexpr int kStartupPairs = 10000;                     // bound claims and PVs present at start-up

struct Idle {
  Memory mem;                  // 1 s after /readyz
  double cpu = 0;              // over kIdleWindow
  long watch_wakeups = 0;      // of threads sleeping in a read or poll (the watches)
  long other_wakeups = 0;      // of the others
  double empty_ready = 0;      // exec -> /readyz 200 in an empty cluster (set by the caller)
  Memory after_bursts;         // set by the caller, once its bursts are done
};

// Measures the process idle: 1 s after it is ready, its memory, then its CPU and wake-ups over
// kIdleWindow (nothing may be written to its fake meanwhile).
Idle MeasureIdle(pid_t pid);

struct Startup {
  double ready = 0;  // exec -> /readyz 200
  Memory mem;        // once it used no CPU for 1 s
  long writes = 0;   // its write requests meanwhile
};

// A fake holding kStartupPairs bound claims and their PVs; a provisioner started against it.
Startup RunStartup(const Places& at);

void ReportIdle(const Idle& idle, Report* rep);
void ReportStartup(const Startup& s, Report* rep);
// The binary's size (and into json: binary_bytes).
void ReportBinary(const std::string& path, long bytes, Report* rep, picojson::object* json);

}  // namespace bench
