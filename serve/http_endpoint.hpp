// The HTTP endpoint for probes and Prometheus: /healthz, /readyz and /metrics, answered from a
// ProbeSource. Off when the address is "". cpp-httplib stays in http_endpoint.cpp.
#pragma once
#include <memory>
#include <string>
#include <thread>

#include "base/status.hpp"

// What the endpoint reports. Called from the endpoint's worker threads.
class ProbeSource {
 public:
  virtual ~ProbeSource() = default;
  virtual Status Live() = 0;             // /healthz: 200 "ok", or 500 and the message
  virtual Status Ready() = 0;            // /readyz: 200 "ok" (or the ok message), or 503 and the message
  virtual std::string Metrics() = 0;     // /metrics: the Prometheus text exposition
};

namespace http_endpoint_detail {
class GatedServer;  // httplib's Server, serving only connections whose headers are in
}  // namespace http_endpoint_detail

// Threads: one accepts connections, one watches those whose headers are not in yet, 4 workers
// answer. Held connections: at most 1024, and half the open-file limit, so that a flood of
// connections never takes the files the controller needs. Only GET and HEAD are served, one
// request per connection; any other method is refused (405), a request with a body too (413),
// its body unread. A connection that has not sent its headers within 5 s is closed.
class HttpEndpoint {
 public:
  // `address` is "host:port" (":port" = every interface), as Config checked it.
  HttpEndpoint(std::string address, ProbeSource* source);
  // Stop().
  ~HttpEndpoint();

  // Binds the address and starts serving (nothing when the address is ""). Errors: the port is
  // in use or the host not local (naming --metrics-address), or no epoll or eventfd.
  Status Start();

  // Stops serving and joins the threads; connections waiting for their headers are closed.
  // Idempotent.
  void Stop();

 private:
  std::string address_;
  ProbeSource* source_;
  std::unique_ptr<http_endpoint_detail::GatedServer> server_;
  std::thread thread_;
};
