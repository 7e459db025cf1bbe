// The bench's side of the fake API server (build/fake-apiserver, see
// test/fake/fake_apiserver.hpp): the server as a process, HTTPS connections to it, and waiting
// inside it for claims to become Bound or PVs to go (GET /fake/wait, which adds no watch
// traffic).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <httplib.h>
#include <picojson.h>

#include "test/support/harness.hpp"

namespace bench {

struct Reply {
  int code = 0;  // 0: no answer (body says why)
  std::string body;
  picojson::value json;  // the body parsed, if asked for
};

// One keep-alive HTTPS connection with a bearer token (cpp-httplib's SSLClient, the server's
// certificate checked against the fake's CA). Not thread-safe: one per thread.
class Api {
 public:
  Api(int port, const std::string& ca_file, const std::string& token);
  // GET, POST (a JSON body) or DELETE.
  Reply Call(const std::string& method, const std::string& path, const std::string& body = "", bool parse = true);

 private:
  httplib::SSLClient cli_;
};

// The fake API server as a process, with RBAC from manifests/rbac.yaml (RBAC_YAML), and its
// StorageClass "hostpath" (as manifests/storageclass.yaml: our provisioner, Delete, Immediate).
// Its log is DIR.log. Throws Failure when it does not start.
class Fake {
 public:
  // `args`: more of the fake's flags (e.g. --history N).
  // `rbac`: the install's RBAC the fake enforces (default RBAC_YAML, else manifests/rbac.yaml).
  explicit Fake(const std::string& dir, const std::vector<std::string>& args = {}, const std::string& rbac = "");
  // A StorageClass of our provisioner, Delete, with the given volumeBindingMode and parameters
  // (a JSON object's members, e.g. "\"quota\":\"true\"").
  void CreateClass(const std::string& name, const std::string& binding_mode, const std::string& parameters = "") const;
  std::unique_ptr<Api> Admin() const;
  std::unique_ptr<Api> ServiceAccount() const;
  // The admin connections that create and delete a burst's claims, made once and kept, so no
  // TLS handshake of the bench's falls inside a burst. Thread-safe; the connection is not.
  Api& Client(int i) const;
  void WarmClients() const;  // the kClientThreads connections made and used once
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  pid_t pid() const { return proc_->pid(); }

 private:
  std::string dir_;
  std::unique_ptr<harness::Process> proc_;
  int port_ = 0;
  std::string admin_token_, sa_token_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Api>> clients_;
};

// Waits in the fake (GET /fake/wait) until `count` objects matched `query`; returns when the
// last of them was recorded there (ns since the epoch). Throws Failure after kBurstLimit.
int64_t WaitInFake(Api& api, const std::string& query, long count);

// The /fake/wait query for claims named PREFIX-* becoming Bound (bound), or for PVs of claims
// named PREFIX-* being deleted, from now on.
std::string WaitQuery(Api& admin, bool bound, const std::string& prefix);

}  // namespace bench
