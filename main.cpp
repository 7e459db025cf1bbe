// hostpath-provisioner: wiring only. Config -> API endpoint -> volume root -> controller ->
// HTTP endpoint -> wait for a signal -> stop acting, release the lease, end the rest. Exit
// codes: 0 clean stop, 2 bad configuration, 1 anything else that prevents starting, or a
// second SIGTERM or SIGINT during the stop (which is then abandoned).
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "control/controller.hpp"
#include "decide/names.hpp"
#include "fs/fsops.hpp"
#include "serve/http_endpoint.hpp"
#include "kube/k8s.hpp"
#include "kube/kubeconfig.hpp"
#include "kube/leader.hpp"
#include "base/log.hpp"
#include "serve/metrics.hpp"
#include "base/terminate.hpp"

#ifndef HP_VERSION
#define HP_VERSION "unknown"
#endif
#ifndef HP_COMMIT
#define HP_COMMIT "unknown"
#endif
// The platform --version names, as container images name it.
#if defined(__x86_64__)
#define HP_PLATFORM "linux/amd64"
#elif defined(__aarch64__)
#define HP_PLATFORM "linux/arm64"
#elif defined(__arm__)
#define HP_PLATFORM "linux/arm/v7"
#else
#define HP_PLATFORM "linux"
#endif

namespace {

int Fail(int code, const std::string& message) {
  LogError(message);
  return code;
}

// Blocks SIGTERM, SIGINT and SIGHUP in every thread, so that main can wait for them with
// sigwait.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

Result<ApiCredentials> LoadCredentials(const Config& cfg) {
  if (!cfg.kubeconfig.empty()) return LoadKubeconfig(cfg.kubeconfig, cfg.allow_insecure_kubeconfig);
  return LoadInCluster(cfg.serviceaccount_dir, [](const char* name) { return std::getenv(name); });
}

// This instance's name in the Lease: the pod's name (HOSTNAME) and a random suffix.
std::string Identity() {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "_%08x", rd());
  return host + std::string(suffix);
}

// What /healthz, /readyz and /metrics report.
class Probes : public ProbeSource {
 public:
  Probes(Controller* controller, const Roots* roots) : controller_(controller), roots_(roots) {}

  // The API requests the connections make, for the metrics; installed on the endpoint.
  RequestObserver Observer() {
    return [this](const std::string& verb, const std::string& resource, int code) { requests_.Count(verb, resource, code); };
  }
  // A standby replica (waiting for the lease) reports ready: it is healthy, just not leading;
  // unless `elector` is refused the lease (403: its Role is missing or names another Lease).
  void SetStandby(bool standby, const LeaderElector* elector = nullptr) {
    if (elector != nullptr) elector_ = elector;
    standby_ = standby;
  }

  Status Live() override {
    if (controller_->WorkerStuck(std::chrono::minutes(10))) return Status::Error("worker stuck on one key for over 10 minutes");
    if (Status s = roots_->Check(); !s.ok()) return Status::Error(s.message());
    return Status::Ok();
  }
  // Not ready when this instance cannot do its part (claims would wait), with the reason;
  // ready but "degraded" when it does it another way (node-aware, watching every claim).
  Status Ready() override {
    if (standby_) {
      const LeaderElector* elector = elector_;
      if (Status s = elector ? elector->LastError() : Status::Ok(); s.code() == Status::kForbidden)
        return Status::Error("may not take the lease: " + s.message());
      return Status(Status::kOk, "ok (standby: another instance holds the lease)");
    }
    if (!controller_->Synced()) return Status::Error("initial lists not done");
    if (std::string problem = controller_->dispatcher().Problem(); !problem.empty()) return Status::Error(problem);
    if (std::string missing = controller_->DispatchFallback(); !missing.empty())
      return Status(Status::kOk, "ok (degraded: watching every claim, as this instance " + missing + "; see its log)");
    return Status::Ok();
  }
  std::string Metrics() override { return MetricsText(*controller_, requests_, *roots_); }

 private:
  Controller* controller_;
  const Roots* roots_;
  RequestCounter requests_;
  std::atomic<bool> standby_{false};
  std::atomic<const LeaderElector*> elector_{nullptr};
};

// Raises the soft limit on open files to the hard one, as Go programs do at start: the default
// soft limit (often 1024) is easily used up by connections to the HTTP endpoint.
void RaiseOpenFileLimit() {
  struct rlimit r {};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t stop_signals = BlockStopSignals();
  RaiseOpenFileLimit();
  // One malloc arena for all threads: the threads mostly wait, and per-thread arenas would each
  // keep freed memory (notably after a large list) for no gain.
  mallopt(M_ARENA_MAX, 1);

  Result<Config> parsed = ParseConfig(std::vector<std::string>(argv + 1, argv + argc), [](const char* n) { return std::getenv(n); });
  if (!parsed.ok()) {
    std::fprintf(stderr, "hostpath-provisioner: %s\n", parsed.status().message().c_str());
    return 2;
  }
  const Config& cfg = *parsed;
  if (cfg.show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (cfg.show_version) {
    std::printf("hostpath-provisioner %s (commit %s, %s)\n", HP_VERSION, HP_COMMIT, HP_PLATFORM);
    return 0;
  }
  logging::Verbosity() = cfg.verbosity;
  logging::Json() = cfg.log_format == "json";

  Result<ApiCredentials> creds = LoadCredentials(cfg);
  if (!creds.ok()) return Fail(2, creds.status().message());
  Result<std::shared_ptr<ApiEndpoint>> endpoint = ApiEndpoint::From(*creds);
  if (!endpoint.ok()) return Fail(2, endpoint.status().message());
  (*endpoint)->request_timeout = std::chrono::seconds(cfg.api_timeout_seconds);

  Result<Root> root = Root::Open(cfg.pv_dir);
  if (!root.ok())
    return Fail(1, "PV_DIR " + cfg.pv_dir + ": " + root.status().message() +
                       " (create the folder, or mount the host folder there)");

  if (Status s = RootsApart(ConfiguredRoots(cfg)); !s.ok()) return Fail(2, s.message());
  Roots roots(std::move(*root), cfg.allowed_pv_dirs);
  Controller controller(cfg, *endpoint, &roots);
  Probes probes(&controller, &roots);
  (*endpoint)->observer = probes.Observer();
  HttpEndpoint http(cfg.metrics_address, &probes);
  std::string lease_ns = cfg.leader_elect_namespace.empty() ? creds->namespace_ : cfg.leader_elect_namespace;
  LeaseTimings timings;
  timings.lease_duration = std::chrono::seconds(cfg.lease_seconds);
  timings.renew_deadline = std::chrono::seconds(cfg.lease_seconds * 2 / 3);
  timings.retry_period = std::chrono::seconds(std::max(1, cfg.lease_seconds / 6));
  const std::string identity = Identity();
  LeaderElector elector(*endpoint, lease_ns, LeaseNameFor(cfg.provisioner_name), identity, timings);
  // Node-aware: the instances elect one to label claims with their nodes (dispatcher.hpp).
  // Every node stands: a candidate looks at the lease once a lease duration, not every retry.
  if (!cfg.node_name.empty()) {
    LeaseTimings dispatch = timings;
    dispatch.candidate_period = timings.lease_duration;
    controller.SetDispatchLease({lease_ns, LeaseNameFor(cfg.provisioner_name) + "-dispatch", identity, dispatch});
    controller.PublishCapacityIn(lease_ns);
  }
  if (cfg.leader_elect) {
    if (Status s = elector.Init(); !s.ok()) return Fail(1, s.message());
    controller.SetMayAct([&elector] { return elector.Leading(); });
    probes.SetStandby(true, &elector);
  }
  if (Status s = http.Start(); !s.ok()) return Fail(1, s.message());
  LogInfo(std::string("hostpath-provisioner ") + HP_VERSION + " starting: provisioner " + cfg.provisioner_name +
          (cfg.capacity_provisioner_name.empty() ? "" : " and " + cfg.capacity_provisioner_name + " (storage capacity)") +
          ", volumes in " + cfg.pv_dir + (cfg.allowed_pv_dirs.empty() ? "" : " (and classes' pvDir among " +
          std::to_string(cfg.allowed_pv_dirs.size()) + " more)") +
          (cfg.node_name.empty() ? ", single-node mode" : ", serving node " + cfg.node_name) + ", reclaim policy " +
          (cfg.reclaim_policy.empty() ? "from the StorageClass" : cfg.reclaim_policy) + ", API " +
          (*endpoint)->description);

  // Leading (or waiting to lead) happens beside the main thread, which only waits for a signal.
  std::atomic<bool> stopping{false};
  std::atomic<bool> leading{false};
  std::thread runner([&] {
    if (cfg.leader_elect) {
      if (!elector.Acquire([&] { return stopping.load(); })) return;
      leading = true;
      elector.StartRenewing([] {
        LogError("lost the lease: exiting so that only one instance provisions (it will be restarted)");
        std::_Exit(1);
      });
      probes.SetStandby(false);
    }
    if (Status s = controller.Start(); !s.ok()) {
      LogError(s.message());
      std::_Exit(1);
    }
  });

  int sig = 0;
  // SIGHUP (a closed terminal, or a reload asked of a daemon) stops nothing: there is nothing
  // to reload, since configuration is read once at start.
  while (sigwait(&stop_signals, &sig) == 0 && sig == SIGHUP)
    LogInfo("SIGHUP received: ignored (configuration is read at start; send SIGTERM to stop)");
  LogInfo(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
  std::thread([stop_signals] {
    int again = 0;
    while (sigwait(&stop_signals, &again) == 0 && again == SIGHUP) {
    }
    LogWarn(std::string(again == SIGTERM ? "SIGTERM" : "SIGINT") + " again while stopping: exiting at once");
    std::_Exit(1);
  }).detach();
  stopping = true;
  elector.CancelAcquire();  // a standby stops waiting at once
  runner.join();
  // The lease goes only once this instance acts no more: a successor then takes over at once,
  // instead of a lease duration after a kubelet killed this pod at the end of its grace period.
  if (!controller.Halt(std::chrono::seconds(3)))
    LogWarn("a worker is still busy after 3 s (a system call that does not return?); stopping anyway");
  if (leading) elector.Release();
  controller.Stop();
  http.Stop();
  return 0;
}
