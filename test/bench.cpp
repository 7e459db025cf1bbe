// make bench: is the provisioner fast and frugal enough for its users? It runs the real
// provisioner binary against the fake API server (build/fake-apiserver) on loopback, and a
// baseline client against a second fake, and holds the figures against the targets:
//  - claim -> PV create, one claim at a time: p50 under 5 ms;
//  - at most 2 write requests per volume (create: the PV and its event; delete: the finalizer
//    patch and the PV delete), and no per-claim reads (gets);
//  - idle: resident under 6 MiB, private (RssAnon) under 2 MiB, no wake-ups besides the watches;
//  - start-up with 10 000 bound claims and PVs: ready within 2 s, private memory under 32 MiB;
//  - the stripped static binary under 6 MiB;
//  - a burst of 1000 claims created at once, until all are Bound, against the baseline client:
//    reported, within 2x is fine (also the deletes, until every PV and directory is gone);
//  - node-aware mode: a burst of 300 WaitForFirstConsumer claims, 100 for each of three nodes
//    (selected-node set at their create, as the scheduler would), on three instances with
//    NODE_NAME node-0..2, until all are Bound, against 300 Immediate claims on one single-node
//    instance: no slower per claim;
//  - the usage scan: its CPU per 100 000 files, and a burst of 1000 claims while a pass over a
//    volume of 100 000 files runs, against one on an instance that does not scan: no slower;
//  - clones, with each method: seconds per GiB (a source of 1 GiB of random data in 4 files) and
//    per 100 000 files (of 4 KiB), from the clone's create until Bound, and the provisioner's own
//    copy time: byte copy on the volumes root and on ext4, reflink copy on XFS, btrfs snapshot
//    (loop filesystems, root only); and 100 claims at once while a byte copy of 100 000 files
//    runs on the same instance, against the same burst without: within 1.1x.
// The baseline does only the irreducible work of a provisioner: for each claim, as its create
// returns, one mkdir and one PV create; for a deletion one rmdir and one PV delete. No watches,
// no cache, no events. Four threads (as the provisioner's default WORKERS), each with a
// keep-alive HTTPS connection (cpp-httplib's SSLClient) and the service account's token.
//
// The bench creates and deletes a burst's claims 25 to a request (POST /fake/batch, four
// threads), and sees claims become Bound and PVs go by waiting inside the fake (GET
// /fake/wait), so that its own observing adds no watch traffic; it counts the provisioner's
// requests and each claim's latency from the fake's request log (GET /fake/requests).
// It uses no code of the provisioner: only its binary, the fake's binary and manifests/rbac.yaml.
//
// A benchmark, not a test: exit 0 unless something broke (a process that does not start, a
// burst not done within 120 s). Output: a table on stdout and build/bench.json. Work files and
// logs: build/bench-run/, replaced on each run (also the loop filesystems' sparse images, while
// in use). Binaries: FAKE_APISERVER (build/fake-apiserver) and PROVISIONER
// (./hostpath-provisioner). Volume directories: BENCH_VOLUMES, else a tmpfs.
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <picojson.h>

#include "test/support/harness.hpp"
#include "test/support/loopfs.hpp"

namespace {

using harness::Env;
using harness::Exists;
using harness::FreePort;
using harness::Process;
using harness::ReadFile;
using harness::WriteFile;

constexpr const char* kNs = "default";
const std::string kClaims = std::string("/api/v1/namespaces/") + kNs + "/persistentvolumeclaims";
constexpr const char* kSaUser = "system:serviceaccount:kube-system:hostpath-provisioner";
constexpr const char* kProvisionerName = "hostpath-provisioner.io/hostpath";
constexpr int kClientThreads = 4;                        // threads that create or delete a burst's claims
constexpr int kBatch = 25;                               // claims per request of theirs (POST /fake/batch)
constexpr int kBaselineThreads = 4;                      // the baseline's, as the provisioner's default WORKERS
constexpr int kTrickle = 50;                             // claims created one at a time
constexpr int kBurst = 1000, kRounds = 3;                // bursts, provisioner and baseline alternating
constexpr int kNodes = 3, kNodeBurst = 300;              // node-aware instances; claims at once over them
constexpr int kNodeRounds = 5;                           // their bursts, alternating with a single-node instance
constexpr int kStartupPairs = 10000;                     // bound claims and PVs present at start-up
constexpr int kScanDirs = 100, kScanFiles = 100000;      // the scanned volume: files in that many directories
constexpr int kScanRounds = 3;                           // bursts with and without a scan running
constexpr const char* kCloneClass = "clones";           // the class of clones and their sources
constexpr const char* kCloneSize = "2Gi";                // their request: a btrfs qgroup limit with room for 1 GiB
constexpr uint64_t kCloneBytes = 1ULL << 30;             // the large source: that much random data
constexpr int kCloneBigFiles = 4;                        // in that many files
constexpr int kCloneDirs = 100, kCloneFiles = 100000;    // the source of small files: that many in that many directories
constexpr size_t kCloneFileBytes = 4096;                 // of that size each
constexpr int kCloneBurst = 100, kCloneRounds = 5;       // bursts with and without a copy running
constexpr auto kBurstLimit = std::chrono::seconds(120);  // a burst not done by then is a failure
constexpr auto kIdleWindow = std::chrono::seconds(10);   // idle CPU and wake-ups are counted over this

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Small helpers: files, time, processes, /proc.

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// The number in a "Name:  value" line of a /proc status file; -1 if there is none.
long StatusField(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + ":");
  return at == std::string::npos ? -1 : std::atol(text.c_str() + at + name.size() + 2);
}

struct Memory {
  long rss_kib = -1;   // VmRSS: resident
  long anon_kib = -1;  // RssAnon: private memory (heap, stacks), what more objects cost
};
Memory ReadMemory(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/status");
  return {StatusField(s, "VmRSS"), StatusField(s, "RssAnon")};
}

// Calls f with the /proc directory of each of the process's threads.
void ForEachTask(pid_t pid, const std::function<void(const std::string&)>& f) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') f(dir + "/" + e->d_name);
  ::closedir(d);
}

// CPU seconds of the process's threads, from the scheduler's nanoseconds (schedstat).
double CpuSeconds(pid_t pid) {
  double sum = 0;
  ForEachTask(pid, [&](const std::string& task) { sum += std::atof(ReadFile(task + "/schedstat").c_str()) / 1e9; });
  return sum;
}

// Whether a thread sleeps in a read or a poll: a watch stream waiting for its next line (the
// provisioner's other threads wait on a condition variable, a signal or accept()).
bool InReadOrPoll(const std::string& task) {
  long nr = std::atol(ReadFile(task + "/syscall").c_str());
  for (long read_or_poll : {long{SYS_read}, long{SYS_recvfrom}, long{SYS_recvmsg}, long{SYS_ppoll}, long{SYS_pselect6},
                            long{SYS_epoll_pwait},
#ifdef SYS_poll
                            long{SYS_poll}, long{SYS_select}, long{SYS_epoll_wait},
#endif
                           })
    if (nr == read_or_poll) return true;
  return false;
}

// Context switches (voluntary and not) of each thread, by thread id and whether it sleeps in a
// read or poll now.
std::map<std::pair<std::string, bool>, long> WakeUps(pid_t pid) {
  std::map<std::pair<std::string, bool>, long> out;
  ForEachTask(pid, [&](const std::string& task) {
    std::string s = ReadFile(task + "/status");
    out[{task.substr(task.rfind('/') + 1), InReadOrPoll(task)}] =
        std::max(0L, StatusField(s, "voluntary_ctxt_switches")) + std::max(0L, StatusField(s, "nonvoluntary_ctxt_switches"));
  });
  return out;
}

long CountEntries(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  ::closedir(d);
  return n;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string MiB(long kib) { return kib < 0 ? "?" : Fmt("%.2f MiB", static_cast<double>(kib) / 1024.0); }

std::string Str(const picojson::value& v, std::initializer_list<const char*> path) {
  const picojson::value* cur = &v;
  for (const char* k : path) {
    if (!cur->is<picojson::object>() || !cur->contains(k)) return "";
    cur = &cur->get(k);
  }
  return cur->is<std::string>() ? cur->get<std::string>() : "";
}
int Code(const picojson::value& v) { return v.get("code").is<double>() ? static_cast<int>(v.get("code").get<double>()) : 0; }

// ---------------------------------------------------------------------------------------------
// Talking to the fake.

struct Reply {
  int code = 0;  // 0: no answer (body says why)
  std::string body;
  picojson::value json;
};

// One keep-alive HTTPS connection with a bearer token (cpp-httplib's SSLClient, the server's
// certificate checked against the fake's CA). Not thread-safe: one per thread.
class Api {
 public:
  Api(int port, const std::string& ca_file, const std::string& token) : cli_("127.0.0.1", port) {
    cli_.set_ca_cert_path(ca_file.c_str());
    cli_.enable_server_certificate_verification(true);
    cli_.set_keep_alive(true);
    cli_.set_tcp_nodelay(true);
    cli_.set_read_timeout(std::chrono::seconds(60));
    cli_.set_bearer_token_auth(token.c_str());
  }
  Reply Call(const std::string& method, const std::string& path, const std::string& body = "", bool parse = true) {
    httplib::Result r{nullptr, httplib::Error::Unknown};
    if (method == "GET") r = cli_.Get(path.c_str());
    if (method == "POST") r = cli_.Post(path.c_str(), body, "application/json");
    if (method == "DELETE") r = cli_.Delete(path.c_str());
    Reply out;
    if (!r) {
      out.body = method + " " + path + ": " + httplib::to_string(r.error());
      return out;
    }
    out.code = r->status;
    out.body = std::move(r->body);
    if (parse) picojson::parse(out.json, out.body);
    return out;
  }

 private:
  httplib::SSLClient cli_;
};

// The fake API server as a process, with RBAC from manifests/rbac.yaml, and its StorageClass
// "hostpath" (as manifests/storageclass.yaml: our provisioner, Delete, Immediate).
class Fake {
 public:
  explicit Fake(const std::string& dir) : dir_(dir) {
    proc_ = std::make_unique<Process>(std::vector<std::string>{Env("FAKE_APISERVER", "build/fake-apiserver"), "--dir", dir,
                                                               "--rbac", Env("RBAC_YAML", "manifests/rbac.yaml")},
                                      std::map<std::string, std::string>{}, dir + ".log");
    for (int i = 0; i < 2000 && !Exists(dir + "/port"); ++i) SleepMs(10);
    if (!Exists(dir + "/port")) throw Failure("fake-apiserver did not start: " + proc_->Log());
    port_ = std::stoi(ReadFile(dir + "/port"));
    std::string kubeconfig = ReadFile(dir + "/admin.kubeconfig");  // "token: T" in its user
    size_t at = kubeconfig.find("token: ");
    if (at == std::string::npos) throw Failure("no token in " + dir + "/admin.kubeconfig");
    admin_token_ = Trim(kubeconfig.substr(at + 7, kubeconfig.find('\n', at) - at - 7));
    sa_token_ = Trim(ReadFile(dir + "/serviceaccount/token"));
    CreateClass("hostpath", "Immediate");
  }
  // A StorageClass of our provisioner, Delete, with the given volumeBindingMode and parameters
  // (a JSON object's members, e.g. "\"quota\":\"true\"").
  void CreateClass(const std::string& name, const std::string& binding_mode, const std::string& parameters = "") const {
    Reply r = Admin()->Call("POST", "/apis/storage.k8s.io/v1/storageclasses",
                            R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":")" + name +
                                R"("},"provisioner":")" + kProvisionerName +
                                R"(","reclaimPolicy":"Delete","parameters":{)" + parameters +
                                R"(},"volumeBindingMode":")" + binding_mode + "\"}");
    if (r.code != 201) throw Failure("creating the StorageClass " + name + ": " + std::to_string(r.code) + " " + r.body);
  }
  std::unique_ptr<Api> Admin() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", admin_token_); }
  std::unique_ptr<Api> ServiceAccount() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", sa_token_); }
  // The admin connections that create and delete a burst's claims, made once and kept, so no
  // TLS handshake of the bench's falls inside a burst.
  Api& Client(int i) const {
    std::lock_guard<std::mutex> l(mu_);
    while (static_cast<int>(clients_.size()) <= i) clients_.push_back(Admin());
    return *clients_[i];
  }
  void WarmClients() const {
    for (int i = 0; i < kClientThreads; ++i) Client(i).Call("GET", "/api", "", false);
  }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return proc_->pid(); }

 private:
  std::string dir_;
  std::unique_ptr<Process> proc_;
  int port_ = 0;
  std::string admin_token_, sa_token_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Api>> clients_;
};

// Waits in the fake (GET /fake/wait, see test/fake/fake_apiserver.hpp) until `count` objects matched
// `query`; returns when the last of them was recorded there (ns since the epoch).
int64_t WaitInFake(Api& api, const std::string& query, long count) {
  auto end = std::chrono::steady_clock::now() + kBurstLimit;
  while (true) {
    Reply r = api.Call("GET", "/fake/wait?" + query + "&count=" + std::to_string(count) + "&timeoutSeconds=20", "", false);
    size_t at = r.body.find("\"lastNs\":");
    if (r.code == 200 && at != std::string::npos) return std::strtoll(r.body.c_str() + at + 9, nullptr, 10);
    if (r.code != 504 || std::chrono::steady_clock::now() > end)
      throw Failure("waiting for " + std::to_string(count) + " of " + query + ": " + std::to_string(r.code) + " " + r.body);
  }
}

// The /fake/wait query for claims named PREFIX-* becoming Bound, or for PVs of claims named
// PREFIX-* being deleted, from now on.
std::string WaitQuery(Api& admin, bool bound, const std::string& prefix) {
  std::string collection = bound ? kClaims : "/api/v1/persistentvolumes";
  Reply r = admin.Call("GET", collection + "?limit=1");
  std::string rv = Str(r.json, {"metadata", "resourceVersion"});
  if (r.code != 200 || rv.empty()) throw Failure("list " + collection + ": " + std::to_string(r.code) + " " + r.body);
  return bound ? "resource=persistentvolumeclaims&until=Bound&prefix=" + prefix + "-&resourceVersion=" + rv
               : "resource=persistentvolumes&until=Deleted&prefixPath=spec.claimRef.name&prefix=" + prefix +
                     "-&resourceVersion=" + rv;
}

// ---------------------------------------------------------------------------------------------
// Claims, volumes and the baseline client.

struct Claimed {
  std::string name, uid;
  std::string pv() const { return "pvc-" + uid; }
  std::string dir() const { return std::string(kNs) + "-" + name + "-" + pv(); }
};

// A claim of class `cls` asking for `size`; with a node, annotated with it as the scheduler's
// choice (selected-node); with `clone_of`, a clone of that claim (dataSource).
std::string ClaimJson(const std::string& name, const std::string& cls = "hostpath", const std::string& node = "",
                      const std::string& size = "1Gi", const std::string& clone_of = "") {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" + kNs + "\"" +
         (node.empty() ? "" : R"(,"annotations":{"volume.kubernetes.io/selected-node":")" + node + "\"}") +
         R"(},"spec":{"storageClassName":")" + cls + R"(","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":")" +
         size + "\"}}" +
         (clone_of.empty() ? "" : R"(,"dataSource":{"kind":"PersistentVolumeClaim","name":")" + clone_of + "\"}") + "}}";
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

// Sends requests {method, path, body} through POST /fake/batch in batches of kBatch on
// kClientThreads threads; calls done(i, result) for request i as its batch returns, on the
// sending thread. A result is {code, name, uid} or {code, message}.
void SendBatches(const Fake& fake, const std::vector<std::array<std::string, 3>>& requests,
                 const std::function<void(size_t, const picojson::value&)>& done) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string err;
  std::vector<std::thread> threads;
  for (int t = 0; t < kClientThreads; ++t)
    threads.emplace_back([&, t] {
      Api& admin = fake.Client(t);
      for (size_t begin; (begin = next.fetch_add(kBatch)) < requests.size();) {
        size_t end = std::min(requests.size(), begin + kBatch);
        std::string body = "{\"requests\":[";
        for (size_t i = begin; i < end; ++i)
          body += std::string(i == begin ? "" : ",") + "{\"method\":\"" + requests[i][0] + "\",\"path\":" +
                  picojson::value(requests[i][1]).serialize() + ",\"body\":" + picojson::value(requests[i][2]).serialize() + "}";
        Reply r = admin.Call("POST", "/fake/batch", body + "]}");
        if (r.code != 200 || !r.json.is<picojson::array>() || r.json.get<picojson::array>().size() != end - begin) {
          std::lock_guard<std::mutex> l(mu);
          err = "POST /fake/batch: " + std::to_string(r.code) + " " + r.body.substr(0, 300);
          next = requests.size();
          return;
        }
        for (size_t i = begin; i < end; ++i) done(i, r.json.get<picojson::array>()[i - begin]);
      }
    });
  for (auto& t : threads) t.join();
  if (!err.empty()) throw Failure(err);
}

// Creates claims PREFIX-0 .. PREFIX-(n-1) of class `cls`, with nodes > 0 claim i for node-(i % nodes)
// (selected-node set); on_created runs as each create returns.
std::vector<Claimed> CreateClaims(const Fake& fake, const std::string& prefix, int n,
                                  const std::function<void(const Claimed&)>& on_created, const std::string& cls = "hostpath",
                                  int nodes = 0) {
  std::vector<Claimed> out(n);
  std::vector<std::array<std::string, 3>> requests;
  for (int i = 0; i < n; ++i)
    requests.push_back({"POST", kClaims,
                        ClaimJson(prefix + "-" + std::to_string(i), cls, nodes > 0 ? "node-" + std::to_string(i % nodes) : "")});
  SendBatches(fake, requests, [&](size_t i, const picojson::value& res) {
    out[i] = {prefix + "-" + std::to_string(i), Str(res, {"uid"})};
    if (Code(res) != 201) throw Failure("create claim " + out[i].name + ": " + res.serialize());
    if (on_created) on_created(out[i]);
  });
  return out;
}

void DeleteClaims(const Fake& fake, const std::vector<Claimed>& claims, const std::function<void(const Claimed&)>& on_deleted) {
  std::vector<std::array<std::string, 3>> requests;
  for (const Claimed& c : claims) requests.push_back({"DELETE", kClaims + "/" + c.name, ""});
  SendBatches(fake, requests, [&](size_t i, const picojson::value& res) {
    if (Code(res) != 200) throw Failure("delete claim " + claims[i].name + ": " + res.serialize());
    if (on_deleted) on_deleted(claims[i]);
  });
}

// The baseline: kBaselineThreads threads taking claims in the order their creates (or deletes)
// returned; per claim one mkdir + one PV create, or one rmdir + one PV delete.
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
  void Push(bool create, const Claimed& c) {
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.push_back({create, c});
    }
    cv_.notify_one();
  }
  std::string error() {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }

 private:
  void Run(Api& api) {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto [create, c] = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      std::string path = pv_dir_ + "/" + c.dir(), err;
      if (create) {
        if (::mkdir(path.c_str(), 0777) != 0) err = "mkdir " + path + ": " + std::strerror(errno);
        Reply r = err.empty() ? api.Call("POST", "/api/v1/persistentvolumes", VolumeJson(c, pv_dir_, false), false) : Reply{201};
        if (r.code != 201) err = "create " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
      } else {
        if (::rmdir(path.c_str()) != 0) err = "rmdir " + path + ": " + std::strerror(errno);
        Reply r = err.empty() ? api.Call("DELETE", "/api/v1/persistentvolumes/" + c.pv(), "", false) : Reply{200};
        if (r.code != 200) err = "delete " + c.pv() + ": " + std::to_string(r.code) + " " + r.body;
      }
      l.lock();
      if (!err.empty() && error_.empty()) error_ = err;
    }
  }

  std::string pv_dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<bool, Claimed>> jobs_;
  bool stop_ = false;
  std::string error_;
  std::vector<std::thread> threads_;
};

// What a burst runs against: a fake, the PV roots, and the provisioners' pids or the baseline;
// and the claims it gets.
struct Target {
  const char* who;  // in the progress lines; its first letter starts the claims' names
  const Fake* fake;
  std::vector<std::string> pv_dirs;
  std::vector<pid_t> provisioners;  // one per instance; empty for the baseline
  Baseline* baseline = nullptr;     // nullptr for the provisioner
  std::string cls = "hostpath";     // the claims' StorageClass
  int nodes = 0;                    // > 0: claims spread over node-0 .. node-(nodes-1), selected-node set
  long kept = 0;                    // entries of each of pv_dirs that are not the bursts' (stay after a delete)
  std::function<void(bool create)> before;  // run just before a burst starts (create: a create burst)
  std::function<void(bool create)> after;   // run as soon as it is done (all Bound, or all gone)
};

// ---------------------------------------------------------------------------------------------
// Bursts.

struct Burst {
  double seconds = 0;              // first request sent -> all Bound / every PV and directory gone
  std::vector<double> latency_ms;  // per claim, its create -> its PV's create (creates only)
  std::map<std::string, long> requests;  // the service account's, by "verb resource"
  long writes = 0, gets = 0;             // of those: create/update/patch/delete, and single-object gets
  double cpu_seconds = 0;                // the provisioners' over the burst, summed
  long peak_rss_kib = -1;                // the largest provisioner's, sampled every ~5 ms
};

// Reads the fake's request log since the last reset: the service account's requests, and
// for creates each claim's latency from its create to its PV's create.
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

// Creates n claims at once (create) or deletes *claims at once, and waits until all are Bound,
// or until every PV and directory is gone.
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
  auto cpu = [&] {
    double sum = 0;
    for (pid_t pid : t.provisioners) sum += CpuSeconds(pid);
    return sum;
  };
  if (t.before) t.before(create);
  double cpu0 = cpu();
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
  b.cpu_seconds = cpu() - cpu0;
  if (t.after) t.after(create);
  SleepMs(300);  // let the trailing events (and anything else the burst caused) be sent
  ReadRequestLog(*t.fake, create ? *claims : std::vector<Claimed>{}, &b);
  return b;
}

// Rounds of bursts of n claims on a and on b, who goes first alternating by round: a create burst
// on each, then a delete burst on each. done(t, create, burst) runs after each.
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

// Creates n claims one after another, each once the previous one is Bound, then deletes them:
// the latency of a claim that does not queue behind others.
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

// ---------------------------------------------------------------------------------------------
// The provisioner as a process.

struct Provisioner {
  std::unique_ptr<Process> proc;
  double ready_seconds = 0;  // exec -> first /readyz 200
  int port = 0;              // of its HTTP endpoint
};

// Starts the provisioner with the service account's kubeconfig and `env` on top (e.g. NODE_NAME);
// returns once /readyz answers 200.
Provisioner StartProvisioner(const Fake& fake, const std::string& pv_dir, const std::string& log,
                             std::map<std::string, std::string> env = {}) {
  Provisioner p;
  int port = p.port = FreePort();
  env.insert({{"PV_DIR", pv_dir},
              {"KUBECONFIG", fake.dir() + "/provisioner.kubeconfig"},
              {"METRICS_ADDRESS", "127.0.0.1:" + std::to_string(port)},
              {"LOG_LEVEL", "0"}});
  int64_t t0 = NowNs();
  p.proc = std::make_unique<Process>(std::vector<std::string>{Env("PROVISIONER", "./hostpath-provisioner")}, env, log);
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

// Waits until the process has used no CPU for `quiet` (every key looked at), at most 60 s.
void WaitCpuQuiet(pid_t pid, std::chrono::milliseconds quiet) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60), since = std::chrono::steady_clock::now();
  double last = CpuSeconds(pid);
  while (std::chrono::steady_clock::now() < end && std::chrono::steady_clock::now() - since < quiet) {
    SleepMs(50);
    double now = CpuSeconds(pid);
    if (now - last > 1e-4) since = std::chrono::steady_clock::now();
    last = now;
  }
}

// ---------------------------------------------------------------------------------------------
// The usage scan.

// The value of an unlabelled series on the provisioner's /metrics; -1 when it is not there.
double MetricValue(int port, const std::string& name) {
  httplib::Client cli("127.0.0.1", port);
  auto r = cli.Get("/metrics");
  if (!r || r->status != 200) return -1;
  size_t at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(r->body.c_str() + at + name.size() + 2);
}

// CPU seconds of the provisioner's usage scan threads ("usage-scan" and "usage-walk").
double ScanCpuSeconds(pid_t pid) {
  double sum = 0;
  ForEachTask(pid, [&](const std::string& task) {
    if (ReadFile(task + "/comm").rfind("usage-", 0) == 0) sum += std::atof(ReadFile(task + "/schedstat").c_str()) / 1e9;
  });
  return sum;
}

// Fills `words` with pseudo-random data (xorshift64, carried on in *state): nothing a filesystem
// could compress or share.
void FillRandom(std::vector<uint64_t>* words, uint64_t* state) {
  for (uint64_t& w : *words) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    w = *state;
  }
}

// Makes `dirs` directories of `files` files each in `path`, of `bytes` random bytes each (0:
// empty files, for the usage scan, whose walk costs per entry, not per byte, and a tmpfs stays
// small).
void MakeTree(const std::string& path, int dirs, int files, size_t bytes = 0) {
  std::vector<uint64_t> data((bytes + 7) / 8);
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  FillRandom(&data, &state);
  for (int d = 0; d < dirs; ++d) {
    std::string dir = path + "/d" + std::to_string(d);
    if (::mkdir(dir.c_str(), 0755) != 0) throw Failure("cannot create " + dir);
    for (int f = 0; f < files; ++f) {
      int fd = ::open((dir + "/f" + std::to_string(f)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) throw Failure("cannot create a file in " + dir);
      bool written = bytes == 0 || ::write(fd, data.data(), bytes) == static_cast<ssize_t>(bytes);
      ::close(fd);
      if (!written) throw Failure("cannot write a file in " + dir);
    }
  }
}

// Waits until the scan has completed a pass after the `after`-th; returns how many it has.
long NextPass(int port, long after) {
  const std::string name = "hostpath_provisioner_usage_scans_total";
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); std::chrono::steady_clock::now() < end;) {
    long passes = static_cast<long>(MetricValue(port, name));
    if (passes > after) return passes;
    SleepMs(5);
  }
  throw Failure("the usage scan completed no pass within 60 s");
}

// ---------------------------------------------------------------------------------------------
// Clones.

// Writes `bytes` random bytes (FillRandom, from `seed`) to a new file.
void WriteRandom(const std::string& path, uint64_t bytes, uint64_t seed) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Failure("cannot create " + path);
  std::vector<uint64_t> chunk(1 << 17);  // 1 MiB
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (uint64_t done = 0; done < bytes;) {
    FillRandom(&chunk, &state);
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, chunk.size() * sizeof chunk[0]));
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw Failure("cannot write " + path);
    }
    done += n;
  }
  ::close(fd);
}

// Flushes the filesystem under `path` (syncfs), so that a copy timed next does not also write
// back its source.
void SyncFs(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::syncfs(fd) != 0) throw Failure("cannot flush the filesystem of " + path);
  ::close(fd);
}

// Creates claim PREFIX-0 of the clones' class (kCloneClass, kCloneSize), a clone of `source`
// unless it is empty; with `seconds`, waits until it is Bound and says how long that took from
// its create.
Claimed CreateCloneClaim(const Fake& fake, const std::string& prefix, const std::string& source, double* seconds) {
  auto admin = fake.Admin();
  std::string query = WaitQuery(*admin, true, prefix), name = prefix + "-0";
  const int64_t t0 = NowNs();
  Reply r = admin->Call("POST", kClaims, ClaimJson(name, kCloneClass, "", kCloneSize, source));
  if (r.code != 201) throw Failure("create claim " + name + ": " + std::to_string(r.code) + " " + r.body);
  if (seconds) *seconds = static_cast<double>(WaitInFake(*admin, query, 1) - t0) / 1e9;
  return {name, Str(r.json, {"metadata", "uid"})};
}

struct CloneTimes {
  double bound = -1;   // the clone's create -> Bound
  double copy = -1;    // the provisioner's own figure: its clone_seconds_total grew by that much
  std::string method;  // its PV's clone-method annotation
};

// A filesystem's row: its clones of the two sources, or why there are none.
struct CloneRow {
  std::string label, expected, skipped;  // expected: the method its clones should be made with
  CloneTimes gib, files;                 // of the kCloneBytes source, of the kCloneFiles one
};

// Clones `source` as claim PREFIX-0 and times it.
CloneTimes TimeClone(const Fake& fake, const Provisioner& p, const Claimed& source, const std::string& prefix) {
  CloneTimes t;
  const double copy0 = MetricValue(p.port, "hostpath_provisioner_clone_seconds_total");
  Claimed c = CreateCloneClaim(fake, prefix, source.name, &t.bound);
  t.copy = MetricValue(p.port, "hostpath_provisioner_clone_seconds_total") - copy0;
  Reply pv = fake.Admin()->Call("GET", "/api/v1/persistentvolumes/" + c.pv());
  t.method = Str(pv.json, {"metadata", "annotations", "hostpath-provisioner.io/clone-method"});
  return t;
}

// On an instance whose class kCloneClass makes volumes under `root`: the two sources (claims
// big-0 and files-0: kCloneBytes in kCloneBigFiles files, kCloneFiles files of kCloneFileBytes
// in kCloneDirs directories), flushed, then a clone of each, one after the other. Returns the
// source of small files.
Claimed MeasureClones(const Fake& fake, const Provisioner& p, const std::string& root, CloneRow* row) {
  Claimed big = CreateCloneClaim(fake, "big", "", nullptr), files = CreateCloneClaim(fake, "files", "", nullptr);
  auto admin = fake.Admin();
  WaitInFake(*admin, "resource=persistentvolumeclaims&until=Bound&prefix=big-", 1);
  WaitInFake(*admin, "resource=persistentvolumeclaims&until=Bound&prefix=files-", 1);
  for (int i = 0; i < kCloneBigFiles; ++i)
    WriteRandom(root + "/" + big.dir() + "/data" + std::to_string(i), kCloneBytes / kCloneBigFiles, i + 1);
  MakeTree(root + "/" + files.dir(), kCloneDirs, kCloneFiles / kCloneDirs, kCloneFileBytes);
  SyncFs(root);
  row->gib = TimeClone(fake, p, big, "cbig");
  row->files = TimeClone(fake, p, files, "cfiles");
  std::printf("  %-36s 1 GiB: %.3f s (its copy %.3f s), %d files: %.3f s (its copy %.3f s)%s\n", row->label.c_str(),
              row->gib.bound, row->gib.copy, kCloneFiles, row->files.bound, row->files.copy,
              row->gib.method == row->expected && row->files.method == row->expected
                  ? ""
                  : (", method " + row->gib.method + " / " + row->files.method).c_str());
  std::fflush(stdout);
  return files;
}

// ---------------------------------------------------------------------------------------------
// The table.

class Report {
 public:
  // A figure; met = 1 or 0 marks it ok / MISSED against its target, -1: no target.
  void Add(const std::string& figure, const std::string& value, const std::string& target = "", int met = -1) {
    rows_.push_back({figure, value, target, met < 0 ? "" : met ? "ok" : "MISSED"});
  }
  void Section(const std::string& title) { rows_.push_back({"# " + title, "", "", ""}); }
  void Print() const {
    std::printf("\n  %-44s %-38s %-10s\n", "figure", "value", "target");
    for (const Row& r : rows_) {
      if (r.figure.rfind("# ", 0) == 0)
        std::printf("%s\n", r.figure.substr(1).c_str());
      else
        std::printf("  %-44s %-38s %-10s %s\n", r.figure.c_str(), r.value.c_str(), r.target.c_str(), r.verdict.c_str());
    }
  }
  picojson::value Json() const {
    picojson::array out;
    std::string section;
    for (const Row& r : rows_) {
      if (r.figure.rfind("# ", 0) == 0) {
        section = r.figure.substr(2);
        continue;
      }
      picojson::object o;
      o["figure"] = picojson::value(section + ": " + r.figure);
      o["value"] = picojson::value(r.value);
      if (!r.verdict.empty()) {
        o["target"] = picojson::value(r.target);
        o["met"] = picojson::value(r.verdict == "ok");
      }
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

std::string Requests(const std::map<std::string, long>& requests, long volumes) {
  std::string out;
  for (const auto& [k, v] : requests)
    out += (out.empty() ? "" : ", ") + k + Fmt(" %.2f", static_cast<double>(v) / static_cast<double>(volumes));
  return out.empty() ? "none" : out;
}

std::string Latency(const std::vector<double>& ms) {
  return Fmt("%.2f", Percentile(ms, 0.5)) + Fmt(" / %.2f ms", Percentile(ms, 0.99));
}

std::string MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) throw Failure("cannot create " + path);
  char abs[PATH_MAX];
  if (::realpath(path.c_str(), abs) == nullptr) throw Failure("cannot resolve " + path);
  return abs;
}

double LoadAverage() { return std::atof(ReadFile("/proc/loadavg").c_str()); }

int Run() {
  const std::string work = "build/bench-run";
  std::system(("rm -rf '" + work + "'").c_str());
  if (::mkdir(work.c_str(), 0755) != 0) throw Failure("cannot create " + work + " (run from the repository's top)");
  // Volume directories on a tmpfs by default: on ext4 without a journal (this project's VMs)
  // a mkdir right after many deletions can cost a few hundred microseconds, which would time
  // the filesystem rather than the provisioner. A node's data disk does not do that.
  std::string volumes = Env("BENCH_VOLUMES", ::access("/dev/shm", W_OK) == 0 ? "/dev/shm/hostpath-provisioner-bench" : "");
  if (volumes.empty()) volumes = work + "/volumes";
  std::system(("rm -rf '" + volumes + "'").c_str());
  MakeDir(volumes);
  std::string provisioner_bin = Env("PROVISIONER", "./hostpath-provisioner");
  struct stat st {};
  if (::stat(provisioner_bin.c_str(), &st) != 0) throw Failure(provisioner_bin + " not found: run make first");
  double load_before = LoadAverage();
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("bench: %s against %s; load average %.2f on %ld CPUs; volume directories in %s\n", provisioner_bin.c_str(),
              Env("FAKE_APISERVER", "build/fake-apiserver").c_str(), load_before, cpus, volumes.c_str());
  std::printf("bench: on a two-CPU machine the fake does the API server's and the PV controller's work for every claim and "
              "cannot stay out of the way: burst times are the fake's and the client's together\n");
  std::fflush(stdout);

  Report rep;
  picojson::object json;
  Memory idle_mem, after_bursts;
  double idle_cpu = 0, empty_ready = 0;
  long idle_watch_wakeups = 0, idle_other_wakeups = 0;
  std::vector<double> create_p, create_b, delete_p, delete_b;
  Burst trickle_p, trickle_b, creates, deletes;  // creates / deletes: the provisioner's, pooled
  {
    Fake fake_p(work + "/api-provisioner"), fake_b(work + "/api-baseline");
    std::string pv_p = MakeDir(volumes + "/pv-provisioner"), pv_b = MakeDir(volumes + "/pv-baseline");
    Provisioner p = StartProvisioner(fake_p, pv_p, work + "/provisioner.log");
    empty_ready = p.ready_seconds;
    std::printf("bench: idle for %lld s\n", static_cast<long long>(kIdleWindow.count()) + 1);
    std::fflush(stdout);
    SleepMs(1000);
    idle_mem = ReadMemory(p.proc->pid());
    double cpu0 = CpuSeconds(p.proc->pid());
    std::map<std::pair<std::string, bool>, long> woke0 = WakeUps(p.proc->pid());
    std::this_thread::sleep_for(kIdleWindow);
    idle_cpu = CpuSeconds(p.proc->pid()) - cpu0;
    for (const auto& [thread, n] : WakeUps(p.proc->pid())) {
      long d = n - (woke0.count(thread) ? woke0[thread] : 0);
      (thread.second ? idle_watch_wakeups : idle_other_wakeups) += d;
    }

    Baseline baseline(fake_b, pv_b);
    Target ours{"provisioner", &fake_p, {pv_p}, {p.proc->pid()}}, base{"baseline", &fake_b, {pv_b}, {}, &baseline};
    std::printf("bench: %d claims one at a time, then %d rounds of %d claims at once\n", kTrickle, kRounds, kBurst);
    std::fflush(stdout);
    trickle_p = Trickle(ours, "ptrickle", kTrickle);
    trickle_b = Trickle(base, "btrickle", kTrickle);
    Alternate(ours, base, kBurst, kRounds, [&](const Target& t, bool create, const Burst& b) {
      (create ? (t.baseline ? create_b : create_p) : (t.baseline ? delete_b : delete_p)).push_back(b.seconds);
      if (t.baseline) return;
      Burst& pool = create ? creates : deletes;
      pool.latency_ms.insert(pool.latency_ms.end(), b.latency_ms.begin(), b.latency_ms.end());
      for (const auto& [k, v] : b.requests) pool.requests[k] += v;
      pool.writes += b.writes;
      pool.gets += b.gets;
      pool.cpu_seconds += b.cpu_seconds;
      pool.peak_rss_kib = std::max(pool.peak_rss_kib, b.peak_rss_kib);
    });
    after_bursts = ReadMemory(p.proc->pid());
    p.proc->Signal(SIGTERM);
    int code = -1;
    if (!p.proc->WaitFor(std::chrono::seconds(20), &code)) code = -1;
    if (code != 0) throw Failure("the provisioner did not stop cleanly on SIGTERM (exit " + std::to_string(code) + ")");
  }

  // Node-aware mode: kNodes instances (NODE_NAME node-i, a root each) and a WaitForFirstConsumer
  // class, against one single-node instance and the Immediate class, each on a fake of its own.
  std::printf("bench: %d rounds of %d claims at once, over %d node-aware instances and on a single-node one\n", kNodeRounds,
              kNodeBurst, kNodes);
  std::fflush(stdout);
  std::vector<double> create_n, create_s, cpu_n, cpu_s;
  {
    Fake fake_n(work + "/api-nodes"), fake_s(work + "/api-single-node");
    fake_n.CreateClass("hostpath-wffc", "WaitForFirstConsumer");
    Target nodes{"node-aware", &fake_n, {}, {}, nullptr, "hostpath-wffc", kNodes};
    std::vector<Provisioner> instances;
    for (int i = 0; i < kNodes; ++i) {
      std::string node = "node-" + std::to_string(i);
      nodes.pv_dirs.push_back(MakeDir(volumes + "/pv-" + node));
      instances.push_back(StartProvisioner(fake_n, nodes.pv_dirs.back(), work + "/provisioner-" + node + ".log",
                                           {{"NODE_NAME", node}}));
      nodes.provisioners.push_back(instances.back().proc->pid());
    }
    std::string pv_s = MakeDir(volumes + "/pv-single-node");
    Provisioner single = StartProvisioner(fake_s, pv_s, work + "/provisioner-single-node.log");
    Target one{"single-node", &fake_s, {pv_s}, {single.proc->pid()}};
    Alternate(nodes, one, kNodeBurst, kNodeRounds, [&](const Target& t, bool create, const Burst& b) {
      if (!create) return;
      (t.nodes > 0 ? create_n : create_s).push_back(b.seconds);
      (t.nodes > 0 ? cpu_n : cpu_s).push_back(b.cpu_seconds);
    });
  }

  // The usage scan: an instance scanning every second, with a volume of kScanFiles files, and
  // one that does not scan (USAGE_SCAN_INTERVAL=0), each on a fake of its own.
  std::printf("bench: usage scan of a volume of %d files; %d rounds of %d claims at once while a pass runs, and "
              "without a scan\n", kScanFiles, kScanRounds, kBurst);
  std::fflush(stdout);
  double scan_cpu = 0, scan_entries = 0, scan_pass_seconds = 0, burst_entries = 0;
  std::vector<double> create_scan, create_quiet, delete_scan, delete_quiet;
  {
    Fake fake_s(work + "/api-usage-scan"), fake_q(work + "/api-usage-quiet");
    std::string pv_s = MakeDir(volumes + "/pv-usage-scan"), pv_q = MakeDir(volumes + "/pv-usage-quiet");
    Provisioner scanning = StartProvisioner(fake_s, pv_s, work + "/provisioner-usage-scan.log", {{"USAGE_SCAN_INTERVAL", "1"}});
    Provisioner quiet = StartProvisioner(fake_q, pv_q, work + "/provisioner-usage-quiet.log", {{"USAGE_SCAN_INTERVAL", "0"}});
    const pid_t pid = scanning.proc->pid();
    const int port = scanning.port;
    auto admin = fake_s.Admin();
    std::string query = WaitQuery(*admin, true, "tree");
    std::vector<Claimed> tree = CreateClaims(fake_s, "tree", 1, nullptr);
    WaitInFake(*admin, query, 1);
    MakeTree(pv_s + "/" + tree[0].dir(), kScanDirs, kScanFiles / kScanDirs);
    // One whole pass: from the end of the first pass that began once the tree was made to the
    // end of the next, between which the scan threads do nothing else.
    long passes = NextPass(port, NextPass(port, static_cast<long>(MetricValue(port, "hostpath_provisioner_usage_scans_total"))));
    const double cpu0 = ScanCpuSeconds(pid), entries0 = MetricValue(port, "hostpath_provisioner_usage_scan_entries_total");
    passes = NextPass(port, passes);
    scan_cpu = ScanCpuSeconds(pid) - cpu0;
    scan_entries = MetricValue(port, "hostpath_provisioner_usage_scan_entries_total") - entries0;
    scan_pass_seconds = MetricValue(port, "hostpath_provisioner_usage_scan_last_duration_seconds");
    // Each burst on the scanning instance starts as a pass starts: once a pass ends, the next
    // starts after the interval (1 s).
    double entries_at_start = 0;
    Target scan{"scanning", &fake_s, {pv_s}, {pid}};
    scan.kept = 1;
    scan.before = [&](bool) {
      passes = NextPass(port, passes);
      SleepMs(1010);
      entries_at_start = MetricValue(port, "hostpath_provisioner_usage_scan_entries_total");
    };
    Target calm{"quiet", &fake_q, {pv_q}, {quiet.proc->pid()}};
    Alternate(scan, calm, kBurst, kScanRounds, [&](const Target& t, bool create, const Burst& b) {
      const bool scanned = t.before != nullptr;
      (create ? (scanned ? create_scan : create_quiet) : (scanned ? delete_scan : delete_quiet)).push_back(b.seconds);
      if (scanned) burst_entries += MetricValue(port, "hostpath_provisioner_usage_scan_entries_total") - entries_at_start;
    });
  }

  // Start-up with kStartupPairs bound claims and their PVs already there.
  std::printf("bench: start-up with %d bound claims and PVs\n", kStartupPairs);
  std::fflush(stdout);
  Memory startup_mem;
  double startup_ready = 0;
  long startup_writes = 0;
  {
    Fake fake(work + "/api-startup");
    std::string pv_dir = MakeDir(volumes + "/pv-startup");
    std::vector<Claimed> claims = CreateClaims(fake, "existing", kStartupPairs, nullptr);
    std::vector<std::array<std::string, 3>> pvs;
    for (const Claimed& c : claims) pvs.push_back({"POST", "/api/v1/persistentvolumes", VolumeJson(c, pv_dir, true)});
    SendBatches(fake, pvs, [&](size_t i, const picojson::value& res) {
      if (Code(res) != 201) throw Failure("create " + claims[i].pv() + ": " + res.serialize());
    });
    fake.Admin()->Call("POST", "/fake/reset-requests");
    Provisioner p = StartProvisioner(fake, pv_dir, work + "/provisioner-startup.log");
    startup_ready = p.ready_seconds;
    WaitCpuQuiet(p.proc->pid(), std::chrono::milliseconds(1000));
    startup_mem = ReadMemory(p.proc->pid());
    Burst counted;
    ReadRequestLog(fake, {}, &counted);
    startup_writes = counted.writes;
  }
  // Enforced sizes: one instance on a btrfs root with qgroups (a loop device), claims one at a
  // time of a class with quota "true" and of one without, alternately.
  std::printf("bench: %d claims one at a time with quota \"true\" and %d without, on btrfs with qgroups\n", 2 * kTrickle,
              2 * kTrickle);
  std::fflush(stdout);
  std::vector<double> quota_on, quota_off;
  std::string quota_skipped;
  {
    char abs[PATH_MAX];
    harness::LoopFs fs(std::string(::realpath(work.c_str(), abs) ? abs : work.c_str()) + "/btrfs", "btrfs", "4G");  // each claim asks for 1Gi
    if (!fs.mounted || harness::LoopFs::Sh("btrfs quota enable " + fs.dir) != 0) {
      quota_skipped = fs.mounted ? "btrfs quota enable failed" : fs.why;
    } else {
      Fake fake(work + "/api-quota");
      fake.CreateClass("enforced", "Immediate", "\"quota\":\"true\"");
      Provisioner p = StartProvisioner(fake, fs.dir, work + "/provisioner-quota.log");
      Target on{"enforced", &fake, {fs.dir}, {p.proc->pid()}, nullptr, "enforced"}, off{"plain", &fake, {fs.dir}, {p.proc->pid()}};
      for (int round = 0; round < 2; ++round) {
        for (const Target* t : {&on, &off}) {
          Burst b = Trickle(*t, std::string(t == &on ? "q" : "n") + std::to_string(round), kTrickle);
          std::vector<double>& into = t == &on ? quota_on : quota_off;
          into.insert(into.end(), b.latency_ms.begin(), b.latency_ms.end());
        }
      }
    }
  }

  // Clones: for each method, a clone of a source of kCloneBytes and of one of kCloneFiles files,
  // on an instance of its own (no usage scan, which would walk the sources meanwhile): byte copy
  // on the volumes root and on ext4, reflink copy on XFS, btrfs snapshot on btrfs with qgroups
  // (a class with quota "true"), the last three on loop devices. On the volumes root's instance,
  // kCloneBurst claims at once while a byte copy of kCloneFiles files runs, alternating with the
  // same burst without; each of the two kinds of burst has a class and a root (pvDir) of its own.
  std::printf("bench: clones of 1 GiB and of %d files, by each method; %d rounds of %d claims at once while a copy "
              "runs, and without\n", kCloneFiles, kCloneRounds, kCloneBurst);
  std::fflush(stdout);
  std::vector<CloneRow> clone_rows;
  std::vector<double> create_copying, create_not_copying;
  int copy_running = 0;  // bursts at whose end the copy was still running
  {
    struct statfs sf {};
    const bool tmpfs = ::statfs(volumes.c_str(), &sf) == 0 && sf.f_type == TMPFS_MAGIC;
    clone_rows.push_back({std::string("byte copy on ") + (tmpfs ? "tmpfs" : "the volumes root"), "byte copy"});
    Fake fake(work + "/api-clones");
    std::string sources = MakeDir(volumes + "/pv-clones"), pv_c = MakeDir(volumes + "/pv-clone-bursts-copying"),
                pv_n = MakeDir(volumes + "/pv-clone-bursts-none");
    fake.CreateClass(kCloneClass, "Immediate");
    fake.CreateClass("bursts-copying", "Immediate", "\"pvDir\":\"" + pv_c + "\"");
    fake.CreateClass("bursts-none", "Immediate", "\"pvDir\":\"" + pv_n + "\"");
    Provisioner p = StartProvisioner(fake, sources, work + "/provisioner-clones.log",
                                     {{"ALLOWED_PV_DIRS", pv_c + "," + pv_n}, {"USAGE_SCAN_INTERVAL", "0"}});
    const pid_t pid = p.proc->pid();
    const Claimed files = MeasureClones(fake, p, sources, &clone_rows.back());
    // The copy of each round: started (its temporary directory made) just before the burst; once
    // the burst is done, deleted, which stops it, and gone (with anything the provisioner did for
    // it) before the next burst starts.
    std::optional<Claimed> copy;
    auto temp = [&] { return sources + "/.clone-" + copy->pv(); };
    auto settle = [&] {
      if (!copy) return;
      auto admin = fake.Admin();
      Reply r = admin->Call("DELETE", kClaims + "/" + copy->name);
      if (r.code != 200) throw Failure("delete claim " + copy->name + ": " + std::to_string(r.code) + " " + r.body);
      for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
           Exists(temp()) || Exists(sources + "/" + copy->dir()) ||
           admin->Call("GET", "/api/v1/persistentvolumes/" + copy->pv(), "", false).code != 404;
           SleepMs(5))
        if (std::chrono::steady_clock::now() > end) throw Failure("the clone " + copy->name + " was not gone within 60 s");
      WaitCpuQuiet(pid, std::chrono::milliseconds(300));
      copy.reset();
    };
    int round = 0;
    Target copying{"copying", &fake, {pv_c}, {pid}, nullptr, "bursts-copying"}, idle{"none", &fake, {pv_n}, {pid}, nullptr, "bursts-none"};
    copying.before = [&](bool create) {
      settle();
      if (!create) return;
      copy = CreateCloneClaim(fake, "during" + std::to_string(round++), files.name, nullptr);
      for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60); !Exists(temp()); SleepMs(1))
        if (std::chrono::steady_clock::now() > end) throw Failure("the copy for " + copy->name + " did not start within 60 s");
    };
    copying.after = [&](bool create) { copy_running += create && Exists(temp()); };
    idle.before = [&](bool) { settle(); };
    Alternate(copying, idle, kCloneBurst, kCloneRounds, [&](const Target& t, bool create, const Burst& b) {
      if (create) (t.after ? create_copying : create_not_copying).push_back(b.seconds);
    });
    settle();
  }
  std::system(("rm -rf '" + volumes + "'/pv-clone*").c_str());
  {
    char abs[PATH_MAX];
    const std::string at = std::string(::realpath(work.c_str(), abs) ? abs : work.c_str()) + "/clone-";
    struct Method {
      const char *label, *method, *type, *size, *mkfs_args, *parameters;
    };
    // Sparse images, sized for both sources and a byte copy of each (and the metadata of 200 000 files).
    for (const Method& m : {Method{"byte copy on ext4", "byte copy", "ext4", "6G", "", ""},
                            Method{"reflink copy on XFS (reflink=1)", "reflink copy", "xfs", "4G", "-m reflink=1", ""},
                            Method{"btrfs snapshot (quota \"true\")", "btrfs snapshot", "btrfs", "6G", "", "\"quota\":\"true\""}}) {
      clone_rows.push_back({m.label, m.method});
      harness::LoopFs fs(at + m.type, m.type, m.size, m.mkfs_args);
      if (!fs.mounted) {
        clone_rows.back().skipped = fs.why;
      } else if (std::string(m.type) == "btrfs" && harness::LoopFs::Sh("btrfs quota enable " + fs.dir) != 0) {
        clone_rows.back().skipped = "btrfs quota enable failed";
      } else {
        Fake fake(work + "/api-clone-" + m.type);
        fake.CreateClass(kCloneClass, "Immediate", m.parameters);
        Provisioner p = StartProvisioner(fake, fs.dir, work + "/provisioner-clone-" + m.type + ".log", {{"USAGE_SCAN_INTERVAL", "0"}});
        MeasureClones(fake, p, fs.dir, &clone_rows.back());
      }
      if (!clone_rows.back().skipped.empty()) std::printf("  %-36s skipped: %s\n", m.label, clone_rows.back().skipped.c_str());
    }
  }

  double load_after = LoadAverage();

  // ---- the table and the JSON
  auto median = [](const std::vector<double>& v) { return Percentile(v, 0.5); };
  auto per_volume = [](long n, size_t volumes) { return static_cast<double>(n) / static_cast<double>(volumes); };
  size_t burst_volumes = static_cast<size_t>(kBurst) * create_p.size();
  rep.Section(std::to_string(kTrickle) + " claims one at a time (each created once the previous is Bound)");
  rep.Add("claim -> PV create, p50 / p99", Latency(trickle_p.latency_ms), "p50 < 5 ms", Percentile(trickle_p.latency_ms, 0.5) < 5);
  rep.Add("the baseline's, p50 / p99", Latency(trickle_b.latency_ms));
  rep.Section(std::to_string(kBurst) + " claims at once, " + std::to_string(create_p.size()) + " rounds (medians)");
  double create_ratio = median(create_p) / median(create_b), delete_ratio = median(delete_p) / median(delete_b);
  rep.Add("create until all Bound: provisioner / baseline",
          Fmt("%.3f", median(create_p)) + Fmt(" / %.3f s", median(create_b)) + Fmt(" = %.2fx", create_ratio), "<= 2x",
          create_ratio <= 2);
  rep.Add("delete until all gone: provisioner / baseline",
          Fmt("%.3f", median(delete_p)) + Fmt(" / %.3f s", median(delete_b)) + Fmt(" = %.2fx", delete_ratio));
  rep.Add("write requests per volume, create / delete",
          Fmt("%.2f", per_volume(creates.writes, burst_volumes)) + Fmt(" / %.2f", per_volume(deletes.writes, burst_volumes)),
          "<= 2", creates.writes <= 2 * static_cast<long>(burst_volumes) && deletes.writes <= 2 * static_cast<long>(burst_volumes));
  rep.Add("per-claim reads (get) per volume", Fmt("%.2f", per_volume(creates.gets + deletes.gets, burst_volumes)), "0",
          creates.gets + deletes.gets == 0);
  rep.Add("requests per volume, create", Requests(creates.requests, static_cast<long>(burst_volumes)));
  rep.Add("requests per volume, delete", Requests(deletes.requests, static_cast<long>(burst_volumes)));
  rep.Add("claim -> PV create in a burst, p50 / p99", Latency(creates.latency_ms));
  rep.Add("provisioner CPU per 1000 volumes, create / delete",
          Fmt("%.3f", creates.cpu_seconds * 1000 / static_cast<double>(burst_volumes)) +
              Fmt(" / %.3f s", deletes.cpu_seconds * 1000 / static_cast<double>(burst_volumes)));
  rep.Add("provisioner peak VmRSS in a burst (sampled)", MiB(std::max(creates.peak_rss_kib, deletes.peak_rss_kib)));
  rep.Section(std::to_string(kNodeBurst) + " claims at once, node-aware (" + std::to_string(kNodes) +
              " instances, WaitForFirstConsumer, " + std::to_string(kNodeBurst / kNodes) +
              " per node) / single-node (Immediate), " + std::to_string(create_n.size()) + " rounds (medians)");
  double nodes_ratio = median(create_n) / median(create_s);
  rep.Add("create until all Bound: node-aware / single-node",
          Fmt("%.3f", median(create_n)) + Fmt(" / %.3f s", median(create_s)) + Fmt(" = %.2fx", nodes_ratio), "<= 1x per claim",
          nodes_ratio <= 1);
  rep.Section("usage scan (USAGE_SCAN_INTERVAL=1), a volume of " + std::to_string(kScanFiles) + " empty files in " +
              std::to_string(kScanDirs) + " directories; " + std::to_string(kBurst) + " claims at once, " +
              std::to_string(create_scan.size()) + " rounds (medians)");
  rep.Add("scan CPU per 100 000 files (its two threads)", Fmt("%.3f s", scan_cpu * 100000 / std::max(1.0, scan_entries)));
  rep.Add("one pass: entries / time (1000 per 5 ms pause)", Fmt("%.0f", scan_entries) + Fmt(" / %.3f s", scan_pass_seconds));
  double scan_ratio = median(create_scan) / median(create_quiet);
  rep.Add("create until all Bound: scan running / none",
          Fmt("%.3f", median(create_scan)) + Fmt(" / %.3f s", median(create_quiet)) + Fmt(" = %.2fx", scan_ratio),
          "<= 1.1x", scan_ratio <= 1.1);
  rep.Add("delete until all gone: scan running / none",
          Fmt("%.3f", median(delete_scan)) + Fmt(" / %.3f s", median(delete_quiet)) +
              Fmt(" = %.2fx", median(delete_scan) / median(delete_quiet)));
  rep.Add("entries scanned during those bursts", Fmt("%.0f", burst_entries) + Fmt(" (%.0f per burst)", burst_entries / std::max<size_t>(1, 2 * create_scan.size())));
  rep.Section("enforced sizes (quota \"true\", btrfs subvolume and qgroup limit), claims one at a time");
  if (quota_skipped.empty()) {
    const double quota_ratio = Percentile(quota_on, 0.5) / Percentile(quota_off, 0.5);
    rep.Add("claim -> PV create, p50 / p99, enforced", Latency(quota_on));
    rep.Add("claim -> PV create, p50 / p99, not enforced", Latency(quota_off));
    rep.Add("p50 enforced / not enforced", Fmt("%.2fx", quota_ratio), "< 2x", quota_ratio < 2);
  } else {
    rep.Add("skipped", quota_skipped);
  }
  rep.Section("clones: claim create -> Bound (the provisioner's copy time, clone_seconds_total), of 1 GiB in " +
              std::to_string(kCloneBigFiles) + " files / of " + std::to_string(kCloneFiles) + " files of 4 KiB");
  for (const CloneRow& r : clone_rows) {
    if (!r.skipped.empty()) {
      rep.Add(r.label, "skipped: " + r.skipped);
      continue;
    }
    const double per_gib = static_cast<double>(1ULL << 30) / static_cast<double>(kCloneBytes), per_files = 100000.0 / kCloneFiles;
    std::string value = Fmt("%.3f", r.gib.bound * per_gib) + Fmt(" (%.3f)", r.gib.copy * per_gib) +
                        Fmt(" / %.3f", r.files.bound * per_files) + Fmt(" (%.3f) s", r.files.copy * per_files);
    if (r.gib.method != r.expected || r.files.method != r.expected)
      value += " NOT " + r.expected + ": " + r.gib.method + " / " + r.files.method;
    rep.Add(r.label + ", per GiB / 100 000 files", value);
  }
  rep.Section(std::to_string(kCloneBurst) + " claims at once while a byte copy of " + std::to_string(kCloneFiles) +
              " files runs on the same instance / none, " + std::to_string(create_copying.size()) + " rounds (medians)");
  const double copy_ratio = median(create_copying) / median(create_not_copying);
  rep.Add("create until all Bound: copy running / none",
          Fmt("%.3f", median(create_copying)) + Fmt(" / %.3f s", median(create_not_copying)) + Fmt(" = %.2fx", copy_ratio),
          "<= 1.1x", copy_ratio <= 1.1);
  rep.Add("copy still running at the burst's end",
          std::to_string(copy_running) + " of " + std::to_string(create_copying.size()) + " bursts");
  rep.Section("idle (from 1 s after /readyz, no claims)");
  rep.Add("VmRSS (resident)", MiB(idle_mem.rss_kib), "< 6 MiB", idle_mem.rss_kib < 6 * 1024);
  rep.Add("RssAnon (private)", MiB(idle_mem.anon_kib), "< 2 MiB", idle_mem.anon_kib < 2 * 1024);
  // Nothing is written to the fake meanwhile: the watches wake only for its BOOKMARK events
  // (every 5 s); a wake-up of any other thread is a timer or a poll of the provisioner's own.
  rep.Add("wake-ups over " + std::to_string(kIdleWindow.count()) + " s: watches / others",
          std::to_string(idle_watch_wakeups) + " / " + std::to_string(idle_other_wakeups), "others 0",
          idle_other_wakeups == 0);
  rep.Add("CPU over " + std::to_string(kIdleWindow.count()) + " s", Fmt("%.3f s", idle_cpu));
  rep.Add("exec -> /readyz 200, empty cluster", Fmt("%.3f s", empty_ready));
  rep.Add("VmRSS / RssAnon after the bursts", MiB(after_bursts.rss_kib) + " / " + MiB(after_bursts.anon_kib));
  rep.Section("start-up with " + std::to_string(kStartupPairs) + " bound claims and PVs");
  rep.Add("exec -> /readyz 200", Fmt("%.3f s", startup_ready), "< 2 s", startup_ready < 2);
  rep.Add("RssAnon (private) once quiet", MiB(startup_mem.anon_kib), "< 32 MiB", startup_mem.anon_kib < 32 * 1024);
  rep.Add("write requests at start-up", std::to_string(startup_writes), "0", startup_writes == 0);
  rep.Section("binary");
  rep.Add("size of " + provisioner_bin + " (stripped, static)", MiB(st.st_size / 1024), "< 6 MiB", st.st_size < 6L << 20);
  rep.Section("machine");
  rep.Add("load average before / after", Fmt("%.2f", load_before) + Fmt(" / %.2f", load_after));
  rep.Print();

  auto array = [](const std::vector<double>& v) {
    picojson::array a;
    for (double x : v) a.push_back(picojson::value(x));
    return picojson::value(a);
  };
  json["create_seconds_provisioner"] = array(create_p);
  json["create_seconds_baseline"] = array(create_b);
  json["delete_seconds_provisioner"] = array(delete_p);
  json["delete_seconds_baseline"] = array(delete_b);
  json["create_seconds_node_aware"] = array(create_n);  // kNodeBurst claims over kNodes instances
  json["create_seconds_single_node"] = array(create_s);
  json["create_cpu_seconds_node_aware"] = array(cpu_n);  // the instances' together
  json["create_cpu_seconds_single_node"] = array(cpu_s);
  json["create_seconds_scanning"] = array(create_scan);  // kBurst claims while a usage scan runs
  json["create_seconds_not_scanning"] = array(create_quiet);
  json["delete_seconds_scanning"] = array(delete_scan);
  json["delete_seconds_not_scanning"] = array(delete_quiet);
  json["usage_scan_cpu_seconds_per_pass"] = picojson::value(scan_cpu);
  json["usage_scan_entries_per_pass"] = picojson::value(scan_entries);
  json["claim_to_pv_ms_quota"] = array(quota_on);
  json["claim_to_pv_ms_no_quota"] = array(quota_off);
  picojson::object clones;  // by filesystem: seconds from create to Bound, and of the provisioner's copy
  for (const CloneRow& r : clone_rows) {
    if (!r.skipped.empty()) continue;
    picojson::object o;
    o["method"] = picojson::value(r.gib.method);
    o["bound_seconds_1gib"] = picojson::value(r.gib.bound);
    o["copy_seconds_1gib"] = picojson::value(r.gib.copy);
    o["bound_seconds_files"] = picojson::value(r.files.bound);  // kCloneFiles files
    o["copy_seconds_files"] = picojson::value(r.files.copy);
    clones[r.label] = picojson::value(o);
  }
  json["clones"] = picojson::value(clones);
  json["create_seconds_copying"] = array(create_copying);  // kCloneBurst claims while a copy runs
  json["create_seconds_not_copying"] = array(create_not_copying);
  json["binary_bytes"] = picojson::value(static_cast<double>(st.st_size));
  json["cpus"] = picojson::value(static_cast<double>(cpus));
  json["figures"] = rep.Json();
  WriteFile("build/bench.json", picojson::value(json).serialize(true));
  std::system(("rm -rf '" + volumes + "'").c_str());
  std::printf("\nwrote build/bench.json; logs in %s/\n", work.c_str());
  return 0;
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);
  try {
    return Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
