// TlsContext and TlsSocket (through HttpsClient): whom the client trusts (the configured CA, the server's name or
// address), the client certificate it presents, and the messages a user sees when TLS fails.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "k8s.hpp"
#include "test/fake_tls.hpp"
#include "test/scripted_tls_server.hpp"

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

std::unique_ptr<HttpsClient> ClientOf(const TlsContext::Options& o, const std::string& host, int port) {
  auto tls = TlsContext::Make(o);
  REQUIRE(tls.ok());
  auto cli = std::make_unique<HttpsClient>(*tls, host, port);
  cli->set_connect_timeout(std::chrono::seconds(5));
  return cli;
}

// GET /version through `cli`: kNone, or what went wrong.
HttpsClient::Error Get(HttpsClient& cli, HttpsClient::Response* out = nullptr) {
  HttpsClient::Response r;
  return cli.Send({"GET", "/version", "", "", "", std::chrono::seconds(5)}, out != nullptr ? out : &r);
}

// A request through `cli` that must reach the HelloServer.
void ExpectHello(HttpsClient& cli) {
  HttpsClient::Response r;
  REQUIRE(Get(cli, &r) == HttpsClient::Error::kNone);
  CHECK(r.body == "hello");
}

// The endpoint of https://127.0.0.1:port that trusts ca_pem.
std::shared_ptr<ApiEndpoint> EndpointOf(int port, const std::string& ca_pem, const std::string& source) {
  ApiCredentials creds;
  creds.server = "https://127.0.0.1:" + std::to_string(port);
  creds.ca_pem = ca_pem;
  creds.source = source;
  auto ep = ApiEndpoint::From(creds);
  REQUIRE(ep.ok());
  return *ep;
}

}  // namespace

TEST_CASE("the server's certificate must chain to the configured CA") {
  Ca ca, other("other-ca");
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1,DNS:localhost");
  HelloServer hello(cert.get(), key.get());

  ExpectHello(*ClientOf({ca.pem(), "", "", true}, "127.0.0.1", hello.server.port()));

  auto wrong = ClientOf({other.pem(), "", "", true}, "127.0.0.1", hello.server.port());
  CHECK(Get(*wrong) == HttpsClient::Error::kVerify);
  CHECK(wrong->verify_result() == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  CHECK(hello.requests == 1);  // the refused client sent nothing

  SECTION("unless verification is off (insecure-skip-tls-verify)") {
    ExpectHello(*ClientOf({"", "", "", false}, "127.0.0.1", hello.server.port()));
  }
}

TEST_CASE("without a CA in the kubeconfig, the system's CAs are trusted") {
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
  auto trusted = ClientOf({"", "", "", true}, "127.0.0.1", hello.server.port());
  std::ofstream(bundle) << other.pem();  // read when the context was made, not at the handshake
  CHECK(Get(*trusted) == HttpsClient::Error::kNone);
  trusted.reset();  // the server serves one connection at a time
  trust(other.pem());
  CHECK(Get(*ClientOf({"", "", "", true}, "127.0.0.1", hello.server.port())) == HttpsClient::Error::kVerify);
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
    long verify_result;
  };
  for (const Mismatch& m : {Mismatch{"an IP address is checked against the IP entries", "127.0.0.1",
                                     "DNS:api.example,IP:10.0.0.1", "127.0.0.1", X509_V_ERR_IP_ADDRESS_MISMATCH},
                            Mismatch{"a host name is checked against the DNS entries, not the common name", "localhost",
                                     "DNS:api.example,IP:127.0.0.1", "localhost", X509_V_ERR_HOSTNAME_MISMATCH}}) {
    SECTION(m.what) {
      X509Ptr cert = ca.Sign(key.get(), m.cn, "serverAuth", m.san);
      HelloServer hello(cert.get(), key.get());
      auto cli = ClientOf({ca.pem(), "", "", true}, m.dialled, hello.server.port());
      CHECK(Get(*cli) == HttpsClient::Error::kVerify);
      CHECK(cli->verify_result() == m.verify_result);
      CHECK(hello.requests == 0);
    }
  }
  SECTION("a matching DNS entry passes") {
    X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "DNS:localhost");
    HelloServer hello(cert.get(), key.get());
    ExpectHello(*ClientOf({ca.pem(), "", "", true}, "localhost", hello.server.port()));
  }
}

TEST_CASE("a client certificate from the kubeconfig is presented to the server") {
  Ca server_ca, client_ca;
  PkeyPtr server_key(EVP_EC_gen("P-256")), client_key(EVP_EC_gen("P-256"));
  X509Ptr server_cert = server_ca.Sign(server_key.get(), "api", "serverAuth", "IP:127.0.0.1");
  X509Ptr client_cert = client_ca.Sign(client_key.get(), "system:node:n1", "clientAuth", "");
  HelloServer hello(server_cert.get(), server_key.get(), client_ca.cert.get());

  auto with = ClientOf({server_ca.pem(), ToPem(client_cert.get()), KeyPem(client_key.get()), true}, "127.0.0.1",
                       hello.server.port());
  REQUIRE(Get(*with) == HttpsClient::Error::kNone);
  CHECK(hello.client_cn == "system:node:n1");
  with.reset();  // the server serves one connection at a time

  auto without = ClientOf({server_ca.pem(), "", "", true}, "127.0.0.1", hello.server.port());
  CHECK(Get(*without) != HttpsClient::Error::kNone);
  CHECK(hello.requests == 1);
}

TEST_CASE("TLS material that cannot be used is refused when the context is made") {
  Ca ca;
  PkeyPtr key(EVP_EC_gen("P-256")), other_key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "me", "clientAuth", "");
  auto mismatched = TlsContext::Make({ca.pem(), ToPem(cert.get()), KeyPem(other_key.get()), true});
  REQUIRE_FALSE(mismatched.ok());
  CHECK(mismatched.status().message() == "the client certificate and key are not valid PEM, or do not belong together");
  auto no_key = TlsContext::Make({ca.pem(), ToPem(cert.get()), "", true});
  CHECK_FALSE(no_key.ok());
  auto bad_ca = TlsContext::Make({"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", "", "", true});
  REQUIRE_FALSE(bad_ca.ok());
  CHECK(bad_ca.status().message() == "the CA certificate is not valid PEM");
}

TEST_CASE("a refused server certificate is explained in the request's error") {
  Ca ca, other("other-ca");
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1");
  HelloServer hello(cert.get(), key.get());
  auto ep = EndpointOf(hello.server.port(), other.pem(), "kubeconfig /k (context c)");
  ApiConnection conn(ep);
  REQUIRE(conn.Init().ok());
  auto r = conn.Request("GET", "/version");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::kUnavailable);
  CHECK(r.status().message() ==
        "GET /version: the server's TLS certificate was refused: unable to get local issuer certificate (it must be "
        "signed by the configured CA and name 127.0.0.1) talking to https://127.0.0.1:" +
            std::to_string(hello.server.port()) + " (kubeconfig /k (context c))");
  CHECK(hello.requests == 0);
}

TEST_CASE("every connection to one server shares one TLS context") {
  Ca ca;
  PkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert = ca.Sign(key.get(), "api", "serverAuth", "IP:127.0.0.1");
  HelloServer hello(cert.get(), key.get());
  auto ep = EndpointOf(hello.server.port(), ca.pem(), "test");
  auto a = ep->Tls(), b = ep->Tls();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->get() == b->get());
  for (const char* path : {"/a", "/b"}) {  // one after the other: the server serves one connection at a time
    ApiConnection conn(ep);
    REQUIRE(conn.Init().ok());
    CHECK(conn.Request("GET", path).ok());
  }
  CHECK(hello.requests == 2);
}
