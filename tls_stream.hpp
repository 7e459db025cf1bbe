// httplib's stream over a TLS connection, buffered, for the client (tls_client.hpp).
//
// httplib 0.11's own SSLSocketStream reads a response's or request's header lines one byte per
// SSL_read, calls select() before every read, and select() plus a MSG_PEEK recv() before every
// write; OpenSSL then makes two read() calls per record (header, body). make bench counted 28
// select calls and 16 reads per provisioned volume in the provisioner. This stream reads what
// has arrived into a buffer (one read), and sends a header block together with the body that
// follows it as one record (one write).
//
// Time limits: reads block, bounded by the socket's SO_RCVTIMEO (a poll() before each read cost
// as much as the read); writes are bounded by SO_SNDTIMEO. httplib sets both when it connects
// or accepts; TlsClient keeps SO_RCVTIMEO equal to the request's read timeout. Another
// thread ends a blocked read with shutdown(SHUT_RD) (httplib's stop() does SHUT_RDWR).
#pragma once
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include <httplib.h>

class TlsStream final : public httplib::Stream {
 public:
  TlsStream(int sock, SSL* ssl) : sock_(sock), ssl_(ssl) {}
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  bool is_readable() const override { return pos_ < len_ || SSL_has_pending(ssl_) == 1; }
  bool is_writable() const override { return !failed_; }

  ssize_t read(char* ptr, size_t size) override {
    if (!Flush()) return -1;  // a request is all written before its answer is awaited
    if (pos_ == len_ && !Fill()) return -1;
    size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  // httplib writes a message as its header block, then its body. A header block that no
  // chunked body follows is held and goes out with the next write, or at Flush().
  ssize_t write(const char* ptr, size_t size) override {
    if (failed_) return -1;
    std::string_view data(ptr, size);
    if (held_.empty() && IsPlainHeaderBlock(data)) {
      held_.assign(data);
      return static_cast<ssize_t>(size);
    }
    bool ok;
    if (held_.empty()) {
      ok = Send(ptr, size);
    } else {
      held_.append(data);
      ok = Flush();
    }
    return ok ? static_cast<ssize_t>(size) : -1;
  }

  // Sends a held header block. False once a write has failed.
  bool Flush() {
    if (held_.empty()) return !failed_;
    bool ok = Send(held_.data(), held_.size());
    held_.clear();
    return ok;
  }

  // httplib asks for both addresses on every request: looked up once per stream.
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    if (remote_port_ < 0) httplib::detail::get_remote_ip_and_port(sock_, remote_ip_, remote_port_);
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    if (local_port_ < 0) httplib::detail::get_local_ip_and_port(sock_, local_ip_, local_port_);
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return sock_; }

 private:
  // "HTTP/1.1 200 OK\r\n...\r\n\r\n" or "GET /x HTTP/1.1\r\n...\r\n\r\n", not chunked.
  static bool IsPlainHeaderBlock(std::string_view d) {
    if (d.size() < 4 || d.substr(d.size() - 4) != "\r\n\r\n") return false;
    size_t eol = d.find("\r\n");
    std::string_view first = d.substr(0, eol);
    bool start = first.rfind("HTTP/", 0) == 0 || (first.size() > 9 && first.substr(first.size() - 9, 6) == " HTTP/");
    return start && d.find("Transfer-Encoding: chunked") == std::string_view::npos;
  }

  // Reads what has arrived, waiting for it if need be (up to SO_RCVTIMEO). False on a timeout,
  // a closed connection or an error.
  bool Fill() {
    pos_ = len_ = 0;
    size_t n = 0;
    while (SSL_read_ex(ssl_, buf_, sizeof buf_, &n) != 1) {
      if (SSL_get_error(ssl_, 0) != SSL_ERROR_WANT_READ || errno != EINTR) return false;  // EAGAIN: timed out
    }
    len_ = n;
    return true;
  }

  bool Send(const char* p, size_t n) {
    size_t written = 0;
    if (n > 0 && SSL_write_ex(ssl_, p, n, &written) != 1) failed_ = true;
    return !failed_;
  }

  int sock_;
  SSL* ssl_;
  char buf_[16384];
  size_t pos_ = 0, len_ = 0;
  std::string held_;
  bool failed_ = false;
  mutable std::string remote_ip_, local_ip_;
  mutable int remote_port_ = -1, local_port_ = -1;
};
