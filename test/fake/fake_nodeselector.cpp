// The bodies of fake_nodeselector.hpp (the contracts are there).
#include "test/fake/fake_nodeselector.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

namespace fake {

void ValidateNodeSelectorRequirement(const Json& req, const std::string& path, std::vector<FieldError>& errs) {
  const std::string& op = Str(req, {"operator"});
  const size_t values = StringList(req, {"values"}).size();
  if (op == "In" || op == "NotIn") {
    if (values == 0) errs.push_back(Required(path + ".values", "must be specified when `operator` is 'In' or 'NotIn'"));
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (values > 0)
      errs.push_back(Forbidden(path + ".values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
  } else if (op == "Gt" || op == "Lt") {
    if (values != 1) errs.push_back(Required(path + ".values", "must be specified single value when `operator` is 'Lt' or 'Gt'"));
  } else {
    errs.push_back(InvalidValue(path + ".operator", op, "not a valid selector operator"));
  }
  const std::string& key = Str(req, {"key"});
  for (const auto& msg : QualifiedNameErrors(key)) errs.push_back(InvalidValue(path + ".key", key, msg));
}

void ValidateNodeFieldSelectorRequirement(const Json& req, const std::string& path, std::vector<FieldError>& errs) {
  const std::string& op = Str(req, {"operator"});
  const std::vector<std::string> values = StringList(req, {"values"});
  if (op == "In" || op == "NotIn") {
    if (values.size() != 1)
      errs.push_back(Required(path + ".values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"));
  } else {
    errs.push_back(InvalidValue(path + ".operator", op, "not a valid selector operator"));
  }
  const std::string& key = Str(req, {"key"});
  if (key != "metadata.name") {
    errs.push_back(InvalidValue(path + ".key", key, "not a valid field selector key"));
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    auto more = CheckSubdomain(path + ".values[" + std::to_string(i) + "]", values[i]);
    errs.insert(errs.end(), more.begin(), more.end());
  }
}

void ValidateNodeSelector(const Json& selector, const std::string& path, std::vector<FieldError>& errs) {
  const Json* terms = Member(selector, "nodeSelectorTerms");
  if (terms == nullptr || !terms->is<JsonArray>() || terms->get<JsonArray>().empty()) {
    errs.push_back(Required(path + ".nodeSelectorTerms", "must have at least one node selector term"));
    return;
  }
  const JsonArray& list = terms->get<JsonArray>();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string term = path + ".nodeSelectorTerms[" + std::to_string(i) + "]";
    for (const char* kind : {"matchExpressions", "matchFields"}) {
      const Json* reqs = Member(list[i], kind);
      if (reqs == nullptr || !reqs->is<JsonArray>()) continue;
      for (size_t j = 0; j < reqs->get<JsonArray>().size(); ++j) {
        const std::string at = term + "." + kind + "[" + std::to_string(j) + "]";
        if (std::string(kind) == "matchExpressions")
          ValidateNodeSelectorRequirement(reqs->get<JsonArray>()[j], at, errs);
        else
          ValidateNodeFieldSelectorRequirement(reqs->get<JsonArray>()[j], at, errs);
      }
    }
  }
}

namespace nodeselector_detail {
namespace {

// strconv.ParseInt(s, 10, 64).
bool ParseInt64(const std::string& s, long long& out) {
  if (s.empty() || s.find_first_of(" \t\n") != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return errno == 0 && end == s.c_str() + s.size();
}

// One requirement against a node's labels (an object, or null) or, for a field requirement, its name.
bool Holds(const Json& req, const Json* labels, const std::string* name) {
  const std::string& op = Str(req, {"operator"});
  const std::vector<std::string> values = StringList(req, {"values"});
  const std::string& key = Str(req, {"key"});
  const Json* label = name != nullptr ? nullptr : labels != nullptr ? Member(*labels, key) : nullptr;
  const bool present = name != nullptr ? key == "metadata.name" : label != nullptr && label->is<std::string>();
  static const std::string kAbsent;
  const std::string& value = name != nullptr ? *name : present ? label->get<std::string>() : kAbsent;
  auto listed = [&] { return std::find(values.begin(), values.end(), value) != values.end(); };
  if (op == "In") return present && listed();
  if (op == "NotIn") return !present || !listed();
  if (name != nullptr) return false;  // field requirements know In and NotIn only
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op == "Gt" || op == "Lt") {
    long long have = 0, want = 0;
    if (!present || values.size() != 1 || !ParseInt64(value, have) || !ParseInt64(values[0], want)) return false;
    return op == "Gt" ? have > want : have < want;
  }
  return false;
}

}  // namespace
}  // namespace nodeselector_detail

bool MatchesNodeSelector(const Json& selector, const Json* labels, const std::string& node_name) {
  const Json* terms = Member(selector, "nodeSelectorTerms");
  if (terms == nullptr || !terms->is<JsonArray>()) return false;
  for (const Json& term : terms->get<JsonArray>()) {
    bool any = false, all = true;
    for (const char* kind : {"matchExpressions", "matchFields"}) {
      const Json* reqs = Member(term, kind);
      if (reqs == nullptr || !reqs->is<JsonArray>()) continue;
      for (const Json& req : reqs->get<JsonArray>()) {
        any = true;
        const bool field = std::string(kind) == "matchFields";
        all = all && nodeselector_detail::Holds(req, labels, field ? &node_name : nullptr);
      }
    }
    if (any && all) return true;
  }
  return false;
}

}  // namespace fake
