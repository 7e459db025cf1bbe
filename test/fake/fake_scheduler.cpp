// The bodies of fake_scheduler.hpp (the contracts are there).
#include "test/fake/fake_scheduler.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fake {

bool Scheduler::Drain() {
  bool any = false;
  for (int round = 0; round < 1000; ++round) {
    bool changed = false;
    for (Watched& w : watched_) {
      if (w.plural != "pods") {  // anything else that changed may make a pending pod fit
        changed = w.feed.Skip() || changed;
        continue;
      }
      auto track = [&](const WatchEvent& ev) {
        const std::string key = ObjectKey(ev.ns, ev.name);
        Track(key, s_.Get("pods", key));
      };
      auto relist = [&] {  // history overran us: look at every pod
        pending_.clear();
        for (const auto& [key, pod] : w.feed.bucket().objects) Track(key, pod.get());
        for (auto it = attempts_.begin(); it != attempts_.end();)
          it = pending_.count(it->first) ? std::next(it) : attempts_.erase(it);
      };
      changed = w.feed.Read(track, relist) || changed;
    }
    if (!changed) return any;
    any = true;
    const std::vector<std::string> keys(pending_.begin(), pending_.end());
    for (const auto& key : keys) Schedule(key);
  }
  return any;
}

void Scheduler::Track(const std::string& key, const Json* pod) {
  if (pod != nullptr && Str(*pod, {"spec", "nodeName"}).empty() && !IsDeleting(*pod) &&
      Str(*pod, {"spec", "schedulerName"}) == "default-scheduler") {
    pending_.insert(key);
    return;
  }
  pending_.erase(key);
  attempts_.erase(key);
}

bool Scheduler::FullyBound(const Json& claim) {
  return !Str(claim, {"spec", "volumeName"}).empty() && Path(claim, {"metadata", "annotations", kBindCompleted}) != nullptr;
}

std::string Scheduler::ClassOf(const Json& claim) {  // GetPersistentVolumeClaimClass
  const Json* beta = Path(claim, {"metadata", "annotations", "volume.beta.kubernetes.io/storage-class"});
  return beta != nullptr && beta->is<std::string>() ? beta->get<std::string>() : Str(claim, {"spec", "storageClassName"});
}

bool Scheduler::PreFilter(const Json& pod, PodClaims& out, std::string& why, bool& error) {
  const std::string& ns = Str(pod, {"metadata", "namespace"});
  std::vector<JsonRef> claims;
  for (const auto& name : PodClaimNames(pod)) {  // podHasPVCs
    JsonRef claim = s_.Ref("persistentvolumeclaims", ObjectKey(ns, name));
    if (claim == nullptr) return why = "persistentvolumeclaim \"" + name + "\" not found", false;
    if (Str(*claim, {"status", "phase"}) == "Lost")
      return why = "persistentvolumeclaim \"" + name + "\" bound to non-existent persistentvolume \"" +
                   Str(*claim, {"spec", "volumeName"}) + "\"",
             false;
    if (IsDeleting(*claim)) return why = "persistentvolumeclaim \"" + name + "\" is being deleted", false;
    claims.push_back(claim);
  }
  bool immediate = false;
  for (const JsonRef& claim : claims) {  // GetPodVolumes
    if (FullyBound(*claim)) {
      out.bound.push_back(claim);
      continue;
    }
    const std::string cls = ClassOf(*claim);
    bool delay = false;
    if (!cls.empty()) {
      const Json* sc = s_.Get("storageclasses", cls);
      if (sc == nullptr) {
        error = true;
        return why = "running PreFilter plugin \"VolumeBinding\": storageclass.storage.k8s.io \"" + cls + "\" not found", false;
      }
      delay = Str(*sc, {"volumeBindingMode"}) == "WaitForFirstConsumer";
    }
    if (delay && Str(*claim, {"spec", "volumeName"}).empty())
      out.delayed.push_back(claim);
    else
      immediate = true;
  }
  if (immediate) return why = "pod has unbound immediate PersistentVolumeClaims", false;
  return true;
}

bool Scheduler::Tolerates(const Json& pod, const Json& taint) {  // v1 Toleration.ToleratesTaint
  const Json* list = Path(pod, {"spec", "tolerations"});
  if (list == nullptr || !list->is<JsonArray>()) return false;
  for (const Json& t : list->get<JsonArray>()) {
    const std::string &effect = Str(t, {"effect"}), &key = Str(t, {"key"}), &op = Str(t, {"operator"});
    if (!effect.empty() && effect != Str(taint, {"effect"})) continue;
    if (!key.empty() && key != Str(taint, {"key"})) continue;
    if (op == "Exists" || ((op.empty() || op == "Equal") && Str(t, {"value"}) == Str(taint, {"value"}))) return true;
  }
  return false;
}

bool Scheduler::MatchesTopology(const Json& sc, const Json* labels) {
  const Json* terms = Member(sc, "allowedTopologies");
  if (terms == nullptr || !terms->is<JsonArray>() || terms->get<JsonArray>().empty()) return true;
  for (const Json& term : terms->get<JsonArray>()) {
    bool all = true;
    if (const Json* exprs = Member(term, "matchLabelExpressions"); exprs && exprs->is<JsonArray>())
      for (const Json& e : exprs->get<JsonArray>()) {
        const Json* v = labels != nullptr ? Member(*labels, Str(e, {"key"})) : nullptr;
        const auto values = StringList(e, {"values"});
        all = all && v != nullptr && v->is<std::string>() &&
              std::find(values.begin(), values.end(), v->get<std::string>()) != values.end();
      }
    if (all) return true;
  }
  return false;
}

std::vector<std::string> Scheduler::Filter(const Json& pod, const PodClaims& claims, const Json& node,
                                           const std::string& assumed) {
  const std::string& name = Str(node, {"metadata", "name"});
  const Json* labels = Path(node, {"metadata", "labels"});
  const Json* cordoned = Path(node, {"spec", "unschedulable"});
  if (cordoned && cordoned->is<bool>() && cordoned->get<bool>()) {
    static const Json kTaint = ParseJson(R"({"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"})").value();
    if (!Tolerates(pod, kTaint)) return {"node(s) were unschedulable"};
  }
  if (const Json* taints = Path(node, {"spec", "taints"}); taints && taints->is<JsonArray>())
    for (const Json& taint : taints->get<JsonArray>()) {
      const std::string& effect = Str(taint, {"effect"});
      if ((effect == "NoSchedule" || effect == "NoExecute") && !Tolerates(pod, taint))
        return {"node(s) had taint {" + Str(taint, {"key"}) + ": " + Str(taint, {"value"}) + "}, that the pod didn't tolerate"};
    }
  bool selected = true;
  if (const Json* sel = Path(pod, {"spec", "nodeSelector"}); sel && sel->is<JsonObject>())
    for (const auto& [k, v] : sel->get<JsonObject>()) {
      const Json* have = labels != nullptr ? Member(*labels, k) : nullptr;
      selected = selected && have != nullptr && *have == v;
    }
  const Json* required = Path(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"});
  if (required && required->is<JsonObject>()) selected = selected && MatchesNodeSelector(*required, labels, name);
  if (!selected) return {"node(s) didn't match Pod's node affinity/selector"};
  return VolumeFilter(claims, node, assumed == name);
}

std::vector<std::string> Scheduler::VolumeFilter(const PodClaims& claims, const Json& node, bool waiting_here) {
  const std::string& name = Str(node, {"metadata", "name"});
  const Json* labels = Path(node, {"metadata", "labels"});
  bool affinity_ok = true, pvs_found = true, provisionable = true, sufficient = true;
  for (const JsonRef& claim : claims.bound) {  // checkBoundClaims
    const Json* pv = s_.Get("persistentvolumes", Str(*claim, {"spec", "volumeName"}));
    if (pv == nullptr) {
      pvs_found = false;
      break;
    }
    const Json* required = Path(*pv, {"spec", "nodeAffinity", "required"});
    if (required != nullptr && required->is<JsonObject>() && !MatchesNodeSelector(*required, labels, "")) {
      affinity_ok = false;
      break;
    }
  }
  // FindPodVolumes: the claims with a selected node first (any other node: the fast path), then
  // the others smallest first (findMatchingVolumes sorts them by size; it finds no PV for them).
  std::vector<JsonRef> to_provision, unmatched;
  for (const JsonRef& claim : claims.delayed) {
    if (Path(*claim, {"metadata", "annotations", kSelectedNodeAnn}) == nullptr) {
      unmatched.push_back(claim);
    } else if (Annotation(*claim, kSelectedNodeAnn) == name) {
      to_provision.push_back(claim);
    } else {
      provisionable = false;  // fast path: another node was chosen for it
      to_provision.clear();
      unmatched.clear();
      break;
    }
  }
  std::stable_sort(unmatched.begin(), unmatched.end(),
                   [](const JsonRef& a, const JsonRef& b) { return StorageRequest(*a) < StorageRequest(*b); });
  to_provision.insert(to_provision.end(), unmatched.begin(), unmatched.end());
  for (const JsonRef& claim : to_provision) {  // checkVolumeProvisions: stops at the first that fails
    const Json* sc = s_.Get("storageclasses", ClassOf(*claim));
    const std::string prov = sc != nullptr ? Str(*sc, {"provisioner"}) : "";
    if (prov.empty() || prov == "kubernetes.io/no-provisioner" || !MatchesTopology(*sc, labels)) {
      provisionable = false;
      break;
    }
    // A pod waiting in PreBind for its claims on this node is not filtered again there
    // (checkBindings looks at no capacity); the fake's re-run of the filters must not undo it.
    if (!waiting_here && !HasEnoughCapacity(s_, *claim, *sc, node)) {
      sufficient = false;
      break;
    }
  }
  std::vector<std::string> reasons;
  if (!affinity_ok) reasons.push_back("node(s) had volume node affinity conflict");
  if (!provisionable) reasons.push_back("node(s) didn't find available persistent volumes to bind");
  if (!sufficient) reasons.push_back("node(s) did not have enough free storage");
  if (!pvs_found) reasons.push_back("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
  return reasons;
}

void Scheduler::SetScheduled(const Json& pod, const std::string& status, const std::string& reason,
                             const std::string& message, const std::string& node) {
  Json next = pod;
  JsonArray conditions;
  const Json* old = nullptr;
  if (const Json* list = Path(pod, {"status", "conditions"}); list && list->is<JsonArray>())
    for (const Json& c : list->get<JsonArray>()) {
      if (Str(c, {"type"}) == "PodScheduled") old = &c;
      else conditions.push_back(c);
    }
  if (node.empty() && old != nullptr && Str(*old, {"status"}) == status && Str(*old, {"reason"}) == reason &&
      Str(*old, {"message"}) == message)
    return;
  JsonObject c;
  c["type"] = Json("PodScheduled");
  c["status"] = Json(status);
  c["lastProbeTime"] = Json();
  c["lastTransitionTime"] = old != nullptr && Str(*old, {"status"}) == status ? *Member(*old, "lastTransitionTime")
                                                                               : Json(NowRfc3339());
  if (!reason.empty()) c["reason"] = Json(reason);
  if (!message.empty()) c["message"] = Json(message);
  conditions.push_back(Json(c));
  Obj(next, {"status"})["conditions"] = Json(conditions);
  if (!node.empty()) Obj(next, {"spec"})["nodeName"] = Json(node);
  s_.Commit("pods", std::move(next));
}

void Scheduler::Schedule(const std::string& key) {
  JsonRef pod = s_.Ref("pods", key);  // kept alive while it is read
  if (pod == nullptr) return;
  Attempt& a = attempts_[key];
  if (a.uid != Str(*pod, {"metadata", "uid"})) a = Attempt{Str(*pod, {"metadata", "uid"})};
  PodClaims claims;
  std::string why;
  bool error = false;
  const bool claims_ok = PreFilter(*pod, claims, why, error);
  if (!a.assumed.empty() && claims_ok) {  // checkBindings: did provisioning on the chosen node fail?
    for (const auto& name : a.provisioning) {
      const Json* claim = s_.Get("persistentvolumeclaims", ObjectKey(Str(*pod, {"metadata", "namespace"}), name));
      if (claim == nullptr || Annotation(*claim, kSelectedNodeAnn) == a.assumed) continue;
      SetScheduled(*pod, "False", "SchedulerError",
                   "running PreBind plugin \"VolumeBinding\": binding volumes: provisioning failed for PVC \"" + name + "\"");
      pod = s_.Ref("pods", key);
      a.failed = a.assumed;  // and scheduled again at once, from the node after it
      a.assumed.clear();
      a.provisioning.clear();
      break;
    }
  }
  const auto& nodes = s_.bucket("nodes").objects;
  if (nodes.empty() || !claims_ok) {
    a.assumed.clear();
    if (nodes.empty()) return SetScheduled(*pod, "False", "Unschedulable", "no nodes available to schedule pods");
    if (error) return SetScheduled(*pod, "False", "SchedulerError", why);
    // PreFilter's status stands for every node.
    return SetScheduled(*pod, "False", "Unschedulable", FitError({{why, static_cast<int>(nodes.size())}}, nodes.size()));
  }
  std::map<std::string, int> reasons;
  std::vector<std::string> feasible;
  for (const auto& [name, node] : nodes) {
    auto why_not = Filter(*pod, claims, *node, a.assumed);
    if (why_not.empty()) feasible.push_back(name);
    for (const auto& r : why_not) ++reasons[r];
  }
  if (feasible.empty()) {
    a.assumed.clear();
    return SetScheduled(*pod, "False", "Unschedulable", FitError(reasons, nodes.size()));
  }
  std::string chosen = feasible.front();
  if (std::find(feasible.begin(), feasible.end(), a.assumed) != feasible.end()) {
    chosen = a.assumed;
  } else if (!a.failed.empty()) {
    auto next = std::upper_bound(feasible.begin(), feasible.end(), a.failed);
    if (next != feasible.end()) chosen = *next;
  }
  if (claims.delayed.empty()) {  // every claim is bound: bind the pod
    attempts_.erase(key);
    return SetScheduled(*pod, "True", "", "", chosen);
  }
  if (a.assumed != chosen) {
    a.assumed = chosen;
    a.provisioning.clear();
    for (const JsonRef& claim : claims.delayed) a.provisioning.push_back(Str(*claim, {"metadata", "name"}));
  }
  for (const JsonRef& claim : claims.delayed) {  // AssumePodVolumes, bindAPIUpdate
    if (Path(*claim, {"metadata", "annotations", kSelectedNodeAnn}) != nullptr) continue;
    Json next = *claim;
    Obj(next, {"metadata", "annotations"})[kSelectedNodeAnn] = Json(chosen);
    s_.Commit("persistentvolumeclaims", std::move(next));
  }
}

std::string Scheduler::FitError(const std::map<std::string, int>& reasons, size_t nodes) {
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reasons) parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  std::string out = "0/" + std::to_string(nodes) + " nodes are available: ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + ".";
}

}  // namespace fake
