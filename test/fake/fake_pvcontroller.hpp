// The controllers the fake runs in-process after each round's answers were sent (as real ones
// react to a write after it was answered): the PersistentVolume controller
// (pkg/controller/volume/persistentvolume/pv_controller.go: binding, provisioner annotation,
// Released, Lost) and the pvc-protection (pkg/controller/volume/pvcprotection: a claim being
// deleted keeps its finalizer while a scheduled pod uses it) and pv-protection finalizer
// controllers. They read the
// store's history like an informer, so every change they make is an ordinary write with its own
// watch event. Callers hold Store::mu.
#pragma once
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "test/fake/fake_admission.hpp"
#include "test/fake/fake_events.hpp"

namespace fake {

inline constexpr const char* kBindCompleted = "pv.kubernetes.io/bind-completed";
inline constexpr const char* kBoundByController = "pv.kubernetes.io/bound-by-controller";
inline constexpr const char* kStorageProvisionerAnn = "volume.kubernetes.io/storage-provisioner";
inline constexpr const char* kBetaStorageProvisionerAnn = "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr const char* kSelectedNodeAnn = "volume.kubernetes.io/selected-node";

class PvController {
 public:
  explicit PvController(Store& s) : s_(s) {}

  // Handles every change since the last call (its own included) until nothing changes; true
  // when there was any.
  bool Drain();

  // While on, a bind does the volume's side only (claimRef, phase Bound) and leaves the
  // claim's (volumeName and annotations, then phase Bound) until it is turned off, which binds
  // the claims left waiting: their writes only, none to a volume after them. The real
  // controller writes both sides in one sync, and a watcher receives the volume's events first;
  // the fake makes all its writes in one round, which a provisioner's two watches may receive
  // in either order: a test that must see a volume Bound before its claim turns this on.
  void HoldClaimSide(bool on);

 private:
  // A resource the controller follows.
  struct Watched {
    const std::string plural;
    Feed feed;
  };

  void ResyncAll();

  // Keeps the volume indexes (unbound volumes; volumes by claimRef) in step with the store,
  // so that matching and release cost O(candidates), not O(all volumes).
  void Reindex(const std::string& pv_name);

  // Whether key is ObjectKey(ns, name), without making it.
  static bool IsKey(const std::string& key, const std::string& ns, const std::string& name);
  inline static const std::string kNone;

  std::vector<std::string> Keys(const std::string& plural);

  void Handle(const std::string& plural, const WatchEvent& ev);

  static bool RefersTo(const Json& pv, const Json& claim);
  static bool HasClaimRef(const Json& pv);
  static const std::string& Phase(const Json& o) { return Str(o, {"status", "phase"}); }

  void SetVolumePhase(Json pv, const std::string& phase);

  // pv_controller.go syncVolume.
  void SyncVolume(const std::string& name);

  // pv_controller.go syncClaim (syncUnboundClaim / syncBoundClaim).
  void SyncClaim(const std::string& key);

  // pvc_protection_controller.go podUsesPVC: a pod in the claim's namespace that is scheduled
  // (spec.nodeName set: the kubelet sees only those, and starts none whose claim is being
  // deleted) and names the claim in a volume uses it, whatever its phase.
  bool InUse(const Json& claim);

  // persistentvolume/util FindMatchingVolume: the smallest fitting volume; with delayed
  // binding (WaitForFirstConsumer) only volumes pre-bound to the claim.
  JsonRef FindBestMatch(const Json& claim);

  // pv_controller.go provisionClaim for an external provisioner: annotate the claim.
  void Provision(const Json& claim);

  // pv_controller.go bind(): volume claimRef, volume phase, claim volumeName and
  // annotations, claim status; each a separate write, as the real controller makes them. Each
  // write copies the stored object it changes, and goes on with the object it stored.
  void Bind(JsonRef pv, JsonRef claim);

  // Forgets which events were recorded about a claim that is gone (uids are never reused).
  void ForgetEmitted(const std::string& uid);

  // Records an Event about the claim from the PV controller, once per claim and reason.
  void EmitOnce(const Json& claim, const std::string& type, const std::string& reason, const std::string& message);

  Store& s_;
  Watched watched_[4] = {{"storageclasses", Feed(s_.bucket("storageclasses"))},
                         {"persistentvolumeclaims", Feed(s_.bucket("persistentvolumeclaims"))},
                         {"persistentvolumes", Feed(s_.bucket("persistentvolumes"))},
                         {"pods", Feed(s_.bucket("pods"))}};
  bool hold_claim_side_ = false;
  std::set<std::string> emitted_;  // uid/reason of the events recorded, while the claim exists
  std::vector<std::string> pending;  // scratch
  std::set<std::string> unbound_;                         // volumes without claimRef
  std::unordered_map<std::string, std::set<std::string>> by_claim_;  // claim key -> volumes whose claimRef names it
  std::unordered_map<std::string, std::string> claim_of_;           // volume -> its by_claim_ key
};

}  // namespace fake
