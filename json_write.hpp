// The JSON text of a picojson value, exactly as picojson's compact value::serialize() writes it
// (members in the map's order, "/" escaped as "\/", control characters and DEL as \u00XX,
// numbers by picojson itself), but copying runs of plain characters at once. picojson writes
// a character at a time through a back_insert_iterator: that was 6.6 % of the provisioner's
// instructions in make bench's bursts (callgrind), for the request bodies of PVs and events.
#pragma once
#include <picojson.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace json_write_detail {

inline void AppendString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t run = 0;  // the start of the plain characters not copied yet
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c != '/' && c != 0x7f) continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '/': out->append("\\/"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out->append(buf, 6);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

}  // namespace json_write_detail

// Appends v's compact JSON text to *out.
inline void AppendJson(const picojson::value& v, std::string* out) {
  if (v.is<std::string>()) {
    json_write_detail::AppendString(v.get<std::string>(), out);
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
      json_write_detail::AppendString(key, out);
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
