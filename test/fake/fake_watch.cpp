// The bodies of fake_watch.hpp (the contracts are there).
#include "test/fake/fake_watch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <httplib.h>

namespace fake {

WatchStream::WatchStream(Store& store, const WatchControls& controls, Params p) : store_(store), ctl_(controls),
                         p_(std::move(p)), bucket_(store.bucket(p_.type->plural)) {}

bool WatchStream::Step(std::string& out, Clock::time_point now, Clock::time_point& wake) {
  Store::Lock l(store_);
  if (!started_ && !Start(out, now)) return true;
  if (cursor_ < bucket_.first_seq) return End(out);  // fell behind the history: the real cacher ends such watchers
  for (; cursor_ < bucket_.NextSeq(); ++cursor_) {
    const WatchEvent& e = bucket_.At(cursor_);
    // As cache_watcher.go convertToWatchEvent: the object before and after the change, each
    // through this watch's selectors. A DELETED event's object already is the one it sends.
    const bool now = e.type != "DELETED" && Matches(e.ns, *e.object);
    const bool was = e.prev != nullptr && Matches(e.ns, *e.prev);
    if (!now && !was) continue;
    if (e.type != "MODIFIED" || (now && was)) AddLine(e.type, *e.object, &e.Line());  // as written
    else if (now) AddLine("ADDED", *e.object, &e.EnteredLine());                      // entered the selection
    else AddLine("DELETED", e.Left(), &e.LeftLine());                                 // left it
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

bool WatchStream::Start(std::string& out, Clock::time_point now) {
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

bool WatchStream::End(std::string& out) {
  out += kChunkedEnd;
  return true;
}

bool WatchStream::Matches(const std::string& obj_ns, const Json& obj) const {
  return (p_.ns.empty() || obj_ns == p_.ns) && MatchesLabels(obj, p_.labels) && MatchesFields(obj, p_.fields);
}

void WatchStream::AddLine(const std::string& type, const Json& obj, const std::string* shared) {
  if (!p_.as_table && shared != nullptr) {
    pending_ += *shared;
    return;
  }
  JsonObject line;
  line["type"] = Json(type);
  line["object"] = p_.as_table ? p_.as_table(obj) : obj;
  pending_ += ToText(Json(line)) + "\n";
}

WaitStream::WaitStream(Store& store, const WatchControls& controls, Params p, uint64_t cursor) : store_(store),
                       ctl_(controls), p_(std::move(p)), bucket_(store.bucket(p_.plural)), cursor_(cursor),
                       deadline_(Clock::now() + std::chrono::seconds(p_.timeout_seconds)) {}

bool WaitStream::Step(std::string& out, Clock::time_point now, Clock::time_point& wake) {
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

std::string WaitStream::AtPath(const Json& obj) const {
  const Json* cur = &obj;
  for (const auto& k : p_.path)
    if ((cur = Member(*cur, k)) == nullptr) return std::string();
  return cur->is<std::string>() ? cur->get<std::string>() : std::string();
}

bool WaitStream::Answer(std::string& out, int code, const std::string& body) {
  httplib::Response res;
  res.status = code;
  res.set_content(body, "application/json");
  AppendResponse(out, res);
  return true;
}

}  // namespace fake
