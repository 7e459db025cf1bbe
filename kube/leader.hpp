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
#include <map>
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
  // Between a candidate's looks at a lease another holds (0: retry_period), but for its first
  // look again, one retry period after the first. Many candidates (one per node) look less
  // often: each look is a GET to the API server. A holder that stops is then replaced within
  // about twice this plus the lease duration.
  std::chrono::seconds candidate_period{0};
};

// Leading() may be called from any thread; Acquire, StartRenewing, StopRenewing and Release
// from one.
class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<const ApiEndpoint> ep, std::string ns, std::string name, std::string identity,
                LeaseTimings t = {})
      : conn_(std::move(ep)), api_(&conn_), ns_(std::move(ns)), name_(std::move(name)), identity_(std::move(identity)), t_(t) {}
  ~LeaderElector() { StopRenewing(); }

  // Prepares the connection. Errors: those of ApiConnection::Init.
  Status Init() { return conn_.Init(); }
  const std::string& identity() const { return identity_; }

  // Does this process know it holds the lease: did it write the lease as holder less than a
  // renew deadline ago, on its own clock? False after a pause (SIGSTOP, a frozen VM) longer
  // than that, before the renewer has had a chance to notice that another instance took over.
  bool Leading() const;

  // Blocks until this process holds the lease (true), or `stopping` turns true (asked between
  // tries, and once a second while waiting), or CancelAcquire is called (false). Logs the
  // first "held by" answer, and each error when it differs from the last one logged (a
  // refusal that lasts, such as 403 Forbidden, is one line, not one every retry period).
  bool Acquire(const std::function<bool()>& stopping);

  // Why the last try to take the lease failed, other than another instance holding it (e.g.
  // kForbidden: no RBAC for it); Ok when it did not fail, or only because the lease is held.
  // From any thread.
  Status LastError() const;

  // Makes Acquire return false at once (from any thread), now and later.
  void CancelAcquire();

  // Renews on a thread every retry period; if no renewal succeeds for renew_deadline, or at
  // once if the lease is gone (deleted), calls on_lost once (the caller must stop acting as
  // leader: we exit). Leading() is false from then on.
  void StartRenewing(std::function<void()> on_lost);

  // Ends the renewals, cutting short one in progress.
  void StopRenewing();

  // The holder's word to the candidates, written on the lease as an annotation with its next
  // write of it (its take-over, or a renewal at once when renewing); a value "" takes the
  // annotation off.
  // The annotations stay when another instance takes the lease over. From any thread.
  void SetAnnotation(const std::string& key, const std::string& value);

  // Called with the lease each time this elector reads it or writes it (a candidate reads it
  // once per look; the holder writes it once per renewal), on the thread that did. Set before
  // Acquire.
  void Observe(std::function<void(const Lease&)> observer) { observer_ = std::move(observer); }

  // Gives the lease up (empty holder), so that a successor need not wait a lease duration.
  // Call once this instance acts no more. Each request waits at most kReleaseTimeout for its
  // answer (a cut-short renewal may have been stored: a conflict is tried once more).
  void Release();

 private:
  static constexpr std::chrono::seconds kReleaseTimeout{5};

  // RFC 3339 with microseconds, as metav1.MicroTime.
  static std::string MicroTime() { return logging::UtcNow(6); }
  static int64_t NowMs();

  // One round: create the lease (a candidate only), renew ours, or take over an expired or
  // released one. Errors: kConflict "held by X" when someone else holds it; kNotFound when
  // `renewing` and the lease is gone (the holder has lost it); or the API's error.
  Status TryAcquireOrRenew(bool renewing = false);

  // Writes SetAnnotation's annotations into `lease`.
  void Annotate(Lease* lease);

  // Keeps the lease as stored after our create or update.
  Status Remember(const Result<Lease>& stored);

  ApiConnection conn_;
  KubeApi api_;
  std::string ns_, name_, identity_;
  LeaseTimings t_;
  Lease record_;  // as we last wrote it
  std::atomic<int64_t> last_written_ms_{0};  // steady clock, when we last wrote the lease as holder
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::thread renewer_;
  std::function<void(const Lease&)> observer_;
  std::map<std::string, std::string> annotations_;  // under mu_: SetAnnotation's, to write
  bool annotate_now_ = false;  // under mu_: news to write before the next renewal is due
  bool looked_ = false;        // Acquire found the lease held once (its later looks are candidate_period apart)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status last_error_;  // under mu_
  bool stop_ = false;
  bool renewer_done_ = false;  // the renewer's thread has ended (or is about to)
  bool cancel_ = false;        // CancelAcquire was called
  std::mt19937 rng_{std::random_device{}()};  // spreads candidates' looks
};

// A lease name from the provisioner name: "hostpath-provisioner.io/hostpath" ->
// "hostpath-provisioner.io-hostpath" (a valid object name).
std::string LeaseNameFor(const std::string& provisioner);
