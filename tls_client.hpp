// The HTTPS client of k8s.hpp: httplib's HTTP client over our own TLS, with one TLS context
// shared by every connection to a server.
//
// httplib::SSLClient makes an SSL_CTX per client, and OpenSSL 3 gives each its own cipher,
// group and signature-algorithm tables, CA store and session cache: 15 KiB or more per
// connection, with eight connections (watches, workers, events). TlsContext is made once per
// API server; TlsClient is httplib's plain client whose connections it turns into TLS
// connections, sends through a TlsStream (tls_stream.hpp), and verifies with OpenSSL's own
// checks: chain to the configured CA, then the server's name or IP address.
#pragma once
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <memory>
#include <string>

#include <httplib.h>

#include "status.hpp"
#include "tls_stream.hpp"

// What every connection to one server shares: the SSL_CTX with the trusted CAs (or none, when
// verification is off) and the client certificate. Immutable once made; thread-safe.
class TlsContext {
 public:
  struct Options {
    std::string ca_pem;                           // PEM bundle; "" = the system's CAs
    std::string client_cert_pem, client_key_pem;  // both or neither
    bool verify = true;                           // false: insecure-skip-tls-verify
  };

  // Errors (Invalid) name what could not be used: a CA or client certificate or key that is not
  // PEM, a key that does not belong to its certificate.
  static Result<std::shared_ptr<const TlsContext>> Make(const Options& o) {
    std::shared_ptr<TlsContext> t(new TlsContext(SSL_CTX_new(TLS_client_method())));
    if (t->ctx_ == nullptr) return Status::Error("cannot create a TLS context");
    SSL_CTX_set_min_proto_version(t->ctx_, TLS1_2_VERSION);
    // An idle connection (a watch between events) keeps no record buffers.
    SSL_CTX_set_mode(t->ctx_, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_read_ahead(t->ctx_, 1);  // one read() for what has arrived
    if (!o.client_cert_pem.empty() || !o.client_key_pem.empty()) {
      X509* cert = ReadPem<X509>(o.client_cert_pem, PEM_read_bio_X509);
      EVP_PKEY* key = ReadPem<EVP_PKEY>(o.client_key_pem, PEM_read_bio_PrivateKey);
      bool ok = cert != nullptr && key != nullptr && SSL_CTX_use_certificate(t->ctx_, cert) == 1 &&
                SSL_CTX_use_PrivateKey(t->ctx_, key) == 1 && SSL_CTX_check_private_key(t->ctx_) == 1;
      X509_free(cert);
      EVP_PKEY_free(key);
      ERR_clear_error();
      if (!ok) return Status::Invalid("the client certificate and key are not valid PEM, or do not belong together");
    }
    if (!o.verify) return std::shared_ptr<const TlsContext>(t);
    SSL_CTX_set_verify(t->ctx_, SSL_VERIFY_PEER, nullptr);
    if (o.ca_pem.empty()) {
      SSL_CTX_set_default_verify_paths(t->ctx_);
    } else if (AddCas(SSL_CTX_get_cert_store(t->ctx_), o.ca_pem) == 0) {
      return Status::Invalid("the CA certificate is not valid PEM");
    }
    t->verify_ = true;
    return std::shared_ptr<const TlsContext>(t);
  }

  ~TlsContext() { SSL_CTX_free(ctx_); }
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* ctx() const { return ctx_; }
  bool verify() const { return verify_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}

  // Adds every certificate of a PEM bundle to the store; returns how many were added.
  static int AddCas(X509_STORE* store, const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    int n = 0;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      // Decodes and caches the certificate's extensions now, while one thread owns it: the
      // handshakes of several connections read them at once, and OpenSSL 3.0 fills the cache
      // on first use, racing with a reader of another connection (ThreadSanitizer saw it).
      X509_check_purpose(cert, -1, 0);
      if (X509_STORE_add_cert(store, cert) == 1) ++n;
      X509_free(cert);
    }
    BIO_free(bio);
    ERR_clear_error();  // the end of the bundle reads as an error
    return n;
  }

  template <typename T, typename Read>
  static T* ReadPem(const std::string& pem, Read read) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    pem_password_cb* no_password = [](char*, int, int, void*) { return 0; };  // never prompt
    T* out = read(bio, nullptr, no_password, nullptr);
    BIO_free(bio);
    return out;
  }

  SSL_CTX* ctx_;
  bool verify_ = false;
};

// httplib's client over TLS connections of a shared TlsContext. Like httplib's clients, one
// request at a time; stop() may be called from another thread.
class TlsClient final : public httplib::ClientImpl {
 public:
  TlsClient(std::shared_ptr<const TlsContext> tls, const std::string& host, int port)
      : httplib::ClientImpl(host, port), tls_(std::move(tls)) {}
  ~TlsClient() override {
    std::lock_guard<std::mutex> guard(socket_mutex_);
    FreeSsl(socket_, false);  // the base destructor closes the socket, and wants no SSL left
  }

  // The verification result of the last handshake (X509_V_OK = 0 when it passed or was off).
  long verify_result() const { return verify_result_; }

 private:
  bool create_and_connect_socket(Socket& socket, httplib::Error& error) override {
    if (!httplib::ClientImpl::create_and_connect_socket(socket, error)) return false;
    SSL* ssl = SSL_new(tls_->ctx());
    if (ssl == nullptr || SSL_set_fd(ssl, socket.sock) != 1) {
      SSL_free(ssl);
      error = httplib::Error::SSLConnection;
      return false;
    }
    socket.ssl = ssl;
    in6_addr ip{};
    bool is_ip = inet_pton(AF_INET, host_.c_str(), &ip) == 1 || inet_pton(AF_INET6, host_.c_str(), &ip) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(ssl, host_.c_str());  // SNI names hosts, never addresses
    if (tls_->verify()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host_.c_str()) != 1
                : X509_VERIFY_PARAM_set1_host(param, host_.c_str(), 0) != 1) {
        FreeSsl(socket, false);
        error = httplib::Error::SSLConnection;
        return false;
      }
    }
    // The handshake is bounded by the connection timeout, the requests by their read timeout.
    timeval tv{static_cast<time_t>(connection_timeout_sec_), static_cast<suseconds_t>(connection_timeout_usec_)};
    ::setsockopt(socket.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    timeout_sock_ = INVALID_SOCKET;
    int rc = SSL_connect(ssl);
    verify_result_ = SSL_get_verify_result(ssl);
    ERR_clear_error();
    if (rc != 1) {
      FreeSsl(socket, false);
      error = verify_result_ != X509_V_OK ? httplib::Error::SSLServerVerification : httplib::Error::SSLConnection;
      return false;
    }
    return true;
  }

  void shutdown_ssl(Socket& socket, bool gracefully) override { FreeSsl(socket, gracefully); }

  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream&)> callback) override {
    // The read timeout can change between requests on one connection (a watch, a write).
    timeval tv{static_cast<time_t>(read_timeout_sec_), static_cast<suseconds_t>(read_timeout_usec_)};
    if (socket.sock != timeout_sock_ || tv.tv_sec != timeout_.tv_sec || tv.tv_usec != timeout_.tv_usec) {
      if (::setsockopt(socket.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) return false;
      timeout_sock_ = socket.sock;
      timeout_ = tv;
    }
    TlsStream strm(socket.sock, socket.ssl);
    bool ok = callback(strm);
    return strm.Flush() && ok;
  }

  static void FreeSsl(Socket& socket, bool gracefully) {
    if (socket.ssl == nullptr) return;
    if (gracefully) SSL_shutdown(socket.ssl);
    SSL_free(socket.ssl);
    socket.ssl = nullptr;
    ERR_clear_error();
  }

  std::shared_ptr<const TlsContext> tls_;
  long verify_result_ = X509_V_OK;
  socket_t timeout_sock_ = INVALID_SOCKET;  // the socket whose SO_RCVTIMEO is timeout_
  timeval timeout_{};
};
