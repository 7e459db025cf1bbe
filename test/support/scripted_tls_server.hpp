// A TLS server on 127.0.0.1 for the client's tests: it hands each accepted connection to a
// script that reads and writes raw records, one connection at a time.
#pragma once
#include <openssl/types.h>

#include <atomic>
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
  explicit ScriptedServer(Script script);
  ScriptedServer(Script script, const Identity& id) : script_(std::move(script)) { Listen(id); }
  ~ScriptedServer();

  int port() const { return port_; }
  int accepted() const { return accepted_; }
  int handshakes() const { return handshakes_; }  // connections that completed the handshake
  const std::string& ca_pem() const { return ca_pem_; }

  // Credentials for https://127.0.0.1:port that trust this server's test CA.
  ApiCredentials Credentials() const;

 private:
  void Listen(const Identity& id);

  void Serve();

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
