// The endpoint of http_endpoint.hpp over cpp-httplib's Server. The gate (GatedServer) is
// hand-written: httplib 0.11.4 gives each accepted connection a worker at once, and has no
// way to wait for a request's headers without one.
#include "serve/http_endpoint.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <httplib.h>

namespace http_endpoint_detail {

// An httplib::Server whose workers serve only connections that have sent their request's
// headers.
//
// httplib hands each accepted connection to its task queue, whose worker then waits up to the
// keep-alive timeout for the first byte, and up to the read timeout for each further one: a
// crowd of idle or dribbling connections, each holding a worker for seconds, starves the
// probes. httplib 0.11.4's TaskQueue::enqueue gets an opaque closure (it cannot see the socket,
// nor refuse: it returns void), so here the task queue runs the closure at once on the
// accepting thread, and the closure's target, the virtual process_and_close_socket, is
// overridden: it parks the connection in an epoll set, where it costs an open file and no
// thread. Once its headers are there (peeked at, not read) it goes to one of the workers; one
// that has not sent them within `headers_within` is closed, and beyond `max_held` connections
// the oldest waiting one is closed to make room, and one that has sent 8 KiB without the end of
// its headers is closed. One request per connection: a worker never waits for a client's next
// request, nor for a request body (HttpEndpoint refuses one unread).
class GatedServer : public httplib::Server {
 public:
  ~GatedServer() override { StopGate(); }

  // Call after bind_to_port, before listen_after_bind. Errors: no epoll or eventfd.
  Status StartGate(size_t workers, size_t max_held, std::chrono::milliseconds headers_within) {
    max_held_ = max_held;
    headers_within_ = headers_within;
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWake;
    if (epoll_ < 0 || wake_ < 0 || ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0)
      return Status::Error(std::string("HTTP endpoint: epoll: ") + std::strerror(errno));
    ::listen(svr_sock_, SOMAXCONN);  // httplib's backlog of 5 drops a probe's SYN in a burst
    new_task_queue = [] { return new RunAtOnce; };
    set_keep_alive_max_count(1);
    pool_ = std::make_unique<httplib::ThreadPool>(workers);
    gate_ = std::thread([this] { GateLoop(); });
    return Status::Ok();
  }

  // Call once listen_after_bind has returned: closes the waiting connections and lets the
  // workers finish. Idempotent.
  void StopGate() {
    if (gate_.joinable()) {
      stopping_ = true;
      uint64_t one = 1;
      ssize_t n = ::write(wake_, &one, sizeof one);
      (void)n;
      gate_.join();
      std::lock_guard<std::mutex> lock(mu_);
      while (!waiting_.empty()) Drop(waiting_.begin());
    }
    if (pool_) pool_->shutdown();
    pool_.reset();
    if (epoll_ >= 0) ::close(epoll_);
    if (wake_ >= 0) ::close(wake_);
    epoll_ = wake_ = -1;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr uint64_t kWake = ~uint64_t{0};

  struct RunAtOnce : httplib::TaskQueue {
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override {}
  };
  struct Waiting {
    int fd;
    uint32_t generation;  // tells a reused fd number from the connection an event was for
    Clock::time_point deadline;
  };
  using WaitingList = std::list<Waiting>;  // oldest first, so deadlines ascend

  // On the accepting thread, for each new connection.
  bool process_and_close_socket(socket_t sock) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ >= max_held_) {
      if (waiting_.empty()) {  // all are being served: no room
        Close(sock);
        return false;
      }
      Drop(waiting_.begin());
    }
    ++held_;
    switch (HeadersIn(sock)) {
      case Seen::kHeaders: Dispatch(sock); return true;
      case Seen::kTooLong: Close(sock); --held_; return false;
      case Seen::kWaiting: break;
    }
    auto it = waiting_.insert(waiting_.end(), Waiting{sock, ++generation_, Clock::now() + headers_within_});
    by_fd_[sock] = it;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;  // an event each time more arrives
    ev.data.u64 = (uint64_t{it->generation} << 32) | static_cast<uint32_t>(sock);
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, sock, &ev) != 0) Drop(it);
    return true;
  }

  // Hands connections whose headers are in to the workers and closes those past their deadline.
  void GateLoop() {
    epoll_event events[64];
    int timeout_ms = static_cast<int>(headers_within_.count());
    while (!stopping_) {
      int n = ::epoll_wait(epoll_, events, 64, timeout_ms);
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == kWake) continue;
        auto found = by_fd_.find(static_cast<int>(events[i].data.u64 & 0xffffffffu));
        if (found == by_fd_.end() || found->second->generation != events[i].data.u64 >> 32) continue;
        const Seen seen = HeadersIn(found->second->fd);
        if (seen == Seen::kTooLong) {
          Drop(found->second);
        } else if (seen == Seen::kHeaders) {
          const int fd = found->second->fd;
          Forget(found->second);
          Dispatch(fd);
        }
      }
      const auto now = Clock::now();
      while (!waiting_.empty() && waiting_.front().deadline <= now) Drop(waiting_.begin());
      timeout_ms = static_cast<int>(headers_within_.count());
      if (!waiting_.empty())
        timeout_ms = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(waiting_.front().deadline - now).count() + 1);
    }
  }

  // Has the client sent its request's headers, or closed, or failed? Then a worker will not wait
  // on it (the handler refuses a body unread: HttpEndpoint::Refused). Peeks: reads nothing.
  enum class Seen { kWaiting, kHeaders, kTooLong };
  static Seen HeadersIn(int fd) {
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR ? Seen::kHeaders : Seen::kWaiting;
    if (n == 0) return Seen::kHeaders;
    const std::string_view seen(buf, static_cast<size_t>(n));
    if (seen.find("\r\n\r\n") != std::string_view::npos || seen.find("\n\n") != std::string_view::npos) return Seen::kHeaders;
    // 8 KiB with no end of headers: more than any request to this endpoint has. A worker would
    // read the rest for as long as the client sends a byte within each read timeout.
    return n == static_cast<ssize_t>(sizeof buf) ? Seen::kTooLong : Seen::kWaiting;
  }

  // httplib's own Server::process_and_close_socket, on a worker.
  void Serve(socket_t sock) {
    httplib::detail::process_server_socket(
        svr_sock_, sock, keep_alive_max_count_, keep_alive_timeout_sec_, read_timeout_sec_, read_timeout_usec_,
        write_timeout_sec_, write_timeout_usec_,
        [this](httplib::Stream& strm, bool close_connection, bool& connection_closed) {
          return process_request(strm, close_connection, connection_closed, nullptr);
        });
    Close(sock);
    std::lock_guard<std::mutex> lock(mu_);
    --held_;
  }

  // These four with mu_ held.
  void Dispatch(int fd) {
    pool_->enqueue([this, fd] { Serve(fd); });
  }
  void Forget(WaitingList::iterator it) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->fd, nullptr);
    by_fd_.erase(it->fd);
    waiting_.erase(it);
  }
  void Drop(WaitingList::iterator it) {
    int fd = it->fd;
    Forget(it);
    Close(fd);
    --held_;
  }
  static void Close(int fd) {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  size_t max_held_ = 0;
  std::chrono::milliseconds headers_within_{0};
  int epoll_ = -1, wake_ = -1;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<httplib::ThreadPool> pool_;
  std::thread gate_;
  std::mutex mu_;                  // guards what follows
  size_t held_ = 0;                // waiting, queued or being served
  uint32_t generation_ = 0;
  WaitingList waiting_;
  std::unordered_map<int, WaitingList::iterator> by_fd_;
};

}  // namespace http_endpoint_detail

namespace {

constexpr size_t kWorkers = 4;
constexpr size_t kMaxHeld = 1024;
constexpr std::chrono::milliseconds kHeadersWithin{5000};

size_t MaxHeld() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return kMaxHeld;
  return std::max<size_t>(kWorkers, std::min<size_t>(kMaxHeld, files.rlim_cur / 2));
}

// A request answered at once, its body unread (the connection is closed after every answer):
// any method but GET and HEAD (405), or a body (413).
bool Refused(const httplib::Request& req, httplib::Response* res) {
  if (req.method != "GET" && req.method != "HEAD") {
    res->status = 405;
    res->set_header("Allow", "GET, HEAD");
    res->set_content("only GET and HEAD are served here\n", "text/plain");
    return true;
  }
  if (req.has_header("Transfer-Encoding") ||
      (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0")) {
    res->status = 413;
    res->set_content("a request here has no body\n", "text/plain");
    return true;
  }
  return false;
}

// 200 with "ok" (or an ok status's message), else `failed` with the status's message.
void Answer(const Status& s, int failed, httplib::Response* res) {
  res->status = s.ok() ? 200 : failed;
  res->set_content((s.message().empty() ? std::string("ok") : s.message()) + "\n", "text/plain");
}

}  // namespace

HttpEndpoint::HttpEndpoint(std::string address, ProbeSource* source)
    : address_(std::move(address)), source_(source), server_(std::make_unique<http_endpoint_detail::GatedServer>()) {}

HttpEndpoint::~HttpEndpoint() { Stop(); }

Status HttpEndpoint::Start() {
  if (address_.empty()) return Status::Ok();
  size_t colon = address_.rfind(':');
  std::string host = address_.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = std::stoi(address_.substr(colon + 1));
  // A client that stops reading the answer holds a worker until these.
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
  server_->set_keep_alive_timeout(5);
  // A body is never read: httplib reads one, or skips one past set_payload_max_length, a read
  // at a time, so a client sending a byte within each read timeout would hold a worker for
  // as long as it liked. Refused before routing, where nothing of the body was read yet.
  server_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    return Refused(req, &res) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    Answer(source_->Live(), 500, &res);
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    Answer(source_->Ready(), 503, &res);
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(source_->Metrics(), "text/plain; version=0.0.4");
  });
  if (!server_->bind_to_port(host.c_str(), port))
    return Status::Error("--metrics-address " + address_ + ": cannot listen (in use, or not a local address)");
  Status gate = server_->StartGate(kWorkers, MaxHeld(), kHeadersWithin);
  if (!gate.ok()) return gate;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void HttpEndpoint::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
  server_->StopGate();
}
