// The bodies of provisioner.hpp (the contracts are there).
#include "test/bench/provisioner.hpp"

#include <chrono>
#include <cstdlib>
#include <vector>

#include <httplib.h>

#include "test/bench/common.hpp"

namespace bench {

Provisioner StartProvisioner(const Fake& fake, const std::string& pv_dir, const std::string& log,
                             std::map<std::string, std::string> env) {
  Provisioner p;
  int port = p.port = harness::FreePort();
  env.insert({{"PV_DIR", pv_dir},
              {"KUBECONFIG", fake.dir() + "/provisioner.kubeconfig"},
              {"METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)},
              {"LOG_LEVEL", "0"},
              {"LEADER_ELECT_NAMESPACE", "kube-system"}});
  int64_t t0 = NowNs();
  p.proc = std::make_unique<harness::Process>(std::vector<std::string>{harness::Env("PROVISIONER", "./hostpath-provisioner")},
                                              env, log);
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(std::chrono::seconds(1));
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < end;) {
    auto r = cli.Get("/readyz");
    if (r && r->status == 200) {
      p.ready_seconds = static_cast<double>(NowNs() - t0) / 1e9;
      return p;
    }
    if (int code = 0; p.proc->WaitFor(std::chrono::milliseconds(0), &code)) throw Failure("the provisioner exited: " + p.proc->Log());
    SleepMs(2);
  }
  throw Failure("the provisioner was not ready within 60 s: " + p.proc->Log());
}

void WaitSmallClusterSettled(const std::vector<Provisioner>& instances) {
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < end;) {
    bool every = true, late = false;
    for (const Provisioner& p : instances) {
      every = every && MetricValue(p.port, "hostpath_provisioner_every_claim_watched") == 1;
      late = late || p.proc->Log().find("claims are labelled with their nodes only when still waiting") != std::string::npos;
    }
    if (every && late) return;
    SleepMs(200);
  }
  throw Failure("the node-aware instances did not all watch every claim within 60 s");
}

double MetricValue(int port, const std::string& name) {
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/metrics");
  if (!r || r->status != 200) return -1;
  size_t at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(r->body.c_str() + at + name.size() + 2);
}

}  // namespace bench
