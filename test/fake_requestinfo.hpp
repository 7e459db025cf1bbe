// Request attributes as kube-apiserver's RequestInfoFactory resolves them
// (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), and label/field
// selectors over stored objects.
#pragma once
#include <string>
#include <vector>

#include "test/fake_store.hpp"

namespace fake {

struct RequestInfo {
  bool is_resource = false;
  std::string verb;  // get list watch create update patch delete deletecollection; lower-case method otherwise
  std::string path;
  std::string group, version, ns, resource, subresource, name;
  const ResourceType* type = nullptr;  // null when the resource is not served
};

inline std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

// Resolves method + path (+ whether ?watch=true) into request attributes.
inline RequestInfo ResolveRequest(const std::string& method, const std::string& path, bool watch_param) {
  RequestInfo info;
  info.path = path;
  std::string lower;
  for (char c : method) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  info.verb = lower;
  std::vector<std::string> parts = SplitPath(path);
  if (parts.empty() || (parts[0] != "api" && parts[0] != "apis")) return info;
  size_t i = 1;
  if (parts[0] == "apis") {
    if (parts.size() < 3) return info;
    info.group = parts[1];
    i = 2;
  } else if (parts.size() < 2) {
    return info;
  }
  info.version = parts[i++];
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.empty()) return info;
  info.is_resource = true;
  static const std::vector<std::string> kVerbs = {"get", "post", "put", "patch", "delete"};
  static const std::map<std::string, std::string> kMethodVerb = {
      {"post", "create"}, {"put", "update"}, {"patch", "patch"}, {"get", "get"}, {"delete", "delete"}};
  bool watch_prefix = false;
  if (rest[0] == "watch") {
    watch_prefix = true;
    rest.erase(rest.begin());
  }
  auto mv = kMethodVerb.find(lower);
  info.verb = mv == kMethodVerb.end() ? lower : mv->second;
  if (!rest.empty() && rest[0] == "namespaces" && rest.size() >= 2) {
    info.ns = rest[1];
    if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize") rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (!rest.empty()) info.resource = rest[0];
  if (rest.size() >= 2) info.name = rest[1];
  if (rest.size() >= 3) info.subresource = rest[2];
  if (info.resource == "namespaces") info.ns.clear(), info.name = rest.size() >= 2 ? rest[1] : "";
  if (info.name.empty()) {
    if (info.verb == "get") info.verb = (watch_param || watch_prefix) ? "watch" : "list";
    if (info.verb == "delete") info.verb = "deletecollection";
  } else if (watch_prefix && info.verb == "get") {
    info.verb = "watch";
  }
  info.type = FindType(info.group, info.version, info.resource);
  return info;
}

// One term of a label or field selector.
struct Requirement {
  std::string key, op, value;  // op: "=", "!=", "exists", "!exists"
};

// Parses "a=b,c!=d,e,!f" (equality-based selectors). False on syntax the fake does not know.
inline bool ParseSelector(const std::string& text, std::vector<Requirement>& out) {
  out.clear();
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string term = text.substr(i, j - i);
    i = j + 1;
    if (term.empty()) continue;
    Requirement r;
    if (size_t p = term.find("!="); p != std::string::npos) {
      r = {term.substr(0, p), "!=", term.substr(p + 2)};
    } else if (size_t p = term.find("=="); p != std::string::npos) {
      r = {term.substr(0, p), "=", term.substr(p + 2)};
    } else if (size_t p = term.find('='); p != std::string::npos) {
      r = {term.substr(0, p), "=", term.substr(p + 1)};
    } else if (term[0] == '!') {
      r = {term.substr(1), "!exists", ""};
    } else {
      r = {term, "exists", ""};
    }
    if (r.key.find_first_of(" ()") != std::string::npos) return false;
    out.push_back(r);
  }
  return true;
}

inline bool Holds(const Requirement& r, bool present, const std::string& value) {
  if (r.op == "=") return present && value == r.value;
  if (r.op == "!=") return !present || value != r.value;
  if (r.op == "exists") return present;
  return !present;
}

inline bool MatchesLabels(const Json& obj, const std::vector<Requirement>& sel) {
  const Json* labels = Path(obj, {"metadata", "labels"});
  for (const auto& r : sel) {
    const Json* v = labels ? Member(*labels, r.key) : nullptr;
    bool present = v != nullptr && v->is<std::string>();
    if (!Holds(r, present, present ? v->get<std::string>() : "")) return false;
  }
  return true;
}

// Field selectors over dotted paths of string fields (metadata.name, spec.volumeName, ...).
inline bool MatchesFields(const Json& obj, const std::vector<Requirement>& sel) {
  for (const auto& r : sel) {
    const Json* cur = &obj;
    for (const auto& part : SplitPath([&] {
           std::string p = r.key;
           for (char& c : p) c = c == '.' ? '/' : c;
           return p;
         }())) {
      cur = cur ? Member(*cur, part) : nullptr;
    }
    std::string value = (cur != nullptr && cur->is<std::string>()) ? cur->get<std::string>() : "";
    if (!Holds(r, true, value)) return false;  // a missing field compares as ""
  }
  return true;
}

}  // namespace fake
