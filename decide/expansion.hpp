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
#include <vector>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "base/quantity.hpp"
#include "decide/reconcile.hpp"

namespace reason {
inline constexpr const char* kResizing = "Resizing";
inline constexpr const char* kVolumeResizeSuccessful = "VolumeResizeSuccessful";
inline constexpr const char* kVolumeResizeFailed = "VolumeResizeFailed";
}  // namespace reason

// Could DecideExpansion do anything for this claim, whatever its volume? A bound claim whose
// request exceeds its capacity. Cheap (the bytes the cache keeps): asked for every watch event.
inline bool ExpansionAsked(const Claim& c) {
  return !c.volume_name.empty() && !c.meta.deleting && c.phase == "Bound" && c.capacity_bytes >= 0 &&
         c.request_bytes > c.capacity_bytes;
}

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
inline Expansion DecideExpansion(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* v) {
  Expansion e;
  auto nothing = [&](std::string why) {
    e.why = std::move(why);
    return e;
  };
  auto fail = [&](std::string message) {
    e.kind = Expansion::kFail;
    e.why = std::move(message);
    return e;
  };
  if (claim.volume_name.empty() || claim.meta.deleting || claim.phase != "Bound") return nothing("not bound");
  Result<int64_t> want = QuantityToBytes(claim.storage_request);
  Result<int64_t> have = QuantityToBytes(claim.capacity);
  if (!want.ok() || !have.ok() || *want <= *have) return nothing("no expansion asked");
  if (v == nullptr || v->meta.name != claim.volume_name) return nothing("volume " + claim.volume_name + " not known");
  auto by = v->meta.annotations.find(ann::kProvisionedBy);
  if (by == v->meta.annotations.end() || by->second != cfg.provisioner_name) return nothing("volume not ours");
  if (v->claim_ref.uid != claim.meta.uid) return nothing("volume bound to another claim");
  if (OnAllNodes(*v)) {
    if (!HasFinalizer(v->meta, NodeFinalizer(cfg.node_name))) {
      e.held_elsewhere = true;
      return nothing("on every node: expanded by the instances of the nodes that hold it");
    }
  } else {
    auto node = v->meta.annotations.find(ann::kNode);
    if ((node == v->meta.annotations.end() ? "" : node->second) != cfg.node_name) {
      e.held_elsewhere = IsShared(*v) && !cfg.node_name.empty();
      return nothing("made on another node");
    }
  }
  auto made_in = v->meta.annotations.find(ann::kPvDir);
  e.root = made_in == v->meta.annotations.end() ? cfg.pv_dir : made_in->second;
  if (!IsConfiguredRoot(cfg, e.root))
    return fail("volume " + v->meta.name + " was made under " + e.root +
                ", which is not PV_DIR or one of ALLOWED_PV_DIRS; configure that directory again to expand it");
  ClassParameters params;
  if (sc == nullptr || !ParseClassParameters(cfg, *sc, &params).empty()) {
    params.check_space = cfg.check_free_space;  // the class is gone or bad: the defaults
    params.overcommit = cfg.overcommit;
  }
  auto must_mount = v->meta.annotations.find(ann::kRequireMount);
  e.require_mount = cfg.require_mount || (must_mount != v->meta.annotations.end() && must_mount->second == "true");
  e.check_space = params.check_space;
  e.overcommit = params.overcommit;
  e.kind = Expansion::kExpand;
  e.size = claim.storage_request;
  e.bytes = *want;
  e.from_bytes = v->capacity_bytes >= 0 ? v->capacity_bytes : *have;
  e.volume_done = v->capacity_bytes >= *want;
  return e;
}
