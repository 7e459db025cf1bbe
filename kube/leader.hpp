// Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does, so
// that two replicas (a rolling update, replicas: 2) never provision at the same time.
// The holder renews the lease every renew period; another candidate takes it over only when it
// has seen the same lease record unchanged for a whole lease duration (local time, so clock
// skew between nodes does not matter), or when the holder released it on shutdown.
// Unlike client-go (whose tryAcquireOrRenew creates a missing lease on every round), only a
// candidate creates the lease: a holder that finds it gone (deleted, as by an uninstall) has
// lost it at once, and stops. Re-creating it there would leave it behind an uninstall whose
// Role goes right after (the pod can no longer release it), and the next install's create of
// it then fails with AlreadyExists.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "kube/k8s.hpp"
#include "base/log.hpp"

struct LeaseTimings {
  std::chrono::seconds lease_duration{30};  // a holder silent this long is presumed gone
  std::chrono::seconds renew_deadline{20};  // the holder gives up if it cannot renew within this
  std::chrono::seconds retry_period{5};     // between tries, for candidates and renewals
};

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<const ApiEndpoint> ep, std::string ns, std::string name, std::string identity,
                LeaseTimings t = {})
      : conn_(std::move(ep)), api_(&conn_), ns_(std::move(ns)), name_(std::move(name)), identity_(std::move(identity)), t_(t) {}
  ~LeaderElector() { StopRenewing(); }

  Status Init() { return conn_.Init(); }
  const std::string& identity() const { return identity_; }

  // Does this process know it holds the lease: did it write the lease as holder less than a
  // renew deadline ago, on its own clock? False after a pause (SIGSTOP, a frozen VM) longer
  // than that, before the renewer has had a chance to notice that another instance took over.
  bool Leading() const {
    const int64_t last = last_written_ms_;
    return last != 0 && NowMs() - last < std::chrono::duration_cast<std::chrono::milliseconds>(t_.renew_deadline).count();
  }

  // Blocks until this process holds the lease (true), or `stopping` turns true (false).
  bool Acquire(const std::function<bool()>& stopping) {
    bool logged = false;
    while (!stopping()) {
      Status s = TryAcquireOrRenew();
      if (s.ok()) {
        LogInfo("became leader: lease " + ns_ + "/" + name_ + " held by " + identity_);
        return true;
      }
      if (!logged || s.code() != Status::kConflict) {
        LogInfo("waiting for lease " + ns_ + "/" + name_ + ": " + s.message());
        logged = true;
      }
      for (int i = 0; i < t_.retry_period.count() * 10 && !stopping(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Renews on a thread every retry period; if no renewal succeeds for renew_deadline, or at
  // once if the lease is gone (deleted), calls on_lost once (the caller must stop acting as
  // leader: we exit). Leading() is false from then on.
  void StartRenewing(std::function<void()> on_lost) {
    renewer_ = std::thread([this, on_lost] {
      auto last_ok = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, t_.retry_period, [this] { return stop_; })) {
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

  // Ends the renewals, cutting short one in progress.
  void StopRenewing() {
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

  // Gives the lease up (empty holder), so that a successor need not wait a lease duration.
  // Call once this instance acts no more. Each request waits at most kReleaseTimeout for its
  // answer (a cut-short renewal may have been stored: a conflict is tried once more).
  void Release() {
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

 private:
  static constexpr std::chrono::seconds kReleaseTimeout{5};

  // RFC 3339 with microseconds, as metav1.MicroTime.
  static std::string MicroTime() { return logging::UtcNow(6); }
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // One round: create the lease (a candidate only), renew ours, or take over an expired or
  // released one. Errors: kConflict "held by X" when someone else holds it; kNotFound when
  // `renewing` and the lease is gone (the holder has lost it); or the API's error.
  Status TryAcquireOrRenew(bool renewing = false) {
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
      return Remember(api_.CreateLease(lease));
    }
    if (!got.ok()) return got.status();
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
    return Remember(api_.UpdateLease(lease));
  }

  // Keeps the lease as stored after our create or update.
  Status Remember(const Result<Lease>& stored) {
    if (!stored.ok()) return stored.status();
    last_written_ms_ = NowMs();
    record_ = *stored;
    observed_record_ = record_.holder + "|" + record_.renew_time;
    observed_at_ = std::chrono::steady_clock::now();
    return Status::Ok();
  }

  ApiConnection conn_;
  KubeApi api_;
  std::string ns_, name_, identity_;
  LeaseTimings t_;
  Lease record_;  // as we last wrote it
  std::atomic<int64_t> last_written_ms_{0};  // steady clock, when we last wrote the lease as holder
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::thread renewer_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool renewer_done_ = false;  // the renewer's thread has ended (or is about to)
};

// A lease name from the provisioner name: "hostpath-provisioner.io/hostpath" ->
// "hostpath-provisioner.io-hostpath" (a valid object name).
inline std::string LeaseNameFor(const std::string& provisioner) {
  std::string out;
  for (char c : provisioner) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    out += ok ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '-';
  }
  return out;
}
