// A claim's spec.dataSource and spec.dataSourceRef as a Kubernetes 1.24 API server handles them,
// with the AnyVolumeDataSource gate beta and on (its 1.24 default):
// - the registry strategy (pkg/registry/core/persistentvolumeclaim/strategy.go PrepareForCreate /
//   PrepareForUpdate) calls pkg/api/persistentvolumeclaim/util.go: DropDisabledFields (drops
//   dataSourceRef only with the gate off: nothing here), EnforceDataSourceBackwardsCompatibility
//   and NormalizeDataSources;
// - validation (pkg/apis/core/validation/validation.go, 1.24: validateDataSource, used for both
//   fields, and the "must match dataSourceRef" check in ValidatePersistentVolumeClaimSpec).
// Later servers differ (1.26 adds dataSourceRef.namespace and the text "must be
// 'PersistentVolumeClaim' when referencing the default apiGroup", 1.29 an apiGroup DNS check);
// this is 1.24.
#pragma once
#include <string>
#include <vector>

#include "test/fake/fake_json.hpp"

namespace fake {

namespace datasource_detail {

inline constexpr const char* kClaimKind = "PersistentVolumeClaim";

// The decoded reference (core/v1 TypedLocalObjectReference: apiGroup *string with no omitempty,
// so an unset group is written as null; kind and name always written), or null when the member
// is missing or null (a nil pointer, omitted: dataSource has omitempty). Members the Go struct
// does not have are dropped, as decoding drops them.
inline Json Decoded(const Json* ref) {
  if (ref == nullptr || !ref->is<JsonObject>()) return Json();
  const Json* group = Member(*ref, "apiGroup");
  JsonObject out;
  out["apiGroup"] = group != nullptr && group->is<std::string>() ? *group : Json();
  out["kind"] = Json(Str(*ref, {"kind"}));
  out["name"] = Json(Str(*ref, {"name"}));
  return Json(out);
}

inline bool IsSet(const Json& ref) { return ref.is<JsonObject>(); }
inline std::string Group(const Json& ref) { return Str(ref, {"apiGroup"}); }  // "" for null

// util.go dataSourceIsPvcOrSnapshot: nil and "" are both the core group here.
inline bool IsPvcOrSnapshot(const Json& ref) {
  if (!IsSet(ref)) return false;
  const std::string& kind = Str(ref, {"kind"});
  return (kind == kClaimKind && Group(ref).empty()) ||
         (kind == "VolumeSnapshot" && Group(ref) == "snapshot.storage.k8s.io");
}

// util.go dataSourceInUse: the old claim had either field.
inline bool InUse(const Json* old_spec) {
  return old_spec != nullptr &&
         (IsSet(Decoded(Member(*old_spec, "dataSource"))) || IsSet(Decoded(Member(*old_spec, "dataSourceRef"))));
}

// util.go NormalizeDataSources: the unset one of the pair becomes a copy of the other.
inline void Normalize(Json& data_source, Json& data_source_ref) {
  if (IsSet(data_source) && !IsSet(data_source_ref)) data_source_ref = data_source;
  else if (IsSet(data_source_ref) && !IsSet(data_source)) data_source = data_source_ref;
}

inline void Put(JsonObject& spec, const char* key, const Json& ref) {
  if (IsSet(ref)) spec[key] = ref; else spec.erase(key);
}

// validation.go (1.24) validateDataSource. The Invalid error has an empty detail, so its text
// ends with the value: `spec.dataSource: Invalid value: "Foo"`.
inline void ValidateOne(const Json& ref, const std::string& field, std::vector<FieldError>& errs) {
  const std::string& kind = Str(ref, {"kind"});
  if (Str(ref, {"name"}).empty()) errs.push_back(Required(field + ".name"));
  if (kind.empty()) errs.push_back(Required(field + ".kind"));
  if (Group(ref).empty() && kind != kClaimKind)
    errs.push_back({"FieldValueInvalid", field, "Invalid value: " + ToText(Json(kind))});
}

}  // namespace datasource_detail

// The data-source part of the claim strategy's PrepareForCreate (old_claim null) and
// PrepareForUpdate (old_claim the stored claim): EnforceDataSourceBackwardsCompatibility drops
// a dataSource that is neither a core PersistentVolumeClaim nor a snapshot.storage.k8s.io
// VolumeSnapshot, silently, unless dataSourceRef is set or the old claim had a data source;
// then NormalizeDataSources fills the unset one of the pair from the other.
inline void PrepareClaimDataSources(Json& claim, const Json* old_claim) {
  using namespace datasource_detail;
  if (!claim.is<JsonObject>()) return;
  Obj(claim, {"spec"});
  Json& spec_json = claim.get<JsonObject>()["spec"];
  Json ds = Decoded(Member(spec_json, "dataSource")), ref = Decoded(Member(spec_json, "dataSourceRef"));
  const Json* old_spec = old_claim != nullptr ? Member(*old_claim, "spec") : nullptr;
  if (!InUse(old_spec) && !IsSet(ref) && !IsPvcOrSnapshot(ds)) ds = Json();
  Normalize(ds, ref);
  Put(spec_json.get<JsonObject>(), "dataSource", ds);
  Put(spec_json.get<JsonObject>(), "dataSourceRef", ref);
}

// PrepareForUpdate also normalizes the old claim before the update is validated against it
// ("so that objects saved from an earlier version will pass validation").
inline void NormalizeClaimDataSources(Json& spec) {
  using namespace datasource_detail;
  if (!spec.is<JsonObject>()) return;
  Json ds = Decoded(Member(spec, "dataSource")), ref = Decoded(Member(spec, "dataSourceRef"));
  Normalize(ds, ref);
  Put(spec.get<JsonObject>(), "dataSource", ds);
  Put(spec.get<JsonObject>(), "dataSourceRef", ref);
}

// ValidatePersistentVolumeClaimSpec's data-source checks (1.24). The mismatch error passes a
// *field.Path as the bad value: ErrorBody dereferences it and, field.Path having no String()
// on the value, prints it with %#v, parent pointer included. The real address varies from call
// to call; this one is fixed.
inline void ValidateClaimDataSources(const Json& spec, std::vector<FieldError>& errs) {
  using namespace datasource_detail;
  Json ds = Decoded(Member(spec, "dataSource")), ref = Decoded(Member(spec, "dataSourceRef"));
  if (IsSet(ds)) ValidateOne(ds, "spec.dataSource", errs);
  if (IsSet(ref)) ValidateOne(ref, "spec.dataSourceRef", errs);
  // apiequality.Semantic.DeepEqual on the two pointers: a nil apiGroup differs from "".
  if (IsSet(ds) && IsSet(ref) && !(ds == ref))
    errs.push_back({"FieldValueInvalid", "spec",
                    "Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000a3c0f0)}: "
                    "must match dataSourceRef"});
}

}  // namespace fake
