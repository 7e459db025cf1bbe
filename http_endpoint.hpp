// The HTTP endpoint for probes and Prometheus: /healthz, /readyz and /metrics, answered from a
// ProbeSource. One thread; off when the address is "".
#pragma once
#include <string>
#include <thread>

#include <httplib.h>

#include "status.hpp"

// What the endpoint reports. Called from the endpoint's thread.
class ProbeSource {
 public:
  virtual ~ProbeSource() = default;
  virtual Status Live() = 0;             // /healthz: 200 "ok", or 500 and the message
  virtual Status Ready() = 0;            // /readyz: 200 "ok" (or the ok message), or 503 and the message
  virtual std::string Metrics() = 0;     // /metrics: the Prometheus text exposition
};

class HttpEndpoint {
 public:
  // `address` is "host:port" (":port" = every interface), as Config checked it.
  HttpEndpoint(std::string address, ProbeSource* source) : address_(std::move(address)), source_(source) {}
  ~HttpEndpoint() { Stop(); }

  // Binds the address and starts serving. Errors: the port is in use or the host not local.
  Status Start() {
    if (address_.empty()) return Status::Ok();
    size_t colon = address_.rfind(':');
    std::string host = address_.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "0.0.0.0";
    int port = std::stoi(address_.substr(colon + 1));
    // Several threads and short timeouts: a client that holds a connection (headers that never
    // end) ties up one thread, never the probes.
    server_.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
    server_.set_read_timeout(5, 0);
    server_.set_write_timeout(5, 0);
    server_.set_keep_alive_timeout(5);
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      Answer(source_->Live(), 500, &res);
    });
    server_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      Answer(source_->Ready(), 503, &res);
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(source_->Metrics(), "text/plain; version=0.0.4");
    });
    if (!server_.bind_to_port(host.c_str(), port))
      return Status::Error("--metrics-address " + address_ + ": cannot listen (in use, or not a local address)");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return Status::Ok();
  }

  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }

 private:
  static constexpr size_t kThreads = 4;

  // 200 with "ok" (or an ok status's message), else `failed` with the status's message.
  static void Answer(const Status& s, int failed, httplib::Response* res) {
    res->status = s.ok() ? 200 : failed;
    res->set_content((s.message().empty() ? std::string("ok") : s.message()) + "\n", "text/plain");
  }

  std::string address_;
  ProbeSource* source_;
  httplib::Server server_;
  std::thread thread_;
};
