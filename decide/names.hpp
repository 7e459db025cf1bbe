// Names and marks of a volume of ours, pure: the PV's name and its directory's name (which
// deleting recomputes), which claims ask for this provisioner and which node, and the
// annotations and finalizers that say where a volume lives and who holds it. No I/O; every
// function is a pure function of its arguments, safe from any thread.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/objects.hpp"

// The name of a volume's directory inside the root: "<namespace>-<claim>-<pv name>", as the
// README documents. Names longer than a directory name may be (255 bytes) have the claim part
// cut, so the result is a function of these three strings only (deletion recomputes it).
// Returns "" when a part is not a valid Kubernetes name (it would not be a safe path part).
std::string VolumeDirName(const std::string& ns, const std::string& claim, const std::string& pv);

// The PV name for a claim: "pvc-<claim uid>", as Kubernetes' external provisioners name them.
inline std::string VolumeNameFor(const std::string& claim_uid) { return "pvc-" + claim_uid; }
inline std::string VolumeNameFor(const Claim& claim) { return VolumeNameFor(claim.meta.uid); }

// The node a claim's volume goes to: the scheduler's choice (WaitForFirstConsumer classes),
// else our annotation or kubevirt's; "" when it names none.
std::string ClaimNode(const Claim& claim);

// Does the claim ask for our provisioner? (the PV controller's annotation, or its beta twin)
bool ClaimIsOurs(const Config& cfg, const Claim& claim);

// The finalizer `node`'s instance holds on a volume on every node: "<node>/hostpath-provisioner.io".
inline std::string NodeFinalizer(const std::string& node) { return node + "/" + ann::kNodeFinalizerName; }

// The nodes whose finalizers a volume carries (see ann::kNodeFinalizerName), sorted.
std::vector<std::string> FinalizerNodes(const Volume& v);

// Does the object carry finalizer `f`?
bool HasFinalizer(const ObjectMeta& m, const std::string& f);

// A volume on every node: its PV's ann::kAllNodes annotation says "all" (class parameter nodes: all).
bool OnAllNodes(const Volume& v);

// A shared volume: one directory on a root that every host mounts (a network share), made in
// node-aware mode by whichever instance's PV create succeeded; the node named in ann::kNode
// removes (and expands) it, and another node's instance takes that over once that node's Node
// object is gone. Its PV has no node affinity.
bool IsShared(const Volume& v);

// May volumes be made under, and removed from, `path`? PV_DIR and ALLOWED_PV_DIRS only.
bool IsConfiguredRoot(const Config& cfg, const std::string& path);

// Every configured root, each once: PV_DIR, then ALLOWED_PV_DIRS.
std::vector<std::string> ConfiguredRoots(const Config& cfg);
