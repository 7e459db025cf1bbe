// The bodies of fake_events.hpp (the contracts are there).
#include "test/fake/fake_events.hpp"

#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace fake {

Json MakeEvent(const Json& obj, const std::string& component, const std::string& type, const std::string& reason,
               const std::string& message) {
  const std::string& ns = Str(obj, {"metadata", "namespace"});
  const std::string& name = Str(obj, {"metadata", "name"});
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(NowNs()));
  const std::string now = NowRfc3339();
  // Members in name order: each is then appended, not inserted (controllers write many).
  JsonObject inv;
  inv["apiVersion"] = Json(Str(obj, {"apiVersion"}));
  inv["kind"] = Json(Str(obj, {"kind"}));
  inv["name"] = Json(name);
  if (!ns.empty()) inv["namespace"] = Json(ns);
  inv["resourceVersion"] = Json(Str(obj, {"metadata", "resourceVersion"}));
  inv["uid"] = Json(Str(obj, {"metadata", "uid"}));
  JsonObject meta;
  meta["name"] = Json(name + suffix);
  meta["namespace"] = Json(ns.empty() ? "default" : ns);
  JsonObject src;
  src["component"] = Json(component);
  Json ev{JsonObject()};
  JsonObject& o = ev.get<JsonObject>();
  o["apiVersion"] = Json("v1");
  o["count"] = Json(1.0);
  o["firstTimestamp"] = Json(now);
  o["involvedObject"] = Json(std::move(inv));
  o["kind"] = Json("Event");
  o["lastTimestamp"] = Json(now);
  o["message"] = Json(message);
  o["metadata"] = Json(std::move(meta));
  o["reason"] = Json(reason);
  o["reportingComponent"] = Json(component);
  o["reportingInstance"] = Json("");
  o["source"] = Json(std::move(src));
  o["type"] = Json(type);
  InitMeta(ev);
  return ev;
}

void EventRecorder::Record(const Json& obj, const std::string& type, const std::string& reason,
                           const std::string& message) {
  const std::string key = Str(obj, {"metadata", "uid"}) + "/" + type + "/" + reason + "/" + message;
  auto it = written_.find(key);
  const Json* earlier = it == written_.end() ? nullptr : s_.Get("events", it->second);
  if (earlier != nullptr) {  // the recorder patches it; one gone since is made anew, as there
    Json again = *earlier;
    JsonObject& o = again.get<JsonObject>();
    const Json* count = Member(again, "count");
    o["count"] = Json((count != nullptr && count->is<double>() ? count->get<double>() : 1) + 1);
    o["lastTimestamp"] = Json(NowRfc3339());
    s_.Put("events", std::move(again));
    return;
  }
  JsonRef stored = s_.Put("events", MakeEvent(obj, component_, type, reason, message));
  written_[key] = ObjectKey(Str(*stored, {"metadata", "namespace"}), Str(*stored, {"metadata", "name"}));
}

void EventRecorder::Forget(const std::string& uid) {
  const std::string prefix = uid + "/";
  auto it = written_.lower_bound(prefix);
  while (it != written_.end() && it->first.compare(0, prefix.size(), prefix) == 0) it = written_.erase(it);
}

}  // namespace fake
