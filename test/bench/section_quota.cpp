// The bodies of section_quota.hpp (the contracts are there).
#include "test/bench/section_quota.hpp"

#include <cstdio>

#include "test/bench/bursts.hpp"
#include "test/bench/provisioner.hpp"
#include "test/bench/section_bursts.hpp"
#include "test/support/loopfs.hpp"

namespace bench {

Quota RunQuota(const Places& at) {
  std::printf("bench: %d claims one at a time with quota \"true\" and %d without, on btrfs with qgroups\n", 2 * kTrickle,
              2 * kTrickle);
  std::fflush(stdout);
  Quota out;
  harness::LoopFs fs(Absolute(at.work) + "/btrfs", "btrfs", "4G");  // each claim asks for 1Gi
  if (!fs.mounted || harness::LoopFs::Sh("btrfs quota enable " + fs.dir) != 0) {
    out.skipped = fs.mounted ? "btrfs quota enable failed" : fs.why;
    return out;
  }
  Fake fake(at.work + "/api-quota");
  fake.CreateClass("enforced", "Immediate", "\"quota\":\"true\"");
  Provisioner p = StartProvisioner(fake, fs.dir, at.work + "/provisioner-quota.log");
  Target on{"enforced", &fake, {fs.dir}, {p.proc->pid()}, nullptr, "enforced"}, off{"plain", &fake, {fs.dir}, {p.proc->pid()}};
  for (int round = 0; round < 2; ++round) {
    for (const Target* t : {&on, &off}) {
      Burst b = Trickle(*t, std::string(t == &on ? "q" : "n") + std::to_string(round), kTrickle);
      std::vector<double>& into = t == &on ? out.on : out.off;
      into.insert(into.end(), b.latency_ms.begin(), b.latency_ms.end());
    }
  }
  return out;
}

void ReportQuota(const Quota& q, Report* rep, picojson::object* json) {
  rep->Section("enforced sizes (quota \"true\", btrfs subvolume and qgroup limit), claims one at a time");
  if (q.skipped.empty()) {
    const double ratio = Percentile(q.on, 0.5) / Percentile(q.off, 0.5);
    rep->Add("claim -> PV create, p50 / p99, enforced", Latency(q.on));
    rep->Add("claim -> PV create, p50 / p99, not enforced", Latency(q.off));
    rep->Add("p50 enforced / not enforced", Fmt("%.2fx", ratio), "< 2x", ratio < 2);
  } else {
    rep->Add("skipped", q.skipped);
  }
  (*json)["claim_to_pv_ms_quota"] = Array(q.on);
  (*json)["claim_to_pv_ms_no_quota"] = Array(q.off);
}

}  // namespace bench
