// The baseline client: the least work a provisioner can do. kBaselineThreads threads take claims
// in the order their creates (or deletes) returned; per claim one mkdir and one PV create, or
// one rmdir and one PV delete. No watches, no cache, no events, no finalizer. Each thread has a
// keep-alive HTTPS connection with the service account's token.
#pragma once
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/bench/claims.hpp"
#include "test/bench/fake_client.hpp"

namespace bench {

class Baseline {
 public:
  // Starts the threads; volumes go under pv_dir.
  Baseline(const Fake& fake, std::string pv_dir);
  ~Baseline();  // ends the threads once the jobs queued are done
  // Queues the claim's volume to make (create) or remove.
  void Push(bool create, const Claimed& c);
  // The first error a job met ("" if none).
  std::string error();

 private:
  void Run(Api& api);

  std::string pv_dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<bool, Claimed>> jobs_;
  bool stop_ = false;
  std::string error_;
  std::vector<std::thread> threads_;
};

}  // namespace bench
