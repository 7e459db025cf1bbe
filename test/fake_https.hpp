// The fake API server's HTTPS transport: httplib::SSLServer with its per-connection loop
// replaced; request parsing, routing and response writing stay httplib's (Server::process_request).
//
// httplib 0.11 serves a connection through its SSLSocketStream (see tls_stream.hpp for its
// costs) and waits for a keep-alive connection's next request by polling every 11 ms (select
// with a 10 ms timeout, then a 1 ms sleep, which also delays a request that arrives meanwhile).
// In make bench that made the fake, not the provisioner, the bottleneck. Here a connection is
// served through a TlsStream and waits for its next request in a blocking read, bounded by the
// read timeout (SO_RCVTIMEO), that Shutdown() ends.
#pragma once
#include <sys/socket.h>

#include <mutex>
#include <set>

#include "tls_stream.hpp"

namespace fake {

class HttpsServer final : public httplib::SSLServer {
 public:
  HttpsServer(X509* cert, EVP_PKEY* key) : httplib::SSLServer(cert, key) {
    if (ssl_context() != nullptr) SSL_CTX_set_read_ahead(ssl_context(), 1);  // one read() for what has arrived
  }

  // Ends every connection's wait for its next request (answers being written still go out);
  // then stop() can join the threads.
  void Shutdown() {
    std::lock_guard<std::mutex> l(open_mu_);
    shut_down_ = true;
    for (socket_t s : open_) ::shutdown(s, SHUT_RD);
  }

 private:
  bool process_and_close_socket(socket_t sock) override {
    {
      std::lock_guard<std::mutex> l(open_mu_);
      open_.insert(sock);
      if (shut_down_) ::shutdown(sock, SHUT_RD);
    }
    SSL* ssl = httplib::detail::ssl_new(
        sock, ssl_context(), ctx_mu_,
        [&](SSL* s) {
          return httplib::detail::ssl_connect_or_accept_nonblocking(sock, s, SSL_accept, read_timeout_sec_,
                                                                    read_timeout_usec_);
        },
        [](SSL*) { return true; });
    bool ok = false;
    if (ssl != nullptr) {
      TlsStream strm(sock, ssl);
      for (size_t count = keep_alive_max_count_; count > 0 && svr_sock_ != INVALID_SOCKET; --count) {
        if (!strm.WaitForData()) break;
        bool closed = false;
        ok = process_request(strm, count == 1, closed, [ssl](httplib::Request& req) { req.ssl = ssl; });
        ok = strm.Flush() && ok;
        if (!ok || closed) break;
      }
      httplib::detail::ssl_delete(ctx_mu_, ssl, ok);
    }
    {
      std::lock_guard<std::mutex> l(open_mu_);  // before close: Shutdown never sees a reused number
      open_.erase(sock);
    }
    httplib::detail::shutdown_socket(sock);
    httplib::detail::close_socket(sock);
    return ok;
  }

  std::mutex ctx_mu_;
  std::mutex open_mu_;
  std::set<socket_t> open_;  // connections being served
  bool shut_down_ = false;
};

}  // namespace fake
