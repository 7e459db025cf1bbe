// Which node's instance needs an object, said in a label the API server can select on, so that
// in node-aware mode an instance lists and watches only its own node's claims and PVs (plus the
// ones any node may act on), not the whole cluster's. Pure: no I/O, safe from any thread.
//
// PVs: each instance labels the PVs it makes with its node (`shared`, `all` for shared and
// every-node volumes), and the ones of its node made before the label existed. It watches its
// own values, and the PVs with no such label (hand-written ones, other provisioners' ones, and
// ours not labelled yet): any of them could name a directory on its node.
// Claims: the API server cannot select on annotations (the scheduler's selected-node is one),
// so the instance that holds the dispatch lease labels each claim of ours once its node is known
// (DispatchLabel); every instance watches the claims labelled with its node or `any`.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/objects.hpp"

namespace node_label {
// The label's key, on claims and PVs (the same name as the annotation ann::kNode).
inline constexpr const char* kKey = "hostpath-provisioner.io/node";
inline constexpr const char* kShared = "shared";  // a PV of a shared volume (every node sees it)
inline constexpr const char* kAll = "all";        // a PV of a volume on every node
inline constexpr const char* kAny = "any";        // a claim any node's instance may act on
// The dispatcher's word on its Lease: which claims each instance watches (WatchEveryClaim).
inline constexpr const char* kWatchKey = "hostpath-provisioner.io/claims-watched";
inline constexpr const char* kWatchAll = "all";        // every instance every claim (a small cluster)
inline constexpr const char* kWatchOwn = "own-node";   // each its own node's, as labelled (as when absent)
}  // namespace node_label

// Node-aware: should every instance watch every claim (and act on its own node's, no claim
// waiting for the dispatcher's label), rather than only the claims labelled for its node?
// `nodes`: the cluster's Nodes counted now; `now`: the answer so far. True while the cluster
// has at most SMALL_CLUSTER_NODES nodes, false once it has more than that plus a quarter (at
// least one more: 11 for 8); in between, `now` (so a node that comes and goes at the edge
// switches nothing). SMALL_CLUSTER_NODES 0: always false.
bool WatchEveryClaim(const Config& cfg, int nodes, bool now);

// The label value that names `node`: the name itself when it fits a label value (63
// characters), else its first 46 characters, "-" and 16 hex digits of its FNV-1a hash (the
// same on every architecture, so every instance computes the same).
std::string NodeLabelValue(const std::string& node);

// The label value a PV of ours should carry in node-aware mode: all, shared, or its node's; ""
// for a PV not ours or made in single-node mode (that names no node).
std::string VolumeLabel(const Config& cfg, const Volume& v);

// Does this instance label `v` with VolumeLabel: one of ours, of its own node (or shared, or on
// every node), in node-aware mode, whose label is missing or other?
bool LabelsVolume(const Config& cfg, const Volume& v);

// The label selections the PV informer watches: node-aware, the PVs labelled for this node (or
// shared, or all), and the PVs with no such label; else the whole collection.
std::vector<std::string> VolumeSelections(const Config& cfg);

// The claim informer's selection: node-aware, the claims labelled for this node or any; else "".
std::string ClaimSelection(const Config& cfg);

// The label the dispatcher gives a claim, or nothing (leave it as it is): for a claim of ours
// (of one of our classes; or, its class unknown, annotated for us) not being deleted, `any` when any node may act
// on it (a shared, every-node or pathPattern class, or no node named and none to wait for),
// else its node's value once the claim names a node. A WaitForFirstConsumer claim naming no
// node yet gets "": it must carry no label (one a tenant set, `any` or a node's, would make
// instances cache it and wake on it for nothing). `sc`: the claim's class, if known. Claims not
// ours are left as they are: another install (another PROVISIONER_NAME) labels its own claims
// with the same key.
std::optional<std::string> DispatchLabel(const Config& cfg, const Claim& claim, const StorageClass* sc);
