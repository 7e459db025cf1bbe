// Leader election of leader.hpp over a coordination.k8s.io/v1 Lease. Hand-written after
// client-go's leaderelection (a Go library), with the difference the header states.
#include "kube/leader.hpp"

#include <algorithm>

bool LeaderElector::Leading() const {
  const int64_t last = last_written_ms_;
  return last != 0 && NowMs() - last < std::chrono::duration_cast<std::chrono::milliseconds>(t_.renew_deadline).count();
}

void LeaderElector::CancelAcquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
  }
  cv_.notify_all();
}

Status LeaderElector::LastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

bool LeaderElector::Acquire(const std::function<bool()>& stopping) {
  bool logged_held = false;
  std::string logged_error;
  while (!stopping()) {
    Status s = TryAcquireOrRenew();
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_error_ = s.ok() || s.code() == Status::kConflict ? Status::Ok() : s;
    }
    if (s.ok()) {
      LogInfo("became leader: lease " + ns_ + "/" + name_ + " held by " + identity_);
      return true;
    }
    const std::string line = "waiting for lease " + ns_ + "/" + name_ + ": " + s.message();
    looked_ = looked_ || s.code() == Status::kConflict;
    if (s.code() == Status::kConflict && !logged_held) {
      LogInfo(line);
      logged_held = true;
    } else if (s.code() != Status::kConflict && s.message() != logged_error) {
      LogWarn(line + (s.code() == Status::kForbidden ? " (its Role is missing or names another Lease: apply the install's rbac.yaml; not repeated while it lasts)" : ""));
      logged_error = s.message();
    }
    long tenths = t_.retry_period.count() * 10;
    // Held: look again later, spread out; the first time after one retry period, so that what
    // a holder that took the lease at the same time says (SetAnnotation) is read within seconds.
    if (s.code() == Status::kConflict && t_.candidate_period.count() > 0 && looked_) {
      std::uniform_int_distribution<long> spread(0, t_.candidate_period.count() * 2);
      tenths = t_.candidate_period.count() * 10 + spread(rng_);
    }
    // Asleep until the next look, or CancelAcquire; `stopping` is asked once a second.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100 * tenths);
    std::unique_lock<std::mutex> lock(mu_);
    while (!cancel_ && std::chrono::steady_clock::now() < until) {
      lock.unlock();
      if (stopping()) return false;
      lock.lock();
      cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1),
                                                                        until - std::chrono::steady_clock::now()),
                   [this] { return cancel_; });
    }
    if (cancel_) return false;
  }
  return false;
}

void LeaderElector::StartRenewing(std::function<void()> on_lost) {
  renewer_ = std::thread([this, on_lost] {
    auto last_ok = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {  // every retry period, or at once when SetAnnotation has news
      cv_.wait_for(lock, t_.retry_period, [this] { return stop_ || annotate_now_; });
      if (stop_) break;
      annotate_now_ = false;
      lock.unlock();
      Status s = TryAcquireOrRenew(/*renewing=*/true);
      lock.lock();
      if (s.ok()) {
        last_ok = std::chrono::steady_clock::now();
      } else if (!stop_) {  // (a renewal cut short by StopRenewing is no news)
        LogWarn("renewing lease " + ns_ + "/" + name_ + " failed: " + s.message());
        const bool gone = s.code() == Status::kNotFound;
        if (gone || std::chrono::steady_clock::now() - last_ok > t_.renew_deadline) {
          if (gone) {  // a candidate may create it and lead at once: stop now, release nothing
            last_written_ms_ = 0;
            record_.holder.clear();
          }
          on_lost();
          break;
        }
      }
    }
    renewer_done_ = true;
    cv_.notify_all();
  });
}

void LeaderElector::StopRenewing() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (!renewer_.joinable()) return;
  std::unique_lock<std::mutex> lock(mu_);
  while (!renewer_done_) {  // a request may start just after a Stop(): keep at it
    conn_.Stop();
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  lock.unlock();
  renewer_.join();
}

void LeaderElector::Release() {
  StopRenewing();
  last_written_ms_ = 0;
  Lease lease = record_;
  for (int attempt = 0; attempt < 2 && lease.holder == identity_; ++attempt) {
    lease.holder.clear();
    lease.duration_seconds = 1;
    lease.renew_time = MicroTime();
    Result<Lease> r = api_.UpdateLease(lease, kReleaseTimeout);
    if (r.ok()) return LogInfo("released lease " + ns_ + "/" + name_);
    if (r.status().code() != Status::kConflict) return LogWarn(r.status().message());
    Result<Lease> got = api_.GetLease(ns_, name_, kReleaseTimeout);
    if (!got.ok()) return LogWarn(got.status().message());
    lease = *got;
  }
}

int64_t LeaderElector::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status LeaderElector::TryAcquireOrRenew(bool renewing) {
  const std::string now = MicroTime();
  Result<Lease> got = api_.GetLease(ns_, name_);
  if (got.status().code() == Status::kNotFound && renewing)
    return Status::NotFound("the lease was deleted (an uninstall?): lost; only a candidate creates it");
  if (got.status().code() == Status::kNotFound) {
    Lease lease;
    lease.meta.name = name_;
    lease.meta.namespace_ = ns_;
    lease.holder = identity_;
    lease.duration_seconds = static_cast<int>(t_.lease_duration.count());
    lease.acquire_time = lease.renew_time = now;
    Annotate(&lease);
    return Remember(api_.CreateLease(lease));
  }
  if (!got.ok()) return got.status();
  if (observer_) observer_(*got);
  // Local observation: the record counts as expired only after it stayed the same for a
  // whole lease duration on our clock.
  const std::string observed = got->holder + "|" + got->renew_time;
  const auto local_now = std::chrono::steady_clock::now();
  if (observed != observed_record_) {
    observed_record_ = observed;
    observed_at_ = local_now;
  }
  const bool expired = local_now - observed_at_ > std::chrono::seconds(got->duration_seconds);
  if (!got->holder.empty() && got->holder != identity_ && !expired) return Status(Status::kConflict, "held by " + got->holder);
  Lease lease = *got;
  if (lease.holder != identity_) {
    lease.acquire_time = now;
    lease.transitions++;
  }
  lease.holder = identity_;
  lease.duration_seconds = static_cast<int>(t_.lease_duration.count());
  lease.renew_time = now;
  Annotate(&lease);
  return Remember(api_.UpdateLease(lease));
}

void LeaderElector::SetAnnotation(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (annotations_.count(key) && annotations_[key] == value) return;
    annotations_[key] = value;
    annotate_now_ = true;
  }
  cv_.notify_all();
}

void LeaderElector::Annotate(Lease* lease) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, value] : annotations_) {
    if (value.empty()) lease->meta.annotations.erase(key);
    else lease->meta.annotations[key] = value;
  }
}

Status LeaderElector::Remember(const Result<Lease>& stored) {
  if (!stored.ok()) return stored.status();
  last_written_ms_ = NowMs();
  record_ = *stored;
  observed_record_ = record_.holder + "|" + record_.renew_time;
  observed_at_ = std::chrono::steady_clock::now();
  if (observer_) observer_(record_);
  return Status::Ok();
}

std::string LeaseNameFor(const std::string& provisioner) {
  std::string out;
  for (char c : provisioner) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    out += ok ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '-';
  }
  return out;
}
