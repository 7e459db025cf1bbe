// The bodies of fake_client.hpp (the contracts are there).
#include "test/bench/fake_client.hpp"

#include <chrono>
#include <cstdlib>
#include <map>

#include "test/bench/common.hpp"

namespace bench {

using harness::Env;
using harness::Exists;
using harness::ReadFile;

Api::Api(int port, const std::string& ca_file, const std::string& token) : cli_("127.0.0.1", port) {
  cli_.set_ca_cert_path(ca_file.c_str());
  cli_.enable_server_certificate_verification(true);
  cli_.set_keep_alive(true);
  cli_.set_tcp_nodelay(true);
  cli_.set_read_timeout(std::chrono::seconds(60));
  cli_.set_bearer_token_auth(token.c_str());
}

Reply Api::Call(const std::string& method, const std::string& path, const std::string& body, bool parse) {
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

Fake::Fake(const std::string& dir, const std::vector<std::string>& args, const std::string& rbac) : dir_(dir) {
  std::vector<std::string> argv{Env("FAKE_APISERVER", "build/fake-apiserver"), "--dir", dir, "--rbac",
                                rbac.empty() ? Env("RBAC_YAML", "manifests/rbac.yaml") : rbac};
  argv.insert(argv.end(), args.begin(), args.end());
  proc_ = std::make_unique<harness::Process>(argv, std::map<std::string, std::string>{}, dir + ".log");
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

void Fake::CreateClass(const std::string& name, const std::string& binding_mode, const std::string& parameters) const {
  Reply r = Admin()->Call("POST", "/apis/storage.k8s.io/v1/storageclasses",
                          R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":")" + name +
                              R"("},"provisioner":")" + kProvisionerName +
                              R"(","reclaimPolicy":"Delete","parameters":{)" + parameters +
                              R"(},"volumeBindingMode":")" + binding_mode + "\"}");
  if (r.code != 201) throw Failure("creating the StorageClass " + name + ": " + std::to_string(r.code) + " " + r.body);
}

std::unique_ptr<Api> Fake::Admin() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", admin_token_); }

std::unique_ptr<Api> Fake::ServiceAccount() const { return std::make_unique<Api>(port_, dir_ + "/ca.crt", sa_token_); }

Api& Fake::Client(int i) const {
  std::lock_guard<std::mutex> l(mu_);
  while (static_cast<int>(clients_.size()) <= i) clients_.push_back(Admin());
  return *clients_[i];
}

void Fake::WarmClients() const {
  for (int i = 0; i < kClientThreads; ++i) Client(i).Call("GET", "/api", "", false);
}

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

std::string WaitQuery(Api& admin, bool bound, const std::string& prefix) {
  std::string collection = bound ? kClaims : "/api/v1/persistentvolumes";
  Reply r = admin.Call("GET", collection + "?limit=1");
  std::string rv = Str(r.json, {"metadata", "resourceVersion"});
  if (r.code != 200 || rv.empty()) throw Failure("list " + collection + ": " + std::to_string(r.code) + " " + r.body);
  return bound ? "resource=persistentvolumeclaims&until=Bound&prefix=" + prefix + "-&resourceVersion=" + rv
               : "resource=persistentvolumes&until=Deleted&prefixPath=spec.claimRef.name&prefix=" + prefix +
                     "-&resourceVersion=" + rv;
}

}  // namespace bench
