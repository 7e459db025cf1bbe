// The bodies of fake_store.hpp (the contracts are there).
#include "test/fake/fake_store.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace fake {

const std::vector<ResourceType>& ResourceTypes() {
  static const std::vector<ResourceType> types = {
      {"", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true, {"pvc"}, true, false, true},
      {"", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false, {"pv"}, true, false, true},
      {"", "v1", "events", "event", "Event", true, {"ev"}, false, true, false},
      {"", "v1", "pods", "pod", "Pod", true, {"po"}, true, false, true},
      {"", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, true, false, true},
      {"", "v1", "nodes", "node", "Node", false, {"no"}, true, false, false},
      {"storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", false, {"sc"}, false, false, true},
      {"coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, false, true, false, false},
      {"storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", false, {}, false, false, true, false},
      {"storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", true, {}, false, false, false, false},
  };
  return types;
}

const ResourceType* FindType(const std::string& group, const std::string& version, const std::string& plural) {
  for (const auto& t : ResourceTypes())
    if (t.group == group && t.version == version && t.plural == plural) return &t;
  return nullptr;
}

const ResourceType& TypeOf(const std::string& plural) {
  for (const auto& t : ResourceTypes())
    if (t.plural == plural) return t;
  return ResourceTypes()[0];
}

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> b(bytes);
  RAND_bytes(b.data(), static_cast<int>(bytes));
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string NewUid() {
  std::string hex = RandomHex(16);
  hex[12] = '4';                                                   // version 4
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];  // variant 10xx
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" + hex.substr(20);
}

bool IsDeleting(const Json& obj) {
  const Json* t = Path(obj, {"metadata", "deletionTimestamp"});
  return t != nullptr && t->is<std::string>();
}

void InitMeta(Json& obj) {
  JsonObject& m = Meta(obj);
  m["uid"] = Json(NewUid());
  m["creationTimestamp"] = Json(NowRfc3339());
  m.erase("deletionTimestamp");
  m.erase("resourceVersion");
}

void DropEmptyMeta(Json& obj) {
  JsonObject& m = Meta(obj);
  for (const char* k : {"finalizers", "labels", "annotations", "ownerReferences", "managedFields"}) {
    auto it = m.find(k);
    if (it == m.end()) continue;
    const Json& v = it->second;
    if ((v.is<JsonArray>() && v.get<JsonArray>().empty()) || (v.is<JsonObject>() && v.get<JsonObject>().empty())) m.erase(it);
  }
}

namespace {

std::string EventLine(const std::string& type, const Json& obj) {
  JsonObject line;
  line["object"] = obj;
  line["type"] = Json(type);
  return ToText(Json(line)) + "\n";
}

}  // namespace

const std::string& WatchEvent::Line() const {
  if (line_.empty()) line_ = EventLine(type, *object);
  return line_;
}

const std::string& WatchEvent::EnteredLine() const {
  if (entered_line_.empty()) entered_line_ = EventLine("ADDED", *object);
  return entered_line_;
}

const Json& WatchEvent::Left() const {
  if (!left_) {
    Json gone = *prev;
    Meta(gone)["resourceVersion"] = Json(std::to_string(rv));
    left_ = std::make_shared<const Json>(std::move(gone));
  }
  return *left_;
}

const std::string& WatchEvent::LeftLine() const {
  if (left_line_.empty()) left_line_ = EventLine("DELETED", Left());
  return left_line_;
}

uint64_t Bucket::SeqAfter(uint64_t rv) const {
  auto it = std::upper_bound(history.begin(), history.end(), rv, [](uint64_t v, const EventPtr& e) { return v < e->rv; });
  return first_seq + static_cast<uint64_t>(it - history.begin());
}

bool Feed::Skip() {
  const bool any = cursor_ != b_->NextSeq() || cursor_ < b_->first_seq;
  cursor_ = b_->NextSeq();
  return any;
}

Store::Store(size_t history_limit) : history_limit_(history_limit == 0 ? 1 : history_limit) {
  for (const auto& t : ResourceTypes()) buckets_[t.plural];
}

Bucket& Store::bucket(std::string_view plural) {
  auto it = buckets_.find(plural);
  if (it == buckets_.end()) it = buckets_.emplace(std::string(plural), Bucket()).first;
  return it->second;
}

const JsonRef& Store::Ref(std::string_view plural, const std::string& key) {
  static const JsonRef kNone;
  const auto& objects = bucket(plural).objects;
  auto it = objects.find(key);
  return it == objects.end() ? kNone : it->second;
}

JsonRef Store::Put(std::string_view plural, Json obj) {
  std::string key = ObjectKey(Str(obj, {"metadata", "namespace"}), Str(obj, {"metadata", "name"}));
  auto& b = bucket(plural);
  DropEmptyMeta(obj);
  Meta(obj)["resourceVersion"] = Json(std::to_string(++rv_));
  auto stored = std::make_shared<const Json>(std::move(obj));
  JsonRef& slot = b.objects[key];
  JsonRef prev = std::move(slot);
  slot = stored;
  const char* type = prev ? "MODIFIED" : "ADDED";  // before prev is moved into the event
  Record(b, type, stored, std::move(prev));
  return stored;
}

JsonRef Store::Remove(std::string_view plural, const std::string& key) {
  auto& b = bucket(plural);
  auto it = b.objects.find(key);
  if (it == b.objects.end()) return std::make_shared<const Json>();
  JsonRef prev = std::move(it->second);
  b.objects.erase(it);
  Json obj = *prev;
  Meta(obj)["resourceVersion"] = Json(std::to_string(++rv_));
  auto last = std::make_shared<const Json>(std::move(obj));
  Record(b, "DELETED", last, std::move(prev));
  return last;
}

JsonRef Store::Commit(std::string_view plural, Json obj) {
  if (IsDeleting(obj) && StringList(obj, {"metadata", "finalizers"}).empty())
    return Remove(plural, ObjectKey(Str(obj, {"metadata", "namespace"}), Str(obj, {"metadata", "name"})));
  return Put(plural, std::move(obj));
}

void Store::Compact() {
  for (auto& [plural, b] : buckets_) {
    b.first_seq += b.history.size();
    b.history.clear();
    b.floor_rv = rv_;
  }
}

void Store::Record(Bucket& b, const char* type, const JsonRef& obj, JsonRef prev) {
  auto ev = std::make_shared<WatchEvent>();
  ev->rv = rv_;
  ev->t_ns = NowNs();
  ev->type = type;
  ev->ns = Str(*obj, {"metadata", "namespace"});
  ev->name = Str(*obj, {"metadata", "name"});
  ev->object = obj;
  ev->prev = std::move(prev);
  b.history.push_back(std::move(ev));
  while (b.history.size() > history_limit_) {
    b.history.pop_front();
    ++b.first_seq;
    b.floor_rv = b.history.front()->rv - 1;  // as watch_cache.go: too old below oldest-1
  }
}

}  // namespace fake
