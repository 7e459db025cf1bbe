// The bodies of harness.hpp (the contracts are there).
#include "test/support/harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <picojson.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "base/yaml.hpp"
#include "kube/kubeconfig.hpp"
#include "test/fake/fake_kubelet.hpp"

namespace harness {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int SetImmutable(const std::string& path, bool on) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  int flags = 0, err = 0;
  if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
    err = errno;
  } else {
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    if (::ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) err = errno;
  }
  ::close(fd);
  return err;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/hp-e2e-XXXXXX";
  char* p = ::mkdtemp(tmpl);
  if (p == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = p;
}

TempDir::~TempDir() {
  std::string cmd = "chattr -R -i '" + path_ + "' 2>/dev/null; rm -rf '" + path_ + "'";
  int rc = std::system(cmd.c_str());
  (void)rc;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

Process::Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                 const std::string& log, const std::vector<int>& cpus) : log_(log) {
  pid_ = ::fork();
  if (pid_ == 0) {
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cpus) CPU_SET(c, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
}

int Process::Wait() {
  if (exited_) return code_;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exited_ = true;
  code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return code_;
}

bool Process::WaitFor(std::chrono::milliseconds limit, int* code) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      *code = code_;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

FakeApi::FakeApi(const std::string& dir, std::vector<std::string> extra) : dir_(dir) {
  std::vector<std::string> argv = {Env("FAKE_APISERVER", "build/fake-apiserver"), "--dir", dir, "--rbac",
                                   Env("RBAC_YAML", "manifests/rbac.yaml")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  proc_ = std::make_unique<Process>(argv, std::map<std::string, std::string>{}, dir + ".fake.log");
  if (!Eventually([&] { return Exists(dir + "/port"); }, std::chrono::seconds(20)))
    throw std::runtime_error("fake-apiserver did not start: " + proc_->Log());
  port_ = std::stoi(ReadFile(dir + "/port"));
  Result<ApiCredentials> admin = LoadKubeconfig(dir + "/admin.kubeconfig", false);
  if (!admin.ok()) throw std::runtime_error(admin.status().message());
  admin_token_ = admin->token;
}

Reply FakeApi::Call(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& content_type) {
  httplib::SSLClient cli("127.0.0.1", port_);
  cli.set_ca_cert_path((dir_ + "/ca.crt").c_str());
  cli.enable_server_certificate_verification(true);
  cli.set_read_timeout(std::chrono::seconds(30));
  httplib::Headers h = {{"Authorization", "Bearer " + admin_token_}};
  httplib::Result r{nullptr, httplib::Error::Unknown};
  if (method == "GET") r = cli.Get(path.c_str(), h);
  if (method == "POST") r = cli.Post(path.c_str(), h, body, content_type.c_str());
  if (method == "PUT") r = cli.Put(path.c_str(), h, body, content_type.c_str());
  if (method == "PATCH") r = cli.Patch(path.c_str(), h, body, content_type.c_str());
  if (method == "DELETE") r = cli.Delete(path.c_str(), h);
  Reply out;
  if (!r) {
    out.body = httplib::to_string(r.error());
    return out;
  }
  out.code = r->status;
  out.body = r->body;
  std::string err = picojson::parse(out.json, out.body);
  (void)err;
  return out;
}

void FakeApi::CreateYaml(const std::string& yaml_text) {
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(yaml_text);
  if (!docs.ok()) throw std::runtime_error(docs.status().message());
  for (const picojson::value& d : *docs) {
    Reply r = Post(CollectionOf(d), d.serialize());
    if (r.code != 201 && r.code != 200) throw std::runtime_error("create failed: " + std::to_string(r.code) + " " + r.body);
  }
}

std::string FakeApi::CollectionOf(const picojson::value& obj) {
  std::string kind = obj.get("kind").to_str();
  std::string ns = obj.get("metadata").get("namespace").is<std::string>() ? obj.get("metadata").get("namespace").to_str()
                                                                           : "default";
  if (kind == "StorageClass") return "/apis/storage.k8s.io/v1/storageclasses";
  if (kind == "CSIDriver") return "/apis/storage.k8s.io/v1/csidrivers";
  if (kind == "PersistentVolume") return "/api/v1/persistentvolumes";
  if (kind == "PersistentVolumeClaim") return "/api/v1/namespaces/" + ns + "/persistentvolumeclaims";
  if (kind == "Pod") return "/api/v1/namespaces/" + ns + "/pods";
  if (kind == "Node") return "/api/v1/nodes";
  if (kind == "Namespace") return "/api/v1/namespaces";
  if (kind == "Lease") return "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases";
  throw std::runtime_error("harness: unknown kind " + kind);
}

void FakeApi::RegisterNode(const std::string& name, const std::map<std::string, std::string>& extra_labels) {
  Reply r = Post("/api/v1/nodes", fake_kubelet::NodeJson(name, extra_labels));
  if (r.code != 201) throw std::runtime_error("registering node " + name + " failed: " + std::to_string(r.code) + " " + r.body);
}

picojson::value FakeApi::Claim(const std::string& ns, const std::string& name) {
  Reply r = Get("/api/v1/namespaces/" + ns + "/persistentvolumeclaims/" + name);
  return r.code == 200 ? r.json : picojson::value();
}

picojson::value FakeApi::Volume(const std::string& name) {
  Reply r = Get("/api/v1/persistentvolumes/" + name);
  return r.code == 200 ? r.json : picojson::value();
}

std::vector<picojson::value> FakeApi::EventsAbout(const std::string& ns, const std::string& name) {
  std::vector<picojson::value> out;
  Reply r = Get("/api/v1/namespaces/" + ns + "/events");
  if (r.code != 200 || !r.json.get("items").is<picojson::array>()) return out;
  for (const auto& e : r.json.get("items").get<picojson::array>())
    if (e.get("involvedObject").get("name").to_str() == name) out.push_back(e);
  return out;
}

std::vector<picojson::value> FakeApi::Denials() {
  Reply r = Get("/fake/denials");
  if (r.code != 200 || !r.json.is<picojson::array>()) return {};
  return r.json.get<picojson::array>();
}

std::string Phase(const picojson::value& obj) {
  if (!obj.is<picojson::object>()) return "";
  const picojson::value& p = obj.get("status").get("phase");
  return p.is<std::string>() ? p.get<std::string>() : "";
}

std::string ClaimYaml(const std::string& ns, const std::string& name, const std::string& cls, const std::string& size,
                      const std::string& clone_of) {
  return "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\nspec:\n  storageClassName: " + cls +
         "\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: " + size + "\n" +
         (clone_of.empty() ? "" : "  dataSource:\n    kind: PersistentVolumeClaim\n    name: " + clone_of + "\n");
}

std::string ClassYaml(const std::string& name, const std::string& reclaim, const std::string& provisioner,
                      const std::string& params) {
  return "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: " + name + "\nprovisioner: " +
         provisioner + "\nreclaimPolicy: " + reclaim + "\nvolumeBindingMode: Immediate\n" +
         (params.empty() ? "" : "parameters:\n" + params);
}

Provisioner::Provisioner(const FakeApi& api, const std::string& pv_dir, std::map<std::string, std::string> env,
                         std::vector<std::string> args, std::vector<std::string> wrapper) {
  std::vector<std::string> argv = wrapper;
  argv.push_back(Env("PROVISIONER", "./hostpath-provisioner"));
  argv.insert(argv.end(), args.begin(), args.end());
  env.emplace("PV_DIR", pv_dir);
  env.emplace("KUBECONFIG", api.dir() + "/provisioner.kubeconfig");
  env.emplace("METRICS_ADDRESS", "127.0.0.1:" + std::to_string(metrics_port_ = FreePort()));
  env.emplace("LOG_LEVEL", "1");
  env.emplace("LEADER_ELECT_NAMESPACE", "kube-system");  // where the install's Role lets it hold leases
  static int runs = 0;
  log_ = api.dir() + ".provisioner." + std::to_string(++runs) + ".log";
  proc_ = std::make_unique<Process>(argv, env, log_);
}

Reply Provisioner::Http(const std::string& path) {
  httplib::Client cli("127.0.0.1", metrics_port_);
  cli.set_connection_timeout(std::chrono::seconds(1));
  auto r = cli.Get(path.c_str());
  Reply out;
  if (r) {
    out.code = r->status;
    out.body = r->body;
  }
  return out;
}

double Metric(Provisioner& p, const std::string& name, const std::string& labels) {
  const std::string body = p.Http("/metrics").body, prefix = "\n" + name + (labels.empty() ? "" : "{" + labels + "}") + " ";
  size_t at = body.find(prefix);
  return at == std::string::npos ? -1 : std::atof(body.c_str() + at + prefix.size());
}

}  // namespace harness
