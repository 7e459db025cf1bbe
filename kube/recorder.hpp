// Events on objects, as `kubectl describe` shows them. The same event repeated (same object,
// type, reason and message) bumps the existing event's count and lastTimestamp instead of
// adding a new one, as Kubernetes' own event recorder does. Events are best effort: a failure
// to record one is logged, never fatal. Like client-go's broadcaster, events are sent by a
// thread of their own over their own connection, so the workers never wait for them; at most
// kQueued wait (the oldest are dropped past that, with a log line).
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "kube/k8s.hpp"
#include "base/log.hpp"

// The object an event is about.
struct Involved {
  std::string kind;        // PersistentVolumeClaim | PersistentVolume
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resource_version;
};

// Normal, Warning, WarningOnce, NormalOnce, Mute and Stop may be called from any thread.
class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<const ApiEndpoint> ep, std::string component)
      : conn_(std::move(ep)), api_(&conn_), component_(std::move(component)) {}
  ~EventRecorder() { Stop(); }

  // Starts the sending thread. Errors: those of ApiConnection::Init (a CA, or a client
  // certificate and key, that cannot be used); no thread is started then.
  Status Start();

  // Sends what is queued for up to kDrain, then stops the thread: a request still in progress
  // then (a server that does not answer) is cut short.
  void Stop();

  // From now on events are dropped: the instance is stopping, and what fails now fails because
  // the stop cut it short (not worth a Warning). Those already queued are still sent by Stop.
  void Mute();

  // Queue an event of type Normal or Warning on `obj` and return at once; the thread sends
  // it. Nothing is queued once muted. Past kQueued waiting, the oldest is dropped, with a log
  // line. A failure to send is logged, never returned.
  void Normal(const Involved& obj, const std::string& reason, const std::string& message);
  void Warning(const Involved& obj, const std::string& reason, const std::string& message);
  // A warning that every instance of a DaemonSet may send: it is named after what it says,
  // so the API server keeps the first one made and refuses the others (409).
  void WarningOnce(const Involved& obj, const std::string& reason, const std::string& message);
  void NormalOnce(const Involved& obj, const std::string& reason, const std::string& message);

 private:
  static constexpr size_t kQueued = 1000;
  static constexpr std::chrono::seconds kDrain{3};  // how long Stop sends what is queued

  struct Pending {
    Involved obj;
    std::string type, reason, message;
    bool once = false;
  };

  void Enqueue(Pending p);

  void Run();

  static constexpr size_t kRemembered = 4096;  // events whose count we can still bump

  // What makes two events the same one (its count is bumped instead of a new one made).
  static std::string KeyOf(const Pending& p);

  // Bumps the event if it was seen before, else creates it; an event seen before that has
  // expired meanwhile (events live an hour) is made anew.
  void Record(const Pending& p);

  Event NewEvent(const Pending& p, const std::string& now) const;

  void Remember(const std::string& key, const Event& e);

  ApiConnection conn_;  // used by the recorder's thread only
  KubeApi api_;
  std::string component_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stop_ = false;
  bool muted_ = false;
  bool done_ = false;  // Run has returned (or is about to)
  std::thread thread_;
  std::unordered_map<std::string, Event> seen_;
  std::deque<std::string> order_;
};
