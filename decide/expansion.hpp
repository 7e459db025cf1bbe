// Volume expansion, decided (pure: no I/O). Kubernetes' expand controller expands no hostPath
// or local volume itself: it only posts ExternalExpanding on the claim and leaves it to an
// external resizer. For the volumes it made, this provisioner is that resizer, and follows
// the protocol of kubernetes-csi/external-resizer: claim condition Resizing, the PV's
// spec.capacity, then the claim's status.capacity with the conditions taken out (expander.hpp
// takes the steps). A directory has no size to change, so "expanding" is the free-space check
// for the growth and the two records; shrinking is refused by the API server.
#pragma once
#include <cstdint>
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "base/quantity.hpp"  // sizes are quantities: callers compare them in bytes
#include "decide/reconcile.hpp"

namespace reason {
inline constexpr const char* kResizing = "Resizing";
inline constexpr const char* kVolumeResizeSuccessful = "VolumeResizeSuccessful";
inline constexpr const char* kVolumeResizeFailed = "VolumeResizeFailed";
}  // namespace reason

// Could DecideExpansion do anything for this claim, whatever its volume? A bound claim whose
// request exceeds its capacity. Cheap (the bytes the cache keeps): asked for every watch event.
bool ExpansionAsked(const Claim& c);

struct Expansion {
  enum Kind { kNothing, kFail, kExpand } kind = kNothing;
  std::string why;   // kNothing: for debug logs; kFail: the event's message
  std::string size;  // the new capacity, as the claim asks for it
  int64_t bytes = 0;       // the same in bytes
  int64_t from_bytes = 0;  // the volume's capacity now
  bool volume_done = false;  // the PV has it already (an earlier attempt): only the claim's status is left
  std::string root;          // the root the volume's directory is under
  bool require_mount = false, check_space = true, overcommit = true;
  // kNothing: a volume on every node that this node does not hold: its holders expand it (the
  // controller tells the user when none of them exists); or a shared volume named as another
  // node's: that node's instance expands it (the controller takes it over if that node is gone).
  bool held_elsewhere = false;
};

// What to do for a bound claim that may ask for more: expand its volume, if this instance made
// it (in node-aware mode, on this node; a volume on every node by any node that holds it: the
// claim's resourceVersion on each status change makes the others' attempts conflicts), or
// nothing. `sc` is its class, if cached (for checkFreeSpace and overcommit;
// the API server already refused the larger request if the class does not allow expansion).
// Pure: no I/O; safe from any thread.
Expansion DecideExpansion(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* v);
