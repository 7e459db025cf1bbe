// Volume expansion, decided: the bodies (expansion.hpp has the contracts).
#include "decide/expansion.hpp"

#include "base/quantity.hpp"
#include "base/status.hpp"

bool ExpansionAsked(const Claim& c) {
  return !c.volume_name.empty() && !c.meta.deleting && c.phase == "Bound" && c.capacity_bytes >= 0 &&
         c.request_bytes > c.capacity_bytes;
}

Expansion DecideExpansion(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* v) {
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
  if (by == v->meta.annotations.end() || !cfg.Ours(by->second)) return nothing("volume not ours");
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

