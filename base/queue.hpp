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
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

  // An empty queue whose failed keys come back after `base` * 2^failures, at most `cap`.
  WorkQueue(std::chrono::milliseconds base = std::chrono::milliseconds(500),
            std::chrono::milliseconds cap = std::chrono::minutes(5))
      : base_(base), cap_(cap), rng_(std::random_device{}()) {}

  // Makes `key` due now (unless it is already waiting to run now) — or, while a server's
  // Retry-After given to AddRateLimited holds for it, when that ends. A pending delay of the
  // key is cancelled. A key a worker has is handed out again only after its Done().
  void Add(const std::string& key);

  // Makes `key` due after `delay` (an earlier pending time wins); a delay of 0 or less is Add.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);

  // Requeues `key` after its next backoff step: base * 2^failures, capped, +-20% jitter, and
  // counts one more failure. `at_least` (e.g. a server's Retry-After) raises the delay, holds
  // off Add() for that long, and drops an Add() made while a worker had the key. Returns the
  // delay used.
  std::chrono::milliseconds AddRateLimited(const std::string& key,
                                           std::chrono::milliseconds at_least = std::chrono::milliseconds(0));

  // Clears the key's failure count and any Retry-After hold (after success or when the object
  // is gone). A pending delay stays.
  void Forget(const std::string& key);

  // Failures counted for `key` since its last Forget(); 0 for an unknown key.
  int Failures(const std::string& key);

  // Blocks until a key is due, and returns it; returns false once ShutDown() was called.
  // The caller must call Done(key) when it has finished with the key.
  bool Get(std::string* key);

  // Ends a worker's turn with `key`: if it was added meanwhile, it is due again now.
  void Done(const std::string& key);

  // Keys due now (or as soon as a worker is done with them) plus keys waiting for a delay
  // (for metrics).
  size_t Depth();
  // Keys to be handed out now (not those waiting out a backoff).
  size_t Ready();

  // Wakes every Get(), which returns false from then on: keys still queued are never handed out.
  void ShutDown();

 private:
  void AddLocked(const std::string& key);
  // Marks the key as due; it joins ready_ unless a worker has it (then Done queues it).
  void QueueLocked(const std::string& key);
  void PromoteDueLocked();

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
