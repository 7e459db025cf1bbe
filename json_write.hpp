// The JSON text of a picojson value, exactly as picojson's compact value::serialize() writes it
// (members in the map's order, "/" escaped as "\/", control characters and DEL as \u00XX,
// numbers by picojson itself), but copying runs of plain characters at once
// (json_text::AppendJsonString, which the fake API server's writer uses too). picojson writes
// a character at a time through a back_insert_iterator: that was 6.6 % of the provisioner's
// instructions in make bench's bursts (callgrind), for the request bodies of PVs and events.
#pragma once
#include <picojson.h>

#include <cassert>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "json_doc.hpp"

// Appends v's compact JSON text to *out.
inline void AppendJson(const picojson::value& v, std::string* out) {
  if (v.is<std::string>()) {
    json_text::AppendJsonString(*out, v.get<std::string>());
  } else if (v.is<picojson::array>()) {
    out->push_back('[');
    bool first = true;
    for (const picojson::value& item : v.get<picojson::array>()) {
      if (!first) out->push_back(',');
      first = false;
      AppendJson(item, out);
    }
    out->push_back(']');
  } else if (v.is<picojson::object>()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [key, member] : v.get<picojson::object>()) {
      if (!first) out->push_back(',');
      first = false;
      json_text::AppendJsonString(*out, key);
      out->push_back(':');
      AppendJson(member, out);
    }
    out->push_back('}');
  } else {
    out->append(v.to_str());  // null, true, false, numbers: as picojson writes them
  }
}

// v's compact JSON text.
inline std::string ToJson(const picojson::value& v) {
  std::string out;
  out.reserve(1024);  // a PV or an event: one allocation
  AppendJson(v, &out);
  return out;
}

// Writes a JSON object's text straight into a string, byte for byte as ToJson writes the
// picojson object with the same members, without building one (building and freeing the trees
// of the PVs and events the provisioner POSTs was 8 % of its instructions in make bench's
// bursts; callgrind). Members must come in name order, picojson's std::map order: a build
// with assertions checks it.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string* out) : out_(out) { out_->push_back('{'); }

  void String(std::string_view key, std::string_view value) {
    Key(key);
    json_text::AppendJsonString(*out_, value);
  }
  // String, unless value is empty.
  void StringIfSet(std::string_view key, std::string_view value) {
    if (!value.empty()) String(key, value);
  }
  void Integer(std::string_view key, long long n) {
    Key(key);
    out_->append(std::to_string(n));
  }
  void Strings(std::string_view key, const std::vector<std::string>& items) {
    Key(key);
    out_->push_back('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_->push_back(',');
      json_text::AppendJsonString(*out_, items[i]);
    }
    out_->push_back(']');
  }
  void StringMap(std::string_view key, const std::map<std::string, std::string>& items) {
    JsonObjectWriter o = Object(key);
    for (const auto& [k, v] : items) o.String(k, v);
    o.End();
  }
  // A member object: write its members through the writer returned, then End() it.
  JsonObjectWriter Object(std::string_view key) {
    Key(key);
    return JsonObjectWriter(out_);
  }
  void End() { out_->push_back('}'); }

 private:
  void Key(std::string_view key) {
    assert(!any_ || last_ < key);  // name order, no repeats
    if (any_) out_->push_back(',');
    any_ = true;
    last_ = key;
    json_text::AppendJsonString(*out_, key);
    out_->push_back(':');
  }

  std::string* out_;
  bool any_ = false;
  std::string_view last_;
};
