// The bodies of section_bursts.hpp (the contracts are there).
#include "test/bench/section_bursts.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "test/bench/baseline.hpp"
#include "test/bench/provisioner.hpp"

namespace bench {

Bursts RunBursts(const Places& at) {
  Bursts out;
  Fake fake_p(at.work + "/api-provisioner"), fake_b(at.work + "/api-baseline");
  std::string pv_p = MakeDir(at.volumes + "/pv-provisioner"), pv_b = MakeDir(at.volumes + "/pv-baseline");
  Provisioner p = StartProvisioner(fake_p, pv_p, at.work + "/provisioner.log");
  out.idle = MeasureIdle(p.proc->pid());
  out.idle.empty_ready = p.ready_seconds;

  Baseline baseline(fake_b, pv_b);
  Target ours{"provisioner", &fake_p, {pv_p}, {p.proc->pid()}}, base{"baseline", &fake_b, {pv_b}, {}, &baseline};
  std::printf("bench: %d claims one at a time, then %d rounds of %d claims at once\n", kTrickle, kRounds, kBurst);
  std::fflush(stdout);
  out.trickle_p = Trickle(ours, "ptrickle", kTrickle);
  out.trickle_b = Trickle(base, "btrickle", kTrickle);
  Alternate(ours, base, kBurst, kRounds, [&](const Target& t, bool create, const Burst& b) {
    (create ? (t.baseline ? out.create_b : out.create_p) : (t.baseline ? out.delete_b : out.delete_p)).push_back(b.seconds);
    if (t.baseline) return;
    Burst& pool = create ? out.creates : out.deletes;
    pool.latency_ms.insert(pool.latency_ms.end(), b.latency_ms.begin(), b.latency_ms.end());
    for (const auto& [k, v] : b.requests) pool.requests[k] += v;
    pool.writes += b.writes;
    pool.gets += b.gets;
    pool.cpu_seconds += b.cpu_seconds;
    pool.peak_rss_kib = std::max(pool.peak_rss_kib, b.peak_rss_kib);
  });
  out.idle.after_bursts = ReadMemory(p.proc->pid());
  p.proc->Signal(SIGTERM);
  int code = -1;
  if (!p.proc->WaitFor(std::chrono::seconds(20), &code)) code = -1;
  if (code != 0) throw Failure("the provisioner did not stop cleanly on SIGTERM (exit " + std::to_string(code) + ")");
  return out;
}

void ReportTrickle(const Bursts& b, Report* rep) {
  rep->Section(std::to_string(kTrickle) + " claims one at a time (each created once the previous is Bound)");
  rep->Add("claim -> PV create, p50 / p99", Latency(b.trickle_p.latency_ms), "p50 < 5 ms",
           Percentile(b.trickle_p.latency_ms, 0.5) < 5);
  rep->Add("the baseline's, p50 / p99", Latency(b.trickle_b.latency_ms));
}

void ReportBursts(const Bursts& b, Report* rep, picojson::object* json) {
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  auto per_volume = [](long n, size_t volumes) { return static_cast<double>(n) / static_cast<double>(volumes); };
  const size_t volumes = static_cast<size_t>(kBurst) * b.create_p.size();
  const Burst &creates = b.creates, &deletes = b.deletes;
  rep->Section(std::to_string(kBurst) + " claims at once, " + std::to_string(b.create_p.size()) + " rounds (medians)");
  double create_ratio = median(b.create_p) / median(b.create_b), delete_ratio = median(b.delete_p) / median(b.delete_b);
  rep->Add("create until all Bound: provisioner / baseline",
           Fmt("%.3f", median(b.create_p)) + Fmt(" / %.3f s", median(b.create_b)) + Fmt(" = %.2fx", create_ratio), "<= 2x",
           create_ratio <= 2);
  rep->Add("delete until all gone: provisioner / baseline",
           Fmt("%.3f", median(b.delete_p)) + Fmt(" / %.3f s", median(b.delete_b)) + Fmt(" = %.2fx", delete_ratio));
  rep->Add("write requests per volume, create / delete",
           Fmt("%.2f", per_volume(creates.writes, volumes)) + Fmt(" / %.2f", per_volume(deletes.writes, volumes)), "<= 2",
           creates.writes <= 2 * static_cast<long>(volumes) && deletes.writes <= 2 * static_cast<long>(volumes));
  rep->Add("per-claim reads (get) per volume", Fmt("%.2f", per_volume(creates.gets + deletes.gets, volumes)), "0",
           creates.gets + deletes.gets == 0);
  rep->Add("requests per volume, create", Requests(creates.requests, static_cast<long>(volumes)));
  rep->Add("requests per volume, delete", Requests(deletes.requests, static_cast<long>(volumes)));
  rep->Add("claim -> PV create in a burst, p50 / p99", Latency(creates.latency_ms));
  rep->Add("provisioner CPU per 1000 volumes, create / delete",
           Fmt("%.3f", creates.cpu_seconds * 1000 / static_cast<double>(volumes)) +
               Fmt(" / %.3f s", deletes.cpu_seconds * 1000 / static_cast<double>(volumes)));
  rep->Add("provisioner peak VmRSS in a burst (sampled)", MiB(std::max(creates.peak_rss_kib, deletes.peak_rss_kib)));
  (*json)["create_seconds_provisioner"] = Array(b.create_p);
  (*json)["create_seconds_baseline"] = Array(b.create_b);
  (*json)["delete_seconds_provisioner"] = Array(b.delete_p);
  (*json)["delete_seconds_baseline"] = Array(b.delete_b);
}

}  // namespace bench
