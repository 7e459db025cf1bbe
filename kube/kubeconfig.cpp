// Reading a kubeconfig or the service account's files into ApiCredentials (kubeconfig.hpp).
// Hand-written, as the rest of kube/: the program uses no Kubernetes client library, reads
// only the fields it honours, and refuses the others by name.
#include "kube/kubeconfig.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <picojson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/yaml.hpp"

namespace kubeconfig_detail {

// RFC 4648 base64 with padding, as Go's base64.StdEncoding (which skips \r and \n).
Result<std::string> DecodeBase64(const std::string& in) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  size_t chars = 0, pad = 0;
  for (char c : in) {
    if (c == '\n' || c == '\r') continue;
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
          : c == '+' ? 62 : c == '/' ? 63 : c == '=' ? -2 : -1;
    if (v == -1 || (pad > 0 && v != -2)) return Status::Invalid("not valid base64");
    ++chars;
    if (v == -2) { ++pad; continue; }
    acc = (acc << 6) | unsigned(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  if (chars % 4 != 0 || pad > 2) return Status::Invalid("not valid base64");
  return out;
}

// DNS-1123 label, as Kubernetes requires of namespaces.
bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

}  // namespace kubeconfig_detail

namespace {

using kubeconfig_detail::DecodeBase64;
using kubeconfig_detail::IsDns1123Label;

constexpr size_t kMaxFileBytes = 4 << 20;

// The whole file (at most kMaxFileBytes). Errors: "read PATH: <strerror>".
Result<std::string> ReadSmallFile(const std::string& path) {
  auto fail = [&](int err) { return Status::Error("read " + path + ": " + std::strerror(err)); };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(errno);
  if (S_ISDIR(st.st_mode)) return fail(EISDIR);
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno);
    if (n == 0) return data;
    data.append(buf, size_t(n));
    if (data.size() > kMaxFileBytes) return Status::Error("read " + path + ": larger than 4 MiB");
  }
}

// "" when pem holds at least one X.509 certificate, else what is wrong.
std::string CheckCertificates(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), int(pem.size()));
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) X509_free(cert), ++n;
  BIO_free(bio);
  ERR_clear_error();
  return n > 0 ? "" : "holds no PEM certificate";
}

// "" when key_pem holds an unencrypted private key that belongs to the first certificate of
// cert_pem, else what is wrong.
std::string CheckKeyPair(const std::string& cert_pem, const std::string& key_pem) {
  BIO* kb = BIO_new_mem_buf(key_pem.data(), int(key_pem.size()));
  pem_password_cb* no_password = [](char*, int, int, void*) { return 0; };  // never prompt
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, no_password, nullptr);
  BIO_free(kb);
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), int(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  std::string err = !key ? "client key holds no unencrypted PEM private key"
                  : !cert ? "client certificate holds no PEM certificate"
                  : X509_check_private_key(cert, key) != 1 ? "client key does not belong to the client certificate" : "";
  EVP_PKEY_free(key);
  X509_free(cert);
  ERR_clear_error();
  return err;
}

// Accepts "https://host[:port][/]"; stores it without the trailing slash.
Status CheckServer(const std::string& server, std::string* out) {
  const std::string https = "https://";
  if (server.compare(0, 7, "http://") == 0) {
    return Status::Invalid("server " + server + " uses http://; this program only speaks HTTPS");
  }
  if (server.compare(0, https.size(), https) != 0) {
    return Status::Invalid("server \"" + server + "\" does not start with https://");
  }
  std::string authority = server.substr(https.size());
  if (!authority.empty() && authority.back() == '/') authority.pop_back();
  if (authority.empty()) return Status::Invalid("server " + server + " has no host");
  if (authority.find_first_of("/?#@ ") != std::string::npos) {
    return Status::Invalid("server " + server + ": only https://host[:port] is supported (no path, query or user)");
  }
  *out = https + authority;
  return Status::Ok();
}

// Reads a string field; absent (or null) gives "". Wrong type is an error naming `where` (if any).
Status GetString(const picojson::object& obj, const std::string& key, const std::string& where,
                        std::string* out) {
  auto it = obj.find(key);
  out->clear();
  if (it == obj.end() || it->second.is<picojson::null>()) return Status::Ok();
  if (!it->second.is<std::string>()) return Status::Invalid((where.empty() ? "" : where + ": ") + key + " must be a string");
  *out = it->second.get<std::string>();
  return Status::Ok();
}

// Finds the entry {name: name, <body>: {...}} in the list root[list]; *out is its body.
Status FindNamed(const picojson::object& root, const std::string& list, const std::string& body,
                        const std::string& name, const picojson::object** out) {
  auto it = root.find(list);
  const picojson::object* found = nullptr;
  if (it != root.end() && it->second.is<picojson::array>()) {
    for (const picojson::value& entry : it->second.get<picojson::array>()) {
      if (!entry.is<picojson::object>()) continue;
      const picojson::object& e = entry.get<picojson::object>();
      auto n = e.find("name");
      if (n == e.end() || !n->second.is<std::string>() || n->second.get<std::string>() != name) continue;
      if (found) return Status::Invalid(list + " has two entries named \"" + name + "\"");
      auto b = e.find(body);
      if (b == e.end() || !b->second.is<picojson::object>()) {
        return Status::Invalid(list + " entry \"" + name + "\" has no " + body + " mapping");
      }
      found = &b->second.get<picojson::object>();
    }
  } else if (it != root.end() && !it->second.is<picojson::null>()) {
    return Status::Invalid(list + " must be a list");
  }
  if (!found) return Status::NotFound("");
  *out = found;
  return Status::Ok();
}

std::string ResolvePath(const std::string& dir, const std::string& path) {
  return path.empty() || path[0] == '/' ? path : dir + path;
}

// One PEM from `file_key` (a path, relative to dir) or `data_key` (base64), not both.
// Absent both: "" and ok. `where` names the entry, e.g. `cluster "c"`.
Status LoadPem(const picojson::object& obj, const std::string& file_key, const std::string& data_key,
                      const std::string& dir, const std::string& where, std::string* pem) {
  std::string file, data;
  Status s = GetString(obj, file_key, where, &file);
  if (s.ok()) s = GetString(obj, data_key, where, &data);
  if (!s.ok()) return s;
  if (!file.empty() && !data.empty()) {
    return Status::Invalid(where + " sets both " + file_key + " and " + data_key + "; keep one");
  }
  if (!data.empty()) {
    Result<std::string> decoded = DecodeBase64(data);
    if (!decoded.ok()) return Status::Invalid(where + ": " + data_key + " is not valid base64");
    *pem = *decoded;
  } else if (!file.empty()) {
    Result<std::string> read = ReadSmallFile(ResolvePath(dir, file));
    if (!read.ok()) return read.status().Wrap(where + ": " + file_key);
    *pem = *read;
  } else {
    pem->clear();
  }
  return Status::Ok();
}

// Refuses the fields of entry `obj` that this program cannot honour.
Status RefuseFields(const picojson::object& obj, const std::string& where,
                           std::initializer_list<std::pair<const char*, const char*>> fields) {
  for (const auto& f : fields) {
    if (obj.count(f.first)) return Status::Invalid(where + " uses " + f.first + ", " + f.second);
  }
  return Status::Ok();
}

Status ReadCluster(const picojson::object& c, const std::string& where, const std::string& dir,
                          bool allow_insecure, ApiCredentials* creds) {
  Status s = RefuseFields(c, where, {{"proxy-url", "which is not supported"},
                                     {"tls-server-name", "which is not supported"}});
  std::string server;
  if (s.ok()) s = GetString(c, "server", where, &server);
  if (!s.ok()) return s;
  if (server.empty()) return Status::Invalid(where + " has no server");
  s = CheckServer(server, &creds->server);
  if (!s.ok()) return s.Wrap(where);
  s = LoadPem(c, "certificate-authority", "certificate-authority-data", dir, where, &creds->ca_pem);
  if (!s.ok()) return s;
  if (!creds->ca_pem.empty()) {
    std::string err = CheckCertificates(creds->ca_pem);
    if (!err.empty()) return Status::Invalid(where + ": certificate authority " + err);
  }
  auto insecure = c.find("insecure-skip-tls-verify");
  if (insecure != c.end() && !insecure->second.is<bool>() && !insecure->second.is<picojson::null>()) {
    return Status::Invalid(where + ": insecure-skip-tls-verify must be true or false");
  }
  if (insecure != c.end() && insecure->second.is<bool>() && insecure->second.get<bool>()) {
    if (!allow_insecure) {
      return Status::Invalid(where + " sets insecure-skip-tls-verify: true, which is refused unless "
                             "--allow-insecure-kubeconfig (or ALLOW_INSECURE_KUBECONFIG=true) is given");
    }
    if (!creds->ca_pem.empty()) {
      return Status::Invalid(where + " sets both a certificate authority and insecure-skip-tls-verify; keep one");
    }
    creds->insecure_skip_tls_verify = true;
  }
  return Status::Ok();
}

Status ReadUser(const picojson::object& u, const std::string& where, const std::string& dir,
                       ApiCredentials* creds) {
  const char* unsupported = "which is not supported (use a token, tokenFile or client certificate)";
  Status s = RefuseFields(u, where, {{"exec", unsupported}, {"auth-provider", unsupported},
                                     {"username", unsupported}, {"password", unsupported},
                                     {"as", "impersonation, which is not supported"},
                                     {"as-groups", "impersonation, which is not supported"},
                                     {"as-uid", "impersonation, which is not supported"}});
  if (s.ok()) s = GetString(u, "token", where, &creds->token);
  std::string token_file;
  if (s.ok()) s = GetString(u, "tokenFile", where, &token_file);
  if (s.ok()) s = LoadPem(u, "client-certificate", "client-certificate-data", dir, where, &creds->client_cert_pem);
  if (s.ok()) s = LoadPem(u, "client-key", "client-key-data", dir, where, &creds->client_key_pem);
  if (!s.ok()) return s;
  if (!token_file.empty()) {
    creds->token_file = ResolvePath(dir, token_file);
    Result<std::string> read = ReadSmallFile(creds->token_file);
    if (!read.ok()) return read.status().Wrap(where + ": tokenFile");
  }
  bool has_cert = !creds->client_cert_pem.empty(), has_key = !creds->client_key_pem.empty();
  if (has_cert != has_key) {
    return Status::Invalid(where + " has a client " + (has_cert ? "certificate but no client-key" : "key but no client-certificate"));
  }
  if (has_cert) {
    std::string err = CheckKeyPair(creds->client_cert_pem, creds->client_key_pem);
    if (!err.empty()) return Status::Invalid(where + ": " + err);
  }
  if (creds->token.empty() && creds->token_file.empty() && !has_cert) {
    return Status::Invalid(where + " has no credentials (token, tokenFile, or client-certificate and client-key)");
  }
  return Status::Ok();
}

Status LoadKubeconfigInto(const std::string& path, bool allow_insecure, ApiCredentials* creds) {
  Result<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  Result<std::vector<picojson::value>> docs = ParseYamlDocuments(*text);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1 || !(*docs)[0].is<picojson::object>()) return Status::Invalid("not a kubeconfig (one mapping expected)");
  const picojson::object& root = (*docs)[0].get<picojson::object>();

  std::string context_name;
  Status s = GetString(root, "current-context", "", &context_name);
  if (!s.ok()) return s;
  if (context_name.empty()) return Status::Invalid("current-context is not set");
  const picojson::object* context = nullptr;
  s = FindNamed(root, "contexts", "context", context_name, &context);
  if (s.code() == Status::kNotFound) return Status::Invalid("current-context \"" + context_name + "\" is not in contexts");
  if (!s.ok()) return s;

  std::string where = "context \"" + context_name + "\"";
  std::string cluster_name, user_name;
  s = GetString(*context, "cluster", where, &cluster_name);
  if (s.ok()) s = GetString(*context, "user", where, &user_name);
  if (s.ok()) s = GetString(*context, "namespace", where, &creds->namespace_);
  if (!s.ok()) return s;
  if (cluster_name.empty()) return Status::Invalid(where + " names no cluster");
  if (user_name.empty()) return Status::Invalid(where + " names no user");
  if (creds->namespace_.empty()) creds->namespace_ = "default";
  if (!IsDns1123Label(creds->namespace_)) {
    return Status::Invalid(where + ": namespace \"" + creds->namespace_ + "\" is not a valid namespace name");
  }

  const picojson::object *cluster = nullptr, *user = nullptr;
  s = FindNamed(root, "clusters", "cluster", cluster_name, &cluster);
  if (s.code() == Status::kNotFound) {
    return Status::Invalid(where + " names cluster \"" + cluster_name + "\", which is not in clusters");
  }
  if (!s.ok()) return s;
  s = FindNamed(root, "users", "user", user_name, &user);
  if (s.code() == Status::kNotFound) return Status::Invalid(where + " names user \"" + user_name + "\", which is not in users");
  if (!s.ok()) return s;

  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  s = ReadCluster(*cluster, "cluster \"" + cluster_name + "\"", dir, allow_insecure, creds);
  if (s.ok()) s = ReadUser(*user, "user \"" + user_name + "\"", dir, creds);
  creds->source = "kubeconfig " + path + " (context " + context_name + ")";
  return s;
}

}  // namespace

Result<ApiCredentials> LoadKubeconfig(const std::string& path, bool allow_insecure) {
  ApiCredentials creds;
  Status s = LoadKubeconfigInto(path, allow_insecure, &creds);
  if (!s.ok()) return s.Wrap("kubeconfig " + path);
  return creds;
}

Result<ApiCredentials> LoadInCluster(const std::string& serviceaccount_dir,
                                     const std::function<const char*(const char*)>& getenv) {
  auto fail = [](const std::string& what) {
    return Status::Invalid("in-cluster configuration: " + what + " (outside a cluster, pass --kubeconfig)");
  };
  auto env = [&](const char* name) { const char* v = getenv(name); return std::string(v ? v : ""); };
  std::string host = env("KUBERNETES_SERVICE_HOST"), port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty()) return fail("KUBERNETES_SERVICE_HOST is not set");
  if (port.empty()) return fail("KUBERNETES_SERVICE_PORT is not set");
  bool port_ok = port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos && std::stoi(port) > 0 &&
                 std::stoi(port) <= 65535;
  if (!port_ok) return fail("KUBERNETES_SERVICE_PORT \"" + port + "\" is not a port number");
  if (host.find_first_of("/?#@[] ") != std::string::npos) return fail("KUBERNETES_SERVICE_HOST \"" + host + "\" is not a host");

  ApiCredentials creds;
  creds.server = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  std::string dir = serviceaccount_dir;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  creds.token_file = dir + "token";
  Result<std::string> token = ReadSmallFile(creds.token_file);
  if (!token.ok()) return fail("service account token: " + token.status().message());
  if (token->find_first_not_of(" \t\r\n") == std::string::npos) return fail("service account token " + creds.token_file + " is empty");
  Result<std::string> ca = ReadSmallFile(dir + "ca.crt");
  if (!ca.ok()) return fail("service account CA: " + ca.status().message());
  std::string err = CheckCertificates(*ca);
  if (!err.empty()) return fail("service account CA " + dir + "ca.crt " + err);
  creds.ca_pem = *ca;

  creds.namespace_ = env("POD_NAMESPACE");
  if (creds.namespace_.empty()) {
    Result<std::string> ns = ReadSmallFile(dir + "namespace");
    if (ns.ok()) {
      size_t b = ns->find_first_not_of(" \t\r\n"), e = ns->find_last_not_of(" \t\r\n");
      if (b != std::string::npos) creds.namespace_ = ns->substr(b, e - b + 1);
    }
  }
  if (creds.namespace_.empty()) creds.namespace_ = "default";
  creds.source = "in-cluster service account " + serviceaccount_dir;
  return creds;
}

