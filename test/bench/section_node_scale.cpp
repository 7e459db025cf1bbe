// The bodies of section_node_scale.hpp (the contracts are there).
#include "test/bench/section_node_scale.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "test/bench/bursts.hpp"
#include "test/bench/provisioner.hpp"
#include "test/fake/fake_kubelet.hpp"

namespace bench {
namespace {

const char* const kWatched[] = {"persistentvolumeclaims", "persistentvolumes"};

// The collection's current resourceVersion.
std::string CurrentRv(Api& admin, const std::string& resource) {
  Reply r = admin.Call("GET", "/api/v1/" + resource + "?limit=1");
  std::string rv = Str(r.json, {"metadata", "resourceVersion"});
  if (r.code != 200 || rv.empty()) throw Failure("list " + resource + ": " + std::to_string(r.code) + " " + r.body);
  return rv;
}

// The events of `resource` in the fake's history after `rv`: a watch from there, replayed after
// the fact (it ends after 1 s), so that counting adds no watch during a burst.
long EventsSince(Api& admin, const std::string& resource, const std::string& rv) {
  Reply r = admin.Call("GET", "/api/v1/" + resource + "?watch=true&resourceVersion=" + rv + "&timeoutSeconds=1", "", false);
  if (r.code != 200) throw Failure("watch " + resource + " from " + rv + ": " + std::to_string(r.code) + " " + r.body);
  long n = 0;
  for (size_t at = 0, end; at < r.body.size(); at = end + 1) {  // one event per line
    end = std::min(r.body.find('\n', at), r.body.size());
    picojson::value event;
    if (end == at || !picojson::parse(event, r.body.substr(at, end - at)).empty()) continue;
    const std::string type = Str(event, {"type"});
    if (type == "ERROR") throw Failure("watch " + resource + " from " + rv + ": " + r.body.substr(at, 300));
    if (type != "BOOKMARK") ++n;
  }
  return n;
}

// A fake with `nodes` registered nodes and the class hostpath-wffc; a history long enough to
// replay every event of the bursts.
std::unique_ptr<Fake> ScaleFake(const std::string& dir, int nodes, bool aware) {
  auto fake = std::make_unique<Fake>(dir, std::vector<std::string>{"--history", "200000"},
                                     aware ? "manifests/daemonset/rbac.yaml" : "");
  fake->CreateClass("hostpath-wffc", "WaitForFirstConsumer");
  std::vector<std::array<std::string, 3>> requests;
  for (int i = 0; i < nodes; ++i)
    requests.push_back({"POST", "/api/v1/nodes", fake_kubelet::NodeJson("node-" + std::to_string(i))});
  SendBatches(*fake, requests, [&](size_t i, const picojson::value& res) {
    if (Code(res) != 201) throw Failure("register " + requests[i][1] + " node-" + std::to_string(i) + ": " + res.serialize());
  });
  return fake;
}

// The largest of the processes by VmRSS.
Memory Largest(const std::vector<pid_t>& pids) {
  Memory out;
  for (pid_t pid : pids)
    if (Memory m = ReadMemory(pid); m.rss_kib > out.rss_kib) out = m;
  return out;
}

// One side: its fake, its instances (node-aware: NODE_NAME node-i each) and the burst's Target,
// whose hooks take the side's figures.
class Side {
 public:
  Side(const Places& at, const std::string& name, int nodes, bool aware, ScaleSide* out)
      : out_(out), claims_(nodes * ClaimsPerNode(nodes)), fake_(ScaleFake(at.work + "/api-" + name, nodes, aware)) {
    target_ = Target{aware ? "node-aware" : "single-node", fake_.get(), {}, {}, nullptr, "hostpath-wffc", nodes};
    const int64_t t0 = NowNs();
    for (int i = 0; i < (aware ? nodes : 1); ++i) {
      const std::string node = aware ? "node-" + std::to_string(i) : "single";
      target_.pv_dirs.push_back(MakeDir(at.volumes + "/pv-" + name + "-" + node));
      std::map<std::string, std::string> env;
      if (aware) env["NODE_NAME"] = node;
      // A small cluster: the instances look at the dispatch Lease every 6 s, not 30 s, so that the
      // bench need not wait a minute for every instance to watch every claim.
      if (aware && nodes <= kSmallCluster) env["LEADER_ELECT_LEASE_DURATION"] = "6";
      instances_.push_back(StartProvisioner(*fake_, target_.pv_dirs.back(),
                                            at.work + "/provisioner-" + name + "-" + node + ".log", env));
      target_.provisioners.push_back(instances_.back().proc->pid());
    }
    out_->instances = static_cast<int>(instances_.size());
    out_->start_seconds = static_cast<double>(NowNs() - t0) / 1e9;
    if (aware && nodes <= kSmallCluster) WaitSmallClusterSettled(instances_);
    WaitCpuQuiet(target_.provisioners, std::chrono::milliseconds(300));
    out_->before = Largest(target_.provisioners);
    Burst started;  // the watches they opened, from the request log (every burst resets it)
    ReadRequestLog(*fake_, {}, &started);
    for (const auto& [what, n] : started.requests)
      if (what.rfind("watch ", 0) == 0) out_->watches[what.substr(6)] += n;
    out_->claim_watches = out_->watches["persistentvolumeclaims"];
    out_->pv_watches = out_->watches["persistentvolumes"];
    target_.before = [this](bool create) { Before(create); };
    target_.after = [this](bool create) { After(create); };
  }
  const Target& target() const { return target_; }
  // The burst's own figures, once it is done.
  void Done(bool create, const Burst& b) {
    if (create) {
      out_->create_bound.push_back(b.seconds);
      // From the request log (reset at the burst's start): the first claim's create, the last PV's.
      double first_claim = 0, last_pv = 0;
      std::map<std::string, double> created, labelled;  // by claim name: its create, the dispatcher's label
      Reply r = fake_->Admin()->Call("GET", "/fake/requests");
      if (r.code != 200 || !r.json.is<picojson::array>()) throw Failure("GET /fake/requests: " + std::to_string(r.code));
      for (const auto& rec : r.json.get<picojson::array>()) {
        const std::string user = Str(rec, {"user"}), verb = Str(rec, {"verb"}), resource = Str(rec, {"resource"});
        const double t = rec.get("t_ns").is<double>() ? rec.get("t_ns").get<double>() : 0;
        if (user == "admin" && verb == "create" && resource == "persistentvolumeclaims") {
          if (first_claim == 0 || t < first_claim) first_claim = t;
          created[Str(rec, {"name"})] = t;
        }
        if (user == kSaUser && verb == "patch" && resource == "persistentvolumeclaims") labelled.emplace(Str(rec, {"name"}), t);
        if (user == kSaUser && verb == "create" && resource == "persistentvolumes") last_pv = std::max(last_pv, t);
      }
      out_->create_pvs.push_back((last_pv - first_claim) / 1e9);
      for (const auto& [name, t] : labelled)
        if (created.count(name)) out_->label_delay.push_back((t - created[name]) / 1e9);
      out_->requests = b.requests;
      long sent = 0;
      for (const auto& [what, n] : b.requests) sent += n;
      out_->requests_per_claim.push_back(static_cast<double>(sent) / claims_);
    } else {
      out_->delete_gone.push_back(b.seconds);
    }
  }

 private:
  void Before(bool create) {
    auto admin = fake_->Admin();
    if (create)
      for (int i = 0; i < 2; ++i) rv_[i] = CurrentRv(*admin, kWatched[i]);
    for (pid_t pid : target_.provisioners) cpu0_[pid] = CpuSeconds(pid);
    if (create) fake_cpu0_ = CpuSeconds(fake_->pid());
    if (create) received0_ = Received();
  }
  // Until the instances are quiet: the CPU of the events that trail the last Bound (or gone).
  void After(bool create) {
    WaitCpuQuiet(target_.provisioners, std::chrono::milliseconds(300));
    double sum = 0;
    for (pid_t pid : target_.provisioners) {
      const double used = CpuSeconds(pid) - cpu0_[pid];
      sum += used;
      if (create) out_->instance_cpu.push_back(used);
    }
    (create ? out_->create_cpu : out_->delete_cpu).push_back(sum);
    if (create) {
      for (const Provisioner& p : instances_) {
        Memory m = ReadMemory(p.proc->pid());
        const bool dispatcher = MetricValue(p.port, "hostpath_provisioner_dispatcher") == 1;
        Memory& largest = dispatcher ? out_->dispatcher_after : out_->after;
        if (m.rss_kib > largest.rss_kib) largest = m;
        out_->cached_claims = std::max(out_->cached_claims,
                                       MetricValue(p.port, "hostpath_provisioner_cached_objects{kind=\"PersistentVolumeClaim\"}"));
        out_->cached_pvs = std::max(out_->cached_pvs,
                                    MetricValue(p.port, "hostpath_provisioner_cached_objects{kind=\"PersistentVolume\"}"));
      }
      return;
    }
    out_->fake_cpu.push_back(CpuSeconds(fake_->pid()) - fake_cpu0_);
    auto admin = fake_->Admin();
    out_->claim_events.push_back(static_cast<double>(EventsSince(*admin, kWatched[0], rv_[0])));
    out_->pv_events.push_back(static_cast<double>(EventsSince(*admin, kWatched[1], rv_[1])));
    out_->received.push_back(Received() - received0_);
  }
  // What every instance's watches received so far (/metrics).
  double Received() const {
    double sum = 0;
    for (const Provisioner& p : instances_) sum += MetricValue(p.port, "hostpath_provisioner_watch_objects_total");
    return sum;
  }

  ScaleSide* out_;
  int claims_;  // in a burst
  std::unique_ptr<Fake> fake_;
  std::vector<Provisioner> instances_;
  Target target_;
  std::map<pid_t, double> cpu0_;
  double fake_cpu0_ = 0, received0_ = 0;
  std::string rv_[2];
};

}  // namespace

std::vector<NodeScale> RunNodeScale(const Places& at, const std::vector<int>& nodes) {
  std::vector<NodeScale> out;
  for (int n : nodes) {
    const int claims = n * ClaimsPerNode(n);
    std::printf("bench: node scale: %d node-aware instances on one fake, %d claims (%d per node), against one "
                "single-node instance, %d rounds\n", n, claims, ClaimsPerNode(n), ScaleRounds(n));
    std::fflush(stdout);
    out.push_back({n});
    NodeScale& r = out.back();
    const std::string name = "scale" + std::to_string(n);
    Side aware(at, name + "-nodes", n, true, &r.aware);
    std::printf("  %d node-aware instances ready in %.2f s\n", n, r.aware.start_seconds);
    Side single(at, name + "-single", n, false, &r.single);
    Alternate(aware.target(), single.target(), claims, ScaleRounds(n), [&](const Target& t, bool create, const Burst& b) {
      (&t == &aware.target() ? aware : single).Done(create, b);
    });
  }
  return out;
}

void ReportNodeScale(const std::vector<NodeScale>& runs, Report* rep, picojson::object* json) {
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  auto pair = [&](const char* f, const std::vector<double>& a, const std::vector<double>& b, const char* unit) {
    return Fmt(f, median(a)) + " / " + Fmt(f, median(b)) + unit + Fmt(" = %.2fx", median(a) / median(b));
  };
  picojson::array out;
  for (const NodeScale& r : runs) {
    const ScaleSide &a = r.aware, &s = r.single;
    const int claims = r.nodes * ClaimsPerNode(r.nodes);
    rep->Section("node scale: " + std::to_string(r.nodes) + " node-aware instances on one fake (WaitForFirstConsumer, " +
                 std::to_string(ClaimsPerNode(r.nodes)) + " claims per node, " + std::to_string(claims) +
                 " at once) / one single-node instance, the same claims, " + std::to_string(a.create_bound.size()) +
                 " rounds (medians)");
    rep->Add("CPU until quiet, create: summed / single", pair("%.3f", a.create_cpu, s.create_cpu, " s"));
    rep->Add("CPU until quiet, delete: summed / single", pair("%.3f", a.delete_cpu, s.delete_cpu, " s"));
    rep->Add("one instance's CPU in a create: min / median / max",
             Fmt("%.3f", *std::min_element(a.instance_cpu.begin(), a.instance_cpu.end())) +
                 Fmt(" / %.3f", median(a.instance_cpu)) +
                 Fmt(" / %.3f s", *std::max_element(a.instance_cpu.begin(), a.instance_cpu.end())));
    rep->Add("create until all PVs exist: node-aware / single", pair("%.3f", a.create_pvs, s.create_pvs, " s"));
    rep->Add("create until all Bound: node-aware / single", pair("%.3f", a.create_bound, s.create_bound, " s"));
    if (!a.label_delay.empty())
      rep->Add("a claim's create -> the dispatcher's label: median / p90 / max",
               Fmt("%.1f", 1000 * Percentile(a.label_delay, 0.5)) + Fmt(" / %.1f", 1000 * Percentile(a.label_delay, 0.9)) +
                   Fmt(" / %.1f ms", 1000 * *std::max_element(a.label_delay.begin(), a.label_delay.end())));
    rep->Add("delete until all gone: node-aware / single", pair("%.3f", a.delete_gone, s.delete_gone, " s"));
    rep->Add("largest VmRSS / its RssAnon after a create (node-aware: not the dispatcher)",
             MiB(a.after.rss_kib) + " / " + MiB(a.after.anon_kib) + " vs " + MiB(s.after.rss_kib) + " / " + MiB(s.after.anon_kib));
    rep->Add("the dispatcher's VmRSS / RssAnon after a create", MiB(a.dispatcher_after.rss_kib) + " / " +
                                                                 MiB(a.dispatcher_after.anon_kib));
    rep->Add("largest cache after a create, claims / PVs: node-aware vs single",
             Fmt("%.0f", a.cached_claims) + Fmt(" / %.0f", a.cached_pvs) + Fmt(" vs %.0f", s.cached_claims) +
                 Fmt(" / %.0f", s.cached_pvs));
    rep->Add("largest VmRSS / its RssAnon before the bursts",
             MiB(a.before.rss_kib) + " / " + MiB(a.before.anon_kib) + " vs " + MiB(s.before.rss_kib) + " / " +
                 MiB(s.before.anon_kib));
    rep->Add("watches on claims / PVs: node-aware vs single",
             std::to_string(a.claim_watches) + " / " + std::to_string(a.pv_watches) + " vs " + std::to_string(s.claim_watches) +
                 " / " + std::to_string(s.pv_watches));
    rep->Add("claim / PV events per round (create + delete)",
             Fmt("%.0f", median(a.claim_events)) + Fmt(" / %.0f", median(a.pv_events)) + Fmt(" vs %.0f", median(s.claim_events)) +
                 Fmt(" / %.0f", median(s.pv_events)));
    rep->Add("objects the instances' watches received per round: summed / single",
             pair("%.0f", a.received, s.received, ""));
    rep->Add("fake API server CPU per round: node-aware / single", pair("%.3f", a.fake_cpu, s.fake_cpu, " s"));
    rep->Add("instances' requests in a create burst, per claim", Requests(a.requests, claims));
    rep->Add("the single one's", Requests(s.requests, claims));
    rep->Add("start, one instance after another, until all ready", Fmt("%.2f s", a.start_seconds) + Fmt(" vs %.2f s", s.start_seconds));
    picojson::object o;
    o["nodes"] = picojson::value(static_cast<double>(r.nodes));
    o["claims"] = picojson::value(static_cast<double>(claims));
    for (const auto* side : {&a, &s}) {
      picojson::object p;
      p["instances"] = picojson::value(static_cast<double>(side->instances));
      p["create_bound_seconds"] = Array(side->create_bound);
      p["create_pvs_seconds"] = Array(side->create_pvs);
      p["label_delay_seconds"] = Array(side->label_delay);
      p["delete_gone_seconds"] = Array(side->delete_gone);
      p["create_cpu_seconds"] = Array(side->create_cpu);
      p["delete_cpu_seconds"] = Array(side->delete_cpu);
      p["instance_create_cpu_seconds"] = Array(side->instance_cpu);
      p["fake_cpu_seconds"] = Array(side->fake_cpu);
      p["largest_rss_kib_after"] = picojson::value(static_cast<double>(side->after.rss_kib));
      p["largest_anon_kib_after"] = picojson::value(static_cast<double>(side->after.anon_kib));
      p["dispatcher_rss_kib_after"] = picojson::value(static_cast<double>(side->dispatcher_after.rss_kib));
      p["dispatcher_anon_kib_after"] = picojson::value(static_cast<double>(side->dispatcher_after.anon_kib));
      p["largest_cached_claims"] = picojson::value(side->cached_claims);
      p["largest_cached_pvs"] = picojson::value(side->cached_pvs);
      p["largest_rss_kib_before"] = picojson::value(static_cast<double>(side->before.rss_kib));
      p["largest_anon_kib_before"] = picojson::value(static_cast<double>(side->before.anon_kib));
      p["claim_events"] = Array(side->claim_events);
      p["pv_events"] = Array(side->pv_events);
      p["watch_objects_received"] = Array(side->received);
      p["requests_per_claim"] = Array(side->requests_per_claim);
      picojson::object w;
      for (const auto& [k, v] : side->watches) w[k] = picojson::value(static_cast<double>(v));
      p["watches"] = picojson::value(w);
      o[side == &a ? "node_aware" : "single_node"] = picojson::value(p);
    }
    out.emplace_back(o);
  }
  (*json)["node_scale"] = picojson::value(out);
  if (runs.size() < 2) return;
  // The cases side by side, each against its single instance (issue 54's four figures). The
  // targets: a small cluster within 1.5x of one instance's time to all PVs (issue 54); 24
  // instances within 3x its CPU and 2x its time (issue 46); 100 instances as measured.
  rep->Section("node scale, side by side: node-aware / single (medians)");
  for (const NodeScale& r : runs) {
    const ScaleSide &a = r.aware, &s = r.single;
    const std::string n = "N = " + std::to_string(r.nodes) + ", " + std::to_string(r.nodes * ClaimsPerNode(r.nodes)) +
                          " claims: ";
    const double pvs = median(a.create_pvs) / median(s.create_pvs), cpu = median(a.create_cpu) / median(s.create_cpu);
    const bool small = r.nodes <= kSmallCluster, issue46 = r.nodes == 24;
    rep->Add(n + "until all PVs", pair("%.3f", a.create_pvs, s.create_pvs, " s"), small ? "<= 1.5x" : issue46 ? "<= 2x" : "",
             small || issue46 ? (pvs <= (small ? 1.5 : 2) ? 1 : 0) : -1);
    rep->Add(n + "until all Bound", pair("%.3f", a.create_bound, s.create_bound, " s"));
    rep->Add(n + "CPU, create, summed", pair("%.3f", a.create_cpu, s.create_cpu, " s"), issue46 ? "<= 3x" : "",
             issue46 ? (cpu <= 3 ? 1 : 0) : -1);
    rep->Add(n + "requests per claim", Fmt("%.2f", median(a.requests_per_claim)) + Fmt(" / %.2f", median(s.requests_per_claim)));
  }
}

}  // namespace bench
