// The bodies of fake_rbac.hpp (the contracts are there).
#include "test/fake/fake_rbac.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fake {

Status Rbac::AddText(const std::string& text, const std::string& origin) {
  auto docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status().Wrap(origin);
  for (const picojson::value& doc : *docs) {
    Status s = AddObject(doc);
    if (!s.ok()) return s.Wrap(origin);
  }
  return Status::Ok();
}

Status Rbac::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error("cannot read RBAC file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return AddText(ss.str(), path);
}

bool Rbac::Allows(const User& user, const RequestInfo& info) const {
  if (!info.is_resource && info.verb == "get" && (IsPublicInfoPath(info.path) || (IsDiscoveryPath(info.path) && Authenticated(user))))
    return true;
  for (const Binding& b : bindings_) {
    if (!b.namespace_.empty() && b.namespace_ != info.ns) continue;
    if (!Binds(b, user)) continue;
    const std::vector<PolicyRule>* rules = RulesOf(b);
    if (rules == nullptr) continue;
    for (const PolicyRule& r : *rules)
      if (RuleAllows(r, info)) return true;
  }
  return false;
}

std::string Rbac::ForbiddenMessage(const User& user, const RequestInfo& info) {
  std::string who = "User \"" + user.name + "\" cannot " + info.verb;
  if (!info.is_resource) return "forbidden: " + who + " path \"" + info.path + "\"";
  std::string resource = info.resource + (info.subresource.empty() ? "" : "/" + info.subresource);
  std::string msg = who + " resource \"" + resource + "\" in API group \"" + info.group + "\"" +
                    (info.ns.empty() ? " at the cluster scope" : " in the namespace \"" + info.ns + "\"");
  std::string qualified = info.group.empty() ? info.resource : info.resource + "." + info.group;
  return qualified + (info.name.empty() ? "" : " \"" + info.name + "\"") + " is forbidden: " + msg;
}

std::vector<PolicyRule> Rbac::ParseRules(const Json& obj) {
  std::vector<PolicyRule> rules;
  const Json* rs = Member(obj, "rules");
  if (rs == nullptr || !rs->is<JsonArray>()) return rules;
  for (const Json& r : rs->get<JsonArray>()) {
    rules.push_back({StringList(r, {"apiGroups"}), StringList(r, {"resources"}), StringList(r, {"verbs"}),
                     StringList(r, {"resourceNames"}), StringList(r, {"nonResourceURLs"})});
  }
  return rules;
}

Status Rbac::AddObject(const Json& obj) {
  std::string kind = Str(obj, {"kind"});
  std::string name = Str(obj, {"metadata", "name"});
  std::string ns = Str(obj, {"metadata", "namespace"});
  if (kind == "List") {
    if (const Json* items = Member(obj, "items"); items && items->is<JsonArray>())
      for (const Json& item : items->get<JsonArray>()) {
        Status s = AddObject(item);
        if (!s.ok()) return s;
      }
    return Status::Ok();
  }
  if (kind == "ClusterRole") {
    cluster_roles_[name] = ParseRules(obj);
  } else if (kind == "Role") {
    if (ns.empty()) ns = "default";
    roles_[ns + "/" + name] = ParseRules(obj);
  } else if (kind == "ClusterRoleBinding" || kind == "RoleBinding") {
    Binding b;
    b.namespace_ = kind == "RoleBinding" ? (ns.empty() ? "default" : ns) : "";
    b.role_kind = Str(obj, {"roleRef", "kind"});
    b.role_name = Str(obj, {"roleRef", "name"});
    if (b.role_kind != "ClusterRole" && b.role_kind != "Role")
      return Status::Invalid(kind + " " + name + ": roleRef.kind must be ClusterRole or Role");
    if (kind == "ClusterRoleBinding" && b.role_kind != "ClusterRole")
      return Status::Invalid("ClusterRoleBinding " + name + ": roleRef.kind must be ClusterRole");
    if (const Json* subs = Member(obj, "subjects"); subs && subs->is<JsonArray>())
      for (const Json& s : subs->get<JsonArray>()) {
        Subject sub{Str(s, {"kind"}), Str(s, {"name"}), Str(s, {"namespace"})};
        if (sub.kind == "ServiceAccount" && sub.namespace_.empty()) sub.namespace_ = b.namespace_;
        b.subjects.push_back(sub);
      }
    bindings_.push_back(b);
  }
  return Status::Ok();
}

const std::vector<PolicyRule>* Rbac::RulesOf(const Binding& b) const {
  if (b.role_kind == "ClusterRole") {
    auto it = cluster_roles_.find(b.role_name);
    return it == cluster_roles_.end() ? nullptr : &it->second;
  }
  auto it = roles_.find(b.namespace_ + "/" + b.role_name);
  return it == roles_.end() ? nullptr : &it->second;
}

bool Rbac::Binds(const Binding& b, const User& user) {
  for (const Subject& s : b.subjects) {
    if (s.kind == "User" && s.name == user.name) return true;
    if (s.kind == "Group" && std::find(user.groups.begin(), user.groups.end(), s.name) != user.groups.end())
      return true;
    if (s.kind == "ServiceAccount" && user.name == "system:serviceaccount:" + s.namespace_ + ":" + s.name) return true;
  }
  return false;
}

bool Rbac::Has(const std::vector<std::string>& list, const std::string& v) {
  for (const auto& e : list)
    if (e == "*" || e == v) return true;
  return false;
}

bool Rbac::ResourceMatches(const PolicyRule& r, const std::string& resource, const std::string& sub) {
  std::string combined = sub.empty() ? resource : resource + "/" + sub;
  for (const auto& rr : r.resources) {
    if (rr == "*" || rr == combined) return true;
    if (sub.empty()) continue;
    if (rr == "*/" + sub) return true;
    if (rr == resource + "/*") return true;
  }
  return false;
}

bool Rbac::RuleAllows(const PolicyRule& r, const RequestInfo& info) {
  if (!Has(r.verbs, info.verb)) return false;
  if (!info.is_resource) {
    for (const auto& u : r.non_resource_urls) {
      if (u == "*" || u == info.path) return true;
      if (!u.empty() && u.back() == '*' && info.path.compare(0, u.size() - 1, u, 0, u.size() - 1) == 0) return true;
    }
    return false;
  }
  if (!Has(r.api_groups, info.group) || !ResourceMatches(r, info.resource, info.subresource)) return false;
  if (r.resource_names.empty()) return true;
  return !info.name.empty() && std::find(r.resource_names.begin(), r.resource_names.end(), info.name) != r.resource_names.end();
}

bool Rbac::IsPublicInfoPath(const std::string& path) {
  for (const char* e : {"/healthz", "/livez", "/readyz", "/version", "/version/"})
    if (path == e) return true;
  return false;
}

bool Rbac::IsDiscoveryPath(const std::string& path) {
  for (const char* e : {"/api", "/apis", "/openapi", "/version", "/version/"})
    if (path == e) return true;
  for (const char* p : {"/api/", "/apis/", "/openapi/"})
    if (path.rfind(p, 0) == 0) return true;
  return false;
}

bool Rbac::Authenticated(const User& user) {
  return std::find(user.groups.begin(), user.groups.end(), "system:authenticated") != user.groups.end();
}

}  // namespace fake
