// The HTTP endpoint for probes and Prometheus: /healthz (process alive, worker not stuck),
// /readyz (first lists done), /metrics (text exposition format). One thread; off when the
// address is "".
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include <httplib.h>

#include "controller.hpp"
#include "fsops.hpp"
#include "k8s.hpp"

// API requests by verb, resource and code, fed by the connections' observer. Thread-safe.
class RequestCounter {
 public:
  void Count(const std::string& verb, const std::string& resource, int code) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[std::make_tuple(verb, resource, code)]++;
  }
  std::map<std::tuple<std::string, std::string, int>, long> Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, long> counts_;
};

class HttpEndpoint {
 public:
  // Installs the request counter on `ep`, so it must be constructed before connections are used.
  HttpEndpoint(std::string address, Controller* controller, const Root* root, const std::shared_ptr<ApiEndpoint>& ep)
      : address_(std::move(address)), controller_(controller), root_(root), requests_(std::make_shared<RequestCounter>()) {
    auto counter = requests_;
    ep->observer = [counter](const std::string& verb, const std::string& resource, int code) {
      counter->Count(verb, resource, code);
    };
  }
  ~HttpEndpoint() { Stop(); }

  // A standby replica (waiting for the lease) reports ready: it is healthy, just not leading.
  void SetStandby(bool standby) { standby_ = standby; }

  // Binds the address ("host:port", ":port" = every interface). Errors: bad address, port in use.
  Status Start() {
    if (address_.empty()) return Status::Ok();
    size_t colon = address_.rfind(':');
    if (colon == std::string::npos) return Status::Invalid("--metrics-address \"" + address_ + "\" needs a :port");
    std::string host = address_.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "0.0.0.0";
    int port = std::atoi(address_.substr(colon + 1).c_str());
    if (port <= 0 || port > 65535) return Status::Invalid("--metrics-address \"" + address_ + "\": bad port");
    server_.new_task_queue = [] { return new httplib::ThreadPool(1); };
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      bool stuck = controller_->WorkerStuck(std::chrono::minutes(10));
      res.status = stuck ? 500 : 200;
      res.set_content(stuck ? "worker stuck on one key for over 10 minutes\n" : "ok\n", "text/plain");
    });
    server_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      bool standby = standby_;
      bool ready = standby || controller_->Synced();
      res.status = ready ? 200 : 503;
      res.set_content(standby ? "ok (standby: another instance holds the lease)\n" : ready ? "ok\n" : "initial lists not done\n",
                      "text/plain");
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(Metrics(), "text/plain; version=0.0.4");
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

  // The Prometheus text exposition of every metric.
  std::string Metrics() {
    std::ostringstream o;
    ControllerStats& s = controller_->stats();
    const char* p = "hostpath_provisioner_";
    o << "# HELP " << p << "provisions_total Volumes provisioned, by result.\n# TYPE " << p << "provisions_total counter\n";
    o << p << "provisions_total{result=\"success\"} " << s.provisioned << "\n";
    o << p << "provisions_total{result=\"failure\"} " << s.provision_failed << "\n";
    o << "# HELP " << p << "deletions_total Volumes deleted, by result.\n# TYPE " << p << "deletions_total counter\n";
    o << p << "deletions_total{result=\"success\"} " << s.deleted << "\n";
    o << p << "deletions_total{result=\"failure\"} " << s.delete_failed << "\n";
    Histogram(o, std::string(p) + "provision_duration_seconds", "Time to make a directory and create its PV.",
              s.provision_seconds);
    Histogram(o, std::string(p) + "deletion_duration_seconds", "Time to remove a directory and delete its PV.",
              s.delete_seconds);
    o << "# HELP " << p << "workqueue_depth Keys waiting in the work queue.\n# TYPE " << p << "workqueue_depth gauge\n";
    o << p << "workqueue_depth " << controller_->QueueDepth() << "\n";
    o << "# HELP " << p << "watch_restarts_total Watches restarted (ended, failed or expired).\n# TYPE " << p
      << "watch_restarts_total counter\n";
    o << p << "watch_restarts_total " << controller_->WatchRestarts() << "\n";
    o << "# HELP " << p << "api_requests_total Requests to the API server, by verb, resource and HTTP code (0 = no answer).\n"
      << "# TYPE " << p << "api_requests_total counter\n";
    for (const auto& [k, n] : requests_->Snapshot())
      o << p << "api_requests_total{verb=\"" << std::get<0>(k) << "\",resource=\"" << std::get<1>(k) << "\",code=\""
        << std::get<2>(k) << "\"} " << n << "\n";
    uint64_t free_bytes = 0, total_bytes = 0;
    if (root_->Space(&free_bytes, &total_bytes).ok()) {
      o << "# HELP " << p << "root_free_bytes Free bytes on the filesystem of each volume root.\n# TYPE " << p
        << "root_free_bytes gauge\n";
      o << p << "root_free_bytes{root=\"" << root_->path() << "\"} " << free_bytes << "\n";
      o << "# HELP " << p << "root_total_bytes Size of the filesystem of each volume root.\n# TYPE " << p
        << "root_total_bytes gauge\n";
      o << p << "root_total_bytes{root=\"" << root_->path() << "\"} " << total_bytes << "\n";
    }
    return o.str();
  }

 private:
  static void Histogram(std::ostringstream& o, const std::string& name, const char* help, ControllerStats::Histogram& h) {
    std::lock_guard<std::mutex> lock(h.mu);
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    long cumulative = 0;
    for (int i = 0; i < ControllerStats::Histogram::kBuckets; ++i) {
      cumulative += h.counts[i];
      o << name << "_bucket{le=\"" << ControllerStats::Histogram::kBounds[i] << "\"} " << cumulative << "\n";
    }
    cumulative += h.counts[ControllerStats::Histogram::kBuckets];
    o << name << "_bucket{le=\"+Inf\"} " << cumulative << "\n";
    o << name << "_sum " << h.sum << "\n" << name << "_count " << h.count << "\n";
  }

  std::string address_;
  Controller* controller_;
  const Root* root_;
  std::shared_ptr<RequestCounter> requests_;
  std::atomic<bool> standby_{false};
  httplib::Server server_;
  std::thread thread_;
};
