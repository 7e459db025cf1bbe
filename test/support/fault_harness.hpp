// Helpers for the fault tests (test/e2e/e2e_faults.cpp) on top of harness.hpp: arming faults and
// other controls on the fake, reading its request log, claims the test tracks from creation to
// the final check, a provisioner that is killed and restarted, and directory listings.
#pragma once
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "decide/reconcile.hpp"
#include "test/support/harness.hpp"

namespace faults {

using harness::FakeApi;
using harness::Reply;

// One fault as POST /fake/faults takes it: the next `count` requests with this verb (get,
// list, watch, create, patch, delete; "" = any) on this resource ("persistentvolumes",
// "events"...; "" = any) are answered `code` after `delay_ms`, with Retry-After when
// retry_after > 0. The fake does not carry out a faulted request.
struct Fault {
  std::string verb, resource;
  int code = 500;
  int count = 1;
  int retry_after = 0;
  int delay_ms = 0;
};

// Arms the fault; returns false if the fake refused it.
inline bool Inject(FakeApi& api, const Fault& f) {
  std::string body = "{\"verb\":\"" + f.verb + "\",\"resource\":\"" + f.resource + "\",\"code\":" +
                     std::to_string(f.code) + ",\"count\":" + std::to_string(f.count) +
                     ",\"retryAfter\":" + std::to_string(f.retry_after) + ",\"delayMs\":" + std::to_string(f.delay_ms) + "}";
  return api.Call("POST", "/fake/faults", body).code == 200;
}

// A control without a body, e.g. Control(api, "/fake/drop-watches"). True when answered 200.
inline bool Control(FakeApi& api, const std::string& path) { return api.Call("POST", path).code == 200; }

// Compacts the history past every watcher: first a write that no informer watches (a Lease),
// so that the newest resourceVersion is newer than any an informer has seen, then the
// compaction. (A watch whose resourceVersion is the newest one is not too old, as in
// kube-apiserver: when the last write before the compaction was one an informer saw, that
// informer would resume without a 410.)
inline bool CompactPastEveryWatch(FakeApi& api) {
  static int n = 0;
  std::string lease = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"rv-bump-)" +
                      std::to_string(++n) + R"("}})";
  return api.Call("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease).code == 201 &&
         Control(api, "/fake/compact");
}

// One request the fake answered (GET /fake/requests); /fake/ controls are not listed.
struct Request {
  double t_ns = 0;  // arrival, ns since the epoch (a double: ordering only)
  std::string user, verb, resource, ns, name;
  int code = 0;
};

inline std::vector<Request> Requests(FakeApi& api) {
  std::vector<Request> out;
  Reply r = api.Get("/fake/requests");
  if (r.code != 200 || !r.json.is<picojson::array>()) return out;
  for (const auto& v : r.json.get<picojson::array>()) {
    Request q;
    q.t_ns = v.get("t_ns").is<double>() ? v.get("t_ns").get<double>() : 0;
    q.user = v.get("user").to_str();
    q.verb = v.get("verb").to_str();
    q.resource = v.get("resource").to_str();
    q.ns = v.get("namespace").to_str();
    q.name = v.get("name").to_str();
    q.code = v.get("code").is<double>() ? static_cast<int>(v.get("code").get<double>()) : 0;
    out.push_back(q);
  }
  return out;
}

// The provisioner's service-account user in the fake.
inline const char* kProvisionerUser = "system:serviceaccount:kube-system:hostpath-provisioner";

// Requests of `user` matching verb and resource ("" = any).
inline std::vector<Request> Filter(const std::vector<Request>& all, const std::string& user, const std::string& verb,
                                   const std::string& resource) {
  std::vector<Request> out;
  for (const auto& q : all)
    if ((user.empty() || q.user == user) && (verb.empty() || q.verb == verb) && (resource.empty() || q.resource == resource))
      out.push_back(q);
  return out;
}

// "code: count" pairs of the requests, e.g. "200: 512, 201: 40, 429: 3".
inline std::string CountByCode(const std::vector<Request>& rs) {
  std::map<int, int> n;
  for (const auto& q : rs) n[q.code]++;
  std::string out;
  for (const auto& [code, count] : n) out += (out.empty() ? "" : ", ") + std::to_string(code) + ": " + std::to_string(count);
  return out;
}

// A claim the test made, followed until the final check.
struct TrackedClaim {
  std::string ns = "default", name, cls, uid;
  bool retain = false;
  bool bound = false;    // seen Bound (and the test wrote its marker file)
  bool deleted = false;  // the test deleted it
  std::string pv() const { return "pvc-" + uid; }
  std::string dir_name() const { return VolumeDirName(ns, name, pv()); }
};

inline std::string ClaimJson(const std::string& ns, const std::string& name, const std::string& cls) {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"("},"spec":{"storageClassName":")" + cls +
         R"(","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})";
}

// Creates the claim; returns it with its uid, or a claim with an empty uid on failure.
inline TrackedClaim CreateClaim(FakeApi& api, const std::string& name, const std::string& cls, bool retain) {
  TrackedClaim c;
  c.name = name;
  c.cls = cls;
  c.retain = retain;
  Reply r = api.Post("/api/v1/namespaces/" + c.ns + "/persistentvolumeclaims", ClaimJson(c.ns, name, cls));
  if (r.code == 201) c.uid = r.json.get("metadata").get("uid").to_str();
  return c;
}

inline bool DeleteClaim(FakeApi& api, TrackedClaim& c) {
  int code = api.Delete("/api/v1/namespaces/" + c.ns + "/persistentvolumeclaims/" + c.name).code;
  if (code == 200) c.deleted = true;
  return code == 200;
}

// Every object of a collection by "namespace/name" (or "name"). Faults match requests by verb
// and resource, not by user, so the test's own list may take one: it is retried (up to 50
// times, 50 ms apart). Throws when the list never succeeds, so a check never runs on nothing.
inline std::map<std::string, picojson::value> ListByKey(FakeApi& api, const std::string& collection) {
  std::map<std::string, picojson::value> out;
  Reply r;
  for (int attempt = 0; attempt < 50; ++attempt) {
    r = api.Get(collection);
    if (r.code == 200 && r.json.get("items").is<picojson::array>()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (r.code != 200 || !r.json.get("items").is<picojson::array>())
    throw std::runtime_error("list " + collection + " failed: " + std::to_string(r.code) + " " + r.body);
  for (const auto& o : r.json.get("items").get<picojson::array>()) {
    const picojson::value& m = o.get("metadata");
    std::string ns = m.get("namespace").is<std::string>() ? m.get("namespace").get<std::string>() : "";
    out[ns.empty() ? m.get("name").to_str() : ns + "/" + m.get("name").to_str()] = o;
  }
  return out;
}
inline std::map<std::string, picojson::value> Claims(FakeApi& api) { return ListByKey(api, "/api/v1/persistentvolumeclaims"); }
inline std::map<std::string, picojson::value> Volumes(FakeApi& api) { return ListByKey(api, "/api/v1/persistentvolumes"); }

// The provisioner as a process that the test kills (SIGKILL) and starts again.
class Restartable {
 public:
  Restartable(FakeApi& api, std::string pv_dir, std::map<std::string, std::string> env = {})
      : api_(api), pv_dir_(std::move(pv_dir)), env_(std::move(env)) {
    Start();
  }
  void Start() { proc_ = std::make_unique<harness::Provisioner>(api_, pv_dir_, env_); ++starts_; }
  // SIGKILL, reaped; the process is gone when this returns.
  void Kill() {
    if (!proc_) return;
    proc_->process().Signal(SIGKILL);
    proc_->process().Wait();
    logs_ += proc_->Log();
    proc_.reset();
    ++kills_;
  }
  void KillAndRestart() {
    Kill();
    Start();
  }
  // Throws when the current process has exited on its own (it never should: only the test
  // kills it), with its exit code and log, so a wait does not run into its time limit blind.
  void ThrowIfExited() {
    int code = 0;
    if (proc_ && proc_->process().WaitFor(std::chrono::milliseconds(1), &code))
      throw std::runtime_error("the provisioner exited with code " + std::to_string(code) +
                               (code == 127 ? " (could not exec the binary: rebuilt meanwhile?)" : "") + "; its log:\n" +
                               proc_->Log());
  }
  int kills() const { return kills_; }
  bool running() const { return proc_ != nullptr; }
  // The logs of every run so far, the current one last.
  std::string Logs() const { return logs_ + (proc_ ? proc_->Log() : ""); }
  harness::Provisioner* current() { return proc_.get(); }

 private:
  FakeApi& api_;
  std::string pv_dir_;
  std::map<std::string, std::string> env_;
  std::unique_ptr<harness::Provisioner> proc_;
  std::string logs_;
  int kills_ = 0, starts_ = 0;
};

// The lines of `log` containing `needle` (at most `max`), for failure messages.
inline std::string LinesWith(const std::string& log, const std::string& needle, size_t max = 20) {
  std::string out;
  size_t n = 0, start = 0;
  while (start < log.size() && n < max) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    if (line.find(needle) != std::string::npos) {
      out += line + "\n";
      ++n;
    }
    start = end + 1;
  }
  return out;
}

}  // namespace faults
