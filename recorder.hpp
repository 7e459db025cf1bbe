// Events on objects, as `kubectl describe` shows them. The same event repeated (same object,
// type, reason and message) bumps the existing event's count and lastTimestamp instead of
// adding a new one, as Kubernetes' own event recorder does. Events are best effort: a failure
// to record one is logged, never fatal. Used from one thread (the worker).
#pragma once
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <string>
#include <unordered_map>

#include "k8s.hpp"
#include "log.hpp"

// The object an event is about.
struct Involved {
  std::string kind;        // PersistentVolumeClaim | PersistentVolume
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resource_version;
};

inline std::string Rfc3339Now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class EventRecorder {
 public:
  EventRecorder(KubeApi* api, std::string component) : api_(api), component_(std::move(component)) {}

  void Normal(const Involved& obj, const std::string& reason, const std::string& message) {
    Record(obj, "Normal", reason, message);
  }
  void Warning(const Involved& obj, const std::string& reason, const std::string& message) {
    Record(obj, "Warning", reason, message);
  }

 private:
  static constexpr size_t kRemembered = 4096;  // events whose count we can still bump

  void Record(const Involved& obj, const std::string& type, const std::string& reason, const std::string& message) {
    std::string key = obj.uid + "\n" + type + "\n" + reason + "\n" + message;
    std::string now = Rfc3339Now();
    auto it = seen_.find(key);
    if (it != seen_.end()) {
      Event& e = it->second;
      e.count++;
      e.last_timestamp = now;
      Status s = api_->BumpEvent(e);
      if (s.ok()) return;
      if (s.code() != Status::kNotFound) {
        LogWarn("event " + reason + " on " + obj.name + " not recorded: " + s.message());
        return;
      }
      seen_.erase(it);  // expired (events live an hour): make a new one
    }
    Event e;
    // Cluster-scoped objects' events go to "default", as Kubernetes' recorder does.
    e.meta.namespace_ = obj.namespace_.empty() ? "default" : obj.namespace_;
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".%llx",
                  static_cast<unsigned long long>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                          .count()));
    e.meta.name = obj.name + suffix;
    e.involved_kind = obj.kind;
    e.involved_namespace = obj.namespace_;
    e.involved_name = obj.name;
    e.involved_uid = obj.uid;
    e.involved_resource_version = obj.resource_version;
    e.type = type;
    e.reason = reason;
    e.message = message;
    e.count = 1;
    e.first_timestamp = e.last_timestamp = now;
    e.source_component = component_;
    Status s = api_->CreateEvent(e);
    if (!s.ok()) {
      LogWarn("event " + reason + " on " + obj.name + " not recorded: " + s.message());
      return;
    }
    if (order_.size() >= kRemembered) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(key);
    seen_[key] = e;
  }

  KubeApi* api_;
  std::string component_;
  std::unordered_map<std::string, Event> seen_;
  std::deque<std::string> order_;
};
