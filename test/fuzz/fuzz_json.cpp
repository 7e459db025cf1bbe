// libFuzzer target: JSON text → every object mapping of k8s_json.hpp.
// Besides "no crash (no picojson exception escapes), no leak, no undefined behaviour", it
// checks these properties:
//  - ParseList hands over as many items as the document's items array holds;
//  - what VolumeToJson / EventToJson write, FromJson reads back unchanged;
//  - StatusMessage always gives one line (no control characters).
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <picojson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kube/k8s_json.hpp"

namespace {

// Stops the run with a message: libFuzzer saves the input as a crash artifact.
void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_json: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool IsOneLine(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

// Reads what the provisioner writes back as a T.
template <class T>
Result<T> ReadBack(const std::string& text) {
  Result<T> back = FromJsonText<T>(text);
  Require(back.ok(), "FromJson refuses what the provisioner writes", text + "\n" + back.status().message());
  return back;
}

// The fields of a Volume that VolumeToJson writes (status, uid, namespace and the resource
// version are the server's, so they are not written).
void CheckVolumeRoundTrip(const Volume& v) {
  Result<Volume> back = ReadBack<Volume>(VolumeToJson(v));
  Require(back.ok(), "FromJson<Volume> refuses VolumeToJson's output", back.status().message());
  const Volume& b = *back;
  Require(b.meta.name == v.meta.name && b.meta.annotations == v.meta.annotations && b.meta.labels == v.meta.labels &&
              b.meta.finalizers == v.meta.finalizers,
          "volume metadata changed on a round trip", v.meta.name);
  Require(b.capacity == v.capacity && b.access_modes == v.access_modes && b.volume_mode == v.volume_mode &&
              b.storage_class_name == v.storage_class_name && b.reclaim_policy == v.reclaim_policy &&
              b.mount_options == v.mount_options,
          "volume spec changed on a round trip", v.meta.name);
  Require(b.has_claim_ref == v.has_claim_ref && b.claim_ref.namespace_ == v.claim_ref.namespace_ &&
              b.claim_ref.name == v.claim_ref.name && b.claim_ref.uid == v.claim_ref.uid,
          "volume claimRef changed on a round trip", v.meta.name);
  Require(b.host_path == v.host_path && b.host_path_type == (v.host_path.empty() ? "" : v.host_path_type),
          "volume hostPath changed on a round trip", v.host_path);
}

void CheckEventRoundTrip(const Event& e) {
  Result<Event> back = ReadBack<Event>(EventToJson(e));
  Require(back.ok(), "FromJson<Event> refuses EventToJson's output", back.status().message());
  const Event& b = *back;
  Require(b.meta.name == e.meta.name && b.meta.namespace_ == e.meta.namespace_, "event metadata changed", e.meta.name);
  Require(b.involved_kind == e.involved_kind && b.involved_namespace == e.involved_namespace &&
              b.involved_name == e.involved_name && b.involved_uid == e.involved_uid &&
              b.involved_api_version == e.involved_api_version &&
              b.involved_resource_version == e.involved_resource_version,
          "event involvedObject changed on a round trip", e.meta.name);
  Require(b.type == e.type && b.reason == e.reason && b.message == e.message && b.count == e.count &&
              b.first_timestamp == e.first_timestamp && b.last_timestamp == e.last_timestamp &&
              b.source_component == e.source_component,
          "event fields changed on a round trip", e.meta.name);
}

// Every mapping over one parsed value; errors are fine, crashes and broken properties are not.
void MapAll(const picojson::value& v) {
  (void)FromJson<Claim>(v);
  (void)FromJson<StorageClass>(v);
  (void)FromJson<Lease>(v);
  Result<Volume> volume = FromJson<Volume>(v);
  if (volume.ok()) CheckVolumeRoundTrip(*volume);
  Result<Event> event = FromJson<Event>(v);
  if (event.ok()) CheckEventRoundTrip(*event);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string message = StatusMessage(500, text);
  Require(!message.empty() && IsOneLine(message), "StatusMessage is not one line", message);
  (void)ParseWatchEvent<Volume>(text);

  picojson::value json;
  Status read = k8s_json_detail::Parse(text, &json);
  if (!read.ok()) {
    Require(read.code() == Status::kInvalid, "Parse failed with a code other than kInvalid");
    return 0;
  }
  MapAll(json);
  size_t handed = 0;
  Result<ListPage> list = ParseList<Volume>(text, [&](Result<Volume>) { ++handed; });
  if (list.ok()) Require(list->items == handed, "ParseList counted items it did not hand over");
  if (!list.ok()) Require(handed == 0, "ParseList handed over items from a page it refused");
  if (list.ok() && json.contains("items") && json.get("items").is<picojson::array>())
    Require(handed == json.get("items").get<picojson::array>().size(), "ParseList missed items", text);
  return 0;
}
