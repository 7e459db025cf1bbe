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
  explicit ExpandController(Store& s);

  // Handles the claims' changes since the last call; true when there were any.
  bool Drain();

 private:
  struct Sizes {
    std::string request, capacity;  // spec.resources.requests.storage, status.capacity.storage
  };

  // Whether quantity b is larger than a ("" is zero).
  static bool Grew(const std::string& a, const std::string& b);

  // The informer's AddFunc (a claim not seen before) and UpdateFunc (request or capacity grew),
  // then enqueuePVC: only bound claims.
  void Observe(const std::string& key, const Json& claim);

  // syncHandler.
  void Sync(const std::string& key);

  Store& s_;
  EventRecorder events_;
  Feed claims_;
  std::unordered_map<std::string, Sizes> seen_;  // the informer's cache, reduced to the sizes
  std::set<std::string> queue_;
};

}  // namespace fake
