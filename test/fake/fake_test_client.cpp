// The bodies of fake_test_client.hpp (the contracts are there).
#include "test/fake/fake_test_client.hpp"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>

#include "kube/api_connection.hpp"

namespace fake_test {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempDir() {
  char tmpl[] = "/tmp/fake-apiserver-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

RbacDir::RbacDir(const std::string& rbac_yaml) : dir(TempDir()) { std::ofstream(dir + "/rbac.yaml") << rbac_yaml; }

RbacDir::~RbacDir() { std::filesystem::remove_all(dir); }

fake::ApiServerOptions RbacDir::Options() const {
  fake::ApiServerOptions o;
  o.dir = dir + "/api";
  o.rbac_files = {dir + "/rbac.yaml"};
  return o;
}

Server::Server(fake::ApiServerOptions opts) : api(WithDir(std::move(opts))) {
  Status s = api.Start();
  INFO(s.message());
  REQUIRE(s.ok());
}

Server::~Server() {
  api.Stop();
  std::filesystem::remove_all(api.dir());
}

fake::ApiServerOptions Server::WithDir(fake::ApiServerOptions o) {
  if (o.dir.empty()) o.dir = TempDir();
  return o;
}

std::shared_ptr<ApiEndpoint> EndpointOf(const fake::ApiServer& api) {
  ApiCredentials c;
  c.server = "https://127.0.0.1:" + std::to_string(api.port());
  c.ca_pem = ReadFile(api.dir() + "/ca.crt");
  c.token = api.admin_token();
  c.source = "test";
  Result<std::shared_ptr<ApiEndpoint>> ep = ApiEndpoint::From(c);
  REQUIRE(ep.ok());
  return *ep;
}

RawReply Send(const fake::ApiServer& api, const std::string& token, const std::string& method,
              const std::string& path, const std::string& body, const std::string& type) {
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

Reply Checked(const RawReply& r) {
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

Reply Call(const fake::ApiServer& api, const std::string& token, const std::string& method, const std::string& path,
           const std::string& body, const std::string& type) {
  return Checked(Send(api, token, method, path, body, type));
}

Reply Admin(const fake::ApiServer& api, const std::string& method, const std::string& path, const std::string& body,
            const std::string& type) {
  return Call(api, api.admin_token(), method, path, body, type);
}

std::vector<Json> WatchEvents(const fake::ApiServer& api, const std::string& path, size_t count) {
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

std::string Pv(const std::string& name, const std::string& extra_spec, const std::string& path) {
  return R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":")" + name +
         R"("},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":")" + path +
         R"("},"storageClassName":"hostpath","persistentVolumeReclaimPolicy":"Delete")" + extra_spec + "}}";
}

std::string Pvc(const std::string& name, const std::string& cls) {
  return R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":")" + name +
         R"("},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":")" +
         cls + R"("}})";
}

std::string PodWithClaims(const std::string& name, const std::vector<std::string>& claims, const std::string& spec_extra) {
  std::string volumes, mounts;
  for (size_t i = 0; i < claims.size(); ++i) {
    const std::string v = "v" + std::to_string(i);
    volumes += (i ? "," : "") + (R"({"name":")" + v + R"(","persistentVolumeClaim":{"claimName":")" + claims[i] + "\"}}");
    mounts += (i ? "," : "") + (R"({"name":")" + v + R"(","mountPath":"/data/)" + v + "\"}");
  }
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"("},"spec":{"containers":[{"name":"c","image":"busybox:1.36","volumeMounts":[)" + mounts + R"(]}],"volumes":[)" +
         volumes + "]" + spec_extra + "}}";
}

std::string ClonePvc(const std::string& name, const std::string& source, const std::string& cls) {
  std::string body = Pvc(name, cls);
  return body.insert(body.size() - 2, R"(,"dataSource":{"kind":"PersistentVolumeClaim","name":")" + source + R"("})");
}

Reply TableCall(const fake::ApiServer& api, const std::string& path) {
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

std::vector<std::string> Strings(const Json& v) {
  std::vector<std::string> out;
  for (const Json& e : v.get<fake::JsonArray>()) out.push_back(e.is<std::string>() ? e.get<std::string>() : e.to_str());
  return out;
}

std::vector<std::string> Fields(const std::string& line) {
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

std::vector<std::string> Kubectl(const fake::ApiServer& api, const std::string& args) {
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

std::vector<std::string> ItemNames(const Json& list) {
  std::vector<std::string> names;
  for (const Json& item : list.get("items").get<fake::JsonArray>()) names.push_back(Str(item, {"metadata", "name"}));
  return names;
}

std::vector<std::string> CauseFields(const Json& status) {
  std::vector<std::string> fields;
  if (const Json* causes = fake::Path(status, {"details", "causes"}))
    for (const Json& c : causes->get<fake::JsonArray>()) fields.push_back(Str(c, {"field"}));
  return fields;
}

}  // namespace fake_test
