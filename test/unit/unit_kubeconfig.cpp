// Tests for kubeconfig.hpp with real files in a temporary folder and real certificates made
// here with OpenSSL.
#include "kube/kubeconfig.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace {

struct Pem {
  std::string cert, key;
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, size_t(n));
  BIO_free(bio);
  return out;
}

// A fresh self-signed P-256 certificate and its key.
Pem MakeCert(const char* cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, key, EVP_sha256());
  BIO* cb = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cb, x);
  BIO* kb = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(x);
  EVP_PKEY_free(key);
  return {BioText(cb), BioText(kb)};
}

std::string Base64(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]), reinterpret_cast<const unsigned char*>(s.data()),
                          int(s.size()));
  out.resize(size_t(n));
  return out;
}

const Pem& Ca() { static Pem p = MakeCert("test-ca"); return p; }
const Pem& Client() { static Pem p = MakeCert("admin"); return p; }
const Pem& Other() { static Pem p = MakeCert("other"); return p; }

// A temporary folder, removed with its contents at the end of the scope.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/unit_kubeconfig.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  // Writes path/rel (creating folders) and returns the full path.
  std::string Write(const std::string& rel, const std::string& text) const {
    std::string full = path + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }
};

// Replaces each {NAME} in text with vars[NAME].
std::string Fill(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& kv : vars) {
    std::string key = "{" + kv.first + "}";
    for (size_t p; (p = text.find(key)) != std::string::npos;) text.replace(p, key.size(), kv.second);
  }
  return text;
}

std::map<std::string, std::string> PemVars() {
  return {{"CA_DATA", Base64(Ca().cert)},
          {"CERT_DATA", Base64(Client().cert)},
          {"KEY_DATA", Base64(Client().key)},
          {"OTHER_KEY_DATA", Base64(Other().key)}};
}

// As `kubectl config view --raw` writes it (kubectl 1.x: set-cluster/set-credentials with
// --embed-certs, set-context --namespace, use-context).
const char* kKubectlView = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {CA_DATA}
    server: https://127.0.0.1:6443
  name: kind
contexts:
- context:
    cluster: kind
    namespace: storage
    user: admin
  name: kind-ctx
current-context: kind-ctx
kind: Config
preferences: {}
users:
- name: admin
  user:
    client-certificate-data: {CERT_DATA}
    client-key-data: {KEY_DATA}
)";

// Text as UTF-16 with a byte-order mark, as Windows PowerShell's ">" writes it (the text is ASCII).
std::string Utf16(const std::string& ascii, bool little_endian) {
  std::string out = little_endian ? "\xFF\xFE" : "\xFE\xFF";
  for (char c : ascii) out += little_endian ? std::string{c, '\0'} : std::string{'\0', c};
  return out;
}

// Ten mappings, each holding ten aliases of the one before: 10^10 nodes if expanded.
std::string BillionLaughs() {
  std::string text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) text += ", " + prev;
    text += "]\n";
  }
  return text + "current-context: x\n";
}

// A minimal valid kubeconfig whose cluster and user bodies are given.
std::string WithBodies(const std::string& cluster, const std::string& user) {
  return "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
         "clusters:\n- name: k\n  cluster:\n" + cluster + "users:\n- name: u\n  user:\n" + user;
}

}  // namespace

TEST_CASE("kubeconfig as kubectl config view --raw writes it, with -data fields") {
  TempDir dir;
  std::string path = dir.Write("config", Fill(kKubectlView, PemVars()));
  auto r = LoadKubeconfig(path, false);
  REQUIRE(r.ok());
  CHECK(r->server == "https://127.0.0.1:6443");
  CHECK(r->ca_pem == Ca().cert);
  CHECK(r->client_cert_pem == Client().cert);
  CHECK(r->client_key_pem == Client().key);
  CHECK(r->token.empty());
  CHECK(r->token_file.empty());
  CHECK_FALSE(r->insecure_skip_tls_verify);
  CHECK(r->namespace_ == "storage");
  CHECK(r->source == "kubeconfig " + path + " (context kind-ctx)");
}

TEST_CASE("kubeconfig with files: relative paths resolve against the kubeconfig's folder") {
  TempDir dir;
  dir.Write("kube/ca.pem", Ca().cert);
  dir.Write("kube/certs/client.pem", Client().cert);
  std::string key_path = dir.Write("keys/client.key", Client().key);
  dir.Write("kube/token", "file-token\n");
  std::string path = dir.Write("kube/config", Fill(R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: other
  context: {cluster: nowhere, user: nobody}
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
clusters:
- name: dev-cluster
  cluster:
    server: https://[fd00::1]:6443/
    certificate-authority: ca.pem
users:
- name: dev-user
  user:
    token: static-token
    tokenFile: token
    client-certificate: certs/client.pem
    client-key: {KEY}
)", {{"KEY", key_path}}));
  auto r = LoadKubeconfig(path, false);
  REQUIRE(r.ok());
  CHECK(r->server == "https://[fd00::1]:6443");
  CHECK(r->ca_pem == Ca().cert);
  CHECK(r->token == "static-token");
  CHECK(r->token_file == dir.path + "/kube/token");
  CHECK(r->client_cert_pem == Client().cert);
  CHECK(r->client_key_pem == Client().key);
  CHECK(r->namespace_ == "default");
  CHECK(r->source == "kubeconfig " + path + " (context dev)");
}

TEST_CASE("kubeconfig in JSON form") {
  TempDir dir;
  std::string path = dir.Write("config.json", Fill(R"({
    "kind": "Config",
    "apiVersion": "v1",
    "preferences": {},
    "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1", "certificate-authority-data": "{CA_DATA}"}}],
    "users": [{"name": "u", "user": {"token": "json-token"}}],
    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "ns1"}}],
    "current-context": "c"
})", PemVars()));
  auto r = LoadKubeconfig(path, false);
  REQUIRE(r.ok());
  CHECK(r->server == "https://10.0.0.1");
  CHECK(r->ca_pem == Ca().cert);
  CHECK(r->token == "json-token");
  CHECK(r->namespace_ == "ns1");
}

TEST_CASE("kubeconfig files as editors and shells save them: byte-order marks, UTF-16, line ends") {
  const std::string text = Fill(kKubectlView, PemVars());
  auto crlf = [](std::string t, const char* brk) {
    for (size_t p = 0; (p = t.find('\n', p)) != std::string::npos; p += std::strlen(brk)) t.replace(p, 1, brk);
    return t;
  };
  const std::pair<const char*, std::string> variants[] = {
      {"UTF-8 with a byte-order mark", "\xEF\xBB\xBF" + text},
      {"UTF-16LE with a byte-order mark (Windows PowerShell >)", Utf16(crlf(text, "\r\n"), true)},
      {"UTF-16BE with a byte-order mark", Utf16(text, false)},
      {"CRLF line ends", crlf(text, "\r\n")},
      {"CR line ends (old Mac)", crlf(text, "\r")},
  };
  for (const auto& v : variants) {
    SECTION(v.first) {
      TempDir dir;
      std::string path = dir.Write("config", v.second);
      auto r = LoadKubeconfig(path, false);
      INFO(r.status().message());
      REQUIRE(r.ok());
      CHECK(r->server == "https://127.0.0.1:6443");
      CHECK(r->ca_pem == Ca().cert);
      CHECK(r->client_cert_pem == Client().cert);
      CHECK(r->client_key_pem == Client().key);
      CHECK(r->namespace_ == "storage");
    }
  }
}

TEST_CASE("kubeconfig with anchors, aliases and merge keys") {
  TempDir dir;
  std::string path = dir.Write("config", Fill(R"(apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: &prod
    server: https://10.0.0.1:6443
    certificate-authority-data: {CA_DATA}
- name: prod-direct
  cluster:
    <<: *prod
    server: https://10.0.0.2:6443
users:
- name: admin
  user: &admin
    client-certificate-data: {CERT_DATA}
    client-key-data: {KEY_DATA}
- name: admin-again
  user: *admin
contexts:
- name: &ctx direct
  context: {cluster: prod-direct, user: admin-again, namespace: &ns storage}
- name: other
  context: {cluster: prod, user: admin, namespace: *ns}
current-context: *ctx
)", PemVars()));
  auto r = LoadKubeconfig(path, false);
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(r->server == "https://10.0.0.2:6443");  // the merging mapping's own key wins
  CHECK(r->ca_pem == Ca().cert);                // from the merged mapping
  CHECK(r->client_cert_pem == Client().cert);
  CHECK(r->client_key_pem == Client().key);
  CHECK(r->namespace_ == "storage");
  CHECK(r->source == "kubeconfig " + path + " (context direct)");
}

TEST_CASE("kubeconfig with standard tags") {
  TempDir dir;
  std::string path = dir.Write("config", Fill(R"(current-context: !!str c
contexts:
- name: c
  context: !!map {cluster: k, user: u, namespace: !!str 123}
clusters:
- name: k
  cluster:
    server: !!str https://h:1
    certificate-authority-data: !!str {CA_DATA}
    insecure-skip-tls-verify: !!bool false
users: !!seq
- name: u
  user:
    token: !!str 12345
)", PemVars()));
  auto r = LoadKubeconfig(path, false);
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(r->ca_pem == Ca().cert);
  CHECK(r->token == "12345");  // untagged, 12345 is a number and refused (see the errors test)
  CHECK(r->namespace_ == "123");
  CHECK_FALSE(r->insecure_skip_tls_verify);
}

TEST_CASE("insecure-skip-tls-verify only with allow_insecure, and never with a CA") {
  TempDir dir;
  std::string path = dir.Write("config", WithBodies("    server: https://h:1\n    insecure-skip-tls-verify: true\n",
                                                    "    token: t\n"));
  auto refused = LoadKubeconfig(path, false);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "kubeconfig " + path + ": cluster \"k\" sets insecure-skip-tls-verify: true, which is refused unless "
        "--allow-insecure-kubeconfig (or ALLOW_INSECURE_KUBECONFIG=true) is given");
  auto allowed = LoadKubeconfig(path, true);
  REQUIRE(allowed.ok());
  CHECK(allowed->insecure_skip_tls_verify);
  CHECK(allowed->ca_pem.empty());

  std::string with_ca = dir.Write("config2", WithBodies("    server: https://h:1\n    insecure-skip-tls-verify: true\n"
                                                        "    certificate-authority-data: " + Base64(Ca().cert) + "\n",
                                                        "    token: t\n"));
  auto both = LoadKubeconfig(with_ca, true);
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message() == "kubeconfig " + with_ca +
                                       ": cluster \"k\" sets both a certificate authority and "
                                       "insecure-skip-tls-verify; keep one");

  std::string off = dir.Write("config3", WithBodies("    server: https://h:1\n    insecure-skip-tls-verify: false\n",
                                                    "    token: t\n"));
  auto r = LoadKubeconfig(off, false);
  REQUIRE(r.ok());
  CHECK_FALSE(r->insecure_skip_tls_verify);
}

TEST_CASE("kubeconfig errors name the file, the entry and the field") {
  struct Bad {
    const char* name;
    std::string text;
    std::string error;  // after "kubeconfig PATH: "; {DIR} is the temp folder
  };
  const std::string ok_user = "    token: t\n";
  const std::string ok_cluster = "    server: https://h:1\n";
  const Bad cases[] = {
      {"not YAML", "a: [1\n",
       "line 2, column 1: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 4)"},
      {"duplicate key", WithBodies("    server: https://h:1\n    server: https://h:2\n", ok_user),
       "line 9, column 5: duplicate key \"server\""},
      {"complex key", "current-context: x\n? [a, b]\n: c\n", "line 2, column 3: complex keys (collections as keys) are not supported"},
      {"invalid UTF-8", "current-context: \xC3\xA9t\xE9\n", "line 1, column 20: incomplete UTF-8 octet sequence"},
      {"UTF-16 without a byte-order mark", std::string("c\0u\0r\0", 6), "line 1, column 2: control characters are not allowed (0x00)"},
      {"unknown tag", WithBodies(ok_cluster, "    token: !vault secret/k8s\n"),
       "line 12, column 12: tag !vault is not supported (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"},
      {"merge of a list", "current-context: x\nl: &l [1]\ncontexts:\n- <<: *l\n",
       "line 4, column 7: the value of a merge key (<<) must be a mapping or a list of mappings"},
      {"billion laughs", BillionLaughs(),
       "line 6, column 10: more than 200000 nodes or 16 MiB of text (aliases count each time they are used)"},
      {"not a mapping", "- a\n", "not a kubeconfig (one mapping expected)"},
      {"two documents", "a: 1\n---\nb: 2\n", "not a kubeconfig (one mapping expected)"},
      {"no current-context", "contexts: []\n", "current-context is not set"},
      {"current-context not a string", "current-context: [x]\n", "current-context must be a string"},
      {"current-context missing", "current-context: x\ncontexts:\n- name: y\n  context: {}\n",
       "current-context \"x\" is not in contexts"},
      {"contexts not a list", "current-context: x\ncontexts: {x: 1}\n", "contexts must be a list"},
      {"context without body", "current-context: x\ncontexts:\n- name: x\n", "contexts entry \"x\" has no context mapping"},
      {"context names no cluster", "current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n",
       "context \"x\" names no cluster"},
      {"context names no user", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k}\n",
       "context \"x\" names no user"},
      {"bad namespace", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u, namespace: Bad_NS}\n",
       "context \"x\": namespace \"Bad_NS\" is not a valid namespace name"},
      {"cluster not in clusters", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u}\n",
       "context \"x\" names cluster \"k\", which is not in clusters"},
      {"user not in users",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: https://h}\n",
       "context \"x\" names user \"u\", which is not in users"},
      {"duplicate cluster names",
       "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {}\n"
       "- name: k\n  cluster: {}\n",
       "clusters has two entries named \"k\""},
      {"no server", WithBodies("    certificate-authority-data: " + Base64(Ca().cert) + "\n", ok_user),
       "cluster \"k\" has no server"},
      {"http server", WithBodies("    server: http://h:8080\n", ok_user),
       "cluster \"k\": server http://h:8080 uses http://; this program only speaks HTTPS"},
      {"server without scheme", WithBodies("    server: h:6443\n", ok_user),
       "cluster \"k\": server \"h:6443\" does not start with https://"},
      {"server with path", WithBodies("    server: https://h/k8s/clusters/c1\n", ok_user),
       "cluster \"k\": server https://h/k8s/clusters/c1: only https://host[:port] is supported (no path, query or user)"},
      {"server without host", WithBodies("    server: https://\n", ok_user), "cluster \"k\": server https:// has no host"},
      {"server not a string", WithBodies("    server: 6443\n", ok_user), "cluster \"k\": server must be a string"},
      {"proxy-url", WithBodies(ok_cluster + "    proxy-url: http://proxy\n", ok_user),
       "cluster \"k\" uses proxy-url, which is not supported"},
      {"CA file missing", WithBodies(ok_cluster + "    certificate-authority: missing/ca.pem\n", ok_user),
       "cluster \"k\": certificate-authority: read {DIR}/missing/ca.pem: No such file or directory"},
      {"CA data not base64", WithBodies(ok_cluster + "    certificate-authority-data: not*base64\n", ok_user),
       "cluster \"k\": certificate-authority-data is not valid base64"},
      {"CA data not a certificate", WithBodies(ok_cluster + "    certificate-authority-data: " + Base64("hello") + "\n", ok_user),
       "cluster \"k\": certificate authority holds no PEM certificate"},
      {"CA file and data", WithBodies(ok_cluster + "    certificate-authority: ca.pem\n    certificate-authority-data: " +
                                          Base64(Ca().cert) + "\n", ok_user),
       "cluster \"k\" sets both certificate-authority and certificate-authority-data; keep one"},
      {"insecure not a bool", WithBodies(ok_cluster + "    insecure-skip-tls-verify: \"true\"\n", ok_user),
       "cluster \"k\": insecure-skip-tls-verify must be true or false"},
      {"exec", WithBodies(ok_cluster, "    exec:\n      command: aws\n"),
       "user \"u\" uses exec, which is not supported (use a token, tokenFile or client certificate)"},
      {"auth-provider", WithBodies(ok_cluster, "    auth-provider: {name: gcp}\n"),
       "user \"u\" uses auth-provider, which is not supported (use a token, tokenFile or client certificate)"},
      {"basic auth", WithBodies(ok_cluster, "    username: admin\n    password: secret\n"),
       "user \"u\" uses username, which is not supported (use a token, tokenFile or client certificate)"},
      {"impersonation", WithBodies(ok_cluster, "    token: t\n    as: someone\n"),
       "user \"u\" uses as, impersonation, which is not supported"},
      {"no credentials", WithBodies(ok_cluster, "    {}\n"),
       "user \"u\" has no credentials (token, tokenFile, or client-certificate and client-key)"},
      {"token not a string", WithBodies(ok_cluster, "    token: 123\n"), "user \"u\": token must be a string"},
      {"insecure tagged as a string", WithBodies(ok_cluster + "    insecure-skip-tls-verify: !!str true\n", ok_user),
       "cluster \"k\": insecure-skip-tls-verify must be true or false"},
      {"tokenFile missing", WithBodies(ok_cluster, "    tokenFile: tok\n"),
       "user \"u\": tokenFile: read {DIR}/tok: No such file or directory"},
      {"certificate without key", WithBodies(ok_cluster, "    client-certificate-data: " + Base64(Client().cert) + "\n"),
       "user \"u\" has a client certificate but no client-key"},
      {"key without certificate", WithBodies(ok_cluster, "    client-key-data: " + Base64(Client().key) + "\n"),
       "user \"u\" has a client key but no client-certificate"},
      {"key of another certificate",
       WithBodies(ok_cluster, "    client-certificate-data: " + Base64(Client().cert) + "\n    client-key-data: " +
                                  Base64(Other().key) + "\n"),
       "user \"u\": client key does not belong to the client certificate"},
      {"key is not a key",
       WithBodies(ok_cluster, "    client-certificate-data: " + Base64(Client().cert) + "\n    client-key-data: " +
                                  Base64(Client().cert) + "\n"),
       "user \"u\": client key holds no unencrypted PEM private key"},
      {"client certificate file and data",
       WithBodies(ok_cluster, "    client-certificate: c.pem\n    client-certificate-data: " + Base64(Client().cert) + "\n"),
       "user \"u\" sets both client-certificate and client-certificate-data; keep one"},
  };
  for (const Bad& c : cases) {
    SECTION(c.name) {
      TempDir dir;
      std::string path = dir.Write("config", c.text);
      auto r = LoadKubeconfig(path, false);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message() == "kubeconfig " + path + ": " + Fill(c.error, {{"DIR", dir.path}}));
    }
  }
  SECTION("file missing") {
    auto r = LoadKubeconfig("/nonexistent/kubeconfig", false);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() ==
          "kubeconfig /nonexistent/kubeconfig: read /nonexistent/kubeconfig: No such file or directory");
  }
  SECTION("path is a folder") {
    TempDir dir;
    auto r = LoadKubeconfig(dir.path, false);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == "kubeconfig " + dir.path + ": read " + dir.path + ": Is a directory");
  }
}

TEST_CASE("base64 decoding as Go's StdEncoding") {
  using kubeconfig_detail::DecodeBase64;
  struct Good { const char* in; std::string out; };
  const Good good[] = {{"", ""}, {"Zg==", "f"}, {"Zm8=", "fo"}, {"Zm9v", "foo"}, {"Zm9v\nYmFy\r\n", "foobar"},
                       {"AP8=", std::string("\0\xff", 2)}};
  for (const Good& g : good) {
    auto r = DecodeBase64(g.in);
    INFO(g.in);
    REQUIRE(r.ok());
    CHECK(*r == g.out);
  }
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zm9v!", "Zg==Zg==", "Zm 9v", "====", "Zg=a"}) {
    INFO(bad);
    CHECK_FALSE(DecodeBase64(bad).ok());
  }
}

TEST_CASE("in-cluster: service account files and environment") {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", Ca().cert);
  dir.Write("namespace", "storage-system\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const std::string hint = " (outside a cluster, pass --kubeconfig)";

  SECTION("all present") {
    auto r = LoadInCluster(dir.path, getenv);
    REQUIRE(r.ok());
    CHECK(r->server == "https://10.96.0.1:443");
    CHECK(r->token_file == dir.path + "/token");
    CHECK(r->token.empty());
    CHECK(r->ca_pem == Ca().cert);
    CHECK(r->namespace_ == "storage-system");
    CHECK(r->client_cert_pem.empty());
    CHECK_FALSE(r->insecure_skip_tls_verify);
    CHECK(r->source == "in-cluster service account " + dir.path);
  }
  SECTION("IPv6 host in brackets") {
    env["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
    auto r = LoadInCluster(dir.path + "/", getenv);
    REQUIRE(r.ok());
    CHECK(r->server == "https://[fd00:10:96::1]:443");
    CHECK(r->token_file == dir.path + "/token");
  }
  SECTION("POD_NAMESPACE wins over the file") {
    env["POD_NAMESPACE"] = "from-env";
    auto r = LoadInCluster(dir.path, getenv);
    REQUIRE(r.ok());
    CHECK(r->namespace_ == "from-env");
  }
  SECTION("no namespace file means default") {
    std::filesystem::remove(dir.path + "/namespace");
    auto r = LoadInCluster(dir.path, getenv);
    REQUIRE(r.ok());
    CHECK(r->namespace_ == "default");
  }

  struct Bad {
    const char* name;
    std::function<void()> change;
    std::string error;  // after "in-cluster configuration: ", before the hint
  };
  const Bad bad[] = {
      {"no host", [&] { env.erase("KUBERNETES_SERVICE_HOST"); }, "KUBERNETES_SERVICE_HOST is not set"},
      {"no port", [&] { env.erase("KUBERNETES_SERVICE_PORT"); }, "KUBERNETES_SERVICE_PORT is not set"},
      {"bad port", [&] { env["KUBERNETES_SERVICE_PORT"] = "https"; }, "KUBERNETES_SERVICE_PORT \"https\" is not a port number"},
      {"port too big", [&] { env["KUBERNETES_SERVICE_PORT"] = "65536"; },
       "KUBERNETES_SERVICE_PORT \"65536\" is not a port number"},
      {"bad host", [&] { env["KUBERNETES_SERVICE_HOST"] = "h/x"; }, "KUBERNETES_SERVICE_HOST \"h/x\" is not a host"},
      {"no token", [&] { std::filesystem::remove(dir.path + "/token"); },
       "service account token: read " + dir.path + "/token: No such file or directory"},
      {"empty token", [&] { dir.Write("token", "\n"); }, "service account token " + dir.path + "/token is empty"},
      {"no CA", [&] { std::filesystem::remove(dir.path + "/ca.crt"); },
       "service account CA: read " + dir.path + "/ca.crt: No such file or directory"},
      {"CA not PEM", [&] { dir.Write("ca.crt", "garbage"); },
       "service account CA " + dir.path + "/ca.crt holds no PEM certificate"},
  };
  for (const Bad& b : bad) {
    SECTION(b.name) {
      b.change();
      auto r = LoadInCluster(dir.path, getenv);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message() == "in-cluster configuration: " + b.error + hint);
    }
  }
  SECTION("unreadable token") {
    if (geteuid() == 0) {
      // root reads any file; check the same path with a folder in the way instead.
      std::filesystem::remove(dir.path + "/token");
      std::filesystem::create_directory(dir.path + "/token");
      auto r = LoadInCluster(dir.path, getenv);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message() == "in-cluster configuration: service account token: read " + dir.path +
                                        "/token: Is a directory" + hint);
    } else {
      std::filesystem::permissions(dir.path + "/token", std::filesystem::perms::none);
      auto r = LoadInCluster(dir.path, getenv);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message() == "in-cluster configuration: service account token: read " + dir.path +
                                        "/token: Permission denied" + hint);
    }
  }
}
