// The bodies of fake_datasource.hpp (the contracts are there).
#include "test/fake/fake_datasource.hpp"

#include <string>
#include <vector>

namespace fake {

namespace datasource_detail {
namespace {

constexpr const char* kClaimKind = "PersistentVolumeClaim";

// The decoded reference (core/v1 TypedLocalObjectReference: apiGroup *string with no omitempty,
// so an unset group is written as null; kind and name always written), or null when the member
// is missing or null (a nil pointer, omitted: dataSource has omitempty). Members the Go struct
// does not have are dropped, as decoding drops them.
Json Decoded(const Json* ref) {
  if (ref == nullptr || !ref->is<JsonObject>()) return Json();
  const Json* group = Member(*ref, "apiGroup");
  JsonObject out;
  out["apiGroup"] = group != nullptr && group->is<std::string>() ? *group : Json();
  out["kind"] = Json(Str(*ref, {"kind"}));
  out["name"] = Json(Str(*ref, {"name"}));
  return Json(out);
}

bool IsSet(const Json& ref) { return ref.is<JsonObject>(); }
std::string Group(const Json& ref) { return Str(ref, {"apiGroup"}); }  // "" for null

// util.go dataSourceIsPvcOrSnapshot: nil and "" are both the core group here.
bool IsPvcOrSnapshot(const Json& ref) {
  if (!IsSet(ref)) return false;
  const std::string& kind = Str(ref, {"kind"});
  return (kind == kClaimKind && Group(ref).empty()) ||
         (kind == "VolumeSnapshot" && Group(ref) == "snapshot.storage.k8s.io");
}

// util.go dataSourceInUse: the old claim had either field.
bool InUse(const Json* old_spec) {
  return old_spec != nullptr &&
         (IsSet(Decoded(Member(*old_spec, "dataSource"))) || IsSet(Decoded(Member(*old_spec, "dataSourceRef"))));
}

// util.go NormalizeDataSources: the unset one of the pair becomes a copy of the other.
void Normalize(Json& data_source, Json& data_source_ref) {
  if (IsSet(data_source) && !IsSet(data_source_ref)) data_source_ref = data_source;
  else if (IsSet(data_source_ref) && !IsSet(data_source)) data_source = data_source_ref;
}

void Put(JsonObject& spec, const char* key, const Json& ref) {
  if (IsSet(ref)) spec[key] = ref; else spec.erase(key);
}

// validation.go (1.24) validateDataSource. The Invalid error has an empty detail, so its text
// ends with the value: `spec.dataSource: Invalid value: "Foo"`.
void ValidateOne(const Json& ref, const std::string& field, std::vector<FieldError>& errs) {
  const std::string& kind = Str(ref, {"kind"});
  if (Str(ref, {"name"}).empty()) errs.push_back(Required(field + ".name"));
  if (kind.empty()) errs.push_back(Required(field + ".kind"));
  if (Group(ref).empty() && kind != kClaimKind)
    errs.push_back({"FieldValueInvalid", field, "Invalid value: " + ToText(Json(kind))});
}

}  // namespace
}  // namespace datasource_detail

void PrepareClaimDataSources(Json& claim, const Json* old_claim) {
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

void NormalizeClaimDataSources(Json& spec) {
  using namespace datasource_detail;
  if (!spec.is<JsonObject>()) return;
  Json ds = Decoded(Member(spec, "dataSource")), ref = Decoded(Member(spec, "dataSourceRef"));
  Normalize(ds, ref);
  Put(spec.get<JsonObject>(), "dataSource", ds);
  Put(spec.get<JsonObject>(), "dataSourceRef", ref);
}

void ValidateClaimDataSources(const Json& spec, std::vector<FieldError>& errs) {
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
