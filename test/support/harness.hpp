// End-to-end test harness: runs the real fake-apiserver binary and the real provisioner
// binary as processes, and talks to the fake as an admin over real HTTPS, as kubectl would.
// Binaries are found at ./build/fake-apiserver and ./hostpath-provisioner (override with
// FAKE_APISERVER and PROVISIONER).
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
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

#include <picojson.h>

namespace harness {

// The environment variable `name`, or `fallback` when it is unset or empty.
std::string Env(const char* name, const char* fallback);

// The whole file; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Replaces the file with `text`; failures are not reported (the test's next check sees them).
void WriteFile(const std::string& path, const std::string& text);

// Names in a directory (not "." or ".."), sorted; empty if it cannot be read.
std::vector<std::string> ListDir(const std::string& dir);

// Whether anything (a dangling symlink too) is at `path` (lstat).
bool Exists(const std::string& path);

// Sets or clears the immutable flag (chattr +i). Returns 0 or an errno value.
int SetImmutable(const std::string& path, bool on);

// A folder under /tmp, removed (with everything in it) at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
int FreePort();

// A TCP connection to 127.0.0.1:port (-1 if it fails).
int Connect(int port);

// A child process with its stdout and stderr in a file; `cpus`, when given, are the only
// CPUs it may run on. The destructor kills (SIGKILL) and reaps it if it has not exited.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const std::string& log,
          const std::vector<int>& cpus = {});
  ~Process();
  // Sends a signal (SIGKILL for a crash, SIGTERM for a clean stop).
  void Signal(int sig) { ::kill(pid_, sig); }
  // Waits for the exit; returns the exit code, or 128+signal.
  int Wait();
  // Waits up to `limit` for an exit; false if still running.
  bool WaitFor(std::chrono::milliseconds limit, int* code);
  std::string Log() const { return ReadFile(log_); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string log_;
  bool exited_ = false;
  int code_ = 0;
};

// Polls `done` every 10 ms for up to `limit` (a generous bound for a loaded CI machine, not a
// timing assertion). Returns whether it became true.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(30));

// An answer: code 0 and the transport error in `body` when none arrived; `json` is null
// when the body is not JSON.
struct Reply {
  int code = 0;
  picojson::value json;
  std::string body;
};

// The fake API server, running as a process, and an admin client for it.
class FakeApi {
 public:
  // Starts build/fake-apiserver (FAKE_APISERVER) with `dir` and the RBAC of manifests/rbac.yaml
  // (RBAC_YAML), plus `extra` arguments, and waits up to 20 s for DIR/port. Throws
  // std::runtime_error with the fake's log when it does not start.
  explicit FakeApi(const std::string& dir, std::vector<std::string> extra = {});

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string Log() const { return proc_->Log(); }

  // One request as the admin over verified HTTPS (30 s read timeout).
  Reply Call(const std::string& method, const std::string& path, const std::string& body = "",
             const std::string& content_type = "application/json");

  Reply Get(const std::string& path) { return Call("GET", path); }
  Reply Post(const std::string& path, const std::string& body) { return Call("POST", path, body); }
  Reply Delete(const std::string& path) { return Call("DELETE", path); }

  // Creates every object of a YAML file through the API (like kubectl create -f).
  void CreateYaml(const std::string& yaml_text);

  // The collection path of an object, from its kind and namespace.
  static std::string CollectionOf(const picojson::value& obj);

  // Registers a node as its kubelet would (fake_kubelet.hpp: hostname, os and arch labels, Ready).
  void RegisterNode(const std::string& name, const std::map<std::string, std::string>& extra_labels = {});

  // The claim as JSON, or null if it does not exist.
  picojson::value Claim(const std::string& ns, const std::string& name);
  // The volume as JSON, or null if it does not exist.
  picojson::value Volume(const std::string& name);
  // Every event in the namespace about the named object.
  std::vector<picojson::value> EventsAbout(const std::string& ns, const std::string& name);
  // RBAC denials the fake recorded (must be none in a healthy run).
  std::vector<picojson::value> Denials();

 private:
  std::string dir_;
  std::unique_ptr<Process> proc_;
  int port_ = 0;
  std::string admin_token_;
};

// status.phase of an object; "" when it has none.
std::string Phase(const picojson::value& obj);

// A claim manifest of the given class and size; with clone_of, a clone of that claim (in ns).
std::string ClaimYaml(const std::string& ns, const std::string& name, const std::string& cls,
                      const std::string& size = "1Gi", const std::string& clone_of = "");

// A StorageClass manifest (volumeBindingMode Immediate); `params`: YAML lines under parameters:.
std::string ClassYaml(const std::string& name, const std::string& reclaim,
                      const std::string& provisioner = "hostpath-provisioner.io/hostpath",
                      const std::string& params = "");

// The provisioner binary, run against the fake with the service-account kubeconfig.
class Provisioner {
 public:
  // `wrapper`: a command that runs the provisioner, given as its next argument (e.g. one that
  // first mounts something in a mount namespace of its own).
  Provisioner(const FakeApi& api, const std::string& pv_dir, std::map<std::string, std::string> env = {},
              std::vector<std::string> args = {}, std::vector<std::string> wrapper = {});
  Process& process() { return *proc_; }
  int metrics_port() const { return metrics_port_; }
  std::string Log() const { return proc_->Log(); }
  // GET on the provisioner's own HTTP endpoint; code 0 if it does not answer.
  Reply Http(const std::string& path);

 private:
  std::unique_ptr<Process> proc_;
  std::string log_;
  int metrics_port_ = 0;
};

// The value of the series `name{labels}` on /metrics; -1 when it is not there.
double Metric(Provisioner& p, const std::string& name, const std::string& labels = "");

}  // namespace harness
