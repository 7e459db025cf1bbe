// A TLS server on 127.0.0.1 for the client's tests: it hands each accepted connection to a
// script that reads and writes raw records, one connection at a time.
#pragma once
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

#include "test/fake/fake_tls.hpp"
#include "kube/kubeconfig.hpp"

class ScriptedServer {
 public:
  using Script = std::function<void(SSL*)>;

  // What the server presents, and whom it asks for a client certificate (no one when null).
  struct Identity {
    X509* cert = nullptr;
    EVP_PKEY* key = nullptr;
    X509* client_ca = nullptr;
  };

  // Serves with a fresh test PKI's server certificate (127.0.0.1, localhost).
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    auto pki = fake::MakeTestPki();
    REQUIRE(pki.ok());
    ca_pem_ = pki->ca_pem;
    Listen({pki->server_cert.get(), pki->server_key.get(), nullptr});
  }
  ScriptedServer(Script script, const Identity& id) : script_(std::move(script)) { Listen(id); }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    SSL_CTX_free(ctx_);
  }

  int port() const { return port_; }
  int accepted() const { return accepted_; }
  int handshakes() const { return handshakes_; }  // connections that completed the handshake
  const std::string& ca_pem() const { return ca_pem_; }

  // Credentials for https://127.0.0.1:port that trust this server's test CA.
  ApiCredentials Credentials() const {
    ApiCredentials c;
    c.server = "https://127.0.0.1:" + std::to_string(port_);
    c.ca_pem = ca_pem_;
    c.source = "test";
    return c;
  }

 private:
  void Listen(const Identity& id) {
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

  void Serve() {
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

  Script script_;
  SSL_CTX* ctx_ = nullptr;
  std::string ca_pem_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> handshakes_{0};
};
