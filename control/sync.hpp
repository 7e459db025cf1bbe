// What the controller's parts share: how the sync of a key ends (Outcome), the API as one
// worker calls it (WorkerApi), the counters for /metrics (ControllerStats), the sets of names
// that several workers share (NameSet, Waiters), and the objects events are about (InvolvedOf).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "kube/k8s.hpp"
#include "kube/recorder.hpp"

// How a key's sync ended: done (its failures forgotten), or to be retried after backoff, and
// not before the server's Retry-After.
struct Outcome {
  bool retry = false;
  int retry_after = 0;  // seconds, at least
  static Outcome Done() { return {}; }
  static Outcome Retry(int retry_after = 0) { return {true, retry_after}; }
};

// One worker's way to the API server: its own connection (so that one slow request holds up
// only that worker's key), and the typed calls over it. Used by one thread at a time.
struct WorkerApi {
  explicit WorkerApi(std::shared_ptr<const ApiEndpoint> ep) : conn(std::move(ep)), api(&conn) {}
  ApiConnection conn;  // conn.last_retry_after(): the last answer's Retry-After
  KubeApi api;
};

// Asked by a part before it acts on the claim or volume of `key` ("claim/<ns>/<name>",
// "volume/<name>"): true when PV_DIR no longer names the directory held open. Then nothing is
// to be done; the claim or volume has been told why (see Controller).
using RootMovedCheck = std::function<bool(const std::string& key)>;

// Counters the controller keeps for the HTTP endpoint (all monotonic). Thread-safe.
struct ControllerStats {
  std::atomic<long> provisioned{0}, provision_failed{0};
  std::atomic<long> deleted{0}, delete_failed{0};
  // Sum and count of durations, and a small histogram, for provisions and deletions.
  struct Histogram {
    static constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    static constexpr int kBuckets = 13;
    std::mutex mu;  // guards what follows
    long counts[kBuckets + 1] = {};  // counts[i]: at most kBounds[i] (and above the one before); the last: above all
    double sum = 0;
    long count = 0;
    // Counts one duration of `seconds`.
    void Observe(double seconds);
  };
  Histogram provision_seconds, delete_seconds;
};

// Claims waiting for another claim (a clone for its source), by that claim's key. Thread-safe.
class Waiters {
 public:
  // `waiting` waits for `for_key` (once, however often it is added).
  void Add(const std::string& for_key, const std::string& waiting);
  // The claims waiting for `for_key`, which wait no more; none when none wait.
  std::vector<std::string> Take(const std::string& for_key);

 private:
  std::mutex mu_;
  std::map<std::string, std::set<std::string>> by_key_;
};

// A set of names that several workers share. Thread-safe.
class NameSet {
 public:
  void Insert(const std::string& name);
  void Erase(const std::string& name);
  bool Contains(const std::string& name) const;
  // Every name, and the set left empty.
  std::vector<std::string> TakeAll();

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> names_;
};

// The object an event about a claim, or a volume, is recorded on.
Involved InvolvedOf(const Claim& c);
Involved InvolvedOf(const Volume& v);
