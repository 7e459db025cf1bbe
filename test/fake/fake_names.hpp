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
bool IsLabelText(std::string_view v);
// Labels joined by dots.
bool IsSubdomainText(std::string_view v);

std::vector<FieldError> CheckSubdomain(const std::string& field, const std::string& value);
std::vector<FieldError> CheckLabel(const std::string& field, const std::string& value);

namespace names_detail {
inline const char* kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool IsQualifiedNameText(std::string_view v);
}  // namespace names_detail

// apimachinery's validation.IsQualifiedName: its messages.
std::vector<std::string> QualifiedNameErrors(const std::string& value);

}  // namespace fake
