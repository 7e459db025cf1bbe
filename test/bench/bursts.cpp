// The bodies of bursts.hpp (the contracts are there).
#include "test/bench/bursts.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "test/bench/proc_sample.hpp"

namespace bench {

void ReadRequestLog(const Fake& fake, const std::vector<Claimed>& claims, Burst* out) {
  Reply r = fake.Admin()->Call("GET", "/fake/requests");
  if (r.code != 200 || !r.json.is<picojson::array>()) throw Failure("GET /fake/requests: " + std::to_string(r.code));
  std::map<std::string, double> claim_t, pv_t;
  for (const auto& rec : r.json.get<picojson::array>()) {
    std::string user = Str(rec, {"user"}), verb = Str(rec, {"verb"}), resource = Str(rec, {"resource"});
    double t = rec.get("t_ns").is<double>() ? rec.get("t_ns").get<double>() : 0;
    if (verb == "create" && resource == "persistentvolumeclaims" && user == "admin") claim_t[Str(rec, {"name"})] = t;
    if (user != kSaUser) continue;
    if (verb == "create" && resource == "persistentvolumes") pv_t.emplace(Str(rec, {"name"}), t);
    int code = Code(rec);
    out->requests[verb + " " + resource + (code >= 300 ? " (" + std::to_string(code) + ")" : "")]++;
    if (verb == "create" || verb == "update" || verb == "patch" || verb == "delete") out->writes++;
    if (verb == "get") out->gets++;
  }
  for (const Claimed& c : claims) {
    auto a = claim_t.find(c.name), b = pv_t.find(c.pv());
    if (a != claim_t.end() && b != pv_t.end()) out->latency_ms.push_back((b->second - a->second) / 1e6);
  }
}

Burst RunBurst(const Target& t, bool create, const std::string& prefix, int n, std::vector<Claimed>* claims) {
  Burst b;
  auto admin = t.fake->Admin();
  admin->Call("POST", "/fake/reset-requests");
  std::string query = WaitQuery(*admin, create, prefix);
  t.fake->WarmClients();
  std::atomic<int64_t> last_ns{0};
  std::string err;
  std::thread waiter([&] {  // on its own connection
    try {
      last_ns = WaitInFake(*t.fake->Admin(), query, n);
    } catch (const std::exception& e) {
      err = e.what();
      last_ns = -1;
    }
  });
  if (t.before) t.before(create);
  double cpu0 = CpuSeconds(t.provisioners);
  int64_t t0 = NowNs(), dirs_gone = 0;
  try {
    if (create)
      *claims = CreateClaims(
          *t.fake, prefix, n, [&](const Claimed& c) { if (t.baseline) t.baseline->Push(true, c); }, t.cls, t.nodes);
    else
      DeleteClaims(*t.fake, *claims, [&](const Claimed& c) { if (t.baseline) t.baseline->Push(false, c); });
    // Both remove the directory before the PV: look at the directories once the PVs are gone.
    auto end = std::chrono::steady_clock::now() + kBurstLimit;
    for (long polls = 0; last_ns == 0 || (!create && last_ns > 0 && dirs_gone == 0); ++polls) {
      if (std::chrono::steady_clock::now() > end) throw Failure(std::string(t.who) + " burst not done within 120 s");
      if (t.baseline && !t.baseline->error().empty()) throw Failure("baseline: " + t.baseline->error());
      if (!create && last_ns > 0 &&
          std::all_of(t.pv_dirs.begin(), t.pv_dirs.end(), [&](const std::string& d) { return CountEntries(d) == t.kept; }))
        dirs_gone = NowNs();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      if (polls % 10 == 0)
        for (pid_t pid : t.provisioners) b.peak_rss_kib = std::max(b.peak_rss_kib, ReadMemory(pid).rss_kib);
    }
  } catch (...) {
    waiter.join();
    throw;
  }
  waiter.join();
  if (!err.empty()) throw Failure(err);
  b.seconds = static_cast<double>(std::max<int64_t>(last_ns, dirs_gone) - t0) / 1e9;
  b.cpu_seconds = CpuSeconds(t.provisioners) - cpu0;
  if (t.after) t.after(create);
  SleepMs(300);  // let the trailing events (and anything else the burst caused) be sent
  ReadRequestLog(*t.fake, create ? *claims : std::vector<Claimed>{}, &b);
  return b;
}

void Alternate(const Target& a, const Target& b, int n, int rounds,
               const std::function<void(const Target&, bool, const Burst&)>& done) {
  for (int round = 0; round < rounds; ++round) {
    const Target* order[] = {round % 2 == 0 ? &a : &b, round % 2 == 0 ? &b : &a};
    std::map<const Target*, std::vector<Claimed>> claims;
    for (bool create : {true, false})
      for (const Target* t : order) {
        Burst burst = RunBurst(*t, create, t->who[0] + std::to_string(round), n, &claims[t]);
        std::printf("  %-11s %s %d: %.3f s", t->who, create ? "create" : "delete", n, burst.seconds);
        if (!t->provisioners.empty()) std::printf(", provisioner CPU %.3f s", burst.cpu_seconds);
        std::printf("\n");
        std::fflush(stdout);
        done(*t, create, burst);
      }
  }
}

Burst Trickle(const Target& t, const std::string& prefix, int n) {
  Burst b;
  auto admin = t.fake->Admin(), waiter = t.fake->Admin();
  admin->Call("POST", "/fake/reset-requests");
  std::string query = WaitQuery(*admin, true, prefix);
  std::vector<Claimed> claims;
  for (int i = 0; i < n; ++i) {
    std::string name = prefix + "-" + std::to_string(i);
    Reply r = admin->Call("POST", kClaims, ClaimJson(name, t.cls));
    if (r.code != 201) throw Failure("create claim " + name + ": " + std::to_string(r.code) + " " + r.body);
    claims.push_back({name, Str(r.json, {"metadata", "uid"})});
    if (t.baseline) t.baseline->Push(true, claims.back());
    WaitInFake(*waiter, query, i + 1);
  }
  SleepMs(300);
  ReadRequestLog(*t.fake, claims, &b);
  RunBurst(t, false, prefix, n, &claims);
  return b;
}

}  // namespace bench
