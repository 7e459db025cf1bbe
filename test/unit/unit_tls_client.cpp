// TLS of ApiConnection (api_connection.hpp, over httplib's SSLClient): whom the client trusts (the configured CA,
// the server's name or address), the client certificate it presents, and the messages a user sees when TLS fails.
#include <signal.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "kube/api_connection.hpp"
#include "test/fake/fake_tls.hpp"
#include "test/support/scripted_tls_server.hpp"

namespace {

const bool kNoSigpipe = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

using fake::PkeyPtr;
using fake::X509Ptr;
using fake::tls_detail::MakeCert;
using fake::tls_detail::ToPem;

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

// A CA that can sign server and client certificates with the names a test asks for.
struct Ca {
  PkeyPtr key{EVP_EC_gen("P-256")};
  X509Ptr cert;
  explicit Ca(const std::string& cn = "test-ca") {
    auto c = MakeCert(key.get(), cn, nullptr, nullptr,
                      {{NID_basic_constraints, "critical,CA:TRUE"}, {NID_key_usage, "critical,keyCertSign,digitalSignature"}});
    REQUIRE(c.ok());
    cert = std::move(*c);
  }
  std::string pem() const { return ToPem(cert.get()); }
  // A leaf certificate for `key`; `san` as in "IP:127.0.0.1,DNS:localhost", or "" for none.
  X509Ptr Sign(EVP_PKEY* leaf_key, const std::string& cn, const char* usage, const std::string& san) {
    std::vector<std::pair<int, const char*>> exts = {{NID_basic_constraints, "critical,CA:FALSE"}, {NID_ext_key_usage, usage}};
    if (!san.empty()) exts.push_back({NID_subject_alt_name, san.c_str()});
    auto c = MakeCert(leaf_key, cn, cert.get(), key.get(), exts);
    REQUIRE(c.ok());
    return std::move(*c);
  }
};

// A server that answers every request with 200 "hello" and counts the requests it read.
struct HelloServer {
  std::atomic<int> requests{0};
  std::string client_cn;  // the CN of the client certificate, when one was asked for
  ScriptedServer server;
  HelloServer(X509* cert, EVP_PKEY* key, X509* client_ca = nullptr)
      : server([this](SSL* ssl) { Serve(ssl); }, ScriptedServer::Identity{cert, key, client_ca}) {}

  void Serve(SSL* ssl) {
    if (X509* peer = SSL_get1_peer_certificate(ssl)) {
      char cn[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
      client_cn = cn;
      X509_free(peer);
    }
    char buf[16384];
    while (SSL_read(ssl, buf, sizeof buf) > 0) {
      ++requests;
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
      if (SSL_write(ssl, ok.data(), static_cast<int>(ok.size())) <= 0) return;
    }
  }
};

// The credentials of https://host:port, trusting ca_pem ("" = the system's CAs).
ApiCredentials CredentialsOf(const std::string& host, int port, const std::string& ca_pem) {
  ApiCredentials creds;
  creds.server = "https://" + host + ":" + std::to_string(port);
  creds.ca_pem = ca_pem;
  creds.source = "test";
  return creds;
}

// GET /version over a new connection with these credentials.
Result<HttpResponse> Get(const ApiCredentials& creds) {
  auto ep = ApiEndpoint::From(creds);
  REQUIRE(ep.ok());
  ApiConnection conn(*ep);
  REQUIRE(conn.Init().ok());
  return conn.Request("GET", "/version", "", "application/json", std::chrono::seconds(5));
}

// A request that must reach the HelloServer.
void ExpectHello(const ApiCredentials& creds) {
  auto r = Get(creds);
  REQUIRE(r.ok());
  CHECK(r->body == "hello");
}

// A request that the client must refuse to send, because of the server's certificate.
void ExpectRefused(const ApiCredentials& creds, const std::string& why, const std::string& host = "127.0.0.1") {
  auto r = Get(creds);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::kUnavailable);
  CHECK_THAT(r.status().message(),
             Catch::StartsWith("GET /version: the server's TLS certificate was refused: " + why +
                               " (it must be signed by the configured CA and name " + host + ") talking to "));
}

}  // namespace

TEST_CASE("the server's certificate must chain to the configured CA") {
  Ca ca, other("other-ca");
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1,DNS:localhost");
  HelloServer hello(cert.get(), key.get());

  ExpectHello(CredentialsOf("127.0.0.1", hello.server.port(), ca.pem()));
  ExpectRefused(CredentialsOf("127.0.0.1", hello.server.port(), other.pem()), "unable to get local issuer certificate");
  CHECK(hello.requests == 1);  // the refused client sent nothing

  SECTION("unless verification is off (insecure-skip-tls-verify)") {
    ApiCredentials insecure = CredentialsOf("127.0.0.1", hello.server.port(), other.pem());
    insecure.insecure_skip_tls_verify = true;
    ExpectHello(insecure);
  }
}

TEST_CASE("without a CA in the kubeconfig the system's CAs are trusted; with one, only it") {
  Ca ca, other("other-ca");
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1");
  HelloServer hello(cert.get(), key.get());
  char dir[] = "/tmp/tls-client-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string bundle = std::string(dir) + "/bundle.pem";
  auto trust = [&](const std::string& pem) {  // the "system" store: a bundle file and an empty directory
    std::ofstream(bundle) << pem;
    setenv("SSL_CERT_FILE", bundle.c_str(), 1);
    setenv("SSL_CERT_DIR", dir, 1);
  };
  trust(other.pem() + ca.pem());
  ExpectHello(CredentialsOf("127.0.0.1", hello.server.port(), ""));
  // The system trusts the server's CA, the kubeconfig names another: the kubeconfig's alone counts.
  ExpectRefused(CredentialsOf("127.0.0.1", hello.server.port(), other.pem()), "unable to get local issuer certificate");
  trust(other.pem());
  ExpectRefused(CredentialsOf("127.0.0.1", hello.server.port(), ""), "unable to get local issuer certificate");
  CHECK(hello.requests == 1);
  unsetenv("SSL_CERT_FILE");
  unsetenv("SSL_CERT_DIR");
  std::remove(bundle.c_str());
  rmdir(dir);
}

TEST_CASE("the server's certificate must name the address or host the client dialled") {
  Ca ca;
  PkeyPtr key(EVP_EC_gen("P-256"));
  struct Mismatch {
    const char* what;
    const char* cn;
    const char* san;
    const char* dialled;
    const char* why;
  };
  for (const Mismatch& m :
       {Mismatch{"an IP address is checked against the IP entries, not the common name", "127.0.0.1",
                 "DNS:api.example,IP:10.0.0.1", "127.0.0.1", "IP address mismatch"},
        Mismatch{"a host name is checked against the DNS entries, not the common name", "localhost",
                 "DNS:api.example,IP:127.0.0.1", "localhost", "hostname mismatch"},
        Mismatch{"a wildcard stands for a whole label only", "api", "DNS:local*", "localhost", "hostname mismatch"}}) {
    SECTION(m.what) {
      X509Ptr cert = ca.Sign(key.get(), m.cn, "serverAuth", m.san);
      HelloServer hello(cert.get(), key.get());
      ExpectRefused(CredentialsOf(m.dialled, hello.server.port(), ca.pem()), m.why, m.dialled);
      CHECK(hello.requests == 0);
    }
  }
  SECTION("a matching DNS entry passes") {
    X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "DNS:localhost");
    HelloServer hello(cert.get(), key.get());
    ExpectHello(CredentialsOf("localhost", hello.server.port(), ca.pem()));
  }
}

TEST_CASE("a client certificate from the kubeconfig is presented to the server") {
  Ca server_ca, client_ca;
  PkeyPtr server_key(EVP_EC_gen("P-256")), client_key(EVP_EC_gen("P-256"));
  X509Ptr server_cert = server_ca.Sign(server_key.get(), "api", "serverAuth", "IP:127.0.0.1");
  X509Ptr client_cert = client_ca.Sign(client_key.get(), "system:node:n1", "clientAuth", "");
  HelloServer hello(server_cert.get(), server_key.get(), client_ca.cert.get());

  ApiCredentials with = CredentialsOf("127.0.0.1", hello.server.port(), server_ca.pem());
  with.client_cert_pem = ToPem(client_cert.get());
  with.client_key_pem = KeyPem(client_key.get());
  ExpectHello(with);
  CHECK(hello.client_cn == "system:node:n1");

  auto without = Get(CredentialsOf("127.0.0.1", hello.server.port(), server_ca.pem()));
  REQUIRE_FALSE(without.ok());
  CHECK(without.status().code() == Status::kUnavailable);
  CHECK(hello.requests == 1);
}

TEST_CASE("TLS material that cannot be used is refused by Init, naming the endpoint") {
  Ca ca;
  PkeyPtr key(EVP_EC_gen("P-256")), other_key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "me", "clientAuth", "");
  auto init = [](const ApiCredentials& creds) {
    auto ep = ApiEndpoint::From(creds);
    REQUIRE(ep.ok());
    return ApiConnection(*ep).Init();
  };
  const std::string pair_error =
      "the client certificate and key are not valid PEM, or do not belong together (https://127.0.0.1:1 (test))";
  ApiCredentials mismatched = CredentialsOf("127.0.0.1", 1, ca.pem());
  mismatched.client_cert_pem = ToPem(cert.get());
  mismatched.client_key_pem = KeyPem(other_key.get());
  Status s = init(mismatched);
  CHECK(s.code() == Status::kInvalid);
  CHECK(s.message() == pair_error);
  ApiCredentials no_key = CredentialsOf("127.0.0.1", 1, ca.pem());
  no_key.client_cert_pem = ToPem(cert.get());
  CHECK(init(no_key).message() == pair_error);
  ApiCredentials bad_cert = no_key;
  const std::string not_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  bad_cert.client_cert_pem = not_pem;
  bad_cert.client_key_pem = KeyPem(key.get());
  CHECK(init(bad_cert).message() == pair_error);
  ApiCredentials bad_ca = CredentialsOf("127.0.0.1", 1, not_pem);
  s = init(bad_ca);
  CHECK(s.code() == Status::kInvalid);
  CHECK(s.message() == "the CA certificate is not valid PEM (https://127.0.0.1:1 (test))");
  ApiCredentials good = mismatched;
  good.client_key_pem = KeyPem(key.get());
  CHECK(init(good).ok());
}

TEST_CASE("a refused server certificate is explained in the request's error") {
  Ca ca, other("other-ca");
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1");
  HelloServer hello(cert.get(), key.get());
  ApiCredentials creds = CredentialsOf("127.0.0.1", hello.server.port(), other.pem());
  creds.source = "kubeconfig /k (context c)";
  auto r = Get(creds);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::kUnavailable);
  CHECK(r.status().message() ==
        "GET /version: the server's TLS certificate was refused: unable to get local issuer certificate (it must be "
        "signed by the configured CA and name 127.0.0.1) talking to https://127.0.0.1:" +
            std::to_string(hello.server.port()) + " (kubeconfig /k (context c))");
  CHECK(hello.requests == 0);
}
