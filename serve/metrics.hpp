// The Prometheus text exposition of the provisioner's metrics, and the counter of API requests
// that the connections' observer feeds. The text is made in metrics.cpp.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <tuple>

class Controller;
class Roots;

// API requests by verb, resource and code. Thread-safe.
class RequestCounter {
 public:
  // Adds one request (code 0: no answer).
  void Count(const std::string& verb, const std::string& resource, int code);
  // The counts so far, by (verb, resource, code).
  std::map<std::tuple<std::string, std::string, int>, long> Snapshot();

  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, long> counts_;
};

// Every metric, in the text exposition format (version 0.0.4): provisions, deletions, clones
// and their durations, the work queue's depth, watch restarts, API requests, each opened
// root's free and total bytes (a root whose space cannot be read is left out), each root's
// archives and the bytes they hold (archives.hpp; roots with none left out), and the usage
// scan's figures when it is on. main calls it from the endpoint's worker threads, while the
// controller runs.
std::string MetricsText(Controller& controller, RequestCounter& requests, const Roots& roots);
