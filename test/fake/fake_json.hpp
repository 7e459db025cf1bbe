// JSON helpers for the fake API server: field access on its JSON values (fake_json_text.hpp),
// metav1.Status bodies as apimachinery's errors.go builds them, RFC 3339 time, resource
// quantities, and the three patch formats (RFC 7386 merge patch, RFC 6902 JSON patch, strategic
// merge patch subset).
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"
#include "test/fake/fake_json_text.hpp"

namespace fake {

// The member `key` of object `v`, or null when v is not an object or has no such member.
const Json* Member(const Json& v, std::string_view key);

// Follows a path of members ("metadata", "name"); null when any step is missing.
const Json* Path(const Json& v, std::initializer_list<std::string_view> keys);

// The string at the path, or "" when missing or not a string. The reference is v's own: good
// while v lives unchanged (copy it to keep it longer).
const std::string& Str(const Json& v, std::initializer_list<std::string_view> keys);

// The object at the path in v, created (replacing non-objects) as needed.
JsonObject& Obj(Json& v, std::initializer_list<std::string_view> keys);

inline JsonObject& Meta(Json& v) { return Obj(v, {"metadata"}); }

// metadata.annotations[key] or "" (v's own, as Str).
const std::string& Annotation(const Json& v, std::string_view key);

std::vector<std::string> StringList(const Json& v, std::initializer_list<std::string_view> keys);

Json StringArray(const std::vector<std::string>& items);

// Current time as RFC 3339 UTC with seconds precision, as metav1.Time marshals.
std::string NowRfc3339();

// Parses "2026-01-02T03:04:05Z" into seconds since the epoch; -1 when malformed.
long long ParseRfc3339(const std::string& s);

int64_t NowNs();

// A resource quantity ("10Gi", "500M", "1.5", "100m") in base units; NaN when malformed.
double ParseQuantity(const std::string& q);

// ---- metav1.Status bodies (apimachinery/pkg/api/errors) ----

// The fields of StatusDetails; empty ones are left out as the real server does.
struct Details {
  std::string name, group, kind, uid;
  JsonArray causes;
  int retry_after = 0;
};

Json StatusBody(int code, const std::string& reason, const std::string& message, const Details* d = nullptr);

// The reason the real server gives for a bare HTTP code (errors.go NewGenericServerResponse).
std::string ReasonForCode(int code);

// One field.Error as a StatusCause plus its one-line text ("spec.x: Required value").
struct FieldError {
  std::string type;  // FieldValueRequired | FieldValueInvalid | FieldValueNotSupported | FieldValueForbidden
  std::string field;
  std::string body;  // "Required value", "Invalid value: \"x\": why", ...
  std::string Text() const { return field + ": " + body; }
};

FieldError Required(const std::string& field, const std::string& detail = "");
FieldError InvalidValue(const std::string& field, const std::string& value, const std::string& detail);
FieldError Forbidden(const std::string& field, const std::string& detail);
FieldError NotSupported(const std::string& field, const std::string& value,
                        const std::vector<std::string>& valid);

// ---- patches ----

// RFC 7386: null deletes, objects merge recursively, everything else replaces.
Json MergePatch(const Json& target, const Json& patch);

// Strategic merge patch, reduced to what our clients send: a merge patch in which
// metadata.finalizers merges by value (patchStrategy "merge") and
// "$deleteFromPrimitiveList/finalizers" removes values, "conditions" lists merge by "type"
// (patchMergeKey, as in the status of claims, pods and nodes: "$patch": "delete" items and
// "$setElementOrder/conditions" included); other lists are replaced, other "$" directives ignored.
Json StrategicMergePatch(const Json& target, const Json& patch);

// RFC 6902 with add, remove, replace and test (move/copy are refused). Errors are Invalid
// with a message naming the failing operation; doc is unchanged on error.
Result<Json> JsonPatch(const Json& doc, const Json& ops);

}  // namespace fake
