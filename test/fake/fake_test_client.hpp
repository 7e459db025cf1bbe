// The client side of the fake API server's unit tests: a started server in a temporary
// directory, verified HTTPS requests as the admin or another token, watches, tables as kubectl
// asks for them, kubectl itself, and the objects most tests make (a PV, a claim, a class).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "test/fake/fake_apiserver.hpp"

struct ApiEndpoint;  // kube/api_connection.hpp

namespace fake_test {

using fake::Json;
using fake::Str;

std::string ReadFile(const std::string& path);

std::string TempDir();

// A started server in a fresh directory, stopped and its directory removed at scope end.
struct Server {
  explicit Server(fake::ApiServerOptions opts = {});
  ~Server();
  static fake::ApiServerOptions WithDir(fake::ApiServerOptions o);
  fake::ApiServer api;
};

// A fresh directory holding `rbac_yaml` as rbac.yaml, removed at scope end (declare it before
// the Server); Options() start a server in it that enforces that RBAC.
struct RbacDir {
  explicit RbacDir(const std::string& rbac_yaml);
  ~RbacDir();
  fake::ApiServerOptions Options() const;
  std::string dir;
};

// The endpoint a product client (ApiConnection) uses to reach the server as its admin.
std::shared_ptr<ApiEndpoint> EndpointOf(const fake::ApiServer& api);

struct Reply {
  int code = 0;
  Json body;
  std::string retry_after;
};

// An answer as it came, before any check.
struct RawReply {
  std::string what;  // "METHOD path: transport result"
  bool ok = false;   // an HTTP answer arrived
  int code = 0;
  std::string body, retry_after;
};

// One HTTPS request verified against the server's CA; token "" sends none. Uses no Catch macros,
// so other threads than the test's may send it (Catch's assertions are not thread-safe).
RawReply Send(const fake::ApiServer& api, const std::string& token, const std::string& method, const std::string& path,
              const std::string& body = "", const std::string& type = "application/json");

// The answer, required to have arrived and to be JSON when it has a body. On the test's thread only.
Reply Checked(const RawReply& r);

Reply Call(const fake::ApiServer& api, const std::string& token, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& type = "application/json");

Reply Admin(const fake::ApiServer& api, const std::string& method, const std::string& path, const std::string& body = "",
            const std::string& type = "application/json");

// Reads watch events from path until `count` have arrived or the watch ends.
std::vector<Json> WatchEvents(const fake::ApiServer& api, const std::string& path, size_t count);

std::string Pv(const std::string& name, const std::string& extra_spec = "", const std::string& path = "/data/x");

std::string Pvc(const std::string& name, const std::string& cls = "hostpath");

// A claim that asks for a clone of claim `source` in its namespace: spec.dataSource only, as
// kubectl users write it (the server fills in dataSourceRef).
std::string ClonePvc(const std::string& name, const std::string& source, const std::string& cls = "hostpath");

// A pod in "default" that mounts the claims (volumes "v0", "v1", ...); `spec_extra` is spliced
// into its spec (",\"nodeSelector\":{...}").
std::string PodWithClaims(const std::string& name, const std::vector<std::string>& claims, const std::string& spec_extra = "");

inline const char* const kClass =
    R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"hostpath"},"provisioner":"example.com/hostpath"})";

inline const std::string kPvs = "/api/v1/persistentvolumes";
inline const std::string kPvcs = "/api/v1/namespaces/default/persistentvolumeclaims";

// GET path as kubectl get asks for it: a Table if the server has one, else the object or list.
Reply TableCall(const fake::ApiServer& api, const std::string& path);

std::vector<std::string> Strings(const Json& v);

// The fields of a line of kubectl's table output: columns are apart by two spaces or more (a
// header such as "ACCESS MODES" has one inside).
std::vector<std::string> Fields(const std::string& line);

// The lines kubectl prints (stdout and stderr) for `args`, as the admin of the server.
std::vector<std::string> Kubectl(const fake::ApiServer& api, const std::string& args);

// The names of a list's items, in order.
std::vector<std::string> ItemNames(const Json& list);

// The fields named in a 422's causes.
std::vector<std::string> CauseFields(const Json& status);

}  // namespace fake_test
