// Events as the fake's controllers write them, the way client-go's EventRecorder does
// (tools/record/event.go makeEvent; events_cache.go EventLogger: an event like one already
// written, about the same object from the same component with the same type, reason and
// message, is not made anew: the one written gets its count raised and lastTimestamp moved).
// Callers hold Store::mu.
#pragma once
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "test/fake/fake_store.hpp"

namespace fake {

// A new core/v1 Event (not yet stored) about obj, a stored object, from `component`.
Json MakeEvent(const Json& obj, const std::string& component, const std::string& type, const std::string& reason,
               const std::string& message);

// One component's recorder: Record writes an event, or counts one more of an earlier one.
class EventRecorder {
 public:
  EventRecorder(Store& s, std::string component) : s_(s), component_(std::move(component)) {}

  void Record(const Json& obj, const std::string& type, const std::string& reason, const std::string& message);

  // Forgets the events about an object that is gone (uids are never reused).
  void Forget(const std::string& uid);

 private:
  Store& s_;
  const std::string component_;
  std::map<std::string, std::string> written_;  // uid/type/reason/message -> the event's key
};

}  // namespace fake
