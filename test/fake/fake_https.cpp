// The bodies of fake_https.hpp (the contracts are there).
#include "test/fake/fake_https.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <httplib.h>

namespace fake {

void AppendResponse(std::string& out, const httplib::Response& res) {
  out.append("HTTP/1.1 ").append(std::to_string(res.status)).append(" ").append(httplib::detail::status_message(res.status));
  out.append("\r\n");
  for (const auto& [name, value] : res.headers) out.append(name).append(": ").append(value).append("\r\n");
  out.append("Content-Length: ").append(std::to_string(res.body.size())).append("\r\n\r\n").append(res.body);
}

void AppendChunk(std::string& out, std::string_view data) {
  char size[20];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
}

namespace https_detail {

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

Parse Dechunk(std::string_view in, size_t max, std::string& body, size_t& used) {
  size_t pos = 0;
  body.clear();
  while (true) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return Parse::kIncomplete;
    size_t size = 0;
    size_t i = pos;
    for (; i < eol && std::isxdigit(static_cast<unsigned char>(in[i])); ++i) {
      if (size > (max >> 4)) return Parse::kTooLarge;
      size = size * 16 + static_cast<size_t>(std::isdigit(static_cast<unsigned char>(in[i])) ? in[i] - '0' : (in[i] | 0x20) - 'a' + 10);
    }
    if (i == pos || (i < eol && in[i] != ';')) return Parse::kBad;  // a size, then maybe extensions
    pos = eol + 2;
    if (size == 0) {  // trailers until an empty line
      while (true) {
        eol = in.find("\r\n", pos);
        if (eol == std::string_view::npos) return Parse::kIncomplete;
        bool empty = eol == pos;
        pos = eol + 2;
        if (empty) break;
      }
      used = pos;
      return Parse::kOk;
    }
    if (body.size() + size > max) return Parse::kTooLarge;
    if (in.size() < pos + size + 2) return Parse::kIncomplete;
    if (in.substr(pos + size, 2) != "\r\n") return Parse::kBad;
    body.append(in.substr(pos, size));
    pos += size + 2;
  }
}

void SetTarget(httplib::Request& req, std::string target) {
  req.target = std::move(target);
  size_t q = req.target.find('?');
  std::string_view path = std::string_view(req.target).substr(0, q);
  req.path = path.find('%') == std::string_view::npos ? std::string(path) : httplib::detail::decode_url(std::string(path), false);
  if (q != std::string::npos) httplib::detail::parse_query_text(req.target.substr(q + 1), req.params);
}

Parse ParseRequest(std::string_view in, size_t max_body, httplib::Request& req, size_t& used, bool& close) {
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return in.size() > (64 << 10) ? Parse::kTooLarge : Parse::kIncomplete;
  std::string_view head = in.substr(0, head_end);
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return Parse::kBad;
  req.method = std::string(line.substr(0, sp1));
  req.version = std::string(line.substr(sp2 + 1));
  if (req.version != "HTTP/1.1" && req.version != "HTTP/1.0") return Parse::kBad;
  SetTarget(req, std::string(line.substr(sp1 + 1, sp2 - sp1 - 1)));
  while (eol != std::string_view::npos) {
    size_t start = eol + 2;
    eol = head.find("\r\n", start);
    std::string_view h = head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return Parse::kBad;
    std::string_view name = h.substr(0, colon), value = h.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    req.headers.emplace(std::string(name), std::string(value));
  }
  const std::string length = req.get_header_value("Content-Length");  // names match in any case
  std::string conn = Lower(req.get_header_value("Connection"));
  close = req.version == "HTTP/1.0" ? conn.find("keep-alive") == std::string::npos : conn.find("close") != std::string::npos;
  size_t body_start = head_end + 4;
  if (Lower(req.get_header_value("Transfer-Encoding")) == "chunked") {
    size_t n = 0;
    Parse p = Dechunk(in.substr(body_start), max_body, req.body, n);
    if (p == Parse::kOk) used = body_start + n;
    return p;
  }
  size_t n = 0;
  for (char c : length) {
    if (c < '0' || c > '9') return Parse::kBad;
    n = n * 10 + static_cast<size_t>(c - '0');
    if (n > max_body) return Parse::kTooLarge;
  }
  if (in.size() < body_start + n) return Parse::kIncomplete;
  req.body = std::string(in.substr(body_start, n));
  used = body_start + n;
  return Parse::kOk;
}

}  // namespace https_detail

HttpsLoop::HttpsLoop(Handler handler, Background background, Options opts) : handler_(std::move(handler)),
                     background_(std::move(background)), opts_(opts) {}

HttpsLoop::~HttpsLoop() {
  while (!conns_.empty()) Close(*conns_.begin()->second, false);  // Close erases
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_})
    if (fd >= 0) ::close(fd);
}

Result<int> HttpsLoop::Listen(X509* cert, EVP_PKEY* key, int port) {
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (ctx_ == nullptr || SSL_CTX_use_certificate(ctx_, cert) != 1 || SSL_CTX_use_PrivateKey(ctx_, key) != 1)
    return Status::Error("TLS server setup failed");
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // The cipher the API server picks: Go's crypto/tls prefers AES-128-GCM on CPUs with AES
  // instructions (cipher_suites.go, cipherSuitesPreferenceOrder and defaultCipherSuitesTLS13),
  // and a server's order wins; OpenSSL's own default would pick AES-256-GCM.
  SSL_CTX_set_ciphersuites(ctx_, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  SSL_CTX_set_cipher_list(ctx_, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                                "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  SSL_CTX_set_options(ctx_, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx_, 1);  // one read() takes in whatever has arrived
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 1024) != 0 || getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return Status::Error("cannot bind 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno));
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status::Error(std::string("epoll setup failed: ") + std::strerror(errno));
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

void HttpsLoop::Run() {
  // A write to a client that went away fails with EPIPE, and OpenSSL writes with write(),
  // which also raises SIGPIPE: that stays blocked in this thread instead of ending the process.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  epoll_event events[64];
  int rounds = 0;  // of reading and answering since the last Finish
  int64_t work_start = 0;  // thread CPU time when the last round's work began
  while (!stop_.load()) {
    if (work_start > 0) Burn(ThreadCpuNs() - work_start);
    int n = epoll_wait(epoll_fd_, events, 64, rounds > 0 ? 0 : TimeoutMs());
    work_start = extra_work_.load() > 0 ? ThreadCpuNs() : 0;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof v) > 0) {
        }
      } else if (fd == listen_fd_) {
        Accept();
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        OnReady(*it->second, events[i].events);
      }
    }
    ServeAll(false);
    SendAll();
    if (reset_.exchange(false)) {
      while (!conns_.empty()) {
        Conn& c = *conns_.begin()->second;
        c.peer_closed = true;  // no close_notify
        Close(c, false);
      }
    }
    // As kube-apiserver's watch flushes only when no event is queued: while requests keep
    // coming, answer them first, so that a watch gets the events of several requests in one
    // write (and its client one wake-up).
    if (n > 0 && ++rounds < kRoundsPerFinish) continue;
    rounds = 0;
    Finish();
  }
  Finish();
  while (!conns_.empty()) Close(*conns_.begin()->second, true);
}

void HttpsLoop::Wake() {
  uint64_t one = 1;
  ssize_t r = ::write(wake_fd_, &one, sizeof one);
  (void)r;
}

void HttpsLoop::Stop() {
  stop_ = true;
  Wake();
}

void HttpsLoop::ResetConnections() {
  reset_ = true;
  Wake();
}

int HttpsLoop::TimeoutMs() const {
  auto next = Clock::time_point::max();
  for (const auto& [fd, c] : conns_) {
    next = std::min(next, c->wake);
    if (!c->ex) next = std::min(next, c->idle_since + std::chrono::seconds(opts_.idle_seconds));
  }
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
}

void HttpsLoop::Accept() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // a watch event is a small write
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->ssl = SSL_new(ctx_);
    if (c->ssl == nullptr || SSL_set_fd(c->ssl, fd) != 1) {
      if (c->ssl != nullptr) SSL_free(c->ssl);
      ERR_clear_error();
      ::close(fd);
      continue;
    }
    SSL_set_accept_state(c->ssl);
    Conn& ref = *c;
    conns_[fd] = std::move(c);
    Interest(ref, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
  }
}

void HttpsLoop::Interest(Conn& c, uint32_t interest, int op) {
  if (op == EPOLL_CTL_MOD && interest == c.interest) return;
  epoll_event ev{};
  ev.events = interest;
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, op, c.fd, &ev);
  c.interest = interest;
}

void HttpsLoop::OnReady(Conn& c, uint32_t events) {
  if (!c.handshaken) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r != 1) {
      int err = SSL_get_error(c.ssl, r);
      ERR_clear_error();
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        Interest(c, EPOLLIN | EPOLLRDHUP | (err == SSL_ERROR_WANT_WRITE ? uint32_t{EPOLLOUT} : 0u));
      } else {
        c.peer_closed = true;  // a failed handshake (a client that refused the certificate)
      }
      return;
    }
    c.handshaken = true;
    Interest(c, EPOLLIN | EPOLLRDHUP);
    events |= EPOLLIN;  // the request may have come with the handshake's last flight
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) Read(c);
  if (events & EPOLLOUT) Send(c);
}

void HttpsLoop::Read(Conn& c) {
  char buf[16384];
  while (true) {
    int n = SSL_read(c.ssl, buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (SSL_has_pending(c.ssl)) continue;
      return;  // the socket may hold more: epoll says so (level-triggered), no EAGAIN read
    }
    int err = SSL_get_error(c.ssl, n);
    ERR_clear_error();
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) c.peer_closed = true;
    return;
  }
}

void HttpsLoop::Send(Conn& c) {
  while (c.out_sent < c.out.size()) {
    size_t left = c.out.size() - c.out_sent;
    int n = SSL_write(c.ssl, c.out.data() + c.out_sent, static_cast<int>(std::min<size_t>(left, 1 << 20)));
    if (n <= 0) {
      int err = SSL_get_error(c.ssl, n);
      ERR_clear_error();
      if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ) c.peer_closed = true;
      break;
    }
    c.out_sent += static_cast<size_t>(n);
  }
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  }
  if (c.handshaken) Interest(c, EPOLLIN | EPOLLRDHUP | (c.out.empty() ? 0u : uint32_t{EPOLLOUT}));
}

void HttpsLoop::Finish() {
  bool answered = true;
  while (answered) {
    if (background_) background_();
    answered = ServeAll(true);
    SendAll();
  }
}

bool HttpsLoop::ServeAll(bool followers) {
  bool any = false, answered = true;
  while (answered) {
    answered = false;
    auto now = Clock::now();
    for (auto& [fd, c] : conns_)
      if (followers || !c->ex || !c->ex->FollowsStore()) answered |= Serve(*c, now);
    any |= answered;
  }
  return any;
}

void HttpsLoop::SendAll() {
  auto now = Clock::now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn& c = *it->second;
    ++it;  // Close erases c
    if (c.handshaken && !c.out.empty()) Send(c);
    bool idle_expired = !c.ex && c.in.empty() && now - c.idle_since >= std::chrono::seconds(opts_.idle_seconds);
    if (c.peer_closed || idle_expired || c.out.size() - c.out_sent > opts_.max_unsent ||
        (c.close_after && !c.ex && c.out.empty()))
      Close(c, false);
  }
}

bool HttpsLoop::Serve(Conn& c, Clock::time_point now) {
  using https_detail::Parse;
  bool answered = false;
  while (true) {
    if (!c.ex) {
      if (c.close_after || c.in.empty() || c.peer_closed) break;  // a client that went away is not answered
      httplib::Request req;
      size_t used = 0;
      bool close = false;
      Parse p = https_detail::ParseRequest(c.in, opts_.max_body, req, used, close);
      if (p == Parse::kIncomplete) break;
      if (p != Parse::kOk) {
        httplib::Response res;
        res.status = p == Parse::kTooLarge ? 413 : 400;
        res.set_header("Connection", "close");
        AppendResponse(c.out, res);
        c.close_after = true;
        break;
      }
      c.in.erase(0, used);
      c.close_after = close;
      c.ex = handler_(std::move(req));
      answered = true;
    }
    c.wake = Clock::time_point::max();
    if (!c.ex->Step(c.out, now, c.wake)) return answered;
    c.ex.reset();
    c.wake = Clock::time_point::max();
    c.idle_since = now;
    answered = true;
  }
  return answered;
}

void HttpsLoop::Close(Conn& c, bool flush) {
  if (flush && c.handshaken && !c.out.empty()) Send(c);
  if (c.handshaken && !c.peer_closed) SSL_shutdown(c.ssl);
  SSL_free(c.ssl);
  ERR_clear_error();  // a shutdown towards a peer that went away fails (see Read)
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  conns_.erase(c.fd);  // destroys c
}

int64_t HttpsLoop::ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

void HttpsLoop::Burn(int64_t worked) {
  double extra = extra_work_.load();
  if (extra <= 0 || worked <= 0) return;
  int64_t until = ThreadCpuNs() + static_cast<int64_t>(static_cast<double>(worked) * extra);
  while (ThreadCpuNs() < until) {
  }
}

}  // namespace fake
