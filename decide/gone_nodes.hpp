// Which nodes have been gone long enough for their volumes to be cleaned up (the opt-in
// DELETED_NODE_CLEANUP_DELAY): a node that volumes of ours name, and whose Node object does
// not exist, is remembered from when it was first seen missing; one that comes back, or that
// no volume names any more, is forgotten. Pure: the caller passes the time and the caches.
// Not thread-safe: one caller at a time.
#pragma once
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

class GoneNodes {
 public:
  using Clock = std::chrono::steady_clock;
  explicit GoneNodes(std::chrono::seconds delay) : delay_(delay) {}

  // Takes what the caches hold now: the nodes our volumes name and the Node objects that
  // exist. Returns the named nodes missing for at least the delay, in name order.
  std::vector<std::string> Due(Clock::time_point now, const std::set<std::string>& named,
                               const std::set<std::string>& present);

  // When the next missing node becomes due; Clock::time_point::max() when none is missing.
  Clock::time_point NextDue() const;

 private:
  const std::chrono::seconds delay_;
  std::map<std::string, Clock::time_point> missing_since_;
};
