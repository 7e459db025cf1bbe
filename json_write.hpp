// The JSON text of a picojson value, exactly as picojson's compact value::serialize() writes it
// (members in the map's order, "/" escaped as "\/", control characters and DEL as \u00XX,
// numbers by picojson itself), but copying runs of plain characters at once
// (json_text::AppendJsonString, which the fake API server's writer uses too). picojson writes
// a character at a time through a back_insert_iterator: that was 6.6 % of the provisioner's
// instructions in make bench's bursts (callgrind), for the request bodies of PVs and events.
#pragma once
#include <picojson.h>

#include <string>

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
