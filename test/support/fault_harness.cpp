// The bodies of fault_harness.hpp (the contracts are there).
#include "test/support/fault_harness.hpp"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace faults {

bool Inject(FakeApi& api, const Fault& f) {
  std::string body = "{\"verb\":\"" + f.verb + "\",\"resource\":\"" + f.resource + "\",\"code\":" +
                     std::to_string(f.code) + ",\"count\":" + std::to_string(f.count) +
                     ",\"retryAfter\":" + std::to_string(f.retry_after) + ",\"delayMs\":" + std::to_string(f.delay_ms) + "}";
  return api.Call("POST", "/fake/faults", body).code == 200;
}

int ArmedFaults(FakeApi& api) {
  Reply r = api.Get("/fake/faults");
  if (r.code != 200 || !r.json.get("armed").is<double>()) return -1;
  return static_cast<int>(r.json.get("armed").get<double>());
}

bool CompactPastEveryWatch(FakeApi& api) {
  static int n = 0;
  std::string lease = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"rv-bump-)" +
                      std::to_string(++n) + R"("}})";
  return api.Call("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease).code == 201 &&
         Control(api, "/fake/compact");
}

std::vector<Request> Requests(FakeApi& api) {
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

std::vector<Request> Filter(const std::vector<Request>& all, const std::string& user, const std::string& verb,
                            const std::string& resource) {
  std::vector<Request> out;
  for (const auto& q : all)
    if ((user.empty() || q.user == user) && (verb.empty() || q.verb == verb) && (resource.empty() || q.resource == resource))
      out.push_back(q);
  return out;
}

std::string CountByCode(const std::vector<Request>& rs) {
  std::map<int, int> n;
  for (const auto& q : rs) n[q.code]++;
  std::string out;
  for (const auto& [code, count] : n) out += (out.empty() ? "" : ", ") + std::to_string(code) + ": " + std::to_string(count);
  return out;
}

std::string ClaimJson(const std::string& ns, const std::string& name, const std::string& cls) {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"("},"spec":{"storageClassName":")" + cls +
         R"(","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})";
}

TrackedClaim CreateClaim(FakeApi& api, const std::string& name, const std::string& cls, bool retain) {
  TrackedClaim c;
  c.name = name;
  c.cls = cls;
  c.retain = retain;
  Reply r = api.Post("/api/v1/namespaces/" + c.ns + "/persistentvolumeclaims", ClaimJson(c.ns, name, cls));
  if (r.code == 201) c.uid = r.json.get("metadata").get("uid").to_str();
  return c;
}

bool DeleteClaim(FakeApi& api, TrackedClaim& c) {
  int code = api.Delete("/api/v1/namespaces/" + c.ns + "/persistentvolumeclaims/" + c.name).code;
  if (code == 200) c.deleted = true;
  return code == 200;
}

std::map<std::string, picojson::value> ListByKey(FakeApi& api, const std::string& collection) {
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

Restartable::Restartable(FakeApi& api, std::string pv_dir, std::map<std::string, std::string> env) : api_(api),
                         pv_dir_(std::move(pv_dir)), env_(std::move(env)) {
  Start();
}

void Restartable::Kill() {
  if (!proc_) return;
  proc_->process().Signal(SIGKILL);
  proc_->process().Wait();
  logs_ += proc_->Log();
  proc_.reset();
  ++kills_;
}

void Restartable::KillAndRestart() {
  Kill();
  Start();
}

void Restartable::ThrowIfExited() {
  int code = 0;
  if (proc_ && proc_->process().WaitFor(std::chrono::milliseconds(1), &code))
    throw std::runtime_error("the provisioner exited with code " + std::to_string(code) +
                             (code == 127 ? " (could not exec the binary: rebuilt meanwhile?)" : "") + "; its log:\n" +
                             proc_->Log());
}

std::string LinesWith(const std::string& log, const std::string& needle, size_t max) {
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
