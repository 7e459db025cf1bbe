// Names as apimachinery's validation package checks them (IsDNS1123Subdomain, IsDNS1123Label,
// IsQualifiedName), with its messages.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "test/fake/fake_json.hpp"

namespace fake {

namespace names_detail {

inline const char* kSubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
inline const char* kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

}  // namespace names_detail

// IsDNS1123Subdomain / IsDNS1123Label: the errors for `value` at `field` (none when valid).
// (Checked by hand: std::regex_match was a tenth of the fake's request handling.)
// [a-z0-9]([-a-z0-9]*[a-z0-9])?
inline bool IsLabelText(std::string_view v) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (v.empty() || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-'; });
}
// Labels joined by dots.
inline bool IsSubdomainText(std::string_view v) {
  for (size_t start = 0;;) {
    size_t dot = v.find('.', start);
    if (!IsLabelText(v.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

inline std::vector<FieldError> CheckSubdomain(const std::string& field, const std::string& value) {
  std::vector<FieldError> errs;
  if (value.size() > 253) errs.push_back(InvalidValue(field, value, "must be no more than 253 characters"));
  if (!IsSubdomainText(value)) errs.push_back(InvalidValue(field, value, names_detail::kSubdomainMsg));
  return errs;
}
inline std::vector<FieldError> CheckLabel(const std::string& field, const std::string& value) {
  std::vector<FieldError> errs;
  if (value.size() > 63) errs.push_back(InvalidValue(field, value, "must be no more than 63 characters"));
  if (!IsLabelText(value)) errs.push_back(InvalidValue(field, value, names_detail::kLabelMsg));
  return errs;
}

namespace names_detail {
inline const char* kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
inline bool IsQualifiedNameText(std::string_view v) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (v.empty() || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}
}  // namespace names_detail

// apimachinery's validation.IsQualifiedName: its messages.
inline std::vector<std::string> QualifiedNameErrors(const std::string& value) {
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
