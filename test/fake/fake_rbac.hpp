// RBAC for the fake API server: ClusterRoles, ClusterRoleBindings, Roles and RoleBindings read
// from manifests, evaluated as plugin/pkg/auth/authorizer/rbac does (RuleAllows, ResourceMatches),
// plus the bootstrap system:discovery access every authenticated user has and the
// system:public-info-viewer access (health and version) everyone has, anonymous users too.
// Denial messages follow endpoints/handlers/responsewriters/errors.go.
#pragma once
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test/fake/fake_requestinfo.hpp"
#include "base/yaml.hpp"

namespace fake {

struct User {
  std::string name;
  std::vector<std::string> groups;
};

struct PolicyRule {
  std::vector<std::string> api_groups, resources, verbs, resource_names, non_resource_urls;
};

class Rbac {
 public:
  // Adds every RBAC object in the YAML (or JSON) text; other kinds are ignored, a "List" is
  // looked into. Errors name the file and what is wrong.
  Status AddText(const std::string& text, const std::string& origin);

  Status LoadFile(const std::string& path);

  // True when some binding of the user (or one of its groups) grants the request.
  bool Allows(const User& user, const RequestInfo& info) const;

  // The real server's message for a denied request, e.g.
  //   persistentvolumes is forbidden: User "u" cannot create resource "persistentvolumes" in API group "" at the cluster scope
  static std::string ForbiddenMessage(const User& user, const RequestInfo& info);

  size_t binding_count() const { return bindings_.size(); }

 private:
  struct Subject {
    std::string kind, name, namespace_;
  };
  struct Binding {
    std::string namespace_;  // "" for a ClusterRoleBinding
    std::string role_kind, role_name;
    std::vector<Subject> subjects;
  };

  static std::vector<PolicyRule> ParseRules(const Json& obj);

  Status AddObject(const Json& obj);

  const std::vector<PolicyRule>* RulesOf(const Binding& b) const;

  static bool Binds(const Binding& b, const User& user);

  static bool Has(const std::vector<std::string>& list, const std::string& v);

  static bool ResourceMatches(const PolicyRule& r, const std::string& resource, const std::string& sub);

  static bool RuleAllows(const PolicyRule& r, const RequestInfo& info);

  // The bootstrap roles system:discovery and system:public-info-viewer (all authenticated users).
  // system:public-info-viewer, bound to system:authenticated and system:unauthenticated.
  static bool IsPublicInfoPath(const std::string& path);
  // system:discovery, bound to system:authenticated only (since 1.14).
  static bool IsDiscoveryPath(const std::string& path);
  static bool Authenticated(const User& user);

  std::map<std::string, std::vector<PolicyRule>> cluster_roles_;
  std::map<std::string, std::vector<PolicyRule>> roles_;  // by "ns/name"
  std::vector<Binding> bindings_;
};

}  // namespace fake
