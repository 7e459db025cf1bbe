// TLS to the API server: one context shared by every connection to a server, and the
// connection itself (dial with a time limit, handshake, OpenSSL's checks of the server's
// certificate, whole reads and writes). HTTP on top of it is http_client.hpp.
//
// One SSL_CTX per server, not per connection: OpenSSL 3 gives each context its own cipher,
// group and signature-algorithm tables, CA store and session cache, 15 KiB or more, and the
// provisioner keeps eight connections (watches, workers, events).
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "status.hpp"

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

// What can go wrong in talking to the server, from dialling to reading the answer (the TLS
// connection's errors, and kProtocol for HTTP's, http_client.hpp).
enum class TransportError {
  kNone,
  kResolve,    // the host name did not resolve
  kConnect,    // refused, unreachable, or no answer within the connect timeout
  kHandshake,  // the TLS handshake failed
  kVerify,     // the server's certificate was refused (see TlsSocket::verify_result())
  kWrite,      // the connection broke (or stalled) while sending
  kTimeout,    // nothing arrived within the read timeout
  kClosed,     // the connection ended before the answer was complete
  kProtocol,   // the answer is not HTTP/1.x as the client reads it
  kCanceled,   // Abort() / Stop() was called, or a callback asked to stop
};

// One TLS connection to a server, used by one thread at a time; Abort() may be called from
// any other thread. Reads block up to the read timeout (the socket's SO_RCVTIMEO: a poll()
// before each read cost as much as the read), writes up to the write timeout (SO_SNDTIMEO).
// With OpenSSL's read-ahead one read() takes in what has arrived.
class TlsSocket {
 public:
  using Error = TransportError;

  TlsSocket() = default;
  ~TlsSocket() { Close(); }
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  // Dials host:port, then shakes hands and checks the server's certificate: it must chain to
  // the context's CAs and name `host` (an IP address is checked against the IP entries).
  Error Open(const TlsContext& tls, const std::string& host, int port, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds write_timeout) {
    Close();
    verify_result_ = X509_V_OK;
    detail_.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      aborted_ = false;
    }
    if (Error e = Dial(host, port, connect_timeout); e != Error::kNone) return e;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // a request is one write: no delayed ACKs
    SetTimeout(SO_SNDTIMEO, write_timeout);
    SetTimeout(SO_RCVTIMEO, connect_timeout);  // bounds the handshake
    read_timeout_ = connect_timeout;
    ssl_ = SSL_new(tls.ctx());
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) return Fail(Error::kHandshake, "cannot set up TLS");
    in6_addr ip{};
    bool is_ip = inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
    if (!is_ip) SSL_set_tlsext_host_name(ssl_, host.c_str());  // SNI names hosts, never addresses
    if (tls.verify()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1
                : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0) != 1)
        return Fail(Error::kHandshake, "cannot check the name \"" + host + "\"");
    }
    int rc = SSL_connect(ssl_);
    int err = errno;
    verify_result_ = SSL_get_verify_result(ssl_);
    ERR_clear_error();
    if (rc == 1) return Error::kNone;
    if (aborted_) return Fail(Error::kCanceled, "");
    if (verify_result_ != X509_V_OK) return Fail(Error::kVerify, X509_verify_cert_error_string(verify_result_));
    return Fail(Error::kHandshake, err == EAGAIN || err == EWOULDBLOCK ? "no answer within the connect timeout"
                                   : err != 0                          ? std::strerror(err)
                                                                       : "refused by the server");
  }

  bool is_open() const { return ssl_ != nullptr; }

  // True if an open connection may carry another request: no byte and no close is waiting on
  // it (after a complete answer nothing should arrive but the server's close). One recv().
  bool Reusable() const { return ssl_ != nullptr && !aborted_ && SSL_pending(ssl_) == 0 && NothingWaiting(fd_); }

  // How long a read waits for data; set on the socket only when it changes.
  void SetReadTimeout(std::chrono::milliseconds t) {
    if (t == read_timeout_ || fd_ < 0) return;
    SetTimeout(SO_RCVTIMEO, t);
    read_timeout_ = t;
  }

  // Sends all of p[0, n) (as one TLS record, up to 16 KiB).
  Error Write(const char* p, size_t n) {
    size_t written = 0;
    if (SSL_write_ex(ssl_, p, n, &written) == 1) return Error::kNone;
    int err = errno;
    ERR_clear_error();
    if (aborted_) return Error::kCanceled;
    detail_ = err == EAGAIN || err == EWOULDBLOCK ? "the server took no data within the write timeout"
              : err != 0                          ? std::strerror(err)
                                                  : "the connection broke";
    return Error::kWrite;
  }

  // Reads what has arrived, up to `cap` bytes, waiting for it up to the read timeout.
  Error Read(char* buf, size_t cap, size_t* got) {
    while (true) {
      if (SSL_read_ex(ssl_, buf, cap, got) == 1) return Error::kNone;
      int err = errno;
      int e = SSL_get_error(ssl_, 0);
      ERR_clear_error();
      if (aborted_) return Error::kCanceled;
      if (e == SSL_ERROR_WANT_READ && err == EINTR) continue;
      if (e == SSL_ERROR_WANT_READ || ((e == SSL_ERROR_SYSCALL) && (err == EAGAIN || err == EWOULDBLOCK)))
        return Error::kTimeout;
      return Error::kClosed;  // a close_notify, an end without one, a reset, a broken record
    }
  }

  // Ends the connection (telling the server, if it is still whole).
  void Close() {
    int fd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fd = fd_;
      fd_ = -1;
    }
    if (ssl_ != nullptr) {
      if (!aborted_ && fd >= 0 && NothingWaiting(fd)) SSL_shutdown(ssl_);
      SSL_free(ssl_);
      ssl_ = nullptr;
      ERR_clear_error();
    }
    if (fd >= 0) ::close(fd);
  }

  // From any thread: makes a dial, read or write in progress fail with kCanceled now. The
  // connection is then dead; the next Open() makes a new one.
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }

  // The certificate check of the last handshake (X509_V_OK when it passed or was off).
  long verify_result() const { return verify_result_; }
  // What went wrong, in words, for the last error ("Connection refused").
  const std::string& detail() const { return detail_; }

 private:
  Error Dial(const std::string& host, int port, std::chrono::milliseconds timeout) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* list = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list); rc != 0) {
      detail_ = ::gai_strerror(rc);
      return Error::kResolve;
    }
    Error result = Error::kConnect;
    for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) {
        detail_ = std::strerror(errno);
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        fd_ = fd;
        if (aborted_) ::shutdown(fd, SHUT_RDWR);
      }
      if (Connect(fd, a, timeout)) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        result = Error::kNone;
        break;
      }
      Close();
      if (aborted_) {
        result = Error::kCanceled;
        break;
      }
    }
    ::freeaddrinfo(list);
    return result;
  }

  bool Connect(int fd, const addrinfo* a, std::chrono::milliseconds timeout) {
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS) {
      detail_ = std::strerror(errno);
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    int rc;
    while ((rc = ::poll(&p, 1, static_cast<int>(timeout.count()))) < 0 && errno == EINTR) {
    }
    if (rc == 0) {
      detail_ = "no answer within " + std::to_string(timeout.count() / 1000) + " s";
      return false;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) detail_ = std::strerror(err);
    return err == 0;
  }

  void SetTimeout(int which, std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>(t.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, which, &tv, sizeof tv);
  }

  static bool NothingWaiting(int fd) {
    char c;
    ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  Error Fail(Error e, std::string detail) {
    detail_ = std::move(detail);
    Close();
    return e;
  }

  mutable std::mutex mu_;  // guards fd_ against Abort() while it is closed and reused
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::atomic<bool> aborted_{false};
  std::chrono::milliseconds read_timeout_{-1};
  long verify_result_ = X509_V_OK;
  std::string detail_;
};
