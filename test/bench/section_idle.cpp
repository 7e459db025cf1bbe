// The bodies of section_idle.hpp (the contracts are there).
#include "test/bench/section_idle.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "test/bench/bursts.hpp"
#include "test/bench/claims.hpp"
#include "test/bench/fake_client.hpp"
#include "test/bench/provisioner.hpp"

namespace bench {

Idle MeasureIdle(pid_t pid) {
  Idle out;
  std::printf("bench: idle for %lld s\n", static_cast<long long>(kIdleWindow.count()) + 1);
  std::fflush(stdout);
  SleepMs(1000);
  out.mem = ReadMemory(pid);
  double cpu0 = CpuSeconds(pid);
  std::map<std::pair<std::string, bool>, long> woke0 = WakeUps(pid);
  std::this_thread::sleep_for(kIdleWindow);
  out.cpu = CpuSeconds(pid) - cpu0;
  for (const auto& [thread, n] : WakeUps(pid)) {
    long d = n - (woke0.count(thread) ? woke0[thread] : 0);
    (thread.second ? out.watch_wakeups : out.other_wakeups) += d;
  }
  return out;
}

Startup RunStartup(const Places& at) {
  std::printf("bench: start-up with %d bound claims and PVs\n", kStartupPairs);
  std::fflush(stdout);
  Startup out;
  Fake fake(at.work + "/api-startup");
  std::string pv_dir = MakeDir(at.volumes + "/pv-startup");
  std::vector<Claimed> claims = CreateClaims(fake, "existing", kStartupPairs, nullptr);
  std::vector<std::array<std::string, 3>> pvs;
  for (const Claimed& c : claims) pvs.push_back({"POST", "/api/v1/persistentvolumes", VolumeJson(c, pv_dir, true)});
  SendBatches(fake, pvs, [&](size_t i, const picojson::value& res) {
    if (Code(res) != 201) throw Failure("create " + claims[i].pv() + ": " + res.serialize());
  });
  fake.Admin()->Call("POST", "/fake/reset-requests");
  Provisioner p = StartProvisioner(fake, pv_dir, at.work + "/provisioner-startup.log");
  out.ready = p.ready_seconds;
  WaitCpuQuiet(p.proc->pid(), std::chrono::milliseconds(1000));
  out.mem = ReadMemory(p.proc->pid());
  Burst counted;
  ReadRequestLog(fake, {}, &counted);
  out.writes = counted.writes;
  return out;
}

void ReportIdle(const Idle& idle, Report* rep) {
  rep->Section("idle (from 1 s after /readyz, no claims)");
  rep->Add("VmRSS (resident)", MiB(idle.mem.rss_kib), "< 6 MiB", idle.mem.rss_kib < 6 * 1024);
  rep->Add("RssAnon (private)", MiB(idle.mem.anon_kib), "< 2 MiB", idle.mem.anon_kib < 2 * 1024);
  // Nothing is written to the fake meanwhile: the watches wake only for its BOOKMARK events
  // (every 5 s); a wake-up of any other thread is a timer or a poll of the provisioner's own.
  rep->Add("wake-ups over " + std::to_string(kIdleWindow.count()) + " s: watches / others",
           std::to_string(idle.watch_wakeups) + " / " + std::to_string(idle.other_wakeups), "others 0",
           idle.other_wakeups == 0);
  rep->Add("CPU over " + std::to_string(kIdleWindow.count()) + " s", Fmt("%.3f s", idle.cpu));
  rep->Add("exec -> /readyz 200, empty cluster", Fmt("%.3f s", idle.empty_ready));
  rep->Add("VmRSS / RssAnon after the bursts", MiB(idle.after_bursts.rss_kib) + " / " + MiB(idle.after_bursts.anon_kib));
}

void ReportStartup(const Startup& s, Report* rep) {
  rep->Section("start-up with " + std::to_string(kStartupPairs) + " bound claims and PVs");
  rep->Add("exec -> /readyz 200", Fmt("%.3f s", s.ready), "< 2 s", s.ready < 2);
  rep->Add("RssAnon (private) once quiet", MiB(s.mem.anon_kib), "< 32 MiB", s.mem.anon_kib < 32 * 1024);
  rep->Add("write requests at start-up", std::to_string(s.writes), "0", s.writes == 0);
}

void ReportBinary(const std::string& path, long bytes, Report* rep, picojson::object* json) {
  rep->Section("binary");
  rep->Add("size of " + path + " (stripped, static)", MiB(bytes / 1024), "< 6 MiB", bytes < 6L << 20);
  (*json)["binary_bytes"] = picojson::value(static_cast<double>(bytes));
}

}  // namespace bench
