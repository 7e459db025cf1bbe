// The bodies of fake_names.hpp (the contracts are there).
#include "test/fake/fake_names.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace fake {

bool IsLabelText(std::string_view v) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (v.empty() || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool IsSubdomainText(std::string_view v) {
  for (size_t start = 0;;) {
    size_t dot = v.find('.', start);
    if (!IsLabelText(v.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::vector<FieldError> CheckSubdomain(const std::string& field, const std::string& value) {
  std::vector<FieldError> errs;
  if (value.size() > 253) errs.push_back(InvalidValue(field, value, "must be no more than 253 characters"));
  if (!IsSubdomainText(value)) errs.push_back(InvalidValue(field, value, names_detail::kSubdomainMsg));
  return errs;
}

std::vector<FieldError> CheckLabel(const std::string& field, const std::string& value) {
  std::vector<FieldError> errs;
  if (value.size() > 63) errs.push_back(InvalidValue(field, value, "must be no more than 63 characters"));
  if (!IsLabelText(value)) errs.push_back(InvalidValue(field, value, names_detail::kLabelMsg));
  return errs;
}

namespace names_detail {

bool IsQualifiedNameText(std::string_view v) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (v.empty() || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace names_detail

std::vector<std::string> QualifiedNameErrors(const std::string& value) {
  std::vector<std::string> msgs;
  std::string name = value;
  size_t slashes = std::count(value.begin(), value.end(), '/');
  if (slashes > 1)
    return {std::string("a qualified name ") + names_detail::kQualifiedNameMsg +
            " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
  if (slashes == 1) {
    std::string prefix = value.substr(0, value.find('/'));
    name = value.substr(value.find('/') + 1);
    if (prefix.empty()) {
      msgs.push_back("prefix part must be non-empty");
    } else {
      if (prefix.size() > 253) msgs.push_back("prefix part must be no more than 253 characters");
      if (!IsSubdomainText(prefix)) msgs.push_back(std::string("prefix part ") + names_detail::kSubdomainMsg);
    }
  }
  if (name.empty()) {
    msgs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    msgs.push_back("name part must be no more than 63 characters");
  }
  if (!names_detail::IsQualifiedNameText(name)) msgs.push_back(std::string("name part ") + names_detail::kQualifiedNameMsg);
  return msgs;
}

}  // namespace fake
