// libFuzzer target: the fake API server's JSON reader and writer (fake_json_parse.hpp,
// fake_json_value.hpp) against picojson's, which they follow. Properties:
//  - the fake reads a text exactly when picojson reads it with nothing but spaces after it
//    (or refuses it as nested too deep: picojson does not count objects);
//  - what the fake writes (picojson's layout, the API server's string escapes) picojson and
//    the fake read; unless invalid UTF-8 was replaced, both read it back equal to what was
//    read first, and the fake writes that the same;
//  - a copy changed at its first member leaves the original's text as it was.
// Build and run with `make fuzz` (mk/fuzz.mk).
#include <picojson.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/fake_json.hpp"

namespace {

void Require(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_fake_json: property failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// picojson's reading of the whole text: its parse stops after the value, so the rest must be space.
bool PicojsonReads(const std::string& text, picojson::value& out) {
  std::string err;
  auto end = picojson::parse(out, text.begin(), text.end(), &err);
  if (!err.empty()) return false;
  return std::all_of(end, text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  picojson::value expected;
  bool pico = false;
  try {
    pico = PicojsonReads(text, expected);
  } catch (const std::overflow_error&) {  // picojson throws on numbers out of range
    pico = false;
  }
  auto parsed = fake::ParseJson(text);
  if (pico && !parsed.ok() && parsed.status().message().rfind("nesting deeper than", 0) == 0) return 0;  // objects count
  Require(parsed.ok() == pico, pico ? "the fake refuses what picojson reads" : "the fake reads what picojson refuses",
          text + "\n" + (parsed.ok() ? std::string() : parsed.status().message()));
  if (!parsed.ok()) return 0;
  const std::string written = fake::ToText(*parsed);
  picojson::value reread;
  Require(PicojsonReads(written, reread), "picojson refuses what the fake writes", text + "\n" + written);
  auto again = fake::ParseJson(written);
  Require(again.ok(), "the fake refuses what it wrote", written);
  // Equal, unless invalid UTF-8 was written as U+FFFD (as the API server's encoder does; that
  // may also reorder members).
  if (written.find("\\ufffd") == std::string::npos) {
    Require(*again == *parsed && fake::ToText(*again) == written, "what the fake wrote does not read back equal",
            written);
    Require(reread == expected, "picojson reads what the fake wrote as another value", written);
  }

  if (parsed->is<fake::JsonObject>() && !parsed->get<fake::JsonObject>().empty()) {
    fake::Json copy = *parsed;
    copy.get<fake::JsonObject>().begin()->second = fake::Json("changed");
    Require(fake::ToText(*parsed) == written, "changing a copy changed the original", written);
  }
  return 0;
}
