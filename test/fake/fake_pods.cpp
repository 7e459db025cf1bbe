// The bodies of fake_pods.hpp (the contracts are there).
#include "test/fake/fake_pods.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace fake {

std::vector<std::string> PodClaimNames(const Json& pod) {
  std::vector<std::string> names;
  if (const Json* volumes = Path(pod, {"spec", "volumes"}); volumes && volumes->is<JsonArray>())
    for (const Json& v : volumes->get<JsonArray>())
      if (const std::string& claim = Str(v, {"persistentVolumeClaim", "claimName"}); !claim.empty()) names.push_back(claim);
  return names;
}

namespace pods_detail {
namespace {

JsonArray* ArrayAt(Json& obj, std::initializer_list<std::string_view> path) {
  Json* cur = &obj;
  for (std::string_view k : path) {
    if (!cur->is<JsonObject>()) return nullptr;
    auto& o = cur->get<JsonObject>();
    auto it = o.find(std::string(k));
    if (it == o.end()) return nullptr;
    cur = &it->second;
  }
  return cur->is<JsonArray>() ? &cur->get<JsonArray>() : nullptr;
}

// SetDefaults_Container's imagePullPolicy: Always for a :latest or untagged image, else IfNotPresent.
std::string PullPolicy(const std::string& image) {
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  const size_t slash = image.rfind('/'), colon = image.rfind(':');
  const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  return !tagged || image.substr(colon + 1) == "latest" ? "Always" : "IfNotPresent";
}

void SetIfMissing(JsonObject& o, const char* key, Json value) {
  if (o.count(key) == 0) o[key] = std::move(value);
}

}  // namespace
}  // namespace pods_detail

void DefaultPod(Json& pod) {
  using namespace pods_detail;
  JsonObject& spec = Obj(pod, {"spec"});
  SetIfMissing(spec, "restartPolicy", Json("Always"));
  SetIfMissing(spec, "dnsPolicy", Json("ClusterFirst"));
  SetIfMissing(spec, "schedulerName", Json("default-scheduler"));
  SetIfMissing(spec, "terminationGracePeriodSeconds", Json(30.0));
  SetIfMissing(spec, "securityContext", Json(JsonObject()));
  SetIfMissing(spec, "enableServiceLinks", Json(true));
  for (const char* list : {"containers", "initContainers"})
    if (JsonArray* containers = ArrayAt(pod, {"spec", list}))
      for (Json& c : *containers) {
        if (!c.is<JsonObject>()) continue;
        JsonObject& o = c.get<JsonObject>();
        SetIfMissing(o, "terminationMessagePath", Json("/dev/termination-log"));
        SetIfMissing(o, "terminationMessagePolicy", Json("File"));
        SetIfMissing(o, "imagePullPolicy", Json(PullPolicy(Str(c, {"image"}))));
        SetIfMissing(o, "resources", Json(JsonObject()));
      }
  if (JsonArray* volumes = ArrayAt(pod, {"spec", "volumes"}))
    for (Json& v : *volumes)  // a volume without a source is an emptyDir
      if (v.is<JsonObject>() && v.get<JsonObject>().size() == (Member(v, "name") ? 1u : 0u))
        v.get<JsonObject>()["emptyDir"] = Json(JsonObject());
}

void ResetPodStatus(Json& pod) {
  JsonObject status;
  status["phase"] = Json("Pending");
  pod.get<JsonObject>()["status"] = Json(status);
}

void ValidatePod(const Json& pod, std::vector<FieldError>& errs) {
  auto append = [&](const std::vector<FieldError>& more) { errs.insert(errs.end(), more.begin(), more.end()); };
  auto items = [&](const char* key) {
    const Json* list = Path(pod, {"spec", key});
    return list != nullptr && list->is<JsonArray>() ? list->get<JsonArray>() : JsonArray();
  };
  std::set<std::string> volumes;
  const JsonArray vols = items("volumes");
  for (size_t i = 0; i < vols.size(); ++i) {
    const std::string at = "spec.volumes[" + std::to_string(i) + "]";
    const std::string& name = Str(vols[i], {"name"});
    if (name.empty()) errs.push_back(Required(at + ".name"));
    else if (!volumes.insert(name).second) errs.push_back({"FieldValueDuplicate", at + ".name", "Duplicate value: \"" + name + "\""});
    else append(CheckLabel(at + ".name", name));
    if (const Json* claim = Member(vols[i], "persistentVolumeClaim"); claim && Str(*claim, {"claimName"}).empty())
      errs.push_back(Required(at + ".persistentVolumeClaim.claimName"));
  }
  const JsonArray containers = items("containers");
  if (containers.empty()) errs.push_back(Required("spec.containers"));
  std::set<std::string> names;
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string at = "spec.containers[" + std::to_string(i) + "]";
    const std::string& name = Str(containers[i], {"name"});
    if (name.empty()) errs.push_back(Required(at + ".name"));
    else if (!names.insert(name).second) errs.push_back({"FieldValueDuplicate", at + ".name", "Duplicate value: \"" + name + "\""});
    else append(CheckLabel(at + ".name", name));
    if (Str(containers[i], {"image"}).empty()) errs.push_back(Required(at + ".image"));
    const Json* mounts = Member(containers[i], "volumeMounts");
    if (mounts == nullptr || !mounts->is<JsonArray>()) continue;
    for (size_t j = 0; j < mounts->get<JsonArray>().size(); ++j) {
      const Json& m = mounts->get<JsonArray>()[j];
      const std::string mat = at + ".volumeMounts[" + std::to_string(j) + "]";
      if (volumes.count(Str(m, {"name"})) == 0) errs.push_back({"FieldValueNotFound", mat + ".name", "Not found: \"" + Str(m, {"name"}) + "\""});
      if (Str(m, {"mountPath"}).empty()) errs.push_back(Required(mat + ".mountPath"));
    }
  }
  const std::string& restart = Str(pod, {"spec", "restartPolicy"});
  if (restart != "Always" && restart != "OnFailure" && restart != "Never")
    errs.push_back(NotSupported("spec.restartPolicy", restart, {"Always", "OnFailure", "Never"}));
  const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  if (const Json* req = Path(pod, {"spec", "affinity", "nodeAffinity", kRequired}); req && req->is<JsonObject>())
    ValidateNodeSelector(*req, std::string("spec.affinity.nodeAffinity.") + kRequired, errs);
}

void ValidatePodUpdate(const Json& old_pod, const Json& new_pod, std::vector<FieldError>& errs) {
  auto mutable_removed = [](const Json& pod) {
    Json spec = Path(pod, {"spec"}) ? *Path(pod, {"spec"}) : Json(JsonObject());
    if (!spec.is<JsonObject>()) return spec;
    for (const char* list : {"containers", "initContainers"})
      if (JsonArray* cs = pods_detail::ArrayAt(spec, {list}))
        for (Json& c : *cs)
          if (c.is<JsonObject>()) c.get<JsonObject>().erase("image");
    spec.get<JsonObject>().erase("activeDeadlineSeconds");
    spec.get<JsonObject>().erase("tolerations");
    return spec;
  };
  bool tolerations_kept = true;  // only additions to the existing tolerations
  const Json* old_tol = Path(old_pod, {"spec", "tolerations"});
  const Json* new_tol = Path(new_pod, {"spec", "tolerations"});
  if (old_tol && old_tol->is<JsonArray>())
    for (const Json& t : old_tol->get<JsonArray>())
      tolerations_kept = tolerations_kept && new_tol && new_tol->is<JsonArray>() &&
                         std::find(new_tol->get<JsonArray>().begin(), new_tol->get<JsonArray>().end(), t) !=
                             new_tol->get<JsonArray>().end();
  if (!(mutable_removed(old_pod) == mutable_removed(new_pod)) || !tolerations_kept)
    errs.push_back(Forbidden("spec",
                             "pod updates may not change fields other than `spec.containers[*].image`, "
                             "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only "
                             "additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be "
                             "set to 1 if it was previously negative)"));
}

}  // namespace fake
