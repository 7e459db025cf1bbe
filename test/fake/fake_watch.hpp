// The fake API server's answers that follow the history as it grows: watches, and the
// benchmark's GET /fake/wait. Each is an Exchange (fake_https.hpp) that the event loop asks
// again after every round of requests; it reads the history under Store::mu and never blocks.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "test/fake/fake_https.hpp"
#include "test/fake/fake_requestinfo.hpp"
#include "test/fake/fake_store.hpp"

namespace fake {

// What watches obey besides the store, changed by test controls. Guarded by Store::mu;
// paused_until_ns is also read without it.
struct WatchControls {
  uint64_t generation = 0;  // drop-watches bumps it: the watches of an older one end
  bool stopping = false;
  std::atomic<Clock::rep> paused_until_ns{0};  // no answers and no events before then
  int bookmark_seconds = 5;
  Clock::time_point PausedUntil() const { return Clock::time_point(Clock::duration(paused_until_ns.load())); }
};

// A watch's answer: HTTP 200, chunked, one JSON event per line. From resourceVersion RV it sends
// every stored change after RV, then live changes, until timeoutSeconds, a dropped-watches
// control or the server's stop. With selectors, a change that makes an object match is ADDED
// and one that makes it stop is DELETED (the object as it was), as the watch cache sends them. RV "" or "0" starts with ADDED events for the current objects.
// An RV older than the history, which starts when the server does, gets one ERROR event with a
// 410 Expired Status (cacher.go newErrWatcher). A watcher that falls behind the whole history is ended. What was written
// while the server was paused is sent when the pause ends.
class WatchStream final : public Exchange {
 public:
  struct Params {
    const ResourceType* type = nullptr;
    std::string ns;  // "" = all
    std::vector<Requirement> labels, fields;
    bool bookmarks = false;
    std::function<Json(const Json&)> as_table;  // set: events carry one-row Tables (kubectl get -w)
    std::string rv;
    int timeout_seconds = 1800;
  };

  WatchStream(Store& store, const WatchControls& controls, Params p);

  bool FollowsStore() const override { return true; }

  bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) override;

 private:
  // Sends the answer's head and reads from where RV says; false when the answer is complete
  // (410: the RV is older than the history).
  bool Start(std::string& out, Clock::time_point now);

  bool End(std::string& out);

  bool Matches(const std::string& obj_ns, const Json& obj) const;

  // The event's line: the shared pre-serialised one, or one made here (Tables, initial ADDED).
  void AddLine(const std::string& type, const Json& obj, const std::string* shared);

  Store& store_;
  const WatchControls& ctl_;
  Params p_;
  Bucket& bucket_;
  bool started_ = false;
  uint64_t generation_ = 0;
  uint64_t cursor_ = 0;  // the next event of the history to look at
  Clock::time_point deadline_, next_bookmark_;
  std::string pending_;  // lines not sent yet
};

// GET /fake/wait's answer: waits until `want` distinct objects (by name) whose string at
// `path` starts with `prefix` were seen, after the RV it starts from, Bound (status.phase) or
// deleted; then {"count","lastNs"} (200), or 504 with the count so far after the timeout. It
// reads the history every 2 ms rather than after every round: the times come from the history,
// and looking after every write would be the fake's own load during a burst.
class WaitStream final : public Exchange {
 public:
  struct Params {
    std::string plural;
    bool until_deleted = false;  // else until Bound
    std::string prefix;
    std::vector<std::string> path;  // keys from the object to the string compared
    long want = 1;
    int timeout_seconds = 60;
  };

  // `cursor`: the first event to look at (the caller checked the RV against the history).
  WaitStream(Store& store, const WatchControls& controls, Params p, uint64_t cursor);

  bool FollowsStore() const override { return true; }

  bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) override;

 private:
  std::string AtPath(const Json& obj) const;

  static bool Answer(std::string& out, int code, const std::string& body);

  Store& store_;
  const WatchControls& ctl_;
  Params p_;
  Bucket& bucket_;
  uint64_t cursor_;
  Clock::time_point deadline_;
  Clock::time_point next_look_{};
  std::set<std::string> seen_;
  int64_t last_ns_ = 0;
};

}  // namespace fake
