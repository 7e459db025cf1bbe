// libFuzzer target: JSON text → JsonDoc → every object mapping of k8s_json.hpp.
// Besides "no crash, no leak, no undefined behaviour", it checks these properties:
//  - whatever JsonDoc reads, picojson's own parser reads to the same value;
//  - ParseList hands over the same items as the whole document holds;
//  - what VolumeToJson / EventToJson write is what picojson writes for the same value, and the
//    *FromJson readers read it back unchanged;
//  - StatusMessage always gives one line (no control characters).
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "json_write.hpp"
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

// Reads what the provisioner writes back through JsonDoc and maps it with `from`. The text
// must be what picojson writes for the value it reads from it (the writers follow picojson).
template <class From>
auto ReadBack(const std::string& text, From from) {
  picojson::value v;
  Require(picojson::parse(v, text).empty(), "picojson refuses what the provisioner writes", text);
  Require(text == v.serialize(), "the provisioner writes other text than picojson", text + "\n" + v.serialize());
  JsonDoc doc;
  Status s = doc.Read(text);
  Require(s.ok(), "JsonDoc refuses what the provisioner writes", text + "\n" + s.message());
  return from(doc.root());
}

// picojson's own parser (as the provisioner used it before JsonDoc) on a text JsonDoc accepted.
void CheckAgainstPicojson(const std::string& text, const picojson::value& ours) {
  picojson::value theirs;
  bool parsed = false;
  try {
    picojson::default_parse_context ctx(&theirs, JsonDoc::kMaxDepth);
    picojson::input<std::string::const_iterator> in(text.begin(), text.end());
    parsed = picojson::_parse(ctx, in);
  } catch (...) {
    Require(false, "picojson throws on a text JsonDoc accepted", text);
  }
  Require(parsed, "picojson refuses a text JsonDoc accepted", text);
  Require(theirs == ours, "JsonDoc and picojson read different values", text);
}

// The fields of a Volume that VolumeToJson writes (status, uid, namespace and the resource
// version are the server's, so they are not written).
void CheckVolumeRoundTrip(const Volume& v) {
  Result<Volume> back = ReadBack(VolumeToJson(v), [](JsonRef r) { return VolumeFromJson(r); });
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
  Result<Event> back = ReadBack(EventToJson(e), [](JsonRef r) { return EventFromJson(r); });
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
void MapAll(JsonRef v) {
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
  JsonDoc event_doc;
  (void)ParseWatchEvent(text, &event_doc);

  JsonDoc doc;
  Status read = doc.Read(text);
  if (!read.ok()) {
    Require(read.code() == Status::kInvalid, "JsonDoc failed with a code other than kInvalid");
    Require(doc.root().absent(), "a failed read left a value");
    return 0;
  }
  MapAll(doc.root());
  Result<picojson::value> json = ParseJson(text);
  Require(json.ok(), "ParseJson refuses what JsonDoc read");
  CheckAgainstPicojson(text, *json);
  // The list reader against the whole document: the same items, in order, whenever the text
  // is an object whose items is an array.
  std::vector<picojson::value> items;
  Result<ListPage> list = ParseList(text, [&](JsonRef v) {
    MapAll(v);
    items.push_back(k8s_json_detail::ToPicojson(v));
  });
  if (list.ok()) Require(list->items == items.size(), "ParseList counted items it did not hand over");
  if (!list.ok()) Require(items.empty(), "ParseList handed over items from a page it refused");
  if (json->is<picojson::object>() && json->contains("items") && json->get("items").is<picojson::array>()) {
    const picojson::array& tree = json->get("items").get<picojson::array>();
    bool same = list.ok() ? items == tree : list.status().message().find("metadata") != std::string::npos ||
                                                list.status().message().find("appears twice") != std::string::npos;
    Require(same, "ParseList disagrees with ParseJson about the items", text);
  }
  return 0;
}
