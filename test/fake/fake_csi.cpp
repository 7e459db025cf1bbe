// The bodies of fake_csi.hpp (the contracts are there).
#include "test/fake/fake_csi.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "test/fake/fake_labels.hpp"
#include "test/fake/fake_names.hpp"
#include "test/fake/fake_quantity.hpp"

namespace fake {

namespace {

// A Go string as %q or %#v prints it (for the texts a field.Error holds, JSON's quoting is the same).
std::string Quote(const std::string& s) { return ToText(Json(s)); }

// A member that is there and not null (a set pointer field of the Go type).
const Json* Set(const Json& obj, std::string_view key) {
  const Json* v = Member(obj, key);
  return v != nullptr && !v->is<JsonNull>() ? v : nullptr;
}

// A quantity as Quantity.Value() gives it; false when it is not a quantity.
bool Bytes(const Json& v, int64_t& out) {
  if (!v.is<std::string>()) return false;
  auto q = ::ParseQuantity(v.get<std::string>());
  if (!q.ok()) return false;
  if (!QuantityBytes(*q, &out))  // beyond int64: the largest (or smallest) there is
    out = IsNegative(*q) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  return true;
}

// Go's %v of a JSON number that decodes into an int64 field.
std::string IntText(const Json& v) { return std::to_string(static_cast<long long>(v.get<double>())); }

// Go's %#v of a []string, as a field.Error prints a value of a type it has no printer for.
std::string GoStrings(const std::string& type, const Json* list) {
  if (list == nullptr || !list->is<JsonArray>()) return type + "(nil)";
  std::string out = type + "{";
  bool first = true;
  for (const Json& v : list->get<JsonArray>()) {
    out += (first ? "" : ", ") + Quote(v.is<std::string>() ? v.get<std::string>() : ToText(v));
    first = false;
  }
  return out + "}";
}

// Go's %#v of a metav1.LabelSelector (the value behind a non-null *LabelSelector).
std::string GoLabelSelector(const Json& sel) {
  std::string labels = "map[string]string(nil)";
  if (const Json* m = Set(sel, "matchLabels"); m && m->is<JsonObject>()) {
    labels = "map[string]string{";
    bool first = true;
    for (const auto& [k, v] : m->get<JsonObject>()) {  // fmt prints maps sorted by key, as JsonObject holds them
      labels += (first ? "" : ", ") + Quote(k) + ":" + Quote(v.is<std::string>() ? v.get<std::string>() : "");
      first = false;
    }
    labels += "}";
  }
  std::string exprs = "[]v1.LabelSelectorRequirement(nil)";
  if (const Json* list = Set(sel, "matchExpressions"); list && list->is<JsonArray>()) {
    exprs = "[]v1.LabelSelectorRequirement{";
    bool first = true;
    for (const Json& e : list->get<JsonArray>()) {
      exprs += std::string(first ? "" : ", ") + "v1.LabelSelectorRequirement{Key:" + Quote(Str(e, {"key"})) +
               ", Operator:" + Quote(Str(e, {"operator"})) + ", Values:" + GoStrings("[]string", Set(e, "values")) + "}";
      first = false;
    }
    exprs += "}";
  }
  return "v1.LabelSelector{MatchLabels:" + labels + ", MatchExpressions:" + exprs + "}";
}

// metav1validation.ValidateLabelSelector with AllowInvalidLabelValueInSelector false.
void ValidateLabelSelector(const Json& sel, const std::string& path, std::vector<FieldError>& errs) {
  if (const Json* m = Set(sel, "matchLabels"); m && m->is<JsonObject>())
    for (const auto& [k, v] : m->get<JsonObject>()) {  // ValidateLabels: both at the map's path
      for (const auto& msg : QualifiedNameErrors(k)) errs.push_back(InvalidValue(path + ".matchLabels", k, msg));
      const std::string value = v.is<std::string>() ? v.get<std::string>() : "";
      if (std::string why = labels_detail::LabelValueError(value); !why.empty())
        errs.push_back(InvalidValue(path + ".matchLabels", value, why));
    }
  const Json* list = Set(sel, "matchExpressions");
  if (list == nullptr || !list->is<JsonArray>()) return;
  const JsonArray& exprs = list->get<JsonArray>();
  for (size_t i = 0; i < exprs.size(); ++i) {
    const std::string at = path + ".matchExpressions[" + std::to_string(i) + "]";
    const std::string& op = Str(exprs[i], {"operator"});
    const auto values = StringList(exprs[i], {"values"});
    if (op == "In" || op == "NotIn") {
      if (values.empty()) errs.push_back(Required(at + ".values", "must be specified when `operator` is 'In' or 'NotIn'"));
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (!values.empty())
        errs.push_back(Forbidden(at + ".values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    } else {
      errs.push_back(InvalidValue(at + ".operator", op, "not a valid selector operator"));
    }
    const std::string& key = Str(exprs[i], {"key"});
    for (const auto& msg : QualifiedNameErrors(key)) errs.push_back(InvalidValue(at + ".key", key, msg));
    for (size_t j = 0; j < values.size(); ++j)
      if (std::string why = labels_detail::LabelValueError(values[j]); !why.empty())
        errs.push_back(InvalidValue(at + ".values[" + std::to_string(j) + "]", values[j], why));
  }
}

}  // namespace

void DefaultCsiDriver(Json& obj) {
  JsonObject& spec = Obj(obj, {"spec"});
  auto unset = [&](const char* k) { return spec.count(k) == 0 || spec[k].is<JsonNull>(); };
  for (const auto& [k, v] : {std::pair<const char*, bool>{"attachRequired", true}, {"podInfoOnMount", false},
                             {"storageCapacity", false}, {"requiresRepublish", false}, {"seLinuxMount", false}})
    if (unset(k)) spec[k] = Json(v);
  if (unset("fsGroupPolicy")) spec["fsGroupPolicy"] = Json("ReadWriteOnceWithFSType");
  // len(VolumeLifecycleModes) == 0: an empty list is defaulted too
  if (unset("volumeLifecycleModes") || (spec["volumeLifecycleModes"].is<JsonArray>() && spec["volumeLifecycleModes"].get<JsonArray>().empty()))
    spec["volumeLifecycleModes"] = StringArray({"Persistent"});
}

void SetCsiDriverGeneration(const Json* cur, Json& next) {
  double generation = 1;
  if (cur != nullptr) {
    const Json* was = Path(*cur, {"metadata", "generation"});
    generation = was != nullptr && was->is<double>() ? was->get<double>() : 0;
    const Json* a = Member(*cur, "spec");
    const Json* b = Member(next, "spec");
    if ((a == nullptr) != (b == nullptr) || (a != nullptr && !(*a == *b))) ++generation;
  }
  Meta(next)["generation"] = Json(generation);
}

void ValidateCsiDriver(const Json& obj, std::vector<FieldError>& errs) {
  static const Json kEmpty{JsonObject()};
  const Json* spec_ptr = Member(obj, "spec");
  const Json& spec = spec_ptr != nullptr ? *spec_ptr : kEmpty;
  if (Set(spec, "attachRequired") == nullptr) errs.push_back(Required("spec.attachedRequired"));
  if (Set(spec, "podInfoOnMount") == nullptr) errs.push_back(Required("spec.podInfoOnMount"));
  if (Set(spec, "storageCapacity") == nullptr) errs.push_back(Required("spec.storageCapacity"));
  if (const Json* policy = Set(spec, "fsGroupPolicy")) {
    const std::string& p = Str(spec, {"fsGroupPolicy"});
    if (p != "File" && p != "None" && p != "ReadWriteOnceWithFSType")
      errs.push_back(NotSupported("spec.fsGroupPolicy", policy->is<std::string>() ? p : ToText(*policy),
                                  {"File", "None", "ReadWriteOnceWithFSType"}));
  }
  if (const Json* list = Set(spec, "tokenRequests"); list && list->is<JsonArray>()) {
    std::set<std::string> audiences;
    const JsonArray& requests = list->get<JsonArray>();
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::string at = "spec.tokenRequests[" + std::to_string(i) + "]";
      const std::string& audience = Str(requests[i], {"audience"});
      if (!audiences.insert(audience).second) {
        errs.push_back({"FieldValueDuplicate", at + ".audience", "Duplicate value: " + Quote(audience)});
        continue;
      }
      const Json* seconds = Set(requests[i], "expirationSeconds");
      if (seconds == nullptr || !seconds->is<double>()) continue;
      if (seconds->get<double>() < 600)
        errs.push_back({"FieldValueInvalid", at + ".expirationSeconds",
                        "Invalid value: " + IntText(*seconds) + ": may not specify a duration less than 10 minutes"});
      if (seconds->get<double>() > 4294967296.0)
        errs.push_back({"FieldValueInvalid", at + ".expirationSeconds",
                        "Invalid value: " + IntText(*seconds) + ": may not specify a duration larger than 2^32 seconds"});
    }
  }
  for (const auto& mode : StringList(spec, {"volumeLifecycleModes"}))
    if (mode != "Persistent" && mode != "Ephemeral")
      errs.push_back(NotSupported("spec.volumeLifecycleModes", mode, {"Persistent", "Ephemeral"}));
}

void ValidateCsiDriverUpdate(const Json& old_obj, const Json& new_obj, std::vector<FieldError>& errs) {
  const Json* was = Path(old_obj, {"spec", "attachRequired"});
  const Json* now = Path(new_obj, {"spec", "attachRequired"});
  if (was != nullptr && now != nullptr && !(*was == *now))
    errs.push_back({"FieldValueInvalid", "spec.attachedRequired",
                    "Invalid value: " + std::string(now->is<bool>() && now->get<bool>() ? "true" : "false") + ": field is immutable"});
  const Json* old_modes = Path(old_obj, {"spec", "volumeLifecycleModes"});
  const Json* new_modes = Path(new_obj, {"spec", "volumeLifecycleModes"});
  if ((old_modes == nullptr) != (new_modes == nullptr) || (old_modes != nullptr && !(*old_modes == *new_modes)))
    errs.push_back({"FieldValueInvalid", "spec.volumeLifecycleModes",
                    "Invalid value: " + GoStrings("[]storage.VolumeLifecycleMode", new_modes) + ": field is immutable"});
}

void ValidateCsiStorageCapacity(const Json& obj, std::vector<FieldError>& errs) {
  if (const Json* sel = Set(obj, "nodeTopology"); sel && sel->is<JsonObject>()) ValidateLabelSelector(*sel, "nodeTopology", errs);
  for (auto& e : CheckSubdomain("storageClassName", Str(obj, {"storageClassName"}))) errs.push_back(e);
  int64_t bytes = 0;
  if (const Json* cap = Set(obj, "capacity"); cap && Bytes(*cap, bytes) && bytes < 0)  // ValidateNonnegativeQuantity
    errs.push_back(InvalidValue("capacity", cap->get<std::string>(), "must be greater than or equal to 0"));
}

void ValidateCsiStorageCapacityUpdate(const Json& old_obj, const Json& new_obj, std::vector<FieldError>& errs) {
  const Json* was = Set(old_obj, "nodeTopology");
  const Json* now = Set(new_obj, "nodeTopology");
  if ((was == nullptr) != (now == nullptr) || (was != nullptr && !(*was == *now)))
    errs.push_back({"FieldValueInvalid", "nodeTopology",
                    "Invalid value: " + (now != nullptr ? GoLabelSelector(*now) : std::string("null")) + ": field is immutable"});
  const std::string& cls = Str(new_obj, {"storageClassName"});
  if (cls != Str(old_obj, {"storageClassName"})) errs.push_back(InvalidValue("storageClassName", cls, "field is immutable"));
}

bool SelectorMatches(const Json* selector, const Json* labels) {
  if (selector == nullptr || !selector->is<JsonObject>()) return false;  // labels.Nothing()
  std::vector<Requirement> reqs;
  if (const Json* m = Set(*selector, "matchLabels"); m && m->is<JsonObject>())
    for (const auto& [k, v] : m->get<JsonObject>()) reqs.push_back({k, "=", v.is<std::string>() ? v.get<std::string>() : ""});
  if (const Json* list = Set(*selector, "matchExpressions"); list && list->is<JsonArray>())
    for (const Json& e : list->get<JsonArray>()) {
      static const std::pair<const char*, const char*> kOps[] = {
          {"In", "in"}, {"NotIn", "notin"}, {"Exists", "exists"}, {"DoesNotExist", "!exists"}};
      Requirement r{Str(e, {"key"}), "", ""};
      for (const auto& [api, op] : kOps)
        if (Str(e, {"operator"}) == api) r.op = op;
      r.values = StringList(e, {"values"});
      if (r.op.empty() || ((r.op == "in" || r.op == "notin") && r.values.empty())) return false;  // does not convert
      reqs.push_back(r);
    }
  for (const auto& r : reqs) {  // none: labels.Everything()
    const Json* v = labels != nullptr ? Member(*labels, r.key) : nullptr;
    const bool present = v != nullptr && v->is<std::string>();
    if (!Holds(r, present, present ? v->get<std::string>() : "")) return false;
  }
  return true;
}

bool CapacitySufficient(const Json& capacity, int64_t bytes) {
  const Json* limit = Set(capacity, "maximumVolumeSize");  // "more precise", when there
  if (limit == nullptr) limit = Set(capacity, "capacity");
  int64_t have = 0;
  return limit != nullptr && Bytes(*limit, have) && have >= bytes;
}

bool HasEnoughCapacity(Store& s, const Json& claim, const Json& sc, const Json& node) {
  int64_t request = 0;
  const Json* storage = Path(claim, {"spec", "resources", "requests", "storage"});
  if (storage == nullptr || !Bytes(*storage, request)) return true;  // no capacity to check for
  const Json* driver = s.Get("csidrivers", Str(sc, {"provisioner"}));
  const Json* opted = driver != nullptr ? Path(*driver, {"spec", "storageCapacity"}) : nullptr;
  if (opted == nullptr || !opted->is<bool>() || !opted->get<bool>()) return true;
  const Json* labels = Path(node, {"metadata", "labels"});
  for (const auto& [key, capacity] : s.bucket("csistoragecapacities").objects)
    if (Str(*capacity, {"storageClassName"}) == Str(sc, {"metadata", "name"}) && CapacitySufficient(*capacity, request) &&
        SelectorMatches(Set(*capacity, "nodeTopology"), labels))
      return true;
  return false;
}

}  // namespace fake
