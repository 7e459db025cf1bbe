// Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does, so
// that two replicas (a rolling update, replicas: 2) never provision at the same time.
// The holder renews the lease every renew period; another candidate takes it over only when it
// has seen the same lease record unchanged for a whole lease duration (local time, so clock
// skew between nodes does not matter), or when the holder released it on shutdown.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "json_write.hpp"
#include "k8s.hpp"
#include "log.hpp"

struct LeaseTimings {
  std::chrono::seconds lease_duration{30};  // a holder silent this long is presumed gone
  std::chrono::seconds renew_deadline{20};  // the holder gives up if it cannot renew within this
  std::chrono::seconds retry_period{5};     // between tries, for candidates and renewals
};

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<const ApiEndpoint> ep, std::string ns, std::string name, std::string identity,
                LeaseTimings t = {})
      : conn_(std::move(ep)), ns_(std::move(ns)), name_(std::move(name)), identity_(std::move(identity)), t_(t) {}
  ~LeaderElector() { StopRenewing(); }

  Status Init() { return conn_.Init(); }
  const std::string& identity() const { return identity_; }

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

  // Renews on a thread every retry period; if no renewal succeeds for renew_deadline, calls
  // on_lost once (the caller must stop acting as leader: we exit).
  void StartRenewing(std::function<void()> on_lost) {
    renewer_ = std::thread([this, on_lost] {
      auto last_ok = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, t_.retry_period, [this] { return stop_; })) {
        lock.unlock();
        Status s = TryAcquireOrRenew();
        lock.lock();
        if (s.ok()) {
          last_ok = std::chrono::steady_clock::now();
        } else {
          LogWarn("renewing lease " + ns_ + "/" + name_ + " failed: " + s.message());
          if (std::chrono::steady_clock::now() - last_ok > t_.renew_deadline) {
            on_lost();
            return;
          }
        }
      }
    });
  }

  void StopRenewing() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (renewer_.joinable()) renewer_.join();
  }

  // Gives the lease up (empty holder), so a successor need not wait a lease duration.
  void Release() {
    StopRenewing();
    if (record_.is<picojson::object>() && holder_ == identity_) {
      picojson::value lease = record_;
      picojson::object& spec = lease.get<picojson::object>()["spec"].get<picojson::object>();
      spec["holderIdentity"] = picojson::value(std::string());
      spec["leaseDurationSeconds"] = picojson::value(1.0);
      spec["renewTime"] = picojson::value(MicroTime());
      auto r = conn_.Request("PUT", api::Leases(ns_) + "/" + name_, ToJson(lease));
      Status s = Check(r, "release lease " + ns_ + "/" + name_);
      if (s.ok()) {
        LogInfo("released lease " + ns_ + "/" + name_);
      } else {
        LogWarn(s.message());
      }
    }
  }

 private:
  // RFC 3339 with microseconds, as metav1.MicroTime.
  static std::string MicroTime() { return logging::UtcNow(6); }

  picojson::value NewLease(const std::string& now, double transitions) const {
    picojson::object meta, spec, lease;
    meta["name"] = picojson::value(name_);
    meta["namespace"] = picojson::value(ns_);
    spec["holderIdentity"] = picojson::value(identity_);
    spec["leaseDurationSeconds"] = picojson::value(static_cast<double>(t_.lease_duration.count()));
    spec["acquireTime"] = picojson::value(now);
    spec["renewTime"] = picojson::value(now);
    spec["leaseTransitions"] = picojson::value(transitions);
    lease["apiVersion"] = picojson::value(std::string("coordination.k8s.io/v1"));
    lease["kind"] = picojson::value(std::string("Lease"));
    lease["metadata"] = picojson::value(meta);
    lease["spec"] = picojson::value(spec);
    return picojson::value(lease);
  }

  // One round: create the lease, renew ours, or take over an expired or released one.
  // Errors: kConflict "held by X" when someone else holds it, or the API's error.
  Status TryAcquireOrRenew() {
    std::string path = api::Leases(ns_) + "/" + name_;
    std::string now = MicroTime();
    auto got = conn_.Request("GET", path);
    if (got.ok() && got->status == 404) {
      auto r = conn_.Request("POST", api::Leases(ns_), ToJson(NewLease(now, 0)));
      if (Status s = Check(r, "create lease " + ns_ + "/" + name_); !s.ok()) return s;
      return Remember(r->body);
    }
    if (Status s = Check(got, "get lease " + ns_ + "/" + name_); !s.ok()) return s;
    Result<picojson::value> json = ParseJson(got->body);
    if (!json.ok() || !json->get("spec").is<picojson::object>()) return Status::Error("lease " + name_ + " is not readable");
    const picojson::value& spec = json->get("spec");
    std::string holder = spec.get("holderIdentity").is<std::string>() ? spec.get("holderIdentity").get<std::string>() : "";
    std::string renew = spec.get("renewTime").is<std::string>() ? spec.get("renewTime").get<std::string>() : "";
    double duration = spec.get("leaseDurationSeconds").is<double>() ? spec.get("leaseDurationSeconds").get<double>() : 0;
    double transitions = spec.get("leaseTransitions").is<double>() ? spec.get("leaseTransitions").get<double>() : 0;
    // Local observation: the record counts as expired only after it stayed the same for a
    // whole lease duration on our clock.
    std::string observed = holder + "|" + renew;
    auto local_now = std::chrono::steady_clock::now();
    if (observed != observed_record_) {
      observed_record_ = observed;
      observed_at_ = local_now;
    }
    bool expired = local_now - observed_at_ > std::chrono::duration<double>(duration);
    if (!holder.empty() && holder != identity_ && !expired) return Status(Status::kConflict, "held by " + holder);
    picojson::value lease = *json;
    picojson::object& s = lease.get<picojson::object>()["spec"].get<picojson::object>();
    s["holderIdentity"] = picojson::value(identity_);
    s["leaseDurationSeconds"] = picojson::value(static_cast<double>(t_.lease_duration.count()));
    s["renewTime"] = picojson::value(now);
    if (holder != identity_) {
      s["acquireTime"] = picojson::value(now);
      s["leaseTransitions"] = picojson::value(transitions + 1);
    }
    auto r = conn_.Request("PUT", path, ToJson(lease));
    if (Status st = Check(r, "update lease " + ns_ + "/" + name_); !st.ok()) return st;
    return Remember(r->body);
  }

  Status Remember(const std::string& body) {
    Result<picojson::value> json = ParseJson(body);
    if (!json.ok()) return json.status();
    record_ = *json;
    holder_ = identity_;
    const picojson::value& spec = record_.get("spec");
    observed_record_ = identity_ + "|" + (spec.get("renewTime").is<std::string>() ? spec.get("renewTime").get<std::string>() : "");
    observed_at_ = std::chrono::steady_clock::now();
    return Status::Ok();
  }

  ApiConnection conn_;
  std::string ns_, name_, identity_;
  LeaseTimings t_;
  picojson::value record_;
  std::string holder_;
  std::string observed_record_;
  std::chrono::steady_clock::time_point observed_at_{};
  std::thread renewer_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
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
