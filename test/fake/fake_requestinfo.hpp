// Request attributes as kube-apiserver's RequestInfoFactory resolves them
// (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), and label/field
// selectors over stored objects.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/fake/fake_store.hpp"

namespace fake {

struct RequestInfo {
  bool is_resource = false;
  std::string verb;  // get list watch create update patch delete deletecollection; lower-case method otherwise
  std::string path;
  std::string group, version, ns, resource, subresource, name;
  const ResourceType* type = nullptr;  // null when the resource is not served
};

std::vector<std::string> SplitPath(const std::string& path);

// Resolves method + path (+ whether ?watch=true) into request attributes. The path's segments
// are looked at in place: copying them cost more than the rest of a request's routing.
RequestInfo ResolveRequest(const std::string& method, const std::string& path, bool watch_param);

// One term of a label or field selector.
struct Requirement {
  std::string key, op, value;  // op: "=", "!=", "exists", "!exists"; labels also "in", "notin", "gt", "lt"
  std::vector<std::string> values;  // of "in" and "notin" (label selectors, fake_labels.hpp)
};

// Parses "a=b,c!=d,e,!f" (a field selector; label selectors: fake_labels.hpp). False on syntax
// the fake does not know.
bool ParseSelector(const std::string& text, std::vector<Requirement>& out);

// Requirement.Matches (labels/selector.go).
bool Holds(const Requirement& r, bool present, const std::string& value);

bool MatchesLabels(const Json& obj, const std::vector<Requirement>& sel);

// Field selectors over dotted paths of string fields (metadata.name, spec.volumeName, ...).
bool MatchesFields(const Json& obj, const std::vector<Requirement>& sel);

}  // namespace fake
