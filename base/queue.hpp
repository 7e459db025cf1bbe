// The work queue: keys, not objects. A key waits in the queue at most once (adding it again
// while it waits does nothing), may be added after a delay, and failed keys come back after a
// per-key exponential backoff (capped, jittered) until Forget() clears their count.
// Several workers may Get() at once, but a key is never handed to two at a time: a key added
// while a worker has it is handed out again only after that worker calls Done() (the
// semantics of client-go's workqueue). Thread-safe. Get() sleeps until a key is due: an idle
// queue wakes nobody. Also the backoffs the informers use (BackoffDelay, RelistBackoff).
#pragma once
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// The delay after `failures` failures in a row: base * 2^failures, capped at `cap`, then
// +-20 % jitter so that many keys (or watches) failing together do not retry together.
template <class Rng>
std::chrono::milliseconds BackoffDelay(std::chrono::milliseconds base, std::chrono::milliseconds cap, int failures,
                                       Rng& rng) {
  double ms = static_cast<double>(base.count());
  for (int i = 0; i < failures && ms < cap.count(); ++i) ms *= 2;
  if (ms > cap.count()) ms = static_cast<double>(cap.count());
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(static_cast<long>(ms * jitter(rng)));
}

// The wait before a relist after 410 Gone, as client-go's reflector backs off before each
// ListAndWatch it starts again (NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)): 0.8 s,
// doubling up to 30 s, each stretched by a random 0 to 100 %; back to 0.8 s once 2 minutes pass
// without one. A server that answers every watch 410 gets a few lists a minute, not a stream.
class RelistBackoff {
 public:
  explicit RelistBackoff(std::chrono::steady_clock::time_point start) : last_(start) {}

  // The wait before the relist that follows a 410 at `now`.
  template <class Rng>
  std::chrono::milliseconds Next(std::chrono::steady_clock::time_point now, Rng& rng) {
    if (now - last_ > std::chrono::minutes(2)) step_ = kFirst;
    last_ = now;
    const std::chrono::milliseconds base = step_;
    step_ = std::min<std::chrono::milliseconds>(step_ * 2, kCap);
    std::uniform_real_distribution<double> stretch(1.0, 2.0);
    return std::chrono::milliseconds(static_cast<long>(static_cast<double>(base.count()) * stretch(rng)));
  }

 private:
  static constexpr std::chrono::milliseconds kFirst{800}, kCap{30000};
  std::chrono::milliseconds step_ = kFirst;
  std::chrono::steady_clock::time_point last_;
};

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  WorkQueue(std::chrono::milliseconds base = std::chrono::milliseconds(500),
            std::chrono::milliseconds cap = std::chrono::minutes(5))
      : base_(base), cap_(cap), rng_(std::random_device{}()) {}

  // Makes `key` due now (unless it is already waiting to run now) — or, while a server's
  // Retry-After given to AddRateLimited holds for it, when that ends.
  void Add(const std::string& key) {
    Clock::time_point hold;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = not_before_.find(key);
      if (it == not_before_.end() || it->second <= Clock::now()) {
        AddLocked(key);
        cv_.notify_one();
        return;
      }
      hold = it->second;
    }
    AddAfter(key, std::chrono::duration_cast<std::chrono::milliseconds>(hold - Clock::now()) + std::chrono::milliseconds(1));
  }

  // Makes `key` due after `delay` (an earlier pending time wins).
  void AddAfter(const std::string& key, std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return Add(key);
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point at = Clock::now() + delay;
    auto it = delayed_at_.find(key);
    if (it != delayed_at_.end()) {
      if (it->second <= at) return;
      delayed_.erase({it->second, key});
    }
    delayed_at_[key] = at;
    delayed_.insert({at, key});
    cv_.notify_one();
  }

  // Requeues `key` after its next backoff step: base * 2^failures, capped, +-20% jitter.
  // `at_least` (e.g. a server's Retry-After) raises the delay. Returns the delay used.
  std::chrono::milliseconds AddRateLimited(const std::string& key,
                                           std::chrono::milliseconds at_least = std::chrono::milliseconds(0)) {
    std::chrono::milliseconds delay;
    {
      std::lock_guard<std::mutex> lock(mu_);
      delay = BackoffDelay(base_, cap_, failures_[key]++, rng_);
      if (delay < at_least) delay = at_least;
      if (at_least.count() > 0) {
        not_before_[key] = Clock::now() + at_least;
        // Added again while it was being worked on (a watch event): the server's word wins.
        if (dirty_.erase(key)) {
          auto it = std::find(ready_.begin(), ready_.end(), key);
          if (it != ready_.end()) ready_.erase(it);
        }
      }
    }
    AddAfter(key, delay);
    return delay;
  }

  // Clears the key's failure count (after success or when the object is gone).
  void Forget(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.erase(key);
    not_before_.erase(key);
  }

  int Failures(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = failures_.find(key);
    return it == failures_.end() ? 0 : it->second;
  }

  // Blocks until a key is due, and returns it; returns false once ShutDown() was called.
  // The caller must call Done(key) when it has finished with the key.
  bool Get(std::string* key) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (shutdown_) return false;
      PromoteDueLocked();
      if (!ready_.empty()) {
        *key = std::move(ready_.front());
        ready_.pop_front();
        dirty_.erase(*key);
        processing_.insert(*key);
        return true;
      }
      if (delayed_.empty()) {
        cv_.wait(lock);
      } else {
        // A copy: the set's node may be erased by another thread while we wait.
        Clock::time_point next = delayed_.begin()->first;
        cv_.wait_until(lock, next);
      }
    }
  }

  // Ends a worker's turn with `key`: if it was added meanwhile, it is due again now.
  void Done(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    processing_.erase(key);
    if (dirty_.count(key) > 0) {
      ready_.push_back(key);
      cv_.notify_one();
    }
  }

  // Keys due now (or as soon as a worker is done with them) plus keys waiting for a delay
  // (for metrics).
  size_t Depth() {
    std::lock_guard<std::mutex> lock(mu_);
    return dirty_.size() + delayed_.size();
  }
  // Keys to be handed out now (not those waiting out a backoff).
  size_t Ready() {
    std::lock_guard<std::mutex> lock(mu_);
    return dirty_.size();
  }

  void ShutDown() {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    cv_.notify_all();
  }

 private:
  void AddLocked(const std::string& key) {
    auto it = delayed_at_.find(key);
    if (it != delayed_at_.end()) {
      delayed_.erase({it->second, key});
      delayed_at_.erase(it);
    }
    QueueLocked(key);
  }

  // Marks the key as due; it joins ready_ unless a worker has it (then Done queues it).
  void QueueLocked(const std::string& key) {
    if (dirty_.insert(key).second && processing_.count(key) == 0) ready_.push_back(key);
  }

  void PromoteDueLocked() {
    Clock::time_point now = Clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      delayed_at_.erase(key);
      QueueLocked(key);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;             // due, in order, none being worked on
  std::unordered_set<std::string> dirty_;       // due: in ready_, or waiting for Done
  std::unordered_set<std::string> processing_;  // handed out by Get, not yet Done
  std::set<std::pair<Clock::time_point, std::string>> delayed_;
  std::unordered_map<std::string, Clock::time_point> delayed_at_;
  std::unordered_map<std::string, int> failures_;
  std::unordered_map<std::string, Clock::time_point> not_before_;  // a server's Retry-After
  std::chrono::milliseconds base_, cap_;
  std::mt19937 rng_;
  bool shutdown_ = false;
};
