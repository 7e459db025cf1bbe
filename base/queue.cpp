// The work queue: the bodies (queue.hpp has the contracts). Hand-written: the semantics of
// client-go's workqueue (dedup, never one key to two workers, per-key backoff, Retry-After)
// are not in any Debian C++ library.
#include "base/queue.hpp"

#include <algorithm>

void WorkQueue::Add(const std::string& key) {
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

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
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

std::chrono::milliseconds WorkQueue::AddRateLimited(const std::string& key, std::chrono::milliseconds at_least) {
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

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
  not_before_.erase(key);
}

int WorkQueue::Failures(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

bool WorkQueue::Get(std::string* key) {
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

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) > 0) {
    ready_.push_back(key);
    cv_.notify_one();
  }
}

size_t WorkQueue::Depth() {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_.size() + delayed_.size();
}

size_t WorkQueue::Ready() {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_.size();
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

void WorkQueue::AddLocked(const std::string& key) {
  auto it = delayed_at_.find(key);
  if (it != delayed_at_.end()) {
    delayed_.erase({it->second, key});
    delayed_at_.erase(it);
  }
  QueueLocked(key);
}

void WorkQueue::QueueLocked(const std::string& key) {
  if (dirty_.insert(key).second && processing_.count(key) == 0) ready_.push_back(key);
}

void WorkQueue::PromoteDueLocked() {
  Clock::time_point now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayed_at_.erase(key);
    QueueLocked(key);
  }
}
