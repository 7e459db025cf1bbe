// The client side of the fake API server's unit tests: a started server in a temporary
// directory, verified HTTPS requests as the admin or another token, watches, tables as kubectl
// asks for them, kubectl itself, and the objects most tests make (a PV, a claim, a class).
#pragma once
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kube/api_connection.hpp"
#include "test/fake/fake_apiserver.hpp"

namespace fake_test {

using fake::Json;
using fake::Str;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string TempDir() {
  char tmpl[] = "/tmp/fake-apiserver-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

// A started server in a fresh directory, stopped and its directory removed at scope end.
struct Server {
  explicit Server(fake::ApiServerOptions opts = {}) : api(WithDir(std::move(opts))) {
    Status s = api.Start();
    INFO(s.message());
    REQUIRE(s.ok());
  }
  ~Server() {
    api.Stop();
    std::filesystem::remove_all(api.dir());
  }
  static fake::ApiServerOptions WithDir(fake::ApiServerOptions o) {
    if (o.dir.empty()) o.dir = TempDir();
    return o;
  }
  fake::ApiServer api;
};

// The endpoint a product client (ApiConnection) uses to reach the server as its admin.
inline std::shared_ptr<ApiEndpoint> EndpointOf(const fake::ApiServer& api) {
  ApiCredentials c;
  c.server = "https://127.0.0.1:" + std::to_string(api.port());
  c.ca_pem = ReadFile(api.dir() + "/ca.crt");
  c.token = api.admin_token();
  c.source = "test";
  Result<std::shared_ptr<ApiEndpoint>> ep = ApiEndpoint::From(c);
  REQUIRE(ep.ok());
  return *ep;
}

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
inline RawReply Send(const fake::ApiServer& api, const std::string& token, const std::string& method, const std::string& path,
              const std::string& body = "", const std::string& type = "application/json") {
  httplib::SSLClient c("127.0.0.1", api.port());
  c.set_ca_cert_path((api.dir() + "/ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  if (!token.empty()) c.set_bearer_token_auth(token.c_str());
  httplib::Result r = method == "GET"      ? c.Get(path.c_str())
                      : method == "POST"   ? c.Post(path.c_str(), body, type.c_str())
                      : method == "PUT"    ? c.Put(path.c_str(), body, type.c_str())
                      : method == "PATCH"  ? c.Patch(path.c_str(), body, type.c_str())
                                           : c.Delete(path.c_str(), body, type.c_str());
  RawReply out;
  out.what = method + " " + path + ": " + httplib::to_string(r.error());
  out.ok = static_cast<bool>(r);
  if (r) {
    out.code = r->status;
    out.body = r->body;
    out.retry_after = r->get_header_value("Retry-After");
  }
  return out;
}

// The answer, required to have arrived and to be JSON when it has a body. On the test's thread only.
inline Reply Checked(const RawReply& r) {
  INFO(r.what);
  REQUIRE(r.ok);
  Reply out;
  out.code = r.code;
  out.retry_after = r.retry_after;
  if (!r.body.empty()) {
    auto parsed = fake::ParseJson(r.body);
    INFO(r.body);
    REQUIRE(parsed.ok());
    out.body = *parsed;
  }
  return out;
}

inline Reply Call(const fake::ApiServer& api, const std::string& token, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& type = "application/json") {
  return Checked(Send(api, token, method, path, body, type));
}

inline Reply Admin(const fake::ApiServer& api, const std::string& method, const std::string& path, const std::string& body = "",
            const std::string& type = "application/json") {
  return Call(api, api.admin_token(), method, path, body, type);
}

// Reads watch events from path until `count` have arrived or the watch ends.
inline std::vector<Json> WatchEvents(const fake::ApiServer& api, const std::string& path, size_t count) {
  httplib::SSLClient c("127.0.0.1", api.port());
  c.set_ca_cert_path((api.dir() + "/ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  c.set_bearer_token_auth(api.admin_token().c_str());
  c.set_read_timeout(60, 0);
  std::vector<Json> events;
  std::string buf;
  c.Get(path.c_str(), [&](const char* data, size_t n) {
    buf.append(data, n);
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      auto ev = fake::ParseJson(buf.substr(0, nl));
      buf.erase(0, nl + 1);
      if (ev.ok()) events.push_back(*ev);
    }
    return events.size() < count;
  });
  return events;
}

inline std::string Pv(const std::string& name, const std::string& extra_spec = "", const std::string& path = "/data/x") {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
         R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":")" + path +
         R"("},"storageClassName":"hostpath","persistentVolumeReclaimPolicy":"Delete")" + extra_spec + "}}";
}

inline std::string Pvc(const std::string& name, const std::string& cls = "hostpath") {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name +
         R"("},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":")" +
         cls + R"("}})";
}

// A claim that asks for a clone of claim `source` in its namespace: spec.dataSource only, as
// kubectl users write it (the server fills in dataSourceRef).
inline std::string ClonePvc(const std::string& name, const std::string& source, const std::string& cls = "hostpath") {
  std::string body = Pvc(name, cls);
  return body.insert(body.size() - 2, R"(,"dataSource":{"kind":"PersistentVolumeClaim","name":")" + source + R"("})");
}

inline const char* const kClass =
    R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"hostpath"},"provisioner":"example.com/hostpath"})";

inline const std::string kPvs = "/api/v1/persistentvolumes";
inline const std::string kPvcs = "/api/v1/namespaces/default/persistentvolumeclaims";


// GET path as kubectl get asks for it: a Table if the server has one, else the object or list.
inline Reply TableCall(const fake::ApiServer& api, const std::string& path) {
  httplib::SSLClient c("127.0.0.1", api.port());
  c.set_ca_cert_path((api.dir() + "/ca.crt").c_str());
  c.enable_server_certificate_verification(true);
  c.set_bearer_token_auth(api.admin_token().c_str());
  auto r = c.Get(path.c_str(), {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"}});
  RawReply raw;
  raw.what = "GET " + path + " as a Table: " + httplib::to_string(r.error());
  raw.ok = static_cast<bool>(r);
  if (r) {
    raw.code = r->status;
    raw.body = r->body;
  }
  return Checked(raw);
}

inline std::vector<std::string> Strings(const Json& v) {
  std::vector<std::string> out;
  for (const Json& e : v.get<fake::JsonArray>()) out.push_back(e.is<std::string>() ? e.get<std::string>() : e.to_str());
  return out;
}

// The fields of a line of kubectl's table output: columns are apart by two spaces or more (a
// header such as "ACCESS MODES" has one inside).
inline std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    size_t end = line.find("  ", i);
    if (end == std::string::npos) end = line.size();
    out.push_back(line.substr(i, end - i));
    i = line.find_first_not_of(' ', end);
    if (i == std::string::npos) break;
  }
  return out;
}

// The lines kubectl prints (stdout and stderr) for `args`, as the admin of the server.
inline std::vector<std::string> Kubectl(const fake::ApiServer& api, const std::string& args) {
  const std::string cmd = "kubectl --kubeconfig " + api.dir() + "/admin.kubeconfig --cache-dir " + api.dir() +
                          "/kube-cache --request-timeout=20s " + args + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The names of a list's items, in order.
inline std::vector<std::string> ItemNames(const Json& list) {
  std::vector<std::string> names;
  for (const Json& item : list.get("items").get<fake::JsonArray>()) names.push_back(Str(item, {"metadata", "name"}));
  return names;
}

// The fields named in a 422's causes.
inline std::vector<std::string> CauseFields(const Json& status) {
  std::vector<std::string> fields;
  if (const Json* causes = fake::Path(status, {"details", "causes"}))
    for (const Json& c : causes->get<fake::JsonArray>()) fields.push_back(Str(c, {"field"}));
  return fields;
}

}  // namespace fake_test
