// The bodies of fake_table.hpp (the contracts are there).
#include "test/fake/fake_table.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>
#include <string>
#include <vector>

namespace fake {

namespace table_detail {

std::string HumanDuration(long long seconds) {
  auto n = [](long long v) { return std::to_string(v); };
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return n(seconds) + "s";
  const long long minutes = seconds / 60, hours = seconds / 3600, days = hours / 24, years = days / 365;
  if (minutes < 10) return n(minutes) + "m" + (seconds % 60 == 0 ? "" : n(seconds % 60) + "s");
  if (minutes < 180) return n(minutes) + "m";
  if (hours < 8) return n(hours) + "h" + (minutes % 60 == 0 ? "" : n(minutes % 60) + "m");
  if (hours < 48) return n(hours) + "h";
  if (hours < 24 * 8) return n(days) + "d" + (hours % 24 == 0 ? "" : n(hours % 24) + "h");
  if (hours < 24 * 365 * 2) return n(days) + "d";
  if (hours < 24 * 365 * 8) return n(years) + "y" + (days % 365 == 0 ? "" : n(days % 365) + "d");
  return n(years) + "y";
}

std::string Age(const std::string& rfc3339) {
  long long t = ParseRfc3339(rfc3339);
  if (t < 0) return "<unknown>";
  return HumanDuration(static_cast<long long>(std::time(nullptr)) - t);
}

std::string AccessModes(const Json& obj, std::initializer_list<std::string_view> path) {
  const std::vector<std::string> modes = StringList(obj, path);
  std::string out;
  for (const auto& [mode, abbrev] : {std::pair<const char*, const char*>{"ReadWriteOnce", "RWO"},
                                     {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"}})
    if (std::find(modes.begin(), modes.end(), mode) != modes.end()) out += (out.empty() ? "" : ",") + std::string(abbrev);
  return out;
}

std::string StorageClassOf(const Json& obj) {
  const Json* beta = Path(obj, {"metadata", "annotations", "volume.beta.kubernetes.io/storage-class"});
  if (beta != nullptr && beta->is<std::string>()) return beta->get<std::string>();
  return Str(obj, {"spec", "storageClassName"});
}

std::string StrOr(const Json& obj, std::initializer_list<std::string_view> path, const std::string& unset) {
  const Json* v = Path(obj, path);
  return v != nullptr && v->is<std::string>() ? v->get<std::string>() : unset;
}

const JsonArray& Items(const Json& obj, std::initializer_list<std::string_view> path) {
  static const JsonArray kNone;
  const Json* v = Path(obj, path);
  return v != nullptr && v->is<JsonArray>() ? v->get<JsonArray>() : kNone;
}

std::string OrNone(const Json& obj, std::initializer_list<std::string_view> path) {
  const std::string& v = Str(obj, path);
  return v.empty() ? "<none>" : v;
}

std::string PodReady(const Json& pod) {
  long ready = 0;
  for (const Json& s : Items(pod, {"status", "containerStatuses"}))
    if (const Json* r = Member(s, "ready"); r && r->is<bool>() && r->get<bool>()) ++ready;
  return std::to_string(ready) + "/" + std::to_string(Items(pod, {"spec", "containers"}).size());
}

std::string PodStatus(const Json& pod) {
  std::string reason = Str(pod, {"status", "reason"});
  if (IsDeleting(pod)) return reason == "NodeLost" ? "Unknown" : "Terminating";
  return reason.empty() ? Str(pod, {"status", "phase"}) : reason;
}

long PodRestarts(const Json& pod) {
  long n = 0;
  for (const Json& s : Items(pod, {"status", "containerStatuses"}))
    if (const Json* r = Member(s, "restartCount"); r && r->is<double>()) n += static_cast<long>(r->get<double>());
  return n;
}

std::string PodReadinessGates(const Json& pod) {
  const JsonArray& gates = Items(pod, {"spec", "readinessGates"});
  if (gates.empty()) return "<none>";
  long met = 0;
  for (const Json& g : gates)
    for (const Json& c : Items(pod, {"status", "conditions"}))
      if (Str(c, {"type"}) == Str(g, {"conditionType"}) && Str(c, {"status"}) == "True") ++met;
  return std::to_string(met) + "/" + std::to_string(gates.size());
}

std::string NodeStatus(const Json& node) {
  std::string status = "Unknown";
  if (const Json* conds = Path(node, {"status", "conditions"}); conds && conds->is<JsonArray>())
    for (const Json& c : conds->get<JsonArray>())
      if (Str(c, {"type"}) == "Ready") status = Str(c, {"status"}) == "True" ? "Ready" : "NotReady";
  const Json* cordoned = Path(node, {"spec", "unschedulable"});
  if (cordoned && cordoned->is<bool>() && cordoned->get<bool>()) status += ",SchedulingDisabled";
  return status;
}

std::string NodeRoles(const Json& node) {
  static const std::string kPrefix = "node-role.kubernetes.io/";
  std::set<std::string> roles;
  if (const Json* labels = Path(node, {"metadata", "labels"}); labels && labels->is<JsonObject>())
    for (const auto& [k, v] : labels->get<JsonObject>()) {
      if (k.compare(0, kPrefix.size(), kPrefix) == 0 && k.size() > kPrefix.size()) roles.insert(k.substr(kPrefix.size()));
      if (k == "kubernetes.io/role" && v.is<std::string>() && !v.get<std::string>().empty()) roles.insert(v.get<std::string>());
    }
  std::string out;
  for (const auto& r : roles) out += (out.empty() ? "" : ",") + r;
  return out.empty() ? "<none>" : out;
}

std::string NodeAddress(const Json& node, const std::string& type) {
  if (const Json* addrs = Path(node, {"status", "addresses"}); addrs && addrs->is<JsonArray>())
    for (const Json& a : addrs->get<JsonArray>())
      if (Str(a, {"type"}) == type) return Str(a, {"address"});
  return "<none>";
}

std::vector<Column> Columns(const ResourceType& t) {
  if (t.plural == "persistentvolumeclaims")
    return {{"Name"}, {"Status"}, {"Volume"}, {"Capacity"}, {"Access Modes"}, {"StorageClass"},
            {"VolumeAttributesClass"}, {"Age"}, {"VolumeMode", 1}};
  if (t.plural == "persistentvolumes")
    return {{"Name"}, {"Capacity"}, {"Access Modes"}, {"Reclaim Policy"}, {"Status"}, {"Claim"}, {"StorageClass"},
            {"VolumeAttributesClass"}, {"Reason"}, {"Age"}, {"VolumeMode", 1}};
  if (t.plural == "storageclasses")
    return {{"Name"}, {"Provisioner"}, {"ReclaimPolicy"}, {"VolumeBindingMode"}, {"AllowVolumeExpansion"}, {"Age"}};
  if (t.plural == "events") return {{"Last Seen"}, {"Type"}, {"Reason"}, {"Object"}, {"Message"}};
  if (t.plural == "namespaces") return {{"Name"}, {"Status"}, {"Age"}};
  if (t.plural == "pods")
    return {{"Name"}, {"Ready"}, {"Status"}, {"Restarts"}, {"Age"}, {"IP", 1}, {"Node", 1}, {"Nominated Node", 1},
            {"Readiness Gates", 1}};
  if (t.plural == "nodes")
    return {{"Name"}, {"Status"}, {"Roles"}, {"Age"}, {"Version"}, {"Internal-IP", 1}, {"External-IP", 1},
            {"OS-Image", 1}, {"Kernel-Version", 1}, {"Container-Runtime", 1}};
  if (t.plural == "leases") return {{"Name"}, {"Holder"}, {"Age"}};
  if (t.plural == "csidrivers")
    return {{"Name"}, {"AttachRequired", 0, "boolean"}, {"PodInfoOnMount", 0, "boolean"}, {"StorageCapacity", 0, "boolean"},
            {"TokenRequests"}, {"RequiresRepublish", 0, "boolean"}, {"Modes"}, {"Age"}};
  if (t.plural == "csistoragecapacities") return {{"Name"}, {"Created At", 0, "date"}};
  return {{"Name"}, {"Age"}};
}

JsonArray Cells(const ResourceType& t, const Json& o) {
  const std::string& name = Str(o, {"metadata", "name"});
  std::vector<std::string> cells;
  if (t.plural == "persistentvolumeclaims") {
    const std::string& volume = Str(o, {"spec", "volumeName"});
    const bool bound = !volume.empty();  // capacity and access modes are the bound volume's
    cells = {name, Phase(o), volume, bound ? Str(o, {"status", "capacity", "storage"}) : "",
             bound ? AccessModes(o, {"status", "accessModes"}) : "", StorageClassOf(o),
             StrOr(o, {"spec", "volumeAttributesClassName"}, "<unset>"), Created(o), StrOr(o, {"spec", "volumeMode"}, "<unset>")};
  } else if (t.plural == "persistentvolumes") {
    const Json* ref = Path(o, {"spec", "claimRef"});
    const std::string claim = ref ? Str(*ref, {"namespace"}) + "/" + Str(*ref, {"name"}) : "";
    cells = {name, Str(o, {"spec", "capacity", "storage"}), AccessModes(o, {"spec", "accessModes"}),
             Str(o, {"spec", "persistentVolumeReclaimPolicy"}), Phase(o), claim, StorageClassOf(o),
             StrOr(o, {"spec", "volumeAttributesClassName"}, "<unset>"), Str(o, {"status", "reason"}), Created(o),
             StrOr(o, {"spec", "volumeMode"}, "<unset>")};
  } else if (t.plural == "storageclasses") {
    const bool is_default = Annotation(o, kIsDefaultClass) == "true" || Annotation(o, kBetaIsDefaultClass) == "true";
    const Json* expand = Path(o, {"allowVolumeExpansion"});
    JsonArray row;
    for (const std::string& c : {name + (is_default ? " (default)" : ""), Str(o, {"provisioner"}),
                                 StrOr(o, {"reclaimPolicy"}, "Delete"), StrOr(o, {"volumeBindingMode"}, "Immediate")})
      row.emplace_back(c);
    row.emplace_back(expand != nullptr && expand->is<bool>() && expand->get<bool>());  // a bool cell, as Go's
    row.emplace_back(Created(o));
    return row;
  } else if (t.plural == "events") {
    std::string kind = Str(o, {"involvedObject", "kind"});
    for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string& target = Str(o, {"involvedObject", "name"});
    std::string message = Str(o, {"message"});
    message.erase(0, message.find_first_not_of(" \t\n"));
    message.erase(message.find_last_not_of(" \t\n") + 1);
    std::string seen = Str(o, {"lastTimestamp"});  // else the first time, else the eventTime
    if (seen.empty()) seen = Str(o, {"firstTimestamp"});
    if (seen.empty()) seen = Str(o, {"eventTime"});
    cells = {Age(seen), Str(o, {"type"}), Str(o, {"reason"}), target.empty() ? kind : kind + "/" + target, message};
  } else if (t.plural == "namespaces") {
    cells = {name, Str(o, {"status", "phase"}), Created(o)};
  } else if (t.plural == "pods") {
    cells = {name, PodReady(o), PodStatus(o), std::to_string(PodRestarts(o)), Created(o), OrNone(o, {"status", "podIP"}),
             OrNone(o, {"spec", "nodeName"}), OrNone(o, {"status", "nominatedNodeName"}), PodReadinessGates(o)};
  } else if (t.plural == "nodes") {
    auto info = [&](const char* k) {
      const std::string& v = Str(o, {"status", "nodeInfo", k});
      return v.empty() ? std::string("<unknown>") : v;
    };
    cells = {name, NodeStatus(o), NodeRoles(o), Created(o), Str(o, {"status", "nodeInfo", "kubeletVersion"}),
             NodeAddress(o, "InternalIP"), NodeAddress(o, "ExternalIP"), info("osImage"), info("kernelVersion"),
             info("containerRuntimeVersion")};
  } else if (t.plural == "leases") {
    cells = {name, Str(o, {"spec", "holderIdentity"}), Created(o)};
  } else if (t.plural == "csidrivers") {  // printCSIDriver: booleans as bool cells, unset ones as their defaults
    auto flag = [&](const char* k, bool unset) {
      const Json* v = Path(o, {"spec", k});
      return Json(v != nullptr && v->is<bool>() ? v->get<bool>() : unset);
    };
    std::string audiences = "<unset>", modes;
    if (const Json* tr = Path(o, {"spec", "tokenRequests"}); tr && tr->is<JsonArray>()) {
      audiences.clear();
      for (const Json& r : tr->get<JsonArray>()) audiences += (audiences.empty() ? "" : ",") + Str(r, {"audience"});
    }
    for (const auto& m : StringList(o, {"spec", "volumeLifecycleModes"})) modes += (modes.empty() ? "" : ",") + m;
    return JsonArray{Json(name), flag("attachRequired", true), flag("podInfoOnMount", false), flag("storageCapacity", false),
                     Json(audiences), flag("requiresRepublish", false), Json(modes.empty() ? "<none>" : modes), Json(Created(o))};
  } else if (t.plural == "csistoragecapacities") {
    cells = {name, Str(o, {"metadata", "creationTimestamp"})};  // time.RFC3339 in UTC, as stored
  } else {
    cells = {name, Created(o)};
  }
  JsonArray row;
  for (const auto& c : cells) row.emplace_back(c);
  return row;
}

}  // namespace table_detail

Json ToTable(const ResourceType& t, const JsonArray& items, const Json& meta) {
  using namespace table_detail;
  JsonArray columns, rows;
  for (const Column& c : Columns(t)) {
    JsonObject d;
    d["name"] = Json(c.name);
    d["type"] = Json(c.type);
    d["format"] = Json(std::string(c.name) == "Name" ? "name" : "");
    d["description"] = Json("");
    d["priority"] = Json(static_cast<double>(c.priority));
    columns.emplace_back(d);
  }
  for (const Json& o : items) {
    JsonObject partial, row;
    partial["kind"] = Json("PartialObjectMetadata");
    partial["apiVersion"] = Json("meta.k8s.io/v1");
    partial["metadata"] = Path(o, {"metadata"}) ? *Path(o, {"metadata"}) : Json(JsonObject());
    row["cells"] = Json(Cells(t, o));
    row["object"] = Json(partial);
    rows.emplace_back(row);
  }
  JsonObject table;
  table["kind"] = Json("Table");
  table["apiVersion"] = Json("meta.k8s.io/v1");
  table["metadata"] = meta;
  table["columnDefinitions"] = Json(columns);
  table["rows"] = Json(rows);
  return Json(table);
}

}  // namespace fake
