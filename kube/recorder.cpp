// The event recorder of recorder.hpp: its queue, its thread, and the count bumps.
#include "kube/recorder.hpp"

#include <cstdio>

Status EventRecorder::Start() {
  if (Status s = conn_.Init(); !s.ok()) return s;
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void EventRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, kDrain, [this] { return done_; })) {
    if (!queue_.empty()) LogWarn("stopping: " + std::to_string(queue_.size()) + " events not sent");
    queue_.clear();
    while (!done_) {  // a request may start just after a Close(): keep at it
      conn_.Close();
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
  lock.unlock();
  thread_.join();
}

void EventRecorder::Mute() {
  std::lock_guard<std::mutex> lock(mu_);
  muted_ = true;
}

void EventRecorder::Normal(const Involved& obj, const std::string& reason, const std::string& message) {
  Enqueue({obj, "Normal", reason, message});
}

void EventRecorder::Warning(const Involved& obj, const std::string& reason, const std::string& message) {
  Enqueue({obj, "Warning", reason, message});
}

void EventRecorder::WarningOnce(const Involved& obj, const std::string& reason, const std::string& message) {
  Enqueue({obj, "Warning", reason, message, true});
}

void EventRecorder::NormalOnce(const Involved& obj, const std::string& reason, const std::string& message) {
  Enqueue({obj, "Normal", reason, message, true});
}

void EventRecorder::Enqueue(Pending p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (muted_) return;
  if (queue_.size() >= kQueued) {
    LogWarn("too many events waiting; dropping " + queue_.front().reason + " on " + queue_.front().obj.name);
    queue_.pop_front();
  }
  queue_.push_back(std::move(p));
  cv_.notify_all();  // (Stop may wait on cv_ too)
}

void EventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = std::chrono::steady_clock::time_point::max();
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_ && deadline == std::chrono::steady_clock::time_point::max())
      deadline = std::chrono::steady_clock::now() + kDrain;
    if (queue_.empty() || std::chrono::steady_clock::now() > deadline) break;
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Record(p);
    lock.lock();
  }
  done_ = true;
  cv_.notify_all();
}

std::string EventRecorder::KeyOf(const Pending& p) {
  return p.obj.uid + "\n" + p.type + "\n" + p.reason + "\n" + p.message;
}

void EventRecorder::Record(const Pending& p) {
  const std::string key = KeyOf(p), now = logging::UtcNow(0);
  if (p.once) {
    Status s = api_.CreateEvent(NewEvent(p, now));
    if (!s.ok() && s.code() != Status::kConflict) LogWarn("event " + p.reason + " on " + p.obj.name + " not recorded: " + s.message());
    return;
  }
  Status s = Status::NotFound("");
  if (auto it = seen_.find(key); it != seen_.end()) {
    Event e = it->second;
    e.count++;
    e.last_timestamp = now;
    s = api_.BumpEvent(e);
    if (s.ok()) return Remember(key, e);
  }
  if (s.code() == Status::kNotFound) {
    Event e = NewEvent(p, now);
    s = api_.CreateEvent(e);
    if (s.ok()) return Remember(key, e);
  }
  LogWarn("event " + p.reason + " on " + p.obj.name + " not recorded: " + s.message());
}

Event EventRecorder::NewEvent(const Pending& p, const std::string& now) const {
  Event e;
  // Cluster-scoped objects' events go to "default", as Kubernetes' recorder does.
  e.meta.namespace_ = p.obj.namespace_.empty() ? "default" : p.obj.namespace_;
  char suffix[32];
  unsigned long long id = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
  if (p.once) {  // FNV-1a of what the event says: the same name on every instance
    id = 14695981039346656037ULL;
    for (char c : KeyOf(p)) id = (id ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  std::snprintf(suffix, sizeof suffix, ".%llx", id);
  e.meta.name = p.obj.name.substr(0, 200) + suffix;
  e.involved_kind = p.obj.kind;
  e.involved_namespace = p.obj.namespace_;
  e.involved_name = p.obj.name;
  e.involved_uid = p.obj.uid;
  e.involved_resource_version = p.obj.resource_version;
  e.type = p.type;
  e.reason = p.reason;
  e.message = ValidUtf8(p.message);
  e.count = 1;
  e.first_timestamp = e.last_timestamp = now;
  e.source_component = component_;
  return e;
}

void EventRecorder::Remember(const std::string& key, const Event& e) {
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    it->second = e;
    return;
  }
  if (order_.size() >= kRemembered) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  seen_[key] = e;
}
