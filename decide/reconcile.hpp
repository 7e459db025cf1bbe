// The provisioner's decisions, pure: (config, claim or volume, class, cache facts) -> action.
// No I/O, no clock, no globals. The PV the program creates is built here, and tests build the
// expected PV with the same function. The names, class parameters and cache rules the
// decisions use have headers of their own (names.hpp, class_params.hpp, cache_slim.hpp),
// included here so that callers find every name through this one.
#pragma once
#include <string>

#include "base/config.hpp"
#include "base/objects.hpp"
#include "base/quantity.hpp"  // sizes are quantities: callers compare them in bytes
#include "decide/cache_slim.hpp"
#include "decide/class_params.hpp"
#include "decide/names.hpp"

// Event reasons, as `kubectl describe` shows them.
namespace reason {
inline constexpr const char* kProvisioningSucceeded = "ProvisioningSucceeded";
inline constexpr const char* kProvisioningFailed = "ProvisioningFailed";
inline constexpr const char* kVolumeFailedDelete = "VolumeFailedDelete";
inline constexpr const char* kSizeNotEnforced = "SizeNotEnforced";
inline constexpr const char* kReattached = "Reattached";
}  // namespace reason

struct Action {
  enum Kind {
    kNothing,          // not ours, or nothing to do; `why` says which (for debug logs)
    kProvision,        // make dir_name (dir_mode, owner), then create `volume`
    kDelete,           // remove dir_name, then drop our finalizer and delete the PV
    kDropFinalizer,    // the PV is going and its data must stay: only remove our finalizer
    kFail,             // tell the user (event `reason`/`message` on the object) and retry later
    // A volume on every node (nodes: all), for this node's instance:
    kJoin,             // make dir_name here (dir_mode, owner), then add this node's finalizer
    kLeave,            // remove dir_name here if remove_dir, then this node's finalizer
    kDeleteObject,     // released: delete the PV (each node then leaves)
    kPruneGone,        // being deleted: drop the finalizers of nodes whose Node object is gone
    // A shared volume (a requireMount root every host mounts, node-aware mode):
    kAdopt,            // released or being deleted, and `holder`'s node (which acts on it) may be gone: take it over if so
  };
  Kind kind = kNothing;
  std::string why;          // kNothing: a short explanation
  std::string dir_name;     // kProvision/kDelete: the volume directory's name inside the root
  unsigned dir_mode = 0;    // kProvision
  int uid = -1, gid = -1;   // kProvision: owner of the directory; -1 = leave as created
  std::string root;         // kProvision/kDelete: the root directory dir_name is in
  bool require_mount = false;  // kProvision/kDelete: only while a filesystem is mounted at root
  bool remove_dir = false;  // kLeave: the reclaim policy is Delete
  int64_t request_bytes = 0;  // kProvision: the claim's size
  bool check_space = false;   // kProvision: only if request_bytes fit (see space.hpp)
  bool overcommit = false;    // kProvision: ... not counting what other volumes were promised
  std::string quota = "false";  // kProvision: enforce request_bytes: "true", "auto" (where the root can), "false"
  Volume volume;            // kProvision: the PV to create
  std::string reason;       // kFail: event reason
  std::string message;      // kFail: event message (why, and what to do)
  bool retry = true;        // kFail: try again after a backoff (false: only when the object changes)
  bool once = false;        // kFail: one event however many instances see it (node-aware mode)
  bool normal = false;      // kFail: nothing is wrong, the claim waits for what is on its way (a Normal event)
  bool reschedule = false;  // kFail: for good on this node: drop the claim's selected-node
  std::string holder;       // kAdopt: the node named on the volume as the one that acts on it
  bool path_pattern = false;  // kProvision/kDelete/...: dir_name was made by the class's pathPattern ("ns/name")
  // kProvision, node-aware, of a pathPattern claim whose node is another (`claim_node`) or not
  // chosen yet: only if this node has its directory (reattached here: the PV pins the claim,
  // and the scheduler, to this node). `node_by_user`: the claim names its node by our
  // annotation: then this node only says where the directory is.
  bool only_existing = false;
  bool node_by_user = false;
  std::string claim_node;
  std::string on_delete = "delete";  // kDelete/kLeave: "delete" the directory, "archive" it, or "retain" it (the PV's kOnDelete)
  std::string archive_for;  // kDelete/kLeave with on_delete "archive": the PV's kArchiveFor ("168h"; "0" or "": for ever)
  // kProvision of a clone (the claim's dataSource names a claim, clone.hpp): what to copy.
  struct Source {
    std::string claim;            // "namespace/name"; "" when not a clone
    std::string volume;           // its PV; "" when not a clone, or copied already
    std::string root, dir_name;   // its directory, recomputed as deleting it would
    bool require_mount = false;
    std::string quota;            // its PV's kQuota annotation
  } source;
};

// The PV for a claim; its capacity is the claim's request, as the API server wrote it. In
// node-aware mode it is pinned to this node and says so; a `local` one to the claim's node.
// Its finalizer: ours, or this node's for a volume on every node.
Volume BuildVolume(const Config& cfg, const Claim& claim, const StorageClass& sc, const ClassParameters& params);

// Is `existing` (a PV of the same name, found after a create said AlreadyExists) the volume
// BuildVolume made, by an earlier attempt: the same claim, the same path, and our annotation?
bool IsVolumeWeMade(const Volume& existing, const Volume& built);

// Where a claim stands before its class and volume are looked at: DecideClaim's first checks,
// which the controller also makes for every watch event of a claim (so no strings here).
enum class ClaimStage { kNotOurs, kDeleting, kNamesVolume, kNotPending, kWaitsForVolume };
ClaimStage StageOf(const Config& cfg, const Claim& claim);

// Node-aware, a WaitForFirstConsumer claim of a class of ours with a pathPattern that no
// scheduler has placed yet (so the PV controller has not annotated it for a provisioner): the
// node that has its directory binds it at once (its PV pins the claim, and the pod, there).
// `sc`: the claim's class, if cached.
bool WaitsForScheduler(const Config& cfg, const Claim& claim, const StorageClass* sc);

// Could DecideClaim do anything for this claim, whatever its volume? Only a claim of ours that
// waits for a volume and, in node-aware mode, is for this node, names none, or is of a class
// of shared volumes or of a pathPattern (`sc`, if cached): the controller hands no other claim to a worker (a
// watch event of a bound or deleted claim, or of another node's, wakes nobody).
bool ClaimMayNeedVolume(const Config& cfg, const Claim& claim, const StorageClass* sc = nullptr);

// What to do for a claim. `sc` is its class (nullptr if not in the cache); `existing` is the
// PV named for it (nullptr if none). kProvision carries the PV to create and the directory to
// make; kFail the event to post (and whether to retry, once per DaemonSet, or reschedule);
// kNothing says why in `why`. Node-aware, a claim of a pathPattern class whose node is another
// or not chosen yet is a kProvision with only_existing (this node may have its directory).
Action DecideClaim(const Config& cfg, const Claim& claim, const StorageClass* sc, const Volume* existing);

// What to do for a PV. Only PVs with our provisioned-by annotation are considered; the
// directory to remove is recomputed from the root and the PV's name and claim (or, made by a
// pathPattern, is its kDirName annotation, a path of names: IsPatternDir), and must be exactly
// what the PV's spec says, or we refuse. `sc`: the PV's class if cached (only a volume
// on every node needs it).
Action DecideVolume(const Config& cfg, const Volume& v, const StorageClass* sc = nullptr);

// Builders the decisions share (reconcile.cpp, clone.cpp).
namespace reconcile_detail {

// kNothing, saying `why` (for debug logs).
Action Nothing(std::string why);

// kFail with event `reason` and `message`; `retry`: try again after a backoff.
Action Fail(const char* reason, std::string message, bool retry = true);

// The volume's directory recomputed (never read from the PV's path; a pathPattern's from its
// kDirName, checked to be a path of names): `verb` it there (kDelete, with
// dir_name, root and require_mount set), or a failure naming why nothing is done.
Action AtRecomputedPath(const Config& cfg, const Volume& v, Action::Kind verb);

}  // namespace reconcile_detail
