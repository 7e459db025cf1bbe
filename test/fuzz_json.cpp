// libFuzzer target: JSON text → ParseJson → every object mapping of k8s_json.hpp.
// Besides "no crash, no leak, no undefined behaviour", it checks two properties:
//  - what VolumeToJson / EventToJson write, the *FromJson readers read back unchanged;
//  - StatusMessage always gives one line (no control characters).
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "k8s_json.hpp"

namespace {

// Stops the run with a message: libFuzzer saves the input as a crash artifact.
void Require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz_json: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool OneLine(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

// Reading JSON again: what the provisioner writes must parse.
picojson::value Reparse(const picojson::value& v) {
  const std::string text = v.serialize();
  Result<picojson::value> again = ParseJson(text);
  Require(again.ok(), "ParseJson refuses what picojson serialized", text + "\n" + again.status().message());
  return *again;
}

// The fields of a Volume that VolumeToJson writes (status, uid, namespace and the resource
// version are the server's, so they are not written).
void CheckVolumeRoundTrip(const Volume& v) {
  Result<Volume> back = VolumeFromJson(Reparse(VolumeToJson(v)));
  Require(back.ok(), "VolumeFromJson refuses VolumeToJson's output", back.status().message());
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
  Result<Event> back = EventFromJson(Reparse(EventToJson(e)));
  Require(back.ok(), "EventFromJson refuses EventToJson's output", back.status().message());
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
  (void)ClaimFromJson(v);
  (void)StorageClassFromJson(v);
  Result<Volume> volume = VolumeFromJson(v);
  if (volume.ok()) CheckVolumeRoundTrip(*volume);
  Result<Event> event = EventFromJson(v);
  if (event.ok()) CheckEventRoundTrip(*event);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string message = StatusMessage(500, text);
  Require(!message.empty() && OneLine(message), "StatusMessage is not one line", message);
  (void)ParseWatchEvent(text);

  Result<picojson::value> json = ParseJson(text);
  if (!json.ok()) {
    Require(json.status().code() == Status::kInvalid, "ParseJson failed with a code other than kInvalid");
    return 0;
  }
  MapAll(*json);
  // The streaming list parser against the whole tree: the same items, in order, whenever the
  // text is an object whose items is an array.
  std::vector<picojson::value> items;
  Result<ListPage> list = ParseList(text, [&](const picojson::value& v) { items.push_back(v); });
  if (list.ok()) {
    for (const picojson::value& item : items) MapAll(item);
    Require(list->items == items.size(), "ParseList counted items it did not hand over");
  }
  if (json->is<picojson::object>() && json->contains("items") && json->get("items").is<picojson::array>()) {
    const picojson::array& tree = json->get("items").get<picojson::array>();
    bool same = list.ok() ? items == tree : list.status().message().find("metadata") != std::string::npos ||
                                                list.status().message().find("appears twice") != std::string::npos;
    Require(same, "ParseList disagrees with ParseJson about the items", text);
  }
  return 0;
}
