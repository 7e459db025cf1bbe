// The bodies of fake_pvcontroller.hpp (the contracts are there).
#include "test/fake/fake_pvcontroller.hpp"

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace fake {

bool PvController::Drain() {
  bool any = false;
  for (int round = 0; round < 100000; ++round) {
    bool progressed = false;
    for (Watched& w : watched_)
      progressed = w.feed.Read([&](const WatchEvent& ev) { Handle(w.plural, ev); }, [&] { ResyncAll(); }) || progressed;
    if (!progressed) return any;
    any = true;
  }
  return any;
}

void PvController::HoldClaimSide(bool on) {
  hold_claim_side_ = on;
  if (!on) ResyncAll();  // the claims left waiting find their volume (pre-bound to them) and bind
}

void PvController::ResyncAll() {
  unbound_.clear();
  by_claim_.clear();
  claim_of_.clear();
  for (const auto& key : Keys("persistentvolumes")) Reindex(key);
  for (const auto& key : Keys("persistentvolumeclaims")) SyncClaim(key);
  for (const auto& key : Keys("persistentvolumes")) SyncVolume(key);
}

void PvController::Reindex(const std::string& pv_name) {
  const Json* pv = s_.Get("persistentvolumes", pv_name);
  const Json* ref = pv != nullptr ? Path(*pv, {"spec", "claimRef"}) : nullptr;
  const bool bound = ref != nullptr && ref->is<JsonObject>();
  const std::string& ns = bound ? Str(*ref, {"namespace"}) : kNone;
  const std::string& name = bound ? Str(*ref, {"name"}) : kNone;
  auto it = claim_of_.find(pv_name);
  if (bound && it != claim_of_.end() && IsKey(it->second, ns, name)) return;  // as it was (most events)
  std::string key = bound ? ObjectKey(ns, name) : "";
  if (it != claim_of_.end()) {
    auto names = by_claim_.find(it->second);
    names->second.erase(pv_name);
    if (names->second.empty()) by_claim_.erase(names);
    claim_of_.erase(it);
  }
  if (bound) {
    unbound_.erase(pv_name);
    by_claim_[key].insert(pv_name);
    claim_of_.emplace(pv_name, std::move(key));
  } else if (pv != nullptr) {
    unbound_.insert(pv_name);
  } else {
    unbound_.erase(pv_name);
  }
}

bool PvController::IsKey(const std::string& key, const std::string& ns, const std::string& name) {
  if (ns.empty()) return key == name;
  return key.size() == ns.size() + 1 + name.size() && key.compare(0, ns.size(), ns) == 0 && key[ns.size()] == '/' &&
         key.compare(ns.size() + 1, std::string::npos, name) == 0;
}

std::vector<std::string> PvController::Keys(const std::string& plural) {
  std::vector<std::string> keys;
  for (const auto& kv : s_.bucket(plural).objects) keys.push_back(kv.first);
  return keys;
}

void PvController::Handle(const std::string& plural, const WatchEvent& ev) {
  if (plural == "persistentvolumes") {
    Reindex(ev.name);
    SyncVolume(ev.name);
    Reindex(ev.name);
    if (unbound_.count(ev.name) > 0 && ev.type == "ADDED") {
      // A new unbound volume: pending claims may match it now (the real controller finds it on
      // its periodic claim resync).
      for (const auto& [key, claim] : s_.bucket("persistentvolumeclaims").objects)
        if (Str(*claim, {"spec", "volumeName"}).empty() && !IsDeleting(*claim)) pending.push_back(key);
      for (const auto& key : pending) SyncClaim(key);
      pending.clear();
    }
    const std::string& name = Str(*ev.object, {"spec", "claimRef", "name"});
    if (!name.empty()) SyncClaim(ObjectKey(Str(*ev.object, {"spec", "claimRef", "namespace"}), name));
  } else if (plural == "persistentvolumeclaims") {
    if (ev.type != "DELETED") return SyncClaim(ObjectKey(ev.ns, ev.name));
    ForgetEmitted(Str(*ev.object, {"metadata", "uid"}));
    auto it = by_claim_.find(ObjectKey(ev.ns, ev.name));
    if (it == by_claim_.end()) return;
    std::set<std::string> names = it->second;  // SyncVolume's writes may change the index
    for (const auto& name : names) SyncVolume(name);
  } else if (plural == "pods") {
    // pvc-protection: a pod that goes (or changes) may leave a claim being deleted unused.
    for (const auto& name : PodClaimNames(*ev.object)) {
      const Json* claim = s_.Get("persistentvolumeclaims", ObjectKey(ev.ns, name));
      if (claim != nullptr && IsDeleting(*claim)) SyncClaim(ObjectKey(ev.ns, name));
    }
  } else if (plural == "storageclasses" && ev.type != "DELETED") {
    for (const auto& key : Keys("persistentvolumeclaims")) {
      const Json* c = s_.Get("persistentvolumeclaims", key);
      if (c && Str(*c, {"spec", "storageClassName"}) == ev.name) SyncClaim(key);
    }
  }
}

bool PvController::RefersTo(const Json& pv, const Json& claim) {
  const Json* ref = Path(pv, {"spec", "claimRef"});
  if (ref == nullptr || !ref->is<JsonObject>()) return false;
  std::string uid = Str(*ref, {"uid"});
  return Str(*ref, {"namespace"}) == Str(claim, {"metadata", "namespace"}) &&
         Str(*ref, {"name"}) == Str(claim, {"metadata", "name"}) &&
         (uid.empty() || uid == Str(claim, {"metadata", "uid"}));
}

bool PvController::HasClaimRef(const Json& pv) {
  const Json* ref = Path(pv, {"spec", "claimRef"});
  return ref != nullptr && ref->is<JsonObject>();
}

void PvController::SetVolumePhase(Json pv, const std::string& phase) {
  JsonObject& st = Obj(pv, {"status"});
  st["phase"] = Json(phase);
  st["lastPhaseTransitionTime"] = Json(NowRfc3339());
  s_.Commit("persistentvolumes", std::move(pv));
}

void PvController::SyncVolume(const std::string& name) {
  JsonRef stored = s_.Ref("persistentvolumes", name);  // kept alive while pv is read and bound
  if (stored == nullptr) return;
  const Json& pv = *stored;  // its strings stay valid while `stored` holds it
  const std::string& phase = Phase(pv);
  if (IsDeleting(pv) && phase != "Bound") {
    Json next = pv;
    if (RemoveFinalizer(next, kPvProtectionFinalizer)) {
      s_.Commit("persistentvolumes", std::move(next));  // pv-protection: not in use any more
      return;
    }
  }
  if (!HasClaimRef(pv)) {
    if (phase != "Available") SetVolumePhase(pv, "Available");
    return;
  }
  const std::string& ns = Str(pv, {"spec", "claimRef", "namespace"});
  const std::string& cname = Str(pv, {"spec", "claimRef", "name"});
  const std::string& ref_uid = Str(pv, {"spec", "claimRef", "uid"});
  JsonRef claim = s_.Ref("persistentvolumeclaims", ObjectKey(ns, cname));
  if (ref_uid.empty()) {  // pre-bound by name only
    if (claim != nullptr) {
      const std::string& vn = Str(*claim, {"spec", "volumeName"});
      if (vn.empty() || vn == name) return Bind(stored, claim);
    }
    if (phase != "Available") SetVolumePhase(pv, "Available");
    return;
  }
  if (claim == nullptr || Str(*claim, {"metadata", "uid"}) != ref_uid) {
    if (phase != "Released" && phase != "Failed") SetVolumePhase(pv, "Released");
    return;
  }
  const std::string& vn = Str(*claim, {"spec", "volumeName"});
  if (vn.empty() || (vn == name && (phase != "Bound" || Phase(*claim) != "Bound"))) Bind(stored, claim);
}

void PvController::SyncClaim(const std::string& key) {
  JsonRef stored = s_.Ref("persistentvolumeclaims", key);  // kept alive while claim is read and bound
  if (stored == nullptr) return;
  const Json& claim = *stored;
  if (IsDeleting(claim)) {
    if (InUse(claim)) return;  // pvc-protection keeps the finalizer
    Json next = claim;
    if (RemoveFinalizer(next, kPvcProtectionFinalizer)) s_.Commit("persistentvolumeclaims", std::move(next));
    return;
  }
  const std::string& vn = Str(claim, {"spec", "volumeName"});
  if (vn.empty()) {
    if (JsonRef pv = FindBestMatch(claim)) return Bind(pv, stored);
    return Provision(claim);
  }
  JsonRef pv = s_.Ref("persistentvolumes", vn);
  if (pv == nullptr) {
    if (Phase(claim) == "Bound") {
      Json next = claim;
      Obj(next, {"status"})["phase"] = Json("Lost");
      s_.Commit("persistentvolumeclaims", std::move(next));
      EmitOnce(claim, "Warning", "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!");
    }
    return;
  }
  if (!HasClaimRef(*pv) || RefersTo(*pv, claim)) {
    if (Phase(claim) != "Bound" || Phase(*pv) != "Bound" || Str(*pv, {"spec", "claimRef", "uid"}).empty())
      Bind(pv, stored);
  } else if (Phase(claim) == "Bound") {
    Json next = claim;
    Obj(next, {"status"})["phase"] = Json("Lost");
    s_.Commit("persistentvolumeclaims", std::move(next));
    EmitOnce(claim, "Warning", "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly");
  }
}

bool PvController::InUse(const Json& claim) {
  const std::string& ns = Str(claim, {"metadata", "namespace"});
  const std::string& name = Str(claim, {"metadata", "name"});
  const auto& pods = s_.bucket("pods").objects;
  const std::string prefix = ns + "/";
  for (auto it = pods.lower_bound(prefix); it != pods.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (Str(*it->second, {"spec", "nodeName"}).empty()) continue;
    const auto claims = PodClaimNames(*it->second);
    if (std::find(claims.begin(), claims.end(), name) != claims.end()) return true;
  }
  return false;
}

JsonRef PvController::FindBestMatch(const Json& claim) {
  if (Path(claim, {"spec", "selector"}) != nullptr) return nullptr;  // label selectors not modelled
  std::string cls = Str(claim, {"spec", "storageClassName"});
  bool delay = false;
  if (const Json* sc = s_.Get("storageclasses", cls))
    delay = Str(*sc, {"volumeBindingMode"}) == "WaitForFirstConsumer";
  double want = ParseQuantity(Str(claim, {"spec", "resources", "requests", "storage"}));
  auto modes = StringList(claim, {"spec", "accessModes"});
  std::string vmode = Str(claim, {"spec", "volumeMode"});
  JsonRef best;
  double best_size = 0;
  std::vector<std::string> candidates(unbound_.begin(), unbound_.end());
  if (auto it = by_claim_.find(ObjectKey(Str(claim, {"metadata", "namespace"}), Str(claim, {"metadata", "name"})));
      it != by_claim_.end())
    candidates.insert(candidates.end(), it->second.begin(), it->second.end());
  for (const auto& name : candidates) {
    const JsonRef& found = s_.Ref("persistentvolumes", name);
    if (found == nullptr) continue;
    const Json& pv = *found;
    if (IsDeleting(pv)) continue;
    bool prebound = HasClaimRef(pv) && RefersTo(pv, claim);
    if (HasClaimRef(pv) && !prebound) continue;
    if (Phase(pv) != "Available" && !prebound) continue;
    if (delay && !prebound) continue;
    if (Str(pv, {"spec", "storageClassName"}) != cls || Str(pv, {"spec", "volumeMode"}) != vmode) continue;
    double size = ParseQuantity(Str(pv, {"spec", "capacity", "storage"}));
    if (!(size >= want)) continue;
    auto pv_modes = StringList(pv, {"spec", "accessModes"});
    bool fits = true;
    for (const auto& m : modes) fits = fits && std::find(pv_modes.begin(), pv_modes.end(), m) != pv_modes.end();
    if (!fits) continue;
    if (prebound) return found;
    if (best == nullptr || size < best_size) {
      best = found;
      best_size = size;
    }
  }
  return best;
}

void PvController::Provision(const Json& claim) {
  std::string cls = Str(claim, {"spec", "storageClassName"});
  if (cls.empty()) return;
  const Json* sc = s_.Get("storageclasses", cls);
  if (sc == nullptr) {
    EmitOnce(claim, "Warning", "ProvisioningFailed", "storageclass.storage.k8s.io \"" + cls + "\" not found");
    return;
  }
  if (Str(*sc, {"volumeBindingMode"}) == "WaitForFirstConsumer" && Annotation(claim, kSelectedNodeAnn).empty()) {
    EmitOnce(claim, "Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding");
    return;
  }
  std::string prov = Str(*sc, {"provisioner"});
  if (prov.rfind("kubernetes.io/", 0) == 0) return;  // in-tree: no plugins in the fake
  if (Annotation(claim, kStorageProvisionerAnn) == prov && Annotation(claim, kBetaStorageProvisionerAnn) == prov) return;
  Json next = claim;
  JsonObject& ann = Obj(next, {"metadata", "annotations"});
  ann[kStorageProvisionerAnn] = Json(prov);
  ann[kBetaStorageProvisionerAnn] = Json(prov);
  JsonRef stored = s_.Commit("persistentvolumeclaims", std::move(next));
  EmitOnce(*stored, "Normal", "ExternalProvisioning",
           "Waiting for a volume to be created either by the external provisioner '" + prov +
               "' or manually by the system administrator. If volume creation is delayed, please verify that the "
               "provisioner is running and correctly registered.");
}

void PvController::Bind(JsonRef pv, JsonRef claim) {
  std::string pv_name = Str(*pv, {"metadata", "name"});
  if (Str(*pv, {"spec", "claimRef", "uid"}) != Str(*claim, {"metadata", "uid"})) {
    JsonObject ref;
    ref["kind"] = Json("PersistentVolumeClaim");
    ref["apiVersion"] = Json("v1");
    ref["namespace"] = Json(Str(*claim, {"metadata", "namespace"}));
    ref["name"] = Json(Str(*claim, {"metadata", "name"}));
    ref["uid"] = Json(Str(*claim, {"metadata", "uid"}));
    ref["resourceVersion"] = Json(Str(*claim, {"metadata", "resourceVersion"}));
    Json next = *pv;
    Obj(next, {"spec"})["claimRef"] = Json(ref);
    if (!HasClaimRef(*pv)) Obj(next, {"metadata", "annotations"})[kBoundByController] = Json("yes");
    pv = s_.Commit("persistentvolumes", std::move(next));
  }
  if (Phase(*pv) != "Bound") {
    Json next = *pv;
    JsonObject& st = Obj(next, {"status"});
    st["phase"] = Json("Bound");
    st["lastPhaseTransitionTime"] = Json(NowRfc3339());
    pv = s_.Commit("persistentvolumes", std::move(next));
  }
  if (hold_claim_side_) return;
  if (Str(*claim, {"spec", "volumeName"}) != pv_name || Annotation(*claim, kBindCompleted) != "yes") {
    Json next = *claim;
    if (Str(next, {"spec", "volumeName"}) != pv_name) {
      Obj(next, {"spec"})["volumeName"] = Json(pv_name);
      Obj(next, {"metadata", "annotations"})[kBoundByController] = Json("yes");
    }
    Obj(next, {"metadata", "annotations"})[kBindCompleted] = Json("yes");
    claim = s_.Commit("persistentvolumeclaims", std::move(next));
  }
  if (Phase(*claim) != "Bound") {
    Json next = *claim;
    JsonObject& st = Obj(next, {"status"});
    st["phase"] = Json("Bound");
    if (const Json* cap = Path(*pv, {"spec", "capacity"})) st["capacity"] = *cap;
    st["accessModes"] = StringArray(StringList(*pv, {"spec", "accessModes"}));
    s_.Commit("persistentvolumeclaims", std::move(next));
  }
}

void PvController::ForgetEmitted(const std::string& uid) {
  const std::string prefix = uid + "/";
  auto it = emitted_.lower_bound(prefix);
  while (it != emitted_.end() && it->compare(0, prefix.size(), prefix) == 0) it = emitted_.erase(it);
}

void PvController::EmitOnce(const Json& claim, const std::string& type, const std::string& reason,
                            const std::string& message) {
  if (!emitted_.insert(Str(claim, {"metadata", "uid"}) + "/" + reason).second) return;
  s_.Put("events", MakeEvent(claim, "persistentvolume-controller", type, reason, message));
}

}  // namespace fake
