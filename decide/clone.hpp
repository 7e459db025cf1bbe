// Clones, the decision (pure): a claim whose spec.dataSource names another claim gets a volume
// that starts as a copy of that claim's volume (cloner.hpp copies it). Kubernetes' rules, as
// the CSI external-provisioner applies them: the source is a claim in the same namespace (the
// API has no field for another), kind PersistentVolumeClaim with the core (empty) apiGroup,
// Bound, not being deleted, and the clone asks for at least the source's capacity. Ours too:
// the source's volume is one this provisioner made, at the path it would recompute, under a
// root this instance serves; in node-aware mode the clone is made on the source's node.
#pragma once
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "decide/reconcile.hpp"

namespace reason {
// Normal: the claim to clone is on its way (not Bound yet); the clone is made once it is.
inline constexpr const char* kWaitForCloneSource = "WaitForCloneSource";
}  // namespace reason

// A clone is built under this name beside its volume's directory, and renamed to it only when
// complete: a directory at the volume's path is always a whole copy.
inline std::string CloneTempName(const std::string& pv_name) { return ".clone-" + pv_name; }
// A file beside a complete clone from just before its rename into place until its PV is made:
// then a directory at the volume's path that no PV names is a copy nobody has used, which the
// orphan scan may remove once its claim is gone (any other such directory may be data).
inline std::string CloneUnclaimedName(const std::string& pv_name) { return ".cloned-" + pv_name; }
// Is `dir` (a name in a root) a clone's temporary directory? Then the PV name it is for.
std::string CloneTempFor(const std::string& dir);

// The source of a clone as the caches hold it.
struct CloneSource {
  const Claim* claim = nullptr;    // the claim the dataSource names; nullptr: not found
  const Volume* volume = nullptr;  // its volume; nullptr: none, or not found
  bool copied = false;  // this instance copies it, or has: the source no longer matters
};

// The claim the dataSource names, "namespace/name": "" when it names no claim.
std::string CloneSourceKey(const Claim& claim);

// What to do for a claim, a clone or not: DecideClaim's answer, and for a clone the source to
// copy (Action::source) or why not. `src` is what the caches hold of the source.
// Pure: no I/O; safe from any thread.
Action DecideClone(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing,
                   const CloneSource& src);
