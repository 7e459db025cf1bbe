// make bench: how fast and how frugal the provisioner is, against the fake API server on
// loopback (GitHub issue "Performance").
//
// For bursts of N = 100 and N = 1000 claims created at once, then deleted at once, it measures
//  - the time from the first claim's create until all are Bound (until every PV and directory
//    is gone, for deletions), for the provisioner and for a baseline client (below), in the
//    same run, and their ratio;
//  - per-claim latency, claim create -> PV create, from the fake's request log timestamps;
//  - API requests of the provisioner's service account per volume, by verb and resource;
//  - the provisioner's CPU seconds per 1000 volumes, and its peak memory during the burst;
//  - the fake API server's own CPU seconds and share.
// Then it finds out which side limits a burst of 1000 (the bottleneck runs): the provisioner's
// bursts are run again, interleaved, with nothing taken away, with a quarter of the fake's CPU
// taken by a process that spins (CpuThief), with the fake slowed evenly by as much (Taken),
// and with a quarter of each of the provisioner's CPUs taken. The fake is not the bottleneck if
// the burst is hardly slower without a quarter of its CPU. (CPU shares alone do not tell: the provisioner batches more when it falls behind,
// so its share shrinks when it has less CPU, and it is not the side with headroom.)
// Between bursts it times a fixed piece of work on each CPU: how much the machine's own speed
// varied over the run, against which the differences above can be weighed.
// It also measures the provisioner's memory and CPU at idle (ticks, wake-ups), the stripped
// binary's size, and start-up (exec -> /readyz 200, then memory) with 10 000 bound claims and
// PVs already in the API server, then bursts of 1000 claims with those cached: the provisioner's
// CPU per volume against the same bursts in an empty cluster (work per event must not grow with
// the number of objects).
//
// The baseline client does only the irreducible work of a provisioner: for each claim, as the
// claim's create returns (that is how it learns the uid), one mkdir and one PV create; for a
// deletion, one rmdir and one PV delete. No watches, no cache, no events, no finalizer. It works
// on four threads, as many as the provisioner's default workers, each with a keep-alive HTTPS
// connection of its own and the service account's token, through the same HTTPS client as the
// provisioner (http_client.hpp), as do the bench's own clients.
//
// With two CPUs or more the fake API server runs on a CPU of its own, and everything else on
// the rest (see Cpus). The bench sees claims become Bound and PVs go by waiting in the fake
// (GET /fake/wait: the time each was recorded), not through a watch of its own that would
// add to the fake's work.
//
// A benchmark, not a test: no timing is asserted. Exit 0 unless something broke (a process
// that does not start, a burst that does not complete within 120 s); then exit 1.
// Output: a table on stdout and build/bench.json. Work files and logs: build/bench-run/, replaced
// on each run. Volume directories: on a tmpfs (see VolumesRoot), removed at the end. Binaries: FAKE_APISERVER, PROVISIONER as in test/harness.hpp. With the argument
// --startup-only it runs only the start-up measurement (for profiling it).
#include <dirent.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test/harness.hpp"
#include "http_client.hpp"

namespace {

using harness::Reply;

constexpr const char* kNs = "default";
const std::string kClaims = std::string("/api/v1/namespaces/") + kNs + "/persistentvolumeclaims";
constexpr const char* kSaUser = "system:serviceaccount:kube-system:hostpath-provisioner";
constexpr const char* kProvisionerName = "hostpath-provisioner.io/hostpath";
constexpr int kClientThreads = 4;                           // threads that create or delete a burst's claims
constexpr int kBatch = 25;                                  // claims per request of theirs (POST /fake/batch)
constexpr int kBaselineThreads = 4;                         // the baseline's, as the provisioner's default WORKERS
constexpr auto kBurstLimit = std::chrono::seconds(120);     // a burst not done by then is a failure
constexpr auto kIdleWindow = std::chrono::seconds(10);      // idle CPU and wake-ups are counted over this
constexpr int kStartupPairs = 10000;                        // bound claims and PVs present at start-up
constexpr int kCachedBurst = 1000, kCachedRounds = 3;       // bursts with those cached (work per event)

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// ---------------------------------------------------------------------------------------------
// /proc figures of a process.

// utime + stime of the process (all its threads, also exited ones), in clock ticks; -1 if gone.
long CpuTicks(pid_t pid) {
  std::string s = harness::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  if (f.size() < 13) return -1;  // f[0] is field 3 (state); utime is field 14, stime field 15
  return std::stol(f[11]) + std::stol(f[12]);
}

double TicksToSeconds(long ticks) { return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK)); }

// The number in a "Name:  value" line of a /proc status file; -1 if there is none.
long StatusField(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + ":");
  if (at == std::string::npos) return -1;
  return std::atol(text.c_str() + at + name.size() + 2);
}

struct Memory {
  long rss_kib = -1;   // VmRSS
  long anon_kib = -1;  // RssAnon: private memory (heap, stacks), what more objects cost
  long hwm_kib = -1;   // VmHWM: peak VmRSS since start
  long file_kib = -1;  // RssFile: pages of the binary in memory (shared with the page cache)
};

Memory ReadMemory(pid_t pid) {
  std::string s = harness::ReadFile("/proc/" + std::to_string(pid) + "/status");
  return {StatusField(s, "VmRSS"), StatusField(s, "RssAnon"), StatusField(s, "VmHWM"), StatusField(s, "RssFile")};
}

// Ticks of the whole machine, from /proc/stat.
struct MachineTicks {
  long busy = 0;    // all CPUs: total minus idle, iowait and steal
  long stolen = 0;  // steal: time the VM's CPUs were ready to run but the host ran something else
};
MachineTicks ReadMachineTicks() {
  std::istringstream in(harness::ReadFile("/proc/stat"));
  std::string cpu;
  long v[8] = {};  // user nice system idle iowait irq softirq steal
  in >> cpu;
  for (long& x : v) in >> x;
  long total = 0;
  for (long x : v) total += x;
  return {total - v[3] - v[4] - v[7], v[7]};
}

// The 1-minute load average (other work on the machine disturbs the timings).
double LoadAverage() { return std::atof(harness::ReadFile("/proc/loadavg").c_str()); }

// How fast a CPU is at this moment: the time, in ms, that a fixed piece of work (writing a MiB
// and integer arithmetic, about 6 ms) takes on a thread pinned to `cpu`, between bursts when
// nothing else runs there; -1 if it cannot be pinned there. Wall time, not CPU time: the
// kernel leaves the host's steal out of a thread's CPU time, and on this project's VM steal was
// a quarter of the CPUs' busy time over one run. Timings of bursts change with it:
// the spread of these probes over a run says whether the machine kept its speed.
double FixedWorkMs(int cpu) {
  double ms = -1;
  std::thread probe([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return;  // 0: this thread
    std::vector<unsigned char> buf(1 << 20);
    auto start = std::chrono::steady_clock::now();
    volatile unsigned long sink = 0;
    for (unsigned i = 0; i < 20; ++i) {
      std::memset(buf.data(), static_cast<int>(i), buf.size());
      unsigned long x = buf[i * 4096];
      for (unsigned j = 0; j < 200000; ++j) x = x * 2862933555777941757UL + j;
      sink = sink + x;
    }
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  });
  probe.join();
  return ms;
}

// Calls f with the /proc directory of each of the process's live threads; false if it is gone.
bool ForEachTask(pid_t pid, const std::function<void(const std::string&)>& f) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') f(dir + "/" + e->d_name);
  ::closedir(d);
  return true;
}

// Voluntary + involuntary context switches, summed over the process's live threads.
long WakeUps(pid_t pid) {
  long sum = 0;
  bool alive = ForEachTask(pid, [&](const std::string& task) {
    std::string s = harness::ReadFile(task + "/status");
    sum += std::max(0L, StatusField(s, "voluntary_ctxt_switches")) +
           std::max(0L, StatusField(s, "nonvoluntary_ctxt_switches"));
  });
  return alive ? sum : -1;
}

// CPU time of the process's live threads in seconds, from /proc/PID/task/*/schedstat (the
// scheduler's nanoseconds; /proc/PID/stat counts 10 ms ticks, a tenth of a burst's figure).
// For processes whose threads live as long as they do (the provisioner, the fake); -1 if gone.
double CpuSeconds(pid_t pid) {
  double sum = 0;
  bool alive = ForEachTask(pid, [&](const std::string& task) {
    sum += std::atof(harness::ReadFile(task + "/schedstat").c_str()) / 1e9;
  });
  return alive ? sum : -1;
}

// The calling thread's CPU time (user + system) in nanoseconds.
int64_t ThreadCpuNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double SelfCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Entries in a directory, "." and ".." not counted; -1 if it cannot be read.
long CountEntries(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  ::closedir(d);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Talking to the fake.

// One keep-alive HTTPS connection with a bearer token. Not thread-safe: one per thread.
class Api {
 public:
  Api(int port, const std::string& ca_file, std::string token)
      : cli_(TlsTo(ca_file), "127.0.0.1", port), auth_("Authorization: Bearer " + token + "\r\n") {}

  // Sends one request; code 0 and the transport error in body if it failed. The body is
  // parsed as JSON only when `parse` is set.
  Reply Call(const std::string& method, const std::string& path, const std::string& body = "", bool parse = true) {
    HttpsClient::Response r;
    HttpsClient::Error e = cli_.Send({method, path, auth_, "application/json", body, std::chrono::seconds(60)}, &r);
    Reply out;
    if (e != HttpsClient::Error::kNone) {
      out.body = cli_.Describe(e);
      return out;
    }
    out.code = r.status;
    out.body = std::move(r.body);
    if (parse) picojson::parse(out.json, out.body);
    return out;
  }

 private:
  // One TLS context per CA file, shared as the provisioner shares its own.
  static std::shared_ptr<const TlsContext> TlsTo(const std::string& ca_file) {
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<const TlsContext>> made;
    std::lock_guard<std::mutex> l(mu);
    auto& tls = made[ca_file];
    if (tls == nullptr) {
      auto t = TlsContext::Make({harness::ReadFile(ca_file), "", "", true});
      if (!t.ok()) throw Failure("TLS context for " + ca_file + ": " + t.status().message());
      tls = *t;
    }
    return tls;
  }

  HttpsClient cli_;  // the provisioner's transport (http_client.hpp), for a like-for-like baseline
  std::string auth_;
};

// Who runs where. With two CPUs or more, the fake API server gets the last one to itself, and
// the provisioner, the baseline client and this program's clients share the others: a real
// API server does not take its CPU from the provisioner, and the fake's share of its own CPU
// then tells whether it was the bottleneck. With one CPU, nothing is pinned.
struct Cpus {
  std::vector<int> fake, clients;
  std::string Describe() const {
    if (fake.empty()) return "one CPU: nothing pinned";
    std::string c;
    for (int i : clients) c += (c.empty() ? "" : ",") + std::to_string(i);
    return "fake-apiserver on CPU " + std::to_string(fake[0]) + "; provisioner, baseline and bench clients on CPU " + c;
  }
};

const Cpus& TheCpus() {
  static const Cpus cpus = [] {
    Cpus c;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return c;
    std::vector<int> usable;
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) usable.push_back(i);
    if (usable.size() < 2) return c;
    c.fake = {usable.back()};
    c.clients.assign(usable.begin(), usable.end() - 1);
    return c;
  }();
  return cpus;
}

// Confines this process (and the threads it starts from now on) to the clients' CPUs.
void PinClients() {
  if (TheCpus().clients.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : TheCpus().clients) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

// The fake API server as a process, with RBAC from manifests/rbac.yaml.
class Fake {
 public:
  explicit Fake(const std::string& dir) : dir_(dir) {
    std::vector<std::string> argv = {harness::Env("FAKE_APISERVER", "build/fake-apiserver"), "--dir", dir, "--rbac",
                                     harness::Env("RBAC_YAML", "manifests/rbac.yaml")};
    proc_ = std::make_unique<harness::Process>(argv, std::map<std::string, std::string>{}, dir + ".log", TheCpus().fake);
    if (!harness::Eventually([&] { return harness::Exists(dir + "/port"); }, std::chrono::seconds(20)))
      throw Failure("fake-apiserver did not start: " + proc_->Log());
    port_ = std::stoi(harness::ReadFile(dir + "/port"));
    Result<ApiCredentials> admin = LoadKubeconfig(dir + "/admin.kubeconfig", false);
    if (!admin.ok()) throw Failure(admin.status().message());
    admin_token_ = admin->token;
    sa_token_ = harness::ReadFile(dir + "/serviceaccount/token");
    while (!sa_token_.empty() && std::isspace(static_cast<unsigned char>(sa_token_.back()))) sa_token_.pop_back();
  }

  std::unique_ptr<Api> Admin() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", admin_token_); }

  // The admin connections that create and delete a burst's claims, made once and kept: each
  // burst finds them connected (Warm), so no TLS handshake of the bench's falls in its time.
  Api& Client(int i) const {
    std::lock_guard<std::mutex> l(clients_mu_);
    while (static_cast<int>(clients_.size()) <= i) clients_.push_back(Admin());
    return *clients_[i];
  }
  // Connects (or reconnects, after the fake's idle timeout) the burst clients.
  void WarmClients(int n) const {
    for (int i = 0; i < n; ++i) Client(i).Call("GET", "/api", "", false);
  }
  std::unique_ptr<Api> ServiceAccount() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", sa_token_); }
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  pid_t pid() const { return proc_->pid(); }
  std::string admin_token() const { return admin_token_; }

  // Creates every object of a YAML file (the StorageClass).
  void CreateYaml(const std::string& path) {
    Result<std::vector<picojson::value>> docs = ParseYamlDocuments(harness::ReadFile(path));
    if (!docs.ok()) throw Failure(path + ": " + docs.status().message());
    auto admin = Admin();
    for (const auto& d : *docs) {
      Reply r = admin->Call("POST", harness::FakeApi::CollectionOf(d), d.serialize());
      if (r.code != 201) throw Failure("creating " + path + ": " + std::to_string(r.code) + " " + r.body);
    }
  }

 private:
  std::string dir_;
  std::unique_ptr<harness::Process> proc_;
  int port_ = 0;
  std::string admin_token_, sa_token_;
  mutable std::mutex clients_mu_;
  mutable std::vector<std::unique_ptr<Api>> clients_;
};

std::string Str(const picojson::value& v, std::initializer_list<const char*> path) {
  const picojson::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is<picojson::object>()) return "";
    const auto& o = cur->get<picojson::object>();
    auto it = o.find(k);
    if (it == o.end()) return "";
    cur = &it->second;
  }
  return cur->is<std::string>() ? cur->get<std::string>() : "";
}

// Waits in the fake (GET /fake/wait, see test/fake_apiserver.hpp) until `count` objects
// matched `query`; returns when the last of them was recorded there (ns since the epoch). The
// bench observes its bursts this way rather than through a watch, which would add traffic of
// its own to the fake while it serves the provisioner. Throws on an error or after kBurstLimit.
int64_t WaitInFake(Api& api, const std::string& query, long count) {
  auto end = std::chrono::steady_clock::now() + kBurstLimit;
  while (true) {
    Reply r = api.Call("GET", "/fake/wait?" + query + "&count=" + std::to_string(count) + "&timeoutSeconds=20", "", false);
    size_t at = r.body.find("\"lastNs\":");
    if (r.code == 200 && at != std::string::npos) return std::strtoll(r.body.c_str() + at + 9, nullptr, 10);
    if (r.code != 504 || std::chrono::steady_clock::now() > end)
      throw Failure("waiting in the fake for " + std::to_string(count) + " of " + query + ": " + std::to_string(r.code) +
                    " " + r.body);
  }
}

// WaitInFake on a thread of its own, for a burst that is sampled meanwhile.
class BackgroundWait {
 public:
  BackgroundWait(const Fake& fake, const std::string& query, long count) : api_(fake.Admin()) {
    thread_ = std::thread([this, query, count] {
      try {
        last_ns_ = WaitInFake(*api_, query, count);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
      done_ = true;
    });
  }
  ~BackgroundWait() { thread_.join(); }
  bool done() const { return done_; }
  // When the last object got there; throws what the wait failed with.
  int64_t last_ns() const {
    if (!error_.empty()) throw Failure(error_);
    return last_ns_;
  }

 private:
  std::unique_ptr<Api> api_;
  int64_t last_ns_ = 0;
  std::string error_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The resourceVersion of a collection now, to wait from.
std::string CurrentRv(Api& admin, const std::string& collection) {
  Reply r = admin.Call("GET", collection + "?limit=1");
  std::string rv = Str(r.json, {"metadata", "resourceVersion"});
  if (r.code != 200 || rv.empty()) throw Failure("list " + collection + ": " + std::to_string(r.code) + " " + r.body);
  return rv;
}

// The /fake/wait query for claims named PREFIX-* becoming Bound from now on.
std::string BoundQuery(Api& admin, const std::string& prefix) {
  return "resource=persistentvolumeclaims&until=Bound&prefix=" + prefix + "-&resourceVersion=" + CurrentRv(admin, kClaims);
}

// ---------------------------------------------------------------------------------------------
// Claims, volumes and the baseline client.

struct Claimed {
  std::string name, uid;
  std::string pv() const { return "pvc-" + uid; }
  std::string dir() const { return std::string(kNs) + "-" + name + "-" + pv(); }
};

std::string ClaimJson(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" + kNs +
         R"("},"spec":{"storageClassName":"hostpath","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})";
}

// The PV the provisioner makes for a claim (with its finalizer when `finalizer`).
std::string VolumeJson(const Claimed& c, const std::string& pv_dir, bool finalizer) {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + c.pv() +
         R"(","annotations":{"pv.kubernetes.io/provisioned-by":")" + kProvisionerName + "\"}" +
         (finalizer ? R"(,"finalizers":["external-provisioner.volume.kubernetes.io/finalizer"])" : "") +
         R"(},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"volumeMode":"Filesystem",)"
         R"("persistentVolumeReclaimPolicy":"Delete","storageClassName":"hostpath",)"
         R"("claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1","namespace":")" +
         kNs + R"(","name":")" + c.name + R"(","uid":")" + c.uid + R"("},"hostPath":{"path":")" + pv_dir + "/" + c.dir() +
         R"(","type":"Directory"}}})";
}

// Runs work(begin, end) for batches of kBatch in [0, n) on kClientThreads threads, each with
// its own admin connection.
void ForEachBatch(const Fake& fake, int n, const std::function<void(Api&, int, int)>& work) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  std::mutex err_mu;
  std::string err;
  for (int t = 0; t < kClientThreads; ++t)
    threads.emplace_back([&, t] {
      Api& admin = fake.Client(t);
      for (int i; (i = next.fetch_add(kBatch)) < n;) {
        try {
          work(admin, i, std::min(n, i + kBatch));
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> l(err_mu);
          err = e.what();
          next = n;
        }
      }
    });
  for (auto& t : threads) t.join();
  if (!err.empty()) throw Failure(err);
}

// Sends requests {method, path, body} through POST /fake/batch (see Batch); returns each one's
// {code, name, uid} or {code, message}.
picojson::array SendBatch(Api& admin, const std::vector<std::array<std::string, 3>>& requests) {
  std::string body = "{\"requests\":[";
  for (const auto& [method, path, object] : requests) {
    if (body.back() != '[') body += ',';
    body += "{\"method\":" + picojson::value(method).serialize() + ",\"path\":" + picojson::value(path).serialize() +
            ",\"body\":" + picojson::value(object).serialize() + "}";
  }
  body += "]}";
  Reply r = admin.Call("POST", "/fake/batch", body);
  if (r.code != 200 || !r.json.is<picojson::array>() || r.json.get<picojson::array>().size() != requests.size())
    throw Failure("POST /fake/batch: " + std::to_string(r.code) + " " + r.body.substr(0, 300));
  return r.json.get<picojson::array>();
}

int CodeOf(const picojson::value& result) {
  return result.get("code").is<double>() ? static_cast<int>(result.get("code").get<double>()) : 0;
}

// Creates claims prefix-0 .. prefix-(n-1); on_created runs (on the creating thread) as each
// batch of creates returns.
std::vector<Claimed> CreateClaims(const Fake& fake, const std::string& prefix, int n,
                                  const std::function<void(const Claimed&)>& on_created) {
  std::vector<Claimed> out(n);
  ForEachBatch(fake, n, [&](Api& admin, int begin, int end) {
    std::vector<std::array<std::string, 3>> requests;
    for (int i = begin; i < end; ++i) requests.push_back({"POST", kClaims, ClaimJson(prefix + "-" + std::to_string(i))});
    picojson::array results = SendBatch(admin, requests);
    for (int i = begin; i < end; ++i) {
      const picojson::value& res = results[static_cast<size_t>(i - begin)];
      std::string name = prefix + "-" + std::to_string(i);
      if (CodeOf(res) != 201) throw Failure("create claim " + name + ": " + res.serialize());
      out[i] = {name, Str(res, {"uid"})};
      if (on_created) on_created(out[i]);
    }
  });
  return out;
}

void DeleteClaims(const Fake& fake, const std::vector<Claimed>& claims, const std::function<void(const Claimed&)>& on_deleted) {
  ForEachBatch(fake, static_cast<int>(claims.size()), [&](Api& admin, int begin, int end) {
    std::vector<std::array<std::string, 3>> requests;
    for (int i = begin; i < end; ++i) requests.push_back({"DELETE", kClaims + "/" + claims[i].name, ""});
    picojson::array results = SendBatch(admin, requests);
    for (int i = begin; i < end; ++i) {
      const picojson::value& res = results[static_cast<size_t>(i - begin)];
      if (CodeOf(res) != 200) throw Failure("delete claim " + claims[i].name + ": " + res.serialize());
      if (on_deleted) on_deleted(claims[i]);
    }
  });
}

// The baseline: kBaselineThreads threads, as many as the provisioner's default workers, each
// with a keep-alive connection of its own and the service account's token, taking claims in
// the order their creates (or deletes) returned; per claim one mkdir + one PV create, or one
// rmdir + one PV delete. It counts the CPU its threads spend on the claims (the irreducible
// client work the provisioner's CPU per volume is held against).
class Baseline {
 public:
  Baseline(const Fake& fake, std::string pv_dir) : pv_dir_(std::move(pv_dir)) {
    for (int i = 0; i < kBaselineThreads; ++i) {
      std::shared_ptr<Api> api = fake.ServiceAccount();
      threads_.emplace_back([this, api] { Run(*api); });
    }
  }
  ~Baseline() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Provision(const Claimed& c) { Push({true, c}); }
  void Remove(const Claimed& c) { Push({false, c}); }
  std::string error() {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }
  double cpu_seconds() const { return static_cast<double>(cpu_ns_.load()) / 1e9; }

 private:
  struct Job {
    bool create;
    Claimed claim;
  };
  void Push(Job j) {
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.push_back(std::move(j));
    }
    cv_.notify_one();
  }
  void Run(Api& api) {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      Job j = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      int64_t cpu0 = ThreadCpuNs();
      std::string err = j.create ? Create(api, j.claim) : Delete(api, j.claim);
      cpu_ns_ += ThreadCpuNs() - cpu0;
      l.lock();
      if (!err.empty() && error_.empty()) error_ = err;
    }
  }
  std::string Create(Api& api, const Claimed& c) {
    std::string path = pv_dir_ + "/" + c.dir();
    if (::mkdir(path.c_str(), 0777) != 0) return "mkdir " + path + ": " + std::strerror(errno);
    Reply r = api.Call("POST", "/api/v1/persistentvolumes", VolumeJson(c, pv_dir_, false), false);
    return r.code == 201 ? "" : "create " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
  }
  std::string Delete(Api& api, const Claimed& c) {
    std::string path = pv_dir_ + "/" + c.dir();
    if (::rmdir(path.c_str()) != 0) return "rmdir " + path + ": " + std::strerror(errno);
    Reply r = api.Call("DELETE", "/api/v1/persistentvolumes/" + c.pv(), "", false);
    return r.code == 200 ? "" : "delete " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
  }

  std::string pv_dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::string error_;
  std::atomic<int64_t> cpu_ns_{0};
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------------
// One burst.

struct BurstResult {
  std::string who;   // "provisioner" or "baseline"
  std::string what;  // "create" or "delete"
  int n = 0;
  double seconds = 0;                    // first request sent -> all Bound / all gone
  std::vector<double> latency_ms;        // per claim, its create -> its PV's create (creates only)
  std::map<std::string, long> requests;  // the service account's requests, by "verb resource"
  long writes = 0, reads = 0;            // of those: create/update/patch/delete, and get/list
  long gets = 0;                         // of the reads: single-object gets (per-claim reads)
  double cpu_seconds = -1;               // the provisioner's, over the burst
  Memory peak;                           // the provisioner's highest VmRSS / RssAnon sampled
  long hwm_kib = -1;                     // its VmHWM after the burst
  double fake_cpu_seconds = 0, bench_cpu_seconds = 0;
  double baseline_cpu_seconds = 0;       // the baseline's threads' on their claims (in bench_cpu_seconds)
  double machine_cpu_seconds = 0;        // every process on the machine, over the same time
  double stolen_seconds = 0;             // the host's steal over the same time (not in the above)
  // CPU of processes other than the provisioner, the fake and this bench (other work on the machine).
  double others_cpu_seconds() const {
    return std::max(0.0, machine_cpu_seconds - fake_cpu_seconds - bench_cpu_seconds - std::max(0.0, cpu_seconds));
  }
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Reads the fake's request log: counts the service account's requests, and (for creates)
// each claim's latency from its create to its PV's create.
// The raw log is kept in `save` (if not empty) for a closer look.
void ReadRequestLog(Api& admin, const std::vector<Claimed>& claims, bool latency, BurstResult* out,
                    const std::string& save = "") {
  Reply r = admin.Call("GET", "/fake/requests");
  if (r.code != 200 || !r.json.is<picojson::array>())
    throw Failure("GET /fake/requests: " + std::to_string(r.code) + " " + r.body.substr(0, 200));
  if (!save.empty()) harness::WriteFile(save, r.body);
  std::map<std::string, double> claim_t, pv_t;
  for (const auto& rec : r.json.get<picojson::array>()) {
    std::string user = Str(rec, {"user"}), verb = Str(rec, {"verb"}), resource = Str(rec, {"resource"});
    double t = rec.get("t_ns").is<double>() ? rec.get("t_ns").get<double>() : 0;
    if (verb == "create" && resource == "persistentvolumeclaims" && user == "admin") claim_t[Str(rec, {"name"})] = t;
    if (user != kSaUser) continue;
    if (verb == "create" && resource == "persistentvolumes") pv_t.emplace(Str(rec, {"name"}), t);
    int code = rec.get("code").is<double>() ? static_cast<int>(rec.get("code").get<double>()) : 0;
    out->requests[verb + " " + resource + (code >= 300 ? " (" + std::to_string(code) + ")" : "")]++;
    if (verb == "create" || verb == "update" || verb == "patch" || verb == "delete") out->writes++;
    if (verb == "get" || verb == "list") out->reads++;
    if (verb == "get") out->gets++;
  }
  if (!latency) return;
  for (const Claimed& c : claims) {
    auto a = claim_t.find(c.name), b = pv_t.find(c.pv());
    if (a != claim_t.end() && b != pv_t.end()) out->latency_ms.push_back((b->second - a->second) / 1e6);
  }
}

// What a burst runs against: the fake, the PV root, and either the provisioner's pid or the
// baseline client.
struct Target {
  Fake* fake;
  std::string pv_dir;
  pid_t provisioner = 0;        // 0 for the baseline
  Baseline* baseline = nullptr;  // nullptr for the provisioner
};

// Waits until done() (polled every 0.5 ms; the provisioner's memory sampled every ~5 ms into
// *peak), or fails.
void WaitSampling(const Target& t, const std::function<bool()>& done, Memory* peak, const std::string& what) {
  auto end = std::chrono::steady_clock::now() + kBurstLimit;
  long polls = 0;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) throw Failure(what + " did not complete within 120 s");
    if (t.baseline && !t.baseline->error().empty()) throw Failure("baseline: " + t.baseline->error());
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (t.provisioner && ++polls % 10 == 0) {  // memory every ~5 ms
      Memory m = ReadMemory(t.provisioner);
      peak->rss_kib = std::max(peak->rss_kib, m.rss_kib);
      peak->anon_kib = std::max(peak->anon_kib, m.anon_kib);
    }
  }
}

struct CpuMark {
  double prov = 0, fake = 0, baseline = 0;
  MachineTicks machine;
  double self = 0;
};
CpuMark MarkCpu(const Target& t) {
  return {t.provisioner ? CpuSeconds(t.provisioner) : 0, CpuSeconds(t.fake->pid()),
          t.baseline ? t.baseline->cpu_seconds() : 0, ReadMachineTicks(), SelfCpuSeconds()};
}
// CPU used from `before` until the burst completed.
void AddCpu(const Target& t, const CpuMark& before, BurstResult* r) {
  CpuMark after = MarkCpu(t);
  if (t.provisioner) r->cpu_seconds = after.prov - before.prov;
  r->fake_cpu_seconds = after.fake - before.fake;
  r->bench_cpu_seconds = after.self - before.self;
  r->baseline_cpu_seconds = after.baseline - before.baseline;
  r->machine_cpu_seconds = TicksToSeconds(after.machine.busy - before.machine.busy);
  r->stolen_seconds = TicksToSeconds(after.machine.stolen - before.machine.stolen);
}

const char* WhoOf(const Target& t) { return t.baseline ? "baseline" : "provisioner"; }

// Creates n claims at once and waits until all are Bound. The fake's request log goes to save_log.
BurstResult CreateBurst(const Target& t, const std::string& prefix, int n, std::vector<Claimed>* claims,
                        const std::string& save_log) {
  BurstResult r{WhoOf(t), "create", n};
  auto admin = t.fake->Admin();
  admin->Call("POST", "/fake/reset-requests");
  BackgroundWait bound(*t.fake, BoundQuery(*admin, prefix), n);
  t.fake->WarmClients(kClientThreads);
  CpuMark cpu = MarkCpu(t);
  int64_t t0 = NowNs();
  std::string err;
  std::atomic<bool> failed{false};
  std::thread creators([&] {
    try {
      *claims = CreateClaims(*t.fake, prefix, n, [&](const Claimed& c) {
        if (t.baseline) t.baseline->Provision(c);
      });
    } catch (const std::exception& e) {
      err = e.what();
      failed = true;
    }
  });
  try {
    WaitSampling(t, [&] { return failed || bound.done(); }, &r.peak,
                 std::string(r.who) + " create burst of " + std::to_string(n));
  } catch (...) {
    creators.join();
    throw;
  }
  creators.join();
  if (!err.empty()) throw Failure(err);
  r.seconds = static_cast<double>(bound.last_ns() - t0) / 1e9;
  AddCpu(t, cpu, &r);
  SleepMs(300);  // let the trailing event (and anything else the burst caused) be sent
  if (t.provisioner) r.hwm_kib = ReadMemory(t.provisioner).hwm_kib;
  // A new connection: the first one may have idled out.
  ReadRequestLog(*t.fake->Admin(), *claims, true, &r, save_log);
  return r;
}

// Deletes the claims at once and waits until their PVs and every directory are gone.
BurstResult DeleteBurst(const Target& t, const std::vector<Claimed>& claims, const std::string& save_log) {
  int n = static_cast<int>(claims.size());
  BurstResult r{WhoOf(t), "delete", n};
  auto admin = t.fake->Admin();
  admin->Call("POST", "/fake/reset-requests");
  std::string prefix = claims.empty() ? "" : claims[0].name.substr(0, claims[0].name.rfind('-') + 1);
  BackgroundWait gone(*t.fake,
                      "resource=persistentvolumes&until=Deleted&prefixPath=spec.claimRef.name&prefix=" + prefix +
                          "&resourceVersion=" + CurrentRv(*admin, "/api/v1/persistentvolumes"),
                      n);
  t.fake->WarmClients(kClientThreads);
  CpuMark cpu = MarkCpu(t);
  int64_t t0 = NowNs(), dirs_gone = 0;
  std::string err;
  std::atomic<bool> failed{false};
  std::thread deleters([&] {
    try {
      DeleteClaims(*t.fake, claims, [&](const Claimed& c) {
        if (t.baseline) t.baseline->Remove(c);
      });
    } catch (const std::exception& e) {
      err = e.what();
      failed = true;
    }
  });
  auto done = [&] {  // both remove the directory before the PV, so look at it once the PVs are gone
    if (failed) return true;
    if (!gone.done()) return false;
    if (CountEntries(t.pv_dir) == 0) dirs_gone = NowNs();
    return dirs_gone != 0;
  };
  try {
    WaitSampling(t, done, &r.peak, std::string(r.who) + " delete burst of " + std::to_string(n));
  } catch (...) {
    deleters.join();
    throw;
  }
  deleters.join();
  if (!err.empty()) throw Failure(err);
  r.seconds = static_cast<double>(std::max(gone.last_ns(), dirs_gone) - t0) / 1e9;
  AddCpu(t, cpu, &r);
  SleepMs(300);
  if (t.provisioner) r.hwm_kib = ReadMemory(t.provisioner).hwm_kib;
  ReadRequestLog(*t.fake->Admin(), claims, false, &r, save_log);
  return r;
}

// Creates n claims one after another, each once the previous one is Bound: the latency of a
// claim that does not queue behind others.
BurstResult Trickle(const Target& t, const std::string& prefix, int n, std::vector<Claimed>* claims,
                    const std::string& save_log) {
  BurstResult r{WhoOf(t), "trickle", n};
  auto admin = t.fake->Admin();
  admin->Call("POST", "/fake/reset-requests");
  std::string query = BoundQuery(*admin, prefix);
  auto waiter = t.fake->Admin();
  CpuMark cpu = MarkCpu(t);
  int64_t t0 = NowNs(), last_ns = 0;
  for (int i = 0; i < n; ++i) {
    std::string name = prefix + "-" + std::to_string(i);
    Reply rep = admin->Call("POST", kClaims, ClaimJson(name));
    if (rep.code != 201) throw Failure("create claim " + name + ": " + std::to_string(rep.code) + " " + rep.body);
    claims->push_back({name, Str(rep.json, {"metadata", "uid"})});
    if (t.baseline) t.baseline->Provision(claims->back());
    last_ns = WaitInFake(*waiter, query, i + 1);
  }
  r.seconds = static_cast<double>(last_ns - t0) / 1e9;
  AddCpu(t, cpu, &r);
  SleepMs(300);
  ReadRequestLog(*t.fake->Admin(), *claims, true, &r, save_log);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Which side limits a burst.

// A process that takes `share` of one CPU away from whatever else runs there: it spins until it
// has used share x 1 ms of CPU per millisecond since it started, and sleeps between. A process
// that sleeps this often gets the CPU as soon as it wakes, so it takes its share (and takes it
// back later if it fell behind).
class CpuThief {
 public:
  CpuThief(int cpu, double share) {
    pid_ = ::fork();
    if (pid_ < 0) throw Failure("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the bench, even a killed one
      if (::getppid() == 1) ::_exit(0);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
      timespec start{};
      ::clock_gettime(CLOCK_MONOTONIC, &start);
      for (long ms = 1;; ++ms) {
        while (static_cast<double>(ThreadCpuNs()) / 1e6 < share * static_cast<double>(ms)) {
        }
        long long next = (static_cast<long long>(start.tv_sec) * 1000000000LL + start.tv_nsec) + ms * 1000000LL;
        timespec until{static_cast<time_t>(next / 1000000000LL), static_cast<long>(next % 1000000000LL)};
        ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
      }
    }
  }
  ~CpuThief() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  CpuThief(const CpuThief&) = delete;
  CpuThief& operator=(const CpuThief&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// What is taken away in a bottleneck run: nothing, a share of the fake's CPU, or the same share
// of each CPU that the provisioner and the bench's clients run on (see Cpus).
// kFakeSlowed: instead, the fake spins for a third of each round of its work (POST
// /fake/extra-work), which takes as much of its capacity as a quarter of its CPU, spread
// evenly: no pause longer than a fraction of one round of its work. A CpuThief holds the fake
// off its CPU for a quarter of a millisecond at a time, and everything that waits on the fake
// waits that long too, however fast the fake would be otherwise: the two tell apart how much
// the burst waits on the fake's speed and how much on its being there at every moment.
enum class Taken { kNothing, kFakeCpu, kFakeSlowed, kProvisionerCpus };
constexpr double kTakenShare = 0.25;

// A burst of the provisioner (create, or delete of *claims) while CpuThiefs hold kTakenShare of
// the `taken` CPUs. The share of those CPUs that the thieves got, from just before the burst
// to just after it, goes to *got.
BurstResult BurstWithout(Taken taken, const Target& t, const std::string& what, const std::string& prefix, int n,
                         std::vector<Claimed>* claims, double* got) {
  std::vector<int> cpus;
  if (taken == Taken::kFakeCpu) cpus = TheCpus().fake;
  if (taken == Taken::kProvisionerCpus) cpus = TheCpus().clients;
  std::vector<std::unique_ptr<CpuThief>> thieves;
  for (int c : cpus) thieves.push_back(std::make_unique<CpuThief>(c, kTakenShare));
  auto extra_work = [&](double percent) {
    Reply r = t.fake->Admin()->Call("POST", "/fake/extra-work?percent=" + std::to_string(percent), "", false);
    if (r.code != 200) throw Failure("POST /fake/extra-work: " + std::to_string(r.code) + " " + r.body);
  };
  if (taken == Taken::kFakeSlowed) extra_work(100 * kTakenShare / (1 - kTakenShare));
  SleepMs(50);  // settled in
  long before = 0, after = 0;
  for (const auto& th : thieves) before += CpuTicks(th->pid());
  int64_t t0 = NowNs();
  BurstResult r = what == "create" ? CreateBurst(t, prefix, n, claims, "") : DeleteBurst(t, *claims, "");
  for (const auto& th : thieves) after += CpuTicks(th->pid());
  double wall = static_cast<double>(NowNs() - t0) / 1e9;
  *got = cpus.empty() ? 0 : TicksToSeconds(after - before) / (wall * static_cast<double>(cpus.size()));
  if (taken == Taken::kFakeSlowed) extra_work(0);
  return r;
}

// ---------------------------------------------------------------------------------------------
// The provisioner as a process.

// Whether the process has ended (a zombie, not yet waited for).
bool Exited(pid_t pid) {
  std::string s = harness::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = s.rfind(')');
  return close == std::string::npos || (close + 2 < s.size() && s[close + 2] == 'Z');
}

struct Provisioner {
  std::unique_ptr<harness::Process> proc;
  int metrics_port = 0;
  int64_t exec_ns = 0;   // just before fork/exec
  int64_t ready_ns = 0;  // first /readyz 200
};

Provisioner StartProvisioner(const Fake& fake, const std::string& pv_dir, const std::string& log) {
  Provisioner p;
  p.metrics_port = harness::FreePort();
  std::map<std::string, std::string> env = {{"PV_DIR", pv_dir},
                                            {"KUBECONFIG", fake.dir() + "/provisioner.kubeconfig"},
                                            {"METRICS_ADDRESS", "127.0.0.1:" + std::to_string(p.metrics_port)},
                                            {"LOG_LEVEL", "0"}};
  p.exec_ns = NowNs();
  p.proc = std::make_unique<harness::Process>(std::vector<std::string>{harness::Env("PROVISIONER", "./hostpath-provisioner")},
                                              env, log, TheCpus().clients);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  httplib::Client cli("127.0.0.1", p.metrics_port);
  cli.set_connection_timeout(std::chrono::seconds(1));
  while (std::chrono::steady_clock::now() < end) {
    auto r = cli.Get("/readyz");
    if (r && r->status == 200) {
      p.ready_ns = NowNs();
      return p;
    }
    SleepMs(2);
    int code = 0;
    if (CpuTicks(p.proc->pid()) < 0 || Exited(p.proc->pid())) {
      p.proc->WaitFor(std::chrono::seconds(1), &code);
      throw Failure("the provisioner exited with " + std::to_string(code) + ": " + p.proc->Log());
    }
  }
  throw Failure("the provisioner was not ready within 60 s: " + p.proc->Log());
}

// Waits until the process has used no CPU for `quiet` (its queue is drained), at most `limit`.
void WaitCpuQuiet(pid_t pid, std::chrono::milliseconds quiet, std::chrono::seconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  long last = CpuTicks(pid);
  auto since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < end) {
    SleepMs(50);
    long now = CpuTicks(pid);
    if (now != last) {
      last = now;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since >= quiet) {
      return;
    }
  }
}

struct Idle {
  Memory memory;     // 1 s after ready, nothing to do
  double seconds = 0;
  long cpu_ticks = 0;
  long wakeups = 0;
};

Idle MeasureIdle(pid_t pid) {
  Idle idle;
  SleepMs(1000);
  idle.memory = ReadMemory(pid);
  long ticks = CpuTicks(pid), wakeups = WakeUps(pid);
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(kIdleWindow);
  idle.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  idle.cpu_ticks = CpuTicks(pid) - ticks;
  idle.wakeups = WakeUps(pid) - wakeups;
  return idle;
}

struct Startup {
  int pairs = 0;
  double populate_seconds = 0;  // creating the pairs through the fake (set-up, not the provisioner)
  double ready_seconds = 0;     // exec -> /readyz 200
  double settle_seconds = 0;    // exec -> no CPU used for 1 s (every key looked at)
  double cpu_seconds = 0;       // until settled
  double fake_cpu_seconds = 0;  // the fake's, from exec to /readyz 200 (serving the lists)
  Memory memory;                // once settled
  std::map<std::string, long> requests;
  long writes = 0;
  // Then bursts of kCachedBurst claims created and deleted with all of them cached: the
  // provisioner's CPU per 1000 volumes, to hold against the same bursts in an empty cluster.
  std::vector<double> cached_create_cpu, cached_delete_cpu;
};

// Creates n claims and, for each, the PV the provisioner would have made; the fake binds them.
void Populate(Fake& fake, const std::string& pv_dir, int n) {
  std::vector<Claimed> claims = CreateClaims(fake, "existing", n, nullptr);
  ForEachBatch(fake, n, [&](Api& admin, int begin, int end) {
    std::vector<std::array<std::string, 3>> requests;
    for (int i = begin; i < end; ++i) requests.push_back({"POST", "/api/v1/persistentvolumes", VolumeJson(claims[i], pv_dir, true)});
    picojson::array results = SendBatch(admin, requests);
    for (int i = begin; i < end; ++i)
      if (CodeOf(results[static_cast<size_t>(i - begin)]) != 201)
        throw Failure("create " + claims[i].pv() + ": " + results[static_cast<size_t>(i - begin)].serialize());
  });
}

// ---------------------------------------------------------------------------------------------
// Summaries over rounds.

// The runs of one kind of burst (who, what, n) pooled: times as median, min and max; counts,
// CPU and latencies over all runs together.
struct Summary {
  std::string who, what;
  int n = 0;
  std::vector<double> seconds, latency_ms;
  std::map<std::string, long> requests;
  long volumes = 0, writes = 0, gets = 0;
  double cpu = 0, fake_cpu = 0, bench_cpu = 0, baseline_cpu = 0, others_cpu = 0, stolen = 0, busy = 0;
  Memory peak;
  long hwm_kib = -1;

  void Add(const BurstResult& b) {
    seconds.push_back(b.seconds);
    latency_ms.insert(latency_ms.end(), b.latency_ms.begin(), b.latency_ms.end());
    for (const auto& [k, v] : b.requests) requests[k] += v;
    volumes += b.n;
    writes += b.writes;
    gets += b.gets;
    cpu += std::max(0.0, b.cpu_seconds);
    fake_cpu += b.fake_cpu_seconds;
    bench_cpu += b.bench_cpu_seconds;
    baseline_cpu += b.baseline_cpu_seconds;
    others_cpu += b.others_cpu_seconds();
    stolen += b.stolen_seconds;
    busy += b.seconds;
    peak.rss_kib = std::max(peak.rss_kib, b.peak.rss_kib);
    peak.anon_kib = std::max(peak.anon_kib, b.peak.anon_kib);
    hwm_kib = std::max(hwm_kib, b.hwm_kib);
  }
  double Median() const { return Percentile(seconds, 0.5); }
  double Min() const { return *std::min_element(seconds.begin(), seconds.end()); }
  double Max() const { return *std::max_element(seconds.begin(), seconds.end()); }
  double PerVolume(long count) const { return static_cast<double>(count) / static_cast<double>(volumes); }
  // CPU seconds (the provisioner's by default) per 1000 volumes.
  double Per1000(double seconds) const { return seconds * 1000.0 / static_cast<double>(volumes); }
  double CpuPer1000() const { return Per1000(cpu); }
};

// ---------------------------------------------------------------------------------------------
// Report.

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string MiB(long kib) { return kib < 0 ? "?" : Fmt("%.2f MiB", static_cast<double>(kib) / 1024.0); }

class Report {
 public:
  // A figure; met = 1 or 0 marks it ok / MISSED against its target, -1 means no target.
  void Add(const std::string& figure, const std::string& value, const std::string& target = "", int met = -1) {
    rows_.push_back({figure, value, target, met < 0 ? "" : met ? "ok" : "MISSED"});
  }
  void Section(const std::string& title) { rows_.push_back({"# " + title, "", "", ""}); }
  void Print() const {
    std::printf("\n  %-46s %-34s %-12s %s\n", "figure", "value", "target", "");
    for (const Row& r : rows_) {
      if (r.figure.rfind("# ", 0) == 0) {
        std::printf("\n%s\n", r.figure.substr(2).c_str());
        continue;
      }
      std::printf("  %-46s %-34s %-12s %s\n", r.figure.c_str(), r.value.c_str(), r.target.c_str(), r.verdict.c_str());
    }
    std::fflush(stdout);
  }
  picojson::value Targets() const {
    picojson::array out;
    std::string section;
    for (const Row& r : rows_) {
      if (r.figure.rfind("# ", 0) == 0) section = r.figure.substr(2);
      if (r.verdict.empty()) continue;
      picojson::object o;
      o["figure"] = picojson::value(section + ": " + r.figure);
      o["value"] = picojson::value(r.value);
      o["target"] = picojson::value(r.target);
      o["met"] = picojson::value(r.verdict == "ok");
      out.emplace_back(o);
    }
    return picojson::value(out);
  }

 private:
  struct Row {
    std::string figure, value, target, verdict;
  };
  std::vector<Row> rows_;
};

picojson::value J(double v) { return picojson::value(v); }

picojson::value MemoryJson(const Memory& m) {
  picojson::object o;
  o["rss_kib"] = J(static_cast<double>(m.rss_kib));
  o["rss_anon_kib"] = J(static_cast<double>(m.anon_kib));
  o["rss_file_kib"] = J(static_cast<double>(m.file_kib));
  o["hwm_kib"] = J(static_cast<double>(m.hwm_kib));
  return picojson::value(o);
}

picojson::value SummaryJson(const Summary& s) {
  picojson::object o, req;
  o["who"] = picojson::value(s.who);
  o["what"] = picojson::value(s.what);
  o["n"] = J(s.n);
  picojson::array runs;
  for (double x : s.seconds) runs.push_back(J(x));
  o["seconds_runs"] = picojson::value(runs);
  o["seconds_median"] = J(s.Median());
  if (!s.latency_ms.empty()) {
    o["latency_p50_ms"] = J(Percentile(s.latency_ms, 0.50));
    o["latency_p99_ms"] = J(Percentile(s.latency_ms, 0.99));
    o["latency_max_ms"] = J(Percentile(s.latency_ms, 1.0));
  }
  for (const auto& [k, v] : s.requests) req[k] = J(s.PerVolume(v));
  o["requests_per_volume"] = picojson::value(req);
  o["writes_per_volume"] = J(s.PerVolume(s.writes));
  o["gets_per_volume"] = J(s.PerVolume(s.gets));
  if (s.who == "provisioner") {
    o["cpu_seconds_per_1000_volumes"] = J(s.CpuPer1000());
    o["peak_rss_kib_sampled"] = J(static_cast<double>(s.peak.rss_kib));
    o["peak_rss_anon_kib_sampled"] = J(static_cast<double>(s.peak.anon_kib));
    o["vm_hwm_kib"] = J(static_cast<double>(s.hwm_kib));
  } else {
    o["client_cpu_seconds_per_1000_volumes"] = J(s.Per1000(s.baseline_cpu));
  }
  o["fake_apiserver_cpu_seconds"] = J(s.fake_cpu);
  o["bench_cpu_seconds"] = J(s.bench_cpu);
  o["other_processes_cpu_seconds"] = J(s.others_cpu);
  o["stolen_by_host_seconds"] = J(s.stolen);
  o["burst_seconds_total"] = J(s.busy);
  return picojson::value(o);
}

std::string Requests(const Summary& s) {
  std::string out;
  for (const auto& [k, v] : s.requests) out += (out.empty() ? "" : ", ") + k + " " + Fmt("%.3f", s.PerVolume(v));
  return out.empty() ? "none" : out;
}

std::string Times(const Summary& s) {
  return Fmt("%.3f s", s.Median()) + Fmt(" (%.3f", s.Min()) + Fmt("-%.3f,", s.Max()) + " " +
         std::to_string(s.seconds.size()) + " runs)";
}

// CPU shares over the bursts' time: the fake's (it has one CPU to itself, see Cpus), the
// provisioner's and the bench's, and other processes' (other work on this machine skews every
// figure). A share near a whole core hints at a bottleneck; the bottleneck runs tell.
std::string Load(const Summary& s) {
  auto share = [&](double cpu) { return s.busy > 0 ? cpu / s.busy * 100 : 0; };
  std::string out = Fmt("fake %.0f%%", share(s.fake_cpu));
  if (s.who == "provisioner") out += Fmt(", provisioner %.0f%%", share(s.cpu));
  return out + Fmt(", bench %.0f%%", share(s.bench_cpu)) + Fmt(", others %.0f%%", share(s.others_cpu)) +
         Fmt(", stolen by the host %.0f%% of a core", share(s.stolen));
}

std::string Latency(const std::vector<double>& ms) {
  return Fmt("%.2f", Percentile(ms, 0.5)) + Fmt(" / %.2f", Percentile(ms, 0.99)) + Fmt(" / %.2f ms", Percentile(ms, 1.0));
}

std::string RealPath(const std::string& path) {
  char abs[PATH_MAX];
  if (::realpath(path.c_str(), abs) == nullptr) throw Failure("cannot resolve " + path);
  return abs;
}

std::string MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) throw Failure("cannot create " + path);
  return RealPath(path);
}

// ---------------------------------------------------------------------------------------------

constexpr int kRounds = 3;                               // bursts of each kind, interleaved
constexpr auto kRoundBudget = std::chrono::seconds(90);  // no new round after this much time in bursts
constexpr int kTrickle = 50;                             // claims created one at a time
constexpr int kBottleneckClaims = 1000;                  // the burst of the bottleneck runs
constexpr int kBottleneckRounds = 7;                     // of each kind of bottleneck run

// The times of the bottleneck runs of one kind (what, taken), and the share the thieves got.
struct Limits {
  std::vector<double> seconds, got;
  std::vector<double> stolen;  // the share of the machine's CPU time that the host took (steal)
};

const char* TakenName(Taken t) {
  switch (t) {
    case Taken::kFakeCpu: return "fake-apiserver's CPU";
    case Taken::kFakeSlowed: return "fake-apiserver slowed";
    case Taken::kProvisionerCpus: return "provisioner's CPU";
    default: return "nothing taken";
  }
}

// Where the volume directories go: BENCH_VOLUMES if set, else a tmpfs (/dev/shm) when there is
// one, else the work directory. Not the work directory by default: on ext4 without a journal
// (this project's VMs' root) the kernel skips every inode freed in the last half minute when it
// allocates one (ialloc.c, recently_deleted), so after a burst of deletions a mkdir scanned
// thousands of them and cost 130-330 us; the mkdirs of a 1000-claim burst took longer than the
// rest of the burst, and how long depended on what either side had deleted just before. A
// node's data disk (ext4 with its journal, xfs) does not do that; tmpfs does not either.
std::string VolumesRoot(const std::string& work) {
  std::string root = harness::Env("BENCH_VOLUMES", "");
  if (root.empty()) root = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm/hostpath-provisioner-bench" : work + "/volumes";
  std::system(("rm -rf '" + root + "'").c_str());
  if (::mkdir(root.c_str(), 0755) != 0) throw Failure("cannot create " + root);
  return root;
}

int Run(bool startup_only) {
  const std::string work = "build/bench-run";
  std::system(("rm -rf '" + work + "'").c_str());
  if (!harness::Exists("build") || ::mkdir(work.c_str(), 0755) != 0) throw Failure("cannot create " + work);
  const std::string volumes = VolumesRoot(work);
  PinClients();
  std::string provisioner_bin = harness::Env("PROVISIONER", "./hostpath-provisioner");
  struct stat st {};
  if (::stat(provisioner_bin.c_str(), &st) != 0) throw Failure(provisioner_bin + " not found: run make first");
  long binary_bytes = st.st_size;
  const int sizes[] = {100, 1000};
  double load_before = LoadAverage();
  std::vector<BurstResult> all;
  std::map<std::string, Summary> sums;  // by who/what/n
  auto record = [&](const BurstResult& b) {
    all.push_back(b);
    Summary& s = sums[b.who + "/" + b.what + "/" + std::to_string(b.n)];
    s.who = b.who;
    s.what = b.what;
    s.n = b.n;
    s.Add(b);
    std::printf("  %-11s %-7s %4d: %.3f s\n", b.who.c_str(), b.what.c_str(), b.n, b.seconds);
    std::fflush(stdout);
  };
  Idle idle;
  std::map<int, std::vector<double>> fixed_work;  // by CPU: FixedWorkMs between bursts
  auto probe = [&] {
    std::vector<int> cpus = TheCpus().clients;
    cpus.insert(cpus.end(), TheCpus().fake.begin(), TheCpus().fake.end());
    if (cpus.empty()) cpus = {sched_getcpu()};
    for (int c : cpus)
      if (double ms = FixedWorkMs(c); ms >= 0) fixed_work[c].push_back(ms);
  };
  std::map<std::pair<std::string, Taken>, Limits> limits;
  Memory after_bursts;
  double empty_ready = 0;
  Startup up;
  auto startup = [&] {
    std::printf("bench: start-up with %d bound claims and PVs\n", kStartupPairs);
    std::fflush(stdout);
    Fake fake(work + "/api-startup");
    fake.CreateYaml("manifests/storageclass.yaml");
    std::string pv_dir = MakeDir(volumes + "/pv-startup");
    up.pairs = kStartupPairs;
    int64_t t0 = NowNs();
    Populate(fake, pv_dir, kStartupPairs);
    up.populate_seconds = static_cast<double>(NowNs() - t0) / 1e9;
    std::printf("  %d pairs created in %.1f s (set-up)\n", kStartupPairs, up.populate_seconds);
    std::fflush(stdout);
    fake.Admin()->Call("POST", "/fake/reset-requests");
    long fake_ticks = CpuTicks(fake.pid());
    Provisioner p = StartProvisioner(fake, pv_dir, work + "/provisioner-startup.log");
    up.fake_cpu_seconds = TicksToSeconds(CpuTicks(fake.pid()) - fake_ticks);
    up.ready_seconds = static_cast<double>(p.ready_ns - p.exec_ns) / 1e9;
    WaitCpuQuiet(p.proc->pid(), std::chrono::milliseconds(1000), std::chrono::seconds(60));
    up.settle_seconds = static_cast<double>(NowNs() - p.exec_ns) / 1e9 - 1.0;
    up.cpu_seconds = TicksToSeconds(CpuTicks(p.proc->pid()));
    up.memory = ReadMemory(p.proc->pid());
    BurstResult counted;
    ReadRequestLog(*fake.Admin(), {}, false, &counted, work + "/requests-startup.json");
    up.requests = counted.requests;
    up.writes = counted.writes;
    std::printf("  ready in %.3f s, RssAnon %s once quiet\n", up.ready_seconds, MiB(up.memory.anon_kib).c_str());
    if (startup_only) return;  // profiling start-up alone: no bursts
    Target cached{&fake, pv_dir, p.proc->pid(), nullptr};
    for (int round = 0; round < kCachedRounds; ++round) {
      std::vector<Claimed> claims;
      BurstResult c = CreateBurst(cached, "cached" + std::to_string(round), kCachedBurst, &claims, "");
      BurstResult d = DeleteBurst(cached, claims, "");
      up.cached_create_cpu.push_back(c.cpu_seconds * 1000.0 / kCachedBurst);
      up.cached_delete_cpu.push_back(d.cpu_seconds * 1000.0 / kCachedBurst);
      std::printf("  %d claims created and deleted with them cached: %.3f s / %.3f s\n", kCachedBurst, c.seconds, d.seconds);
      std::fflush(stdout);
    }
  };
  if (startup_only) {
    startup();
    return 0;
  }

  std::printf("bench: provisioner %s; load average %.2f on %ld CPUs\n", provisioner_bin.c_str(), load_before,
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("bench: %s\n", TheCpus().Describe().c_str());
  std::printf("bench: volume directories in %s (BENCH_VOLUMES)\n", volumes.c_str());
  std::fflush(stdout);
  {
    Fake fake_p(work + "/api-provisioner"), fake_b(work + "/api-baseline");
    fake_p.CreateYaml("manifests/storageclass.yaml");
    fake_b.CreateYaml("manifests/storageclass.yaml");
    std::string pv_p = MakeDir(volumes + "/pv-provisioner"), pv_b = MakeDir(volumes + "/pv-baseline");
    Provisioner p = StartProvisioner(fake_p, pv_p, work + "/provisioner.log");
    empty_ready = static_cast<double>(p.ready_ns - p.exec_ns) / 1e9;
    std::printf("bench: idle for %lld s\n", static_cast<long long>(kIdleWindow.count()) + 1);
    std::fflush(stdout);
    idle = MeasureIdle(p.proc->pid());
    Baseline baseline(fake_b, pv_b);
    Target ours{&fake_p, pv_p, p.proc->pid(), nullptr}, base{&fake_b, pv_b, 0, &baseline};
    auto tag = [](const Target& t) { return std::string(t.baseline ? "b" : "p"); };

    std::printf("bench: %d claims one at a time, then bursts\n", kTrickle);
    for (const Target* t : {&ours, &base}) {
      std::vector<Claimed> claims;
      record(Trickle(*t, tag(*t) + "trickle", kTrickle, &claims, work + "/requests-" + tag(*t) + "-trickle.json"));
      DeleteBurst(*t, claims, "");
    }
    auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < kRounds; ++round) {
      if (round > 0 && std::chrono::steady_clock::now() - start > kRoundBudget) break;
      // Who goes first alternates by round: a burst runs right after the other side's, and
      // what the filesystem did just before (a thousand rmdirs) changes how fast mkdir is.
      const Target* order[] = {round % 2 == 0 ? &ours : &base, round % 2 == 0 ? &base : &ours};
      for (int n : sizes) {
        probe();
        std::map<const Target*, std::vector<Claimed>> claims;
        std::string id = std::to_string(n) + "r" + std::to_string(round);
        for (const Target* t : order)
          record(CreateBurst(*t, tag(*t) + id, n, &claims[t], work + "/requests-" + tag(*t) + "-create-" + id + ".json"));
        for (const Target* t : order)
          record(DeleteBurst(*t, claims[t], work + "/requests-" + tag(*t) + "-delete-" + id + ".json"));
      }
    }
    if (!TheCpus().fake.empty()) {
      std::printf("bench: which side limits a burst of %d: %.0f%% of a CPU taken away\n", kBottleneckClaims, kTakenShare * 100);
      std::fflush(stdout);
      for (int round = 0; round < kBottleneckRounds; ++round)
        for (Taken taken : {Taken::kNothing, Taken::kFakeCpu, Taken::kFakeSlowed, Taken::kProvisionerCpus}) {
          probe();
          std::vector<Claimed> claims;
          std::string prefix = "x" + std::to_string(round) + "t" + std::to_string(static_cast<int>(taken));
          for (const char* what : {"create", "delete"}) {
            double got = 0;
            BurstResult b = BurstWithout(taken, ours, what, prefix, kBottleneckClaims, &claims, &got);
            Limits& l = limits[{what, taken}];
            l.seconds.push_back(b.seconds);
            l.got.push_back(got);
            l.stolen.push_back(b.stolen_seconds / (b.seconds * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN))));
            std::printf("  %-26s %s: %.3f s\n", TakenName(taken), what, b.seconds);
            std::fflush(stdout);
          }
        }
    }
    after_bursts = ReadMemory(p.proc->pid());
    p.proc->Signal(SIGTERM);
    int code = 0;
    if (!p.proc->WaitFor(std::chrono::seconds(20), &code) || code != 0)
      throw Failure("the provisioner did not stop cleanly on SIGTERM (exit " + std::to_string(code) + ")");
  }

  startup();
  double load_after = LoadAverage();

  // ---- the table
  Report rep;
  auto sum = [&](const std::string& who, const std::string& what, int n) -> const Summary& {
    auto it = sums.find(who + "/" + what + "/" + std::to_string(n));
    if (it == sums.end()) throw Failure("no " + who + " " + what + " burst of " + std::to_string(n));
    return it->second;
  };
  picojson::object ratios;
  {
    const Summary& o = sum("provisioner", "trickle", kTrickle);
    const Summary& b = sum("baseline", "trickle", kTrickle);
    rep.Section(std::to_string(kTrickle) + " claims one at a time (each created once the previous is Bound)");
    double p50 = Percentile(o.latency_ms, 0.5);
    rep.Add("latency claim -> PV create, p50 / p99 / max", Latency(o.latency_ms), "p50 < 5 ms", p50 < 5);
    rep.Add("baseline latency p50 / p99 / max", Latency(b.latency_ms));
    rep.Add("requests per volume: " + Requests(o), "");
  }
  for (int n : sizes) {
    for (std::string what : {"create", "delete"}) {
      const Summary& o = sum("provisioner", what, n);
      const Summary& b = sum("baseline", what, n);
      double ratio = o.Median() / b.Median();
      ratios[what + "_" + std::to_string(n)] = J(ratio);
      bool create = what == "create";
      rep.Section(what + " " + std::to_string(n) + " claims at once" +
                  (create ? " (until all Bound)" : " (until every PV and directory is gone)"));
      bool gated = create && n == 1000;
      rep.Add("time, provisioner (median, min-max)", Times(o));
      rep.Add("time, baseline", Times(b));
      rep.Add("ratio provisioner / baseline (medians)", Fmt("%.2fx", ratio), gated ? "<= 1.5x" : "", gated ? ratio <= 1.5 : -1);
      if (create) {
        rep.Add("latency p50 / p99 / max (queueing)", Latency(o.latency_ms));
        rep.Add("baseline latency p50 / p99 / max", Latency(b.latency_ms));
      }
      rep.Add("requests per volume: " + Requests(o), "");
      rep.Add("write requests per volume", Fmt("%.3f", o.PerVolume(o.writes)), "<= 2", o.writes <= 2 * o.volumes);
      rep.Add("per-claim reads (get) per volume", Fmt("%.2f", o.PerVolume(o.gets)), "0", o.gets == 0);
      rep.Add("provisioner CPU per 1000 volumes", Fmt("%.3f s", o.CpuPer1000()));
      // What the ratio would approach were the fake never in the way: the provisioner's CPU
      // against the baseline's own (its threads, on the claims only).
      rep.Add("baseline client CPU per 1000 volumes", Fmt("%.3f s", b.Per1000(b.baseline_cpu)) +
                  Fmt(" (provisioner / baseline %.1fx)", o.CpuPer1000() / std::max(1e-9, b.Per1000(b.baseline_cpu))));
      rep.Add("provisioner peak VmRSS / RssAnon (sampled)", MiB(o.peak.rss_kib) + " / " + MiB(o.peak.anon_kib));
      rep.Add("provisioner VmHWM after the burst", MiB(o.hwm_kib));
      rep.Add("fake-apiserver CPU per 1000 volumes",
              Fmt("%.3f s", o.Per1000(o.fake_cpu)) + " (baseline's bursts: " + Fmt("%.3f s", b.Per1000(b.fake_cpu)) + ")");
      rep.Add("CPU during provisioner bursts", Load(o));
      rep.Add("CPU during baseline bursts", Load(b));
    }
  }
  picojson::object limits_j;
  if (!limits.empty()) {
    rep.Section("which side limits a burst of " + std::to_string(kBottleneckClaims) + Fmt(": %.0f%% of a CPU taken away", kTakenShare * 100) +
                " (provisioner; medians of " + std::to_string(kBottleneckRounds) + " rounds)");
    // Slower by: the median over rounds of each round's time against the same round's time
    // with nothing taken (the runs of a round are back to back, so drift cancels out).
    // Their spread (the lowest and highest of the rounds) shows how far the median can be trusted.
    auto slower = [&](const char* what, Taken taken) {
      const std::vector<double>& none = limits[{what, Taken::kNothing}].seconds;
      const std::vector<double>& with = limits[{what, taken}].seconds;
      std::vector<double> ratios;
      for (size_t i = 0; i < std::min(none.size(), with.size()); ++i) ratios.push_back(with[i] / none[i] - 1);
      return ratios;
    };
    for (const char* what : {"create", "delete"}) {
      double none = Percentile(limits[{what, Taken::kNothing}].seconds, 0.5);
      std::string row = Fmt("%.3f s", none);
      picojson::object w;
      w["nothing_taken_seconds"] = J(none);
      for (Taken taken : {Taken::kFakeCpu, Taken::kFakeSlowed, Taken::kProvisionerCpus}) {
        const Limits& l = limits[{what, taken}];
        std::vector<double> per_round = slower(what, taken);
        double t = Percentile(l.seconds, 0.5), percent = Percentile(per_round, 0.5) * 100;
        double low = Percentile(per_round, 0) * 100, high = Percentile(per_round, 1) * 100;
        row += Fmt(" / %.3f s", t) + Fmt(" (%+.0f%%", percent) + Fmt(", %+.0f", low) + Fmt("..%+.0f)", high);
        picojson::object o;
        o["seconds_median"] = J(t);
        o["slower_percent_median_of_rounds"] = J(percent);
        o["slower_percent_lowest_round"] = J(low);
        o["slower_percent_highest_round"] = J(high);
        o["share_taken"] = J(Percentile(l.got, 0.5));
        o["stolen_by_host_share_mean"] = J(Mean(l.stolen));
        w[taken == Taken::kFakeCpu ? "fake_cpu_taken" : taken == Taken::kFakeSlowed ? "fake_slowed" : "provisioner_cpus_taken"] =
            picojson::value(o);
      }
      limits_j[what] = picojson::value(w);
      rep.Add(std::string(what) + ": none / fake's taken / fake slowed / provisioner's taken", row);
    }
    auto got = [&](Taken t) {
      std::vector<double> all = limits[{"create", t}].got;
      all.insert(all.end(), limits[{"delete", t}].got.begin(), limits[{"delete", t}].got.end());
      return Percentile(all, 0.5) * 100;
    };
    rep.Add("share the CpuThiefs got (fake's / provisioner's)", Fmt("%.0f%%", got(Taken::kFakeCpu)) + Fmt(" / %.0f%%", got(Taken::kProvisionerCpus)));
    // Steal comes in lumps (the host holds a CPU off for milliseconds at a time): a mean over
    // all the runs of a kind, not a median.
    auto stolen = [&](Taken t) {
      std::vector<double> all = limits[{"create", t}].stolen;
      const std::vector<double>& deletes = limits[{"delete", t}].stolen;
      all.insert(all.end(), deletes.begin(), deletes.end());
      return Mean(all) * 100;
    };
    rep.Add("machine's CPU time stolen by the host (mean): none / fake's / slowed / provisioner's",
            Fmt("%.0f%%", stolen(Taken::kNothing)) + Fmt(" / %.0f%%", stolen(Taken::kFakeCpu)) +
                Fmt(" / %.0f%%", stolen(Taken::kFakeSlowed)) + Fmt(" / %.0f%%", stolen(Taken::kProvisionerCpus)));
    auto median_slower = [&](const char* what, Taken taken) { return Percentile(slower(what, taken), 0.5); };
    double worst = std::max(median_slower("create", Taken::kFakeCpu), median_slower("delete", Taken::kFakeCpu));
    rep.Add("slower with the fake's CPU taken (worse of two)", Fmt("%+.0f%%", worst * 100), "< +10%", worst < 0.10);
    double worst_slowed = std::max(median_slower("create", Taken::kFakeSlowed), median_slower("delete", Taken::kFakeSlowed));
    rep.Add("slower with the fake slowed evenly (worse of two)", Fmt("%+.0f%%", worst_slowed * 100));
  }
  rep.Section("idle (from 1 s after /readyz, no claims)");
  rep.Add("VmRSS", MiB(idle.memory.rss_kib) + " (file " + MiB(idle.memory.file_kib) + ")", "< 6 MiB",
          idle.memory.rss_kib < 6 * 1024);
  rep.Add("RssAnon (private)", MiB(idle.memory.anon_kib), "< 2 MiB", idle.memory.anon_kib < 2 * 1024);
  rep.Add("CPU over " + Fmt("%.0f s", idle.seconds),
          std::to_string(idle.cpu_ticks) + " ticks" + Fmt(" (of %.0f/s)", static_cast<double>(sysconf(_SC_CLK_TCK))));
  rep.Add("wake-ups (context switches, all threads)",
          std::to_string(idle.wakeups) + Fmt(" (%.1f/s)", static_cast<double>(idle.wakeups) / idle.seconds));
  rep.Add("exec -> /readyz 200, empty cluster", Fmt("%.3f s", empty_ready));
  rep.Add("VmRSS / RssAnon after all bursts", MiB(after_bursts.rss_kib) + " / " + MiB(after_bursts.anon_kib));
  rep.Section("binary");
  rep.Add("size (linked with -s)", MiB(binary_bytes / 1024), "< 6 MiB", binary_bytes < 6L << 20);
  rep.Section("start-up with " + std::to_string(up.pairs) + " bound claims and PVs");
  rep.Add("exec -> /readyz 200", Fmt("%.3f s", up.ready_seconds), "< 2 s", up.ready_seconds < 2);
  rep.Add("fake-apiserver CPU meanwhile (lists)", Fmt("%.2f s", up.fake_cpu_seconds));
  rep.Add("exec -> quiet (every key looked at)", Fmt("%.3f s", up.settle_seconds));
  rep.Add("provisioner CPU until quiet", Fmt("%.2f s", up.cpu_seconds));
  rep.Add("VmRSS then", MiB(up.memory.rss_kib));
  rep.Add("RssAnon (private) then", MiB(up.memory.anon_kib), "< 24 MiB", up.memory.anon_kib < 24 * 1024);
  rep.Add("VmHWM then", MiB(up.memory.hwm_kib));
  std::string req;
  for (const auto& [k, v] : up.requests) req += (req.empty() ? "" : ", ") + k + " " + std::to_string(v);
  rep.Add("requests: " + req, "");
  rep.Add("write requests at start-up", std::to_string(up.writes), "0", up.writes == 0);
  double cached_ratio = 0;  // the worse of create and delete against an empty cluster
  {  // work per event: a scan of the cache per event would multiply these many times over
    const Summary& c = sum("provisioner", "create", kCachedBurst);
    const Summary& d = sum("provisioner", "delete", kCachedBurst);
    double empty_c = c.CpuPer1000(), empty_d = d.CpuPer1000();
    double cached_c = Percentile(up.cached_create_cpu, 0.5), cached_d = Percentile(up.cached_delete_cpu, 0.5);
    double worse = std::max(cached_c / empty_c, cached_d / empty_d);
    rep.Add("then CPU per 1000 volumes, create / delete", Fmt("%.3f", cached_c) + Fmt(" / %.3f s", cached_d) + " (" +
            std::to_string(kCachedRounds) + " bursts of " + std::to_string(kCachedBurst) + ")");
    rep.Add("the same with an empty cluster (bursts above)", Fmt("%.3f", empty_c) + Fmt(" / %.3f s", empty_d));
    rep.Add("with them cached / empty (worse of two)", Fmt("%.2fx", worse), "< 2x", worse < 2);
    cached_ratio = worse;
  }
  rep.Section("machine");
  rep.Add("load average before / after", Fmt("%.2f", load_before) + Fmt(" / %.2f", load_after));
  picojson::object fixed_j;
  for (const auto& [cpu, ms] : fixed_work) {
    rep.Add("fixed work on CPU " + std::to_string(cpu) + ", min / median / max of " + std::to_string(ms.size()),
            Fmt("%.1f", Percentile(ms, 0)) + Fmt(" / %.1f", Percentile(ms, 0.5)) + Fmt(" / %.1f ms", Percentile(ms, 1)));
    picojson::array a;
    for (double x : ms) a.push_back(J(x));
    fixed_j[std::to_string(cpu)] = picojson::value(a);
  }
  rep.Print();
  if (load_before > 1.0)
    std::printf("\nnote: the machine was busy with other work (load %.2f): timings are disturbed\n", load_before);

  // ---- the JSON
  picojson::object out, idle_j, up_j;
  out["provisioner"] = picojson::value(provisioner_bin);
  out["binary_bytes"] = J(static_cast<double>(binary_bytes));
  out["load_average_before"] = J(load_before);
  out["load_average_after"] = J(load_after);
  out["fixed_work_ms_by_cpu"] = picojson::value(fixed_j);
  idle_j["memory"] = MemoryJson(idle.memory);
  idle_j["seconds"] = J(idle.seconds);
  idle_j["cpu_ticks"] = J(static_cast<double>(idle.cpu_ticks));
  idle_j["clock_ticks_per_second"] = J(static_cast<double>(sysconf(_SC_CLK_TCK)));
  idle_j["wakeups"] = J(static_cast<double>(idle.wakeups));
  idle_j["ready_seconds_empty_cluster"] = J(empty_ready);
  out["idle"] = picojson::value(idle_j);
  out["memory_after_bursts"] = MemoryJson(after_bursts);
  picojson::array summaries;
  for (const auto& [k, s] : sums) summaries.push_back(SummaryJson(s));
  out["bursts"] = picojson::value(summaries);
  out["ratios_provisioner_to_baseline"] = picojson::value(ratios);
  up_j["pairs"] = J(up.pairs);
  up_j["populate_seconds"] = J(up.populate_seconds);
  up_j["ready_seconds"] = J(up.ready_seconds);
  up_j["settle_seconds"] = J(up.settle_seconds);
  up_j["cpu_seconds"] = J(up.cpu_seconds);
  up_j["fake_apiserver_cpu_seconds_until_ready"] = J(up.fake_cpu_seconds);
  up_j["memory"] = MemoryJson(up.memory);
  picojson::object up_req;
  for (const auto& [k, v] : up.requests) up_req[k] = J(static_cast<double>(v));
  up_j["requests"] = picojson::value(up_req);
  picojson::array cc, cd;
  for (double x : up.cached_create_cpu) cc.push_back(J(x));
  for (double x : up.cached_delete_cpu) cd.push_back(J(x));
  up_j["cached_create_cpu_seconds_per_1000_volumes"] = picojson::value(cc);
  up_j["cached_delete_cpu_seconds_per_1000_volumes"] = picojson::value(cd);
  up_j["cached_to_empty_cpu_ratio_worse"] = J(cached_ratio);
  out["startup"] = picojson::value(up_j);
  if (!limits_j.empty()) out["bottleneck"] = picojson::value(limits_j);
  out["targets"] = rep.Targets();
  std::system(("rm -rf '" + volumes + "'").c_str());
  harness::WriteFile("build/bench.json", picojson::value(out).serialize(true));
  std::printf("\nwrote build/bench.json; logs and the fake's request logs in %s/\n", work.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  try {
    return Run(argc > 1 && std::string(argv[1]) == "--startup-only");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
