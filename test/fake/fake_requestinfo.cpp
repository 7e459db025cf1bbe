// The bodies of fake_requestinfo.hpp (the contracts are there).
#include "test/fake/fake_requestinfo.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace fake {

std::vector<std::string> SplitPath(const std::string& path) {
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

RequestInfo ResolveRequest(const std::string& method, const std::string& path, bool watch_param) {
  RequestInfo info;
  info.path = path;
  std::vector<std::string_view> parts;
  parts.reserve(8);
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(std::string_view(path).substr(i, j - i));
    i = j + 1;
  }
  const size_t n = parts.size();
  std::string lower;
  for (char c : method) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  info.verb = lower;
  if (n == 0 || (parts[0] != "api" && parts[0] != "apis")) return info;
  size_t i = 1;
  if (parts[0] == "apis") {
    if (n < 3) return info;
    info.group = parts[1];
    i = 2;
  } else if (n < 2) {
    return info;
  }
  info.version = parts[i++];
  const std::string_view* rest = parts.data() + i;
  size_t left = n - i;
  if (left == 0) return info;
  info.is_resource = true;
  bool watch_prefix = false;
  if (rest[0] == "watch") {
    watch_prefix = true;
    ++rest, --left;
  }
  if (lower == "post") info.verb = "create";
  else if (lower == "put") info.verb = "update";
  if (left >= 2 && rest[0] == "namespaces") {
    info.ns = rest[1];
    if (left > 2 && rest[2] != "status" && rest[2] != "finalize") rest += 2, left -= 2;
  }
  if (left >= 1) info.resource = rest[0];
  if (left >= 2) info.name = rest[1];
  if (left >= 3) info.subresource = rest[2];
  if (info.resource == "namespaces") info.ns.clear(), info.name = left >= 2 ? std::string(rest[1]) : "";
  if (info.name.empty()) {
    if (info.verb == "get") info.verb = (watch_param || watch_prefix) ? "watch" : "list";
    if (info.verb == "delete") info.verb = "deletecollection";
  } else if (watch_prefix && info.verb == "get") {
    info.verb = "watch";
  }
  info.type = FindType(info.group, info.version, info.resource);
  return info;
}

bool ParseSelector(const std::string& text, std::vector<Requirement>& out) {
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

bool Holds(const Requirement& r, bool present, const std::string& value) {
  if (r.op == "=") return present && value == r.value;
  if (r.op == "!=") return !present || value != r.value;
  if (r.op == "exists") return present;
  if (r.op == "!exists") return !present;
  const bool listed = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
  if (r.op == "in") return present && listed;
  if (r.op == "notin") return !present || !listed;
  // gt, lt: the label's value must be an integer too
  char* end = nullptr;
  const long long have = std::strtoll(value.c_str(), &end, 10);
  if (!present || value.empty() || *end != '\0') return false;
  const long long want = std::strtoll(r.value.c_str(), nullptr, 10);
  return r.op == "gt" ? have > want : have < want;
}

bool MatchesLabels(const Json& obj, const std::vector<Requirement>& sel) {
  if (sel.empty()) return true;  // most watches and lists: no walk to the labels
  const Json* labels = Path(obj, {"metadata", "labels"});
  for (const auto& r : sel) {
    const Json* v = labels ? Member(*labels, r.key) : nullptr;
    bool present = v != nullptr && v->is<std::string>();
    if (!Holds(r, present, present ? v->get<std::string>() : "")) return false;
  }
  return true;
}

bool MatchesFields(const Json& obj, const std::vector<Requirement>& sel) {
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
