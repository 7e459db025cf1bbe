// The expand controller of kube-controller-manager (pkg/controller/volume/expand/
// expand_controller.go, Kubernetes 1.24), for the volumes the fake serves. It follows the claims'
// history as its informer does: a claim is looked at when it is first seen bound, when its
// storage request grows and when its status.capacity grows. A bound claim whose request exceeds
// its status.capacity (or whose volume has the pre-resize-capacity annotation) and whose volume
// is bound to it gets, for a volume no in-tree plugin expands (hostPath, local, csi, nfs, ...:
// FindExpandablePluginBySpec fails with "no volume plugin matched"), only the Warning event
// ExternalExpanding "Ignoring the PVC: didn't find a plugin capable of expanding the volume;
// waiting for an external controller to process this PVC." from "volume_expand" (counted again
// when it recurs, as the recorder does). No annotation: volume.kubernetes.io/storage-resizer is
// set only for CSI-migrated in-tree volumes (SetClaimResizer) and by in-tree expansion
// (MarkResizeInProgressWithResizer), neither of which the fake has; flexVolume volumes (the
// in-tree path) are left alone. Failed lookups are not retried, as the real one's queue would.
// Callers hold Store::mu.
#pragma once
#include <set>
#include <string>
#include <unordered_map>

#include "test/fake/fake_events.hpp"

namespace fake {

inline constexpr const char* kStorageResizerAnn = "volume.kubernetes.io/storage-resizer";
inline constexpr const char* kPreResizeCapacityAnn = "volume.alpha.kubernetes.io/pre-resize-capacity";
inline constexpr const char* kIgnoringClaimMessage =
    "Ignoring the PVC: didn't find a plugin capable of expanding the volume; waiting for an external controller to "
    "process this PVC.";

class ExpandController {
 public:
  explicit ExpandController(Store& s)
      : s_(s), events_(s, "volume_expand"), claims_(s.bucket("persistentvolumeclaims")) {}

  // Handles the claims' changes since the last call; true when there were any.
  bool Drain() {
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

 private:
  struct Sizes {
    std::string request, capacity;  // spec.resources.requests.storage, status.capacity.storage
  };

  // Whether quantity b is larger than a ("" is zero).
  static bool Grew(const std::string& a, const std::string& b) {
    if (a == b) return false;
    return (b.empty() ? 0 : ParseQuantity(b)) > (a.empty() ? 0 : ParseQuantity(a));
  }

  // The informer's AddFunc (a claim not seen before) and UpdateFunc (request or capacity grew),
  // then enqueuePVC: only bound claims.
  void Observe(const std::string& key, const Json& claim) {
    Sizes now{Str(claim, {"spec", "resources", "requests", "storage"}), Str(claim, {"status", "capacity", "storage"})};
    auto it = seen_.find(key);
    const bool wanted =
        it == seen_.end() || Grew(it->second.request, now.request) || Grew(it->second.capacity, now.capacity);
    seen_[key] = std::move(now);
    if (wanted && Str(claim, {"status", "phase"}) == "Bound") queue_.insert(key);
  }

  // syncHandler.
  void Sync(const std::string& key) {
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

  Store& s_;
  EventRecorder events_;
  Feed claims_;
  std::unordered_map<std::string, Sizes> seen_;  // the informer's cache, reduced to the sizes
  std::set<std::string> queue_;
};

}  // namespace fake
