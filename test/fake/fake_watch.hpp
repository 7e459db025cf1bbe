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
// control or the server's stop. RV "" or "0" starts with ADDED events for the current objects.
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

  WatchStream(Store& store, const WatchControls& controls, Params p)
      : store_(store), ctl_(controls), p_(std::move(p)), bucket_(store.bucket(p_.type->plural)) {}

  bool FollowsStore() const override { return true; }

  bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) override {
    Store::Lock l(store_);
    if (!started_ && !Start(out, now)) return true;
    if (cursor_ < bucket_.first_seq) return End(out);  // fell behind the history: the real cacher ends such watchers
    for (; cursor_ < bucket_.NextSeq(); ++cursor_) {
      const WatchEvent& e = bucket_.At(cursor_);
      if (Matches(e.ns, *e.object)) AddLine(e.type, *e.object, &e.Line());
    }
    if (p_.bookmarks && now >= next_bookmark_) {
      JsonObject obj, meta, line;
      meta["resourceVersion"] = Json(std::to_string(store_.rv()));
      obj["kind"] = Json(p_.type->kind);
      obj["apiVersion"] = Json(p_.type->ApiVersion());
      obj["metadata"] = Json(meta);
      line["type"] = Json("BOOKMARK");
      line["object"] = Json(obj);
      pending_ += ToText(Json(line)) + "\n";
      next_bookmark_ = now + std::chrono::seconds(ctl_.bookmark_seconds);
    }
    bool paused = now < ctl_.PausedUntil();
    if (!pending_.empty() && !paused) {
      AppendChunk(out, pending_);
      pending_.clear();
    }
    if (ctl_.stopping || generation_ != ctl_.generation || now >= deadline_) return End(out);
    wake = std::min(wake, deadline_);
    if (p_.bookmarks) wake = std::min(wake, next_bookmark_);
    if (paused) wake = std::min(wake, ctl_.PausedUntil());
    return false;
  }

 private:
  // Sends the answer's head and reads from where RV says; false when the answer is complete
  // (410: the RV is older than the history).
  bool Start(std::string& out, Clock::time_point now) {
    started_ = true;
    out += "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    generation_ = ctl_.generation;
    deadline_ = now + std::chrono::seconds(p_.timeout_seconds);
    next_bookmark_ = now + std::chrono::seconds(ctl_.bookmark_seconds);
    cursor_ = bucket_.NextSeq();
    if (p_.rv.empty() || p_.rv == "0") {
      for (const auto& [key, obj] : bucket_.objects)
        if (Matches(Str(*obj, {"metadata", "namespace"}), *obj)) AddLine("ADDED", *obj, nullptr);
      return true;
    }
    uint64_t from = std::strtoull(p_.rv.c_str(), nullptr, 10);
    if (from < bucket_.floor_rv) {
      JsonObject line;
      line["type"] = Json("ERROR");
      line["object"] = StatusBody(410, "Expired", "too old resource version: " + p_.rv + " (" + std::to_string(bucket_.floor_rv) + ")");
      AppendChunk(out, ToText(Json(line)) + "\n");
      out += kChunkedEnd;
      return false;
    }
    cursor_ = bucket_.SeqAfter(from);
    return true;
  }

  bool End(std::string& out) {
    out += kChunkedEnd;
    return true;
  }

  bool Matches(const std::string& obj_ns, const Json& obj) const {
    return (p_.ns.empty() || obj_ns == p_.ns) && MatchesLabels(obj, p_.labels) && MatchesFields(obj, p_.fields);
  }

  // The event's line: the shared pre-serialised one, or one made here (Tables, initial ADDED).
  void AddLine(const std::string& type, const Json& obj, const std::string* shared) {
    if (!p_.as_table && shared != nullptr) {
      pending_ += *shared;
      return;
    }
    JsonObject line;
    line["type"] = Json(type);
    line["object"] = p_.as_table ? p_.as_table(obj) : obj;
    pending_ += ToText(Json(line)) + "\n";
  }

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
  WaitStream(Store& store, const WatchControls& controls, Params p, uint64_t cursor)
      : store_(store), ctl_(controls), p_(std::move(p)), bucket_(store.bucket(p_.plural)), cursor_(cursor),
        deadline_(Clock::now() + std::chrono::seconds(p_.timeout_seconds)) {}

  bool FollowsStore() const override { return true; }

  bool Step(std::string& out, Clock::time_point now, Clock::time_point& wake) override {
    if (now < next_look_) {
      wake = std::min(wake, next_look_);
      return false;
    }
    Store::Lock l(store_);
    if (cursor_ < bucket_.first_seq) return Answer(out, 410, ToText(StatusBody(410, "Expired", "the wait fell behind the history")));
    for (; cursor_ < bucket_.NextSeq(); ++cursor_) {
      const WatchEvent& e = bucket_.At(cursor_);
      bool hit = p_.until_deleted ? e.type == "DELETED" : e.type != "DELETED" && Str(*e.object, {"status", "phase"}) == "Bound";
      if (hit && AtPath(*e.object).rfind(p_.prefix, 0) == 0 && seen_.insert(e.name).second) last_ns_ = e.t_ns;
    }
    bool reached = static_cast<long>(seen_.size()) >= p_.want;
    if (reached || ctl_.stopping || now >= deadline_)
      return Answer(out, reached ? 200 : 504,
                    "{\"count\":" + std::to_string(seen_.size()) + ",\"lastNs\":" + std::to_string(last_ns_) + "}");
    next_look_ = now + std::chrono::milliseconds(2);
    wake = std::min(wake, next_look_);
    return false;
  }

 private:
  std::string AtPath(const Json& obj) const {
    const Json* cur = &obj;
    for (const auto& k : p_.path)
      if ((cur = Member(*cur, k)) == nullptr) return std::string();
    return cur->is<std::string>() ? cur->get<std::string>() : std::string();
  }

  static bool Answer(std::string& out, int code, const std::string& body) {
    httplib::Response res;
    res.status = code;
    res.set_content(body, "application/json");
    AppendResponse(out, res);
    return true;
  }

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
