// The bodies of scripted_tls_server.hpp (the contracts are there).
#include "test/support/scripted_tls_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

ScriptedServer::ScriptedServer(Script script) : script_(std::move(script)) {
  auto pki = fake::MakeTestPki();
  REQUIRE(pki.ok());
  ca_pem_ = pki->ca_pem;
  Listen({pki->server_cert.get(), pki->server_key.get(), nullptr});
}

ScriptedServer::~ScriptedServer() {
  stopping_ = true;
  ::shutdown(fd_, SHUT_RDWR);
  thread_.join();
  ::close(fd_);
  SSL_CTX_free(ctx_);
}

ApiCredentials ScriptedServer::Credentials() const {
  ApiCredentials c;
  c.server = "https://127.0.0.1:" + std::to_string(port_);
  c.ca_pem = ca_pem_;
  c.source = "test";
  return c;
}

void ScriptedServer::Listen(const Identity& id) {
  ctx_ = SSL_CTX_new(TLS_server_method());
  REQUIRE(SSL_CTX_use_certificate(ctx_, id.cert) == 1);
  REQUIRE(SSL_CTX_use_PrivateKey(ctx_, id.key) == 1);
  if (id.client_ca != nullptr) {
    REQUIRE(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), id.client_ca) == 1);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  REQUIRE(::listen(fd_, 8) == 0);
  thread_ = std::thread([this] { Serve(); });
}

void ScriptedServer::Serve() {
  while (!stopping_) {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    ++accepted_;
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
      ++handshakes_;
      script_(ssl);
    }
    SSL_free(ssl);
    ::close(c);
  }
}

