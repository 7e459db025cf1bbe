// The bodies of fake_expand.hpp (the contracts are there).
#include "test/fake/fake_expand.hpp"

#include <set>
#include <string>
#include <unordered_map>

namespace fake {

ExpandController::ExpandController(Store& s) : s_(s), events_(s, "volume_expand"),
                                   claims_(s.bucket("persistentvolumeclaims")) {}

bool ExpandController::Drain() {
  const Bucket& b = claims_.bucket();
  auto relist = [&] {
    for (auto it = seen_.begin(); it != seen_.end();) it = b.objects.count(it->first) > 0 ? std::next(it) : seen_.erase(it);
    for (const auto& [key, claim] : b.objects) Observe(key, *claim);
  };
  auto handle = [&](const WatchEvent& ev) {
    if (ev.type == "DELETED") {
      seen_.erase(ObjectKey(ev.ns, ev.name));
      events_.Forget(Str(*ev.object, {"metadata", "uid"}));
    } else {
      Observe(ObjectKey(ev.ns, ev.name), *ev.object);
    }
  };
  if (!claims_.Read(handle, relist)) return false;
  std::set<std::string> queue;
  queue.swap(queue_);
  for (const auto& key : queue) Sync(key);
  return true;
}

bool ExpandController::Grew(const std::string& a, const std::string& b) {
  if (a == b) return false;
  return (b.empty() ? 0 : ParseQuantity(b)) > (a.empty() ? 0 : ParseQuantity(a));
}

void ExpandController::Observe(const std::string& key, const Json& claim) {
  Sizes now{Str(claim, {"spec", "resources", "requests", "storage"}), Str(claim, {"status", "capacity", "storage"})};
  auto it = seen_.find(key);
  const bool wanted =
      it == seen_.end() || Grew(it->second.request, now.request) || Grew(it->second.capacity, now.capacity);
  seen_[key] = std::move(now);
  if (wanted && Str(claim, {"status", "phase"}) == "Bound") queue_.insert(key);
}

void ExpandController::Sync(const std::string& key) {
  const Json* claim = s_.Get("persistentvolumeclaims", key);
  if (claim == nullptr) return;
  const std::string& volume = Str(*claim, {"spec", "volumeName"});
  const Json* pv = volume.empty() ? nullptr : s_.Get("persistentvolumes", volume);
  if (pv == nullptr) return;
  if (Str(*pv, {"spec", "claimRef", "namespace"}) != Str(*claim, {"metadata", "namespace"}) ||
      Str(*pv, {"spec", "claimRef", "uid"}) != Str(*claim, {"metadata", "uid"}))
    return;  // "persistent Volume is not bound to PVC being updated"
  const std::string& request = Str(*claim, {"spec", "resources", "requests", "storage"});
  const std::string& capacity = Str(*claim, {"status", "capacity", "storage"});
  if (!Grew(capacity, request) && Annotation(*pv, kPreResizeCapacityAnn).empty()) return;
  if (Path(*pv, {"spec", "flexVolume"}) != nullptr) return;
  events_.Record(*claim, "Warning", "ExternalExpanding", kIgnoringClaimMessage);
}

}  // namespace fake
